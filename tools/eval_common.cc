#include "eval_common.h"

#include "engine/reduce_kernels.h"

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

bool dtype_is_float(terse_dtype_t dt) {
    return dt == TERSE_DTYPE_FLOAT32 || dt == TERSE_DTYPE_FLOAT64 || dt == TERSE_DTYPE_FLOAT16 ||
           dt == TERSE_DTYPE_BFLOAT16;
}

namespace {

template <typename T>
void convert(const void *src, size_t n, double *out) {
    const T *s = static_cast<const T *>(src);
    for (size_t i = 0; i < n; ++i) out[i] = double(s[i]);
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
        for (size_t i = 0; i < n; ++i) out[i] = terse::half_to_float(s[i]);
        return;
    }
    case TERSE_DTYPE_BFLOAT16: {
        const uint16_t *s = static_cast<const uint16_t *>(src);
        for (size_t i = 0; i < n; ++i) out[i] = terse::bf16_to_float(s[i]);
        return;
    }
    default: throw EvalError(format("internal: datatype %d has no conversion", int(dt)));
    }
}

}  // namespace terse::eval
