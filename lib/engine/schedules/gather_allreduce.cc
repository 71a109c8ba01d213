// Gather-then-sum allreduce, for codecs whose payloads cannot be summed
// (sparse top-k: the reduction mode "gather") and whenever
// algorithm=gather is forced.
//
// Every rank encodes its whole input once, chunk by chunk; the frames go
// round the ring (an allgather of variable-size frames, forwarded as bytes);
// then every rank decodes-and-sums the n contributions of each chunk in
// rank order 0..n-1, so every rank computes the same bits.  A chunk is
// summed as soon as its last contribution arrives, overlapping the tail of
// the exchange.  Frames are kept compactly (received into fixed-size pool
// buffers, then copied to an arena at their real length).
#include "engine/op_base.h"
#include "engine/schedules/message_stream.h"

#include <cstring>
#include <new>
#include <vector>

namespace terse {

namespace {

class GatherOp final : public OpBase, public StreamHandler {
public:
    GatherOp(const EngineEnv &env, const CollArgs &args, const Plan &plan, std::pmr::memory_resource *mem)
        : OpBase(env, args, plan, mem), plan_chunks_(mem), frames_(mem), lens_(mem), arena_(size_t(4) << 20, mem),
          stream_(mem) {
        plan_chunks_.build_fixed(args.count, 1, plan.chunk_elems);
        c_ = plan_chunks_.total_chunks;
    }

protected:
    void stat_chunks(OpVector<ChunkRef> *chunks, size_t *total) const override {
        *total = c_;
        for (size_t k = 0; k < c_; ++k)
            chunks->push_back({k, plan_chunks_.chunk_off(0, k), plan_chunks_.chunk_len(0, k), true});
    }

    Status begin() override {
        try {
            frames_.assign(size_t(n_) * c_, nullptr);
            lens_.assign(size_t(n_) * c_, 0);
        } catch (const std::bad_alloc &) {
            return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory for gather bookkeeping");
        }
        MessageStream::Params p;
        p.left = mod(r_ - 1);
        p.right = mod(r_ + 1);
        p.depth = plan_.depth;
        p.primaries = c_;
        p.nsend = size_t(n_ - 1) * c_;
        p.nrecv = size_t(n_ - 1) * c_;
        return stream_.init(this, this, p);
    }

    Status body(bool *done) override { return stream_.progress(done); }

    void stream_primary(size_t k, OutFrame *out) override {
        ensure_own(k);
        size_t idx = size_t(r_) * c_ + k;
        out->data = frames_[idx];
        out->len = lens_[idx];
        out->owned = nullptr;
    }

    void stream_received(size_t i, uint8_t *buf, size_t len, OutFrame *out) override {
        const size_t s = i / c_, k = i % c_;
        const int q = mod(r_ - 1 - int(s));
        const size_t n = plan_chunks_.chunk_len(0, k);
        if (injected_hop(true, s, size_t(n_ - 1), s, size_t(n_ - 1))) frame_spoil_check(buf);
        FrameInfo fi;
        if (!open_frame(buf, len, n, mod(r_ - 1), &fi)) {
            poison_out(buf, n, out);
        } else {
            uint8_t *copy = store(buf, len);
            pool().put(buf);
            size_t idx = size_t(q) * c_ + k;
            if (!copy) {
                fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory storing gathered frames");
                poison_out(nullptr, n, out);
            } else {
                frames_[idx] = copy;
                lens_[idx] = len;
                if (out) {
                    out->data = copy;
                    out->len = len;
                    out->owned = nullptr;
                }
            }
        }
        if (s == size_t(n_ - 2)) {
            // Last contribution of chunk k: sum all n in rank order.
            ensure_own(k);
            if (!poisoned()) sum_chunk(k);
        }
    }

private:
    uint8_t *store(const uint8_t *frame, size_t len) {
        uint8_t *p = arena_.alloc(len);
        if (p) std::memcpy(p, frame, len);
        return p;
    }

    void ensure_own(size_t k) {
        size_t idx = size_t(r_) * c_ + k;
        if (frames_[idx]) return;
        const size_t n = plan_chunks_.chunk_len(0, k), off = plan_chunks_.chunk_off(0, k);
        if (poisoned()) {
            // A header needs no scratch (which may be what failed).
            static thread_local uint8_t poison[kFrameHeaderSize];
            lens_[idx] = seal_poison(poison, n);
            frames_[idx] = poison;
            return;
        }
        uint8_t *tmp = scratch_frame();
        const uint8_t *src = elem(input_, off);
        size_t len = encode_frame(src, n, k, tmp, 1);
        record_error_frame(off, src, tmp, len, k, n);
        uint8_t *copy = store(tmp, len);
        if (!copy) {
            fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory storing encoded chunks");
            lens_[idx] = seal_poison(emergency_header(), n);
            frames_[idx] = emergency_header();
            return;
        }
        frames_[idx] = copy;
        lens_[idx] = len;
    }

    void sum_chunk(size_t k) {
        const size_t n = plan_chunks_.chunk_len(0, k);
        uint8_t *dst = elem(args_.recvbuf, plan_chunks_.chunk_off(0, k));
        for (int q = 0; q < n_; ++q) {
            size_t idx = size_t(q) * c_ + k;
            FrameInfo fi = trusted_info(frames_[idx], lens_[idx]);
            if (!decode_frame(fi, k, dst, n, q > 0)) return;
        }
    }

    void poison_out(uint8_t *buf, size_t n, OutFrame *out) {
        if (!out) {
            pool().put(buf);
            return;
        }
        if (!buf) buf = pool().get();
        if (!buf) return emergency_poison_out(n, out);
        out->len = seal_poison(buf, n);
        out->data = buf;
        out->owned = buf;
    }

    ChunkPlan plan_chunks_;
    size_t c_ = 0;
    OpVector<const uint8_t *> frames_;  // [rank * c + chunk]
    OpVector<size_t> lens_;
    Arena arena_;
    MessageStream stream_;
};

}  // namespace

OpBase *make_gather_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                       const Plan &plan) {
    return op_new<GatherOp>(mem, env, args, plan);
}

}  // namespace terse
