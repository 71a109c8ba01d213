// A collective on a communicator, from the runtime's side: the engine takes
// plain values (EngineEnv, CommConfig, CollArgs), and these functions build
// them from the communicator's CommState.  The wrappers call them; the
// decision itself is the engine's (engine_eligible, engine/planner.h).
#pragma once

#include "engine/coll_args.h"
#include "engine/engine.h"
#include "runtime/comm_state.h"
#include "util/status.h"

#include <memory>

namespace terse {

// Whether the engine runs this call on st (ready): engine_eligible() over
// st's configuration, size and codec.
bool collective_eligible(const CommState *st, const CollArgs &args);

// Count a call at or above the pass-through floor that terse did not take
// (it goes to PMPI): st's statistics and capture numbering.
void collective_passed(CommState *st);

// The statistics kind of a call (terse_comm_stats_t's per_kind).
terse_coll_kind_t collective_stats_kind(CollKind kind, bool nonblocking);

// Start an eligible collective on st (which must be ready): numbers it,
// records its input when TERSE_CAPTURE asks, counts it in st's statistics
// and gives it the next sequence number.  A non-blocking call runs its
// control plane on `control` (the communicator's private one,
// runtime/nonblocking.h); a blocking one passes nullptr and uses st's.
Status collective_start(CommState *st, const CollArgs &args, Priority prio,
                        OpHandle *op, bool nonblocking = false, Control *control = nullptr);

// collective_start + engine_wait.
Status collective_run(CommState *st, const CollArgs &args);

}  // namespace terse
