// Unit tests of the topk codec through its real module (dlopen, C ABI), plus
// white-box tests of the selection paths compiled from the plugin sources.
#include "codec_module.h"
#include "input_shapes.h"

#include "topk_collect.h"
#include "topk_float_bits.h"
#include "topk_format.h"
#include "topk_index_coding.h"
#include "topk_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using codec_test::Codec;
using codec_test::Module;
using namespace terse_topk;

namespace {

const Module &module() {
    static Module m("topk");
    return m;
}

const terse_codec_descriptor_t *desc() { return module().desc(); }

#define REQUIRE_MODULE() ASSERT_TRUE(module().error().empty()) << module().error()

template <typename T>
struct Bits;
template <>
struct Bits<float> {
    using U = uint32_t;
    static constexpr terse_dtype_t dt = TERSE_DTYPE_FLOAT32;
};
template <>
struct Bits<double> {
    using U = uint64_t;
    static constexpr terse_dtype_t dt = TERSE_DTYPE_FLOAT64;
};

template <typename U>
std::vector<U> to_bits(const void *p, size_t n) {
    std::vector<U> b(n);
    if (n) std::memcpy(b.data(), p, n * sizeof(U));
    return b;
}

// The contract: the k largest |x| (as keys), ties to the lower index, in
// ascending index order.
template <typename U>
std::vector<uint32_t> reference_topk(const std::vector<U> &bits, size_t k) {
    std::vector<uint32_t> idx(bits.size());
    std::iota(idx.begin(), idx.end(), 0u);
    const U mask = std::numeric_limits<U>::max() >> 1;  // independent of the plugin's abs_mask
    std::stable_sort(idx.begin(), idx.end(),
                     [&](uint32_t a, uint32_t b) { return (bits[a] & mask) > (bits[b] & mask); });
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    return idx;
}

// Read a payload independently of the plugin: header, indices, values.
struct Parsed {
    Header h{};
    std::vector<uint32_t> idx;
    const uint8_t *values = nullptr;
    bool ok = false;
};

Parsed parse_payload(const std::vector<uint8_t> &p, size_t vsize) {
    Parsed r;
    if (p.size() < kHeaderSize) return r;
    r.h = read_header(p.data());
    const size_t isz = r.h.index_bytes;
    if (kHeaderSize + size_t(r.h.k) * vsize + isz != p.size()) return r;
    r.values = p.data() + kHeaderSize;
    const uint8_t *sec = r.values + size_t(r.h.k) * vsize;
    r.idx.resize(r.h.k);
    auto sink = [&](size_t j, uint32_t i) { r.idx[j] = i; };
    r.ok = r.h.coding == kBitpacked ? bitpacked_read(sec, isz, r.h.k, r.h.count, sink)
                                    : varint_read(sec, isz, r.h.k, r.h.count, sink);
    return r;
}

size_t kept_for(double ratio, size_t n) {
    if (n == 0) return 0;
    const double r = std::nearbyint(ratio * double(n));
    return r < 1 ? 1 : (r >= double(n) ? n : size_t(r));
}

// Encode x with spec, then check the payload against the contract.
template <typename T>
void check_contract(const std::vector<T> &x, const std::string &spec, double ratio, const std::string &what) {
    using U = typename Bits<T>::U;
    const size_t n = x.size();
    Codec c(desc(), spec, Bits<T>::dt, std::max<size_t>(n, 1));
    ASSERT_TRUE(c.ok()) << c.error();
    const size_t k = kept_for(ratio, n);
    const auto bits = to_bits<U>(x.data(), n);
    std::vector<uint8_t> payload;
    const int rc = c.encode(x.data(), n, &payload);
    std::vector<uint32_t> ref = n ? reference_topk(bits, k) : std::vector<uint32_t>{};
    const size_t isz = n ? std::min(varint_size(ref.data(), k), bitpacked_size(ref.data(), k)) : 0;
    const bool shrinks = n > 0 && kHeaderSize + k * sizeof(U) + isz < n * sizeof(U);
    ASSERT_EQ(rc, shrinks ? TERSE_CODEC_OK : TERSE_CODEC_RAW) << what;
    if (!shrinks) return;
    EXPECT_LE(payload.size(), c.max_encoded_size(n)) << what;
    EXPECT_EQ(payload.size(), kHeaderSize + k * sizeof(U) + isz) << what << ": smaller coding chosen";
    const Parsed p = parse_payload(payload, sizeof(U));
    ASSERT_TRUE(p.ok) << what;
    EXPECT_EQ(p.h.k, k) << what;
    ASSERT_EQ(p.idx, ref) << what << ": kept set differs from the true top-k";
    for (size_t j = 0; j < k; j++) {
        U v;
        std::memcpy(&v, p.values + j * sizeof(U), sizeof(U));
        ASSERT_EQ(v, bits[ref[j]]) << what << ": kept value not exact at index " << ref[j];
    }
    // Decoding gives the sparse chunk: kept values exact, zeros elsewhere.
    std::vector<T> out(n, T(-1));
    ASSERT_EQ(c.decode(payload.data(), payload.size(), out.data(), n, false), TERSE_CODEC_OK) << what;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (j < k && ref[j] == i) {
            ASSERT_EQ(std::memcmp(&out[i], &x[i], sizeof(T)), 0) << what << " at " << i;
            j++;
        } else {
            ASSERT_EQ(out[i], T(0)) << what << " at " << i;
        }
    }
}

}  // namespace

