// The cost of the two-level schedule (schedules/two_level.cc) in the
// alpha-beta-gamma model, as a pure function of measured inputs, so that a
// planner can weigh it against the flat schedules (planner.h's cost_ring
// and cost_recursive_doubling, and whatever it measures).
//
// The schedule, per rank of a node of `ranks_per_node` ranks, on `nodes`
// nodes, for an allreduce of `bytes` bytes per rank:
//   1. reduce-scatter inside the node (the MPI library over shared memory)
//      into `shards` shards of bytes/shards each (the smallest node's rank
//      count: runtime/node_layout.h);
//   2. on each of the `shards` rails (one rank per node), a ring allreduce
//      of its shard between the nodes, compressed; the rails of a node run
//      at once, sharing its network link;
//   3. allgather inside the node.
// Each intra-node phase is costed as the ring the MPI library runs on
// shared memory: (L-1) steps of (L-1)/L of the data.  Between nodes a ring
// step of a rail sends its share of the encoded shard; the node's link
// carries the shares of all its rails at once, so the bandwidth term does
// not shrink with more rails, while the codec's work does (each rail's rank
// encodes and decodes its own shard, in parallel with the others).
#pragma once

#include <cstddef>

namespace terse {

struct TwoLevelCostInputs {
    size_t bytes = 0;  // per rank
    int nodes = 1;
    int ranks_per_node = 1;   // of the largest node (its intra-node phases take longest)
    int shards = 1;           // rails that carry data: the smallest node's rank count
    double alpha_intra = 0;   // s per message inside a node (the MPI library)
    double beta_intra = 0;    // s per byte inside a node
    double gamma_reduce = 0;  // s per byte of a local reduction (sum)
    double alpha_inter = 0;   // s per message between nodes
    double beta_inter = 0;    // s per byte of a node's network link
    double ratio = 1;         // encoded bytes / input bytes between nodes (1: uncompressed)
    double gamma_codec = 0;   // s per input byte to encode once and decode once
};

// Predicted seconds for one allreduce; 0 for a single rank.
double cost_two_level(const TwoLevelCostInputs &in);

// The flat pipelined ring over all nodes x ranks_per_node ranks, in the same
// terms (nodes placed in blocks, so nodes of the ring's steps cross a
// node's link): for comparing the two on one set of measurements.
double cost_flat_ring_hierarchical(const TwoLevelCostInputs &in);

}  // namespace terse
