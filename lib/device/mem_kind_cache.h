// The memory kind of a buffer, from a query of the driver and the ranges it
// reported before (MemRangeCache).  The driver is reached only through
// MemQueryOps, so that tests drive the cache with a made-up allocator.
//
// Freed and reused memory: a range is trusted only while the allocation's
// BUFFER_ID (unique per allocation for the life of the process) is the one
// cached.  Every classification asks the driver for that one attribute --
// which also tells host memory apart: the driver knows no id for it -- and
// a cached range with another id is dropped and queried anew.  The cache
// spares the multi-attribute query (kind, managed, range) on every call;
// it does not spare the id query, by design:
//  - invalidating on intercepted frees (cudaFree, cuMemFree...) alone, as
//    UCX's memtype cache does with its memory hooks, misses every free that
//    does not go through a dynamic symbol terse can interpose: the static
//    CUDA runtime (nvcc's default), pointers from cuGetProcAddress, stream-
//    ordered pools (cudaFreeAsync) and virtual memory management
//    (cuMemUnmap: PyTorch's expandable segments);
//  - a stale answer is not a slowdown but a crash: device memory taken for
//    host memory reaches the CPU code or an MPI library that cannot read it.
// One single-attribute query per buffer (its cost with and without the
// cache is printed by tests/gpu/test_gpu_mem_kind on a GPU machine); a
// process without a driver pays none of it (device/mem_kind.h).
//
// Thread-safe: the ranges are held under a mutex, never across a query.
#pragma once

#include "device/mem_range_cache.h"

#include <terse/codec.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace terse::device {

// What the cache asks of the driver (cuda_mem_query.h; tests' fakes).
struct MemQueryOps {
    // The id of the allocation holding p; 0 when the driver knows none
    // (host memory, CUDA not initialised, or the query failed).
    uint64_t (*buffer_id)(const void *p);
    // The allocation holding p: kind, id and range (size 0 when the driver
    // reports no range).  False: the driver knows none.
    bool (*allocation)(const void *p, MemRange *out);
};

struct MemKindCounters {
    uint64_t hits = 0;    // answered from a cached range
    uint64_t misses = 0;  // CUDA memory queried in full
    uint64_t stale = 0;   // cached ranges whose id had changed (freed, reused)
    uint64_t host = 0;    // buffers the driver knows nothing of
};

class MemKindCache {
public:
    MemKindCache(MemQueryOps ops, size_t capacity) : ops_(ops), ranges_(capacity) {}

    // The kind of the buffer [p, p + len): the kind of the allocation
    // holding p (a buffer running past it is queried every time).
    terse_mem_kind_t classify(const void *p, size_t len);

    MemKindCounters counters() const;
    size_t cached_ranges();

private:
    void count(std::atomic<uint64_t> &c) { c.fetch_add(1, std::memory_order_relaxed); }

    MemQueryOps ops_;
    std::mutex mu_;
    MemRangeCache ranges_;
    std::atomic<uint64_t> hits_{0}, misses_{0}, stale_{0}, host_{0};
};

}  // namespace terse::device
