// Error feedback: the quantisation error a lossy codec made on this rank's
// contribution in one call is remembered and added to the input of the next
// call on the same buffer, so that errors do not accumulate over iterations
// (the long-run sum of results tracks the long-run sum of exact results).
//
// Buffer identity: a residual belongs to one communicator (the store lives in
// its CommState) and is keyed by a FeedbackKey (feedback_key.h: by default
// the address of the call's input buffer, sendbuf or recvbuf for
// MPI_IN_PLACE) together with its element count and datatype.  A call with
// the same key but a different count or datatype drops the old residual and
// starts from zero.  At most kMaxEntries residuals and kMaxBytes bytes are
// kept; the least recently used one is dropped first.
// A buffer larger than kMaxBytes gets no feedback (logged once at info level).
// Several non-blocking operations may be in flight on a communicator: a
// residual an operation acquired is pinned until it releases it, and is
// neither evicted nor handed to a second operation meanwhile (that one runs
// without feedback, logged once, as when the budget is full of pinned ones).
// The user's send buffer is never modified: the engine adds the residual to a
// private copy of the input.
//
// What the residual holds depends on the reduction mode (see engine ops):
//  - gather, summable: this rank's own quantisation error,
//      r = (x + r_old) - decode(encode(x + r_old)), exact per chunk;
//  - recompress: the encoding error of every chunk this rank encoded during
//    the call (its own first hop and the partial sums it re-encoded), so that
//    summed over ranks the residuals equal the total error of the result.
#pragma once

#include "engine/feedback_key.h"
#include "util/status.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace terse {

class FeedbackStore {
public:
    // Enough for a model's gradient buckets (GPT-2 124M in 25 MiB DDP
    // buckets: about 20; a fixed LRU smaller than the cycle of buckets
    // would evict each residual just before its next use); the byte budget
    // is the real bound, and a lookup over 256 keys costs nothing beside a
    // call of the engine's sizes.
    static constexpr size_t kMaxEntries = 256;
    static constexpr size_t kMaxBytes = size_t(1) << 30;

    explicit FeedbackStore(size_t max_entries = kMaxEntries, size_t max_bytes = kMaxBytes);
    ~FeedbackStore();
    FeedbackStore(const FeedbackStore &) = delete;
    FeedbackStore &operator=(const FeedbackStore &) = delete;

    // The residual of the buffer (count elements of dtype), zero-filled when
    // new or when count/dtype changed, pinned until release(key).  nullptr
    // when it would not fit the byte budget, another operation holds it, or
    // memory ran out (the call then runs without feedback).
    void *acquire(const FeedbackKey &key, size_t count, terse_dtype_t dtype, bool *created = nullptr);
    // The operation that acquired key is done with it.
    void release(const FeedbackKey &key);
    // Forget the residual of key (e.g. after a failed call left it partial);
    // by the operation holding it, which need not release it then.
    void drop(const FeedbackKey &key);
    void clear();

    size_t entries() const { return entries_.size(); }
    size_t bytes() const { return bytes_; }
    size_t max_entries() const { return max_entries_; }
    size_t max_bytes() const { return max_bytes_; }

    // What terse_feedback_save writes and restore reads back
    // (runtime/feedback_file.h), so that a restored store evicts as the
    // saved one would have.
    struct Entry {
        FeedbackKey key;
        size_t count;
        terse_dtype_t dtype;
        uint64_t last_use;  // the store's clock at its last use
        int pins = 0;       // operations in flight using it (acquire .. release)
        std::unique_ptr<uint8_t[]> data;
        size_t nbytes;
    };
    const std::vector<Entry> &contents() const { return entries_; }
    uint64_t clock() const { return clock_; }
    // Into an empty store being restored: a residual as saved, and the clock.
    // Fails (with a message) when it breaks the store's limits or memory
    // runs out.
    Status restore_entry(const FeedbackKey &key, size_t count, terse_dtype_t dtype, uint64_t last_use,
                         const void *data);
    void restore_clock(uint64_t clock) { clock_ = clock; }

private:
    void evict_for(size_t incoming, const FeedbackKey *keep);
    void skipped(const char *why);  // logs once why a call got no residual

    size_t max_entries_;
    size_t max_bytes_;
    size_t bytes_ = 0;
    uint64_t clock_ = 0;
    bool warned_ = false, warned_busy_ = false;
    std::vector<Entry> entries_;
};

}  // namespace terse
