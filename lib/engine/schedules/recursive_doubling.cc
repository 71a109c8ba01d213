// Recursive doubling allreduce for short messages: log2(n) stages in which
// partners exchange their whole partial result, so the latency is
// log2(n) messages instead of the ring's 2(n-1).
//
// Non-powers of two (n = 2^k + rem): as in MPICH, the first 2*rem ranks
// pair up; the even one of each pair hands its input to the odd one
// ("fold") and waits, the remaining 2^k ranks run the doubling, and at the
// end each odd rank hands the result back ("final").
//
// Identical bits on every rank: at every stage both partners compute
//     acc = f(low, high)   with low/high = what the lower/higher rank's frame decodes to,
// the operands in rank order, using the engine's kernels (not a codec's
// accumulate, whose rounding might differ).  Both partners therefore hold
// the same bits, and so does everyone by induction.  For a lossy recompress
// codec the folded rank receives the last stage's two frames and computes
// the same f(low, high); for a summable codec partners combine frames in
// the code domain (combine(low, high)) and decode at the end.
//
// Error feedback (recompress): at the stage with distance m, the 2^m ranks
// of a group hold the same partial result and encode it identically; only
// the group's lowest rank records that encoding's error, so every error of
// the result is compensated exactly once.
#include "engine/op_base.h"
#include "engine/reduce_kernels.h"
#include "engine/schedules/message_stream.h"

#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <vector>

namespace terse {

namespace {

class RdOp final : public OpBase, public StreamHandler {
public:
    RdOp(const EngineEnv &env, const CollArgs &args, const Plan &plan, std::pmr::memory_resource *mem)
        : OpBase(env, args, plan, mem), pc_(mem), stages_(mem), ownf_(mem), ownl_(mem), made_(mem), accf_(mem),
          accl_(mem), lowf_(mem), highf_(mem), lowl_(mem), highl_(mem), arena_(size_t(1) << 20, mem) {
        pc_.build_fixed(args.count, 1, plan.chunk_elems);
        c_ = pc_.total_chunks;
    }

protected:
    void stat_chunks(OpVector<ChunkRef> *chunks, size_t *total) const override {
        *total = c_;
        for (size_t k = 0; k < c_; ++k) chunks->push_back({k, pc_.chunk_off(0, k), pc_.chunk_len(0, k), true});
    }

    Status begin() override {
        summable_ = mode_ == TERSE_REDUCE_SUMMABLE && !identity_;
        pof2_ = 1;
        while (pof2_ * 2 <= n_) pof2_ *= 2;
        rem_ = n_ - pof2_;
        if (r_ < 2 * rem_) {
            if (r_ % 2 == 0) {
                folded_ = true;
                ni_ = -1;
            } else {
                ni_ = r_ / 2;
                has_folded_partner_ = true;
            }
        } else {
            ni_ = r_ - rem_;
        }
        int levels = 0;
        while ((1 << levels) < pof2_) ++levels;
        try {
            if (folded_) {
                stages_.push_back({Kind::FoldSend, r_ + 1, 0, 0});
                stages_.push_back({Kind::FinalRecv, r_ + 1, 0, levels + 1});
            } else {
                if (has_folded_partner_) stages_.push_back({Kind::FoldRecv, r_ - 1, 0, 0});
                for (int l = 0; l < levels; ++l) {
                    int pni = ni_ ^ (1 << l);
                    stages_.push_back({Kind::Exchange, real_rank(pni), 1 << l, l + 1});
                }
                if (has_folded_partner_) stages_.push_back({Kind::FinalSend, r_ - 1, 0, levels + 1});
            }
            ownf_.assign(c_, nullptr);
            ownl_.assign(c_, 0);
            made_.assign(c_, 0);
            if (summable_) {
                accf_.assign(c_, nullptr);
                accl_.assign(c_, 0);
            }
            if (has_folded_partner_ && !identity_ && !summable_) {
                lowf_.assign(c_, nullptr);
                lowl_.assign(c_, 0);
                highf_.assign(c_, nullptr);
                highl_.assign(c_, 0);
            }
        } catch (const std::bad_alloc &) {
            return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory planning recursive doubling");
        }
        // The running result lives in recvbuf (recompress) or in frames (summable).
        if (!folded_) {
            if (summable_) {
                for (size_t k = 0; k < c_; ++k)
                    if (!make_own_acc_frame(k))
                        fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory for a frame buffer");
            } else if (input_ != args_.recvbuf) {
                std::memcpy(args_.recvbuf, input_, args_.count * esize_);
            }
        }
        return TERSE_OK;
    }

