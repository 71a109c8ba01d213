#include "eval_common.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace terse::eval {

std::string format(const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

size_t dtype_size(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32:
    case TERSE_DTYPE_INT32: return 4;
    case TERSE_DTYPE_FLOAT64:
    case TERSE_DTYPE_INT64: return 8;
    case TERSE_DTYPE_FLOAT16:
    case TERSE_DTYPE_BFLOAT16: return 2;
    default: return 0;
    }
}

bool dtype_is_float(terse_dtype_t dt) {
    return dt == TERSE_DTYPE_FLOAT32 || dt == TERSE_DTYPE_FLOAT64 || dt == TERSE_DTYPE_FLOAT16 ||
           dt == TERSE_DTYPE_BFLOAT16;
}

namespace {

float bits_to_float(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

uint32_t float_to_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

// IEEE binary16 -> binary32, exact (every half is a float).
float half_to_float(uint16_t h) {
    uint32_t sign = uint32_t(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
    if (exp == 0) {
        // Zero or subnormal: value = mant * 2^-24.
        float v = float(mant) * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
}

// binary32 -> binary16, round to nearest even (used only to reduce in the
// datatype, as a half-precision MPI reduction would).
uint16_t float_to_half(float f) {
    uint32_t b = float_to_bits(f);
    uint16_t sign = uint16_t((b >> 16) & 0x8000);
    uint32_t exp = (b >> 23) & 0xff, mant = b & 0x7fffff;
    if (exp == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));
    int e = int(exp) - 127 + 15;
    if (e >= 0x1f) return uint16_t(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return sign;
        mant |= 0x800000;
        int shift = 14 - e;
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) ++h;
        return uint16_t(sign | h);
    }
    uint32_t h = (uint32_t(e) << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into inf: correct
    return uint16_t(sign | h);
}

float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }

uint16_t float_to_bf16(float f) {
    uint32_t b = float_to_bits(f);
    if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffff)) return uint16_t((b >> 16) | 0x40);
    b += 0x7fff + ((b >> 16) & 1);
    return uint16_t(b >> 16);
}

template <typename T>
void convert(const void *src, size_t n, double *out) {
    const T *s = static_cast<const T *>(src);
    for (size_t i = 0; i < n; ++i) out[i] = double(s[i]);
}

template <typename T>
T apply(terse_op_t op, T a, T b) {
    switch (op) {
    case TERSE_OP_SUM: return T(a + b);
    case TERSE_OP_MAX: return a > b ? a : b;
    case TERSE_OP_MIN: return a < b ? a : b;
    }
    return a;
}

template <typename T>
void reduce(terse_op_t op, void *dst, const void *src, size_t n) {
    T *d = static_cast<T *>(dst);
    const T *s = static_cast<const T *>(src);
    for (size_t i = 0; i < n; ++i) d[i] = apply(op, d[i], s[i]);
}

}  // namespace

void to_double(terse_dtype_t dt, const void *src, size_t n, double *out) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: convert<float>(src, n, out); return;
    case TERSE_DTYPE_FLOAT64: convert<double>(src, n, out); return;
    case TERSE_DTYPE_INT32: convert<int32_t>(src, n, out); return;
    case TERSE_DTYPE_INT64: convert<int64_t>(src, n, out); return;
    case TERSE_DTYPE_FLOAT16: {
        const uint16_t *s = static_cast<const uint16_t *>(src);
        for (size_t i = 0; i < n; ++i) out[i] = half_to_float(s[i]);
        return;
    }
    case TERSE_DTYPE_BFLOAT16: {
        const uint16_t *s = static_cast<const uint16_t *>(src);
        for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(s[i]);
        return;
    }
    default: throw EvalError(format("internal: datatype %d has no conversion", int(dt)));
    }
}

void reduce_native(terse_dtype_t dt, terse_op_t op, void *dst, const void *src, size_t n) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: reduce<float>(op, dst, src, n); return;
    case TERSE_DTYPE_FLOAT64: reduce<double>(op, dst, src, n); return;
    case TERSE_DTYPE_INT32: {
        // Sums wrap, as in MPI libraries (computed unsigned, where it is defined).
        if (op == TERSE_OP_SUM) reduce<uint32_t>(op, dst, src, n);
        else reduce<int32_t>(op, dst, src, n);
        return;
    }
    case TERSE_DTYPE_INT64: {
        if (op == TERSE_OP_SUM) reduce<uint64_t>(op, dst, src, n);
        else reduce<int64_t>(op, dst, src, n);
        return;
    }
    case TERSE_DTYPE_FLOAT16:
    case TERSE_DTYPE_BFLOAT16: {
        bool half = dt == TERSE_DTYPE_FLOAT16;
        uint16_t *d = static_cast<uint16_t *>(dst);
        const uint16_t *s = static_cast<const uint16_t *>(src);
        for (size_t i = 0; i < n; ++i) {
            float a = half ? half_to_float(d[i]) : bf16_to_float(d[i]);
            float b = half ? half_to_float(s[i]) : bf16_to_float(s[i]);
            float r = apply(op, a, b);
            d[i] = half ? float_to_half(r) : float_to_bf16(r);
        }
        return;
    }
    default: throw EvalError(format("internal: datatype %d cannot be reduced", int(dt)));
    }
}

}  // namespace terse::eval
