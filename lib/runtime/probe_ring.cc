#include "runtime/probe_ring.h"

#include "engine/message_tag.h"
#include "engine/stats.h"

#include <sched.h>

#include <algorithm>
#include <limits>

namespace terse {

namespace {

// The communicator's first operation runs after the set-up probe, its
// sequence starting at 0, and the engine calibration's few operations stay
// far below this one.
constexpr uint32_t kProbeSeq = 0xFF;

}  // namespace

double ring_step(ProbeRing *ring, uint8_t *out, uint8_t *in, size_t bytes, int msgs) {
    Link *link = ring->link;
    const int right = (ring->rank + 1) % ring->size, left = (ring->rank + ring->size - 1) % ring->size;
    msgs = std::clamp(msgs, 1, kStreamMsgs);
    LinkRequest rr[kStreamMsgs], sr[kStreamMsgs];
    bool rdone[kStreamMsgs] = {}, sdone[kStreamMsgs] = {};
    const double t0 = now_seconds();
    for (int k = 0; k < msgs; ++k, ++ring->slot) {
        const uint32_t slot = uint32_t(ring->slot);
        Status s = link->irecv(left, make_tag(ring->ctx_id, uint32_t(left), kProbeSeq, slot),
                               in + size_t(k) * bytes, bytes, &rr[k]);
        if (s == TERSE_OK)
            s = link->isend(right, make_tag(ring->ctx_id, uint32_t(ring->rank), kProbeSeq, slot), out, bytes,
                            &sr[k]);
        if (s != TERSE_OK) return -1;
    }
    for (int left_to_do = 2 * msgs; left_to_do > 0;) {
        // Nothing moved: let a peer that shares this core run (a step needs
        // both ends to progress; a spinning waiter would hold the core for
        // a time slice and the step would measure the scheduler).
        if (link->progress() == 0) sched_yield();
        for (int k = 0; k < msgs; ++k) {
            Status rs = TERSE_OK;
            if (!rdone[k] && link->test(&rr[k], &rs, nullptr)) {
                rdone[k] = true;
                --left_to_do;
                if (rs != TERSE_OK) return -1;
            }
            if (!sdone[k] && link->test(&sr[k], &rs, nullptr)) {
                sdone[k] = true;
                --left_to_do;
                if (rs != TERSE_OK) return -1;
            }
        }
    }
    return now_seconds() - t0;
}

double fastest_ring_step(ProbeRing *ring, uint8_t *out, uint8_t *in, size_t bytes, int reps) {
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < reps; ++i) {
        const double t = ring_step(ring, out, in, bytes);
        if (t < 0) return -1;
        best = std::min(best, t);
    }
    return best;
}

// The link's bandwidth is read from a stream, not from the fastest single
// step: a send completes once the transport holds its bytes (a TCP socket
// buffer) and a receive at once when the left neighbour sent early, so on
// 4 ranks at 10 Gbit/s the fastest of three 128 KiB steps read the link at
// 217-3327 MB/s from run to run, where it carries about 315 per rank.  A
// train of steps one after the other, each waiting on the last one's bytes,
// read it at 83-178: the scheduler of ranks sharing cores adds to every
// step, which the engine's pipeline hides.
//
// The fastest of three streams counts: where ranks share cores, a stream
// takes as long as the scheduler lets every rank progress, and on 4 ranks
// sharing 2 cores at 10 Gbit/s one stream read 68-337 MB/s per rank from
// run to run, where the link carries about 310.  The model's growth with
// the size comes from this figure, so a low one predicted the codec's
// ring at 2.3 times its time above the sizes the engine calibration
// measures, and no class ran the codec, twice as fast as the MPI library
// there.  After the drain the bucket stays empty from one stream to the
// next, so the fastest is not a burst's; it can still read high (up to
// 1278 MB/s there: a rank that times a stream its left neighbour had
// already sent), which predicts the engine fast where a class then
// measures its way out, while a prediction too slow is never corrected
// (nothing runs the option).
constexpr int kStreamReps = 3;
double ring_stream(ProbeRing *ring, uint8_t *out, uint8_t *in) {
    if (drain_link(ring, out, in) != TERSE_OK) return -1;
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < kStreamReps; ++i) {
        const double t = ring_step(ring, out, in, kStreamMsgBytes, kStreamMsgs);
        if (t < 0) return -1;
        best = std::min(best, t);
    }
    return best;
}

// A whole stream: one 128 KiB step, which the cost probe drained with
// before, left the stream after it reading 2 ranks' share of a 10 Gbit/s
// loopback at 707-828 MB/s where it carries 625.  Sent at memory speed, a
// step's bytes pass while the bucket refills, and less than its size is
// taken from it.
Status drain_link(ProbeRing *ring, uint8_t *out, uint8_t *in) {
    if (ring->size < 2) return TERSE_OK;
    if (ring_step(ring, out, in, kStreamMsgBytes, kStreamMsgs) < 0)
        return set_error(TERSE_ERR_TRANSPORT, "%s", last_error());
    return TERSE_OK;
}

}  // namespace terse
