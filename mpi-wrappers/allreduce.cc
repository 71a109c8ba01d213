// MPI_Allreduce, the hot path.
#include "coll_map.h"
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

namespace {

// Step 2 (dispatch.h), out of line so that the pass-through path of
// allreduce() stays a handful of instructions.
// The call on any pair of buffers (the application's or their host
// copies, dispatch.h).
auto allreduce_call(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    return mpi_call(
        sendbuf, recvbuf, [=](const void *s, void *r) { return PMPI_Allreduce(s, r, count, dt, op, comm); },
        [=] { return stage_allreduce(sendbuf, recvbuf, count, dt); });
}

[[gnu::noinline]] int allreduce_examined(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                                         MPI_Op op, MPI_Comm comm, const CollArgs &a, size_t bytes) {
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Allreduce", allreduce_call(sendbuf, recvbuf, count, dt, op, comm));
}

// Steps 1 and 2, out of line so that step 0 in allreduce() needs no stack
// frame: a small call is a tail call to PMPI.
[[gnu::noinline]] int allreduce_mapped(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                                       MPI_Comm comm) {
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_allreduce(sendbuf, recvbuf, count, dt, op, &a, &bytes);
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) {
        if (__builtin_expect(!stage_for_mpi(a), 1)) return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
        return pass_staged(comm, "MPI_Allreduce", allreduce_call(sendbuf, recvbuf, count, dt, op, comm));
    }
    return allreduce_examined(sendbuf, recvbuf, count, dt, op, comm, a, bytes);
}

inline int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    if (pass_small(count)) return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    return allreduce_mapped(sendbuf, recvbuf, count, dt, op, comm);
}

}  // namespace

int dispatch_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    return allreduce(sendbuf, recvbuf, count, dt, op, comm);
}

}  // namespace terse

extern "C" int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm) {
    return terse::allreduce(sendbuf, recvbuf, count, dt, op, comm);
}
