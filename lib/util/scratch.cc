#include "util/scratch.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace terse {

namespace {

// Per-thread cache of free buffers.  What a steady stream of collectives
// needs is the working set of one operation (its chunk scratch, frames and,
// with error feedback or verification, whole-input copies), so the cache
// may hold as many bytes as this thread ever had in use at once (held_peak),
// and at least kCacheMinBytes.  Two things keep it bounded over time: a
// buffer not taken again within kMaxIdle cache events (takes and gives) is
// freed, and scratch_release_cache() (a communicator freed) trims the cache
// back to kCacheMinBytes and forgets the peak.
constexpr size_t kCacheMinBytes = size_t(64) << 20;
constexpr size_t kCacheMinBuffers = 64;
constexpr uint64_t kMaxIdle = 4096;

struct Cached {
    uint8_t *p;
    size_t cap;
    uint64_t given;  // event clock when it came back
};

struct Cache {
    std::vector<Cached> free;
    size_t bytes = 0;  // in free
    // Bytes and buffers handed out through this thread and not given back
    // here (a buffer released on another thread joins that one's cache, so
    // these are estimates, clamped at 0), and their peaks.
    int64_t held = 0, held_n = 0;
    size_t held_peak = 0, held_n_peak = 0;
    uint64_t clock = 0;
    ~Cache() {
        for (auto &c : free) std::free(c.p);
    }
    size_t budget() const { return std::max(kCacheMinBytes, held_peak); }
    size_t max_buffers() const { return std::max(kCacheMinBuffers, held_n_peak); }
    void note_out(size_t cap) {
        held += int64_t(cap);
        held_n += 1;
        if (held > 0 && size_t(held) > held_peak) held_peak = size_t(held);
        if (held_n > 0 && size_t(held_n) > held_n_peak) held_n_peak = size_t(held_n);
    }
    void note_back(size_t cap) {
        held = std::max<int64_t>(0, held - int64_t(cap));
        held_n = std::max<int64_t>(0, held_n - 1);
    }
    bool room() {
        if (free.capacity() >= max_buffers()) return true;
        try {
            free.reserve(std::max(max_buffers(), 2 * free.capacity()));
        } catch (const std::bad_alloc &) {
            return false;
        }
        return true;
    }
    void drop(size_t i) {
        bytes -= free[i].cap;
        std::free(free[i].p);
        free[i] = free.back();
        free.pop_back();
    }
    uint8_t *take(size_t want, size_t *cap) {
        ++clock;
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
        ++clock;
        for (size_t i = free.size(); i-- > 0;)
            if (clock - free[i].given > kMaxIdle) drop(i);
        // The list's capacity follows the working set, so giving a buffer
        // back allocates only when the working set grew (steady-state calls
        // make no heap allocation).
        if (cap > budget() || !room()) {
            std::free(p);
            return;
        }
        while (!free.empty() && (bytes + cap > budget() || free.size() >= max_buffers())) {
            // Drop the one idle longest: the others are the working set.
            size_t oldest = 0;
            for (size_t i = 1; i < free.size(); ++i)
                if (free[i].given < free[oldest].given) oldest = i;
            drop(oldest);
        }
        free.push_back({p, cap, clock});  // within capacity: room()
        bytes += cap;
    }
    void trim() {
        held_peak = size_t(std::max<int64_t>(0, held));
        held_n_peak = size_t(std::max<int64_t>(0, held_n));
        while (!free.empty() && (bytes > budget() || free.size() > max_buffers())) {
            size_t oldest = 0;
            for (size_t i = 1; i < free.size(); ++i)
                if (free[i].given < free[oldest].given) oldest = i;
            drop(oldest);
        }
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
            return set_error(TERSE_ERR_NO_MEMORY, "terse: could not allocate %zu bytes of scratch memory", bytes);
    }
    p_ = p;
    cap_ = cap;
    t_cache.note_out(cap);
    return TERSE_OK;
}

void ScratchBuffer::reset() {
    if (p_) {
        t_cache.note_back(cap_);
        t_cache.give(p_, cap_);
    }
    p_ = nullptr;
    cap_ = 0;
}

void scratch_release_cache() { t_cache.trim(); }

size_t scratch_cached_bytes() { return t_cache.bytes; }

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