// ---------------------------------------------------------------- descriptor and parameters

TEST(TopkCodec, Descriptor) {
    REQUIRE_MODULE();
    const auto *d = desc();
    EXPECT_EQ(d->abi_version, TERSE_CODEC_ABI_VERSION);
    EXPECT_EQ(d->struct_size, sizeof(terse_codec_descriptor_t));
    EXPECT_STREQ(d->name, "topk");
    EXPECT_EQ(d->mode, TERSE_REDUCE_GATHER);
    EXPECT_TRUE(d->flags & TERSE_CODEC_FLAG_FEEDBACK_DEFAULT);
    EXPECT_FALSE(d->flags & TERSE_CODEC_FLAG_LOSSLESS);
    EXPECT_FALSE(d->flags & TERSE_CODEC_FLAG_ERROR_BOUND);
    EXPECT_EQ(d->combine, nullptr);
    EXPECT_EQ(d->stats, nullptr);
    for (auto dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16, TERSE_DTYPE_BFLOAT16})
        EXPECT_TRUE(d->dtypes & TERSE_DTYPE_BIT(dt));
    EXPECT_FALSE(d->dtypes & TERSE_DTYPE_BIT(TERSE_DTYPE_INT32));
    for (auto *r : d->reserved) EXPECT_EQ(r, nullptr);
}

TEST(TopkCodec, ParamsDefaultsAndCanonicalText) {
    REQUIRE_MODULE();
    struct Case {
        const char *spec, *canonical;
    } cases[] = {
        {"", "ratio=0.01,select=sampled"},
        {"ratio=0.25", "ratio=0.25,select=sampled"},
        {"select=exact,ratio=1", "ratio=1,select=exact"},
        {"k=100", "k=100,select=sampled"},
        {"k=7,select=exact", "k=7,select=exact"},
        {"ratio=1e-3", "ratio=0.001,select=sampled"},
    };
    for (const auto &cs : cases) {
        Codec c(desc(), cs.spec, TERSE_DTYPE_FLOAT32, 1024);
        ASSERT_TRUE(c.ok()) << cs.spec << ": " << c.error();
        EXPECT_EQ(c.params_string(), cs.canonical) << cs.spec;
    }
}

TEST(TopkCodec, ParamsErrorsNameKeyValueAndAcceptedRange) {
    REQUIRE_MODULE();
    struct Case {
        const char *spec, *message;
    } cases[] = {
        {"ratio=1.5", "ratio=1.5 is out of range (accepted: 0 < ratio <= 1)"},
        {"ratio=0", "ratio=0 is out of range (accepted: 0 < ratio <= 1)"},
        {"ratio=-0.1", "ratio=-0.1 is out of range (accepted: 0 < ratio <= 1)"},
        {"ratio=abc", "ratio=abc is not a number (accepted: 0 < ratio <= 1)"},
        {"ratio=", "ratio= is not a number (accepted: 0 < ratio <= 1)"},
        {"ratio=nan", "ratio=nan is not a number (accepted: 0 < ratio <= 1)"},
        {"k=0", "k=0 is out of range (accepted: integer 1 <= k <= 4294967295)"},
        {"k=-5", "k=-5 is out of range (accepted: integer 1 <= k <= 4294967295)"},
        {"k=2.5", "k=2.5 is out of range (accepted: integer 1 <= k <= 4294967295)"},
        {"k=4294967296", "k=4294967296 is out of range (accepted: integer 1 <= k <= 4294967295)"},
        {"select=fast", "select=fast is not accepted (accepted: exact, sampled)"},
        {"ratio=0.1,k=5", "ratio= and k= both given; give one of them"},
        {"ratio=0.1,ratio=0.2", "parameter 'ratio' given twice"},
        {"bits=8", "unknown parameter 'bits' (accepted: ratio="},
    };
    for (const auto &cs : cases) {
        void *params = nullptr;
        std::string err;
        EXPECT_EQ(codec_test::parse(desc(), cs.spec, &params, &err), TERSE_CODEC_ERR_PARAM) << cs.spec;
        EXPECT_EQ(params, nullptr) << cs.spec;
        EXPECT_NE(err.find(cs.message), std::string::npos) << cs.spec << " gave: " << err;
    }
}

