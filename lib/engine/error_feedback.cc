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

void FeedbackStore::evict_for(size_t incoming, const void *keep) {
    while (!entries_.empty() && (entries_.size() + 1 > max_entries_ || bytes_ + incoming > max_bytes_)) {
        auto victim = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (it->key != keep && (victim == entries_.end() || it->last_use < victim->last_use)) victim = it;
        if (victim == entries_.end()) break;
        bytes_ -= victim->nbytes;
        entries_.erase(victim);
    }
}

void *FeedbackStore::acquire(const void *key, size_t count, terse_dtype_t dtype, bool *created) {
    if (created) *created = false;
    const size_t nbytes = count * dtype_size(dtype);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->key != key) continue;
        if (it->count == count && it->dtype == dtype) {
            it->last_use = ++clock_;
            return it->data.get();
        }
        // Same address, different shape: a different buffer now.
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
    evict_for(nbytes, key);
    Entry e;
    e.key = key;
    e.count = count;
    e.dtype = dtype;
    e.last_use = ++clock_;
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

void FeedbackStore::drop(const void *key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->key == key) {
            bytes_ -= it->nbytes;
            entries_.erase(it);
            return;
        }
}

void FeedbackStore::clear() {
    entries_.clear();
    bytes_ = 0;
}

}  // namespace terse
