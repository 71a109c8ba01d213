// The ring steps that the set-up measurements time (runtime/cost_probe.h,
// runtime/engine_calibration.h): every rank sends to its right neighbour
// and receives from its left over terse's transport, outside any engine
// operation, and the drain that comes before a timed measurement.
//
// Why a drain: a shaped link lets a burst through faster than its rate.
// tc's tbf, which perf/ emulates slow networks with, passes its first
// 256 KiB at memory speed, and a cloud NIC's token bucket does the same on
// a larger scale.  A call of a loop (a benchmark's, a training step's
// gradient buckets) finds that bucket empty: the calls before it spent it.
// A measurement taken after an idle moment finds it full: on 2 ranks at
// 10 Gbit/s the MPI library's 64 KiB allreduce read 40-43 us where a
// loop's calls take 80-85, and a stream read the link at 701-890 MB/s per
// rank where the engine moves about 600.  Predicted from such figures,
// the engine's lossless ring looked faster than the MPI library where it
// is not, and size classes moved to it and back, paying its first calls
// (5-11 changes of choice in a run of 9 classes).  A drain sends more than
// such a bucket holds just before the timed operations, so they see the
// link as a loop's calls do.  Where the link has no burst it costs its
// time and changes nothing.
#pragma once

#include "engine/ports.h"
#include "util/status.h"

#include <cstddef>
#include <cstdint>

namespace terse {

// Messages one stream keeps in flight, and the bytes of each.
constexpr int kStreamMsgs = 4;
constexpr size_t kStreamMsgBytes = 128 * 1024;
// What a stream, and so a drain, sends per rank; the buffers given to a
// stream or a drain hold at least this much.
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
// the right neighbour, every rank streaming at once: the fastest of a few,
// after a drain; negative on an error.
double ring_stream(ProbeRing *ring, uint8_t *out, uint8_t *in);

// A stream not timed, to empty a shaper's bucket (above).  Collective over
// the ring's ranks.
Status drain_link(ProbeRing *ring, uint8_t *out, uint8_t *in);

}  // namespace terse