TEST(TopkCodec, CreateRefusesWhatItCannotDo) {
    REQUIRE_MODULE();
    Codec i32(desc(), "", TERSE_DTYPE_INT32, 1024);
    EXPECT_EQ(i32.status(), TERSE_CODEC_ERR_UNSUPPORTED);
    EXPECT_NE(i32.error().find("float32, float64"), std::string::npos) << i32.error();
    Codec huge(desc(), "", TERSE_DTYPE_FLOAT32, size_t(1) << 33);
    EXPECT_EQ(huge.status(), TERSE_CODEC_ERR_UNSUPPORTED);
    EXPECT_NE(huge.error().find("at most 4294967295"), std::string::npos) << huge.error();
}

// ---------------------------------------------------------------- the contract

class TopkShapes : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(TopkShapes, ExactlyTheTopKSurviveAndAreExact) {
    REQUIRE_MODULE();
    const auto &[shape, select] = GetParam();
    const size_t lengths[] = {0, 1, 2, 3, 7, 31, 33, 63, 65, 100, 1000, 4097, 8191, 8192, 8193, 65537, 262144};
    for (double ratio : {0.01, 0.1, 0.3}) {
        char spec[64];
        snprintf(spec, sizeof spec, "ratio=%g,select=%s", ratio, select.c_str());
        for (size_t n : lengths) {
            const auto v = input_shapes::make(shape, n, 11 + n);
            const std::string what = shape + " n=" + std::to_string(n) + " " + spec;
            check_contract(input_shapes::as<float>(v), spec, ratio, "f32 " + what);
            if (shape != "denormal") check_contract(input_shapes::as<double>(v), spec, ratio, "f64 " + what);
            if (HasFatalFailure()) return;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllShapes, TopkShapes,
                         ::testing::Combine(::testing::ValuesIn(input_shapes::shape_names()),
                                            ::testing::Values("exact", "sampled")),
                         [](const auto &info) {
                             return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

TEST(TopkCodec, FixedKAndTiesGoToLowerIndex) {
    REQUIRE_MODULE();
    // All equal magnitudes (with both signs): the first k indices win.
    std::vector<float> x(20000);
    for (size_t i = 0; i < x.size(); i++) x[i] = (i % 3) ? 0.5f : -0.5f;
    for (const char *sel : {"exact", "sampled"}) {
        Codec c(desc(), std::string("k=37,select=") + sel, TERSE_DTYPE_FLOAT32, x.size());
        ASSERT_TRUE(c.ok()) << c.error();
        std::vector<uint8_t> p;
        ASSERT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_OK);
        const Parsed parsed = parse_payload(p, 4);
        ASSERT_TRUE(parsed.ok);
        std::vector<uint32_t> first(37);
        std::iota(first.begin(), first.end(), 0u);
        EXPECT_EQ(parsed.idx, first) << sel;
    }
    // A tie straddling the boundary: 3 large, then many equal; k = 10.
    std::vector<double> y(50000, 1.0);
    y[40000] = 5;
    y[30000] = -7;
    y[49999] = 6;
    Codec c(desc(), "k=10", TERSE_DTYPE_FLOAT64, y.size());
    std::vector<uint8_t> p;
    ASSERT_EQ(c.encode(y.data(), y.size(), &p), TERSE_CODEC_OK);
    const Parsed parsed = parse_payload(p, 8);
    EXPECT_EQ(parsed.idx, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 30000, 40000, 49999}));
}

TEST(TopkCodec, UnalignedInput) {
    REQUIRE_MODULE();
    const auto v = input_shapes::as<float>(input_shapes::gradient(100001, 5));
    for (size_t off = 1; off < 16; off += 5) {
        std::vector<float> x(v.begin() + off, v.end());
        // Encode straight from the offset pointer and from an aligned copy.
        Codec c(desc(), "ratio=0.02", TERSE_DTYPE_FLOAT32, v.size());
        std::vector<uint8_t> a, b;
        ASSERT_EQ(c.encode(v.data() + off, v.size() - off, &a), TERSE_CODEC_OK);
        ASSERT_EQ(c.encode(x.data(), x.size(), &b), TERSE_CODEC_OK);
        EXPECT_EQ(a, b) << "offset " << off;
    }
}

TEST(TopkCodec, SampledAndExactProduceIdenticalPayloads) {
    REQUIRE_MODULE();
    for (uint64_t seed = 1; seed <= 20; seed++) {
        const size_t n = 8192 + seed * 7919;
        const auto v = input_shapes::as<float>(input_shapes::gradient(n, seed));
        Codec e(desc(), "ratio=0.01,select=exact", TERSE_DTYPE_FLOAT32, n);
        Codec s(desc(), "ratio=0.01,select=sampled", TERSE_DTYPE_FLOAT32, n);
        std::vector<uint8_t> pe, ps;
        ASSERT_EQ(e.encode(v.data(), n, &pe), TERSE_CODEC_OK);
        ASSERT_EQ(s.encode(v.data(), n, &ps), TERSE_CODEC_OK);
        EXPECT_EQ(pe, ps) << "seed " << seed;
    }
}

TEST(TopkCodec, Deterministic) {
    REQUIRE_MODULE();
    const auto v = input_shapes::as<float>(input_shapes::gradient(262144, 9));
    Codec a(desc(), "", TERSE_DTYPE_FLOAT32, v.size());
    Codec b(desc(), "", TERSE_DTYPE_FLOAT32, v.size());
    std::vector<uint8_t> p1, p2, p3;
    ASSERT_EQ(a.encode(v.data(), v.size(), &p1), TERSE_CODEC_OK);
    ASSERT_EQ(a.encode(v.data(), v.size(), &p2), TERSE_CODEC_OK);
    ASSERT_EQ(b.encode(v.data(), v.size(), &p3), TERSE_CODEC_OK);
    EXPECT_EQ(p1, p2);
    EXPECT_EQ(p1, p3);
}

// ---------------------------------------------------------------- raw chunks

template <typename T>
void expect_raw_on_nonfinite(terse_dtype_t dt, T bad, const char *what) {
    for (size_t n : {size_t(100), size_t(9000), size_t(262144)}) {
        for (const char *sel : {"exact", "sampled"}) {
            const size_t positions[] = {0, n / 2, n - 1, 64 * 3 + 17, 64 * 5};
            for (size_t pos : positions) {
                if (pos >= n) continue;
                auto x = input_shapes::as<T>(input_shapes::gradient(n, pos + 1));
                x[pos] = bad;
                Codec c(desc(), std::string("ratio=0.01,select=") + sel, dt, n);
                std::vector<uint8_t> p;
                EXPECT_EQ(c.encode(x.data(), n, &p), TERSE_CODEC_RAW)
                    << what << " at " << pos << " n=" << n << " " << sel;
            }
        }
    }
}

TEST(TopkCodec, NanOrInfGoesRaw) {
    REQUIRE_MODULE();
    expect_raw_on_nonfinite<float>(TERSE_DTYPE_FLOAT32, std::numeric_limits<float>::quiet_NaN(), "NaN");
    expect_raw_on_nonfinite<float>(TERSE_DTYPE_FLOAT32, std::numeric_limits<float>::infinity(), "+Inf");
    expect_raw_on_nonfinite<float>(TERSE_DTYPE_FLOAT32, -std::numeric_limits<float>::infinity(), "-Inf");
    expect_raw_on_nonfinite<double>(TERSE_DTYPE_FLOAT64, -std::numeric_limits<double>::quiet_NaN(), "-NaN");
    expect_raw_on_nonfinite<double>(TERSE_DTYPE_FLOAT64, std::numeric_limits<double>::infinity(), "+Inf");
    // A chunk of many NaNs: the sampled estimate overflows, exact catches it.
    std::vector<float> x(100000, std::numeric_limits<float>::quiet_NaN());
    Codec c(desc(), "", TERSE_DTYPE_FLOAT32, x.size());
    std::vector<uint8_t> p;
    EXPECT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_RAW);
}

