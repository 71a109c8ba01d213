#include "device/mem_kind.h"

#include "device/cuda_driver.h"
#include "device/cuda_mem_query.h"
#include "device/mem_kind_cache.h"

namespace terse::device {

namespace detail {
std::atomic<int> g_driver_state{0};
}

namespace {

std::atomic<uint64_t> g_device_calls_passed{0};

#ifdef TERSE_HAVE_CUDA
// Allocations a process reduces from are few and long-lived (a framework's
// caching allocator hands out slices of a few large segments).
constexpr size_t kCachedRanges = 64;

MemKindCache &process_cache() {
    static MemKindCache cache(cuda_mem_query_ops(), kCachedRanges);
    return cache;
}
#endif

}  // namespace

bool driver_present() {
#ifdef TERSE_HAVE_CUDA
    const bool present = cuda_driver() != nullptr;
    detail::g_driver_state.store(present ? 2 : 1, std::memory_order_relaxed);
    return present;
#else
    return false;
#endif
}

terse_mem_kind_t detail::buffer_mem_kind_queried(const void *p, size_t bytes) {
#ifdef TERSE_HAVE_CUDA
    if (g_driver_state.load(std::memory_order_relaxed) == 0 && !driver_present()) return TERSE_MEM_HOST;
    return process_cache().classify(p, bytes);
#else
    (void)p, (void)bytes;
    return TERSE_MEM_HOST;
#endif
}

MemKindCounters mem_kind_counters() {
#ifdef TERSE_HAVE_CUDA
    if (driver_loaded()) return process_cache().counters();
#endif
    return MemKindCounters{};
}

void count_device_call_passed() { g_device_calls_passed.fetch_add(1, std::memory_order_relaxed); }
uint64_t device_calls_passed() { return g_device_calls_passed.load(std::memory_order_relaxed); }

}  // namespace terse::device
