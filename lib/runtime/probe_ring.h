// The ring steps that the set-up measurements time (runtime/cost_probe.h,
// runtime/engine_calibration.h): every rank sends to its right neighbour
// and receives from its left over terse's transport, outside any engine
// operation.
#pragma once

#include "engine/ports.h"
#include "util/status.h"

#include <cstddef>
#include <cstdint>

namespace terse {

// Messages one stream keeps in flight, and the bytes of each.
constexpr int kStreamMsgs = 4;
constexpr size_t kStreamMsgBytes = 128 * 1024;
// What a stream sends per rank; the buffers given to a stream hold at
// least this much.
constexpr size_t kStreamBytes = kStreamMsgs * kStreamMsgBytes;

// A ring of probe messages: a link whose peers are ranks 0..size-1, this
// rank's place in it, the context id its tags carry, and the next message
// slot (every rank steps the same ring in the same order, so the slots
// agree).  The messages take the last op sequence number, which the
// communicator's own operations do not reach while a probe runs.
struct ProbeRing {
    Link *link;
    uint32_t ctx_id;
    int rank, size;
    int slot;
};

// One ring step: `msgs` (1..kStreamMsgs) messages of `bytes` each received
// from the left (into consecutive places of `in`) and sent to the right
// (all from `out`), all in flight at once, until every one is done.
// Returns its time, or a negative value on a transport error (its message
// in last_error()).
double ring_step(ProbeRing *ring, uint8_t *out, uint8_t *in, size_t bytes, int msgs = 1);

// The fastest of `reps` single-message steps; negative on an error.
double fastest_ring_step(ProbeRing *ring, uint8_t *out, uint8_t *in, size_t bytes, int reps);

// The seconds a stream of kStreamMsgs messages of kStreamMsgBytes takes to
// the right neighbour, every rank streaming at once, after a step that is
// not timed; negative on an error.
double ring_stream(ProbeRing *ring, uint8_t *out, uint8_t *in);

}  // namespace terse
