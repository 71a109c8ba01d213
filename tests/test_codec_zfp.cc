// Unit tests of the zfp codec through its real module (dlopen, C ABI), with
// libzfp called directly as the reference for the streams it must produce.
#include "codec_module.h"
#include "input_shapes.h"

#include <gtest/gtest.h>
#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using codec_test::Codec;
using codec_test::Module;

namespace {

constexpr size_t kHeader = 24;

const Module &module() {
    static Module m("zfp");
    return m;
}
const terse_codec_descriptor_t *desc() { return module().desc(); }

#define REQUIRE_MODULE() ASSERT_TRUE(module().error().empty()) << module().error()

template <typename T>
constexpr terse_dtype_t dtype_of() {
    return sizeof(T) == 4 ? TERSE_DTYPE_FLOAT32 : TERSE_DTYPE_FLOAT64;
}
template <typename T>
constexpr zfp_type ztype_of() {
    return sizeof(T) == 4 ? zfp_type_float : zfp_type_double;
}

// What libzfp itself writes for the same data and settings (no zfp header).
template <typename T>
std::vector<uint8_t> direct_zfp(const std::vector<T> &x, const std::string &mode, double value) {
    zfp_stream *zs = zfp_stream_open(nullptr);
    zfp_field *f = zfp_field_1d(const_cast<T *>(x.data()), ztype_of<T>(), x.size());
    if (mode == "rate") zfp_stream_set_rate(zs, value, ztype_of<T>(), 1, zfp_false);
    else if (mode == "accuracy") zfp_stream_set_accuracy(zs, value);
    else zfp_stream_set_precision(zs, unsigned(value));
    std::vector<uint8_t> buf(zfp_stream_maximum_size(zs, f));
    bitstream *bs = stream_open(buf.data(), buf.size());
    zfp_stream_set_bit_stream(zs, bs);
    zfp_stream_rewind(zs);
    buf.resize(zfp_compress(zs, f));
    stream_close(bs);
    zfp_field_free(f);
    zfp_stream_close(zs);
    return buf;
}

template <typename T>
double max_abs_diff(const std::vector<T> &a, const std::vector<T> &b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
    return m;
}

template <typename T>
double max_abs(const std::vector<T> &a) {
    double m = 0;
    for (auto v : a) m = std::max(m, std::fabs(double(v)));
    return m;
}

}  // namespace

// ---------------------------------------------------------------- descriptor and parameters

TEST(ZfpCodec, Descriptor) {
    REQUIRE_MODULE();
    const auto *d = desc();
    EXPECT_STREQ(d->name, "zfp");
    EXPECT_EQ(d->abi_version, TERSE_CODEC_ABI_VERSION);
    EXPECT_EQ(d->struct_size, sizeof(terse_codec_descriptor_t));
    EXPECT_EQ(d->mode, TERSE_REDUCE_RECOMPRESS);
    EXPECT_EQ(d->flags & (TERSE_CODEC_FLAG_LOSSLESS | TERSE_CODEC_FLAG_ERROR_BOUND), 0u)
        << "zfp promises no end-to-end bound: its error grows with the hops";
    EXPECT_EQ(d->dtypes, TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64));
    EXPECT_EQ(d->combine, nullptr);
    EXPECT_EQ(d->stats, nullptr);
    for (auto *r : d->reserved) EXPECT_EQ(r, nullptr);
}

