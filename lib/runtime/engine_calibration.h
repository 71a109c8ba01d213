// The engine measured on a communicator before its first call
// (TERSE_PLANNER=model).
//
// The cost model (engine/cost_model.h) sees the link and the MPI library,
// measured by runtime/cost_probe.h, but not what an engine operation costs
// beyond moving and reducing bytes: its agreements, pipeline set-up,
// progress and, for a codec, encoding.  On a fast fabric (shared memory)
// that overhead decides, and a model that leaves it out picks the engine,
// runs it in the user's first calls of each size, and only then learns that
// the MPI library was faster.  So, once the selector exists, every engine
// option an allreduce of floats may run (each codec of the communicator on
// each flat schedule) runs here at 64 KiB, 256 KiB and 1 MiB, three
// repeats at each size after a warm-up at that size, and the agreed time
// of its median repeat (with the least codec time of the three, and the
// closing agreement its callers wait for: collective_call_observation) is
// given to the selector as a calibration (Selector::calibrate).  Above the smallest
// size, only options predicted within 1.5 times the MPI library's drained
// time run (elsewhere no class's choice turns on them).  A size is skipped
// for an option when its predicted time no longer fits a few milliseconds,
// or the whole calibration no longer fits 45 ms of operations (15 ms a
// repeat), so slow fabrics measure the smallest size only.  Each size's
// timed repeats come right after a drain (runtime/probe_ring.h), as a
// loop's calls come after its earlier ones.  Sizes below the
// communicator's min_bytes, and codecs that cannot run floats, are not
// measured.  Every decision here reads agreed values only, so every rank
// runs the same operations.
//
// Nothing is counted in the statistics, captured, or fed back as error; the
// operations take sequence numbers like any other.
#pragma once

#include "runtime/comm_state.h"
#include "util/status.h"

namespace terse {

// Collective over st, whose selector exists and whose ports are made.
Status calibrate_engine(CommState *st);

}  // namespace terse
