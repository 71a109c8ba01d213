// Counter-based random numbers for stochastic rounding: the draw for element
// i of a chunk is a pure function of (seed, i), so encoding is deterministic,
// identical across runs, and the same on every code path (scalar, AVX2,
// AVX-512, CUDA).  The mixer is the usual xor-shift-multiply finalizer; only
// 32-bit integer operations, so SIMD lanes compute it exactly.
#pragma once

#include <terse/codec.h>

#include <cstdint>

namespace terse_codec {

constexpr uint32_t kHashMul1 = 0x85ebca6bu;
constexpr uint32_t kHashMul2 = 0xc2b2ae35u;
constexpr uint32_t kHashGolden = 0x9e3779b9u;

TERSE_HD inline uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= kHashMul1;
    x ^= x >> 13;
    x *= kHashMul2;
    x ^= x >> 16;
    return x;
}

// Key for the elements whose index has upper half `hi` (blocks never straddle
// a 2^32 boundary, so a block has one key).
TERSE_HD inline uint32_t hash_key(uint64_t seed, uint32_t hi) {
    return mix32(static_cast<uint32_t>(seed) ^ mix32(static_cast<uint32_t>(seed >> 32) + hi * kHashGolden));
}

// 24 random bits for the element whose index has lower half `lo`.
TERSE_HD inline uint32_t hash_bits24(uint32_t key, uint32_t lo) { return mix32(lo * kHashGolden + key) >> 8; }

// The same as a double in [0, 1), exactly representable.
TERSE_HD inline double hash_unit(uint32_t key, uint32_t lo) {
    return static_cast<double>(hash_bits24(key, lo)) * 0x1p-24;
}

}  // namespace terse_codec
