// What terse-eval measures: one rank's data through encode and decode, and
// an allreduce across several ranks' data emulated as the engine runs it:
// the same planner (schedule and chunk size), the same order of reductions
// for each schedule (ring, recursive doubling, gather), the same codec
// seeds and agreed statistics, and raw chunks where the codec sends them.
#pragma once

#include "config/config.h"
#include "eval_codec.h"
#include "eval_input.h"
#include "eval_metrics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace terse::eval {

struct Measured {
    ErrorStats err;
    SizeStats size;
};

// What the engine derives a call's schedule and codec seeds from.
struct CallSetup {
    CommConfig cfg;       // the communicator's configuration (chunking, algorithm)
    uint32_t ctx_id = 0;  // the communicator's agreed context id
    uint32_t seq = 0;     // the operation's sequence number
};

// Encode and decode ds chunk by chunk as rank ds.rank (or 0) of an nranks
// communicator with setup; SUMMABLE codecs use their own statistics as the
// agreed ones.  Timings are the best of repeat runs.
Measured round_trip(Codec &codec, const Dataset &ds, int nranks, const CallSetup &setup, int repeat);

// The reduced result of an allreduce whose rank r contributed ranks[r]
// (all of one datatype, count and op), computed the way the engine computes
// it, against the exact result (the sum in double precision, or the exact
// max / min).  size counts every frame the ranks would send.  *schedule
// receives the schedule's name.
Measured emulate_allreduce(Codec &codec, const std::vector<const Dataset *> &ranks, const CallSetup &setup,
                           std::string *schedule = nullptr);

}  // namespace terse::eval
