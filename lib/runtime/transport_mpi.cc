#include "runtime/transport_mpi.h"

#include "util/fnv1a.h"

#include <sched.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <new>
#include <vector>

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
    // A completed blocking gather leaves *r null, which test() finds done.
    int rc = nonblocking_ ? PMPI_Iallgather(send, int(len), MPI_BYTE, recv, int(len), MPI_BYTE, comm_, r)
                          : PMPI_Allgather(send, int(len), MPI_BYTE, recv, int(len), MPI_BYTE, comm_);
    if (rc != MPI_SUCCESS) {
        delete r;
        return set_error(TERSE_ERR_MPI, "%s failed (code %d)",
                         nonblocking_ ? "PMPI_Iallgather" : "PMPI_Allgather", rc);
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

uint64_t host_name_hash() {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return fnv1a64(host);
}

Status node_cores_oversubscribed(bool *oversubscribed) {
    *oversubscribed = false;
    // One blocking gather over MPI_COMM_WORLD of every rank's node and CPU
    // mask, not MPI_Comm_split_type: Open MPI agrees a new communicator's
    // context id with a non-blocking collective, and so would start polling
    // its libnbc component in every progress loop of the job (as the
    // PMPI_Iallgather of MpiOob would).
    struct NodeCpus {
        uint64_t node;
        cpu_set_t cpus;
    };
    NodeCpus mine{};
    // Every rank takes part in the gather, also one whose host name is
    // unknown (it counts as the empty name).
    mine.node = host_name_hash();
    if (sched_getaffinity(0, sizeof mine.cpus, &mine.cpus) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(int(c), &mine.cpus);
    }
    int size = 1;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<NodeCpus> all;
    try {
        all.resize(size_t(size));
    } catch (const std::bad_alloc &) {
        // The others wait in the gather: the caller fails the start, which
        // aborts the job.
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory gathering the %d ranks' CPU masks", size);
    }
    if (PMPI_Allgather(&mine, int(sizeof mine), MPI_BYTE, all.data(), int(sizeof mine), MPI_BYTE,
                       MPI_COMM_WORLD) != MPI_SUCCESS)
        return TERSE_OK;
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    int local = 0;
    for (const NodeCpus &r : all) {
        if (r.node != mine.node) continue;
        ++local;
        CPU_OR(&cpus, &cpus, &r.cpus);
    }
    const int available = CPU_COUNT(&cpus);
    *oversubscribed = available > 0 && local > available;
    return TERSE_OK;
}

}  // namespace terse
