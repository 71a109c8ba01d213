// Reduction kernels: one restrict-qualified loop per (type, op, shape) so
// that the compiler vectorises each.  GCC 12 at -O2 leaves loops with an
// unknown trip count scalar; these loops are the engine's hot path, so this
// file asks for the vectoriser explicitly (checked with -fopt-info-vec).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize")
#endif
#include "engine/reduce_kernels.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace terse {

// ---------------------------------------------------------------- 16-bit floats

float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);  // Inf / NaN (payload kept)
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                mant <<= 1;
                ++e;
            } while (!(mant & 0x400u));
            bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3FFu) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t float_to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) {  // Inf or NaN; NaN stays a (quiet) NaN
        return ax > 0x7F800000u ? uint16_t(sign | 0x7E00u | ((ax >> 13) & 0x3FFu)) : uint16_t(sign | 0x7C00u);
    }
    if (ax >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to >= 65520: Inf
    if (ax < 0x38800000u) {                                  // below the smallest normal half: subnormal or zero
        if (ax < 0x33000000u) return sign;                   // < 2^-25 rounds to zero
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - e;  // 14 + (113 - e)
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = ax - 0x38000000u;  // rebias 127 -> 15
    const uint32_t rem = r & 0x1FFFu;
    r >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;
    return uint16_t(sign | r);
}

float bf16_to_float(uint16_t h) {
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t float_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    const uint32_t lsb = (x >> 16) & 1u;
    x += 0x7FFFu + lsb;
    return uint16_t(x >> 16);
}

namespace {

// ---------------------------------------------------------------- operators

template <typename T>
struct OpSum {
    static T f(T a, T b) {
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
        } else {
            return a + b;
        }
    }
};
template <typename T>
struct OpMax {
    static T f(T acc, T in) { return acc > in ? acc : in; }
};
template <typename T>
struct OpMin {
    static T f(T acc, T in) { return acc < in ? acc : in; }
};

template <typename T, typename Op>
void loop_inplace(T *__restrict d, const T *__restrict s, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = Op::f(d[i], s[i]);
}
// d = s op d (the accumulator is the second operand's storage).
template <typename T, typename Op>
void loop_inplace_rev(T *__restrict d, const T *__restrict s, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = Op::f(s[i], d[i]);
}
template <typename T, typename Op>
void loop_out(T *__restrict d, const T *__restrict a, const T *__restrict b, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = Op::f(a[i], b[i]);
}

// 16-bit floats: widen, operate, round back.
template <float (*Load)(uint16_t), uint16_t (*Store)(float), typename Op>
void loop16_out(uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = Store(Op::f(Load(a[i]), Load(b[i])));
}

template <typename T>
void typed_reduce(terse_op_t op, int shape, void *dst, const void *a, const void *b, size_t n) {
    T *d = static_cast<T *>(dst);
    const T *x = static_cast<const T *>(a);
    const T *y = static_cast<const T *>(b);
    switch (op) {
    case TERSE_OP_SUM:
        if (shape == 0) loop_inplace<T, OpSum<T>>(d, y, n);
        else if (shape == 1) loop_inplace_rev<T, OpSum<T>>(d, x, n);
        else loop_out<T, OpSum<T>>(d, x, y, n);
        break;
    case TERSE_OP_MAX:
        if (shape == 0) loop_inplace<T, OpMax<T>>(d, y, n);
        else if (shape == 1) loop_inplace_rev<T, OpMax<T>>(d, x, n);
        else loop_out<T, OpMax<T>>(d, x, y, n);
        break;
    case TERSE_OP_MIN:
        if (shape == 0) loop_inplace<T, OpMin<T>>(d, y, n);
        else if (shape == 1) loop_inplace_rev<T, OpMin<T>>(d, x, n);
        else loop_out<T, OpMin<T>>(d, x, y, n);
        break;
    }
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void typed_reduce16(terse_op_t op, void *dst, const void *a, const void *b, size_t n) {
    auto *d = static_cast<uint16_t *>(dst);
    const auto *x = static_cast<const uint16_t *>(a);
    const auto *y = static_cast<const uint16_t *>(b);
    switch (op) {
    case TERSE_OP_SUM: loop16_out<Load, Store, OpSum<float>>(d, x, y, n); break;
    case TERSE_OP_MAX: loop16_out<Load, Store, OpMax<float>>(d, x, y, n); break;
    case TERSE_OP_MIN: loop16_out<Load, Store, OpMin<float>>(d, x, y, n); break;
    }
}

// shape 0: dst = dst op b;  1: dst = a op dst;  2: dst = a op b.
void dispatch(terse_dtype_t dt, terse_op_t op, int shape, void *dst, const void *a, const void *b, size_t n) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: typed_reduce<float>(op, shape, dst, a, b, n); break;
    case TERSE_DTYPE_FLOAT64: typed_reduce<double>(op, shape, dst, a, b, n); break;
    case TERSE_DTYPE_INT32: typed_reduce<int32_t>(op, shape, dst, a, b, n); break;
    case TERSE_DTYPE_INT64: typed_reduce<int64_t>(op, shape, dst, a, b, n); break;
    case TERSE_DTYPE_FLOAT16:
        // Element-wise with the same index: in-place shapes are safe here.
        typed_reduce16<half_to_float, float_to_half>(op, dst, shape == 0 ? dst : a, shape == 1 ? dst : b, n);
        break;
    case TERSE_DTYPE_BFLOAT16:
        typed_reduce16<bf16_to_float, float_to_bf16>(op, dst, shape == 0 ? dst : a, shape == 1 ? dst : b, n);
        break;
    default: break;
    }
}

