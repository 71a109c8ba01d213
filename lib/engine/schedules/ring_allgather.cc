// The allgather phase of the ring (see ring_op.h): frames are encoded once
// by the owner of a block and forwarded as bytes by everyone else.
#include "engine/schedules/ring_op.h"

#include <cstring>

namespace terse {

// Allgather alone, step 0: encode this rank's block and decode it into its
// own place in recvbuf, exactly as the other ranks will.
void RingOp::ag_primary(size_t k, OutFrame *out) {
    const size_t b = size_t(r_);
    const size_t n = plan_chunks_.chunk_len(b, k), g = plan_chunks_.global(b, k);
    uint8_t *buf = pool().get();
    if (!buf) return emergency_poison_out(n, out);
    uint8_t *dst = result(b, k);
    if (dev_) {
        // Encoded on the device ahead (ring_device.cc); this rank's copy
        // decoded there from the very bytes the others get.
        out->len = dev_take(b, k, buf);
        out->data = buf;
        out->owned = buf;
        FrameInfo fi = trusted_info(buf, out->len);
        if (!(fi.flags & FRAME_POISON)) dev_decode(fi, g, dst, n);
        return;
    }
    const uint8_t *src = own(b, k);
    size_t len = encode_frame(src, n, g, buf, 1);
    FrameInfo fi = trusted_info(buf, len);
    if (!(fi.flags & FRAME_POISON)) {
        if (feedback_on() && !(fi.flags & FRAME_RAW)) {
            uint8_t *tmp = scratch_b();
            if (decode_frame(fi, g, tmp, n, false)) {
                record_error(k * plan_chunks_.chunk, src, tmp, n);
                std::memcpy(dst, tmp, n * esize_);
            }
        } else {
            decode_frame(fi, g, dst, n, false);
        }
    }
    out->data = buf;
    out->len = len;
    out->owned = buf;
}

void RingOp::ag_received(const Msg &m, uint8_t *buf, size_t len, OutFrame *out) {
    const size_t n = plan_chunks_.chunk_len(m.block, m.chunk), g = plan_chunks_.global(m.block, m.chunk);
    if (identity_) {
        // Lossless: check and copy in one pass over the payload.
        if (!copy_raw_hop(buf, len, n, g, mod(r_ - 1), result(m.block, m.chunk))) return poison_out(buf, n, out);
    } else {
        FrameInfo fi;
        if (!open_frame(buf, len, n, mod(r_ - 1), &fi)) return poison_out(buf, n, out);
        const bool decoded = dev_ ? dev_decode(fi, g, result(m.block, m.chunk), n)
                                  : decode_frame(fi, g, result(m.block, m.chunk), n, false);
        if (!decoded) return poison_out(buf, n, out);
    }
    if (!out) {
        pool().put(buf);
        return;
    }
    // Forward the bytes as they came: no re-encoding on the way round.
    out->data = buf;
    out->len = len;
    out->owned = buf;
}

}  // namespace terse
