// The allocation-range cache of device/mem_range_cache.h: lookups inside
// and outside ranges, buffers that run past a range, overlapping inserts
// (addresses reused by another allocation), erasing and the LRU bound.
#include "device/mem_range_cache.h"

#include <gtest/gtest.h>

using terse::device::MemRange;
using terse::device::MemRangeCache;

namespace {

MemRange range(uintptr_t start, size_t size, terse_mem_kind_t kind, uint64_t id) {
    MemRange r;
    r.start = start;
    r.size = size;
    r.kind = kind;
    r.buffer_id = id;
    return r;
}

TEST(MemRangeCache, FindsBuffersInsideARangeOnly) {
    MemRangeCache c(8);
    c.insert(range(0x1000, 0x1000, TERSE_MEM_CUDA, 1));
    c.insert(range(0x4000, 0x100, TERSE_MEM_CUDA_MANAGED, 2));
    ASSERT_NE(c.find(0x1000, 0x1000), nullptr);
    EXPECT_EQ(c.find(0x1000, 0x1000)->buffer_id, 1u);
    EXPECT_EQ(c.find(0x1800, 16)->kind, TERSE_MEM_CUDA);
    EXPECT_EQ(c.find(0x1fff, 0)->buffer_id, 1u);  // len 0: the byte at addr
    EXPECT_EQ(c.find(0x40ff, 1)->kind, TERSE_MEM_CUDA_MANAGED);
    EXPECT_EQ(c.find(0x0fff, 1), nullptr);  // just before
    EXPECT_EQ(c.find(0x2000, 1), nullptr);  // just after (end is exclusive)
    EXPECT_EQ(c.find(0x3000, 8), nullptr);  // between ranges
    EXPECT_EQ(c.find(0x4100, 1), nullptr);
    // A buffer that starts inside a range but runs past it is not that
    // allocation's.
    EXPECT_EQ(c.find(0x1f00, 0x101), nullptr);
    EXPECT_NE(c.find(0x1f00, 0x100), nullptr);
}

TEST(MemRangeCache, AnOverlappingInsertReplacesWhatItOverlaps) {
    MemRangeCache c(8);
    c.insert(range(0x1000, 0x1000, TERSE_MEM_CUDA, 1));
    c.insert(range(0x3000, 0x1000, TERSE_MEM_CUDA, 2));
    c.insert(range(0x6000, 0x1000, TERSE_MEM_CUDA, 3));
    // Both first ranges freed, their addresses given to one larger
    // allocation of another kind.
    c.insert(range(0x1800, 0x2000, TERSE_MEM_CUDA_HOST, 4));
    EXPECT_EQ(c.size(), 2u);
    EXPECT_EQ(c.find(0x1000, 1), nullptr);
    EXPECT_EQ(c.find(0x1800, 1)->buffer_id, 4u);
    EXPECT_EQ(c.find(0x37ff, 1)->kind, TERSE_MEM_CUDA_HOST);
    EXPECT_EQ(c.find(0x3800, 1), nullptr);
    EXPECT_EQ(c.find(0x6000, 1)->buffer_id, 3u);
    // Touching is not overlapping.
    c.insert(range(0x5000, 0x1000, TERSE_MEM_CUDA, 5));
    EXPECT_EQ(c.size(), 3u);
    EXPECT_EQ(c.find(0x6000, 1)->buffer_id, 3u);
    EXPECT_EQ(c.find(0x5fff, 1)->buffer_id, 5u);
    // An empty range is not cached.
    c.insert(range(0x9000, 0, TERSE_MEM_CUDA, 6));
    EXPECT_EQ(c.size(), 3u);
}

TEST(MemRangeCache, EraseDropsEveryOverlappingRange) {
    MemRangeCache c(8);
    c.insert(range(0x1000, 0x1000, TERSE_MEM_CUDA, 1));
    c.insert(range(0x2000, 0x1000, TERSE_MEM_CUDA, 2));
    c.insert(range(0x3000, 0x1000, TERSE_MEM_CUDA, 3));
    c.erase(0x2fff, 2);  // the last byte of 2 and the first of 3
    EXPECT_EQ(c.size(), 1u);
    EXPECT_NE(c.find(0x1000, 1), nullptr);
    c.erase(0x1000, 0);  // len 0: the byte at addr
    EXPECT_EQ(c.size(), 0u);
    c.erase(0x1000, 0x10000);  // nothing left: no effect
    EXPECT_EQ(c.size(), 0u);
}

TEST(MemRangeCache, EvictsTheLeastRecentlyFoundWhenFull) {
    MemRangeCache c(3);
    EXPECT_EQ(c.capacity(), 3u);
    c.insert(range(0x1000, 0x100, TERSE_MEM_CUDA, 1));
    c.insert(range(0x2000, 0x100, TERSE_MEM_CUDA, 2));
    c.insert(range(0x3000, 0x100, TERSE_MEM_CUDA, 3));
    ASSERT_NE(c.find(0x1000, 1), nullptr);  // 2 is now the least recent
    c.insert(range(0x4000, 0x100, TERSE_MEM_CUDA, 4));
    EXPECT_EQ(c.size(), 3u);
    EXPECT_EQ(c.find(0x2000, 1), nullptr);
    EXPECT_NE(c.find(0x1000, 1), nullptr);
    EXPECT_NE(c.find(0x3000, 1), nullptr);
    EXPECT_NE(c.find(0x4000, 1), nullptr);
    // 1, 3 and 4 were found in that order: 1 is now the least recent.
    c.insert(range(0x5000, 0x100, TERSE_MEM_CUDA, 5));
    EXPECT_EQ(c.find(0x1000, 1), nullptr);
    EXPECT_EQ(c.size(), 3u);
    // Capacity 0 still holds the latest range.
    MemRangeCache one(0);
    one.insert(range(0x1000, 0x100, TERSE_MEM_CUDA, 1));
    one.insert(range(0x2000, 0x100, TERSE_MEM_CUDA, 2));
    EXPECT_EQ(one.size(), 1u);
    EXPECT_EQ(one.find(0x2000, 1)->buffer_id, 2u);
}

}  // namespace