TEST(ZfpCodec, ParamsDefaultsAndCanonicalText) {
    REQUIRE_MODULE();
    struct Case {
        const char *spec, *canonical;
    } cases[] = {
        {"", "mode=rate,rate=8"},
        {"rate=4", "mode=rate,rate=4"},
        {"mode=rate", "mode=rate,rate=8"},
        {"rate=12.5,mode=rate", "mode=rate,rate=12.5"},
        {"accuracy=1e-3", "mode=accuracy,accuracy=0.001"},
        {"mode=accuracy,accuracy=0.5", "mode=accuracy,accuracy=0.5"},
        {"precision=16", "mode=precision,precision=16"},
        {"mode=precision,precision=64", "mode=precision,precision=64"},
    };
    for (const auto &cs : cases) {
        Codec c(desc(), cs.spec, TERSE_DTYPE_FLOAT64, 1024);
        ASSERT_TRUE(c.ok()) << cs.spec << ": " << c.error();
        EXPECT_EQ(c.params_string(), cs.canonical) << cs.spec;
    }
}

TEST(ZfpCodec, ParamsErrors) {
    REQUIRE_MODULE();
    struct Case {
        const char *spec, *message;
    } cases[] = {
        {"rate=0.5",
         "rate=0.5 is out of range (accepted: 1 <= rate <= 32 for float32, 1 <= rate <= 64 for float64"},
        {"rate=65", "rate=65 is out of range"},
        {"rate=eight", "rate=eight is not a number"},
        {"accuracy=0", "accuracy=0 is out of range (accepted: absolute error tolerance > 0)"},
        {"accuracy=-1e-3", "accuracy=-1e-3 is out of range"},
        {"accuracy=inf", "accuracy=inf is not a number"},
        {"precision=0", "precision=0 is out of range (accepted: integer 1 <= precision <= 64"},
        {"precision=65", "precision=65 is out of range"},
        {"precision=8.5", "precision=8.5 is out of range"},
        {"mode=lossless", "mode=lossless is not accepted (accepted: rate, accuracy, precision)"},
        {"mode=accuracy", "mode=accuracy needs accuracy=<absolute error tolerance > 0>"},
        {"mode=precision", "mode=precision needs precision=<bit planes 1..64>"},
        {"mode=rate,accuracy=1e-3", "accuracy= does not apply to mode=rate (mode=rate takes rate=)"},
        {"rate=8,accuracy=1e-3", "rate=, accuracy= and precision= select different modes; give one of them"},
        {"rate=8,rate=4", "parameter 'rate' given twice"},
        {"tolerance=1", "unknown parameter 'tolerance' (accepted: mode=rate|accuracy|precision"},
    };
    for (const auto &cs : cases) {
        void *params = nullptr;
        std::string err;
        EXPECT_EQ(codec_test::parse(desc(), cs.spec, &params, &err), TERSE_CODEC_ERR_PARAM) << cs.spec;
        EXPECT_EQ(params, nullptr);
        EXPECT_NE(err.find(cs.message), std::string::npos) << cs.spec << " gave: " << err;
    }
    // The float32 limit on rate is known only at create.
    Codec f(desc(), "rate=40", TERSE_DTYPE_FLOAT32, 1024);
    EXPECT_EQ(f.status(), TERSE_CODEC_ERR_PARAM);
    EXPECT_NE(f.error().find("rate=40 is out of range for float32 (accepted: 1 <= rate <= 32"), std::string::npos)
        << f.error();
    Codec d(desc(), "rate=40", TERSE_DTYPE_FLOAT64, 1024);
    EXPECT_TRUE(d.ok()) << d.error();
    Codec i(desc(), "", TERSE_DTYPE_INT32, 1024);
    EXPECT_EQ(i.status(), TERSE_CODEC_ERR_UNSUPPORTED);
    Codec h(desc(), "", TERSE_DTYPE_FLOAT16, 1024);
    EXPECT_EQ(h.status(), TERSE_CODEC_ERR_UNSUPPORTED);
}

// ---------------------------------------------------------------- fixed rate

