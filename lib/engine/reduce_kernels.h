// Element-wise reductions the engine applies to raw elements: the lossless
// fast path (reduce straight out of a received frame), raw frames of lossy
// codecs (incompressible or non-finite chunks), and error feedback.
//
// MAX and MIN follow the convention of the lossless `none` codec:
//     max(acc, in) = acc > in ? acc : in      min(acc, in) = acc < in ? acc : in
// so a reduction gives the same bits whether it runs here or in the codec.
// Integer sums wrap (computed in the unsigned type).  float16 and bfloat16
// are widened to float for the arithmetic and rounded back to nearest-even.
#pragma once

#include "util/dtype.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse {

// dst[i] = dst[i] op src[i].  dst and src must not overlap.
void reduce_inplace(terse_dtype_t dt, terse_op_t op, void *dst, const void *src, size_t n);
// dst[i] = a[i] op b[i].  dst may be a or b; otherwise no overlap.
void reduce_out(terse_dtype_t dt, terse_op_t op, void *dst, const void *a, const void *b, size_t n);
// res[i] += a[i] - b[i] (error feedback: a is what was meant, b what the
// codec represented).  Floating types only; no-op for integers.
void accumulate_difference(terse_dtype_t dt, void *res, const void *a, const void *b, size_t n);
// dst[i] = a[i] + b[i] for floating types (input plus residual).
void add_out(terse_dtype_t dt, void *dst, const void *a, const void *b, size_t n);

// IEEE binary16 and bfloat16 conversions (round to nearest even, NaN kept NaN).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

// Element i of a buffer of dtype dt, as a double (tests, verification).
double element_as_double(terse_dtype_t dt, const void *buf, size_t i);

}  // namespace terse
