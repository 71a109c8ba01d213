// What terse-eval measures: one rank's data through encode and decode, and
// an allreduce across several ranks' data emulated as the engine runs it.
#pragma once

#include "eval_codec.h"
#include "eval_input.h"
#include "eval_metrics.h"

#include <vector>

namespace terse::eval {

struct Measured {
    ErrorStats err;
    SizeStats size;
};

// Encode and decode ds chunk by chunk (chunk_bytes of input per chunk) with
// an instance set up for an nranks communicator; SUMMABLE codecs use their
// own statistics as the agreed ones.  Timings are the best of repeat runs.
Measured round_trip(Codec &codec, const Dataset &ds, int nranks, size_t chunk_bytes, int repeat);

// The reduced result of an allreduce whose rank r contributed ranks[r]
// (all of one datatype and count), computed the way the engine computes
// it for the codec's reduction mode, against the exact result (the sum in
// double precision, or the exact max / min).  size counts every payload
// the emulated ranks would send.
Measured emulate_allreduce(Codec &codec, const std::vector<const Dataset *> &ranks,
                           size_t chunk_bytes);

}  // namespace terse::eval
