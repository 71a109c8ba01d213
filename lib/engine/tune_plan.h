// A tuning file entry (config/tune_file.h) applied to the planner's plan:
// where the file has an entry for a call, its schedule, chunk and depth
// replace the planner's (its codec and @mpi are the runtime's part:
// runtime/collective.cc).
#pragma once

#include "config/tune_file.h"
#include "engine/coll_args.h"
#include "engine/engine.h"
#include "engine/planner.h"

#include <cstddef>

namespace terse {

// codec_max_chunk: the codec instance's max_chunk_count (0 = unbounded),
// which caps the entry's chunk.  A trivial plan (nothing to exchange) stays.
void plan_apply_tuning(const TuneEntry &e, const EngineEnv &env, const CollArgs &args, size_t codec_max_chunk,
                       Plan *plan);

}  // namespace terse
