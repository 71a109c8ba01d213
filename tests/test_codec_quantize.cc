// quantize codec: parameters, round trips within the stated bound, the
// emulated summable reduction of 1..8 ranks, bit-identical code paths,
// sizes, and rejection of corrupt payloads.  The codec is linked in
// (plugins/quantize/libquantize_impl.la) so each SIMD path can be forced.
#include "codec_test_data.h"
#include "codec_test_util.h"

#include "../plugins/quantize/quantize_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <string>
#include <vector>

using namespace codec_test;
namespace tq = terse_quantize;
using terse_codec::Isa;

namespace {

using InstPtr = InstancePtr<tq::Instance>;

tq::Params params_of(int bits, int block = 256, tq::Rounding r = tq::kNearest) {
    tq::Params p;
    p.bits = bits;
    p.log2_block = terse_codec::bit_length(static_cast<uint64_t>(block)) - 1;
    p.rounding = r;
    return p;
}

InstPtr make_inst(const tq::Params &p, terse_dtype_t dt, int nranks, Isa isa = terse_codec::best_isa()) {
    tq::Instance *inst = nullptr;
    char err[256] = {0};
    const int rc = create_host_instance(p, dt, nranks, 1 << 22, isa, &inst, err, sizeof err);
    EXPECT_EQ(rc, TERSE_CODEC_OK) << err;
    return InstPtr(inst);
}

// Per-rank error the man page states for a block whose agreed max |x| is m
// and (1-bit nearest) whose agreed mean |x| is s.
double per_rank_error(double m, double s, int bits, tq::Rounding r) {
    if (bits == 1) return r == tq::kNearest ? std::max(s, m - s) : 2 * m;
    const double u = m / static_cast<double>((1u << (bits - 1)) - 1u);
    return r == tq::kNearest ? u / 2 : u;
}

// The agreed max |x| of each block, computed here from the data (not by the codec).
std::vector<double> reference_block_max(const std::vector<Buf> &in, int block) {
    const size_t n = in[0].n;
    std::vector<double> m((n + block - 1) / block, 0.0);
    for (const Buf &b : in)
        for (size_t i = 0; i < n; i++) m[i / block] = std::max(m[i / block], std::fabs(b.get(i)));
    return m;
}

// The agreed mean |x| of each block: the max over ranks of each rank's block mean.
std::vector<double> reference_block_mean(const std::vector<Buf> &in, int block) {
    const size_t n = in[0].n;
    std::vector<double> s((n + block - 1) / block, 0.0);
    for (const Buf &b : in)
        for (size_t first = 0; first < n; first += block) {
            const size_t len = std::min<size_t>(block, n - first);
            double sum = 0;
            for (size_t i = first; i < first + len; i++) sum += std::fabs(b.get(i));
            s[first / block] = std::max(s[first / block], sum / static_cast<double>(len));
        }
    return s;
}

struct Reduction {
    int rc = TERSE_CODEC_OK;       // RAW if the ranks sent the chunk raw
    std::vector<uint8_t> payload;  // fully combined payload
    Buf result;
};

// Emulates the engine's summable path: stats on every rank, MAX across
// ranks, encode with the agreed stats, combine hop by hop in ring order
// (or as a tree), decode the fully combined payload.
Reduction reduce(const tq::Instance &inst, const std::vector<Buf> &in, bool tree = false, uint64_t seed = 42) {
    Reduction out;
    const size_t n = in[0].n;
    const int nranks = static_cast<int>(in.size());
    const size_t ns = tq::stats_count(inst, n);
    std::vector<double> agreed(ns, 0.0), local(ns);
    for (const Buf &b : in) {
        EXPECT_EQ(tq::stats(inst, b.data(), n, local.data()), TERSE_CODEC_OK);
        for (size_t i = 0; i < ns; i++) agreed[i] = std::max(agreed[i], local[i]);
    }
    const size_t cap = tq::max_encoded_size(inst, n);
    std::vector<std::vector<uint8_t>> enc(nranks);
    int first_rc = 0;
    for (int r = 0; r < nranks; r++) {
        enc[r].assign(cap, 0xee);
        terse_codec_call_t call{};
        call.struct_size = sizeof call;
        call.agreed_stats = agreed.data();
        call.seed = seed + static_cast<uint64_t>(r);
        size_t len = 0;
        const int rc = tq::encode(inst, in[r].data(), n, enc[r].data(), cap, &len, &call);
        if (r == 0) first_rc = rc;
        EXPECT_EQ(rc, first_rc) << "ranks disagree on raw for rank " << r;
        if (rc != TERSE_CODEC_OK) {
            out.rc = rc;
            continue;
        }
        EXPECT_LE(len, cap);
        enc[r].resize(len);
    }
    if (out.rc != TERSE_CODEC_OK) return out;

    auto comb = [&](const std::vector<uint8_t> &a, int ca, const std::vector<uint8_t> &b, int cb) {
        std::vector<uint8_t> o(cap, 0xdd);
        size_t len = 0;
        const int rc = tq::combine(inst, a.data(), a.size(), ca, b.data(), b.size(), cb, n, o.data(), o.size(),
                                   &len);
        EXPECT_EQ(rc, TERSE_CODEC_OK);
        EXPECT_LE(len, cap);
        o.resize(rc == TERSE_CODEC_OK ? len : 0);
        return o;
    };
    if (!tree) {
        std::vector<uint8_t> acc = enc[0];
        for (int r = 1; r < nranks; r++) acc = comb(acc, r, enc[r], 1);
        out.payload = acc;
    } else {
        std::vector<std::pair<std::vector<uint8_t>, int>> level;
        for (auto &e : enc) level.push_back({e, 1});
        while (level.size() > 1) {
            std::vector<std::pair<std::vector<uint8_t>, int>> next;
            for (size_t i = 0; i + 1 < level.size(); i += 2)
                next.push_back({comb(level[i].first, level[i].second, level[i + 1].first, level[i + 1].second),
                                level[i].second + level[i + 1].second});
            if (level.size() % 2) next.push_back(level.back());
            level.swap(next);
        }
        out.payload = level[0].first;
    }
    out.result = Buf(in[0].dt, n);
    EXPECT_EQ(tq::decode(inst, out.payload.data(), out.payload.size(), out.result.data(), n, 0, TERSE_OP_SUM),
              TERSE_CODEC_OK);
    return out;
}

// Every element within n * per_rank_error(m) * (1 + 2^-32) + ulp(result) of the exact sum.
::testing::AssertionResult within_bound(const std::vector<Buf> &in, const Buf &res, const tq::Params &p) {
    const int block = 1 << p.log2_block;
    const std::vector<double> m = reference_block_max(in, block);
    // The codec sums means in another order: allow for it (1e-12 relative).
    std::vector<double> s = reference_block_mean(in, block);
    for (double &v : s) v *= 1 + 1e-12;
    const double nr = static_cast<double>(in.size());
    double worst = 0;
    for (size_t i = 0; i < res.n; i++) {
        __float128 ex = 0;  // exact sums of up to 8 inputs
        for (const Buf &b : in) ex += static_cast<__float128>(b.get(i));
        const double exact = static_cast<double>(ex);
        const double r = res.get(i);
        if (std::fabs(exact) > max_finite(res.dt)) continue;  // saturated: no finite answer exists
        const double bound = nr * per_rank_error(m[i / block], s[i / block], p.bits, p.rounding) * (1 + 0x1p-32) +
                             ulp_of(res.dt, r);
        const __float128 d = static_cast<__float128>(r) - ex;
        const double err = std::fabs(static_cast<double>(d));
        if (!(d <= static_cast<__float128>(bound) && -d <= static_cast<__float128>(bound)))
            return ::testing::AssertionFailure()
                   << "element " << i << ": result " << r << " exact " << exact << " error " << err << " > bound "
                   << bound << " (block max " << m[i / block] << ")";
        if (bound > 0) worst = std::max(worst, err / bound);
    }
    return ::testing::AssertionSuccess() << "worst error/bound " << worst;
}

std::vector<Buf> rank_inputs(terse_dtype_t dt, Shape s, size_t n, int nranks, uint64_t seed,
                             size_t misalign = 0) {
    std::vector<Buf> v;
    for (int r = 0; r < nranks; r++) v.push_back(make_buf(dt, make_shape(s, n, seed, r), misalign));
    return v;
}

bool shape_fits(terse_dtype_t dt, Shape s) {
    // 1e30 does not fit the 16-bit formats' range: such chunks go raw (tested separately).
    return !(s == Shape::Huge && dt == TERSE_DTYPE_FLOAT16);
}

}  // namespace

