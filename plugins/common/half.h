// Scalar conversions between float32 and the 16-bit float formats
// (IEEE binary16 and bfloat16), round to nearest even, subnormals kept.
// They define the bits the SIMD paths must reproduce: the AVX2/AVX-512
// conversions (vcvtph2ps / vcvtps2ph with imm round-to-nearest) agree with
// these for every input, including NaN payloads (quieted, upper payload
// bits kept).  TERSE_HD so the same code serves the CUDA build.
#pragma once

#include <terse/codec.h>

#include <cstdint>
#include <cstring>

namespace terse_codec {

TERSE_HD inline uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

TERSE_HD inline float f32_from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

TERSE_HD inline uint64_t f64_bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}

TERSE_HD inline double f64_from_bits(uint64_t u) {
    double d;
    std::memcpy(&d, &u, sizeof d);
    return d;
}

TERSE_HD inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f)  // inf, or NaN made quiet
        return f32_from_bits(sign | 0x7f800000u | (mant ? 0x400000u | (mant << 13) : 0u));
    if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
        const float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;
        return f32_from_bits(sign | f32_bits(mag));
    }
    return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

TERSE_HD inline uint16_t f32_to_f16(float f) {
    const uint32_t x = f32_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)  // NaN: quiet, keep the upper payload bits
        return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u)  // >= 65520 rounds to infinity
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (ax >= 0x38800000u) {  // normal half
        uint32_t h = (ax - 0x38000000u) >> 13;
        const uint32_t rest = ax & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
        return static_cast<uint16_t>(sign | h);
    }
    if (ax <= 0x33000000u)  // <= 2^-25: rounds to zero (the tie goes to even 0)
        return static_cast<uint16_t>(sign);
    // Subnormal half: value / 2^-24, rounded to nearest even.
    const uint32_t e = ax >> 23;
    const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14 .. 24
    uint32_t h = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (h & 1u))) h++;
    return static_cast<uint16_t>(sign | h);
}

TERSE_HD inline float bf16_to_f32(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

TERSE_HD inline uint16_t f32_to_bf16(float f) {
    const uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)  // NaN: quiet it, keep the upper payload bits
        return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// Largest finite values, used to saturate decoded sums.
constexpr float kF16Max = 65504.0f;
constexpr float kBF16Max = 3.38953139e38f;  // 0x7f7f0000

}  // namespace terse_codec
