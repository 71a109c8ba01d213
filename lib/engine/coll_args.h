// The plain description of one collective call, as the wrappers map it from
// MPI and the engine and planner take it: no communicator, no MPI types.
#pragma once

#include <terse/codec.h>

#include <cstddef>

namespace terse {

enum class CollKind {
    Allreduce,          // recvbuf[count] = op over ranks of sendbuf[count]
    ReduceScatterBlock, // sendbuf[count * size] -> recvbuf[count] (block `rank`)
    Allgather           // sendbuf[count] -> recvbuf[count * size]
};

// "allreduce", "reduce-scatter", "allgather", for messages.
inline const char *coll_kind_name(CollKind k) {
    switch (k) {
    case CollKind::Allreduce: return "allreduce";
    case CollKind::ReduceScatterBlock: return "reduce-scatter";
    case CollKind::Allgather: return "allgather";
    }
    return "collective";
}

enum class Priority { Low = 0, Normal = 1, High = 2 };

// In place: Allreduce sendbuf == recvbuf.  ReduceScatterBlock: sendbuf ==
// recvbuf holding count * size elements; the result goes to its first count
// elements.  Allgather: sendbuf == recvbuf + rank * count.
struct CollArgs {
    CollKind kind = CollKind::Allreduce;
    const void *sendbuf = nullptr;    // MPI_IN_PLACE already resolved: == recvbuf (or the rank's block)
    void *recvbuf = nullptr;
    size_t count = 0;                 // elements, as MPI's count/recvcount
    terse_dtype_t dtype = TERSE_DTYPE_FLOAT32;
    terse_op_t op = TERSE_OP_SUM;
    terse_mem_kind_t mem = TERSE_MEM_HOST;
    bool in_place = false;
};

}  // namespace terse
