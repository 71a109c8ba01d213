// The one full pass of top-k selection: collect, in index order, the indices
// of all elements whose key (|x| as an unsigned integer, see
// topk_float_bits.h) is >= lo.  SIMD kernels (AVX-512, AVX2) are chosen once
// at run time from the CPU, so one build runs on any x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace terse_topk {

// Slots past cap that collect() may write: size out[] as cap + kCollectSlack.
constexpr size_t kCollectSlack = 72;

// Writes the indices to out and returns how many there are, or any value
// > cap as soon as more than cap were found (the pass stops early then).
size_t collect(const uint32_t *x, size_t n, uint32_t lo, uint32_t *out, size_t cap);
size_t collect(const uint64_t *x, size_t n, uint64_t lo, uint32_t *out, size_t cap);
size_t collect(const uint16_t *x, size_t n, uint16_t lo, uint32_t *out, size_t cap);

// Which kernel collect() uses on this CPU: "avx512", "avx2" or "scalar".
const char *collect_isa();

// Tests only: make collect() use a narrower kernel than the CPU's best
// ("avx2", "scalar") or the best again ("avx512").  Returns false if this CPU
// cannot run it.  Not thread-safe; the plugin itself never calls it.
bool collect_use_isa(const char *name);

}  // namespace terse_topk
