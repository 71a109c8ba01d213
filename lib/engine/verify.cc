#include "engine/verify.h"

#include "engine/reduce_kernels.h"

#include <cmath>
#include <cstring>
#include <string>

namespace terse {

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

bool Verifier::test(Status *status) { return control_->test(&req_, status); }

void Verifier::compare(terse_dtype_t dtype, const void *result, terse_dtype_t exact_dtype, const void *exact,
                       size_t count, double *abs_err, double *rel_err) {
    double max_abs = 0, max_exact = 0;
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
