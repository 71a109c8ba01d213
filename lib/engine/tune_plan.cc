#include "engine/tune_plan.h"

#include "util/dtype.h"
#include "util/log.h"

#include <algorithm>

namespace terse {

void plan_apply_tuning(const TuneEntry &e, const EngineEnv &env, const CollArgs &args, size_t codec_max_chunk,
                       Plan *plan) {
    if (plan->schedule == Schedule::Trivial) return;
    if (args.kind == CollKind::Allreduce) {
        switch (e.schedule) {
        case TuneSchedule::Ring: plan->schedule = Schedule::Ring; break;
        case TuneSchedule::RecursiveDoubling: plan->schedule = Schedule::RecursiveDoubling; break;
        case TuneSchedule::Gather: plan->schedule = Schedule::Gather; break;
        case TuneSchedule::Mpi: break;  // not run by the engine
        }
    }
    if (e.chunk_bytes) {
        const size_t esize = std::max<size_t>(1, dtype_size(args.dtype));
        size_t chunk = std::max<size_t>(1, e.chunk_bytes / esize);
        if (codec_max_chunk) chunk = std::min(chunk, codec_max_chunk);
        plan->chunk_elems = chunk;
    }
    if (e.depth) plan->depth = e.depth;
    TERSE_LOG_DEBUG("tuning file line %d on '%s': %s of %zu elements runs %s, chunk %zu elements, depth %d%s",
                    e.line, env.comm_name, tune_coll_name(e.coll), args.count, schedule_name(plan->schedule),
                    plan->chunk_elems, plan->depth, e.codec == TuneCodec::None ? ", lossless" : "");
}

}  // namespace terse
