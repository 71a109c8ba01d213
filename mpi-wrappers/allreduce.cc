// MPI_Allreduce: the hot path.  It reads no environment and takes no lock
// of terse's own; the decision depends only on arguments MPI requires to
// match on every rank and on configuration agreed at context creation.
#include "datatype_map.h"
#include "dispatch.h"
#include "reentry_guard.h"

#include "comm_state.h"
#include "engine.h"
#include "log.h"

#include "capture.h"

namespace terse {

int report_error(MPI_Comm comm, Status status, const char *call) {
    TERSE_LOG_ERROR("%s failed: %s (%s)", call, last_error(), terse_status_string(status));
    int code = status == TERSE_ERR_TRANSPORT ? MPI_ERR_INTERN : MPI_ERR_OTHER;
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

int dispatch_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm) {
    terse_dtype_t tdt;
    terse_op_t top;
    Status s;
    CommState *st = comm_state_get(comm, &s);
    if (!st) {
        // The state is local bookkeeping; without it terse can't count or
        // agree, but PMPI still gives the exact result.
        return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    }
    if (st->is_inter || count < 0 || !map_datatype(dt, &tdt) || !map_op(op, &top)) {
        st->stats.c.calls_passed++;
        return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    }
    if (!st->ready) {
        s = comm_state_ready(st);
        if (s != TERSE_OK) return report_error(comm, s, "MPI_Allreduce");
    }
    st->call_index++;
    CollArgs a;
    a.kind = CollKind::Allreduce;
    a.in_place = sendbuf == MPI_IN_PLACE;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = static_cast<size_t>(count);
    a.dtype = tdt;
    a.op = top;
    a.mem = TERSE_MEM_HOST;
    if (!engine_eligible(st, a)) {
        st->stats.c.calls_passed++;
        return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    }
    if (capture_active()) {
        Status cs = capture_record(*st, a.sendbuf, a.count, a.dtype, st->call_index, a.op);
        if (cs != TERSE_OK) TERSE_LOG_WARN("capture: %s", last_error());
    }
    s = engine_run(st, a);
    if (s != TERSE_OK) return report_error(comm, s, "MPI_Allreduce");
    return MPI_SUCCESS;
}

}  // namespace terse

extern "C" int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm) {
    if (terse::ReentryGuard::active() || !terse::runtime_active())
        return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
    terse::ReentryGuard guard;
    return terse::dispatch_allreduce(sendbuf, recvbuf, count, dt, op, comm);
}
