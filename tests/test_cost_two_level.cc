// The two-level schedule's cost (engine/cost_two_level.h): its terms behave
// as the schedule does, and against the flat ring on the same measurements
// it wins where the network is the bottleneck and loses where it is not.
#include "engine/cost_two_level.h"
#include "engine/planner.h"

#include <gtest/gtest.h>

using namespace terse;

namespace {

// Shared memory at 20 GB/s, a 10 Gbit/s network, 8-bit quantization.
TwoLevelCostInputs cluster(int nodes, int ppn, size_t bytes) {
    TwoLevelCostInputs in;
    in.bytes = bytes;
    in.nodes = nodes;
    in.ranks_per_node = ppn;
    in.shards = ppn;
    in.alpha_intra = 1e-6;
    in.beta_intra = 1 / 20e9;
    in.gamma_reduce = 1 / 10e9;
    in.alpha_inter = 20e-6;
    in.beta_inter = 1 / 1.25e9;
    in.ratio = 0.27;
    in.gamma_codec = 1 / 2e9;
    return in;
}

}  // namespace

TEST(CostTwoLevel, NothingToDoForOneRank) {
    EXPECT_EQ(cost_two_level(cluster(1, 1, 1 << 24)), 0.0);
    EXPECT_EQ(cost_flat_ring_hierarchical(cluster(1, 1, 1 << 24)), 0.0);
}

TEST(CostTwoLevel, OneNodeIsTheMpiLibraryAlone) {
    TwoLevelCostInputs in = cluster(1, 4, 1 << 24);
    const double intra = cost_two_level(in);
    in.beta_inter = 1;  // the network does not matter
    in.gamma_codec = 1;
    EXPECT_DOUBLE_EQ(cost_two_level(in), intra);
    const double B = double(1 << 24);
    EXPECT_NEAR(intra, 2 * (3 * 1e-6 + 0.75 * B / 20e9) + 0.75 * B / 10e9, 1e-12);
}

TEST(CostTwoLevel, BandwidthTermIsTheNodesLink) {
    // One rank per node: the rail is the flat ring, no intra-node phase.
    TwoLevelCostInputs in = cluster(4, 1, 1 << 24);
    in.gamma_codec = in.gamma_reduce = 0;
    in.alpha_inter = 0;
    EXPECT_NEAR(cost_two_level(in), cost_ring(size_t(double(1 << 24) * in.ratio), 4, 0, in.beta_inter), 1e-9);
    // More rails share the link: the wire time stays, the codec work splits.
    TwoLevelCostInputs a = cluster(2, 1, 1 << 24), b = cluster(2, 4, 1 << 24);
    a.beta_intra = b.beta_intra = a.gamma_reduce = b.gamma_reduce = a.alpha_intra = b.alpha_intra = 0;
    a.beta_inter = b.beta_inter = a.alpha_inter = b.alpha_inter = 0;
    EXPECT_NEAR(cost_two_level(b), cost_two_level(a) / 4, 1e-12);
}

TEST(CostTwoLevel, UnevenNodesUseTheSmallestNodesShards) {
    TwoLevelCostInputs even = cluster(2, 3, 1 << 24), uneven = even;
    uneven.shards = 2;  // nodes of 3 and 2 ranks
    EXPECT_GT(cost_two_level(uneven), cost_two_level(even));
    uneven.shards = 7;  // clamped to the ranks of a node
    EXPECT_DOUBLE_EQ(cost_two_level(uneven), cost_two_level(even));
}

TEST(CostTwoLevel, WinsOnTheNetworkLosesOnLatency) {
    // 2 nodes x 2 ranks, 16 MiB: fewer bytes cross each node's link
    // (2(N-1)/N instead of 2(P-1)/P of the data) and the codec works on shards.
    const TwoLevelCostInputs big = cluster(2, 2, size_t(16) << 20);
    EXPECT_LT(cost_two_level(big), cost_flat_ring_hierarchical(big));
    // A few bytes on a node with expensive shared-memory messages: the two
    // intra-node phases cost more than they save.
    TwoLevelCostInputs small = cluster(2, 2, 64);
    small.alpha_intra = 50e-6;
    EXPECT_GT(cost_two_level(small), cost_flat_ring_hierarchical(small));
}

TEST(CostTwoLevel, GrowsWithSizeAndNodes) {
    double last = 0;
    for (size_t bytes = 1024; bytes <= (size_t(64) << 20); bytes *= 4) {
        const double c = cost_two_level(cluster(3, 2, bytes));
        EXPECT_GT(c, last);
        last = c;
    }
    EXPECT_LT(cost_two_level(cluster(2, 2, 1 << 24)), cost_two_level(cluster(8, 2, 1 << 24)));
}