TEST(TopkCodec, ChunkThatWouldNotShrinkGoesRaw) {
    REQUIRE_MODULE();
    const auto v = input_shapes::as<float>(input_shapes::gradient(1000, 3));
    std::vector<uint8_t> p;
    for (const char *spec : {"ratio=1", "ratio=0.99", "k=1000", "k=5000"}) {
        Codec c(desc(), spec, TERSE_DTYPE_FLOAT32, v.size());
        EXPECT_EQ(c.encode(v.data(), v.size(), &p), TERSE_CODEC_RAW) << spec;
    }
    Codec c(desc(), "", TERSE_DTYPE_FLOAT32, 16);
    EXPECT_EQ(c.encode(v.data(), 0, &p), TERSE_CODEC_RAW);
    EXPECT_EQ(c.encode(v.data(), 1, &p), TERSE_CODEC_RAW);
    EXPECT_EQ(c.encode(v.data(), 5, &p), TERSE_CODEC_RAW);
}

// ---------------------------------------------------------------- sizes

TEST(TopkCodec, WorstCaseSizeRespected) {
    REQUIRE_MODULE();
    input_shapes::Rng rng(77);
    for (int trial = 0; trial < 60; trial++) {
        const size_t n = 1000 + rng.next() % 300000;
        // Few huge values far apart (large gaps), spikes in clusters, noise.
        std::vector<float> x(n);
        for (auto &e : x) e = float(rng.normal() * 1e-3);
        const size_t spikes = 1 + rng.next() % 64;
        for (size_t s = 0; s < spikes; s++) x[rng.next() % n] = float(1 + rng.uniform());
        char spec[48];
        snprintf(spec, sizeof spec, "k=%zu", size_t(1 + rng.next() % 2000));
        Codec c(desc(), spec, TERSE_DTYPE_FLOAT32, n);
        std::vector<uint8_t> p;
        const int rc = c.encode(x.data(), n, &p);
        ASSERT_TRUE(rc == TERSE_CODEC_OK || rc == TERSE_CODEC_RAW);
        if (rc == TERSE_CODEC_OK) {
            EXPECT_LE(p.size(), c.max_encoded_size(n)) << spec << " n=" << n;
        }
    }
    // One kept element at the very end of a 2^24-element chunk: a 4-byte gap.
    std::vector<float> x(size_t(1) << 24, 0.0f);
    x.back() = 3.0f;
    Codec c(desc(), "k=1", TERSE_DTYPE_FLOAT32, x.size());
    std::vector<uint8_t> p;
    ASSERT_EQ(c.encode(x.data(), x.size(), &p), TERSE_CODEC_OK);
    EXPECT_LE(p.size(), c.max_encoded_size(x.size()));
    const Parsed parsed = parse_payload(p, 4);
    EXPECT_EQ(parsed.idx, std::vector<uint32_t>{uint32_t(x.size() - 1)});
}

