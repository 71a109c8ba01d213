// Memory kinds of allocation ranges, as the CUDA driver last reported them:
// a small, bounded map from address ranges to what lives there, so that a
// buffer inside a range already seen is classified without asking for the
// range again.  Pure bookkeeping (no driver, no lock: MemKindCache holds
// it under its own), so that tests drive it with made-up ranges.
//
// Ranges never overlap: inserting one drops every cached range it
// overlaps (the memory there was freed and the addresses reused), and the
// least recently found range goes when the cache is full.  A sorted
// vector: lookups are a binary search, insertions (misses, rare in steady
// state) move at most the capacity's worth of entries.
#pragma once

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace terse::device {

// One allocation as the driver describes it (CU_POINTER_ATTRIBUTE_RANGE_*
// and _BUFFER_ID): [start, start + size), its kind and the id the driver
// gives it, unique per allocation for the life of the process.
struct MemRange {
    uintptr_t start = 0;
    size_t size = 0;
    terse_mem_kind_t kind = TERSE_MEM_HOST;
    uint64_t buffer_id = 0;

    uintptr_t end() const { return start + size; }
};

class MemRangeCache {
public:
    explicit MemRangeCache(size_t capacity);

    // The cached range holding all of [addr, addr + len) (len 0: the byte
    // at addr), marked as just used; nullptr when no cached range does.
    const MemRange *find(uintptr_t addr, size_t len);
    // Cache r (size > 0), dropping every cached range it overlaps and,
    // when full, the least recently found one.
    void insert(const MemRange &r);
    // Drop every cached range that overlaps [addr, addr + len).
    void erase(uintptr_t addr, size_t len);
    void clear() { entries_.clear(); }

    size_t size() const { return entries_.size(); }
    size_t capacity() const { return capacity_; }

private:
    struct Entry {
        MemRange range;
        uint64_t last_used;
    };
    // First entry whose range ends after addr (ranges are sorted and
    // disjoint, so ends are sorted too).
    std::vector<Entry>::iterator first_ending_after(uintptr_t addr);

    std::vector<Entry> entries_;
    size_t capacity_;
    uint64_t clock_ = 0;
};

}  // namespace terse::device
