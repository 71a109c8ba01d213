// Element types the lossy codecs read and write, as tag types with the
// per-element conversions every code path shares: load to double (exact),
// the magnitude bit pattern used for max-|x| statistics (a NaN or Inf shows
// as a pattern >= the infinity pattern), and the two ways of writing a
// decoded double back:
//   store:      dst = v, saturated to the largest finite value of the type
//               (a decoded sum is always finite; saturation keeps it so);
//   accumulate: dst = dst + v, one rounding to the type (two for the 16-bit
//               types: double -> float -> 16-bit), ordinary IEEE overflow.
#pragma once

#include "half.h"

#include <terse/codec.h>

#include <cfloat>
#include <cmath>
#include <cstdint>

namespace terse_codec {

struct F16 {
    uint16_t bits;
};
struct BF16 {
    uint16_t bits;
};

template <typename T>
struct Elem;

template <>
struct Elem<float> {
    using Bits = uint32_t;
    static constexpr Bits kInfBits = 0x7f800000u;
    static constexpr terse_dtype_t kDtype = TERSE_DTYPE_FLOAT32;
    TERSE_HD static double load(const float *p) { return static_cast<double>(*p); }
    TERSE_HD static Bits abs_bits(const float *p) { return f32_bits(*p) & 0x7fffffffu; }
    TERSE_HD static double from_abs_bits(Bits b) {
        return b >= kInfBits ? static_cast<double>(INFINITY) : static_cast<double>(f32_from_bits(b));
    }
    TERSE_HD static void store(float *p, double v) {
        v = v > FLT_MAX ? FLT_MAX : (v < -FLT_MAX ? -FLT_MAX : v);
        *p = static_cast<float>(v);
    }
    // put_sum: *p = old + v rounded to the type, old being load(p); split
    // from accumulate so a kernel can issue its loads ahead of its stores.
    TERSE_HD static void put_sum(float *p, double old, double v) { *p = static_cast<float>(old + v); }
    TERSE_HD static void accumulate(float *p, double v) { put_sum(p, load(p), v); }
};

template <>
struct Elem<double> {
    using Bits = uint64_t;
    static constexpr Bits kInfBits = 0x7ff0000000000000ull;
    static constexpr terse_dtype_t kDtype = TERSE_DTYPE_FLOAT64;
    TERSE_HD static double load(const double *p) { return *p; }
    TERSE_HD static Bits abs_bits(const double *p) { return f64_bits(*p) & 0x7fffffffffffffffull; }
    TERSE_HD static double from_abs_bits(Bits b) {
        return b >= kInfBits ? static_cast<double>(INFINITY) : f64_from_bits(b);
    }
    TERSE_HD static void store(double *p, double v) {
        *p = v > DBL_MAX ? DBL_MAX : (v < -DBL_MAX ? -DBL_MAX : v);
    }
    TERSE_HD static void put_sum(double *p, double old, double v) { *p = old + v; }
    TERSE_HD static void accumulate(double *p, double v) { put_sum(p, load(p), v); }
};

template <>
struct Elem<F16> {
    using Bits = uint16_t;
    static constexpr Bits kInfBits = 0x7c00u;
    static constexpr terse_dtype_t kDtype = TERSE_DTYPE_FLOAT16;
    TERSE_HD static double load(const F16 *p) { return static_cast<double>(f16_to_f32(p->bits)); }
    TERSE_HD static Bits abs_bits(const F16 *p) { return static_cast<Bits>(p->bits & 0x7fffu); }
    TERSE_HD static double from_abs_bits(Bits b) {
        return b >= kInfBits ? static_cast<double>(INFINITY) : static_cast<double>(f16_to_f32(b));
    }
    TERSE_HD static void store(F16 *p, double v) {
        v = v > kF16Max ? kF16Max : (v < -kF16Max ? -kF16Max : v);
        p->bits = f32_to_f16(static_cast<float>(v));
    }
    TERSE_HD static void put_sum(F16 *p, double old, double v) {
        p->bits = f32_to_f16(static_cast<float>(old + v));
    }
    TERSE_HD static void accumulate(F16 *p, double v) { put_sum(p, load(p), v); }
};

template <>
struct Elem<BF16> {
    using Bits = uint16_t;
    static constexpr Bits kInfBits = 0x7f80u;
    static constexpr terse_dtype_t kDtype = TERSE_DTYPE_BFLOAT16;
    TERSE_HD static double load(const BF16 *p) { return static_cast<double>(bf16_to_f32(p->bits)); }
    TERSE_HD static Bits abs_bits(const BF16 *p) { return static_cast<Bits>(p->bits & 0x7fffu); }
    TERSE_HD static double from_abs_bits(Bits b) {
        return b >= kInfBits ? static_cast<double>(INFINITY) : static_cast<double>(bf16_to_f32(b));
    }
    TERSE_HD static void store(BF16 *p, double v) {
        v = v > kBF16Max ? kBF16Max : (v < -kBF16Max ? -kBF16Max : v);
        p->bits = f32_to_bf16(static_cast<float>(v));
    }
    TERSE_HD static void put_sum(BF16 *p, double old, double v) {
        p->bits = f32_to_bf16(static_cast<float>(old + v));
    }
    TERSE_HD static void accumulate(BF16 *p, double v) { put_sum(p, load(p), v); }
};

inline size_t dtype_bytes(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return 4;
    case TERSE_DTYPE_FLOAT64: return 8;
    case TERSE_DTYPE_FLOAT16:
    case TERSE_DTYPE_BFLOAT16: return 2;
    default: return 0;
    }
}

// Index of a floating dtype in per-dtype tables: f32, f64, f16, bf16; -1 if not one.
inline int dtype_index(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return 0;
    case TERSE_DTYPE_FLOAT64: return 1;
    case TERSE_DTYPE_FLOAT16: return 2;
    case TERSE_DTYPE_BFLOAT16: return 3;
    default: return -1;
    }
}

constexpr uint32_t kLossyDtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64) |
                                  TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT16) | TERSE_DTYPE_BIT(TERSE_DTYPE_BFLOAT16);

}  // namespace terse_codec
