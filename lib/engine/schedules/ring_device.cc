// The ring's own frames on device buffers (see ring_op.h and
// engine/device_port.h).  Own chunks are encoded on the device in the
// order the ring sends them, up to the port's slots ahead, so that
// encoding chunk j+1, the copy of chunk j to the host and the send of
// chunk j-1 overlap; a frame asked for before its copy landed holds only
// its own send or hop back.
#include "engine/schedules/ring_op.h"

#include "codec/codec_seed.h"

#include <cstring>
#include <new>

namespace terse {

namespace {
// Slots kept free for the frames the stream asks for now (its next
// primary and its next hop), so that encodes started ahead can never take
// every slot while the frame the ring waits for has none.
constexpr size_t kDevReserved = 2;
}  // namespace

Status RingOp::dev_begin() {
    if (mode_ != TERSE_REDUCE_SUMMABLE || identity_)
        return set_error(TERSE_ERR_INVALID, "terse: the ring runs device buffers only with a summable codec");
    const size_t slots = dev_->slots();
    if (slots <= kDevReserved)
        return set_error(TERSE_ERR_INVALID, "terse: a device lane of %zu slots cannot run the ring", slots);
    try {
        dev_chunks_.assign(plan_chunks_.total_chunks, DevChunk{});
        dev_slot_used_.assign(slots, 0);
        // With a reduce-scatter phase block r-1 goes out first (the
        // primaries), then each hop t needs this rank's chunk of block
        // r-t-1 (ring_op.h); an allgather alone encodes only block r.
        for (int t = 1; t <= (has_rs_ ? n_ : 1); ++t) {
            const uint32_t b = uint32_t(has_rs_ ? mod(r_ - t) : r_);
            for (size_t k = 0; k < plan_chunks_.blocks[b].nchunks; ++k) dev_order_.push_back({b, k});
        }
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory planning a device ring");
    }
    dev_free_ = slots;
    return TERSE_OK;
}

bool RingOp::dev_launch(size_t b, size_t k) {
    if (dev_free_ == 0) return false;
    size_t slot = 0;
    while (dev_slot_used_[slot]) ++slot;
    const size_t g = plan_chunks_.global(b, k), n = plan_chunks_.chunk_len(b, k);
    DevChunk &c = dev_chunks_[g];
    terse_codec_call_t call = call_for(g);
    double t0 = now_seconds();
    Status s = dev_->encode(slot, own(b, k), n, agreed_at(g), call.seed, frame_cap_ - kFrameHeaderSize, &c.len,
                            &c.raw);
    t_encode_ += now_seconds() - t0;
    if (s != TERSE_OK) {
        fail_local(s, last_error());
        c.state = kDevTaken;  // nothing in a slot: the taker sends poison
        return true;
    }
    dev_slot_used_[slot] = 1;
    --dev_free_;
    c.slot = uint32_t(slot);
    c.state = kDevCopying;
    return true;
}

void RingOp::dev_pump() {
    while (!poisoned() && dev_next_ < dev_order_.size() && dev_free_ > kDevReserved) {
        const BlockChunk &bc = dev_order_[dev_next_];
        DevChunk &c = dev_chunks_[plan_chunks_.global(bc.block, bc.chunk)];
        if (c.state == kDevIdle && !dev_launch(bc.block, bc.chunk)) break;
        ++dev_next_;
    }
}

bool RingOp::dev_poll(size_t b, size_t k) {
    if (poisoned()) return true;
    DevChunk &c = dev_chunks_[plan_chunks_.global(b, k)];
    if (c.state == kDevIdle && !dev_launch(b, k)) {
        device_wait_ = true;
        return false;
    }
    if (c.state == kDevCopying) {
        const int r = dev_->ready(c.slot);
        if (r < 0) {
            fail_local(TERSE_ERR_UNSUPPORTED, last_error());
            return true;
        }
        if (r == 0) {
            device_wait_ = true;
            return false;
        }
        c.state = kDevReady;
    }
    return true;
}

size_t RingOp::dev_take(size_t b, size_t k, uint8_t *frame) {
    const size_t g = plan_chunks_.global(b, k), n = plan_chunks_.chunk_len(b, k);
    DevChunk &c = dev_chunks_[g];
    const bool held = c.state == kDevCopying || c.state == kDevReady;
    size_t len = 0;
    if (poisoned() || c.state != kDevReady) {
        // A frame asked for without being ready only on a poisoned
        // operation (dev_poll): its slot is left to the lane, which
        // drains before the next operation uses it.
        if (!poisoned()) fail_local(TERSE_ERR_INVALID, "terse: a device frame was taken before it was ready");
        len = seal_poison(frame, n);
    } else {
        std::memcpy(frame + kFrameHeaderSize, dev_->slot_data(c.slot), c.len);
        len = c.raw ? frame_seal(frame, args_.dtype, FRAME_RAW, 0, 1, n, c.len)
                    : frame_seal(frame, args_.dtype, 0, codec_id_, 1, n, c.len);
    }
    if (held) {
        dev_slot_used_[c.slot] = 0;
        ++dev_free_;
    }
    c.state = kDevTaken;
    return len;
}

bool RingOp::dev_decode(const FrameInfo &fi, size_t g, void *dst, size_t n) {
    if (poisoned()) return false;
    terse_codec_call_t call = call_for(g);
    double t0 = now_seconds();
    Status s = dev_->decode(fi.payload, fi.payload_len, is_raw(fi), dst, n, agreed_at(g), call.seed);
    t_decode_ += now_seconds() - t0;
    if (s != TERSE_OK) {
        fail_local(s, last_error());
        return false;
    }
    return true;
}

}  // namespace terse
