// Shared by the C and Fortran bindings of every intercepted collective: the
// decision "terse or PMPI" and the error path.
//
// The decision has two steps, so that a call terse does not take costs
// next to nothing, and a shortcut before them:
//  0. pass_small(), for the calls whose size is one count of elements
//     (allreduce, allgather): a count that is below the gate whatever the
//     datatype goes to PMPI before the arguments are mapped at all.
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
// Whichever step sends a call where, a call in CUDA device memory reaches
// that library through host copies unless the library reads device memory
// (staging, below: pass_now, follow_route).
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
#include "runtime/device_codecs.h"
#include "runtime/nonblocking.h"
#include "runtime/pass_through.h"
#include "stage_layout.h"
#include "util/dtype.h"
#include "util/status.h"

#include <mpi.h>

#include <cstddef>
#include <memory>

namespace terse {

// The body of MPI_Allreduce (sendbuf may be MPI_IN_PLACE), for the Fortran
// bindings.
int dispatch_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

// Report a terse failure on comm the MPI way: print the message, invoke the
// communicator's error handler (fatal by default), return an MPI error code.
int report_error(MPI_Comm comm, Status status, const char *call);

// Start terse after PMPI_Init / PMPI_Init_thread succeeded.
void start_runtime(int provided);

inline int mpi_code(MPI_Comm comm, Status s, const char *call) {
    return s == TERSE_OK ? MPI_SUCCESS : report_error(comm, s, call);
}

// Device memory (CollArgs::mem == TERSE_MEM_CUDA).  Neither terse's engine
// (host codecs) nor an MPI library that is not CUDA-aware can read it, so
// such a call is staged (device/staged_call.h): its inputs copied to pinned
// host memory, the call run on the copies by whichever library the route
// picks, the result copied back before the call returns (a non-blocking
// call: before the completion call that completes it returns).  A
// CUDA-aware MPI library (device::mpi_reads_device_memory(), found at
// MPI_Init) gets the device buffers of the calls it serves as they are;
// the engine gets host copies, except for the calls the device codec path
// serves (runtime/device_codecs.h), whose codec runs on the device
// buffers.  The memory kind is this rank's own
// (MPI does not require it to match), so it never changes the route, only
// which buffers the route's library is handed.

// A call as the wrappers were given it: its buffers (sendbuf may be
// MPI_IN_PLACE), the PMPI call on any pair of buffers (int(const void *,
// void *)), the regions staging copies (StageLayout(), stage_layout.h:
// computed only for a call in device memory) and, for a non-blocking call,
// where its request goes.
template <class Pass, class Layout>
struct MpiCall {
    const void *sendbuf;
    void *recvbuf;
    Pass pass;
    Layout layout;
    MPI_Request *request = nullptr;

