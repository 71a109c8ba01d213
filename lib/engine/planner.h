// The planner: whether the engine runs a collective at all, which algorithm
// runs it and how its data is cut.  Pure functions of the call's arguments
// (which MPI requires to match on every rank), the communicator's agreed
// configuration and the codec, so every rank decides the same without
// talking.
#pragma once

#include "config/config.h"
#include "engine/coll_args.h"

#include <terse/codec.h>

#include <cstddef>

namespace terse {

enum class Schedule {
    Trivial,            // nothing to exchange: count 0 or a single rank
    Ring,               // pipelined ring reduce-scatter and/or allgather
    RecursiveDoubling,  // log2(n) full exchanges; short messages
    Gather,             // allgather of every rank's encoded input, local sum in rank order
    TwoLevel            // the MPI library inside each node, a flat schedule between nodes
                        // (schedules/two_level.cc; its cost: cost_two_level.h)
};
const char *schedule_name(Schedule s);

struct Plan {
    Schedule schedule = Schedule::Trivial;
    size_t chunk_elems = 1;  // elements per chunk (never above the codec's max_chunk_count)
    int depth = 1;           // messages in flight per direction
};

// The one decision "engine or PMPI": whether the engine runs this call on
// a communicator of nranks ranks with configuration cfg and codec desc
// (nullptr when the communicator has none), have_instance telling whether
// the codec has an instance for args.dtype.  Depends only on arguments MPI
// requires to match across ranks and on agreed configuration.
bool engine_eligible(const CommConfig &cfg, int nranks, const terse_codec_descriptor_t *desc, bool have_instance,
                     const CollArgs &args);

// codec_max_chunk: the instance's setup().max_chunk_count (0 = unbounded).
Plan plan_collective(const CommConfig &cfg, int nranks, const CollArgs &args,
                     const terse_codec_descriptor_t *desc, size_t codec_max_chunk);

// The plan for a schedule the model planner chose (selection.h): chunk and
// depth from the measured link (pipeline_shape, cost_model.h), within the
// configured chunk_bytes and pipeline_depth as upper bounds and the
// codec's max_chunk_count.
struct LinkCost;
Plan plan_schedule(const CommConfig &cfg, const LinkCost &link, int nranks, const CollArgs &args,
                   size_t codec_max_chunk, Schedule schedule);

// The cost model behind Algorithm::Auto, exposed for tests and tools:
// predicted seconds for an allreduce of `bytes` bytes per rank on n ranks,
// with per-message latency alpha (s) and inverse bandwidth beta (s/byte).
double cost_ring(size_t bytes, int n, double alpha, double beta);
double cost_recursive_doubling(size_t bytes, int n, double alpha, double beta);

}  // namespace terse
