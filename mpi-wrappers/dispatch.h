// Shared by the C and Fortran bindings of every intercepted collective: the
// decision "terse or PMPI" and the error path.
//
// The decision has two steps, so that a call terse does not take costs
// next to nothing:
//  1. pass_at_once(), from the arguments alone: a datatype, operation or
//     count terse never takes, or a size below the pass-through gate
//     (runtime/pass_through.h), goes to PMPI at once: no lock, no lookup,
//     no communicator state, no re-entry guard.
//  2. run_collective(), under a ReentryGuard: the communicator's state,
//     found without a lock, decides through collective_choose() (the
//     engine's engine_eligible(), engine/planner.h, then with
//     TERSE_PLANNER=model the planner's choice, engine/selection.h),
//     agreeing first if the communicator is not ready
//     (runtime/comm_state.h).
// The decision reads no environment and takes no lock of terse's own or of
// the MPI library's; it depends only on arguments MPI requires to match on
// every rank, on the floor agreed at MPI_Init and on configuration agreed
// on the communicator.
//
// Statistics: a call that step 1 passes, or that is below the floor, counts
// as passed straight (per thread, summed in the TERSE_STATS process line);
// a communicator's calls_passed counts its calls at or above the floor
// that terse did not take.
#pragma once

#include "reentry_guard.h"

#include "device/mem_kind.h"
#include "engine/coll_args.h"
#include "runtime/collective.h"
#include "runtime/comm_state.h"
#include "runtime/nonblocking.h"
#include "runtime/pass_through.h"
#include "util/status.h"

#include <mpi.h>

#include <cstddef>

