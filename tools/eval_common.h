// Shared pieces of terse-eval: the error type every part throws (the tool
// reports it and exits 1), and element conversions between terse's
// datatypes and double, in which all error metrics are computed.
#pragma once

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace terse::eval {

// A user-facing failure: a bad file, a missing dataset, a codec that
// refused its parameters.  The message names the thing and what is wanted.
struct EvalError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// printf-style message for EvalError.
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

size_t dtype_size(terse_dtype_t dt);
bool dtype_is_float(terse_dtype_t dt);

// out[i] = element i of src (of type dt) as a double.
void to_double(terse_dtype_t dt, const void *src, size_t n, double *out);

// Element-wise reduction in the datatype itself (as MPI and the engine
// do): dst[i] = dst[i] op src[i].
void reduce_native(terse_dtype_t dt, terse_op_t op, void *dst, const void *src, size_t n);

}  // namespace terse::eval
