// The plain description of one collective call, as the wrappers map it from
// MPI and the engine and planner take it: no communicator, no MPI types.
#pragma once

#include <terse/codec.h>

#include <cstddef>

namespace terse {

enum class CollKind {
    Allreduce,           // recvbuf[count] = op over ranks of sendbuf[count]
    ReduceScatterBlock,  // sendbuf[count * size] -> recvbuf[count] (block `rank`)
    Allgather,           // sendbuf[count] -> recvbuf[count * size]
    ReduceScatter,       // sendbuf[count] -> recvbuf[counts[rank]] (block `rank`, blocks back to back)
    Allgatherv           // sendbuf[counts[rank]] -> recvbuf[displs[b] ..] for every rank b
};

// The kinds with a reduce-scatter phase and with an allgather phase (an
// allreduce has both).
constexpr bool coll_reduces(CollKind k) { return k != CollKind::Allgather && k != CollKind::Allgatherv; }
constexpr bool coll_gathers(CollKind k) {
    return k == CollKind::Allreduce || k == CollKind::Allgather || k == CollKind::Allgatherv;
}
// Blocks of their own size, one per rank (counts, and displs for Allgatherv).
constexpr bool coll_is_v(CollKind k) { return k == CollKind::ReduceScatter || k == CollKind::Allgatherv; }
// "allreduce", "reduce-scatter", "allgather", ..., for messages.
inline const char *coll_kind_name(CollKind k) {
    switch (k) {
    case CollKind::Allreduce: return "allreduce";
    case CollKind::ReduceScatterBlock: return "reduce-scatter";
    case CollKind::ReduceScatter: return "reduce-scatter-v";
    case CollKind::Allgather: return "allgather";
    case CollKind::Allgatherv: return "allgatherv";
    }
    return "collective";
}

enum class Priority { Low = 0, Normal = 1, High = 2 };

// In place: Allreduce sendbuf == recvbuf.  ReduceScatterBlock: sendbuf ==
// recvbuf holding count * size elements; the result goes to its first count
// elements.  Allgather: sendbuf == recvbuf + rank * count.  ReduceScatter:
// sendbuf == recvbuf holding count elements; the result goes to its first
// counts[rank] elements.  Allgatherv: sendbuf == recvbuf + displs[rank].
struct CollArgs {
    CollKind kind = CollKind::Allreduce;
    const void *sendbuf = nullptr;  // MPI_IN_PLACE already resolved: == recvbuf (or the rank's block)
    void *recvbuf = nullptr;
    size_t count = 0;  // elements, as MPI's count/recvcount; for the v kinds
                       // the sum of counts (a reduce-scatter's input, an
                       // allgather's output)
    // The v kinds: elements of every rank's block (size entries), and for
    // Allgatherv where each block goes in recvbuf (elements, >= 0).  Owned
    // by the caller and valid until the operation ends; counts must be the
    // same on every rank, displs are this rank's layout only.
    const size_t *counts = nullptr;
    const size_t *displs = nullptr;
    terse_dtype_t dtype = TERSE_DTYPE_FLOAT32;
    terse_op_t op = TERSE_OP_SUM;
    // Where the buffers live, as this rank detected it (device/mem_kind.h):
    // of the two, the kind the fewest can read.  A rank's own, not agreed:
    // no decision every rank makes alike may read it.
    terse_mem_kind_t mem = TERSE_MEM_HOST;
    bool in_place = false;
};

}  // namespace terse