template <typename T>
void check_rate(double rate, const std::vector<T> &x, const std::string &what) {
    Codec c(desc(), "rate=" + std::to_string(rate), dtype_of<T>(), x.size());
    ASSERT_TRUE(c.ok()) << c.error();
    std::vector<uint8_t> p;
    const int rc = c.encode(x.data(), x.size(), &p);
    const auto ref = direct_zfp(x, "rate", rate);
    if (kHeader + ref.size() >= x.size() * sizeof(T)) {
        EXPECT_EQ(rc, TERSE_CODEC_RAW) << what;
        return;
    }
    ASSERT_EQ(rc, TERSE_CODEC_OK) << what;
    EXPECT_LE(p.size(), c.max_encoded_size(x.size())) << what;
    ASSERT_EQ(p.size(), kHeader + ref.size()) << what;
    EXPECT_TRUE(std::equal(ref.begin(), ref.end(), p.begin() + kHeader))
        << what << ": stream differs from libzfp's";
    std::vector<T> y(x.size());
    ASSERT_EQ(c.decode(p.data(), p.size(), y.data(), y.size(), false), TERSE_CODEC_OK) << what;
    for (auto v : y) ASSERT_TRUE(std::isfinite(double(v))) << what;
}

TEST(ZfpCodec, FixedRateMatchesLibzfpAndItsSize) {
    REQUIRE_MODULE();
    for (const auto &shape : input_shapes::shape_names()) {
        for (size_t n : {1, 3, 4, 5, 63, 1000, 4097, 100003, 262144}) {
            const auto v = input_shapes::make(shape, n, n);
            for (double rate : {1.0, 2.0, 4.0, 8.0, 12.5, 16.0, 32.0}) {
                const std::string what = shape + " n=" + std::to_string(n) + " rate=" + std::to_string(rate);
                check_rate(rate, input_shapes::as<float>(v), "f32 " + what);
                check_rate(rate, input_shapes::as<double>(v), "f64 " + what);
                if (HasFatalFailure()) return;
            }
        }
    }
    // The exact wire size: 8 bits per value in whole 64-bit words.
    const auto v = input_shapes::as<float>(input_shapes::gradient(262144));
    Codec c(desc(), "rate=8", TERSE_DTYPE_FLOAT32, v.size());
    std::vector<uint8_t> p;
    ASSERT_EQ(c.encode(v.data(), v.size(), &p), TERSE_CODEC_OK);
    EXPECT_EQ(p.size(), kHeader + 262144);
}

TEST(ZfpCodec, SmoothDataAtHighRateIsAccurate) {
    REQUIRE_MODULE();
    const auto x = input_shapes::smooth(100000);
    Codec c(desc(), "rate=24", TERSE_DTYPE_FLOAT64, x.size());
    std::vector<uint8_t> p;
    ASSERT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_OK);
    std::vector<double> y(x.size());
    ASSERT_EQ(c.decode(p.data(), p.size(), y.data(), y.size(), false), TERSE_CODEC_OK);
    EXPECT_LT(max_abs_diff(x, y), 1e-4 * max_abs(x));
}

// ---------------------------------------------------------------- fixed accuracy