// ---------------------------------------------------------------- parameters

TEST(QuantizeParams, DefaultsAndCanonicalString) {
    tq::Params p;
    char err[256] = {0};
    ASSERT_EQ(tq::parse_params(nullptr, 0, &p, err, sizeof err), TERSE_CODEC_OK);
    char buf[128];
    const size_t n = tq::params_string(p, buf, sizeof buf);
    EXPECT_STREQ(buf, "bits=8,block=256,rounding=nearest");
    EXPECT_EQ(n, std::strlen(buf));

    const terse_codec_kv_t kv[] = {{"bits", "4"}, {"block", "1024"}, {"rounding", "stochastic"}};
    ASSERT_EQ(tq::parse_params(kv, 3, &p, err, sizeof err), TERSE_CODEC_OK) << err;
    tq::params_string(p, buf, sizeof buf);
    EXPECT_STREQ(buf, "bits=4,block=1024,rounding=stochastic");
    // Truncation reports the full length, like snprintf.
    char small[8];
    EXPECT_EQ(tq::params_string(p, small, sizeof small), std::strlen("bits=4,block=1024,rounding=stochastic"));
    EXPECT_EQ(std::strlen(small), 7u);
    // The default block follows the width (scale and stats overhead near 5%).
    for (auto [bits, block] :
         {std::pair{"1", "2048"}, {"2", "1024"}, {"4", "512"}, {"8", "256"}, {"16", "256"}}) {
        const terse_codec_kv_t b[] = {{"bits", bits}};
        ASSERT_EQ(tq::parse_params(b, 1, &p, err, sizeof err), TERSE_CODEC_OK);
        tq::params_string(p, buf, sizeof buf);
        EXPECT_EQ(std::string(buf), std::string("bits=") + bits + ",block=" + block + ",rounding=nearest");
    }
}

TEST(QuantizeParams, RejectsWithMessages) {
    struct Case {
        terse_codec_kv_t kv;
        const char *msg;
    } cases[] = {
        {{"bits", "3"}, "bits=3 is not accepted (accepted: 1, 2, 4, 8, 16)"},
        {{"bits", "32"}, "bits=32 is not accepted (accepted: 1, 2, 4, 8, 16)"},
        {{"bits", "-8"}, "bits=-8 is not accepted (accepted: 1, 2, 4, 8, 16)"},
        {{"bits", "8x"}, "bits=8x is not accepted (accepted: 1, 2, 4, 8, 16)"},
        {{"bits", ""}, "bits= is not accepted (accepted: 1, 2, 4, 8, 16)"},
        {{"block", "100"}, "block=100 is not accepted (accepted: a power of two from 32 to 65536)"},
        {{"block", "16"}, "block=16 is not accepted (accepted: a power of two from 32 to 65536)"},
        {{"block", "131072"}, "block=131072 is not accepted (accepted: a power of two from 32 to 65536)"},
        {{"rounding", "up"}, "rounding=up is not accepted (accepted: nearest, stochastic)"},
        {{"bitz", "8"}, "unknown parameter 'bitz' (accepted: bits, block, rounding)"},
    };
    for (const Case &c : cases) {
        tq::Params p;
        char err[256] = {0};
        EXPECT_EQ(tq::parse_params(&c.kv, 1, &p, err, sizeof err), TERSE_CODEC_ERR_PARAM) << c.kv.key;
        EXPECT_STREQ(err, c.msg);
    }
    const terse_codec_kv_t twice[] = {{"bits", "8"}, {"bits", "4"}};
    tq::Params p;
    char err[256] = {0};
    EXPECT_EQ(tq::parse_params(twice, 2, &p, err, sizeof err), TERSE_CODEC_ERR_PARAM);
    EXPECT_STREQ(err, "parameter 'bits' is given twice");
}

