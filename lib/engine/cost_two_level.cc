#include "engine/cost_two_level.h"

#include <algorithm>

namespace terse {

namespace {

// A ring allreduce of n ranks on D bytes encodes and decodes about
// 2(n-1)/n * D per rank (each reduce-scatter step one block in and out,
// each allgather step one block decoded, the own block encoded once).
double ring_codec(double bytes, int n, double gamma) { return n <= 1 ? 0 : 2.0 * (n - 1) / n * bytes * gamma; }

// An allreduce-ring phase (reduce-scatter or allgather) of n ranks on
// `bytes`: n-1 steps, each moving bytes/n.
double ring_phase(double bytes, int n, double alpha, double beta) {
    if (n <= 1) return 0;
    return (n - 1) * alpha + double(n - 1) / n * bytes * beta;
}

}  // namespace

double cost_two_level(const TwoLevelCostInputs &in) {
    const int L = std::max(1, in.ranks_per_node), N = std::max(1, in.nodes);
    const int S = std::clamp(in.shards, 1, L);
    if (L * N <= 1) return 0;
    const double B = double(in.bytes);
    // Inside the node: reduce-scatter (with its reductions) and allgather.
    double intra = 2 * ring_phase(B, L, in.alpha_intra, in.beta_intra) + double(L - 1) / L * B * in.gamma_reduce;
    if (N <= 1) return intra;
    // Between nodes, per rail: a ring allreduce of B/S bytes.  The link of a
    // node carries the S rails at once, S * (B/S) * ratio in all.
    const double shard = B / S;
    double wire = 2 * ((N - 1) * in.alpha_inter + double(N - 1) / N * B * in.ratio * in.beta_inter);
    double codec = ring_codec(shard, N, in.gamma_codec);
    double reduce = double(N - 1) / N * shard * in.gamma_reduce;
    return intra + wire + codec + reduce;
}

double cost_flat_ring_hierarchical(const TwoLevelCostInputs &in) {
    const int L = std::max(1, in.ranks_per_node), N = std::max(1, in.nodes);
    const int P = L * N;
    if (P <= 1) return 0;
    const double B = double(in.bytes);
    // 2(P-1) steps of B/P; each step waits for its slowest hop, which
    // crosses a node's link when there is more than one node.
    const double alpha = N > 1 ? in.alpha_inter : in.alpha_intra;
    const double beta = N > 1 ? in.beta_inter : in.beta_intra;
    const double ratio = N > 1 ? in.ratio : 1;
    double wire = 2 * ((P - 1) * alpha + double(P - 1) / P * B * ratio * beta);
    double codec = N > 1 ? ring_codec(B, P, in.gamma_codec) : 0;
    double reduce = double(P - 1) / P * B * in.gamma_reduce;
    return wire + codec + reduce;
}

}  // namespace terse
