// Reduction kernels against scalar references, 16-bit float conversions,
// and the feedback store.
#include "engine/error_feedback.h"
#include "engine/reduce_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace terse;

namespace {

FeedbackKey address_key(const void *p) {
    FeedbackKey k;
    k.id = reinterpret_cast<uintptr_t>(p);
    return k;
}

template <typename T>
T ref(terse_op_t op, T acc, T in) {
    switch (op) {
    case TERSE_OP_SUM:
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            return T(U(acc) + U(in));
        } else {
            return acc + in;
        }
    case TERSE_OP_MAX: return acc > in ? acc : in;
    case TERSE_OP_MIN: return acc < in ? acc : in;
    }
    return acc;
}

template <typename T>
std::vector<T> random_vec(size_t n, uint32_t seed) {
    std::mt19937 g(seed);
    std::vector<T> v(n);
    for (auto &x : v) {
        if constexpr (std::is_integral_v<T>) x = T(g()) * (std::is_same_v<T, int64_t> ? T(0x100000001ll) : T(1));
        else x = T(std::uniform_real_distribution<double>(-100, 100)(g));
    }
    return v;
}

template <typename T>
void check_type(terse_dtype_t dt) {
    // Lengths around vector widths and a large odd one.
    for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(7), size_t(16), size_t(33), size_t(1001)})
        for (terse_op_t op : {TERSE_OP_SUM, TERSE_OP_MAX, TERSE_OP_MIN}) {
            auto a = random_vec<T>(n, 1 + unsigned(n)), b = random_vec<T>(n, 99 + unsigned(n));
            std::vector<T> expect(n);
            for (size_t i = 0; i < n; i++) expect[i] = ref(op, a[i], b[i]);

            auto d = a;
            reduce_inplace(dt, op, d.data(), b.data(), n);
            EXPECT_EQ(0, std::memcmp(d.data(), expect.data(), n * sizeof(T)))
                << "inplace n=" << n << " op=" << op;

            std::vector<T> o(n);
            reduce_out(dt, op, o.data(), a.data(), b.data(), n);
            EXPECT_EQ(0, std::memcmp(o.data(), expect.data(), n * sizeof(T))) << "out n=" << n;

            auto da = a;  // dst aliases a
            reduce_out(dt, op, da.data(), da.data(), b.data(), n);
            EXPECT_EQ(0, std::memcmp(da.data(), expect.data(), n * sizeof(T))) << "alias a n=" << n;

            auto db = b;  // dst aliases b: still acc = a, in = b
            reduce_out(dt, op, db.data(), a.data(), db.data(), n);
            EXPECT_EQ(0, std::memcmp(db.data(), expect.data(), n * sizeof(T))) << "alias b n=" << n;
        }
}

}  // namespace

TEST(ReduceKernels, Float32) { check_type<float>(TERSE_DTYPE_FLOAT32); }
TEST(ReduceKernels, Float64) { check_type<double>(TERSE_DTYPE_FLOAT64); }
TEST(ReduceKernels, Int32) { check_type<int32_t>(TERSE_DTYPE_INT32); }
TEST(ReduceKernels, Int64) { check_type<int64_t>(TERSE_DTYPE_INT64); }

TEST(ReduceKernels, IntegerSumWraps) {
    int32_t a[2] = {std::numeric_limits<int32_t>::max(), -5};
    int32_t b[2] = {1, 3};
    reduce_inplace(TERSE_DTYPE_INT32, TERSE_OP_SUM, a, b, 2);
    EXPECT_EQ(a[0], std::numeric_limits<int32_t>::min());
    EXPECT_EQ(a[1], -2);
}

TEST(ReduceKernels, NanSurvivesSum) {
    float a[3] = {1.f, NAN, INFINITY}, b[3] = {NAN, 2.f, 1.f};
    reduce_inplace(TERSE_DTYPE_FLOAT32, TERSE_OP_SUM, a, b, 3);
    EXPECT_TRUE(std::isnan(a[0]));
    EXPECT_TRUE(std::isnan(a[1]));
    EXPECT_TRUE(std::isinf(a[2]));
}

TEST(ReduceKernels, MaxMinFollowNoneCodecConvention) {
    // max(acc, in) = acc > in ? acc : in: a NaN arriving replaces acc.
    float acc[2] = {1.f, NAN}, in[2] = {NAN, 1.f};
    reduce_inplace(TERSE_DTYPE_FLOAT32, TERSE_OP_MAX, acc, in, 2);
    EXPECT_TRUE(std::isnan(acc[0]));
    EXPECT_EQ(acc[1], 1.f);
}