TEST(QuantizeCreate, RefusesWhatItCannotDo) {
    terse_codec_setup_t s{};
    s.struct_size = sizeof s;
    s.dtype = TERSE_DTYPE_INT32;
    s.mem_kind = TERSE_MEM_HOST;
    s.nranks = 4;
    tq::Instance *inst = nullptr;
    char err[256] = {0};
    EXPECT_EQ(tq::create_instance(tq::Params{}, &s, Isa::Scalar, &inst, err, sizeof err),
              TERSE_CODEC_ERR_UNSUPPORTED);
    EXPECT_STREQ(err, "dtype 3 is not supported (accepted: float32, float64, float16, bfloat16)");
    s.dtype = TERSE_DTYPE_FLOAT32;
    s.mem_kind = TERSE_MEM_CUDA;  // only in a build with the device kernels
    if (tq::mem_kinds() & TERSE_MEM_CUDA) {
        ASSERT_EQ(tq::create_instance(tq::Params{}, &s, Isa::Scalar, &inst, err, sizeof err), TERSE_CODEC_OK);
        EXPECT_EQ(inst->mem, TERSE_MEM_CUDA);
        tq::destroy_instance(inst);
        inst = nullptr;
    } else {
        EXPECT_EQ(tq::create_instance(tq::Params{}, &s, Isa::Scalar, &inst, err, sizeof err),
                  TERSE_CODEC_ERR_UNSUPPORTED);
        EXPECT_STREQ(err, "memory kind 2 is not supported (accepted: host)");
    }
    s.mem_kind = TERSE_MEM_CUDA_MANAGED;  // detected by terse, never a codec's to run on
    EXPECT_EQ(tq::create_instance(tq::Params{}, &s, Isa::Scalar, &inst, err, sizeof err),
              TERSE_CODEC_ERR_UNSUPPORTED);
    s.mem_kind = TERSE_MEM_HOST;
    s.nranks = 70000;
    EXPECT_EQ(tq::create_instance(params_of(16), &s, Isa::Scalar, &inst, err, sizeof err),
              TERSE_CODEC_ERR_UNSUPPORTED);
    EXPECT_STREQ(err, "bits=16 sums at most 65538 ranks in 32-bit codes; this communicator has 70000");
    EXPECT_EQ(inst, nullptr);
    EXPECT_EQ(tq::create_instance(params_of(8), &s, Isa::Scalar, &inst, err, sizeof err), TERSE_CODEC_OK);
    tq::destroy_instance(inst);
}

// ---------------------------------------------------------------- accuracy contract

TEST(QuantizeContract, SingleRankAllShapesTypesAndWidths) {
    for (terse_dtype_t dt : kFloatTypes)
        for (int bits : {1, 2, 4, 8, 16})
            for (tq::Rounding rnd : {tq::kNearest, tq::kStochastic})
                for (Shape s : kAllShapes) {
                    if (!shape_fits(dt, s)) continue;
                    const tq::Params p = params_of(bits, 64, rnd);
                    auto inst = make_inst(p, dt, 1);
                    const auto in = rank_inputs(dt, s, 3001, 1, 7);
                    SCOPED_TRACE(std::string(dtype_str(dt)) + " bits=" + std::to_string(bits) +
                                 (rnd ? " stochastic " : " nearest ") + shape_name(s));
                    Reduction red = reduce(*inst, in);
                    if (bits == 16 && terse_codec::dtype_bytes(dt) == 2) {
                        EXPECT_EQ(red.rc, TERSE_CODEC_RAW);  // 16-bit codes of 16-bit data do not shrink
                        continue;
                    }
                    ASSERT_EQ(red.rc, TERSE_CODEC_OK);
                    EXPECT_TRUE(within_bound(in, red.result, p));
                }
}

TEST(QuantizeContract, SummableReductionOneToEightRanks) {
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_BFLOAT16})
        for (int bits : {1, 2, 4, 8, 16})
            for (tq::Rounding rnd : {tq::kNearest, tq::kStochastic})
                for (int nranks = 1; nranks <= 8; nranks++)
                    for (Shape s : {Shape::StudentT, Shape::Smooth, Shape::Mixed}) {
                        if (bits == 16 && dt == TERSE_DTYPE_BFLOAT16) continue;
                        const tq::Params p = params_of(bits, 128, rnd);
                        auto inst = make_inst(p, dt, nranks);
                        const auto in = rank_inputs(dt, s, 1000 + 37 * nranks, nranks, 11);
                        SCOPED_TRACE(std::string(dtype_str(dt)) + " bits=" + std::to_string(bits) +
                                     (rnd ? " stochastic " : " nearest ") + shape_name(s) +
                                     " ranks=" + std::to_string(nranks));
                        Reduction ring = reduce(*inst, in);
                        ASSERT_EQ(ring.rc, TERSE_CODEC_OK);
                        EXPECT_TRUE(within_bound(in, ring.result, p));
                        // Integer sums are exact, so the combine order cannot matter.
                        Reduction tree = reduce(*inst, in, true);
                        EXPECT_EQ(ring.payload, tree.payload);
                    }
}

TEST(QuantizeContract, WidthGrowsWithContributors) {
    auto inst = make_inst(params_of(8), TERSE_DTYPE_FLOAT32, 8);
    const auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Gaussian, 4096, 8, 3);
    Reduction red = reduce(*inst, in);
    ASSERT_EQ(red.rc, TERSE_CODEC_OK);
    EXPECT_EQ(red.payload[2], 11);  // 8 * 254 = 2032 needs 11 bits
    EXPECT_EQ(tq::width_for(8, 1), 8);
    EXPECT_EQ(tq::width_for(8, 2), 9);
    EXPECT_EQ(tq::width_for(1, 1), 1);
    EXPECT_EQ(tq::width_for(1, 3), 2);
    EXPECT_EQ(tq::width_for(16, 65538), 32);
    EXPECT_EQ(tq::width_for(16, 65539), 0);
    // The worst case the engine must budget for is the combined payload of all ranks.
    EXPECT_EQ(red.payload.size(), tq::max_encoded_size(*inst, 4096));
}

