// What names an error-feedback residual (error_feedback.h), and how a
// communicator decides it for each call (feedback_key=, terse(7)):
//  - address: the call's input buffer (sendbuf, or recvbuf for
//    MPI_IN_PLACE), filled in by the operation.  A framework that
//    reallocates its gradient buckets loses the residuals, and no
//    address means anything after a restart.
//  - sequence: the call's shape (kind, datatype, count: arguments MPI
//    requires to match on every rank) and its ordinal among the calls of
//    that shape since the last terse_feedback_step() on the communicator.
//    A training step that issues the same calls in the same order each
//    iteration, with one terse_feedback_step() per iteration, gives each
//    bucket the same key every iteration, wherever its memory lies.
//    Ordinals count per shape so that a call that comes or goes in one
//    iteration (a bucket of another size) moves no other call's key.
//  - tag: the value set by terse_set_next_feedback_tag() before the call;
//    a call without one runs without feedback.
// Keys are decided when the call is issued, on the calling thread, in the
// order MPI requires to be the same on every rank (a non-blocking call may
// start later, on the progress thread, with the key it was issued with).
#pragma once

#include "config/config.h"
#include "engine/coll_args.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace terse {

struct FeedbackKey {
    FeedbackKeyMode mode = FeedbackKeyMode::Address;
    bool keyed = true;   // false: this call runs without feedback (tag mode, no tag set)
    uint64_t id = 0;     // address: the input's address; tag: the tag; sequence: the ordinal
    uint64_t shape = 0;  // sequence: feedback_shape() of the call; 0 otherwise
    bool same(const FeedbackKey &o) const { return mode == o.mode && id == o.id && shape == o.shape; }
};

// A call's shape as sequence keys hold it: kind in the top 8 bits, dtype in
// the next 8, count (the call's count argument) in the low 48; a count of
// 2^48 elements or more (beyond any residual budget) is folded, so such calls
// may share a shape, which only makes them drop each other's residual.
uint64_t feedback_shape(CollKind kind, terse_dtype_t dtype, size_t count);

// One communicator's key decisions (CommState::feedback_keys).  Not
// thread-safe: used by the thread that issues the communicator's calls.
class FeedbackKeyer {
public:
    // The key of the next call; consumes a tag set for it, whatever mode.
    FeedbackKey next(FeedbackKeyMode mode, CollKind kind, terse_dtype_t dtype, size_t count);
    // A new iteration: the ordinals of sequence keys start again at 0.
    void step() { ordinals_.clear(); }
    void set_next_tag(uint64_t tag) {
        tag_ = tag;
        tag_set_ = true;
    }

    // (shape, next ordinal) for every shape seen since the last step, for
    // terse_feedback_save / restore.
    using Ordinals = std::vector<std::pair<uint64_t, uint64_t>>;
    const Ordinals &ordinals() const { return ordinals_; }
    void set_ordinals(Ordinals o) { ordinals_ = std::move(o); }

private:
    Ordinals ordinals_;  // few shapes per iteration: a linear search is enough
    uint64_t tag_ = 0;
    bool tag_set_ = false;
};

}  // namespace terse
