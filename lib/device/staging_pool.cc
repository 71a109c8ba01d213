#include "device/staging_pool.h"

#ifdef TERSE_HAVE_CUDA
#include "util/log.h"

#include <bit>

namespace terse::device {

namespace {

size_t slot_size(size_t bytes) { return bytes <= kStagingMinSlot ? kStagingMinSlot : std::bit_ceil(bytes); }

Status make_slot(const CudaDriver &d, CUcontext ctx, size_t bytes, std::unique_ptr<StagingSlot> *out) {
    auto slot = std::make_unique<StagingSlot>();
    slot->ctx = ctx;
    Status s = slot->host.allocate(d, ctx, bytes);
    if (s == TERSE_OK) s = slot->stream.create(d, ctx);
    if (s == TERSE_OK) s = slot->events[0].create(d, ctx);
    if (s == TERSE_OK) s = slot->events[1].create(d, ctx);
    if (s != TERSE_OK) return s;
    *out = std::move(slot);
    return TERSE_OK;
}

}  // namespace

Status StagingPool::acquire(CUcontext ctx, size_t bytes, std::unique_ptr<StagingSlot> *out) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        auto best = idle_.end();
        for (auto it = idle_.begin(); it != idle_.end(); ++it)
            if ((*it)->ctx == ctx && (*it)->host.size() >= bytes &&
                (best == idle_.end() || (*it)->host.size() < (*best)->host.size()))
                best = it;
        if (best != idle_.end()) {
            *out = std::move(*best);
            idle_.erase(best);
            counters_.idle_bytes -= (*out)->host.size();
            ++counters_.reuses;
            return TERSE_OK;
        }
    }
    const size_t size = slot_size(bytes);
    Status s = make_slot(d_, ctx, size, out);
    if (s != TERSE_OK) return s;
    uint64_t n;
    {
        std::lock_guard<std::mutex> lk(mu_);
        n = ++counters_.allocations;
    }
    TERSE_LOG_INFO("staging: pinned host slot %llu of %zu bytes allocated (for a %zu-byte device buffer)",
                   (unsigned long long)n, size, bytes);
    return TERSE_OK;
}

void StagingPool::release(std::unique_ptr<StagingSlot> slot) {
    if (!slot) return;
    std::lock_guard<std::mutex> lk(mu_);
    if (counters_.idle_bytes + slot->host.size() > cache_bytes_) {
        ++counters_.freed;
        TERSE_LOG_INFO("staging: pinned host slot of %zu bytes freed (the pool keeps at most %zu idle bytes)",
                       slot->host.size(), cache_bytes_);
        return;  // slot's owners release it here
    }
    counters_.idle_bytes += slot->host.size();
    idle_.push_back(std::move(slot));
}

void StagingPool::clear() {
    std::vector<std::unique_ptr<StagingSlot>> idle;
    {
        std::lock_guard<std::mutex> lk(mu_);
        idle.swap(idle_);
        counters_.idle_bytes = 0;
    }
}

StagingPoolCounters StagingPool::counters() {
    std::lock_guard<std::mutex> lk(mu_);
    return counters_;
}

StagingPool *staging_pool() {
    const CudaDriver *d = cuda_driver();
    if (!d) return nullptr;
    // Never destroyed: at exit the application's CUDA teardown may have
    // run already (MPI_Finalize clears the idle slots while it has not).
    static StagingPool *pool = new StagingPool(*d, kStagingCacheBytes);
    return pool;
}

}  // namespace terse::device
#endif