template <typename T>
void diff_loop(T *__restrict r, const T *__restrict a, const T *__restrict b, size_t n) {
    for (size_t i = 0; i < n; i++) r[i] += a[i] - b[i];
}
template <typename T>
void add_loop(T *__restrict d, const T *__restrict a, const T *__restrict b, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = a[i] + b[i];
}

}  // namespace

void reduce_inplace(terse_dtype_t dt, terse_op_t op, void *dst, const void *src, size_t n) {
    if (n) dispatch(dt, op, 0, dst, nullptr, src, n);
}

void reduce_out(terse_dtype_t dt, terse_op_t op, void *dst, const void *a, const void *b, size_t n) {
    if (!n) return;
    if (dst == a) dispatch(dt, op, 0, dst, nullptr, b, n);
    else if (dst == b) dispatch(dt, op, 1, dst, a, nullptr, n);
    else dispatch(dt, op, 2, dst, a, b, n);
}

void accumulate_difference(terse_dtype_t dt, void *res, const void *a, const void *b, size_t n) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32:
        diff_loop(static_cast<float *>(res), static_cast<const float *>(a), static_cast<const float *>(b), n);
        break;
    case TERSE_DTYPE_FLOAT64:
        diff_loop(static_cast<double *>(res), static_cast<const double *>(a), static_cast<const double *>(b), n);
        break;
    case TERSE_DTYPE_FLOAT16: {
        auto *r = static_cast<uint16_t *>(res);
        const auto *x = static_cast<const uint16_t *>(a), *y = static_cast<const uint16_t *>(b);
        for (size_t i = 0; i < n; i++)
            r[i] = float_to_half(half_to_float(r[i]) + (half_to_float(x[i]) - half_to_float(y[i])));
        break;
    }
    case TERSE_DTYPE_BFLOAT16: {
        auto *r = static_cast<uint16_t *>(res);
        const auto *x = static_cast<const uint16_t *>(a), *y = static_cast<const uint16_t *>(b);
        for (size_t i = 0; i < n; i++)
            r[i] = float_to_bf16(bf16_to_float(r[i]) + (bf16_to_float(x[i]) - bf16_to_float(y[i])));
        break;
    }
    default: break;
    }
}

void add_out(terse_dtype_t dt, void *dst, const void *a, const void *b, size_t n) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32:
        add_loop(static_cast<float *>(dst), static_cast<const float *>(a), static_cast<const float *>(b), n);
        break;
    case TERSE_DTYPE_FLOAT64:
        add_loop(static_cast<double *>(dst), static_cast<const double *>(a), static_cast<const double *>(b), n);
        break;
    default: reduce_out(dt, TERSE_OP_SUM, dst, a, b, n); break;
    }
}

double element_as_double(terse_dtype_t dt, const void *buf, size_t i) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return static_cast<const float *>(buf)[i];
    case TERSE_DTYPE_FLOAT64: return static_cast<const double *>(buf)[i];
    case TERSE_DTYPE_INT32: return static_cast<const int32_t *>(buf)[i];
    case TERSE_DTYPE_INT64: return double(static_cast<const int64_t *>(buf)[i]);
    case TERSE_DTYPE_FLOAT16: return half_to_float(static_cast<const uint16_t *>(buf)[i]);
    case TERSE_DTYPE_BFLOAT16: return bf16_to_float(static_cast<const uint16_t *>(buf)[i]);
    default: return 0.0;
    }
}

}  // namespace terse
