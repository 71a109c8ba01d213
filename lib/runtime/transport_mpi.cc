#include "runtime/transport_mpi.h"

#include <sched.h>
#include <unistd.h>

#include <climits>
#include <new>

namespace terse {

namespace {

bool mpi_usable() {
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    return initialized && !finalized;
}

}  // namespace

MpiOob::MpiOob(MPI_Comm comm) : comm_(comm) {
    PMPI_Comm_rank(comm, &rank_);
    PMPI_Comm_size(comm, &size_);
}

Status MpiOob::allgather(const void *send, void *recv, size_t len, void **req) {
    if (!mpi_usable())
        return set_error(TERSE_ERR_NOT_INITIALIZED, "MPI must be initialized (and not finalized) to set up UCX");
    if (len > size_t(INT_MAX))
        return set_error(TERSE_ERR_INVALID, "out-of-band allgather of %zu bytes per rank: more than %d", len,
                         INT_MAX);
    auto *r = new (std::nothrow) MPI_Request(MPI_REQUEST_NULL);
    if (!r) return set_error(TERSE_ERR_NO_MEMORY, "out of memory for an out-of-band allgather");
    int rc = PMPI_Iallgather(send, int(len), MPI_BYTE, recv, int(len), MPI_BYTE, comm_, r);
    if (rc != MPI_SUCCESS) {
        delete r;
        return set_error(TERSE_ERR_MPI, "PMPI_Iallgather failed (code %d)", rc);
    }
    *req = r;
    return TERSE_OK;
}

bool MpiOob::test(void *req, Status *status) {
    auto *r = static_cast<MPI_Request *>(req);
    int flag = 0;
    int rc = PMPI_Test(r, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        *status = set_error(TERSE_ERR_MPI, "PMPI_Test failed (code %d)", rc);
        return true;
    }
    *status = TERSE_OK;
    return flag != 0;
}

void MpiOob::free(void *req) {
    auto *r = static_cast<MPI_Request *>(req);
    if (*r != MPI_REQUEST_NULL) PMPI_Wait(r, MPI_STATUS_IGNORE);
    delete r;
}

bool node_cores_oversubscribed() {
    MPI_Comm node = MPI_COMM_NULL;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return false;
    int local = 1;
    PMPI_Comm_size(node, &local);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(int(c), &cpus);
    }
    int rc = PMPI_Allreduce(MPI_IN_PLACE, &cpus, int(sizeof cpus), MPI_BYTE, MPI_BOR, node);
    PMPI_Comm_free(&node);
    int available = CPU_COUNT(&cpus);
    return rc == MPI_SUCCESS && available > 0 && local > available;
}

}  // namespace terse
