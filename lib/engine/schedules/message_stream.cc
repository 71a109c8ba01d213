#include "engine/schedules/message_stream.h"

#include <new>

namespace terse {

MessageStream::~MessageStream() { cancel_all(); }

void MessageStream::cancel_all() {
    if (!op_) return;
    Link *link = op_->link();
    for (auto &s : sslots_)
        if (s.busy) {
            link->cancel(&s.req);
            op_->pool().put(s.owned);
            s.busy = false;
        }
    for (size_t i = processed_; i < posted_; ++i) {
        size_t idx = i % rreqs_.size();
        link->cancel(&rreqs_[idx]);
        op_->pool().put(rbufs_[idx]);
        rbufs_[idx] = nullptr;
    }
    for (size_t q = sent_ > p_.primaries ? sent_ - p_.primaries : 0; q < queue_.size(); ++q)
        if (ready_[q]) {
            op_->pool().put(queue_[q].owned);
            ready_[q] = 0;
        }
    posted_ = processed_;
    held_ = false;
}

Status MessageStream::init(OpBase *op, StreamHandler *handler, const Params &p) {
    op_ = op;
    h_ = handler;
    p_ = p;
    if (p_.depth < 1) p_.depth = 1;
    try {
        sslots_.reset(mem_, size_t(p_.depth));
        rreqs_.reset(mem_, size_t(p_.depth));
        rbufs_.assign(size_t(p_.depth), nullptr);
        size_t derived = p_.nsend > p_.primaries ? p_.nsend - p_.primaries : 0;
        queue_.assign(derived, OutFrame{});
        ready_.assign(derived, 0);
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory setting up a message stream");
    }
    return TERSE_OK;
}

Status MessageStream::progress(bool *done) {
    Link *link = op_->link();
    const EngineEnv &env = op_->env();
    const size_t depth = size_t(p_.depth);
    for (;;) {
        bool any = false;

        // Completed sends give their buffers back.
        for (auto &s : sslots_) {
            if (!s.busy) continue;
            Status st = TERSE_OK;
            if (!link->test(&s.req, &st, nullptr)) continue;
            if (st != TERSE_OK) return st;
            op_->pool().put(s.owned);
            s.owned = nullptr;
            s.busy = false;
            --inflight_;
            any = true;
        }

        // Keep `depth` receives posted ahead of processing.
        while (posted_ < p_.nrecv && posted_ - processed_ < depth) {
            uint8_t *buf = op_->pool().get();
            if (!buf) {
                // The peer must still be drained: poison the operation and
                // post the receive once a buffer comes back (a send
                // completes or a receive is processed).  With nothing in
                // flight none ever will, and the operation cannot go on.
                if (inflight_ == 0 && posted_ == processed_)
                    return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory for receive buffers");
                op_->fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory for receive buffers");
                break;
            }
            size_t idx = posted_ % depth;
            rbufs_[idx] = buf;
            Status st = link->irecv(p_.left, op_tag(env, p_.left, p_.slot_base + posted_), buf,
                                    op_->pool().buffer_bytes(), &rreqs_[idx]);
            if (st != TERSE_OK) {
                op_->pool().put(buf);
                rbufs_[idx] = nullptr;
                return st;
            }
            ++posted_;
            any = true;
        }

        // Process arrivals in order.
        while (processed_ < posted_) {
            size_t idx = processed_ % depth;
            if (!held_) {
                Status st = TERSE_OK;
                if (!link->test(&rreqs_[idx], &st, &held_len_)) break;
                if (st != TERSE_OK) return st;
                held_ = true;
            }
            if (!h_->stream_received_ready(processed_)) break;
            held_ = false;
            const size_t len = held_len_;
            uint8_t *buf = rbufs_[idx];
            rbufs_[idx] = nullptr;
            size_t j = p_.primaries + processed_;
            OutFrame *out = j < p_.nsend ? &queue_[j - p_.primaries] : nullptr;
            ++processed_;
            h_->stream_received(processed_ - 1, buf, len, out);
            if (out) ready_[j - p_.primaries] = 1;
            any = true;
            link->progress();  // keep the wire busy while we compute
        }

        // Send in stream order while the window has room.
        while (sent_ < p_.nsend && inflight_ < depth) {
            OutFrame f;
            if (sent_ < p_.primaries) {
                if (!h_->stream_primary_ready(sent_)) break;
                h_->stream_primary(sent_, &f);
            } else if (ready_[sent_ - p_.primaries]) {
                f = queue_[sent_ - p_.primaries];
                ready_[sent_ - p_.primaries] = 0;
            } else {
                break;
            }
            SendSlot *slot = nullptr;
            for (auto &s : sslots_)
                if (!s.busy) {
                    slot = &s;
                    break;
                }
            if (__builtin_expect(engine_take_corruption(), 0)) frame_spoil_check(const_cast<uint8_t *>(f.data));
            Status st = link->isend(p_.right, op_tag(env, env.rank, p_.slot_base + sent_), f.data, f.len,
                                    &slot->req);
            if (st != TERSE_OK) {
                op_->pool().put(f.owned);
                return st;
            }
            op_->note_send(f.data, f.len);
            slot->owned = f.owned;
            slot->busy = true;
            ++inflight_;
            ++sent_;
            any = true;
        }
        if (!any) break;
        op_->note_activity();
    }
    *done = this->done();
    return TERSE_OK;
}

}  // namespace terse