TEST(QuantizeContract, RealSampleFields) {
    int found = 0;
    for (const char *file : kFields) {
        const std::vector<float> field = load_field(file);
        if (field.empty()) continue;
        found++;
        std::vector<double> base(field.begin(), field.end());
        for (int nranks : {1, 4})
            for (int bits : {4, 8}) {
                std::vector<Buf> in;
                for (int r = 0; r < nranks; r++) {  // other ranks see the field shifted and scaled
                    std::vector<double> v(base.size());
                    for (size_t i = 0; i < v.size(); i++)
                        v[i] = base[(i + 97 * r) % base.size()] * (1.0 + 0.25 * r);
                    in.push_back(make_buf(TERSE_DTYPE_FLOAT32, v));
                }
                const tq::Params p = params_of(bits, 256);
                auto inst = make_inst(p, TERSE_DTYPE_FLOAT32, nranks);
                SCOPED_TRACE(std::string(file) + " bits=" + std::to_string(bits) +
                             " ranks=" + std::to_string(nranks));
                Reduction red = reduce(*inst, in);
                ASSERT_EQ(red.rc, TERSE_CODEC_OK);
                EXPECT_TRUE(within_bound(in, red.result, p));
            }
    }
    if (found == 0) GTEST_SKIP() << "no sample fields in " << shared_data_dir() << " (set TERSE_SHARED_DATA)";
}

TEST(QuantizeContract, LengthsAndAlignment) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{31}, size_t{32}, size_t{33}, size_t{255},
                     size_t{257}, size_t{1000}, size_t{4097}})
        for (size_t mis : {size_t{0}, size_t{1}, size_t{3}}) {
            const tq::Params p = params_of(4, 32);
            auto inst = make_inst(p, TERSE_DTYPE_FLOAT32, 3);
            const auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Gaussian, n, 3, 5, mis);
            SCOPED_TRACE("n=" + std::to_string(n) + " misalign=" + std::to_string(mis));
            Reduction red = reduce(*inst, in);
            if (tq::payload_bytes(n, p.log2_block, 4, p.bits, 1) >=
                n * 4) {  // a header is bigger than the data: raw
                EXPECT_EQ(red.rc, TERSE_CODEC_RAW);
                continue;
            }
            ASSERT_EQ(red.rc, TERSE_CODEC_OK);
            EXPECT_TRUE(within_bound(in, red.result, p));
        }
}

TEST(QuantizeContract, StochasticIsDeterministicAndUnbiased) {
    const tq::Params p = params_of(2, 1024, tq::kStochastic);
    auto inst = make_inst(p, TERSE_DTYPE_FLOAT64, 1);
    const size_t n = 1 << 16;
    std::vector<double> v(n);
    for (size_t i = 0; i < n; i++) v[i] = (i % 1024 == 0) ? 1.0 : 0.3;  // each block's max is 1: step 1
    const std::vector<Buf> in{make_buf(TERSE_DTYPE_FLOAT64, v)};
    Reduction a = reduce(*inst, in, false, 99), b = reduce(*inst, in, false, 99),
              c = reduce(*inst, in, false, 100);
    ASSERT_EQ(a.rc, TERSE_CODEC_OK);
    EXPECT_EQ(a.payload, b.payload);
    EXPECT_NE(a.payload, c.payload);
    double sum = 0;
    size_t ones = 0;
    for (size_t i = 0; i < n; i++)
        if (i % 1024) {
            sum += a.result.get(i);
            ones += a.result.get(i) == 1.0;
            EXPECT_TRUE(a.result.get(i) == 0.0 || a.result.get(i) == 1.0);
        }
    const double mean = sum / static_cast<double>(n - n / 1024);
    EXPECT_NEAR(mean, 0.3, 0.01);  // 0.3 rounds to 1 with probability 0.3
}

TEST(QuantizeContract, OneBitLevels) {
    // Nearest: levels +-(mean |x| of the block);  stochastic: levels +-m, unbiased.
    const std::vector<double> v{1.0, -1.0, 0.25, -0.25, 0.0, 0.75, -0.5, 0.5};
    std::vector<double> data(256);
    for (size_t i = 0; i < data.size(); i++) data[i] = v[i % v.size()];
    const std::vector<Buf> in{make_buf(TERSE_DTYPE_FLOAT32, data)};
    auto near = make_inst(params_of(1, 256), TERSE_DTYPE_FLOAT32, 1);
    Reduction r = reduce(*near, in);
    ASSERT_EQ(r.rc, TERSE_CODEC_OK);
    const float mean = 4.25f / 8;  // exact in float
    for (size_t i = 0; i < 8; i++) EXPECT_EQ(r.result.get(i), data[i] >= 0 ? mean : -mean) << i;
    auto sto = make_inst(params_of(1, 256, tq::kStochastic), TERSE_DTYPE_FLOAT32, 1);
    r = reduce(*sto, in);
    ASSERT_EQ(r.rc, TERSE_CODEC_OK);
    for (size_t i = 0; i < data.size(); i++) EXPECT_EQ(std::fabs(r.result.get(i)), 1.0) << i;
    EXPECT_EQ(r.result.get(0), 1.0);   // x = m always rounds to +m
    EXPECT_EQ(r.result.get(1), -1.0);  // x = -m always to -m
}

// ---------------------------------------------------------------- non-finite values, agreed stats

