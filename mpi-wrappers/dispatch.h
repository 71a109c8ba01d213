// Shared by the C and Fortran bindings of every intercepted collective: the
// path "terse or PMPI" and the error path.  Callers hold a ReentryGuard.
// The decision itself is engine_eligible() (engine/planner.h), reached
// through the runtime's collective_eligible(); it reads no environment and
// takes no lock of terse's own, and depends only on arguments MPI requires
// to match on every rank and on configuration agreed at context creation.
#pragma once

#include "engine/coll_args.h"
#include "runtime/collective.h"
#include "runtime/comm_state.h"
#include "util/status.h"

#include <mpi.h>

namespace terse {

// The body of MPI_Allreduce (sendbuf may be MPI_IN_PLACE).
int dispatch_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm);

// Report a terse failure on comm the MPI way: print the message, invoke the
// communicator's error handler (fatal by default), return an MPI error code.
int report_error(MPI_Comm comm, Status status, const char *call);

// Start terse after PMPI_Init / PMPI_Init_thread succeeded.
void start_runtime(int provided);

// Run one collective on terse's engine if it is eligible, else through
// pass() (the PMPI call).  mappable is false when the datatype, op or count
// has no engine equivalent; a is then ignored.
template <class Pass>
int run_collective(MPI_Comm comm, bool mappable, const CollArgs &a, const char *call, Pass &&pass) {
    Status s;
    CommState *st = comm_state_get(comm, &s);
    // Without its state terse can neither count nor agree, but PMPI still
    // gives the exact result.
    if (!st) return pass();
    if (st->is_inter || !mappable) {
        st->stats.c.calls_passed++;
        return pass();
    }
    if (!st->ready) {
        // The first call on a communicator agrees on its configuration
        // whatever its size, so a rank configured differently fails here
        // instead of taking another path than its peers.
        s = comm_state_ready(st);
        if (s != TERSE_OK) return report_error(comm, s, call);
    }
    st->call_index++;
    if (!collective_eligible(st, a)) {
        st->stats.c.calls_passed++;
        return pass();
    }
    s = collective_run(st, a);
    if (s != TERSE_OK) return report_error(comm, s, call);
    return MPI_SUCCESS;
}

}  // namespace terse
