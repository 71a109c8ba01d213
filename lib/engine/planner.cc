#include "engine/planner.h"

#include "engine/cost_model.h"
#include "engine/reduce_kernels.h"
#include "util/dtype.h"

#include <algorithm>

namespace terse {

namespace {

// A modest network seen through UCX over TCP: ~20 us per message and about
// 10 Gbit/s.  Only the ratio matters for the choice; the crossover lands
// around 100-200 KiB for 4-16 ranks.
constexpr double kAlpha = 20e-6;
constexpr double kBeta = 1.0 / 1.25e9;

// Below this a chunk costs more in per-message overhead than it gains in
// overlap of computing with sending.
constexpr size_t kMinChunkBytes = 64 * 1024;

}  // namespace

bool engine_eligible(const CommConfig &cfg, int nranks, const terse_codec_descriptor_t *d, bool have_instance,
                     const CollArgs &a) {
    if (!cfg.enable || nranks < 1) return false;
    const size_t esize = dtype_size(a.dtype);
    if (esize == 0) return false;
    size_t elems = a.kind == CollKind::ReduceScatterBlock ? a.count * size_t(nranks) : a.count;
    if (elems * esize < cfg.min_bytes) return false;
    if (!d) return false;
    // Not a.mem: a buffer's memory kind is the rank's own (MPI does not
    // require it to match), so it must not change a decision every rank
    // makes alike.  Instances run host code (runtime/comm_state.cc); a call
    // in device memory the engine takes is the wrappers' to refuse
    // (mpi-wrappers/dispatch.h).
    if (!(d->dtypes & TERSE_DTYPE_BIT(a.dtype)) || !(d->mem_kinds & TERSE_MEM_HOST)) return false;
    if (a.dtype <= 0 || a.dtype >= TERSE_DTYPE_MAX_ || !have_instance) return false;
    if (a.op != TERSE_OP_SUM && a.op != TERSE_OP_MAX && a.op != TERSE_OP_MIN) return false;
    const bool lossless = d->flags & TERSE_CODEC_FLAG_LOSSLESS;
    if (!lossless) {
        // Lossy codecs approximate sums of floating-point data, nothing else.
        if (!dtype_is_float(a.dtype)) return false;
        if (a.kind != CollKind::Allgather && a.op != TERSE_OP_SUM) return false;
    }
    return true;
}

const char *schedule_name(Schedule s) {
    switch (s) {
    case Schedule::Trivial: return "trivial";
    case Schedule::Ring: return "ring";
    case Schedule::RecursiveDoubling: return "recursive_doubling";
    case Schedule::Gather: return "gather";
    case Schedule::TwoLevel: return "two_level";
    }
    return "?";
}

// The constant model is the measured one with a plain link: no reduction,
// codec or agreement terms.
double cost_ring(size_t bytes, int n, double alpha, double beta) {
    CostInputs in;
    in.nranks = n;
    in.link = LinkCost{alpha, beta};
    return cost_ring(in, CodecCost{}, double(bytes));
}

double cost_recursive_doubling(size_t bytes, int n, double alpha, double beta) {
    CostInputs in;
    in.nranks = n;
    in.link = LinkCost{alpha, beta};
    return cost_recursive_doubling(in, CodecCost{}, double(bytes));
}

Plan plan_collective(const CommConfig &cfg, int nranks, const CollArgs &args,
                     const terse_codec_descriptor_t *desc, size_t codec_max_chunk) {
    Plan p;
    const size_t esize = dtype_size(args.dtype);
    p.depth = std::max(1, cfg.pipeline_depth);
    size_t base = std::max<size_t>(1, cfg.chunk_bytes / (esize ? esize : 1));
    if (codec_max_chunk) base = std::min(base, codec_max_chunk);

    if (args.count == 0 || nranks <= 1) {
        p.schedule = Schedule::Trivial;
        p.chunk_elems = base;
        return p;
    }

    if (args.kind != CollKind::Allreduce) {
        p.schedule = Schedule::Ring;
    } else if (cfg.algorithm == Algorithm::TwoLevel) {
        // Any codec: the schedule between nodes is planned per shard, with
        // the codec's own constraints, when the two-level operation runs it.
        p.schedule = Schedule::TwoLevel;
    } else if (desc && desc->mode == TERSE_REDUCE_GATHER) {
        p.schedule = Schedule::Gather;  // payloads that cannot be summed
    } else {
        switch (cfg.algorithm) {
        case Algorithm::Ring: p.schedule = Schedule::Ring; break;
        case Algorithm::RecursiveDoubling: p.schedule = Schedule::RecursiveDoubling; break;
        case Algorithm::Gather: p.schedule = Schedule::Gather; break;
        case Algorithm::TwoLevel: p.schedule = Schedule::TwoLevel; break;  // taken above
        case Algorithm::Auto: {
            size_t bytes = args.count * esize;
            bool rd = args.count < size_t(nranks) || cost_recursive_doubling(bytes, nranks, kAlpha, kBeta) <
                                                         cost_ring(bytes, nranks, kAlpha, kBeta);
            p.schedule = rd ? Schedule::RecursiveDoubling : Schedule::Ring;
            break;
        }
        }
    }

    // Chunks: the configured size, but small enough that a ring block is cut
    // into about `depth` pieces (so reducing one overlaps sending the next),
    // and never below kMinChunkBytes.  Rounded to a multiple of 1024
    // elements when large, which suits block-structured codecs.
    size_t per_block = args.count;
    if (p.schedule == Schedule::Ring && args.kind == CollKind::Allreduce)
        per_block = (args.count + size_t(nranks) - 1) / size_t(nranks);
    size_t want = (per_block + size_t(p.depth) - 1) / size_t(p.depth);
    size_t min_chunk = std::max<size_t>(1, kMinChunkBytes / (esize ? esize : 1));
    size_t chunk = std::min(base, std::max(want, min_chunk));
    if (chunk >= 4096) chunk &= ~size_t(1023);
    p.chunk_elems = std::max<size_t>(1, std::min(chunk, base));
    return p;
}

Plan plan_schedule(const CommConfig &cfg, const LinkCost &link, int nranks, const CollArgs &args,
                   size_t codec_max_chunk, Schedule schedule) {
    Plan p;
    const size_t esize = std::max<size_t>(1, dtype_size(args.dtype));
    size_t max_elems = std::max<size_t>(1, cfg.chunk_bytes / esize);
    if (codec_max_chunk) max_elems = std::min(max_elems, codec_max_chunk);
    if (args.count == 0 || nranks <= 1) {
        p.schedule = Schedule::Trivial;
        p.chunk_elems = max_elems;
        p.depth = std::max(1, cfg.pipeline_depth);
        return p;
    }
    p.schedule = schedule;
    size_t block = args.count;
    if (schedule == Schedule::Ring && args.kind == CollKind::Allreduce)
        block = (args.count + size_t(nranks) - 1) / size_t(nranks);
    const size_t min_bytes = std::min(kMinChunkBytes, max_elems * esize);
    PipelineShape shape = pipeline_shape(link, block * esize, min_bytes, max_elems * esize,
                                         std::max(1, cfg.pipeline_depth));
    size_t chunk = std::max<size_t>(1, shape.chunk_bytes / esize);
    if (chunk >= 4096) chunk &= ~size_t(1023);
    p.chunk_elems = std::max<size_t>(1, std::min(chunk, max_elems));
    p.depth = shape.depth;
    return p;
}

}  // namespace terse