TEST(QuantizeRaw, NonFiniteGoesRaw) {
    for (terse_dtype_t dt : kFloatTypes)
        for (double bad :
             {static_cast<double>(NAN), static_cast<double>(INFINITY), -static_cast<double>(INFINITY)}) {
            auto inst = make_inst(params_of(8, 64), dt, 3);
            auto in = rank_inputs(dt, Shape::Gaussian, 1000, 3, 1);
            in[1].set(777, bad);
            std::vector<double> st(tq::stats_count(*inst, 1000));
            ASSERT_EQ(tq::stats(*inst, in[1].data(), 1000, st.data()), TERSE_CODEC_OK);
            EXPECT_TRUE(std::isinf(st[777 / 64]) && st[777 / 64] > 0);
            EXPECT_TRUE(std::isfinite(st[0]));
            Reduction red = reduce(*inst, in);
            EXPECT_EQ(red.rc, TERSE_CODEC_RAW) << dtype_str(dt);
        }
}

TEST(QuantizeRaw, InconsistentAgreedStatsAreRefused) {
    auto inst = make_inst(params_of(8, 64), TERSE_DTYPE_FLOAT32, 2);
    auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Gaussian, 640, 1, 1);
    std::vector<double> agreed(10, 1e-6);  // far below the data
    std::vector<uint8_t> out(tq::max_encoded_size(*inst, 640));
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    call.agreed_stats = agreed.data();
    size_t len = 0;
    EXPECT_EQ(tq::encode(*inst, in[0].data(), 640, out.data(), out.size(), &len, &call), TERSE_CODEC_ERR_PARAM);
    agreed.assign(10, -1.0);
    EXPECT_EQ(tq::encode(*inst, in[0].data(), 640, out.data(), out.size(), &len, &call), TERSE_CODEC_ERR_PARAM);
    agreed.assign(10, 1.0);
    in[0].set(5, NAN);  // stats that missed a NaN: still raw, never a wrong code
    EXPECT_EQ(tq::encode(*inst, in[0].data(), 640, out.data(), out.size(), &len, &call), TERSE_CODEC_RAW);
    // Too small an output buffer.
    in[0].set(5, 0.0);
    EXPECT_EQ(tq::encode(*inst, in[0].data(), 640, out.data(), 100, &len, &call), TERSE_CODEC_ERR_NOSPACE);
}

TEST(QuantizeRaw, TinyDoubleStepsGoRaw) {
    auto inst = make_inst(params_of(16, 64), TERSE_DTYPE_FLOAT64, 1);
    std::vector<double> v(256, 4.9e-324);  // steps would underflow
    std::vector<Buf> in{make_buf(TERSE_DTYPE_FLOAT64, v)};
    EXPECT_EQ(reduce(*inst, in).rc, TERSE_CODEC_RAW);
}

TEST(QuantizeRaw, SaturatesInsteadOfOverflowing) {
    // Sums of values near FLT_MAX: the exact sum may exceed float, the result saturates.
    auto inst = make_inst(params_of(8, 32), TERSE_DTYPE_FLOAT32, 2);
    std::vector<double> v(64, 3.0e38);
    std::vector<Buf> in{make_buf(TERSE_DTYPE_FLOAT32, v), make_buf(TERSE_DTYPE_FLOAT32, v)};
    Reduction red = reduce(*inst, in);
    ASSERT_EQ(red.rc, TERSE_CODEC_OK);
    for (size_t i = 0; i < 64; i++) EXPECT_EQ(red.result.get(i), FLT_MAX);
}

// ---------------------------------------------------------------- code paths produce the same bits

TEST(QuantizeIsa, AllPathsWriteTheSameBits) {
    const auto paths = isas();
    if (paths.size() == 1) GTEST_SKIP() << "only the scalar path runs on this CPU";
    // 2 and 3 ranks: combined payloads one and two planes wider than the
    // codes (9 and 10 for bits=8: a full byte of planes and a partial one).
    for (int ranks : {2, 3})
        for (terse_dtype_t dt : kFloatTypes)
            for (int bits : {1, 2, 4, 8, 16})
                for (tq::Rounding rnd : {tq::kNearest, tq::kStochastic}) {
                    if (bits == 16 && terse_codec::dtype_bytes(dt) == 2) continue;
                    const tq::Params p = params_of(bits, 64, rnd);
                    const size_t n = 64 * 20 + 45;
                    const auto in = rank_inputs(dt, Shape::Mixed, n, ranks, 21, 1);
                    SCOPED_TRACE(std::string(dtype_str(dt)) + " bits=" + std::to_string(bits) +
                                 (rnd ? " stochastic" : " nearest") + " ranks=" + std::to_string(ranks));
                    std::vector<uint8_t> ref_payload, ref_out, ref_acc;
                    for (Isa isa : paths) {
                        auto inst = make_inst(p, dt, ranks, isa);
                        Reduction red = reduce(*inst, in);
                        ASSERT_EQ(red.rc, TERSE_CODEC_OK);
                        // Accumulate into a buffer holding NaN, Inf and large values too.
                        Buf acc = make_buf(dt, make_shape(Shape::Huge, n, 5));
                        acc.set(3, NAN);
                        acc.set(4, INFINITY);
                        acc.set(5, -INFINITY);
                        for (size_t i = 6; i < n; i += 3) acc.set(i, 0.001 * static_cast<double>(i));
                        ASSERT_EQ(tq::decode(*inst, red.payload.data(), red.payload.size(), acc.data(), n, 1,
                                             TERSE_OP_SUM),
                                  TERSE_CODEC_OK);
                        if (isa == Isa::Scalar) {
                            ref_payload = red.payload;
                            ref_out = red.result.raw();
                            ref_acc = acc.raw();
                            continue;
                        }
                        EXPECT_EQ(red.payload, ref_payload) << terse_codec::isa_name(isa);
                        EXPECT_EQ(red.result.raw(), ref_out) << terse_codec::isa_name(isa);
                        EXPECT_EQ(acc.raw(), ref_acc) << terse_codec::isa_name(isa);
                    }
                }
}

