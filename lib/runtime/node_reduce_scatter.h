// The two-level schedule's reduce-scatter inside a node (engine/schedules/
// two_level.cc, step 1), as a pairwise exchange over the MPI library's
// point-to-point messages: in step k (1..L-1) of a node of L ranks, rank l
// sends its contribution to the shard of rank l+k and receives rank l-k's
// contribution to its own, which it reduces into its shard at once.  Each
// rank moves (L-1)/L of its input and reduces its own shard, as the MPI
// library's ring does; the difference is what comes before.  Open MPI
// 4.1's MPI_Reduce_scatter (coll/tuned, ring) first copies the whole input
// into a temporary of its size: on 2 ranks over shared memory, 16 MiB of
// floats took 3.0-3.6 ms against 1.6-2.1 for this exchange (20 calls a
// round, 5 rounds each).
//
// Blocking, on the calling thread, like the node stages it serves
// (runtime/engine_ports.h, make_node_mpi_control).  Each shard is reduced
// by its owner alone, in a fixed order (its own contribution, then rank
// l-1's, l-2's, ...), so a given input gives the same bits on every run.
#pragma once

#include "util/status.h"

#include <terse/codec.h>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace terse {

class NodeReduceScatter {
public:
    // Messages go in pieces of this many bytes at most, received into one
    // buffer of that size, allocated here: a call allocates nothing, and
    // the piece being reduced is still in cache.
    static constexpr size_t kPieceBytes = size_t(1) << 20;

    NodeReduceScatter() : scratch_(new uint8_t[kPieceBytes]) {}

    // Reduce-scatter over comm (Control::ireduce_scatter's contract): op
    // over ranks of in (the sum of counts elements of dtype dt), of which
    // rank q gets its counts[q] elements at out.  in == out: in place, the
    // input read from out and this rank's part written at its start.
    // dt: float32, float64, int32 or int64.
    Status run(MPI_Comm comm, const void *in, void *out, const int *counts, terse_dtype_t dt, terse_op_t op);

private:
    std::unique_ptr<uint8_t[]> scratch_;  // a piece of one peer's contribution to this rank's shard
};

}  // namespace terse
