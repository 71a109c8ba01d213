// A buffer's memory kind from device/mem_kind_cache.h, against a made-up
// driver (a table of allocations): host memory is never cached, a buffer
// in a cached range costs only the id query, memory freed and reused at
// the same addresses (another id) is queried anew, freed memory is host,
// and the LRU bound holds.
#include "device/mem_kind_cache.h"

#include <gtest/gtest.h>

#include <vector>

using terse::device::MemKindCache;
using terse::device::MemQueryOps;
using terse::device::MemRange;

namespace {

// The made-up driver: what is allocated now, and how often it was asked.
struct FakeDriver {
    std::vector<MemRange> allocations;
    uint64_t next_id = 1;
    int id_queries = 0;
    int full_queries = 0;

    uint64_t alloc(uintptr_t start, size_t size, terse_mem_kind_t kind) {
        MemRange r;
        r.start = start;
        r.size = size;
        r.kind = kind;
        r.buffer_id = next_id++;
        allocations.push_back(r);
        return r.buffer_id;
    }
    void free(uintptr_t start) {
        for (auto it = allocations.begin(); it != allocations.end(); ++it)
            if (it->start == start) {
                allocations.erase(it);
                return;
            }
        FAIL() << "free of an address not allocated";
    }
    const MemRange *holding(const void *p) const {
        const auto a = reinterpret_cast<uintptr_t>(p);
        for (const MemRange &r : allocations)
            if (a >= r.start && a < r.end()) return &r;
        return nullptr;
    }
};

FakeDriver *g_driver;

MemQueryOps fake_ops() {
    MemQueryOps ops;
    ops.buffer_id = [](const void *p) -> uint64_t {
        g_driver->id_queries++;
        const MemRange *r = g_driver->holding(p);
        return r ? r->buffer_id : 0;
    };
    ops.allocation = [](const void *p, MemRange *out) {
        g_driver->full_queries++;
        const MemRange *r = g_driver->holding(p);
        if (!r) return false;
        *out = *r;
        return true;
    };
    return ops;
}

class MemKindCacheTest : public ::testing::Test {
protected:
    void SetUp() override { g_driver = &driver; }
    void TearDown() override { g_driver = nullptr; }
    static const void *at(uintptr_t a) { return reinterpret_cast<const void *>(a); }
    FakeDriver driver;
};

TEST_F(MemKindCacheTest, HostMemoryIsNeverCached) {
    MemKindCache c(fake_ops(), 8);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(c.classify(at(0x1000), 64), TERSE_MEM_HOST);
    EXPECT_EQ(driver.id_queries, 3);
    EXPECT_EQ(driver.full_queries, 0);
    EXPECT_EQ(c.counters().host, 3u);
    EXPECT_EQ(c.cached_ranges(), 0u);
}

TEST_F(MemKindCacheTest, ABufferInACachedRangeCostsTheIdQueryOnly) {
    MemKindCache c(fake_ops(), 8);
    driver.alloc(0x10000, 0x10000, TERSE_MEM_CUDA);
    driver.alloc(0x40000, 0x1000, TERSE_MEM_CUDA_MANAGED);
    driver.alloc(0x50000, 0x1000, TERSE_MEM_CUDA_HOST);
    EXPECT_EQ(c.classify(at(0x10000), 0x10000), TERSE_MEM_CUDA);
    EXPECT_EQ(driver.full_queries, 1);
    // Anywhere inside the allocation: from the cache.
    EXPECT_EQ(c.classify(at(0x18000), 0x100), TERSE_MEM_CUDA);
    EXPECT_EQ(c.classify(at(0x1ffff), 0), TERSE_MEM_CUDA);
    EXPECT_EQ(driver.full_queries, 1);
    EXPECT_EQ(driver.id_queries, 3);
    EXPECT_EQ(c.classify(at(0x40010), 16), TERSE_MEM_CUDA_MANAGED);
    EXPECT_EQ(c.classify(at(0x50010), 16), TERSE_MEM_CUDA_HOST);
    EXPECT_EQ(c.classify(at(0x40020), 16), TERSE_MEM_CUDA_MANAGED);
    EXPECT_EQ(driver.full_queries, 3);
    EXPECT_EQ(c.counters().hits, 3u);
    EXPECT_EQ(c.counters().misses, 3u);
    EXPECT_EQ(c.cached_ranges(), 3u);
    // A buffer that runs past its allocation is asked about every time.
    EXPECT_EQ(c.classify(at(0x1ff00), 0x200), TERSE_MEM_CUDA);
    EXPECT_EQ(c.classify(at(0x1ff00), 0x200), TERSE_MEM_CUDA);
    EXPECT_EQ(driver.full_queries, 5);
}

TEST_F(MemKindCacheTest, FreedMemoryIsHostAndReusedMemoryIsQueriedAnew) {
    MemKindCache c(fake_ops(), 8);
    driver.alloc(0x10000, 0x10000, TERSE_MEM_CUDA);
    EXPECT_EQ(c.classify(at(0x10000), 64), TERSE_MEM_CUDA);
    // Freed: the driver knows nothing there, whatever the cache holds.
    driver.free(0x10000);
    EXPECT_EQ(c.classify(at(0x10000), 64), TERSE_MEM_HOST);
    // Reused by an allocation of another kind and size: another id.
    driver.alloc(0x10000, 0x1000, TERSE_MEM_CUDA_MANAGED);
    EXPECT_EQ(c.classify(at(0x10000), 64), TERSE_MEM_CUDA_MANAGED);
    EXPECT_EQ(c.counters().stale, 1u);
    EXPECT_EQ(c.classify(at(0x10800), 64), TERSE_MEM_CUDA_MANAGED);
    EXPECT_EQ(c.counters().hits, 1u);
    // The old range's tail is no longer cached as device memory.
    driver.free(0x10000);
    driver.alloc(0x10000, 0x800, TERSE_MEM_CUDA_HOST);
    driver.alloc(0x18000, 0x8000, TERSE_MEM_CUDA);
    EXPECT_EQ(c.classify(at(0x10000), 64), TERSE_MEM_CUDA_HOST);
    EXPECT_EQ(c.classify(at(0x18000), 64), TERSE_MEM_CUDA);
    EXPECT_EQ(c.counters().stale, 2u);
    EXPECT_EQ(c.cached_ranges(), 2u);
}

TEST_F(MemKindCacheTest, HoldsAtMostItsCapacity) {
    MemKindCache c(fake_ops(), 2);
    driver.alloc(0x10000, 0x1000, TERSE_MEM_CUDA);
    driver.alloc(0x20000, 0x1000, TERSE_MEM_CUDA);
    driver.alloc(0x30000, 0x1000, TERSE_MEM_CUDA);
    for (uintptr_t a : {0x10000, 0x20000, 0x30000}) EXPECT_EQ(c.classify(at(a), 8), TERSE_MEM_CUDA);
    EXPECT_EQ(c.cached_ranges(), 2u);
    // 0x10000 went first; 0x20000 and 0x30000 are still cached.
    const int before = driver.full_queries;
    EXPECT_EQ(c.classify(at(0x30000), 8), TERSE_MEM_CUDA);
    EXPECT_EQ(c.classify(at(0x20000), 8), TERSE_MEM_CUDA);
    EXPECT_EQ(driver.full_queries, before);
    EXPECT_EQ(c.classify(at(0x10000), 8), TERSE_MEM_CUDA);
    EXPECT_EQ(driver.full_queries, before + 1);
    EXPECT_EQ(c.cached_ranges(), 2u);
}

}  // namespace
