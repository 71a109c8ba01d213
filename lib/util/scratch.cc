#include "util/scratch.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace terse {

namespace {

// Per-thread cache of free buffers.  Bounded so that one huge collective
// does not pin its scratch for the rest of the run.
constexpr size_t kCacheMaxBytes = size_t(64) << 20;
constexpr size_t kCacheMaxBuffers = 64;

struct Cached {
    uint8_t *p;
    size_t cap;
};

struct Cache {
    std::vector<Cached> free;
    size_t bytes = 0;
    ~Cache() {
        for (auto &c : free) std::free(c.p);
    }
    // The list's full capacity, once, so that giving a buffer back never
    // allocates (steady-state calls make no heap allocation).
    bool room() {
        if (free.capacity() >= kCacheMaxBuffers) return true;
        try {
            free.reserve(kCacheMaxBuffers);
        } catch (const std::bad_alloc &) {
            return false;
        }
        return true;
    }
    uint8_t *take(size_t want, size_t *cap) {
        // Smallest buffer that fits, and not absurdly larger than needed.
        size_t best = free.size();
        for (size_t i = 0; i < free.size(); ++i)
            if (free[i].cap >= want && free[i].cap <= 4 * want + 4096 &&
                (best == free.size() || free[i].cap < free[best].cap))
                best = i;
        if (best == free.size()) return nullptr;
        Cached c = free[best];
        free[best] = free.back();
        free.pop_back();
        bytes -= c.cap;
        *cap = c.cap;
        return c.p;
    }
    void give(uint8_t *p, size_t cap) {
        if (cap > kCacheMaxBytes || !room()) {
            std::free(p);
            return;
        }
        while (!free.empty() && (bytes + cap > kCacheMaxBytes || free.size() >= kCacheMaxBuffers)) {
            // Drop the largest first: small buffers are the ones reused per chunk.
            auto it = std::max_element(free.begin(), free.end(),
                                       [](const Cached &a, const Cached &b) { return a.cap < b.cap; });
            bytes -= it->cap;
            std::free(it->p);
            *it = free.back();
            free.pop_back();
        }
        free.push_back({p, cap});
        bytes += cap;
    }
};

thread_local Cache t_cache;

}  // namespace

ScratchBuffer &ScratchBuffer::operator=(ScratchBuffer &&o) noexcept {
    if (this != &o) {
        reset();
        p_ = o.p_;
        cap_ = o.cap_;
        o.p_ = nullptr;
        o.cap_ = 0;
    }
    return *this;
}

Status ScratchBuffer::reserve(size_t bytes) {
    if (p_ && cap_ >= bytes) return TERSE_OK;
    reset();
    if (bytes == 0) bytes = 64;
    size_t cap = 0;
    uint8_t *p = t_cache.take(bytes, &cap);
    if (!p) {
        cap = (bytes + 63) & ~size_t(63);
        p = static_cast<uint8_t *>(std::aligned_alloc(64, cap));
        if (!p)
            return set_error(TERSE_ERR_NO_MEMORY, "terse: could not allocate %zu bytes of scratch memory",
                             bytes);
    }
    p_ = p;
    cap_ = cap;
    return TERSE_OK;
}

void ScratchBuffer::reset() {
    if (p_) t_cache.give(p_, cap_);
    p_ = nullptr;
    cap_ = 0;
}

uint8_t *FramePool::get() {
    if (!free_.empty()) {
        uint8_t *p = free_.back();
        free_.pop_back();
        return p;
    }
    ScratchBuffer b;
    if (b.reserve(size_) != TERSE_OK) return nullptr;
    uint8_t *p = b.data();
    try {
        all_.push_back(std::move(b));
        free_.reserve(all_.size());
    } catch (const std::bad_alloc &) {
        return nullptr;
    }
    return p;
}

void FramePool::put(uint8_t *buf) {
    if (buf) free_.push_back(buf);  // capacity reserved in get(): no allocation
}

uint8_t *Arena::alloc(size_t bytes) {
    bytes = (bytes + 7) & ~size_t(7);
    if (blocks_.empty() || used_ + bytes > blocks_.back().capacity()) {
        ScratchBuffer b;
        if (b.reserve(std::max(block_, bytes)) != TERSE_OK) return nullptr;
        try {
            blocks_.push_back(std::move(b));
        } catch (const std::bad_alloc &) {
            return nullptr;
        }
        used_ = 0;
    }
    uint8_t *p = blocks_.back().data() + used_;
    used_ += bytes;
    return p;
}

void Arena::clear() {
    blocks_.clear();
    used_ = 0;
}

}  // namespace terse
