// An agreement (MAX over the ranks of a few doubles) carried by an
// operation's own tagged messages instead of the MPI library's control
// collectives.  Non-blocking operations close with it
// (EngineEnv::close_on_link): MPI matches the collectives of a
// communicator in the order they are posted, so a closing agreement posted
// there when an operation's body ends would need every rank to end its
// operations in the same order; these messages carry the operation's own
// sequence number in their tags and match nothing else, whatever order the
// ranks finish in (runtime/nonblocking.h).
//
// Dissemination: in round k, rank r sends what it holds to r + 2^k and
// takes the MAX with what r - 2^k sent; after ceil(log2 n) rounds every
// rank holds the MAX over all (MAX is idempotent, so ranks counted twice
// do no harm).
#pragma once

#include "engine/engine.h"
#include "engine/ports.h"
#include "util/status.h"

#include <cstddef>

namespace terse {

class LinkMax {
public:
    static constexpr size_t kMaxValues = 8;
    // Tag slots of the rounds (slot kSlotBase + k): above what a schedule
    // reaches before it wraps, and matched in posting order even if it does
    // (every schedule message of a peer is sent before its first round).
    static constexpr size_t kSlotBase = 0xFF00;

    LinkMax() = default;
    LinkMax(const LinkMax &) = delete;
    LinkMax &operator=(const LinkMax &) = delete;

    // values[0..count) become their MAX over the ranks of env (count <=
    // kMaxValues); they must stay valid until test() returns true.
    Status start(const EngineEnv &env, double *values, size_t count);
    // Advances; true once finished (with *status its outcome).  *moved is
    // set when a round completed.
    bool test(Status *status, bool *moved);
    bool active() const { return active_; }

private:
    Status post_round();

    const EngineEnv *env_ = nullptr;
    double *values_ = nullptr;
    size_t count_ = 0;
    unsigned round_ = 0;
    bool active_ = false;
    double out_[kMaxValues] = {};
    double in_[kMaxValues] = {};
    LinkRequest send_, recv_;
};

}  // namespace terse