    Status body(bool *done) override {
        while (cur_ < stages_.size()) {
            if (!stream_) {
                Status s = start_stage();
                if (s != TERSE_OK) return s;
            }
            bool d = false;
            Status s = stream_->progress(&d);
            if (s != TERSE_OK) return s;
            if (!d) return TERSE_OK;
            end_stage();
            stream_.reset();
            ++cur_;
        }
        *done = true;
        return TERSE_OK;
    }

    void stream_primary(size_t j, OutFrame *out) override {
        const Stage &st = stages_[cur_];
        switch (st.kind) {
        case Kind::FoldSend: {
            // The folded rank's own input, encoded once.
            const size_t n = pc_.chunk_len(0, j), off = pc_.chunk_off(0, j);
            uint8_t *buf = get_buf();
            const uint8_t *src = elem(input_, off);
            size_t len = encode_frame(src, n, j, buf, 1);
            record_error_frame(off, src, buf, len, j, n);
            set_out(out, buf, len, buf);
            return;
        }
        case Kind::Exchange:
            ensure_own(j);
            set_out(out, ownf_[j], ownl_[j], ownf_[j]);
            ownf_[j] = nullptr;
            return;
        case Kind::FinalSend: {
            const size_t n = pc_.chunk_len(0, j / (two_frames() ? 2 : 1));
            if (poisoned()) {
                uint8_t *buf = get_buf();
                set_out(out, buf, seal_poison(buf, n), buf);
            } else if (summable_) {
                set_out(out, accf_[j], accl_[j], accf_[j]);
                accf_[j] = nullptr;
            } else if (two_frames()) {
                size_t k = j / 2;
                if (j % 2 == 0) set_out(out, lowf_[k], lowl_[k], nullptr);
                else set_out(out, highf_[k], highl_[k], nullptr);
            } else {
                uint8_t *buf = get_buf();
                size_t len = seal_raw(elem(args_.recvbuf, pc_.chunk_off(0, j)), n, buf, uint32_t(n_));
                set_out(out, buf, len, buf);
            }
            return;
        }
        default: return;
        }
    }

    void stream_received(size_t i, uint8_t *buf, size_t len, OutFrame *) override {
        const Stage &st = stages_[cur_];
        const size_t k = (st.kind == Kind::FinalRecv && two_frames()) ? i / 2 : i;
        const size_t n = pc_.chunk_len(0, k), off = pc_.chunk_off(0, k);
        uint8_t *acc = elem(args_.recvbuf, off);
        if (i == 0 && inject_armed()) {
            // Hops: the receiving stages; fold and exchanges reduce ("rs"),
            // the final stage returns the result ("ag").
            size_t hop = 0, hops = 0, all = 0, all_hops = 0;
            const bool ag = st.kind == Kind::FinalRecv;
            for (size_t q = 0; q < stages_.size(); ++q) {
                const Kind kq = stages_[q].kind;
                if (kq == Kind::FoldSend || kq == Kind::FinalSend) continue;
                if (q == cur_) {
                    hop = hops;
                    all = all_hops;
                }
                if ((kq == Kind::FinalRecv) == ag) ++hops;
                ++all_hops;
            }
            if (injected_hop(ag, hop, hops, all, all_hops)) frame_spoil_check(buf);
        }
        FrameInfo fi;
        bool ok = open_frame(buf, len, n, st.peer, &fi);
        if (st.kind == Kind::Exchange) ensure_own(k);  // before acc changes
        if (!ok) {
            pool().put(buf);
            return;
        }
        switch (st.kind) {
        case Kind::FoldRecv:
            // low = the folded (even) rank, high = this rank.
            if (summable_) combine_into_acc(k, fi, /*incoming_is_low=*/true);
            else reduce_incoming(acc, fi, k, n, /*incoming_is_low=*/true);
            break;
        case Kind::Exchange: {
            const bool incoming_low = st.peer < r_;
            if (summable_) {
                combine_into_acc(k, fi, incoming_low);
            } else {
                if (two_frames() && has_folded_partner_ && cur_is_last_exchange()) {
                    uint8_t *copy = arena_.alloc(len);
                    if (copy) std::memcpy(copy, buf, len);
                    else fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory keeping frames");
                    (incoming_low ? lowf_ : highf_)[k] = copy;
                    (incoming_low ? lowl_ : highl_)[k] = len;
                }
                reduce_incoming(acc, fi, k, n, incoming_low);
            }
            break;
        }
        case Kind::FinalRecv:
            if (!two_frames() || i % 2 == 0) {
                decode_frame(fi, k, acc, n, false);
            } else {
                uint8_t *tmp = scratch_a();
                if (decode_frame(fi, k, tmp, n, false)) timed_reduce_out(acc, acc, tmp, n);
            }
            break;
        default: break;
        }
        pool().put(buf);
    }

private:
    enum class Kind { FoldSend, FoldRecv, Exchange, FinalSend, FinalRecv };
    struct Stage {
        Kind kind;
        int peer;
        int mask;    // exchange distance (new indices)
        int number;  // same on both ends: tags
    };