namespace terse {

// The body of MPI_Allreduce (sendbuf may be MPI_IN_PLACE), for the Fortran
// bindings.
int dispatch_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

// Report a terse failure on comm the MPI way: print the message, invoke the
// communicator's error handler (fatal by default), return an MPI error code.
int report_error(MPI_Comm comm, Status status, const char *call);

// Start terse after PMPI_Init / PMPI_Init_thread succeeded.
void start_runtime(int provided);

// A call in CUDA device memory at or above the pass-through floor that
// terse does not take goes to the MPI library as it is (nothing stages it
// through host memory yet, so an MPI library that cannot read device memory
// fails on it as it would without terse), counted for the statistics.
inline void count_if_device(const CollArgs &a) {
    if (__builtin_expect(a.mem == TERSE_MEM_CUDA, 0)) device::count_device_call_passed();
}

// Step 1.  takes: the datatype, operation and count have engine
// equivalents; bytes: the call's size as engine_eligible counts it (read
// only when takes); sendbuf (may be MPI_IN_PLACE) and recvbuf: the call's
// buffers, whose memory kind goes to a->mem (device/mem_kind.h: without a
// CUDA driver, one predictable branch) for the calls that get past the
// gate only, so that a call passed straight never asks the driver.  True
// when the call goes to PMPI now: passed straight (counted), or made from
// inside terse (ReentryGuard; not counted).
inline bool pass_at_once(bool takes, size_t bytes, const void *sendbuf, const void *recvbuf, CollArgs *a) {
    if (!takes || pass_below_gate(bytes)) {
        count_straight_pass();
        return true;
    }
    a->mem = device::mem_kind_of_call(
        sendbuf == MPI_IN_PLACE ? TERSE_MEM_HOST : device::buffer_mem_kind(sendbuf, 0),
        device::buffer_mem_kind(recvbuf, 0));
    return ReentryGuard::active();
}

// Where step 2 sends a call.
enum class Route {
    Pass,       // to PMPI
    PassTimed,  // to PMPI, chosen by the model planner (timed, on *st)
    Engine,     // to terse's engine, on *st, as *choice says
    Failed      // nowhere: the error was reported (*rc)
};

// Step 2's decision, for blocking and non-blocking calls alike.  bytes as
// for pass_at_once().  Callers hold a ReentryGuard.
inline Route route_collective(MPI_Comm comm, const CollArgs &a, size_t bytes, const char *call, bool nonblocking,
                              CommState **out, CollectiveChoice *choice, int *rc) {
    // Lookup or create: once made, the state is found without a lock, also
    // for the calls below the floor that a lowered gate sends here.
    Status s;
    CommState *st = comm_state_get(comm, &s);
    // Without its state terse can neither count nor agree, but PMPI still
    // gives the exact result.
    if (!st) return Route::Pass;
    // The error guard may switch st to lossless as an operation in flight
    // ends, which changes what is eligible: every rank decides after it.
    if (st->nb && st->guard.every) nb_drain(st);
    if (!st->ready) {
        // Not agreed yet: below the floor every rank passes, whatever its
        // own configuration says; at or above it every rank agrees, so a
        // rank configured differently fails here with its peers instead of
        // taking another path than they do.
        if (bytes < pass_floor()) {
            count_straight_pass();
            return Route::Pass;
        }
        if (st->is_inter) {
            collective_passed(st);
            return Route::Pass;
        }
        s = comm_state_ready(st);
        if (s != TERSE_OK) {
            *rc = report_error(comm, s, call);
            return Route::Failed;
        }
    }
    *choice = collective_choose(st, a, nonblocking);
    if (!choice->engine) {
        // Below the floor a call gets here only when an agreed min_bytes
        // (this communicator's or another's) lowered the gate: it counts
        // as it would have without that.
        if (bytes < pass_floor()) {
            count_straight_pass();
            return Route::Pass;
        }
        if (!choice->model) {
            collective_passed(st);
            return Route::Pass;
        }
        *out = st;
        return Route::PassTimed;
    }
    *out = st;
    return Route::Engine;
}

inline int mpi_code(MPI_Comm comm, Status s, const char *call) {
    return s == TERSE_OK ? MPI_SUCCESS : report_error(comm, s, call);
}

// Step 2 after the decision: pass() (the PMPI call), or engine(st, choice)
// for a call terse takes; engine returns the MPI code the call returns.
template <class Pass, class Engine>
int follow_route(MPI_Comm comm, const CollArgs &a, size_t bytes, const char *call, bool nonblocking, Pass &&pass,
                 Engine &&engine) {
    CommState *st = nullptr;
    CollectiveChoice choice;
    int rc = MPI_SUCCESS;
    const Route route = route_collective(comm, a, bytes, call, nonblocking, &st, &choice, &rc);
    if (route == Route::Pass || route == Route::PassTimed) count_if_device(a);
    if (route == Route::Pass) return pass();
    if (route == Route::PassTimed) {
        if (!choice.probe_mpi || nonblocking) return collective_pass_timed(st, a, choice, pass);
        // The planner re-measures the MPI library on this call (blocking
        // calls only: a non-blocking one's time is not the library's).
        Status s = TERSE_OK;
        const int rc = collective_probe_mpi(st, a, choice, pass, &s);
        return rc != MPI_SUCCESS ? rc : mpi_code(comm, s, call);
    }
    if (route == Route::Failed) return rc;
    // The memory kind is this rank's own (MPI does not require it to match
    // across ranks), so it never changes the route: a call in device memory
    // that the engine takes fails here, on this rank, rather than part from
    // its peers (they run the engine, which host code cannot do on device
    // memory).  Staging it through host memory is what will take it.
    if (__builtin_expect(a.mem == TERSE_MEM_CUDA, 0))
        return report_error(comm,
                            set_error(TERSE_ERR_UNSUPPORTED,
                                      "terse: %s in CUDA device memory: terse does not run calls in device "
                                      "memory on its engine yet; raise min_bytes or set enable=0 for this "
                                      "communicator so that such calls go to the MPI library",
                                      call),
                            call);
    return engine(st, choice);
}

// Step 2 of a blocking call: run it on terse's engine if it is eligible,
// else through pass() (the PMPI call).  After the communicator's
// non-blocking operations, if it has any (runtime/nonblocking.h).
template <class Pass>
int run_collective(MPI_Comm comm, const CollArgs &a, size_t bytes, const char *call, Pass &&pass) {
    return follow_route(comm, a, bytes, call, false, pass, [&](CommState *st, const CollectiveChoice &choice) {
        if (choice.probe_mpi) {
            // The planner re-measures the MPI library on this call.
            if (st->nb) nb_drain(st);
            Status s = TERSE_OK;
            const int rc = collective_probe_mpi(st, a, choice, pass, &s);
            return rc != MPI_SUCCESS ? rc : mpi_code(comm, s, call);
        }
        return mpi_code(comm, st->nb ? nb_run_blocking(st, a, choice) : collective_run(st, a, choice), call);
    });
}

// Step 2 of a non-blocking call: start it on terse's engine (a generalized
// request in *request, priority prio: nb_take_priority) if it is eligible,
// else through pass().  A probe of the MPI library (blocking calls only) is
// not taken here.
template <class Pass>
int start_collective(MPI_Comm comm, const CollArgs &a, size_t bytes, const char *call, int prio,
                     MPI_Request *request, Pass &&pass) {
    return follow_route(comm, a, bytes, call, true, pass, [&](CommState *st, const CollectiveChoice &choice) {
        Status s = nb_start(st, a, choice, prio, call, request);
        // Operations of other communicators may wait for this thread's MPI.
        if (s == TERSE_OK) nb_poll(true);
        return mpi_code(comm, s, call);
    });
}

}  // namespace terse
