// The memory kind of an intercepted call's buffers, for the wrappers that
// build CollArgs (engine/coll_args.h: `mem`).
//
// Without a CUDA build, or on a machine without a driver
// (device/cuda_driver.h), every buffer is host memory and asking costs one
// predictable branch on a flag.  With a driver, each buffer costs the query
// of device/mem_kind_cache.h.  The first call loads the driver.
#pragma once

#include "device/mem_kind_cache.h"

#include <terse/codec.h>

#include "terse_build_config.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace terse::device {

namespace detail {
// 0: not looked for yet; 1: no driver; 2: a driver.
extern std::atomic<int> g_driver_state __attribute__((visibility("hidden")));
terse_mem_kind_t buffer_mem_kind_queried(const void *p, size_t bytes);
}  // namespace detail

// Whether every buffer is host memory for certain: no CUDA build, or an
// earlier call found no driver (loads nothing; false until one has looked).
inline bool host_memory_only() {
#ifdef TERSE_HAVE_CUDA
    return detail::g_driver_state.load(std::memory_order_relaxed) == 1;
#else
    return true;
#endif
}

// The kind of [p, p + bytes) (bytes 0: the byte at p; nullptr: host).
inline terse_mem_kind_t buffer_mem_kind(const void *p, size_t bytes) {
    if (__builtin_expect(host_memory_only(), 1) || !p) return TERSE_MEM_HOST;
    return detail::buffer_mem_kind_queried(p, bytes);
}

// Of a call's two buffers, the kind the call is taken to be in: the one
// that allows the fewest readers (device, then managed, then pinned host,
// then host), so that nothing reads a buffer it cannot.
constexpr terse_mem_kind_t mem_kind_of_call(terse_mem_kind_t a, terse_mem_kind_t b) {
    auto rank = [](terse_mem_kind_t k) {
        return k == TERSE_MEM_CUDA ? 3 : k == TERSE_MEM_CUDA_MANAGED ? 2 : k == TERSE_MEM_CUDA_HOST ? 1 : 0;
    };
    return rank(a) >= rank(b) ? a : b;
}

// The process cache's counters (all zero without a driver).
MemKindCounters mem_kind_counters();

// Whether a CUDA driver is loaded (loads it on the first call).
bool driver_present();
// Whether a driver was found by an earlier call (loads nothing).
inline bool driver_loaded() { return detail::g_driver_state.load(std::memory_order_relaxed) == 2; }

// Device-memory calls that went to the MPI library as they were (not
// staged through host memory): counted by the wrappers, printed in the
// TERSE_STATS process line.
void count_device_call_passed();
uint64_t device_calls_passed();

}  // namespace terse::device
