// RingOp: schedule construction and the composition of the two phases.
#include "engine/schedules/ring_op.h"

#include <cstring>
#include <new>

namespace terse {

RingOp::RingOp(const EngineEnv &env, const CollArgs &args, const Plan &plan, std::pmr::memory_resource *mem)
    : OpBase(env, args, plan, mem), plan_chunks_(mem), recvs_(mem), dev_chunks_(mem), dev_order_(mem),
      dev_slot_used_(mem), stream_(mem) {
    has_rs_ = coll_reduces(args.kind);
    has_ag_ = coll_gathers(args.kind);
    if (args.kind == CollKind::Allreduce) plan_chunks_.build_even(args.count, n_, plan.chunk_elems);
    else if (coll_is_v(args.kind)) plan_chunks_.build_counts(args.counts, args.displs, n_, plan.chunk_elems);
    else plan_chunks_.build_fixed(args.count, n_, plan.chunk_elems);
    if (has_rs_ && !has_ag_) {
        // In place, the input is recvbuf (all blocks) and the result goes to
        // its start; block 0 is still input until the very end, so the
        // result is built in block r's own place and moved at the end.
        rs_dst_ = elem(args.recvbuf, args.in_place ? plan_chunks_.blocks[size_t(r_)].off : 0);
    }
}

const uint8_t *RingOp::own(size_t b, size_t k) const {
    if (!has_rs_) return elem(input_, k * plan_chunks_.chunk);
    return elem(input_, plan_chunks_.chunk_off(b, k));
}

uint8_t *RingOp::result(size_t b, size_t k) const { return elem(args_.recvbuf, plan_chunks_.chunk_off(b, k)); }

void RingOp::stat_chunks(OpVector<ChunkRef> *chunks, size_t *total) const {
    *total = plan_chunks_.total_chunks;
    chunks->clear();
    chunks->reserve(*total);
    for (size_t b = 0; b < plan_chunks_.blocks.size(); ++b)
        for (size_t k = 0; k < plan_chunks_.blocks[b].nchunks; ++k) {
            // An allgather contributes only its own block; the others are
            // filled by their owners (the rest of the vector is -inf).
            bool mine = has_rs_ || int(b) == r_;
            size_t off = has_rs_ ? plan_chunks_.chunk_off(b, k) : k * plan_chunks_.chunk;
            chunks->push_back({plan_chunks_.global(b, k), off, plan_chunks_.chunk_len(b, k), mine});
        }
}

Status RingOp::begin() {
    MessageStream::Params p;
    p.left = mod(r_ - 1);
    p.right = mod(r_ + 1);
    p.depth = plan_.depth;
    auto nch = [&](int b) { return plan_chunks_.blocks[size_t(mod(b))].nchunks; };
    try {
        if (has_rs_)
            for (int s = 0; s <= n_ - 2; ++s) {
                int b = mod(r_ - s - 2);
                for (size_t k = 0; k < nch(b); ++k)
                    recvs_.push_back({false, s == n_ - 2, uint32_t(s), uint32_t(b), k});
                p.nsend += nch(r_ - s - 1);
            }
        if (has_ag_)
            for (int s = 0; s <= n_ - 2; ++s) {
                int b = mod(r_ - s - 1);
                for (size_t k = 0; k < nch(b); ++k)
                    recvs_.push_back({true, s == n_ - 2, uint32_t(s), uint32_t(b), k});
                p.nsend += nch(r_ - s);
            }
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory planning the ring");
    }
    p.nrecv = recvs_.size();
    p.primaries = has_rs_ ? nch(r_ - 1) : nch(r_);
    if (dev_) {
        Status s = dev_begin();
        if (s != TERSE_OK) return s;
    }
    return stream_.init(this, this, p);
}

Status RingOp::body(bool *done) {
    if (dev_) {
        device_wait_ = false;
        dev_pump();
    }
    Status s = stream_.progress(done);
    if (s != TERSE_OK || !*done) return s;
    if (rs_dst_ && rs_dst_ != args_.recvbuf && !poisoned()) {
        const size_t bytes = plan_chunks_.blocks[size_t(r_)].len * esize_;
        if (!dev_) {
            std::memmove(args_.recvbuf, rs_dst_, bytes);
        } else {
            // The runtime serves only in-place calls whose block r lies
            // apart from the buffer's start (runtime/device_codecs.cc).
            Status cs = dev_->copy(args_.recvbuf, rs_dst_, bytes);
            if (cs != TERSE_OK) fail_local(cs, last_error());  // the close agreement tells the others
        }
    }
    return TERSE_OK;
}

void RingOp::stream_primary(size_t j, OutFrame *out) {
    if (has_rs_) rs_primary(j, out);
    else ag_primary(j, out);
}

bool RingOp::stream_primary_ready(size_t j) {
    if (!dev_) return true;
    return dev_poll(primary_block(), j);
}

bool RingOp::stream_received_ready(size_t i) {
    if (!dev_ || recvs_[i].ag) return true;
    return dev_poll(recvs_[i].block, recvs_[i].chunk);
}

void RingOp::stream_received(size_t i, uint8_t *buf, size_t len, OutFrame *out) {
    const Msg &m = recvs_[i];
    const size_t hops = size_t(n_ - 1), before = m.ag && has_rs_ ? hops : 0;
    if (injected_hop(m.ag, m.step, hops, before + m.step, (has_rs_ + has_ag_) * hops)) frame_spoil_check(buf);
    if (m.ag) ag_received(m, buf, len, out);
    else rs_received(m, buf, len, out);
}

void RingOp::poison_out(uint8_t *buf, size_t n, OutFrame *out) {
    if (!out) {
        pool().put(buf);
        return;
    }
    out->len = seal_poison(buf, n);
    out->data = buf;
    out->owned = buf;
}

}  // namespace terse

namespace terse {
OpBase *make_ring_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                     const Plan &plan) {
    return op_new<RingOp>(mem, env, args, plan);
}
}  // namespace terse