    int real_rank(int ni) const { return ni < rem_ ? 2 * ni + 1 : ni + rem_; }
    // Lossy recompress hands the folded rank the last stage's two frames.
    bool two_frames() const { return !identity_ && !summable_; }
    bool cur_is_last_exchange() const {
        return cur_ + 1 < stages_.size() ? stages_[cur_ + 1].kind != Kind::Exchange : true;
    }

    uint8_t *get_buf() {
        uint8_t *b = pool().get();
        if (!b) {
            fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory for a frame buffer");
            return emergency_header();  // only ever gets a poison header
        }
        return b;
    }
    static void set_out(OutFrame *out, const uint8_t *data, size_t len, uint8_t *owned) {
        out->data = data;
        out->len = len;
        out->owned = owned;
    }

    Status start_stage() {
        const Stage &st = stages_[cur_];
        std::fill(made_.begin(), made_.end(), 0);
        MessageStream::Params p;
        p.left = p.right = st.peer;
        p.depth = plan_.depth;
        p.slot_base = size_t(st.number) * 2 * c_;
        const size_t per = two_frames() ? 2 * c_ : c_;
        switch (st.kind) {
        case Kind::FoldSend: p.nsend = p.primaries = c_; break;
        case Kind::FoldRecv: p.nrecv = c_; break;
        case Kind::Exchange: p.nsend = p.primaries = p.nrecv = c_; break;
        case Kind::FinalSend: p.nsend = p.primaries = per; break;
        case Kind::FinalRecv: p.nrecv = per; break;
        }
        stream_.emplace(memory());
        return stream_->init(this, this, p);
    }

    void end_stage() {
        for (size_t k = 0; k < c_; ++k)
            if (ownf_[k]) {
                pool().put(ownf_[k]);
                ownf_[k] = nullptr;
            }
        const Stage &st = stages_[cur_];
        // After the last exchange a summable result is decoded once.
        bool last_exchange = st.kind == Kind::Exchange && cur_is_last_exchange();
        if (summable_ && last_exchange && !poisoned()) {
            for (size_t k = 0; k < c_; ++k) {
                FrameInfo fi = trusted_info(accf_[k], accl_[k]);
                decode_frame(fi, k, elem(args_.recvbuf, pc_.chunk_off(0, k)), pc_.chunk_len(0, k), false);
            }
        }
        if (summable_ && (st.kind == Kind::FinalSend || (last_exchange && !has_folded_partner_)))
            for (size_t k = 0; k < c_; ++k)
                if (accf_[k]) {
                    pool().put(accf_[k]);
                    accf_[k] = nullptr;
                }
    }

    // Summable: the running result of chunk k as a frame, from own input.
    bool make_own_acc_frame(size_t k) {
        const size_t n = pc_.chunk_len(0, k), off = pc_.chunk_off(0, k);
        uint8_t *buf = pool().get();
        if (!buf) return false;
        const uint8_t *src = elem(input_, off);
        accl_[k] = encode_frame(src, n, k, buf, 1);
        accf_[k] = buf;
        record_error_frame(off, src, buf, accl_[k], k, n);
        return true;
    }