template <typename T>
void check_accuracy(double tol, const std::vector<T> &x, const std::string &what, int *encoded) {
    char spec[64];
    snprintf(spec, sizeof spec, "accuracy=%.17g", tol);
    Codec c(desc(), spec, dtype_of<T>(), std::max<size_t>(x.size(), 1));
    if (tol < (sizeof(T) == 4 ? 0x1.0p-90 : 0x1.0p-900)) {  // below zfp's floor: refused
        EXPECT_EQ(c.status(), TERSE_CODEC_ERR_PARAM) << what;
        EXPECT_NE(c.error().find("is below what zfp can honour"), std::string::npos) << c.error();
        return;
    }
    ASSERT_TRUE(c.ok()) << c.error();
    std::vector<uint8_t> p;
    const int rc = c.encode(x.data(), x.size(), &p);
    ASSERT_TRUE(rc == TERSE_CODEC_OK || rc == TERSE_CODEC_RAW) << what;
    if (rc == TERSE_CODEC_RAW) {
        // Raw only when zfp would not shrink it or cannot honour the tolerance.
        const auto ref = x.empty() ? std::vector<uint8_t>{} : direct_zfp(x, "accuracy", tol);
        const double limit = tol * (sizeof(T) == 4 ? 0x1.0p23 : 0x1.0p52);
        EXPECT_TRUE(x.empty() || kHeader + ref.size() >= x.size() * sizeof(T) || max_abs(x) > limit) << what;
        return;
    }
    ++*encoded;
    EXPECT_LE(p.size(), c.max_encoded_size(x.size())) << what;
    // Same stream as libzfp's own accuracy mode: the tighter maxbits never binds.
    const auto ref = direct_zfp(x, "accuracy", tol);
    ASSERT_EQ(p.size(), kHeader + ref.size()) << what;
    EXPECT_TRUE(std::equal(ref.begin(), ref.end(), p.begin() + kHeader)) << what;
    std::vector<T> y(x.size());
    ASSERT_EQ(c.decode(p.data(), p.size(), y.data(), y.size(), false), TERSE_CODEC_OK) << what;
    EXPECT_LE(max_abs_diff(x, y), tol) << what;
}

TEST(ZfpCodec, AccuracyModeKeepsTheTolerancePerEncode) {
    REQUIRE_MODULE();
    int encoded = 0;
    for (const auto &shape : input_shapes::shape_names()) {
        for (size_t n : {0, 1, 4, 7, 1000, 65537, 262144}) {
            const auto v = input_shapes::make(shape, n, 7 + n);
            const double m = max_abs(v);
            for (double rel : {1e-1, 1e-3, 1e-6, 1e-9}) {
                const double tol = m > 0 ? m * rel : rel;
                const std::string what = shape + " n=" + std::to_string(n) + " tol=" + std::to_string(tol);
                check_accuracy(tol, input_shapes::as<float>(v), "f32 " + what, &encoded);
                check_accuracy(tol, input_shapes::as<double>(v), "f64 " + what, &encoded);
                if (HasFatalFailure()) return;
            }
        }
    }
    EXPECT_GT(encoded, 100) << "almost everything went raw";
}

TEST(ZfpCodec, AccuracyBeyondFloatResolutionGoesRaw) {
    REQUIRE_MODULE();
    // |x| up to 1e6 with tolerance 1e-3: float32 cannot resolve it (2^23 * 1e-3 < 1e6).
    auto x = input_shapes::as<float>(input_shapes::smooth(10000));
    for (auto &v : x) v = v * 1e6f;
    Codec c(desc(), "accuracy=1e-3", TERSE_DTYPE_FLOAT32, x.size());
    std::vector<uint8_t> p;
    EXPECT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_RAW);
    // The same in float64 has the resolution.
    std::vector<double> d(x.begin(), x.end());
    Codec c64(desc(), "accuracy=1e-3", TERSE_DTYPE_FLOAT64, d.size());
    ASSERT_EQ(c64.encode(d.data(), d.size(), &p), TERSE_CODEC_OK);
    std::vector<double> y(d.size());
    ASSERT_EQ(c64.decode(p.data(), p.size(), y.data(), y.size(), false), TERSE_CODEC_OK);
    EXPECT_LE(max_abs_diff(d, y), 1e-3);
}

