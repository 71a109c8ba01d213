#include "engine/guard.h"

#include "engine/reduce_kernels.h"

#include <cmath>

namespace terse {

namespace {

// Spacing of 1.0 in the data type: the exact result is the MPI library's
// sum in the data type (float32 for 16-bit data), whose rounding the
// comparison must not hold against the codec.
double dtype_epsilon(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT64: return 0x1p-52;
    case TERSE_DTYPE_FLOAT16:
    case TERSE_DTYPE_BFLOAT16:
    case TERSE_DTYPE_FLOAT32: return 0x1p-23;
    default: return 0;
    }
}

// Largest magnitude, largest and smallest finite element: a loop per type,
// so that a checked call does not pay a type switch per element.
struct Extent {
    double max_abs = 0, hi = -INFINITY, lo = INFINITY;
    void add(double x) {
        if (!std::isfinite(x)) return;  // chunks holding them travel raw, exactly
        // Plain comparisons (x is finite): std::fmax is a library call.
        const double a = std::fabs(x);
        max_abs = a > max_abs ? a : max_abs;
        hi = x > hi ? x : hi;
        lo = x < lo ? x : lo;
    }
};

template <class T>
Extent extent_of(const T *x, size_t n) {
    Extent e;
    for (size_t i = 0; i < n; ++i) e.add(double(x[i]));
    return e;
}

Extent extent_of(terse_dtype_t dt, const void *x, size_t n) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return extent_of(static_cast<const float *>(x), n);
    case TERSE_DTYPE_FLOAT64: return extent_of(static_cast<const double *>(x), n);
    default: break;
    }
    Extent e;
    for (size_t i = 0; i < n; ++i) e.add(element_as_double(dt, x, i));
    return e;
}

}  // namespace

bool GuardState::decidable(const ErrorBudget &budget, const terse_codec_descriptor_t *desc, const void *params,
                           int nranks) {
    if (budget.kind != ErrorBudget::None) return true;
    if (!desc || !desc->error_bound) return false;
    // A bound is stated for all data or for none: ask at unit statistics.
    const terse_dtype_t dt = (desc->dtypes & TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32)) ? TERSE_DTYPE_FLOAT32
                                                                                   : TERSE_DTYPE_FLOAT64;
    return desc->error_bound(params, dt, 1, nranks, 1.0, 1.0) >= 0;
}

GuardCheck::~GuardCheck() {
    if (req_.active) control_->wait(&req_);
}

Status GuardCheck::start(const void *input, size_t count, terse_dtype_t dtype) {
    dtype_ = dtype;
    count_ = count;
    const Extent e = extent_of(dtype, input, count);
    agreed_[0] = e.max_abs;
    agreed_[1] = e.hi;
    agreed_[2] = -e.lo;
    return control_->iallreduce(agreed_, agreed_, 3, TERSE_DTYPE_FLOAT64, TERSE_OP_MAX, &req_);
}

bool GuardCheck::test(Status *status) { return control_->test(&req_, status); }

bool GuardCheck::exceeded(const GuardState &g, int nranks, double abs_err, double rel_err, double *measured,
                          double *allowed) const {
    if (g.budget.kind == ErrorBudget::Rel) {
        *measured = rel_err;
        *allowed = g.budget.value;
        return rel_err > *allowed;
    }
    *measured = abs_err;
    if (g.budget.kind == ErrorBudget::Abs) {
        *allowed = g.budget.value;
        return abs_err > *allowed;
    }
    const double max_abs = agreed_[0];
    const double range = std::isfinite(agreed_[1] + agreed_[2]) ? agreed_[1] + agreed_[2] : 0.0;
    const double bound = g.desc && g.desc->error_bound
                             ? g.desc->error_bound(g.params, dtype_, count_, nranks, max_abs, range)
                             : -1;
    if (!(bound >= 0)) {  // no bound stated for these parameters: nothing to hold it to
        *allowed = INFINITY;
        return false;
    }
    const double n = nranks;
    *allowed = bound + n * n * dtype_epsilon(dtype_) * max_abs;
    return abs_err > *allowed;
}

}  // namespace terse
