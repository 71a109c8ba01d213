// LinkMax: the MAX over tagged messages, in one round or by dissemination
// (link_agreement.h).
#include "engine/link_agreement.h"

#include "engine/message_tag.h"

#include <algorithm>

namespace terse {

const char *LinkMax::name() const {
    switch (purpose_) {
    case kCodecStats: return "codec statistics agreement";
    case kClose: return "closing agreement";
    case kProbe: return "agreement on the MPI library's time";
    }
    return "agreement";
}

Status LinkMax::start(const EngineEnv &env, Purpose purpose, double *values, size_t count, double *scratch) {
    purpose_ = purpose;
    if (count > kInline && !scratch)
        return set_error(TERSE_ERR_INVALID,
                         "terse: a %s of %zu values needs scratch for what it receives (%zu fit)", name(), count,
                         kInline);
    env_ = &env;
    values_ = values;
    in_ = count > kInline ? scratch : inline_in_;
    count_ = count;
    round_ = 0;
    // The same on every rank: the size and the count are.
    direct_ = env.size <= kDirectRanks && count <= kInline;
    active_ = env.size > 1 && count > 0;
    if (!active_) return TERSE_OK;
    Status s = direct_ ? post_direct() : post_round();
    if (s != TERSE_OK) active_ = false;  // the requests posted are cancelled with this object
    return s;
}

// Every peer's values, and ours to every peer, on the purpose's first slot
// (the tags differ by source rank).
Status LinkMax::post_direct() {
    const int n = env_->size, r = env_->rank;
    const uint32_t slot = uint32_t(purpose_);
    Link *link = env_->link;
    for (int k = 0; k < n - 1; ++k) {
        const int peer = (r + 1 + k) % n;
        Status s = link->irecv(peer, make_tag(env_->ctx_id, uint32_t(peer), env_->seq, slot),
                               inline_in_ + size_t(k) * kInline, count_ * sizeof(double), &recv_[k]);
        if (s == TERSE_OK)
            s = link->isend(peer, make_tag(env_->ctx_id, uint32_t(r), env_->seq, slot), values_,
                            count_ * sizeof(double), &send_[k]);
        if (s != TERSE_OK) return s;
    }
    return TERSE_OK;
}

Status LinkMax::post_round() {
    const int n = env_->size, r = env_->rank;
    const int d = 1 << round_;
    const int to = (r + d) % n, from = ((r - d) % n + n) % n;
    const uint32_t slot = uint32_t(purpose_) + round_;
    Link *link = env_->link;
    Status s = link->irecv(from, make_tag(env_->ctx_id, uint32_t(from), env_->seq, slot), in_,
                           count_ * sizeof(double), &recv_[0]);
    if (s != TERSE_OK) return s;
    return link->isend(to, make_tag(env_->ctx_id, uint32_t(r), env_->seq, slot), values_, count_ * sizeof(double),
                       &send_[0]);
}

bool LinkMax::tested(int n, Status *status) {
    Link *link = env_->link;
    for (int k = 0; k < n; ++k) {
        Status sr = TERSE_OK, ss = TERSE_OK;
        size_t len = 0;
        if (!link->test(&recv_[k], &sr, &len) || !link->test(&send_[k], &ss, nullptr)) return false;
        if (sr == TERSE_OK && len != count_ * sizeof(double))
            sr = set_error(TERSE_ERR_TRANSPORT, "terse: %s: %zu bytes received, %zu expected", name(), len,
                           count_ * sizeof(double));
        if (*status == TERSE_OK) *status = sr != TERSE_OK ? sr : ss;
    }
    return true;
}

bool LinkMax::finish() {
    active_ = false;
    return true;
}

bool LinkMax::test(Status *status, bool *moved) {
    *status = TERSE_OK;
    if (!active_) return true;
    Link *link = env_->link;
    if (direct_) {
        const int peers = env_->size - 1;
        if (!tested(peers, status)) {
            link->progress();
            return false;
        }
        *moved = true;
        if (*status == TERSE_OK)
            for (int k = 0; k < peers; ++k)
                for (size_t i = 0; i < count_; ++i)
                    values_[i] = std::max(values_[i], inline_in_[size_t(k) * kInline + i]);
        return finish();
    }
    for (;;) {
        if (!tested(1, status)) {
            link->progress();
            return false;
        }
        *moved = true;
        if (*status != TERSE_OK) return finish();
        // The round's send is complete, so its values may change now.
        for (size_t i = 0; i < count_; ++i) values_[i] = std::max(values_[i], in_[i]);
        ++round_;
        if ((size_t(1) << round_) >= size_t(env_->size)) return finish();
        *status = post_round();
        if (*status != TERSE_OK) return finish();
    }
}

}  // namespace terse