TEST(ZfpCodec, BlocksBelowTheFloatFloorStayWithinTolerance) {
    REQUIRE_MODULE();
    // Blocks of float32 values far below 2^-97 (libzfp's scale overflows
    // there) next to ordinary ones; the smallest accepted tolerance holds.
    std::vector<float> x = input_shapes::as<float>(input_shapes::gradient(40000, 6));
    for (size_t i = 0; i < x.size(); i += 16)
        for (size_t j = 0; j < 8; j++) x[i + j] = x[i + j] * 1e-28f;
    const double tol = 0x1.0p-90;
    char spec[64];
    snprintf(spec, sizeof spec, "accuracy=%.17g", tol);
    Codec c(desc(), spec, TERSE_DTYPE_FLOAT32, x.size());
    ASSERT_TRUE(c.ok()) << c.error();
    Codec below(desc(), "accuracy=1e-30", TERSE_DTYPE_FLOAT32, x.size());
    EXPECT_EQ(below.status(), TERSE_CODEC_ERR_PARAM);
    std::vector<uint8_t> p;
    const int rc = c.encode(x.data(), x.size(), &p);
    ASSERT_TRUE(rc == TERSE_CODEC_OK || rc == TERSE_CODEC_RAW);
    // The input's largest magnitude is far above tol * 2^23: raw keeps the bound.
    EXPECT_EQ(rc, TERSE_CODEC_RAW);
    // Ordinary values ~1e-24 (within tol * 2^23) and blocks ~1e-32 (below
    // 2^-97): the tiny blocks still decode within tolerance.
    x = input_shapes::as<float>(input_shapes::gradient(40000, 6));
    size_t tiny = 0;
    for (size_t i = 0; i < x.size(); i++) {
        x[i] *= (i % 16 < 8) ? 1e-29f : 1e-21f;
        tiny += (i % 16 < 8) && x[i] != 0 && std::fabs(x[i]) < 0x1.0p-97f;
    }
    ASSERT_GT(tiny, x.size() / 4);
    ASSERT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_OK);
    std::vector<float> y(x.size());
    ASSERT_EQ(c.decode(p.data(), p.size(), y.data(), y.size(), false), TERSE_CODEC_OK);
    EXPECT_LE(max_abs_diff(x, y), tol);
}

TEST(ZfpCodec, PrecisionModeRoundTrips) {
    REQUIRE_MODULE();
    const auto x = input_shapes::as<float>(input_shapes::smooth(50000));
    for (int prec : {4, 12, 20, 32}) {
        Codec c(desc(), "precision=" + std::to_string(prec), TERSE_DTYPE_FLOAT32, x.size());
        std::vector<uint8_t> p;
        const int rc = c.encode(x.data(), x.size(), &p);
        if (rc == TERSE_CODEC_RAW) continue;  // high precision may not shrink
        ASSERT_EQ(rc, TERSE_CODEC_OK);
        const auto ref = direct_zfp(x, "precision", prec);
        ASSERT_EQ(p.size(), kHeader + ref.size());
        EXPECT_TRUE(std::equal(ref.begin(), ref.end(), p.begin() + kHeader)) << prec;
        std::vector<float> y(x.size());
        ASSERT_EQ(c.decode(p.data(), p.size(), y.data(), y.size(), false), TERSE_CODEC_OK);
        EXPECT_LT(max_abs_diff(x, y), std::ldexp(max_abs(x), 4 - prec)) << prec;
    }
}

// ---------------------------------------------------------------- raw chunks

TEST(ZfpCodec, NonFiniteOrNonShrinkingGoesRaw) {
    REQUIRE_MODULE();
    for (const char *spec : {"rate=8", "accuracy=1e-3", "precision=16"}) {
        for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
            auto x = input_shapes::as<float>(input_shapes::smooth(5000));
            x[4321] = bad;
            Codec c(desc(), spec, TERSE_DTYPE_FLOAT32, x.size());
            std::vector<uint8_t> p;
            EXPECT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_RAW) << spec << " " << bad;
        }
        std::vector<double> d(100, 1.0);
        d[0] = -std::numeric_limits<double>::infinity();
        Codec c(desc(), spec, TERSE_DTYPE_FLOAT64, d.size());
        std::vector<uint8_t> p;
        EXPECT_EQ(c.encode(d.data(), d.size(), &p), TERSE_CODEC_RAW) << spec;
        EXPECT_EQ(c.encode(d.data() + 1, 0, &p), TERSE_CODEC_RAW) << spec << " count 0";
        EXPECT_EQ(c.encode(d.data() + 1, 1, &p), TERSE_CODEC_RAW) << spec << " count 1";
    }
    const auto x = input_shapes::as<float>(input_shapes::gradient(1000));
    Codec c(desc(), "rate=32", TERSE_DTYPE_FLOAT32, x.size());
    std::vector<uint8_t> p;
    EXPECT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_RAW);
}

