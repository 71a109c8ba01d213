// The lossless element-wise reduction dst[i] = dst[i] op src[i] as TERSE_HD
// code, with the conventions of the engine's CPU kernels
// (lib/engine/reduce_kernels.h) and of the none codec:
//     sum: IEEE addition; integers wrap (added in the unsigned type);
//     max(acc, in) = acc > in ? acc : in;   min(acc, in) = acc < in ? acc : in;
//     float16 / bfloat16 widened to float, reduced, rounded back to nearest even.
// reduce_element(job, i) is the work of one device thread for element i
// (plugins/none/none_device.cu runs it over a grid, coalesced: consecutive
// threads take consecutive elements); a host loop over i runs the same code,
// and tests/test_reduce_device_body.cc holds it to the engine's kernels bit
// for bit.  One exception, stated where it is tested: the payload of a NaN
// *sum* (a GPU's arithmetic returns its canonical NaN where the CPU's
// returns an operand's, and which of two NaN operands the CPU returns
// depends on the compiler's operand order); it is a NaN on both.  Max and
// min move NaNs unchanged on both.  Every rank still receives the same
// bits: the engine reduces a chunk once and forwards the result.
#pragma once

#include "half.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse_codec {

struct ReduceJob {
    void *dst;
    const void *src;
    size_t count;
    terse_dtype_t dtype;
    terse_op_t op;
};

TERSE_HD inline int32_t reduce_sum_i32(int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
TERSE_HD inline int64_t reduce_sum_i64(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

template <typename T>
TERSE_HD inline T reduce_op(T acc, T in, terse_op_t op) {
    switch (op) {
    case TERSE_OP_MAX: return acc > in ? acc : in;
    case TERSE_OP_MIN: return acc < in ? acc : in;
    default: return acc + in;
    }
}

// Integers: the sum wraps.
template <>
TERSE_HD inline int32_t reduce_op<int32_t>(int32_t acc, int32_t in, terse_op_t op) {
    switch (op) {
    case TERSE_OP_MAX: return acc > in ? acc : in;
    case TERSE_OP_MIN: return acc < in ? acc : in;
    default: return reduce_sum_i32(acc, in);
    }
}
template <>
TERSE_HD inline int64_t reduce_op<int64_t>(int64_t acc, int64_t in, terse_op_t op) {
    switch (op) {
    case TERSE_OP_MAX: return acc > in ? acc : in;
    case TERSE_OP_MIN: return acc < in ? acc : in;
    default: return reduce_sum_i64(acc, in);
    }
}

// The storage type of a dtype's elements (16-bit floats as their bits).
template <terse_dtype_t DT>
struct ReduceStorage;
template <>
struct ReduceStorage<TERSE_DTYPE_FLOAT32> {
    using type = float;
};
template <>
struct ReduceStorage<TERSE_DTYPE_FLOAT64> {
    using type = double;
};
template <>
struct ReduceStorage<TERSE_DTYPE_INT32> {
    using type = int32_t;
};
template <>
struct ReduceStorage<TERSE_DTYPE_INT64> {
    using type = int64_t;
};
template <>
struct ReduceStorage<TERSE_DTYPE_FLOAT16> {
    using type = uint16_t;
};
template <>
struct ReduceStorage<TERSE_DTYPE_BFLOAT16> {
    using type = uint16_t;
};

// acc op in for one element of the dtype, its dtype fixed at compile time
// (the kernels are instantiated per dtype).
template <terse_dtype_t DT>
TERSE_HD inline typename ReduceStorage<DT>::type reduce_value(typename ReduceStorage<DT>::type acc,
                                                              typename ReduceStorage<DT>::type in,
                                                              terse_op_t op) {
    if constexpr (DT == TERSE_DTYPE_FLOAT16) {
        return f32_to_f16(reduce_op<float>(f16_to_f32(acc), f16_to_f32(in), op));
    } else if constexpr (DT == TERSE_DTYPE_BFLOAT16) {
        return f32_to_bf16(reduce_op<float>(bf16_to_f32(acc), bf16_to_f32(in), op));
    } else {
        return reduce_op<typename ReduceStorage<DT>::type>(acc, in, op);
    }
}

// Element i of the job.
template <terse_dtype_t DT>
TERSE_HD inline void reduce_element_of(const ReduceJob &j, size_t i) {
    using E = typename ReduceStorage<DT>::type;
    E *d = static_cast<E *>(j.dst) + i;
    *d = reduce_value<DT>(*d, static_cast<const E *>(j.src)[i], j.op);
}

// Whether the dtype has a reduction here (all six of the engine's).
TERSE_HD inline bool reduce_dtype_ok(terse_dtype_t dt) {
    return dt == TERSE_DTYPE_FLOAT32 || dt == TERSE_DTYPE_FLOAT64 || dt == TERSE_DTYPE_INT32 ||
           dt == TERSE_DTYPE_INT64 || dt == TERSE_DTYPE_FLOAT16 || dt == TERSE_DTYPE_BFLOAT16;
}

// Calls f with the dtype as a compile-time constant (std::integral_constant-like tag).
template <terse_dtype_t DT>
struct DtypeTag {
    static constexpr terse_dtype_t value = DT;
};
template <typename F>
inline bool with_reduce_dtype(terse_dtype_t dt, F &&f) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: f(DtypeTag<TERSE_DTYPE_FLOAT32>{}); return true;
    case TERSE_DTYPE_FLOAT64: f(DtypeTag<TERSE_DTYPE_FLOAT64>{}); return true;
    case TERSE_DTYPE_INT32: f(DtypeTag<TERSE_DTYPE_INT32>{}); return true;
    case TERSE_DTYPE_INT64: f(DtypeTag<TERSE_DTYPE_INT64>{}); return true;
    case TERSE_DTYPE_FLOAT16: f(DtypeTag<TERSE_DTYPE_FLOAT16>{}); return true;
    case TERSE_DTYPE_BFLOAT16: f(DtypeTag<TERSE_DTYPE_BFLOAT16>{}); return true;
    default: return false;
    }
}

// Whether the element at p is a NaN (a float type's; never for integers).
inline bool reduce_is_nan(terse_dtype_t dt, const void *p) {
    const auto *b = static_cast<const uint8_t *>(p);
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: {
        const uint32_t u = static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
                           static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
        return (u & 0x7fffffffu) > 0x7f800000u;
    }
    case TERSE_DTYPE_FLOAT64: {
        uint64_t u = 0;
        for (int k = 7; k >= 0; k--) u = u << 8 | b[k];
        return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    }
    case TERSE_DTYPE_FLOAT16: return ((b[0] | b[1] << 8) & 0x7fff) > 0x7c00;
    case TERSE_DTYPE_BFLOAT16: return ((b[0] | b[1] << 8) & 0x7fff) > 0x7f80;
    default: return false;
    }
}

// The host emulation: every element in order (the device grid's indices).
inline bool reduce_emulated(const ReduceJob &j) {
    return with_reduce_dtype(j.dtype, [&](auto tag) {
        for (size_t i = 0; i < j.count; i++) reduce_element_of<decltype(tag)::value>(j, i);
    });
}

}  // namespace terse_codec
