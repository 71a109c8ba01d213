#include "engine/error_feedback.h"

#include "util/log.h"
#include "engine/reduce_kernels.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace terse {

FeedbackStore::FeedbackStore(size_t max_entries, size_t max_bytes)
    : max_entries_(max_entries ? max_entries : 1), max_bytes_(max_bytes) {}

FeedbackStore::~FeedbackStore() = default;

void FeedbackStore::evict_for(size_t incoming, const FeedbackKey *keep) {
    while (!entries_.empty() && (entries_.size() + 1 > max_entries_ || bytes_ + incoming > max_bytes_)) {
        auto victim = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (!it->pins && !(keep && it->key.same(*keep)) &&
                (victim == entries_.end() || it->last_use < victim->last_use))
                victim = it;
        if (victim == entries_.end()) break;
        bytes_ -= victim->nbytes;
        entries_.erase(victim);
    }
}

void *FeedbackStore::acquire(const FeedbackKey &key, size_t count, terse_dtype_t dtype, bool *created) {
    if (created) *created = false;
    const size_t nbytes = count * dtype_size(dtype);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (!it->key.same(key)) continue;
        if (it->pins) {  // in use by an operation still in flight
            skipped("its residual is in use by another operation in flight");
            return nullptr;
        }
        if (it->count == count && it->dtype == dtype) {
            it->last_use = ++clock_;
            it->pins = 1;
            return it->data.get();
        }
        // Same key, different shape: a different buffer now.
        bytes_ -= it->nbytes;
        entries_.erase(it);
        break;
    }
    if (nbytes > max_bytes_) {
        if (!warned_) {
            TERSE_LOG_INFO("error feedback skipped for a %zu-byte buffer (over the %zu-byte budget)", nbytes,
                           max_bytes_);
            warned_ = true;
        }
        return nullptr;
    }
    evict_for(nbytes, &key);
    if (entries_.size() + 1 > max_entries_ || bytes_ + nbytes > max_bytes_) {
        skipped("every residual the store may keep is in use by operations in flight");
        return nullptr;
    }
    Entry e;
    e.key = key;
    e.count = count;
    e.dtype = dtype;
    e.last_use = ++clock_;
    e.pins = 1;
    e.nbytes = nbytes;
    e.data.reset(new (std::nothrow) uint8_t[nbytes ? nbytes : 1]);
    if (!e.data) return nullptr;
    std::memset(e.data.get(), 0, nbytes);
    void *p = e.data.get();
    try {
        entries_.push_back(std::move(e));
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
    bytes_ += nbytes;
    if (created) *created = true;
    return p;
}

void FeedbackStore::skipped(const char *why) {
    if (warned_busy_) return;
    warned_busy_ = true;
    TERSE_LOG_INFO("error feedback skipped for a call: %s", why);
}

void FeedbackStore::release(const FeedbackKey &key) {
    for (Entry &e : entries_)
        if (e.key.same(key)) {
            if (e.pins > 0) --e.pins;
            return;
        }
}

void FeedbackStore::drop(const FeedbackKey &key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->key.same(key)) {
            bytes_ -= it->nbytes;
            entries_.erase(it);
            return;
        }
}

Status FeedbackStore::restore_entry(const FeedbackKey &key, size_t count, terse_dtype_t dtype, uint64_t last_use,
                                    const void *data) {
    const size_t esize = dtype_size(dtype);
    if (esize == 0 || !dtype_is_float(dtype))
        return set_error(TERSE_ERR_CORRUPT, "a residual of datatype %d, which has no error feedback", int(dtype));
    if (count > max_bytes_ / esize || bytes_ + count * esize > max_bytes_ || entries_.size() + 1 > max_entries_)
        return set_error(TERSE_ERR_CORRUPT, "the residuals exceed what a store keeps (%zu residuals, %zu bytes)",
                         max_entries_, max_bytes_);
    for (const Entry &e : entries_)
        if (e.key.same(key)) return set_error(TERSE_ERR_CORRUPT, "two residuals have the same key");
    Entry e;
    e.key = key;
    e.count = count;
    e.dtype = dtype;
    e.last_use = last_use;
    e.nbytes = count * esize;
    e.data.reset(new (std::nothrow) uint8_t[e.nbytes ? e.nbytes : 1]);
    if (!e.data) return set_error(TERSE_ERR_NO_MEMORY, "out of memory for a %zu-byte residual", e.nbytes);
    if (e.nbytes) std::memcpy(e.data.get(), data, e.nbytes);
    try {
        entries_.push_back(std::move(e));
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "out of memory restoring residuals");
    }
    bytes_ += count * esize;
    return TERSE_OK;
}

void FeedbackStore::clear() {
    entries_.clear();
    bytes_ = 0;
}

}  // namespace terse