// ---------------------------------------------------------------- decoding and hops

TEST(ZfpCodec, AccumulateAddsDecodedValues) {
    REQUIRE_MODULE();
    for (const char *spec : {"rate=8", "accuracy=1e-4"}) {
        const auto x = input_shapes::as<float>(input_shapes::smooth(30001, 4));
        const auto base = input_shapes::as<float>(input_shapes::gradient(30001, 5));
        Codec c(desc(), spec, TERSE_DTYPE_FLOAT32, x.size());
        std::vector<uint8_t> p;
        ASSERT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_OK) << spec;
        std::vector<float> y(x.size()), acc = base;
        ASSERT_EQ(c.decode(p.data(), p.size(), y.data(), y.size(), false), TERSE_CODEC_OK);
        ASSERT_EQ(c.decode(p.data(), p.size(), acc.data(), acc.size(), true), TERSE_CODEC_OK);
        for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(acc[i], base[i] + y[i]) << spec << " " << i;
        EXPECT_EQ(c.decode(p.data(), p.size(), acc.data(), acc.size(), true, TERSE_OP_MAX),
                  TERSE_CODEC_ERR_UNSUPPORTED);
    }
}

TEST(ZfpCodec, RecompressErrorGrowsWithHopsWithinRanksTimesTolerance) {
    REQUIRE_MODULE();
    // A ring reduce-scatter chunk: encoded at each of the P-1 hops (decode,
    // add the local part, re-encode) and once more for the allgather.
    const size_t n = 65536;
    const double tol = 1e-4;
    for (int ranks : {2, 3, 4, 5, 8}) {
        std::vector<std::vector<double>> in;
        for (int r = 0; r < ranks; r++) in.push_back(input_shapes::smooth(n, 40 + r));
        Codec c(desc(), "accuracy=1e-4", TERSE_DTYPE_FLOAT64, n);
        std::vector<double> acc = in[0], exact = in[0];
        std::vector<uint8_t> p;
        for (int r = 1; r < ranks; r++) {
            ASSERT_EQ(c.encode(acc.data(), n, &p), TERSE_CODEC_OK);
            acc = in[r];
            ASSERT_EQ(c.decode(p.data(), p.size(), acc.data(), n, true), TERSE_CODEC_OK);
            for (size_t i = 0; i < n; i++) exact[i] += in[r][i];
        }
        ASSERT_EQ(c.encode(acc.data(), n, &p), TERSE_CODEC_OK);
        std::vector<double> result(n);
        ASSERT_EQ(c.decode(p.data(), p.size(), result.data(), n, false), TERSE_CODEC_OK);
        const double err = max_abs_diff(result, exact);
        EXPECT_LE(err, ranks * tol * (1 + 1e-9)) << ranks << " ranks";
        RecordProperty("max_err_" + std::to_string(ranks) + "_ranks", std::to_string(err));
    }
}

// ---------------------------------------------------------------- corrupt payloads