    // The frame this rank sends for chunk k in the current exchange; made
    // once, before the chunk's running result changes.
    void ensure_own(size_t k) {
        if (made_[k]) return;
        made_[k] = 1;
        const Stage &st = stages_[cur_];
        const size_t n = pc_.chunk_len(0, k), off = pc_.chunk_off(0, k);
        uint8_t *buf = get_buf();
        if (poisoned()) {
            ownl_[k] = seal_poison(buf, n);
        } else if (summable_) {
            std::memcpy(buf, accf_[k], accl_[k]);
            ownl_[k] = accl_[k];
        } else if (identity_) {
            ownl_[k] = seal_raw(elem(args_.recvbuf, off), n, buf, uint32_t(st.mask));
        } else {
            uint8_t *acc = elem(args_.recvbuf, off);
            ownl_[k] = encode_frame(acc, n, k, buf, uint32_t(st.mask));
            FrameInfo fi = trusted_info(buf, ownl_[k]);
            if (!poisoned()) {
                // acc becomes what the frame says (both partners use that).
                uint8_t *tmp = scratch_b();
                if (decode_frame(fi, k, tmp, n, false)) {
                    bool leader = (ni_ & (st.mask - 1)) == 0;
                    if (leader) record_error(off, acc, tmp, n);
                    std::memcpy(acc, tmp, n * esize_);
                }
                if (two_frames() && has_folded_partner_ && cur_is_last_exchange()) {
                    uint8_t *copy = arena_.alloc(ownl_[k]);
                    if (copy) std::memcpy(copy, buf, ownl_[k]);
                    else fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory keeping frames");
                    bool own_low = st.peer > r_;
                    (own_low ? lowf_ : highf_)[k] = copy;
                    (own_low ? lowl_ : highl_)[k] = ownl_[k];
                }
            }
        }
        ownf_[k] = buf;
    }

    // Recompress: acc = f(low, high), acc holding this rank's side.
    void reduce_incoming(uint8_t *acc, const FrameInfo &fi, size_t k, size_t n, bool incoming_low) {
        const void *in;
        if (is_raw(fi)) {
            in = fi.payload;
        } else {
            uint8_t *tmp = scratch_a();
            if (!decode_frame(fi, k, tmp, n, false)) return;
            in = tmp;
        }
        if (incoming_low) timed_reduce_out(acc, in, acc, n);
        else timed_reduce_out(acc, acc, in, n);
    }

    // Summable: accf[k] = combine(low, high).
    void combine_into_acc(size_t k, const FrameInfo &in, bool incoming_low) {
        if (poisoned()) return;
        const size_t n = pc_.chunk_len(0, k);
        FrameInfo mine = trusted_info(accf_[k], accl_[k]);
        const FrameInfo &lo = incoming_low ? in : mine;
        const FrameInfo &hi = incoming_low ? mine : in;
        uint8_t *nb = pool().get();
        if (!nb) {
            fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory for a frame buffer");
            return;
        }
        const uint32_t contributors = lo.contributors + hi.contributors;
        size_t len = 0;
        bool combined = false;
        if (!is_raw(lo) && !is_raw(hi)) {
            bool failed = false;
            combined = combine_frames(lo, hi, k, n, nb, &len, &failed);
            if (failed) {
                pool().put(nb);
                return;
            }
        }
        if (!combined) {
            uint8_t *tmp = scratch_a();
            uint8_t *out = nb + kFrameHeaderSize;
            if (!decode_frame(lo, k, tmp, n, false) || !decode_frame(hi, k, out, n, false)) {
                pool().put(nb);
                return;
            }
            timed_reduce_out(out, tmp, out, n);
            len = frame_seal(nb, args_.dtype, FRAME_RAW, 0, contributors, n, n * esize_);
        }
        pool().put(accf_[k]);
        accf_[k] = nb;
        accl_[k] = len;
    }

    ChunkPlan pc_;
    size_t c_ = 0;
    bool summable_ = false;
    int pof2_ = 1, rem_ = 0, ni_ = 0;
    bool folded_ = false, has_folded_partner_ = false;
    OpVector<Stage> stages_;
    size_t cur_ = 0;
    OpVector<uint8_t *> ownf_;
    OpVector<size_t> ownl_;
    OpVector<uint8_t> made_;
    OpVector<uint8_t *> accf_;
    OpVector<size_t> accl_;
    OpVector<uint8_t *> lowf_, highf_;
    OpVector<size_t> lowl_, highl_;
    Arena arena_;
    std::optional<MessageStream> stream_;
};

}  // namespace

OpBase *make_recursive_doubling_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                                   const Plan &plan) {
    return op_new<RdOp>(mem, env, args, plan);
}

}  // namespace terse
