#include "engine/verify.h"

#include "engine/reduce_kernels.h"

#include <cmath>
#include <cstring>
#include <string>

namespace terse {

namespace {

// The comparison when result and exact result share a floating type and
// hold only finite values, the common case, as one loop per type; false
// (and nothing decided) when any value is not finite.
template <class T>
bool compare_finite(const T *result, const T *exact, size_t n, double *max_abs, double *max_exact) {
    // No branch per element, so that the loop vectorises: a NaN on either
    // side makes d NaN (counted in nan), an infinity makes a maximum
    // infinite; either sends the caller to the element-wise rules.  Plain
    // comparisons, not std::fmax, whose NaN rules make it a library call.
    double d_max = 0, e_max = 0;
    bool nan = false;
    for (size_t i = 0; i < n; ++i) {
        const double r = result[i], e = exact[i];
        const double d = std::fabs(r - e), a = std::fabs(e);
        nan |= d != d;
        d_max = d > d_max ? d : d_max;
        e_max = a > e_max ? a : e_max;
    }
    if (nan || !std::isfinite(d_max) || !std::isfinite(e_max)) return false;
    *max_abs = d_max;
    *max_exact = e_max;
    return true;
}

bool compare_finite(terse_dtype_t dtype, const void *result, terse_dtype_t exact_dtype, const void *exact,
                    size_t n, double *max_abs, double *max_exact) {
    if (dtype != exact_dtype) return false;
    switch (dtype) {
    case TERSE_DTYPE_FLOAT32:
        return compare_finite(static_cast<const float *>(result), static_cast<const float *>(exact), n, max_abs,
                              max_exact);
    case TERSE_DTYPE_FLOAT64:
        return compare_finite(static_cast<const double *>(result), static_cast<const double *>(exact), n, max_abs,
                              max_exact);
    default: return false;
    }
}

}  // namespace

Verifier::~Verifier() {
    if (req_.active) control_->wait(&req_);
}

Status Verifier::start(const void *input, size_t count, terse_dtype_t dtype, terse_op_t op, void *spare) {
    dtype_ = dtype;
    count_ = count;
    // 16-bit floats have no MPI type: reduce them as float32 (the exact sum
    // of the 16-bit inputs, which is what terse should approximate).
    wire_dtype_ = (dtype == TERSE_DTYPE_FLOAT16 || dtype == TERSE_DTYPE_BFLOAT16) ? TERSE_DTYPE_FLOAT32 : dtype;
    Status s = buf_.reserve(count * dtype_size(wire_dtype_));
    if (s != TERSE_OK) {
        std::string msg = last_error();
        // 16-bit inputs travel as float32, twice as large as spare.
        if (wire_dtype_ != dtype || !spare) return s;
        s = control_->iallreduce(spare, spare, count, wire_dtype_, op, &req_);
        if (s != TERSE_OK) return s;
        return set_error(TERSE_ERR_NO_MEMORY, "%s", msg.c_str());
    }
    if (wire_dtype_ == dtype) {
        std::memcpy(buf_.data(), input, count * dtype_size(dtype));
    } else {
        float *f = reinterpret_cast<float *>(buf_.data());
        for (size_t i = 0; i < count; ++i) f[i] = float(element_as_double(dtype, input, i));
    }
    return control_->iallreduce(buf_.data(), buf_.data(), count, wire_dtype_, op, &req_);
}

bool Verifier::test(Status *status) {
    Status s = TERSE_OK;
    if (!complete_ && control_->test(&req_, &s)) {
        complete_ = true;
        status_ = s;
    }
    *status = status_;
    return complete_;
}

void Verifier::compare(terse_dtype_t dtype, const void *result, terse_dtype_t exact_dtype, const void *exact,
                       size_t count, double *abs_err, double *rel_err) {
    double max_abs = 0, max_exact = 0;
    if (!compare_finite(dtype, result, exact_dtype, exact, count, &max_abs, &max_exact)) {
        max_abs = max_exact = 0;
        for (size_t i = 0; i < count; ++i) {
            double r = element_as_double(dtype, result, i);
            double e = element_as_double(exact_dtype, exact, i);
            double d;
            if (std::isnan(e) || std::isnan(r)) d = (std::isnan(e) && std::isnan(r)) ? 0.0 : INFINITY;
            else if (std::isinf(e) || std::isinf(r)) d = (r == e) ? 0.0 : INFINITY;
            else d = std::fabs(r - e);
            if (d > max_abs) max_abs = d;
            if (std::isfinite(e) && std::fabs(e) > max_exact) max_exact = std::fabs(e);
        }
    }
    *abs_err = max_abs;
    *rel_err = max_abs == 0 ? 0.0 : (max_exact > 0 ? max_abs / max_exact : INFINITY);
}

void Verifier::measure(const void *result, double *abs_err, double *rel_err) const {
    compare(dtype_, result, wire_dtype_, buf_.data(), count_, abs_err, rel_err);
}

void Verifier::record(const void *result, Stats *stats) const {
    double a = 0, r = 0;
    measure(result, &a, &r);
    stats->add_error(a, r);
}

void Verifier::copy_exact(void *result) const {
    if (wire_dtype_ == dtype_) {
        std::memcpy(result, buf_.data(), count_ * dtype_size(dtype_));
        return;
    }
    const float *f = reinterpret_cast<const float *>(buf_.data());
    uint16_t *out = static_cast<uint16_t *>(result);
    for (size_t i = 0; i < count_; ++i)
        out[i] = dtype_ == TERSE_DTYPE_FLOAT16 ? float_to_half(f[i]) : float_to_bf16(f[i]);
}

}  // namespace terse