class ZfpCorrupt : public ::testing::TestWithParam<const char *> {
protected:
    void SetUp() override {
        ASSERT_TRUE(module().error().empty()) << module().error();
        x = input_shapes::as<float>(input_shapes::smooth(n, 3));
        codec = std::make_unique<Codec>(desc(), GetParam(), TERSE_DTYPE_FLOAT32, n);
        ASSERT_TRUE(codec->ok()) << codec->error();
        ASSERT_EQ(codec->encode(x.data(), n, &good), TERSE_CODEC_OK);
        acc = input_shapes::as<float>(input_shapes::gradient(n, 5));
    }
    void expect_rejected(const std::vector<uint8_t> &p, const std::string &what, size_t count = 0) {
        auto before = acc;
        EXPECT_EQ(codec->decode(p.data(), p.size(), acc.data(), count ? count : n, true), TERSE_CODEC_ERR_CORRUPT)
            << what;
        EXPECT_EQ(acc, before) << what << ": accumulator changed by a rejected payload";
    }
    const size_t n = 10000;
    std::vector<float> x, acc;
    std::vector<uint8_t> good;
    std::unique_ptr<Codec> codec;
};

TEST_P(ZfpCorrupt, TruncatedExtendedAndForeign) {
    for (size_t len = 0; len < good.size(); len += (len < 64 ? 1 : 37))
        expect_rejected(std::vector<uint8_t>(good.begin(), good.begin() + len),
                        "truncated to " + std::to_string(len));
    auto longer = good;
    longer.resize(good.size() + 8);
    expect_rejected(longer, "8 bytes appended");
    auto bad = [&](size_t off, uint8_t v) {
        auto p = good;
        p[off] = v;
        return p;
    };
    expect_rejected(bad(0, 9), "version");
    expect_rejected(bad(1, TERSE_DTYPE_FLOAT64), "dtype");
    expect_rejected(bad(2, good[2] ^ 1), "mode");
    expect_rejected(bad(3, 1), "reserved");
    expect_rejected(bad(8, good[8] ^ 0x10), "mode parameter");
    expect_rejected(bad(16, good[16] ^ 1), "count field");
    expect_rejected(good, "count mismatch", n - 4);
    // A payload from an instance with other parameters is foreign.
    Codec other(desc(), std::string(GetParam()) == "rate=8" ? "rate=4" : "accuracy=1e-2", TERSE_DTYPE_FLOAT32, n);
    std::vector<uint8_t> p;
    ASSERT_EQ(other.encode(x.data(), n, &p), TERSE_CODEC_OK);
    expect_rejected(p, "other parameters");
}

TEST_P(ZfpCorrupt, RandomStreamDamageNeverCrashes) {
    input_shapes::Rng rng(17);
    std::vector<float> out(n);
    for (int t = 0; t < 300; t++) {
        auto p = good;
        for (int f = 0; f < 8; f++) p[kHeader + rng.next() % (p.size() - kHeader)] = uint8_t(rng.next());
        const int rc = codec->decode(p.data(), p.size(), out.data(), n, t & 1);
        ASSERT_TRUE(rc == TERSE_CODEC_OK || rc == TERSE_CODEC_ERR_CORRUPT) << rc;
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, ZfpCorrupt, ::testing::Values("rate=8", "accuracy=1e-3", "precision=12"),
                         [](const auto &info) {
                             std::string s = info.param;
                             return s.substr(0, s.find('='));
                         });

// ---------------------------------------------------------------- real fields

TEST(ZfpCodec, SharedSampleFields) {
    REQUIRE_MODULE();
    const std::string dir = codec_test::shared_data_dir();
    int found = 0, encoded = 0;
    for (const char *f : {"ecg_108000_f32.raw", "ascent_512x512_f32.raw", "sz3_testfloat_8x8x128_f32.raw"}) {
        const auto x = codec_test::read_f32(dir + "/" + f);
        if (x.empty()) continue;
        found++;
        const double m = max_abs(x);
        for (double rel : {1e-2, 1e-4}) check_accuracy(m * rel, x, std::string(f), &encoded);
        check_rate(8.0, x, std::string(f) + " rate=8");
        check_rate(16.0, std::vector<double>(x.begin(), x.end()), std::string(f) + " f64 rate=16");
    }
    if (!found) GTEST_SKIP() << "sample data not found in TERSE_SHARED_DATA='" << dir << "'";
    EXPECT_GT(encoded, 0);
}
