#include "engine/cost_model.h"

#include "engine/cost_two_level.h"

#include <algorithm>
#include <cmath>

namespace terse {

namespace {

int floor_log2(int n) {
    int l = 0;
    while ((2 << l) <= n) ++l;
    return l;
}

}  // namespace

void PmpiCurve::add(double b, double s) {
    if (points == kMaxPoints || !(b > 0) || !(s > 0)) return;
    if (points > 0 && b <= bytes[points - 1]) return;
    bytes[points] = b;
    seconds[points] = s;
    ++points;
}

double PmpiCurve::at(double b) const {
    if (points == 0) return 0;
    if (b <= bytes[0] || points == 1) {
        if (points == 1 && b > bytes[0]) return seconds[0] * b / bytes[0];
        return seconds[0];
    }
    int i = 1;
    while (i < points - 1 && b > bytes[i]) ++i;
    const double b0 = bytes[i - 1], b1 = bytes[i], s0 = seconds[i - 1], s1 = seconds[i];
    if (b > b1) {
        // Above the largest point: the last segment's marginal bandwidth.
        const double per_byte = std::max(0.0, (s1 - s0) / (b1 - b0));
        return s1 + (b - b1) * per_byte;
    }
    const double t = (std::log(b) - std::log(b0)) / (std::log(b1) - std::log(b0));
    return std::exp(std::log(s0) + t * (std::log(s1) - std::log(s0)));
}

double cost_ring(const CostInputs &in, const CodecCost &c, double bytes) {
    const int n = in.nranks;
    if (n <= 1) return 0;
    const double steps = 2.0 * (n - 1), share = double(n - 1) / n;
    return in.fixed + steps * in.link.alpha + 2.0 * share * bytes * c.ratio * in.link.beta +
           share * bytes * in.gamma + c.seconds_per_byte * bytes;
}

double cost_recursive_doubling(const CostInputs &in, const CodecCost &c, double bytes) {
    const int n = in.nranks;
    if (n <= 1) return 0;
    const int pof2 = 1 << floor_log2(n);
    const double stages = floor_log2(n) + (pof2 != n ? 2 : 0);  // fold in and hand back extras
    return in.fixed + stages * (in.link.alpha + bytes * c.ratio * in.link.beta + bytes * in.gamma) +
           c.seconds_per_byte * bytes;
}

double cost_rabenseifner(const CostInputs &in, const CodecCost &c, double bytes) {
    const int n = in.nranks;
    if (n <= 1) return 0;
    const int l = floor_log2(n), pof2 = 1 << l;
    const double share = double(pof2 - 1) / pof2;
    double t = in.fixed + 2.0 * l * in.link.alpha + 2.0 * share * bytes * c.ratio * in.link.beta +
               share * bytes * in.gamma + c.seconds_per_byte * bytes;
    if (pof2 != n) t += 2.0 * (in.link.alpha + bytes * c.ratio * in.link.beta) + bytes * in.gamma;
    return t;
}

double cost_gather(const CostInputs &in, const CodecCost &c, double bytes) {
    const int n = in.nranks;
    if (n <= 1) return 0;
    return in.fixed + (n - 1) * (in.link.alpha + bytes * c.ratio * in.link.beta + bytes * in.gamma) +
           c.seconds_per_byte * bytes;
}

double cost_two_level_schedule(const CostInputs &in, const CodecCost &c, double bytes) {
    const HierarchyCost &h = in.hier;
    if (h.nodes <= 1) return INFINITY;  // no layout: not an option
    TwoLevelCostInputs t;
    t.bytes = size_t(bytes);
    t.nodes = h.nodes;
    t.ranks_per_node = h.ranks_per_node;
    t.shards = h.shards;
    t.alpha_intra = h.intra.alpha;
    t.beta_intra = h.intra.beta;
    t.gamma_reduce = in.gamma;
    t.alpha_inter = h.inter.alpha;
    t.beta_inter = h.inter.beta;
    t.ratio = c.ratio;
    // seconds_per_byte holds a whole flat ring's codec work per input byte,
    // about 2(n-1)/n encodes and decodes of it; cost_two_level wants one
    // encode and decode per byte.
    const int n = std::max(2, in.nranks);
    t.gamma_codec = c.seconds_per_byte / (2.0 * (n - 1) / n);
    // Its agreements: the node's MPI collectives are in the cost; the
    // closing agreement over the communicator is one small allreduce.
    return in.fixed + cost_two_level(t);
}

Observation median_observation(Observation *reps, int n) {
    std::sort(reps, reps + n, [](const Observation &p, const Observation &q) { return p.seconds < q.seconds; });
    Observation median = reps[n / 2];
    for (int i = 0; i < n; ++i) median.codec_seconds = std::min(median.codec_seconds, reps[i].codec_seconds);
    return median;
}

namespace {

// MPI_Allreduce of `bytes`: the set-up's curve, and above its largest size
// that size's time plus the larger of the two curves' growth.  Inside a
// shaper's burst the curve as the calls came grows at the burst's rate, not
// the link's: at 1 Gbit/s on 2 ranks the set-up stopped at 64 KiB, read 75
// us there as it came and 1048 drained, and the curve put 256 KiB at 180
// us (carried from the 64 KiB class's measured 1 ms, at 1.1 ms) where Open
// MPI takes 4.1 ms; the class started on it and ran 6 of its 22 calls
// there before its probes moved it.  A message larger than any the set-up
// sent outlasts a burst, so its growth is the drained one's.
double pmpi_allreduce(const CostInputs &in, double bytes) {
    const PmpiCurve &came = in.pmpi, &drained = in.pmpi_drained;
    if (came.empty()) return 0;
    const double top = came.bytes[came.points - 1];
    const double t = came.at(bytes);
    if (!(bytes > top) || !drained_matches(in)) return t;
    const double at_top = came.at(top);
    return at_top + std::max(t - at_top, drained.at(bytes) - drained.at(top));
}

// An allreduce curve applied to a kind.
template <class Allreduce>
double pmpi_of_kind(const CostInputs &in, CollKind kind, double bytes, Allreduce allreduce) {
    switch (kind) {
    case CollKind::Allreduce: return allreduce(bytes);
    case CollKind::ReduceScatterBlock:
    case CollKind::ReduceScatter: return 0.5 * allreduce(bytes);
    case CollKind::Allgather: return 0.5 * allreduce(bytes * in.nranks);
    case CollKind::Allgatherv: return 0.5 * allreduce(bytes);  // bytes: all blocks together
    }
    return allreduce(bytes);
}

}  // namespace

double cost_pmpi(const CostInputs &in, CollKind kind, double bytes) {
    return pmpi_of_kind(in, kind, bytes, [&](double b) { return pmpi_allreduce(in, b); });
}

bool drained_matches(const CostInputs &in) {
    const PmpiCurve &came = in.pmpi, &drained = in.pmpi_drained;
    if (came.empty() || drained.points != came.points) return false;
    for (int i = 0; i < came.points; ++i)
        if (drained.bytes[i] != came.bytes[i]) return false;
    return true;
}

double cost_pmpi_loop(const CostInputs &in, CollKind kind, double bytes) {
    if (!drained_matches(in)) return cost_pmpi(in, kind, bytes);
    return pmpi_of_kind(in, kind, bytes, [&](double b) { return in.pmpi_drained.at(b); });
}

double cost_ring_kind(const CostInputs &in, const CodecCost &c, CollKind kind, double bytes) {
    const int n = in.nranks;
    if (n <= 1) return 0;
    switch (kind) {
    case CollKind::Allreduce: return cost_ring(in, c, bytes);
    case CollKind::ReduceScatterBlock:
    case CollKind::ReduceScatter:
        return in.fixed + (n - 1) * in.link.alpha +
               double(n - 1) / n * bytes * (c.ratio * in.link.beta + in.gamma) + c.seconds_per_byte * bytes;
    case CollKind::Allgather:
        return in.fixed + (n - 1) * (in.link.alpha + bytes * c.ratio * in.link.beta) + c.seconds_per_byte * bytes;
    case CollKind::Allgatherv:  // bytes: all blocks together
        return in.fixed + (n - 1) * in.link.alpha + double(n - 1) / n * bytes * c.ratio * in.link.beta +
               c.seconds_per_byte * bytes / n;
    }
    return cost_ring(in, c, bytes);
}

PipelineShape pipeline_shape(const LinkCost &link, size_t block_bytes, size_t min_chunk, size_t max_chunk,
                             int max_depth) {
    PipelineShape p;
    max_chunk = std::max(max_chunk, min_chunk);
    double want = link.beta > 0 ? 10.0 * link.alpha / link.beta : double(min_chunk);
    size_t chunk = want >= double(max_chunk) ? max_chunk : std::max(min_chunk, size_t(want));
    chunk = std::max(chunk, std::min(max_chunk, block_bytes / size_t(std::max(1, max_depth))));
    // At least two chunks per block, so that the pipeline has something to overlap.
    if (block_bytes / 2 < chunk) chunk = std::max(min_chunk, block_bytes / 2);
    p.chunk_bytes = std::min(chunk, max_chunk);
    double fill = link.beta > 0 ? 2.0 * link.alpha / (link.beta * double(p.chunk_bytes)) : 0.0;
    int depth = 2 + int(std::ceil(std::min(fill, 64.0)));
    p.depth = std::clamp(depth, 1, std::max(1, max_depth));
    return p;
}

}  // namespace terse
