// MPI_Allreduce, the hot path.
#include "datatype_map.h"
#include "dispatch.h"
#include "error_codes.h"
#include "reentry_guard.h"

#include "util/log.h"

namespace terse {

int report_error(MPI_Comm comm, Status status, const char *call) {
    TERSE_LOG_ERROR("%s failed: %s (%s)", call, last_error(), terse_status_string(status));
    int code = mpi_error_code(status);
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

int dispatch_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm) {
    CollArgs a;
    bool mappable = count >= 0 && map_datatype(dt, &a.dtype) && map_op(op, &a.op);
    a.kind = CollKind::Allreduce;
    a.in_place = sendbuf == MPI_IN_PLACE;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = static_cast<size_t>(count);
    return run_collective(comm, mappable, a, "MPI_Allreduce",
                          [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm); });
}

}  // namespace terse

extern "C" int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm) {
    if (terse::ReentryGuard::active() || !terse::runtime_active())
        return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    terse::ReentryGuard guard;
    return terse::dispatch_allreduce(sendbuf, recvbuf, count, dt, op, comm);
}
