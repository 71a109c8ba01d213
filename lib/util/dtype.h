// Facts about the element types of codec.h, in one place for the core, the
// tools and the tests (plugins keep their own: they see only codec.h).
#pragma once

#include <terse/codec.h>

#include <cstddef>

namespace terse {

// Bytes per element; 0 for a value outside the enum (e.g. read off a frame).
constexpr size_t dtype_size(unsigned dt) {
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

// The largest element of any type in the enum: a count of elements below
// a size in these is below it whatever the type (mpi-wrappers/dispatch.h).
constexpr size_t kLargestElement = [] {
    size_t m = 0;
    for (unsigned dt = 0; dt < TERSE_DTYPE_MAX_; ++dt) m = dtype_size(dt) > m ? dtype_size(dt) : m;
    return m;
}();

constexpr const char *dtype_name(unsigned dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return "float32";
    case TERSE_DTYPE_FLOAT64: return "float64";
    case TERSE_DTYPE_INT32: return "int32";
    case TERSE_DTYPE_INT64: return "int64";
    case TERSE_DTYPE_FLOAT16: return "float16";
    case TERSE_DTYPE_BFLOAT16: return "bfloat16";
    default: return "unknown";
    }
}

constexpr bool dtype_is_float(unsigned dt) {
    return dt == TERSE_DTYPE_FLOAT32 || dt == TERSE_DTYPE_FLOAT64 || dt == TERSE_DTYPE_FLOAT16 ||
           dt == TERSE_DTYPE_BFLOAT16;
}

}  // namespace terse