    int operator()() const { return pass(sendbuf, recvbuf); }
    // The PMPI call on a staged call's buffers.
    int on(const device::StagedCall &sc) const {
        return pass(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : sc.send(), sc.recv());
    }
};

template <class Pass, class Layout>
MpiCall<Pass, Layout> mpi_call(const void *sendbuf, void *recvbuf, Pass pass, Layout layout,
                               MPI_Request *request = nullptr) {
    return MpiCall<Pass, Layout>{sendbuf, recvbuf, pass, layout, request};
}

// Whether a call goes to the MPI library through host copies.
inline bool stage_for_mpi(const CollArgs &a) {
    return __builtin_expect(a.mem == TERSE_MEM_CUDA, 0) && !device::mpi_reads_device_memory();
}

// A call in device memory that the MPI library gets as it is (it is
// CUDA-aware), counted for the statistics.
inline void count_if_device(const CollArgs &a) {
    if (__builtin_expect(a.mem == TERSE_MEM_CUDA, 0)) device::count_device_call_passed();
}

// Stages m's buffers into *sc; MPI_SUCCESS or the reported error.
template <class Call>
int stage_in(MPI_Comm comm, const char *call, const Call &m, device::StagedCall *sc) {
    const StageLayout l = m.layout();
    const Status s = sc->begin(l.send, l.recv);
    return s == TERSE_OK ? MPI_SUCCESS : report_error(comm, s, call);
}

// The call the engine runs on a staged call's host copies: every buffer it
// names is now readable by the CPU.
inline CollArgs host_args(const CollArgs &a, const device::StagedCall &sc) {
    CollArgs h = a;
    h.recvbuf = sc.recv();
    if (a.in_place)
        h.sendbuf = static_cast<const char *>(h.recvbuf) +
                    (static_cast<const char *>(a.sendbuf) - static_cast<const char *>(a.recvbuf));
    else h.sendbuf = sc.send();
    h.mem = TERSE_MEM_HOST;
    return h;
}

// The MPI library on host copies of m's buffers.  Blocking: the result is
// copied back before it returns; non-blocking: m.request becomes a
// generalized request that completes once the library's request did and
// the result is back (runtime/nonblocking.h: nb_track_staged).
template <class Call>
[[gnu::noinline]] int pass_staged(MPI_Comm comm, const char *call, const Call &m) {
    auto sc = std::make_unique<device::StagedCall>();
    int rc = stage_in(comm, call, m, sc.get());
    if (rc != MPI_SUCCESS) return rc;
    rc = m.on(*sc);
    if (rc != MPI_SUCCESS) return rc;
    if (m.request) return mpi_code(comm, nb_track_staged(std::move(sc), call, m.request), call);
    return mpi_code(comm, sc->finish(), call);
}

// Step 1's pass: to PMPI with the application's buffers, or staged.
template <class Call>
inline int pass_now(MPI_Comm comm, const char *call, const CollArgs &a, const Call &m) {
    if (__builtin_expect(!stage_for_mpi(a), 1)) return m();
    return pass_staged(comm, call, m);
}

// Step 0.  count: the call's elements as engine_eligible counts them (an
// allreduce's count, an allgather's recvcount).  True when the call goes
// to PMPI now with the application's buffers, counted as passed straight:
// count elements of the largest type terse takes (kLargestElement,
// util/dtype.h) are below the gate, so whatever the datatype the
// call is below it too (and a datatype terse does not take passes anyway),
// and no buffer can be device memory.  It maps nothing and builds no
// CollArgs: on a small call the mapping cost as much as the interception
// itself (about 25 ns of a 50 ns call on one rank).
inline bool pass_small(int count) {
    if (__builtin_expect(count < 0, 0) || !pass_below_gate(size_t(count) * kLargestElement) ||
        !device::host_memory_only())
        return false;
    count_straight_pass();
    return true;
}

// Step 1.  takes: the datatype, operation and count have engine
// equivalents; bytes: the call's size as engine_eligible counts it (read
// only when takes); sendbuf (may be MPI_IN_PLACE) and recvbuf: the call's
// buffers, whose memory kind goes to a->mem (device/mem_kind.h: without a
// CUDA driver, one predictable branch).  A call passed straight asks the
// driver only when the MPI library is not CUDA-aware: it must not get
// device memory (pass_now stages it).  True when the call goes to PMPI now
// (pass_now): passed straight (counted), or made from inside terse
// (ReentryGuard; not counted).
inline bool pass_at_once(bool takes, size_t bytes, const void *sendbuf, const void *recvbuf, CollArgs *a) {
    auto kind = [&] {
        return device::mem_kind_of_call(
            sendbuf == MPI_IN_PLACE ? TERSE_MEM_HOST : device::buffer_mem_kind(sendbuf, 0),
            device::buffer_mem_kind(recvbuf, 0));
    };
    if (!takes || pass_below_gate(bytes)) {
        count_straight_pass();
        if (!device::mpi_reads_device_memory()) a->mem = kind();
        return true;
    }
    a->mem = kind();
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
    if (choice->failed != TERSE_OK) {
        *rc = report_error(comm, choice->failed, call);
        return Route::Failed;
    }
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

// Step 2 after the decision: the MPI call m, or engine(st, choice, args,
// pass_here, staged, lease) for a call terse takes, where args are the
// call's (a, or the host copies' for a call in device memory), pass_here()
// the MPI call on those buffers, *staged (null for a call not staged) the
// staging a non-blocking call takes over until it completes, and lease
// (null but for a non-blocking call the device codec path serves, on its
// device buffers) the communicator's device lane it takes over; engine
// returns the MPI code the call returns.
template <class Call, class Engine>
int follow_route(MPI_Comm comm, const CollArgs &a, size_t bytes, const char *call, bool nonblocking,
                 const Call &m, Engine &&engine) {
    CommState *st = nullptr;
    CollectiveChoice choice;
    int rc = MPI_SUCCESS;
    const Route route = route_collective(comm, a, bytes, call, nonblocking, &st, &choice, &rc);
    if (route == Route::Failed) return rc;
    if (route == Route::Pass || route == Route::PassTimed) {
        const bool staged = stage_for_mpi(a);
        if (!staged) count_if_device(a);
        auto pass = [&] { return staged ? pass_staged(comm, call, m) : m(); };
        if (route == Route::Pass) return pass();
        if (!choice.probe_mpi || nonblocking) return collective_pass_timed(st, a, choice, pass);
        // The planner re-measures the MPI library on this call (blocking
        // calls only: a non-blocking one's time is not the library's).
        Status s = TERSE_OK;
        const int prc = collective_probe_mpi(st, a, choice, pass, &s);
        return prc != MPI_SUCCESS ? prc : mpi_code(comm, s, call);
    }
    if (__builtin_expect(a.mem != TERSE_MEM_CUDA, 1)) {
        std::unique_ptr<device::StagedCall> none;
        return engine(st, choice, a, m, &none, nullptr);
    }
    // A call the device codec path serves runs on the device buffers
    // themselves, only its payloads crossing to the host
    // (runtime/device_codecs.h); every other call gets host copies.
    if (!nonblocking && !choice.probe_mpi) {
        if (st->nb) nb_drain(st);
        bool served = false;
        const Status ds = device_codecs_run(st, a, choice, &served);
        if (served) return mpi_code(comm, ds, call);
    } else if (nonblocking) {
        std::unique_ptr<DeviceLease> lease;
        device_codecs_lease(st, a, choice, &lease);
        if (lease) {
            std::unique_ptr<device::StagedCall> none;
            return engine(st, choice, a, m, &none, &lease);
        }
    }
    auto sc = std::make_unique<device::StagedCall>();
    rc = stage_in(comm, call, m, sc.get());
    if (rc != MPI_SUCCESS) return rc;
    const device::StagedCall &copies = *sc;
    rc = engine(
        st, choice, host_args(a, copies), [&] { return m.on(copies); }, &sc, nullptr);
    // A non-blocking call took the staging over (nb_start).
    if (rc != MPI_SUCCESS || !sc) return rc;
    return mpi_code(comm, sc->finish(), call);
}

// Step 2 of a blocking call: run it on terse's engine if it is eligible,
// else through the MPI call m.  After the communicator's
// non-blocking operations, if it has any (runtime/nonblocking.h).
template <class Call>
int run_collective(MPI_Comm comm, const CollArgs &a, size_t bytes, const char *call, const Call &m) {
    return follow_route(
        comm, a, bytes, call, false, m,
        [&](CommState *st, const CollectiveChoice &choice, const CollArgs &args, auto &&pass,
            std::unique_ptr<device::StagedCall> *, std::unique_ptr<DeviceLease> *) {
            if (choice.probe_mpi) {
                // The planner re-measures the MPI library on this call.
                if (st->nb) nb_drain(st);
                Status s = TERSE_OK;
                const int rc = collective_probe_mpi(st, a, choice, pass, &s);
                return rc != MPI_SUCCESS ? rc : mpi_code(comm, s, call);
            }
            return mpi_code(comm, st->nb ? nb_run_blocking(st, args, choice) : collective_run(st, args, choice),
                            call);
        });
}

// Step 2 of a non-blocking call: start it on terse's engine (a generalized
// request in *m.request, priority prio: nb_take_priority) if it is
// eligible, else through the MPI call m.  A probe of the MPI library (blocking calls only) is
// not taken here.
template <class Call>
int start_collective(MPI_Comm comm, const CollArgs &a, size_t bytes, const char *call, int prio, const Call &m) {
    return follow_route(comm, a, bytes, call, true, m,
                        [&](CommState *st, const CollectiveChoice &choice, const CollArgs &args, auto &&,
                            std::unique_ptr<device::StagedCall> *staged, std::unique_ptr<DeviceLease> *lease) {
                            Status s = nb_start(st, args, choice, prio, call, m.request, std::move(*staged),
                                                lease ? std::move(*lease) : nullptr);
                            // Operations of other communicators may wait for this thread's MPI.
                            if (s == TERSE_OK) nb_poll(true);
                            return mpi_code(comm, s, call);
                        });
}

}  // namespace terse
