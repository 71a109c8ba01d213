// The verifier's comparison (engine/verify.h): the typed loop taken when
// every value is finite, and the element-wise rules for NaN and infinities,
// give the same answers the definitions in verify.h state.
#include "engine/verify.h"

#include "engine/reduce_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace terse {
namespace {

// The definition, element by element, in double.
template <class T>
void reference(const std::vector<T> &r, const std::vector<T> &e, double *abs_err, double *rel_err) {
    double m = 0, x = 0;
    for (size_t i = 0; i < r.size(); ++i) {
        const double a = r[i], b = e[i];
        double d;
        if (std::isnan(a) || std::isnan(b)) d = std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
        else if (std::isinf(a) || std::isinf(b)) d = a == b ? 0 : INFINITY;
        else d = std::fabs(a - b);
        m = std::max(m, d);
        if (std::isfinite(b)) x = std::max(x, std::fabs(b));
    }
    *abs_err = m;
    *rel_err = m == 0 ? 0 : (x > 0 ? m / x : INFINITY);
}

template <class T>
void expect_matches(const std::vector<T> &r, const std::vector<T> &e, terse_dtype_t dt) {
    double a = -1, rel = -1, ra, rr;
    Verifier::compare(dt, r.data(), dt, e.data(), r.size(), &a, &rel);
    reference(r, e, &ra, &rr);
    EXPECT_EQ(a, ra);
    EXPECT_EQ(rel, rr);
}

template <class T>
void finite_and_special(terse_dtype_t dt) {
    std::mt19937 rng(1);
    std::normal_distribution<double> g(0, 100);
    std::vector<T> e(4099), r(e.size());
    for (size_t i = 0; i < e.size(); ++i) {
        e[i] = T(g(rng));
        r[i] = T(e[i] + g(rng) * 1e-3);
    }
    expect_matches(r, e, dt);  // finite: the typed loop
    const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
    std::vector<T> r2 = r, e2 = e;
    r2[7] = e2[7] = nan;  // NaN on both sides counts 0
    expect_matches(r2, e2, dt);
    r2[9] = nan;  // NaN on one side: infinite error
    expect_matches(r2, e2, dt);
    std::vector<T> r3 = r, e3 = e;
    r3[3] = e3[3] = -inf;  // equal infinities count 0, and do not enter the norm
    expect_matches(r3, e3, dt);
    r3[4] = inf;
    expect_matches(r3, e3, dt);
    std::vector<T> same = e;
    expect_matches(same, e, dt);  // exact: 0 and 0
}

TEST(VerifierCompare, Float32) { finite_and_special<float>(TERSE_DTYPE_FLOAT32); }
TEST(VerifierCompare, Float64) { finite_and_special<double>(TERSE_DTYPE_FLOAT64); }

TEST(VerifierCompare, HalfAgainstItsFloat32Sum) {
    // 16-bit results are compared with the float32 exact result.
    std::vector<uint16_t> r = {float_to_half(1.5f), float_to_half(-2.0f), float_to_half(0.25f)};
    std::vector<float> e = {1.5f, -2.125f, 0.25f};
    double a, rel;
    Verifier::compare(TERSE_DTYPE_FLOAT16, r.data(), TERSE_DTYPE_FLOAT32, e.data(), r.size(), &a, &rel);
    EXPECT_DOUBLE_EQ(a, 0.125);
    EXPECT_DOUBLE_EQ(rel, 0.125 / 2.125);
}

}  // namespace
}  // namespace terse
