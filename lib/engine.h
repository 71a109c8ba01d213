// The engine: runs collective schedules over the transport, compressing
// chunks with the communicator's codec.  Algorithms live in their own files
// (ring_allreduce.cc, ring_reduce_scatter.cc, ring_allgather.cc, ...); this
// header is the only thing the wrappers and the API see.
//
// Every collective is an Operation: a state machine that progress() moves
// forward without blocking, so the same code serves blocking calls (start,
// then wait), non-blocking calls, and background progress.  Operations with
// a higher priority are progressed first by engine_progress_all().
#pragma once

#include "comm_state.h"
#include "status.h"

#include <terse/codec.h>

#include <cstddef>
#include <memory>

namespace terse {

enum class CollKind {
    Allreduce,          // recvbuf[count] = op over ranks of sendbuf[count]
    ReduceScatterBlock, // sendbuf[count * size] -> recvbuf[count] (block `rank`)
    Allgather           // sendbuf[count] -> recvbuf[count * size]
};

enum class Priority { Low = 0, Normal = 1, High = 2 };

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

class Operation {
public:
    virtual ~Operation() = default;
    // Advance without blocking.  Sets *done when finished (successfully or
    // not); the returned status is final once *done.
    virtual Status progress(bool *done) = 0;
    Priority priority = Priority::Normal;
};

size_t dtype_size(terse_dtype_t dt);

// Start a collective on st (which must be ready).
Status engine_start(CommState *st, const CollArgs &args, Priority prio,
                    std::unique_ptr<Operation> *op);
// Progress op (and the transport) until done.
Status engine_wait(Operation *op);
// Convenience: start + wait.
Status engine_run(CommState *st, const CollArgs &args);

// Whether the engine would run this call at all (vs PMPI), given the
// communicator's config and codec.  Depends only on arguments MPI requires
// to match across ranks and on agreed configuration.
bool engine_eligible(const CommState *st, const CollArgs &args);

}  // namespace terse