TEST(TopkCodec, EncodeReportsNoSpace) {
    REQUIRE_MODULE();
    const auto v = input_shapes::as<float>(input_shapes::gradient(50000, 3));
    Codec c(desc(), "", TERSE_DTYPE_FLOAT32, v.size());
    std::vector<uint8_t> out(64);
    size_t len = 0;
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    EXPECT_EQ(desc()->encode(c.instance(), v.data(), v.size(), out.data(), out.size(), &len, &call),
              TERSE_CODEC_ERR_NOSPACE);
}

// ---------------------------------------------------------------- decoding

TEST(TopkCodec, AccumulateAddsIntoDestination) {
    REQUIRE_MODULE();
    const size_t n = 70001;
    const auto x = input_shapes::as<float>(input_shapes::gradient(n, 21));
    const auto base = input_shapes::as<float>(input_shapes::smooth(n, 22));
    Codec c(desc(), "ratio=0.05", TERSE_DTYPE_FLOAT32, n);
    std::vector<uint8_t> p;
    ASSERT_EQ(c.encode(x.data(), n, &p), TERSE_CODEC_OK);
    std::vector<float> sparse(n), acc = base;
    ASSERT_EQ(c.decode(p.data(), p.size(), sparse.data(), n, false), TERSE_CODEC_OK);
    ASSERT_EQ(c.decode(p.data(), p.size(), acc.data(), n, true, TERSE_OP_SUM), TERSE_CODEC_OK);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(acc[i], base[i] + sparse[i]) << i;
    EXPECT_EQ(c.decode(p.data(), p.size(), acc.data(), n, true, TERSE_OP_MAX), TERSE_CODEC_ERR_UNSUPPORTED);
}

TEST(TopkCodec, GatherOfFourRanksSumsTheirSparseParts) {
    REQUIRE_MODULE();
    // What the engine does in gather mode: every rank's payload is decoded
    // with accumulate into a zeroed buffer, in rank order.
    const size_t n = 262144;
    std::vector<std::vector<double>> ranks;
    for (int r = 0; r < 4; r++) ranks.push_back(input_shapes::gradient(n, 100 + r));
    Codec c(desc(), "ratio=0.01", TERSE_DTYPE_FLOAT64, n);
    std::vector<double> result(n, 0.0), expect(n, 0.0);
    for (int r = 0; r < 4; r++) {
        std::vector<uint8_t> p;
        ASSERT_EQ(c.encode(ranks[r].data(), n, &p), TERSE_CODEC_OK);
        ASSERT_EQ(c.decode(p.data(), p.size(), result.data(), n, true), TERSE_CODEC_OK);
        const auto ref = reference_topk(to_bits<uint64_t>(ranks[r].data(), n), kept_for(0.01, n));
        for (uint32_t i : ref) expect[i] += ranks[r][i];
    }
    EXPECT_EQ(std::memcmp(result.data(), expect.data(), n * sizeof(double)), 0);
}

