// A collective on a communicator, from the runtime's side: the engine takes
// plain values (EngineEnv, CommConfig, CollArgs), and these functions build
// them from the communicator's CommState.  The wrappers call them; the
// decisions are the engine's: engine_eligible (engine/planner.h) for each
// codec the communicator has, then with TERSE_PLANNER=model the Selector
// (engine/selection.h) among the MPI library and those codecs.
#pragma once

#include "engine/coll_args.h"
#include "engine/engine.h"
#include "engine/selection.h"
#include "engine/stats.h"
#include "runtime/comm_state.h"
#include "util/status.h"

#include <cstdint>
#include <memory>

namespace terse {

// What the planner decided for one call on a communicator.
struct CollectiveChoice {
    bool engine = false;     // run on the engine (else the MPI library)
    bool model = false;      // decided by the model planner (its calls are timed)
    size_t slot = 0;         // st->codecs index
    uint32_t eligible = 0;   // bit i: codec slot i may run the call
    size_t bytes = 0;        // the call's size as engine_eligible counts it
    bool probe_mpi = false;  // engine chosen, but a blocking call runs MPI to re-measure it (Selector::choose)
    bool probe_first_calls = false;  // that call is one of its class's first of MPI (Selector::observe_mpi)
    Option option;
    FeedbackKey feedback_key;  // its residual's key, decided here at issue (engine/feedback_key.h)
    // A probe of the MPI library agreed for an earlier call failed to
    // complete (the message is set): the call fails with it, as the probe
    // itself would have.
    Status failed = TERSE_OK;
};

// Decide one call on st (ready): engine_eligible() for st's codecs, then
// the planner.  Identical on every rank.  nonblocking: an MPI_I* call
// (never the two-level schedule).  Also decides the call's feedback key,
// in issue order, whether or not the engine runs it, so that a call the
// planner sends to the MPI library in one iteration moves no other call's
// sequence key.
CollectiveChoice collective_choose(CommState *st, const CollArgs &args, bool nonblocking = false);

// The codec slots that may run a call on st (bit i: slot i; engine_eligible
// for each, only the lossless slot once the error guard tripped).
uint32_t collective_eligible(const CommState *st, const CollArgs &args);
// Whether the model planner weighs the two-level schedule for the call.
bool collective_two_level_weighed(const CommState *st, const CollArgs &args, bool nonblocking);

// What every engine operation on st shares: rank, size, context, the next
// sequence number, the ports (made: comm_state_ports), the memory pool and
// the name; control: a non-blocking call's private control plane, or
// nullptr for st's.  Settings of the call (verification, feedback, guard,
// statistics) are the caller's to add.
void collective_env(CommState *st, CodecInstance *codec, Control *control, EngineEnv *env);

// An engine operation's agreed observation as the planner weighs it: the
// call's whole time.  The operation is timed up to its closing agreement
// (OpBase::post_close carries the time in it), and its caller then waits
// for that small allreduce too, where a probe of the MPI library is timed
// whole; so the set-up's time of one small allreduce (CostInputs::fixed)
// is added.  Left out, it favoured the engine in every comparison: 16-18
// us over TCP at 10 Gbit/s, 4-5 % of a 256 KiB allreduce.
Observation collective_call_observation(const CommState *st, Observation ob);

// Count a call at or above the pass-through floor that terse did not take
// (it goes to PMPI): st's statistics and capture numbering.
void collective_passed(CommState *st);
// The same, for a call the model planner sent to the MPI library, which
// took `seconds` on this rank (statistics only).
void collective_passed_timed(CommState *st, const CollArgs &args, const CollectiveChoice &c, double seconds);
// Run pass() (the MPI call) for a call the model planner sent to the MPI
// library, timed for TERSE_STATS.
template <class Pass>
int collective_pass_timed(CommState *st, const CollArgs &args, const CollectiveChoice &c, Pass &&pass) {
    const double t0 = now_seconds();
    const int rc = pass();
    collective_passed_timed(st, args, c, now_seconds() - t0);
    return rc;
}

// The planner's probe of the MPI library (choice.probe_mpi, blocking calls
// only): pass() instead of the engine, its time agreed (MAX over ranks) and
// given to the model at the model's second decision after it
// (CommState::probe).  Every rank probes the same calls.
Status collective_probed(CommState *st, const CollArgs &args, const CollectiveChoice &c, double seconds);
template <class Pass>
int collective_probe_mpi(CommState *st, const CollArgs &args, const CollectiveChoice &c, Pass &&pass, Status *s) {
    const double t0 = now_seconds();
    const int rc = pass();
    *s = collective_probed(st, args, c, now_seconds() - t0);
    return rc;
}

// The statistics kind of a call (terse_comm_stats_t's per_kind).
terse_coll_kind_t collective_stats_kind(CollKind kind, bool nonblocking);

// Start an eligible collective on st (which must be ready) with codec slot
// `choice.slot`: numbers it, records its input when TERSE_CAPTURE asks,
// counts it in st's statistics and gives it the next sequence number.
// With the model planner, observed (non-null) receives the operation's
// agreed measurements when it finishes.  A non-blocking call runs its
// control plane on `control` (the communicator's private one,
// runtime/nonblocking.h); a blocking one passes nullptr and uses st's.
// device: the port of a call on device buffers (runtime/device_codecs.h).
Status collective_start(CommState *st, const CollArgs &args, const CollectiveChoice &choice, Priority prio,
                        OpHandle *op, Observation *observed = nullptr, bool nonblocking = false,
                        Control *control = nullptr, DevicePort *device = nullptr);

// The pending probe of the MPI library completed, and its agreed time
// given to the selector when apply (else dropped: the selector goes).
Status collective_settle_probe(CommState *st, bool apply);

// collective_start + engine_wait, and the planner's bookkeeping.
Status collective_run(CommState *st, const CollArgs &args, const CollectiveChoice &choice,
                      DevicePort *device = nullptr);

// The plan collective_start() gives a blocking call (no side effects):
// what the device codec path asks before it takes a call.
Status collective_plan(CommState *st, const CollArgs &args, const CollectiveChoice &choice, Plan *plan);

}  // namespace terse