TEST(HalfFloat, RoundTripsEveryValue) {
    for (uint32_t h = 0; h < 65536; ++h) {
        float f = half_to_float(uint16_t(h));
        uint16_t back = float_to_half(f);
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(half_to_float(back))) << h;
        } else {
            EXPECT_EQ(back, h) << "half " << h << " -> " << f;
        }
    }
}

TEST(HalfFloat, KnownValuesAndRounding) {
    EXPECT_EQ(half_to_float(0x3C00), 1.0f);
    EXPECT_EQ(half_to_float(0xC000), -2.0f);
    EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
    EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(float_to_half(1.0f), 0x3C00);
    EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // rounds to infinity
    EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -26)), 0x0000);  // half of the smallest subnormal: ties to even
    EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 subnormal ulps: ties to even (2)
    EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 ulps rounds up
    EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie, even stays
    EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie, rounds up to even
}

TEST(BFloat16, RoundTripAndRounding) {
    for (uint32_t h = 0; h < 65536; ++h) {
        float f = bf16_to_float(uint16_t(h));
        if (!std::isnan(f)) {
            EXPECT_EQ(float_to_bf16(f), h);
        }
    }
    EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(HalfFloat, ReduceWidensAndRounds) {
    uint16_t a[2] = {float_to_half(1.5f), float_to_bf16(2.0f)};
    uint16_t b[2] = {float_to_half(2.25f), float_to_bf16(0.5f)};
    reduce_inplace(TERSE_DTYPE_FLOAT16, TERSE_OP_SUM, a, b, 1);
    EXPECT_EQ(half_to_float(a[0]), 3.75f);
    reduce_inplace(TERSE_DTYPE_BFLOAT16, TERSE_OP_MAX, a + 1, b + 1, 1);
    EXPECT_EQ(bf16_to_float(a[1]), 2.0f);
}

TEST(Feedback, AccumulateDifferenceAndAdd) {
    float res[3] = {0.5f, 0, 0}, a[3] = {1, 2, 3}, b[3] = {0.5f, 2, 4};
    accumulate_difference(TERSE_DTYPE_FLOAT32, res, a, b, 3);
    EXPECT_EQ(res[0], 1.0f);
    EXPECT_EQ(res[1], 0.0f);
    EXPECT_EQ(res[2], -1.0f);
    double d[2], x[2] = {1, 2}, y[2] = {0.25, -1};
    add_out(TERSE_DTYPE_FLOAT64, d, x, y, 2);
    EXPECT_EQ(d[0], 1.25);
    EXPECT_EQ(d[1], 1.0);
}

TEST(FeedbackStore, KeysShapesAndLru) {
    FeedbackStore fs(2, 1 << 20);
    int b1, b2, b3;
    const FeedbackKey k1 = address_key(&b1), k2 = address_key(&b2), k3 = address_key(&b3);
    // One operation's use: acquire, then release when it is done.
    const auto use = [&fs](const FeedbackKey &k, size_t n, terse_dtype_t dt, bool *created = nullptr) {
        void *r = fs.acquire(k, n, dt, created);
        if (r) fs.release(k);
        return r;
    };
    bool created = false;
    float *r1 = static_cast<float *>(use(k1, 4, TERSE_DTYPE_FLOAT32, &created));
    ASSERT_TRUE(r1);
    EXPECT_TRUE(created);
    EXPECT_EQ(r1[3], 0.0f);
    r1[0] = 7;
    EXPECT_EQ(use(k1, 4, TERSE_DTYPE_FLOAT32, &created), r1);
    EXPECT_FALSE(created);
    // Count change: a new, zeroed residual.
    float *r1b = static_cast<float *>(use(k1, 5, TERSE_DTYPE_FLOAT32, &created));
    EXPECT_TRUE(created);
    EXPECT_EQ(r1b[0], 0.0f);
    EXPECT_EQ(fs.entries(), 1u);
    use(k2, 4, TERSE_DTYPE_FLOAT64);
    use(k1, 5, TERSE_DTYPE_FLOAT32);  // k1 most recent
    use(k3, 4, TERSE_DTYPE_FLOAT32);  // evicts k2
    EXPECT_EQ(fs.entries(), 2u);
    use(k2, 4, TERSE_DTYPE_FLOAT64, &created);
    EXPECT_TRUE(created);
    // Over the byte budget: no residual.
    EXPECT_EQ(fs.acquire(k1, 1 << 20, TERSE_DTYPE_FLOAT32), nullptr);
    fs.drop(k2);
    EXPECT_LE(fs.entries(), 2u);
}

// Operations in flight together: a residual in use is neither evicted nor
// handed out twice; released, it is both again.
TEST(FeedbackStore, ResidualsInUseArePinned) {
    FeedbackStore fs(2, 1 << 20);
    int b1, b2, b3;
    const FeedbackKey k1 = address_key(&b1), k2 = address_key(&b2), k3 = address_key(&b3);
    float *r1 = static_cast<float *>(fs.acquire(k1, 4, TERSE_DTYPE_FLOAT32));
    float *r2 = static_cast<float *>(fs.acquire(k2, 4, TERSE_DTYPE_FLOAT32));
    ASSERT_TRUE(r1 && r2);
    r1[0] = 3;
    EXPECT_EQ(fs.acquire(k1, 4, TERSE_DTYPE_FLOAT32), nullptr);  // a second operation on k1
    EXPECT_EQ(fs.acquire(k3, 4, TERSE_DTYPE_FLOAT32), nullptr);  // both slots pinned: nothing evicted
    EXPECT_EQ(r1[0], 3.0f);
    EXPECT_EQ(fs.entries(), 2u);
    fs.release(k2);
    float *r3 = static_cast<float *>(fs.acquire(k3, 4, TERSE_DTYPE_FLOAT32));  // evicts k2, not k1
    ASSERT_TRUE(r3);
    fs.release(k1);
    fs.release(k3);
    EXPECT_EQ(fs.acquire(k1, 4, TERSE_DTYPE_FLOAT32), r1);
    EXPECT_EQ(r1[0], 3.0f);
}

// Keys of different modes never name the same residual, even with equal ids.
TEST(FeedbackStore, ModesAreApart) {
    FeedbackStore fs(4, 1 << 20);
    FeedbackKey a = address_key(nullptr), t, q;
    t.mode = FeedbackKeyMode::Tag;
    q.mode = FeedbackKeyMode::Sequence;
    float *ra = static_cast<float *>(fs.acquire(a, 2, TERSE_DTYPE_FLOAT32));
    float *rt = static_cast<float *>(fs.acquire(t, 2, TERSE_DTYPE_FLOAT32));
    float *rq = static_cast<float *>(fs.acquire(q, 2, TERSE_DTYPE_FLOAT32));
    ASSERT_TRUE(ra && rt && rq);
    EXPECT_NE(ra, rt);
    EXPECT_NE(rt, rq);
    EXPECT_EQ(fs.entries(), 3u);
}

// Sequence keys: the ordinal among calls of one shape since the last step;
// a tag names only the next call.
TEST(FeedbackKeyer, SequenceOrdinalsAndTags) {
    FeedbackKeyer k;
    const auto seq = [&k](CollKind kind, terse_dtype_t dt, size_t n) {
        return k.next(FeedbackKeyMode::Sequence, kind, dt, n);
    };
    const FeedbackKey a0 = seq(CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100);
    const FeedbackKey b0 = seq(CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 200);
    const FeedbackKey a1 = seq(CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100);
    const FeedbackKey c0 = seq(CollKind::ReduceScatterBlock, TERSE_DTYPE_FLOAT32, 100);
    const FeedbackKey d0 = seq(CollKind::Allreduce, TERSE_DTYPE_FLOAT64, 100);
    EXPECT_EQ(a0.id, 0u);
    EXPECT_EQ(a1.id, 1u);
    EXPECT_EQ(b0.id, 0u);
    EXPECT_EQ(c0.id, 0u);
    EXPECT_EQ(d0.id, 0u);
    EXPECT_FALSE(a0.same(a1));
    EXPECT_FALSE(a0.same(b0));
    EXPECT_FALSE(a0.same(c0));
    EXPECT_FALSE(a0.same(d0));
    // The next iteration: the same calls get the same keys, even when a call
    // of another shape is left out.
    k.step();
    EXPECT_TRUE(seq(CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100).same(a0));
    EXPECT_TRUE(seq(CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100).same(a1));
    // Saved and restored ordinals continue where they were.
    FeedbackKeyer r;
    r.set_ordinals(k.ordinals());
    EXPECT_EQ(r.next(FeedbackKeyMode::Sequence, CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100).id, 2u);

    // Tags: a call without one is not keyed; a tag is used once.
    EXPECT_FALSE(k.next(FeedbackKeyMode::Tag, CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100).keyed);
    k.set_next_tag(42);
    const FeedbackKey t = k.next(FeedbackKeyMode::Tag, CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100);
    EXPECT_TRUE(t.keyed);
    EXPECT_EQ(t.id, 42u);
    EXPECT_FALSE(k.next(FeedbackKeyMode::Tag, CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100).keyed);
    // A tag set before a call of another mode is consumed by it too.
    k.set_next_tag(7);
    EXPECT_EQ(k.next(FeedbackKeyMode::Address, CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100).mode,
              FeedbackKeyMode::Address);
    EXPECT_FALSE(k.next(FeedbackKeyMode::Tag, CollKind::Allreduce, TERSE_DTYPE_FLOAT32, 100).keyed);
}
