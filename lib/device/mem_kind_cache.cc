#include "device/mem_kind_cache.h"

namespace terse::device {

terse_mem_kind_t MemKindCache::classify(const void *p, size_t len) {
    const uint64_t id = ops_.buffer_id(p);
    if (id == 0) {
        count(host_);
        return TERSE_MEM_HOST;
    }
    const auto addr = reinterpret_cast<uintptr_t>(p);
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (const MemRange *r = ranges_.find(addr, len)) {
            if (r->buffer_id == id) {
                count(hits_);
                return r->kind;
            }
            // Freed, and the addresses given to another allocation.
            ranges_.erase(r->start, r->size);
            count(stale_);
        }
    }
    MemRange r;
    if (!ops_.allocation(p, &r)) {
        // Freed between the two queries: nothing there the driver knows.
        count(host_);
        return TERSE_MEM_HOST;
    }
    count(misses_);
    if (r.size > 0 && r.kind != TERSE_MEM_HOST) {
        std::lock_guard<std::mutex> lock(mu_);
        ranges_.insert(r);
    }
    return r.kind;
}

MemKindCounters MemKindCache::counters() const {
    MemKindCounters c;
    c.hits = hits_.load(std::memory_order_relaxed);
    c.misses = misses_.load(std::memory_order_relaxed);
    c.stale = stale_.load(std::memory_order_relaxed);
    c.host = host_.load(std::memory_order_relaxed);
    return c;
}

size_t MemKindCache::cached_ranges() {
    std::lock_guard<std::mutex> lock(mu_);
    return ranges_.size();
}

}  // namespace terse::device
