// MPI_Allreduce, the hot path.
#include "datatype_map.h"
#include "dispatch.h"
#include "error_codes.h"
#include "reentry_guard.h"

#include "util/dtype.h"
#include "util/log.h"

namespace terse {

int report_error(MPI_Comm comm, Status status, const char *call) {
    TERSE_LOG_ERROR("%s failed: %s (%s)", call, last_error(), terse_status_string(status));
    int code = mpi_error_code(status);
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

namespace {

// Step 2 (dispatch.h), out of line so that the pass-through path of
// allreduce() stays a handful of instructions.
[[gnu::noinline]] int allreduce_examined(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                                         MPI_Op op, MPI_Comm comm, terse_dtype_t t, terse_op_t o,
                                         size_t bytes) {
    ReentryGuard guard;
    CollArgs a;
    a.kind = CollKind::Allreduce;
    a.dtype = t;
    a.op = o;
    a.in_place = sendbuf == MPI_IN_PLACE;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = static_cast<size_t>(count);
    return run_collective(comm, a, bytes, "MPI_Allreduce",
                          [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm); });
}

inline int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                     MPI_Comm comm) {
    terse_dtype_t t = TERSE_DTYPE_FLOAT32;
    terse_op_t o = TERSE_OP_SUM;
    const bool takes = count >= 0 && map_datatype(dt, &t) && map_op(op, &o);
    const size_t bytes = takes ? static_cast<size_t>(count) * dtype_size(t) : 0;
    if (pass_at_once(takes, bytes)) return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    return allreduce_examined(sendbuf, recvbuf, count, dt, op, comm, t, o, bytes);
}

}  // namespace

int dispatch_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm) {
    return allreduce(sendbuf, recvbuf, count, dt, op, comm);
}

}  // namespace terse

extern "C" int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm) {
    return terse::allreduce(sendbuf, recvbuf, count, dt, op, comm);
}