TEST(QuantizeIsa, StatsAgreeOnAllPaths) {
    for (terse_dtype_t dt : kFloatTypes) {
        auto in = rank_inputs(dt, Shape::Mixed, 5000, 1, 3, 1);
        in[0].set(4000, NAN);
        std::vector<double> ref;
        for (Isa isa : isas()) {
            auto inst = make_inst(params_of(8, 128), dt, 1, isa);
            std::vector<double> st(tq::stats_count(*inst, 5000));
            ASSERT_EQ(tq::stats(*inst, in[0].data(), 5000, st.data()), TERSE_CODEC_OK);
            if (ref.empty()) ref = st;
            EXPECT_EQ(st, ref) << terse_codec::isa_name(isa);
        }
    }
}

TEST(QuantizeIsa, HalfConversionsMatchHardware) {
    // Every binary16 value to float and back, and float patterns around every
    // rounding boundary, through the scalar conversions the decoder uses.
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = terse_codec::f16_to_f32(static_cast<uint16_t>(h));
        const uint16_t back = terse_codec::f32_to_f16(f);
        const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan) EXPECT_EQ(back, h | 0x200) << h;  // quieted
        else EXPECT_EQ(back, h) << h;
    }
#if defined(__x86_64__)
    if (terse_codec::isa_available(Isa::Avx2)) {
        Rng r(5);
        for (int i = 0; i < 1 << 20; i++) {
            const uint32_t bits = static_cast<uint32_t>(r.next());
            const float f = terse_codec::f32_from_bits(bits);
            uint16_t hw;
            __asm__("vcvtps2ph $0, %1, %%xmm0\n\tvmovd %%xmm0, %%eax\n\tmovw %%ax, %0"
                    : "=r"(hw)
                    : "x"(f)
                    : "xmm0", "eax");
            ASSERT_EQ(terse_codec::f32_to_f16(f), hw) << std::hex << bits;
        }
    }
#endif
}

// ---------------------------------------------------------------- corrupt payloads

namespace {

std::vector<uint8_t> sample_payload(const tq::Instance &inst, size_t n, int nranks = 1) {
    const auto in = rank_inputs(inst.dtype, Shape::Gaussian, n, nranks, 8);
    Reduction red = reduce(inst, in);
    EXPECT_EQ(red.rc, TERSE_CODEC_OK);
    return red.payload;
}

}  // namespace

