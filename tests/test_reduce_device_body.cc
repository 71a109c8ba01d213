// The lossless reduction the device runs (plugins/common/reduce_elements.h,
// launched by plugins/none/none_device.cu), emulated on the host over the
// same indices, against the engine's CPU kernels (engine/reduce_kernels.h):
// every dtype and op, on random data and on the values that trip
// conversions and comparisons (signed zeros, subnormals, infinities, NaNs,
// the extremes of the integers, 16-bit rounding ties).  The results must
// be the same bits, except the payload of a NaN sum (reduce_elements.h: a
// GPU returns its canonical NaN, and which of two NaN operands the CPU
// returns is the compiler's choice of operand order), which must be a NaN.
#include "engine/reduce_kernels.h"

#include "../plugins/common/reduce_elements.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

constexpr terse_dtype_t kDtypes[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_INT32,
                                     TERSE_DTYPE_INT64,   TERSE_DTYPE_FLOAT16, TERSE_DTYPE_BFLOAT16};
constexpr terse_op_t kOps[] = {TERSE_OP_SUM, TERSE_OP_MAX, TERSE_OP_MIN};

size_t bytes_of(terse_dtype_t dt) {
    return dt == TERSE_DTYPE_FLOAT64 || dt == TERSE_DTYPE_INT64      ? 8
           : dt == TERSE_DTYPE_FLOAT16 || dt == TERSE_DTYPE_BFLOAT16 ? 2
                                                                     : 4;
}

// n elements of dt: random bit patterns mixed with special values.
std::vector<uint8_t> make(terse_dtype_t dt, size_t n, uint64_t seed) {
    std::mt19937_64 r(seed);
    const size_t eb = bytes_of(dt);
    std::vector<uint8_t> v(n * eb);
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = r();
        const int pick = static_cast<int>(r() % 16);
        switch (dt) {
        case TERSE_DTYPE_FLOAT32: {
            const float sp[] = {0.0f, -0.0f, 1e-45f, -1e-40f, INFINITY, -INFINITY, NAN, 3.4e38f, 1.0f, -2.5f};
            float f = pick < 10
                          ? sp[pick]
                          : static_cast<float>(std::ldexp(double(int64_t(bits >> 40)), int(bits % 40) - 60));
            if (pick == 15) std::memcpy(&f, &bits, 4);  // any pattern, NaN payloads included
            std::memcpy(&v[i * eb], &f, 4);
            break;
        }
        case TERSE_DTYPE_FLOAT64: {
            const double sp[] = {0.0, -0.0, 5e-324, -1e-310, INFINITY, -INFINITY, NAN, 1.7e308, 1.0, -2.5};
            double d = pick < 10 ? sp[pick] : std::ldexp(double(int64_t(bits >> 11)), int(bits % 80) - 100);
            if (pick == 15) std::memcpy(&d, &bits, 8);
            std::memcpy(&v[i * eb], &d, 8);
            break;
        }
        case TERSE_DTYPE_INT32: {
            const int32_t sp[] = {0, -1, 1, INT32_MAX, INT32_MIN};
            const int32_t x = pick < 5 ? sp[pick] : static_cast<int32_t>(bits);
            std::memcpy(&v[i * eb], &x, 4);
            break;
        }
        case TERSE_DTYPE_INT64: {
            const int64_t sp[] = {0, -1, 1, INT64_MAX, INT64_MIN};
            const int64_t x = pick < 5 ? sp[pick] : static_cast<int64_t>(bits);
            std::memcpy(&v[i * eb], &x, 8);
            break;
        }
        default: {  // 16-bit floats: every pattern is worth trying (ties, subnormals, NaN payloads)
            const uint16_t sp[] = {0x0000, 0x8000, 0x0001, 0x7c00, 0xfc00,
                                   0x7e00, 0x7c01, 0x7bff, 0x3c00, 0x0400};
            const uint16_t h = pick < 10 ? sp[pick] : static_cast<uint16_t>(bits);
            std::memcpy(&v[i * eb], &h, 2);
            break;
        }
        }
    }
    return v;
}

// The same bits, or (sums) NaN on both.
::testing::AssertionResult same_element(terse_dtype_t dt, terse_op_t op, const uint8_t *cpu, const uint8_t *dev) {
    const size_t eb = bytes_of(dt);
    if (std::memcmp(cpu, dev, eb) == 0) return ::testing::AssertionSuccess();
    if (op == TERSE_OP_SUM && terse_codec::reduce_is_nan(dt, cpu) && terse_codec::reduce_is_nan(dt, dev))
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "bits differ";
}

}  // namespace

TEST(ReduceDeviceBody, MatchesTheEngineKernelsBitForBit) {
    for (terse_dtype_t dt : kDtypes)
        for (terse_op_t op : kOps)
            for (size_t n : {size_t{1}, size_t{7}, size_t{64}, size_t{1000}, size_t{100003}}) {
                const auto acc = make(dt, n, 1000 * n + dt), in = make(dt, n, 7 * n + dt + 100 * op);
                std::vector<uint8_t> cpu = acc, dev = acc;
                terse::reduce_inplace(dt, op, cpu.data(), in.data(), n);
                ASSERT_TRUE(
                    terse_codec::reduce_emulated(terse_codec::ReduceJob{dev.data(), in.data(), n, dt, op}));
                const size_t eb = bytes_of(dt);
                for (size_t i = 0; i < n; i++)
                    ASSERT_TRUE(same_element(dt, op, &cpu[i * eb], &dev[i * eb]))
                        << "dtype " << dt << " op " << op << " n " << n << " element " << i;
            }
}

TEST(ReduceDeviceBody, EveryPairOfHalfAndBfloat16Values) {
    // All 2^16 accumulators against a spread of inputs, both 16-bit formats, all ops.
    std::vector<uint16_t> acc(65536);
    for (size_t i = 0; i < acc.size(); i++) acc[i] = static_cast<uint16_t>(i);
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT16, TERSE_DTYPE_BFLOAT16})
        for (terse_op_t op : kOps)
            for (uint16_t k :
                 {uint16_t{0x0001}, uint16_t{0x3c01}, uint16_t{0x8400}, uint16_t{0x7bff}, uint16_t{0x4248}}) {
                std::vector<uint16_t> in(acc.size());
                for (size_t i = 0; i < in.size(); i++) in[i] = static_cast<uint16_t>(i * k + k);
                std::vector<uint16_t> cpu = acc, dev = acc;
                terse::reduce_inplace(dt, op, cpu.data(), in.data(), acc.size());
                terse_codec::reduce_emulated(terse_codec::ReduceJob{dev.data(), in.data(), acc.size(), dt, op});
                for (size_t i = 0; i < acc.size(); i++)
                    ASSERT_TRUE(same_element(dt, op, reinterpret_cast<const uint8_t *>(&cpu[i]),
                                             reinterpret_cast<const uint8_t *>(&dev[i])))
                        << "dtype " << dt << " op " << op << " acc 0x" << std::hex << acc[i] << " in 0x" << in[i]
                        << ": cpu 0x" << cpu[i] << " device 0x" << dev[i];
            }
}

TEST(ReduceDeviceBody, RefusesWhatTheEngineDoesNotReduce) {
    float a = 1, b = 2;
    EXPECT_FALSE(terse_codec::reduce_dtype_ok(TERSE_DTYPE_MAX_));
    EXPECT_FALSE(terse_codec::reduce_emulated(terse_codec::ReduceJob{&a, &b, 1, TERSE_DTYPE_MAX_, TERSE_OP_SUM}));
    EXPECT_EQ(a, 1.0f);
}
