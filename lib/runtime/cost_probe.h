// The measured inputs of the cost model (engine/cost_model.h), taken once
// per communicator when it becomes ready for the engine (TERSE_PLANNER=model),
// collectively, in a few milliseconds:
//  - a ring step over terse's transport: every rank sends to its right
//    neighbour and receives from its left through the engine's link, with
//    8 bytes (latency, alpha) and a stream of 4 x 128 KiB (bandwidth, beta);
//  - the MPI library's own MPI_Allreduce at 8 B, 64 KiB, 1 MiB and 8 MiB of
//    floats, stopping before a size predicted to take more than a few
//    milliseconds (larger sizes are extrapolated by the model);
//  - a local reduction (a + b over 64 KiB of floats: gamma).
// The bandwidth stream comes right after a drain (runtime/probe_ring.h),
// so that a shaper's burst does not speed it up.  The MPI library's sizes
// below 512 KiB are timed twice, as they come and after a drain: the
// faster is its estimate, the drained one what the engine calibration
// weighs against (cost_probe.cc says why).  The warm-up call before the
// largest size's repeats, over its drained time, is what the planner takes
// a probe of the MPI library at a size it has not run to cost
// (CostInputs::pmpi_first).
// Each figure is the fastest of a few repeats on a rank, then the largest
// over ranks (the slowest rank sets a collective's pace), so every rank
// holds the same numbers and the planner decides the same on every rank.
#pragma once

#include "engine/cost_model.h"
#include "runtime/comm_state.h"
#include "util/status.h"

namespace terse {

// Collective over st (ready, its link made).
Status probe_costs(CommState *st, CostInputs *out);

}  // namespace terse