class TopkCorrupt : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(module().error().empty()) << module().error();
        x = input_shapes::as<float>(input_shapes::gradient(n, 31));
        codec = std::make_unique<Codec>(desc(), "ratio=0.02", TERSE_DTYPE_FLOAT32, n);
        ASSERT_EQ(codec->encode(x.data(), n, &good), TERSE_CODEC_OK);
        acc = input_shapes::as<float>(input_shapes::smooth(n, 5));
    }
    // A rejected payload must leave the accumulator untouched.
    void expect_rejected(const std::vector<uint8_t> &p, const std::string &what, size_t count = 0) {
        auto before = acc;
        EXPECT_EQ(codec->decode(p.data(), p.size(), acc.data(), count ? count : n, true), TERSE_CODEC_ERR_CORRUPT)
            << what;
        EXPECT_EQ(acc, before) << what << ": accumulator changed by a rejected payload";
    }
    const size_t n = 20000;
    std::vector<float> x, acc;
    std::vector<uint8_t> good;
    std::unique_ptr<Codec> codec;
};

TEST_F(TopkCorrupt, TruncatedOrExtended) {
    for (size_t len = 0; len < good.size(); len++)
        expect_rejected(std::vector<uint8_t>(good.begin(), good.begin() + len),
                        "truncated to " + std::to_string(len));
    auto longer = good;
    longer.push_back(0);
    expect_rejected(longer, "one byte appended");
}

TEST_F(TopkCorrupt, HeaderFields) {
    auto bad = [&](size_t off, uint8_t v) {
        auto p = good;
        p[off] = v;
        return p;
    };
    expect_rejected(bad(0, 2), "version 2");
    expect_rejected(bad(1, TERSE_DTYPE_FLOAT64), "dtype float64 for a float32 instance");
    expect_rejected(bad(2, 7), "unknown index coding");
    expect_rejected(bad(3, 1), "reserved byte set");
    auto p = good;
    put_u32(p.data() + 4, uint32_t(n + 1));
    expect_rejected(p, "k > count");
    p = good;
    put_u32(p.data() + 12, get_u32(p.data() + 12) + 1);
    expect_rejected(p, "index length off by one");
    expect_rejected(good, "count mismatch", n - 1);
}

TEST_F(TopkCorrupt, IndicesOutOfRangeOrMalformed) {
    // Handcrafted payloads: 2 values, then an index section.
    auto make = [&](uint8_t coding, std::vector<uint8_t> sec, uint32_t k = 2, uint32_t count = 20000) {
        std::vector<uint8_t> p(kHeaderSize + 4 * k + sec.size());
        write_header(p.data(),
                     Header{kFormatVersion, TERSE_DTYPE_FLOAT32, coding, 0, k, count, uint32_t(sec.size())});
        for (size_t i = 0; i < sec.size(); i++) p[kHeaderSize + 4 * k + i] = sec[i];
        return p;
    };
    // Sanity: a well-formed handcrafted payload decodes.
    {
        auto p = make(kVarint, {0x05, 0x03});
        std::vector<float> out(n);
        EXPECT_EQ(codec->decode(p.data(), p.size(), out.data(), n, false), TERSE_CODEC_OK);
    }
    expect_rejected(make(kVarint, {0x05, 0xA0, 0x9C, 0x01}), "varint index 5+1+20000 >= count");
    expect_rejected(make(kVarint, {0x05}), "varint section too short");
    expect_rejected(make(kVarint, {0x05, 0x80}), "varint cut inside a gap");
    expect_rejected(make(kVarint, {0x05, 0x01, 0x00}), "varint trailing byte");
    expect_rejected(make(kVarint, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x00}), "varint gap over 35 bits");
    expect_rejected(make(kBitpacked, {33, 0, 0, 0, 0, 0, 0, 0, 0, 0}), "bit width 33");
    expect_rejected(make(kBitpacked, {16, 0xFF, 0xFF, 0xFF, 0xFF}), "bitpacked index >= count");
    expect_rejected(make(kBitpacked, {16, 0x01, 0x00}), "bitpacked section too short");
    expect_rejected(make(kBitpacked, {0, 0}), "bitpacked trailing byte");
    expect_rejected(make(kBitpacked, {}), "bitpacked empty section");
}

TEST_F(TopkCorrupt, RandomDamageNeverCrashes) {
    input_shapes::Rng rng(99);
    std::vector<float> out(n);
    for (int t = 0; t < 3000; t++) {
        auto p = good;
        const int flips = 1 + int(rng.next() % 4);
        for (int f = 0; f < flips; f++) p[rng.next() % p.size()] ^= uint8_t(1u << (rng.next() % 8));
        const int rc = codec->decode(p.data(), p.size(), out.data(), n, t & 1);
        ASSERT_TRUE(rc == TERSE_CODEC_OK || rc == TERSE_CODEC_ERR_CORRUPT) << rc;
    }
}

