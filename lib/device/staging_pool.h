// Pinned host memory for staging device buffers, one pool per process.
//
// Per process, not per communicator: the wrappers stage a call before it
// has any communicator state (a call passed straight to the MPI library
// has none), a communicator's non-blocking calls hold several staged
// buffers at once (nb_inflight started plus the queued ones), and every
// communicator of a process draws on the same page-locked memory of the
// same machine.  So one pool, whose slots are reused by size: a slot goes
// back to the pool when its call is done, and the next call of that size
// takes it, so that steady state allocates nothing.
//
// Sizing: lazily, at the first call that needs a slot this big (sizes are
// rounded up to a power of two from 1 MiB, so that calls of nearby sizes
// share slots); every allocation is logged (info), so growth shows.
// Bound: the pool keeps at most kStagingCacheBytes of idle slots; a slot
// given back beyond that is freed (logged), so a burst of large calls does
// not pin memory for the rest of the run.  What calls hold while they run
// is theirs: as much as the device buffers they stage.
#pragma once

#include "terse_build_config.h"

#ifdef TERSE_HAVE_CUDA
#include "device/cuda_owners.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace terse::device {

// The most idle pinned memory the process pool keeps.
constexpr size_t kStagingCacheBytes = size_t(2) << 30;
// The smallest slot.
constexpr size_t kStagingMinSlot = size_t(1) << 20;

// What one staged buffer of one call holds while the call runs: pinned
// memory, a stream its copies run on, and two events that let piece j+1
// copy while piece j is used (device/chunked_copy.h).  All of one context.
struct StagingSlot {
    CUcontext ctx = nullptr;
    PinnedHostBuffer host;
    CudaStream stream;
    CudaEvent events[2];
};

struct StagingPoolCounters {
    uint64_t allocations = 0;  // slots made (growth)
    uint64_t reuses = 0;       // slots taken from the pool
    uint64_t freed = 0;        // slots freed when given back beyond the bound
    size_t idle_bytes = 0;     // pinned bytes idle in the pool now
};

class StagingPool {
public:
    StagingPool(const CudaDriver &d, size_t cache_bytes) : d_(d), cache_bytes_(cache_bytes) {}
    ~StagingPool() { clear(); }
    StagingPool(const StagingPool &) = delete;
    StagingPool &operator=(const StagingPool &) = delete;

    // A slot of ctx with at least bytes of pinned memory: the smallest idle
    // one that fits, else a new one.
    Status acquire(CUcontext ctx, size_t bytes, std::unique_ptr<StagingSlot> *out);
    // Back to the pool, or freed when the pool would keep more than its
    // bound.
    void release(std::unique_ptr<StagingSlot> slot);
    // Frees every idle slot (MPI_Finalize: while the application's contexts
    // still exist).
    void clear();

    StagingPoolCounters counters();
    const CudaDriver &driver() const { return d_; }

private:
    const CudaDriver &d_;
    size_t cache_bytes_;
    std::mutex mu_;
    std::vector<std::unique_ptr<StagingSlot>> idle_;
    StagingPoolCounters counters_;
};

// The process pool; nullptr without a CUDA driver.
StagingPool *staging_pool();

}  // namespace terse::device
#endif
