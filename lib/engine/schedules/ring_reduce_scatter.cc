// The reduce-scatter phase of the ring (see ring_op.h).
#include "engine/schedules/ring_op.h"

#include "engine/reduce_kernels.h"

#include <cstring>

namespace terse {

// Step 0: this rank's own chunk of block r-1, encoded once.
void RingOp::rs_primary(size_t k, OutFrame *out) {
    const size_t b = size_t(mod(r_ - 1));
    const size_t n = plan_chunks_.chunk_len(b, k), g = plan_chunks_.global(b, k);
    uint8_t *buf = pool().get();
    if (!buf) return emergency_poison_out(n, out);
    if (dev_) {
        out->len = dev_take(b, k, buf);
        out->data = buf;
        out->owned = buf;
        return;
    }
    const uint8_t *src = own(b, k);
    size_t len = encode_frame(src, n, g, buf, 1);
    record_error_frame(plan_chunks_.chunk_off(b, k), src, buf, len, g, n);
    out->data = buf;
    out->len = len;
    out->owned = buf;
}

void RingOp::rs_received(const Msg &m, uint8_t *buf, size_t len, OutFrame *out) {
    const size_t n = plan_chunks_.chunk_len(m.block, m.chunk);
    if (identity_ && out) {
        // Lossless fast path: reduce straight out of the receive buffer into
        // the frame that goes on (the same buffer), checking the incoming
        // payload and sealing the outgoing one in the same pass.
        if (!reduce_raw_hop(buf, len, n, mod(r_ - 1), own(m.block, m.chunk))) return poison_out(buf, n, out);
        out->len = kFrameHeaderSize + n * esize_;
        out->data = buf;
        out->owned = buf;
        if (m.last) std::memcpy(result(m.block, m.chunk), buf + kFrameHeaderSize, n * esize_);
        return;
    }
    FrameInfo fi;
    if (!open_frame(buf, len, n, mod(r_ - 1), &fi)) return poison_out(buf, n, out);
    if (mode_ == TERSE_REDUCE_SUMMABLE && !identity_) rs_summable(m, fi, buf, out);
    else rs_recompress(m, fi, buf, out);
}

void RingOp::rs_deliver(size_t k, const uint8_t *frame, size_t len, const void *acc) {
    const size_t b = size_t(r_);
    const size_t n = plan_chunks_.chunk_len(b, k), g = plan_chunks_.global(b, k);
    uint8_t *dst = result(b, k);
    FrameInfo fi = trusted_info(frame, len);
    if (fi.flags & FRAME_POISON) return;
    if (dev_) {
        dev_decode(fi, g, dst, n);
        return;
    }
    decode_frame(fi, g, dst, n, false);
    if (acc) record_error(plan_chunks_.chunk_off(b, k), acc, dst, n);
}

void RingOp::rs_recompress(const Msg &m, const FrameInfo &fi, uint8_t *buf, OutFrame *out) {
    const size_t b = m.block, k = m.chunk;
    const size_t n = plan_chunks_.chunk_len(b, k), g = plan_chunks_.global(b, k);
    const size_t off = plan_chunks_.chunk_off(b, k);
    const uint8_t *mine = own(b, k);
    const uint32_t contributors = fi.contributors + 1;

    if (!out) {
        // Reduce-scatter alone, last hop: the result stays on this rank and
        // needs no encoding.
        uint8_t *dst = rs_dst_ + k * plan_chunks_.chunk * esize_;
        if (is_raw(fi)) {
            timed_reduce_out(dst, mine, fi.payload, n);
        } else {
            std::memmove(dst, mine, n * esize_);
            decode_frame(fi, g, dst, n, true);
        }
        pool().put(buf);
        return;
    }

    uint8_t *acc = scratch_a();
    std::memcpy(acc, mine, n * esize_);
    if (!decode_frame(fi, g, acc, n, true)) return poison_out(buf, n, out);
    // The incoming frame is consumed: its buffer carries the next one.
    size_t len = encode_frame(acc, n, g, buf, contributors);
    out->data = buf;
    out->len = len;
    out->owned = buf;
    if (m.last) rs_deliver(k, buf, len, acc);
    else record_error_frame(off, acc, buf, len, g, n);
}

void RingOp::rs_summable(const Msg &m, const FrameInfo &fi, uint8_t *buf, OutFrame *out) {
    const size_t b = m.block, k = m.chunk;
    const size_t n = plan_chunks_.chunk_len(b, k), g = plan_chunks_.global(b, k);
    const size_t off = plan_chunks_.chunk_off(b, k);
    const uint8_t *mine = own(b, k);
    const uint32_t contributors = fi.contributors + 1;

    // This rank's chunk, encoded once with the agreed statistics.
    uint8_t *of = scratch_frame();
    size_t olen = dev_ ? dev_take(b, k, of) : encode_frame(mine, n, g, of, 1);
    if (!dev_) record_error_frame(off, mine, of, olen, g, n);
    if (poisoned()) return poison_out(buf, n, out);
    FrameInfo ofi = trusted_info(of, olen);

    uint8_t *nb = pool().get();
    if (!nb) {
        fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory for a frame buffer");
        return poison_out(buf, n, out);
    }
    size_t len = 0;
    bool combined = false;
    if (!is_raw(fi) && !is_raw(ofi)) {
        bool failed = false;
        combined = combine_frames(fi, ofi, g, n, nb, &len, &failed);
        if (failed) {
            pool().put(nb);
            return poison_out(buf, n, out);
        }
    }
    if (!combined) {
        // A raw side (incompressible or non-finite chunk): the sum is
        // computed on elements and stays raw from here on.
        uint8_t *acc = scratch_a();
        if (!decode_frame(fi, g, acc, n, false) || !decode_frame(ofi, g, nb + kFrameHeaderSize, n, false)) {
            pool().put(nb);
            return poison_out(buf, n, out);
        }
        timed_reduce_out(nb + kFrameHeaderSize, acc, nb + kFrameHeaderSize, n);
        len = frame_seal(nb, args_.dtype, FRAME_RAW, 0, contributors, n, n * esize_);
    }
    pool().put(buf);
    if (!out) {
        FrameInfo rfi = trusted_info(nb, len);
        uint8_t *dst = rs_dst_ + k * plan_chunks_.chunk * esize_;
        if (dev_) dev_decode(rfi, g, dst, n);
        else decode_frame(rfi, g, dst, n, false);
        pool().put(nb);
        return;
    }
    out->data = nb;
    out->len = len;
    out->owned = nb;
    if (m.last) rs_deliver(k, nb, len, nullptr);
}

}  // namespace terse