// ---------------------------------------------------------------- 16-bit floats

TEST(TopkCodec, HalfAndBfloat16) {
    REQUIRE_MODULE();
    const size_t n = 30000;
    const auto v = input_shapes::gradient(n, 8);
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT16, TERSE_DTYPE_BFLOAT16}) {
        const bool half = dt == TERSE_DTYPE_FLOAT16;
        std::vector<uint16_t> x(n), base(n);
        for (size_t i = 0; i < n; i++) {
            const float f = float(v[i] * 100);
            x[i] = half ? float_to_half(f) : float_to_bf16(f);
            base[i] = half ? float_to_half(float(i % 17) * 0.25f) : float_to_bf16(float(i % 17) * 0.25f);
        }
        for (const char *sel : {"exact", "sampled"}) {
            Codec c(desc(), std::string("ratio=0.01,select=") + sel, dt, n);
            ASSERT_TRUE(c.ok()) << c.error();
            std::vector<uint8_t> p;
            ASSERT_EQ(c.encode(x.data(), n, &p), TERSE_CODEC_OK);
            const Parsed parsed = parse_payload(p, 2);
            ASSERT_TRUE(parsed.ok);
            EXPECT_EQ(parsed.idx, reference_topk(x, kept_for(0.01, n))) << sel;
            auto acc = base;
            ASSERT_EQ(c.decode(p.data(), p.size(), acc.data(), n, true), TERSE_CODEC_OK);
            size_t j = 0;
            for (size_t i = 0; i < n; i++) {
                uint16_t expect = base[i];
                if (j < parsed.idx.size() && parsed.idx[j] == i) {
                    expect = half ? float_to_half(half_to_float(base[i]) + half_to_float(x[i]))
                                  : float_to_bf16(bf16_to_float(base[i]) + bf16_to_float(x[i]));
                    j++;
                }
                ASSERT_EQ(acc[i], expect) << i;
            }
        }
        std::vector<uint16_t> y = x;
        y[n / 3] = half ? 0x7e00 : 0x7fc0;  // NaN
        Codec c(desc(), "", dt, n);
        std::vector<uint8_t> p;
        EXPECT_EQ(c.encode(y.data(), n, &p), TERSE_CODEC_RAW);
    }
}

TEST(TopkHalf, ConversionsRoundTripAndRound) {
    for (uint32_t h = 0; h < 0x10000; h++) {
        const uint16_t b = uint16_t(h);
        if ((b & 0x7c00) == 0x7c00 && (b & 0x3ff)) continue;  // NaN payloads differ
        EXPECT_EQ(float_to_half(half_to_float(b)), b) << std::hex << h;
        EXPECT_EQ(float_to_bf16(bf16_to_float(b)), b) << std::hex << h;
    }
    EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
    EXPECT_EQ(float_to_half(65520.0f), 0x7c00);           // rounds to infinity
    EXPECT_EQ(float_to_half(1.0f + 0x1.0p-11f), 0x3c00);  // tie to even
    EXPECT_EQ(float_to_half(1.0f + 0x1.8p-11f), 0x3c01);
    EXPECT_EQ(float_to_half(0x1.0p-25f), 0x0000);  // tie to even (zero)
    EXPECT_EQ(float_to_half(0x1.2p-25f), 0x0001);
    EXPECT_EQ(float_to_bf16(1.0f + 0x1.0p-8f), 0x3f80);
    EXPECT_EQ(float_to_bf16(1.0f + 0x1.8p-8f), 0x3f81);
}

// ---------------------------------------------------------------- real fields

TEST(TopkCodec, SharedSampleFields) {
    REQUIRE_MODULE();
    const std::string dir = codec_test::shared_data_dir();
    const char *files[] = {"ecg_108000_f32.raw", "ascent_512x512_f32.raw", "sz3_testfloat_8x8x128_f32.raw"};
    int found = 0;
    for (const char *f : files) {
        const auto x = codec_test::read_f32(dir + "/" + f);
        if (x.empty()) continue;
        found++;
        for (double ratio : {0.01, 0.1}) {
            for (const char *sel : {"exact", "sampled"}) {
                char spec[64];
                snprintf(spec, sizeof spec, "ratio=%g,select=%s", ratio, sel);
                check_contract(x, spec, ratio, std::string(f) + " " + spec);
                check_contract(std::vector<double>(x.begin(), x.end()), spec, ratio,
                               std::string(f) + " f64 " + spec);
            }
        }
    }
    if (!found) GTEST_SKIP() << "sample data not found in TERSE_SHARED_DATA='" << dir << "'";
}

