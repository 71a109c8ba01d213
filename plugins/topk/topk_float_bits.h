// Element types topk handles, seen as unsigned integers.  Clearing the sign
// bit gives a "key" whose integer order is the order of |x| for every finite
// value, so selection compares integers and never meets float semantics.
// Keys at or above inf_key are Inf or NaN.
#pragma once

#include <terse/codec.h>

#include <cstdint>
#include <cstring>

namespace terse_topk {

template <typename U>
TERSE_HD constexpr U abs_mask() {
    return static_cast<U>(static_cast<U>(~U(0)) >> 1);
}  // no int promotion

// Key of the first Inf of each dtype (exponent all ones, mantissa zero).
inline uint64_t inf_key(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return 0x7f800000u;
    case TERSE_DTYPE_FLOAT64: return 0x7ff0000000000000ull;
    case TERSE_DTYPE_FLOAT16: return 0x7c00u;
    case TERSE_DTYPE_BFLOAT16: return 0x7f80u;
    default: return 0;
    }
}

inline size_t value_size(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return 4;
    case TERSE_DTYPE_FLOAT64: return 8;
    case TERSE_DTYPE_FLOAT16:
    case TERSE_DTYPE_BFLOAT16: return 2;
    default: return 0;
    }
}

// IEEE binary16 <-> binary32, round to nearest even, subnormals kept.
TERSE_HD inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {  // subnormal half: normalise
        exp = 113;
        while (!(man & 0x400u)) {
            man <<= 1;
            exp--;
        }
        bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

TERSE_HD inline uint16_t float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)  // Inf or NaN (NaN keeps a quiet payload bit)
        return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: overflow
    if (ax < 0x38800000u) {                                  // below the smallest normal half: subnormal or zero
        if (ax < 0x33000000u) return sign;                   // < 2^-25 rounds to zero
        const uint32_t man = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - (ax >> 23);  // 14..24
        uint32_t h = man >> shift;
        const uint32_t rem = man & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return uint16_t(sign | h);
    }
    uint32_t h = ((ax - 0x38000000u) >> 13);
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return uint16_t(sign | h);
}

TERSE_HD inline float bf16_to_float(uint16_t b) {
    const uint32_t bits = uint32_t(b) << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

TERSE_HD inline uint16_t float_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return uint16_t(x >> 16);
}

}  // namespace terse_topk