TEST(QuantizeCorrupt, TruncatedAndExtendedPayloadsAreRejected) {
    auto inst = make_inst(params_of(8, 32), TERSE_DTYPE_FLOAT32, 3);
    const size_t n = 100;
    const auto pay = sample_payload(*inst, n, 3);
    std::vector<float> out(n);
    for (size_t len = 0; len < pay.size(); len++)
        EXPECT_EQ(tq::decode(*inst, pay.data(), len, out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_ERR_CORRUPT)
            << len;
    std::vector<uint8_t> longer = pay;
    longer.push_back(0);
    EXPECT_EQ(tq::decode(*inst, longer.data(), longer.size(), out.data(), n, 0, TERSE_OP_SUM),
              TERSE_CODEC_ERR_CORRUPT);
    EXPECT_EQ(tq::decode(*inst, pay.data(), pay.size(), out.data(), n - 1, 0, TERSE_OP_SUM),
              TERSE_CODEC_ERR_CORRUPT);
    EXPECT_EQ(tq::decode(*inst, pay.data(), pay.size(), out.data(), n, 0, TERSE_OP_MAX),
              TERSE_CODEC_ERR_UNSUPPORTED);
    EXPECT_EQ(tq::decode(*inst, pay.data(), pay.size(), out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_OK);
}

TEST(QuantizeCorrupt, BadFieldsAreRejected) {
    auto inst = make_inst(params_of(8, 32), TERSE_DTYPE_FLOAT32, 3);
    const size_t n = 100;  // 4 blocks
    const auto pay = sample_payload(*inst, n, 3);
    std::vector<float> out(n);
    auto expect_corrupt = [&](const char *what, auto mutate) {
        std::vector<uint8_t> p = pay;
        mutate(p);
        EXPECT_EQ(tq::decode(*inst, p.data(), p.size(), out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_ERR_CORRUPT)
            << what;
        EXPECT_EQ(tq::decode(*inst, p.data(), p.size(), out.data(), n, 1, TERSE_OP_SUM), TERSE_CODEC_ERR_CORRUPT)
            << what;
    };
    expect_corrupt("version", [](auto &p) { p[0] = 2; });
    expect_corrupt("bits", [](auto &p) { p[1] = 3; });
    expect_corrupt("width", [](auto &p) { p[2] = 11; });
    expect_corrupt("block", [](auto &p) { p[3] = 4; });
    expect_corrupt("block 2", [](auto &p) { p[3] = 17; });
    expect_corrupt("scale bytes", [](auto &p) { p[4] = 8; });
    expect_corrupt("rounding", [](auto &p) { p[5] = 2; });
    expect_corrupt("reserved", [](auto &p) { p[7] = 1; });
    expect_corrupt("reserved 2", [](auto &p) { p[13] = 1; });
    expect_corrupt("contributors 0", [](auto &p) { terse_codec::put_u32(p.data() + 8, 0); });
    expect_corrupt("contributors",
                   [](auto &p) { terse_codec::put_u32(p.data() + 8, 5); });  // width says 3 (or 4)
    expect_corrupt("count", [](auto &p) { terse_codec::put_u64(p.data() + 16, 101); });
    expect_corrupt("scale NaN", [](auto &p) { terse_codec::put_u32(p.data() + 24, 0x7fc00000u); });
    expect_corrupt("scale Inf", [](auto &p) { terse_codec::put_u32(p.data() + 28, 0x7f800000u); });
    expect_corrupt("scale negative", [](auto &p) { terse_codec::put_u32(p.data() + 32, 0xbf800000u); });
    expect_corrupt("scale -0", [](auto &p) { terse_codec::put_u32(p.data() + 32, 0x80000000u); });
    // Combined payloads hold bit planes: groups of 32 codes, 10 words each.
    // Element 127 is padding of the last group (100 = 3 * 32 + 4).
    expect_corrupt("padding", [](auto &p) { p.back() |= 0x80; });
    // A code above contributors * 254 (3 ranks: 762 < 1023), in a full group and in the tail.
    const size_t codes = tq::kHeaderBytes + 4 * 4;
    expect_corrupt("code range", [&](auto &p) {
        for (int j = 0; j < 10; j++) p[codes + 4 * j] |= 0x01;  // element 0 = 1023
    });
    expect_corrupt("code range tail", [&](auto &p) {
        for (int j = 0; j < 10; j++) p[codes + 3 * 40 + 4 * j] |= 0x08;  // element 99 = 1023
    });

    // A single-rank payload is packed: its padding bits are checked as such.
    auto one = make_inst(params_of(4, 32), TERSE_DTYPE_FLOAT32, 1);
    auto single = sample_payload(*one, 101, 1);  // 101 * 4 bits: 4 bits of padding
    std::vector<float> out1(101);
    ASSERT_EQ(tq::decode(*one, single.data(), single.size(), out1.data(), 101, 0, TERSE_OP_SUM), TERSE_CODEC_OK);
    single.back() |= 0x80;
    EXPECT_EQ(tq::decode(*one, single.data(), single.size(), out1.data(), 101, 0, TERSE_OP_SUM),
              TERSE_CODEC_ERR_CORRUPT);
}

TEST(QuantizeCorrupt, CombineRejectsMismatches) {
    auto inst = make_inst(params_of(8, 32), TERSE_DTYPE_FLOAT32, 4);
    const size_t n = 200;
    const auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Gaussian, n, 2, 3);
    // Encoded with different (local) stats: scales differ.
    const size_t cap = tq::max_encoded_size(*inst, n);
    std::vector<uint8_t> a(cap), b(cap), o(cap);
    size_t la = 0, lb = 0, lo = 0;
    ASSERT_EQ(tq::encode(*inst, in[0].data(), n, a.data(), cap, &la, nullptr), TERSE_CODEC_OK);
    ASSERT_EQ(tq::encode(*inst, in[1].data(), n, b.data(), cap, &lb, nullptr), TERSE_CODEC_OK);
    EXPECT_EQ(tq::combine(*inst, a.data(), la, 1, b.data(), lb, 1, n, o.data(), cap, &lo),
              TERSE_CODEC_ERR_CORRUPT);
    EXPECT_EQ(tq::combine(*inst, a.data(), la, 1, a.data(), la, 1, n, o.data(), cap, &lo), TERSE_CODEC_OK);
    EXPECT_EQ(tq::combine(*inst, a.data(), la, 2, a.data(), la, 1, n, o.data(), cap, &lo),
              TERSE_CODEC_ERR_CORRUPT);
    EXPECT_EQ(tq::combine(*inst, a.data(), la, 1, a.data(), la - 1, 1, n, o.data(), cap, &lo),
              TERSE_CODEC_ERR_CORRUPT);
    EXPECT_EQ(tq::combine(*inst, a.data(), la, 1, a.data(), la, 1, n, o.data(), la, &lo),
              TERSE_CODEC_ERR_NOSPACE);
    // Adding a payload to itself doubles every value exactly.
    ASSERT_EQ(tq::combine(*inst, a.data(), la, 1, a.data(), la, 1, n, o.data(), cap, &lo), TERSE_CODEC_OK);
    std::vector<float> one(n), two(n);
    ASSERT_EQ(tq::decode(*inst, a.data(), la, one.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_OK);
    ASSERT_EQ(tq::decode(*inst, o.data(), lo, two.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_OK);
    for (size_t i = 0; i < n; i++) EXPECT_EQ(two[i], 2 * one[i]) << i;
}

// Every code of a term is checked against its range (contributors *
// code_max), and a planes payload's padding lanes must be zero, whatever
// the output width (combine runs one unrolled routine per width) and on
// every path (two single-rank 8- or 4-bit terms have SIMD kernels of their own).
TEST(QuantizeCorrupt, CombineRejectsCodesOutOfRange) {
    for (Isa isa : isas())
        for (int bits : {8, 4, 2}) {
            SCOPED_TRACE(std::string(terse_codec::isa_name(isa)) + " bits=" + std::to_string(bits));
            auto inst = make_inst(params_of(bits, 32), TERSE_DTYPE_FLOAT32, 8, isa);
            const size_t n = 200;  // 6 full groups and one of 8 codes
            const auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Gaussian, n, 1, 5);
            const size_t cap = 4 * tq::max_encoded_size(*inst, n);
            std::vector<uint8_t> a(cap), two(cap), o(cap);
            size_t la = 0, l2 = 0, lo = 0;
            ASSERT_EQ(tq::encode(*inst, in[0].data(), n, a.data(), cap, &la, nullptr), TERSE_CODEC_OK);
            a.resize(la);
            ASSERT_EQ(tq::combine(*inst, a.data(), la, 1, a.data(), la, 1, n, two.data(), cap, &l2),
                      TERSE_CODEC_OK);
            two.resize(l2);
            const size_t codes = tq::kHeaderBytes + tq::block_count(n, 5) * 4;
            const int w1 = tq::width_for(bits, 1), w2 = tq::width_for(bits, 2);

            // A single-rank code of all ones is above code_max(bits), in a
            // full group and in the partial last one.
            for (size_t code : {size_t(3), n - 2}) {
                std::vector<uint8_t> bad = a;
                const size_t bit = code * size_t(w1);
                for (int k = 0; k < w1; k++) bad[codes + (bit + k) / 8] |= uint8_t(1u << ((bit + k) % 8));
                EXPECT_EQ(tq::combine(*inst, bad.data(), la, 1, a.data(), la, 1, n, o.data(), cap, &lo),
                          TERSE_CODEC_ERR_CORRUPT)
                    << "code " << code;
                EXPECT_EQ(tq::combine(*inst, a.data(), la, 1, bad.data(), la, 1, n, o.data(), cap, &lo),
                          TERSE_CODEC_ERR_CORRUPT)
                    << "code " << code;
            }
            // Planes of two contributors: lane 5 of group 1 set in every plane
            // is 2^w2 - 1, above 2 * code_max; a padding lane of the last group
            // set in one plane is a code where none may be.
            std::vector<uint8_t> high = two, pad = two;
            for (int j = 0; j < w2; j++) high[codes + 4 * size_t(w2) * 1 + 4 * size_t(j)] |= 1u << 5;
            pad[codes + 4 * size_t(w2) * 6 + 3] |= 0x80;  // lane 31 of plane 0
            for (const auto *bad : {&high, &pad}) {
                EXPECT_EQ(tq::combine(*inst, bad->data(), l2, 2, two.data(), l2, 2, n, o.data(), cap, &lo),
                          TERSE_CODEC_ERR_CORRUPT);
                EXPECT_EQ(tq::combine(*inst, a.data(), la, 1, bad->data(), l2, 2, n, o.data(), cap, &lo),
                          TERSE_CODEC_ERR_CORRUPT);
            }
            EXPECT_EQ(tq::combine(*inst, two.data(), l2, 2, a.data(), la, 1, n, o.data(), cap, &lo),
                      TERSE_CODEC_OK);
        }
}

TEST(QuantizeCorrupt, RandomDamageNeverCrashes) {
    // Random byte damage: decode and combine either reject or produce finite values.
    auto inst = make_inst(params_of(4, 32), TERSE_DTYPE_FLOAT32, 4);
    const size_t n = 150;
    const auto pay = sample_payload(*inst, n, 2);
    Rng r(77);
    std::vector<float> out(n);
    std::vector<uint8_t> o(tq::max_encoded_size(*inst, n));
    for (int t = 0; t < 20000; t++) {
        std::vector<uint8_t> p = pay;
        const int flips = 1 + static_cast<int>(r.next() % 3);
        for (int f = 0; f < flips; f++) p[r.next() % p.size()] ^= static_cast<uint8_t>(1u << (r.next() % 8));
        const int rc = tq::decode(*inst, p.data(), p.size(), out.data(), n, 0, TERSE_OP_SUM);
        ASSERT_TRUE(rc == TERSE_CODEC_OK || rc == TERSE_CODEC_ERR_CORRUPT);
        if (rc == TERSE_CODEC_OK) {
            for (float v : out) ASSERT_TRUE(std::isfinite(v));
        }
        size_t lo = 0;
        const int rc2 = tq::combine(*inst, p.data(), p.size(), 2, pay.data(), pay.size(), 2, n, o.data(),
                                    o.size(), &lo);
        ASSERT_TRUE(rc2 == TERSE_CODEC_OK || rc2 == TERSE_CODEC_ERR_CORRUPT || rc2 == TERSE_CODEC_ERR_NOSPACE);
    }
}

// ---------------------------------------------------------------- the module as the engine loads it

TEST(QuantizePlugin, ModuleExportsAValidDescriptor) {
    const char *path = std::getenv("TERSE_PLUGIN_PATH");
    std::string so;
    if (path) {
        std::string p = path;
        size_t start = 0;
        while (start <= p.size()) {
            const size_t end = p.find(':', start);
            const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
            const std::string cand = dir + "/terse_quantize.so";
            if (FILE *f = std::fopen(cand.c_str(), "rb")) {
                std::fclose(f);
                so = cand;
                break;
            }
            if (end == std::string::npos) break;
            start = end + 1;
        }
    }
    if (so.empty()) GTEST_SKIP() << "terse_quantize.so not found in TERSE_PLUGIN_PATH";
    void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto entry = reinterpret_cast<terse_codec_entry_fn>(dlsym(h, TERSE_CODEC_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr);
    const terse_codec_descriptor_t *d = entry();
    EXPECT_EQ(d->abi_version, TERSE_CODEC_ABI_VERSION);
    EXPECT_EQ(d->struct_size, sizeof(terse_codec_descriptor_t));
    EXPECT_STREQ(d->name, "quantize");
    EXPECT_EQ(d->mode, TERSE_REDUCE_SUMMABLE);
    EXPECT_TRUE(d->stats && d->stats_count && d->combine);
    for (void *r : d->reserved) EXPECT_EQ(r, nullptr);
    // Only the entry point is exported.
    EXPECT_EQ(dlsym(h, "_ZN14terse_quantize10descriptorEv"), nullptr);

    // A full round trip through the C ABI.
    const terse_codec_kv_t kv[] = {{"bits", "8"}};
    void *params = nullptr;
    char err[256] = {0};
    ASSERT_EQ(d->parse(kv, 1, &params, err, sizeof err), TERSE_CODEC_OK);
    terse_codec_setup_t s{};
    s.struct_size = sizeof s;
    s.dtype = TERSE_DTYPE_FLOAT32;
    s.mem_kind = TERSE_MEM_HOST;
    s.nranks = 2;
    s.max_chunk_count = 4096;
    void *inst = nullptr;
    ASSERT_EQ(d->create(params, &s, &inst, err, sizeof err), TERSE_CODEC_OK) << err;
    std::vector<float> x(4096);
    for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(0.01f * static_cast<float>(i));
    std::vector<double> st(d->stats_count(inst, x.size()));
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    ASSERT_EQ(d->stats(inst, x.data(), x.size(), st.data(), &call), TERSE_CODEC_OK);
    call.agreed_stats = st.data();
    std::vector<uint8_t> enc(d->max_encoded_size(inst, x.size())), both(enc.size());
    size_t len = 0, blen = 0;
    ASSERT_EQ(d->encode(inst, x.data(), x.size(), enc.data(), enc.size(), &len, &call), TERSE_CODEC_OK);
    ASSERT_EQ(d->combine(inst, enc.data(), len, 1, enc.data(), len, 1, x.size(), both.data(), both.size(), &blen,
                         &call),
              TERSE_CODEC_OK);
    std::vector<float> y(x.size());
    ASSERT_EQ(d->decode(inst, both.data(), blen, y.data(), y.size(), 0, TERSE_OP_SUM, &call), TERSE_CODEC_OK);
    for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(y[i], 2 * x[i], 2 * (1.0 / 127) / 2 * 1.0001 + 1e-6);
    d->destroy(inst);
    d->free_params(params);
    dlclose(h);
}