// ---------------------------------------------------------------- white box: selection paths

namespace {

template <typename U>
std::vector<uint32_t> run_select(const std::vector<U> &bits, size_t k, U inf, Method m, SelectStats *st) {
    SelectWork w;
    w.reserve(bits.size());
    std::vector<uint32_t> out(k);
    EXPECT_EQ(select_topk<U>(bits.data(), bits.size(), k, inf, m, w, out.data(), st), SelectResult::Ok);
    return out;
}

}  // namespace

TEST(TopkSelect, SampledPathIsTakenAndMatchesExact) {
    const size_t n = 262144, k = 2621;
    const auto f = input_shapes::as<float>(input_shapes::gradient(n, 12));
    const auto bits = to_bits<uint32_t>(f.data(), n);
    SelectStats st;
    const auto s = run_select<uint32_t>(bits, k, 0x7f800000u, Method::Sampled, &st);
    EXPECT_EQ(st.path, Path::Sampled);
    EXPECT_GE(st.candidates, k);
    EXPECT_LE(st.candidates, 4 * k + 4096);
    EXPECT_EQ(s, reference_topk(bits, k));
    EXPECT_EQ(run_select<uint32_t>(bits, k, 0x7f800000u, Method::Exact, nullptr), s);
}

TEST(TopkSelect, SampledFallsBackOnTies) {
    const size_t n = 100000, k = 1000;
    std::vector<uint32_t> bits(n, 0x3f000000u);  // all 0.5f
    bits[77777] = 0x40000000u;
    SelectStats st;
    const auto s = run_select<uint32_t>(bits, k, 0x7f800000u, Method::Sampled, &st);
    EXPECT_EQ(st.path, Path::SampledFallback);
    EXPECT_EQ(s, reference_topk(bits, k));
}

TEST(TopkSelect, EveryKernelGivesTheSameResult) {
    const size_t n = 150001;
    const auto v = input_shapes::gradient(n, 13);
    const auto f = input_shapes::as<float>(v);
    const auto b32 = to_bits<uint32_t>(f.data(), n);
    const auto b64 = to_bits<uint64_t>(v.data(), n);
    const auto r32 = reference_topk(b32, 1500);
    const auto r64 = reference_topk(b64, 1500);
    int tried = 0;
    for (const char *isa : {"scalar", "avx2", "avx512"}) {
        if (!collect_use_isa(isa)) continue;
        tried++;
        for (Method m : {Method::Exact, Method::Sampled}) {
            EXPECT_EQ(run_select<uint32_t>(b32, 1500, 0x7f800000u, m, nullptr), r32) << isa;
            EXPECT_EQ(run_select<uint64_t>(b64, 1500, 0x7ff0000000000000ull, m, nullptr), r64) << isa;
        }
    }
    collect_use_isa("avx512") || collect_use_isa("avx2");
    EXPECT_GE(tried, 1);
}

TEST(TopkIndexCoding, BothCodingsRoundTrip) {
    input_shapes::Rng rng(5);
    for (int t = 0; t < 200; t++) {
        const uint64_t count = 1 + rng.next() % (t < 100 ? 5000 : 4000000000ull);
        const size_t k = size_t(std::min<uint64_t>(count, 1 + rng.next() % 300));
        std::vector<uint32_t> idx;
        // Random sorted distinct indices; sometimes clustered.
        std::vector<uint64_t> pick;
        while (pick.size() < k) {
            pick.push_back((t % 3 == 0) ? rng.next() % std::min<uint64_t>(count, 4 * k) : rng.next() % count);
            std::sort(pick.begin(), pick.end());
            pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
        }
        for (auto p : pick) idx.push_back(uint32_t(p));
        for (int coding = 0; coding < 2; coding++) {
            std::vector<uint8_t> sec(coding ? bitpacked_size(idx.data(), k) : varint_size(idx.data(), k));
            const size_t w = coding ? bitpacked_write(idx.data(), k, sec.data())
                                    : varint_write(idx.data(), k, sec.data());
            ASSERT_EQ(w, sec.size());
            std::vector<uint32_t> back(k);
            auto sink = [&](size_t j, uint32_t i) { back[j] = i; };
            const bool ok = coding ? bitpacked_read(sec.data(), sec.size(), k, count, sink)
                                   : varint_read(sec.data(), sec.size(), k, count, sink);
            ASSERT_TRUE(ok) << "coding " << coding << " trial " << t;
            ASSERT_EQ(back, idx);
            if (idx.back() > 0) {  // the last index must be below count
                EXPECT_FALSE(coding ? bitpacked_read(sec.data(), sec.size(), k, idx.back(), sink)
                                    : varint_read(sec.data(), sec.size(), k, idx.back(), sink));
            }
        }
    }
}
