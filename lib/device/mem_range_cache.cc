#include "device/mem_range_cache.h"

#include <algorithm>

namespace terse::device {

MemRangeCache::MemRangeCache(size_t capacity) : capacity_(capacity ? capacity : 1) {
    entries_.reserve(capacity_);
}

std::vector<MemRangeCache::Entry>::iterator MemRangeCache::first_ending_after(uintptr_t addr) {
    return std::upper_bound(entries_.begin(), entries_.end(), addr,
                            [](uintptr_t a, const Entry &e) { return a < e.range.end(); });
}

const MemRange *MemRangeCache::find(uintptr_t addr, size_t len) {
    auto it = first_ending_after(addr);
    if (it == entries_.end() || it->range.start > addr) return nullptr;
    // The whole buffer, not just its first byte: a buffer running past its
    // range is not one allocation (or the range is stale), ask again.
    if (len > it->range.end() - addr) return nullptr;
    it->last_used = ++clock_;
    return &it->range;
}

void MemRangeCache::erase(uintptr_t addr, size_t len) {
    const uintptr_t end = addr + (len ? len : 1);
    auto first = first_ending_after(addr);
    auto last = first;
    while (last != entries_.end() && last->range.start < end) ++last;
    entries_.erase(first, last);
}

void MemRangeCache::insert(const MemRange &r) {
    if (r.size == 0) return;
    erase(r.start, r.size);
    if (entries_.size() >= capacity_) {
        auto lru = std::min_element(entries_.begin(), entries_.end(),
                                    [](const Entry &a, const Entry &b) { return a.last_used < b.last_used; });
        entries_.erase(lru);
    }
    auto at = first_ending_after(r.start);
    entries_.insert(at, Entry{r, ++clock_});
}

}  // namespace terse::device
