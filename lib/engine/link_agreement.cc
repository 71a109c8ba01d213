// LinkMax: the dissemination MAX over tagged messages (link_agreement.h).
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
    active_ = env.size > 1 && count > 0;
    return active_ ? post_round() : TERSE_OK;
}

Status LinkMax::post_round() {
    const int n = env_->size, r = env_->rank;
    const int d = 1 << round_;
    const int to = (r + d) % n, from = ((r - d) % n + n) % n;
    const uint32_t slot = uint32_t(purpose_) + round_;
    Link *link = env_->link;
    Status s = link->irecv(from, make_tag(env_->ctx_id, uint32_t(from), env_->seq, slot), in_,
                           count_ * sizeof(double), &recv_);
    if (s != TERSE_OK) return s;
    return link->isend(to, make_tag(env_->ctx_id, uint32_t(r), env_->seq, slot), values_, count_ * sizeof(double),
                       &send_);
}

bool LinkMax::test(Status *status, bool *moved) {
    *status = TERSE_OK;
    if (!active_) return true;
    Link *link = env_->link;
    for (;;) {
        Status sr = TERSE_OK, ss = TERSE_OK;
        size_t len = 0;
        if (!link->test(&recv_, &sr, &len) || !link->test(&send_, &ss, nullptr)) {
            link->progress();
            return false;
        }
        *moved = true;
        if (sr == TERSE_OK && len != count_ * sizeof(double))
            sr = set_error(TERSE_ERR_TRANSPORT, "terse: %s: %zu bytes received, %zu expected", name(), len,
                           count_ * sizeof(double));
        if (sr != TERSE_OK || ss != TERSE_OK) {
            active_ = false;
            *status = sr != TERSE_OK ? sr : ss;
            return true;
        }
        // The round's send is complete, so its values may change now.
        for (size_t i = 0; i < count_; ++i) values_[i] = std::max(values_[i], in_[i]);
        ++round_;
        if ((size_t(1) << round_) >= size_t(env_->size)) {
            active_ = false;
            return true;
        }
        Status s = post_round();
        if (s != TERSE_OK) {
            active_ = false;
            *status = s;
            return true;
        }
    }
}

}  // namespace terse
