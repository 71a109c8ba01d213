// Shared pieces of terse-eval: the error type every part throws (the tool
// reports it and exits 1), and the conversion of terse's datatypes to
// double, in which all error metrics are computed.  Reductions use the
// engine's own kernels (lib/reduce_kernels.h) so that results match.
#pragma once

#include "util/dtype.h"

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

bool dtype_is_float(terse_dtype_t dt);

// out[i] = element i of src (of type dt) as a double.
void to_double(terse_dtype_t dt, const void *src, size_t n, double *out);

}  // namespace terse::eval
