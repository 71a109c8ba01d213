// errbound codec: parameters, the end-to-end bound |result - exact| <= bound
// for 1..8 ranks (emulated summable reduction) on float32/float64 including
// huge and tiny magnitudes and adversarial half-step inputs, bit-identical
// code paths, the zstd stage, sizes, and rejection of corrupt payloads.
// The codec is linked in (plugins/errbound/liberrbound_impl.la) so each SIMD
// path can be forced.
#include "codec_test_data.h"
#include "codec_test_util.h"

#include "../plugins/errbound/errbound_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <string>
#include <vector>

using namespace codec_test;
namespace te = terse_errbound;
using terse_codec::Isa;

namespace {

using InstPtr = InstancePtr<te::Instance>;

te::Params params_of(te::Mode m, double bound, bool zstd = false, int level = 1) {
    te::Params p;
    p.mode = m;
    p.bound = bound;
    p.zstd = zstd;
    p.zstd_level = level;
    return p;
}

InstPtr make_inst(const te::Params &p, terse_dtype_t dt, int nranks, Isa isa = terse_codec::best_isa()) {
    te::Instance *inst = nullptr;
    char err[256] = {0};
    const int rc = create_host_instance(p, dt, nranks, 1 << 22, isa, &inst, err, sizeof err);
    EXPECT_EQ(rc, TERSE_CODEC_OK) << err;
    return InstPtr(inst);
}

struct Reduction {
    int rc = TERSE_CODEC_OK;
    std::vector<uint8_t> payload;
    std::vector<size_t> sizes;  // every payload's size (encodes and combines)
    Buf result;
    double bound = 0;  // the absolute bound the codec derived from the agreed stats
};

// The engine's summable path: stats, MAX across ranks, encode, combine in
// ring order (or as a tree), decode the fully combined payload.
Reduction reduce(const te::Instance &inst, const std::vector<Buf> &in, bool tree = false) {
    Reduction out;
    const size_t n = in[0].n;
    const int nranks = static_cast<int>(in.size());
    const size_t ns = te::stats_count(inst, n);
    std::vector<double> agreed(ns, -INFINITY), local(ns);
    for (const Buf &b : in) {
        EXPECT_EQ(te::stats(inst, b.data(), n, local.data()), TERSE_CODEC_OK);
        for (size_t i = 0; i < ns; i++) agreed[i] = std::max(agreed[i], local[i]);
    }
    out.bound = te::bound_for(inst, agreed.data(), n);
    const size_t cap = te::max_encoded_size(inst, n);
    std::vector<std::vector<uint8_t>> enc(nranks);
    int first_rc = 0;
    for (int r = 0; r < nranks; r++) {
        enc[r].assign(cap, 0xee);
        terse_codec_call_t call{};
        call.struct_size = sizeof call;
        call.agreed_stats = agreed.data();
        size_t len = 0;
        const int rc = te::encode(inst, in[r].data(), n, enc[r].data(), cap, &len, &call);
        if (r == 0) first_rc = rc;
        EXPECT_EQ(rc, first_rc) << "ranks disagree on raw for rank " << r;
        if (rc != TERSE_CODEC_OK) {
            out.rc = rc;
            continue;
        }
        EXPECT_LE(len, cap);
        enc[r].resize(len);
        out.sizes.push_back(len);
    }
    if (out.rc != TERSE_CODEC_OK) return out;

    auto comb = [&](const std::vector<uint8_t> &a, int ca, const std::vector<uint8_t> &b, int cb) {
        std::vector<uint8_t> o(cap, 0xdd);
        size_t len = 0;
        const int rc = te::combine(inst, a.data(), a.size(), ca, b.data(), b.size(), cb, n, o.data(), o.size(),
                                   &len);
        EXPECT_EQ(rc, TERSE_CODEC_OK);
        EXPECT_LE(len, cap);
        o.resize(rc == TERSE_CODEC_OK ? len : 0);
        out.sizes.push_back(o.size());
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
    EXPECT_EQ(te::decode(inst, out.payload.data(), out.payload.size(), out.result.data(), n, 0, TERSE_OP_SUM),
              TERSE_CODEC_OK);
    return out;
}

// The bound computed here from the data, independently of the codec.
double reference_bound(const te::Params &p, const std::vector<Buf> &in) {
    const size_t n = in[0].n;
    switch (p.mode) {
    case te::kAbs: return p.bound;
    case te::kRel: {
        double hi = -INFINITY, lo = INFINITY;
        for (const Buf &b : in)
            for (size_t i = 0; i < n; i++) {
                hi = std::max(hi, b.get(i));
                lo = std::min(lo, b.get(i));
            }
        return p.bound * (hi + -lo);
    }
    default: {
        double nmax = 0;
        for (const Buf &b : in) {
            double s = 0;
            for (size_t i = 0; i < n; i++) s += b.get(i) * b.get(i);
            nmax = std::max(nmax, std::sqrt(s));
        }
        return p.bound * nmax / std::sqrt(static_cast<double>(n));
    }
    }
}

// |result - exact| <= bound for every element, exact sums in binary128.
::testing::AssertionResult within_bound(const std::vector<Buf> &in, const Buf &res, double bound) {
    double worst = 0;
    for (size_t i = 0; i < res.n; i++) {
        __float128 exact = 0;
        for (const Buf &b : in) exact += static_cast<__float128>(b.get(i));
        if (static_cast<double>(exact > 0 ? exact : -exact) > max_finite(res.dt)) continue;  // saturated
        const __float128 d = static_cast<__float128>(res.get(i)) - exact;
        const double err = static_cast<double>(d > 0 ? d : -d);
        if (!(static_cast<__float128>(err) <= static_cast<__float128>(bound)) || !(d <= bound && -d <= bound))
            return ::testing::AssertionFailure()
                   << "element " << i << ": result " << res.get(i) << " exact " << static_cast<double>(exact)
                   << " error " << err << " > bound " << bound;
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

// Runs a reduction and checks the contract: raw, or within the bound.
// Returns whether the chunk was encoded.
bool check_contract(const te::Params &p, terse_dtype_t dt, const std::vector<Buf> &in, bool expect_encoded,
                    const std::string &what) {
    SCOPED_TRACE(what);
    auto inst = make_inst(p, dt, static_cast<int>(in.size()));
    Reduction ring = reduce(*inst, in);
    if (expect_encoded) EXPECT_EQ(ring.rc, TERSE_CODEC_OK);
    if (ring.rc != TERSE_CODEC_OK) {
        EXPECT_EQ(ring.rc, TERSE_CODEC_RAW);
        return false;
    }
    const double b = reference_bound(p, in);
    if (p.mode == te::kNorm) EXPECT_NEAR(ring.bound, b, b * 1e-12);
    else EXPECT_EQ(ring.bound, b);
    EXPECT_TRUE(within_bound(in, ring.result, std::min(b, ring.bound)));
    if (in.size() > 2) {
        Reduction tree = reduce(*inst, in, true);
        EXPECT_EQ(ring.payload, tree.payload);  // integer sums: the order cannot matter
    }
    return true;
}

}  // namespace

// ---------------------------------------------------------------- parameters

TEST(ErrboundParams, ParsesAndPrintsCanonically) {
    char err[256] = {0}, buf[128];
    te::Params p;
    const terse_codec_kv_t a[] = {{"abs", "1e-3"}};
    ASSERT_EQ(te::parse_params(a, 1, &p, err, sizeof err), TERSE_CODEC_OK) << err;
    EXPECT_EQ(p.mode, te::kAbs);
    EXPECT_EQ(p.bound, 1e-3);
    te::params_string(p, buf, sizeof buf);
    EXPECT_STREQ(buf, "abs=0.001,zstd=off");
    const terse_codec_kv_t r[] = {{"zstd", "on"}, {"rel", "0.01"}, {"zstd_level", "5"}};
    ASSERT_EQ(te::parse_params(r, 3, &p, err, sizeof err), TERSE_CODEC_OK) << err;
    te::params_string(p, buf, sizeof buf);
    EXPECT_STREQ(buf, "rel=0.01,zstd=on,zstd_level=5");
    const terse_codec_kv_t nm[] = {{"norm", "1"}};
    ASSERT_EQ(te::parse_params(nm, 1, &p, err, sizeof err), TERSE_CODEC_OK) << err;
    te::params_string(p, buf, sizeof buf);
    EXPECT_STREQ(buf, "norm=1,zstd=off");
    // A bound that does not print exactly in few digits survives the round trip.
    const terse_codec_kv_t odd[] = {{"abs", "0.1"}};
    ASSERT_EQ(te::parse_params(odd, 1, &p, err, sizeof err), TERSE_CODEC_OK);
    te::params_string(p, buf, sizeof buf);
    EXPECT_STREQ(buf, "abs=0.10000000000000001,zstd=off");
}

TEST(ErrboundParams, RejectsWithMessages) {
    struct Case {
        std::vector<terse_codec_kv_t> kv;
        const char *msg;
    } cases[] = {
        {{},
         "a bound is required (accepted: exactly one of abs=<bound>, rel=<fraction of the value range>, "
         "norm=<fraction of the L2 norm>)"},
        {{{"zstd", "on"}},
         "a bound is required (accepted: exactly one of abs=<bound>, rel=<fraction of the value "
         "range>, norm=<fraction of the L2 norm>)"},
        {{{"abs", "1e-3"}, {"rel", "1e-3"}},
         "abs and rel are both given (accepted: exactly one of abs, rel, norm)"},
        {{{"abs", "0"}}, "abs=0 is not accepted (accepted: a finite number > 0)"},
        {{{"abs", "-1"}}, "abs=-1 is not accepted (accepted: a finite number > 0)"},
        {{{"abs", "inf"}}, "abs=inf is not accepted (accepted: a finite number > 0)"},
        {{{"abs", "nan"}}, "abs=nan is not accepted (accepted: a finite number > 0)"},
        {{{"abs", "1e-3x"}}, "abs=1e-3x is not accepted (accepted: a finite number > 0)"},
        {{{"rel", "2"}}, "rel=2 is not accepted (accepted: a number in (0, 1])"},
        {{{"norm", "0"}}, "norm=0 is not accepted (accepted: a number in (0, 1])"},
        {{{"abs", "1"}, {"zstd", "yes"}}, "zstd=yes is not accepted (accepted: on, off)"},
        {{{"abs", "1"}, {"zstd", "on"}, {"zstd_level", "20"}},
         "zstd_level=20 is not accepted (accepted: 1 to 19)"},
        {{{"abs", "1"}, {"zstd_level", "3"}},
         "zstd_level is given but zstd is off (accepted: zstd_level with zstd=on)"},
        {{{"abs", "1"}, {"level", "3"}},
         "unknown parameter 'level' (accepted: abs, rel, norm, zstd, zstd_level)"},
        {{{"abs", "1"}, {"zstd", "on"}, {"zstd", "off"}}, "parameter 'zstd' is given twice"},
    };
    for (const Case &c : cases) {
        te::Params p;
        char err[256] = {0};
        EXPECT_EQ(te::parse_params(c.kv.data(), c.kv.size(), &p, err, sizeof err), TERSE_CODEC_ERR_PARAM)
            << c.msg;
        EXPECT_STREQ(err, c.msg);
    }
}

TEST(ErrboundCreate, RefusesWhatItCannotDo) {
    terse_codec_setup_t s{};
    s.struct_size = sizeof s;
    s.dtype = TERSE_DTYPE_INT64;
    s.mem_kind = TERSE_MEM_HOST;
    s.nranks = 4;
    te::Instance *inst = nullptr;
    char err[256] = {0};
    EXPECT_EQ(te::create_instance(params_of(te::kAbs, 1), &s, Isa::Scalar, &inst, err, sizeof err),
              TERSE_CODEC_ERR_UNSUPPORTED);
    EXPECT_STREQ(err, "dtype 4 is not supported (accepted: float32, float64, float16, bfloat16)");
    s.dtype = TERSE_DTYPE_FLOAT32;
    s.mem_kind = TERSE_MEM_CUDA;  // only in a build with the device kernels, and only with zstd=off
    if (te::mem_kinds() & TERSE_MEM_CUDA) {
        ASSERT_EQ(te::create_instance(params_of(te::kAbs, 1), &s, Isa::Scalar, &inst, err, sizeof err),
                  TERSE_CODEC_OK);
        EXPECT_EQ(inst->mem, TERSE_MEM_CUDA);
        te::destroy_instance(inst);
        inst = nullptr;
        EXPECT_EQ(te::create_instance(params_of(te::kAbs, 1, true), &s, Isa::Scalar, &inst, err, sizeof err),
                  TERSE_CODEC_ERR_UNSUPPORTED);
        EXPECT_STREQ(err, "zstd=on is not supported on device memory (the zstd stage has no device kernel); "
                          "use zstd=off for device buffers");
    } else {
        EXPECT_EQ(te::create_instance(params_of(te::kAbs, 1), &s, Isa::Scalar, &inst, err, sizeof err),
                  TERSE_CODEC_ERR_UNSUPPORTED);
        EXPECT_STREQ(err, "memory kind 2 is not supported (accepted: host)");
    }
    s.mem_kind = TERSE_MEM_CUDA_MANAGED;  // detected by terse, never a codec's to run on
    EXPECT_EQ(te::create_instance(params_of(te::kAbs, 1), &s, Isa::Scalar, &inst, err, sizeof err),
              TERSE_CODEC_ERR_UNSUPPORTED);
    s.mem_kind = TERSE_MEM_HOST;
    s.nranks = 0;
    EXPECT_EQ(te::create_instance(params_of(te::kAbs, 1), &s, Isa::Scalar, &inst, err, sizeof err),
              TERSE_CODEC_ERR_PARAM);
    EXPECT_EQ(inst, nullptr);
}

// ---------------------------------------------------------------- the contract

TEST(ErrboundContract, AllModesShapesAndRankCounts) {
    int encoded = 0, total = 0;
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64})
        for (te::Mode m : {te::kAbs, te::kRel, te::kNorm})
            for (int nranks : {1, 2, 3, 4, 5, 8})
                for (Shape s : kAllShapes) {
                    const double bound = m == te::kAbs ? 1e-4 : m == te::kRel ? 1e-3 : 1e-2;
                    const auto in = rank_inputs(dt, s, 1000 + 13 * nranks, nranks, 17);
                    encoded += check_contract(params_of(m, bound), dt, in, false,
                                              std::string(dtype_str(dt)) + " mode=" + std::to_string(m) +
                                                  " ranks=" + std::to_string(nranks) + " " + shape_name(s));
                    total++;
                }
    // Raw only where the shape makes the bound unreachable (huge values at
    // abs=1e-4, constant data under rel, ...): most cases are really encoded.
    std::printf("encoded %d of %d cases\n", encoded, total);
    EXPECT_GE(encoded, total * 2 / 3);
}

TEST(ErrboundContract, GradientLikeDataIsEncoded) {
    // The common case must actually compress, not go raw.
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64})
        for (int nranks = 1; nranks <= 8; nranks++)
            for (bool z : {false, true}) {
                const auto in = rank_inputs(dt, Shape::StudentT, 4096, nranks, 5);
                check_contract(
                    params_of(te::kRel, 1e-3, z), dt, in, true,
                    std::string(dtype_str(dt)) + " ranks=" + std::to_string(nranks) + (z ? " zstd" : ""));
                check_contract(params_of(te::kAbs, 1e-5, z), dt, in, true, "abs");
                check_contract(params_of(te::kNorm, 1e-2, z), dt, in, true, "norm");
            }
}

TEST(ErrboundContract, SixteenBitTypes) {
    // Coarse bounds (the 16-bit types cannot hold finer sums); each chunk is
    // raw or within the bound.
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT16, TERSE_DTYPE_BFLOAT16})
        for (int nranks : {1, 2, 4})
            for (Shape s : {Shape::Gaussian, Shape::Smooth, Shape::Zero}) {
                const auto in = rank_inputs(dt, s, 999, nranks, 4);
                check_contract(
                    params_of(te::kRel, 0.05), dt, in,
                    s != Shape::Zero && nranks == 1 && dt == TERSE_DTYPE_FLOAT16,
                    std::string(dtype_str(dt)) + " ranks=" + std::to_string(nranks) + " " + shape_name(s));
                check_contract(params_of(te::kAbs, 0.5), dt, in, false, "abs");
            }
}

TEST(ErrboundContract, AdversarialHalfSteps) {
    // Inputs exactly between two multiples of the step, on every rank, so
    // every rank's rounding error is q/2 and they add up: the worst case.
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64})
        for (int nranks : {1, 2, 3, 5, 8})
            for (double M : {1.0, 1000.0, 3.0e5, 1e30}) {
                const te::Params p = params_of(te::kAbs, M * 1e-6);
                auto inst = make_inst(p, dt, nranks);
                // Learn q from a probe: the step depends only on the agreed stats (M).
                std::vector<double> probe(256, 0.0);
                probe[0] = M;
                std::vector<Buf> pin(nranks, make_buf(dt, probe));
                Reduction pr = reduce(*inst, pin);
                if (pr.rc != TERSE_CODEC_OK) continue;  // raw: the type cannot carry this bound
                const double q = te::read_header(pr.payload.data()).q;
                std::vector<Buf> in;
                for (int r = 0; r < nranks; r++) {
                    std::vector<double> v(256);
                    v[0] = M;
                    for (size_t i = 1; i < v.size(); i++)
                        v[i] = (static_cast<double>((i * 7919 + r * 31) % 1000) - 500.0 + 0.5) * q;
                    in.push_back(make_buf(dt, v));
                }
                check_contract(
                    p, dt, in, false,
                    std::string(dtype_str(dt)) + " M=" + std::to_string(M) + " ranks=" + std::to_string(nranks));
            }
}

TEST(ErrboundContract, MagnitudesAtTheEdgeOfFloat) {
    // Values so large that float32 spacing approaches the bound: either the
    // chunk goes raw, or the bound holds including the output rounding.
    for (int nranks : {1, 2, 4, 8})
        for (double mag : {100.0, 1000.0, 4000.0, 8000.0, 16000.0, 1e5, 1e7}) {
            std::vector<Buf> in;
            for (int r = 0; r < nranks; r++) {
                std::vector<double> v = make_shape(Shape::Gaussian, 512, 9, r);
                for (double &x : v) x = mag * (1 + 50 * x);
                in.push_back(make_buf(TERSE_DTYPE_FLOAT32, v));
            }
            check_contract(params_of(te::kAbs, 1e-3), TERSE_DTYPE_FLOAT32, in, false,
                           "mag=" + std::to_string(mag) + " ranks=" + std::to_string(nranks));
        }
    // Huge float64 values with a relative bound, and codes that would overflow: raw.
    std::vector<double> v = make_shape(Shape::Gaussian, 512, 3);
    for (double &x : v) x *= 1e300;
    check_contract(params_of(te::kRel, 1e-6), TERSE_DTYPE_FLOAT64, {make_buf(TERSE_DTYPE_FLOAT64, v)}, true,
                   "1e300");
    auto inst = make_inst(params_of(te::kAbs, 1e-12), TERSE_DTYPE_FLOAT64, 2);
    std::vector<Buf> big{make_buf(TERSE_DTYPE_FLOAT64, v), make_buf(TERSE_DTYPE_FLOAT64, v)};
    EXPECT_EQ(reduce(*inst, big).rc, TERSE_CODEC_RAW);
}

TEST(ErrboundContract, RealSampleFields) {
    int found = 0;
    for (const char *file : kFields) {
        const std::vector<float> field = load_field(file);
        if (field.empty()) continue;
        found++;
        std::vector<double> base(field.begin(), field.end());
        for (int nranks : {1, 3, 4})
            for (bool z : {false, true}) {
                std::vector<Buf> in;
                for (int r = 0; r < nranks; r++) {
                    std::vector<double> v(base.size());
                    for (size_t i = 0; i < v.size(); i++)
                        v[i] = base[(i + 131 * r) % base.size()] * (1.0 - 0.2 * r);
                    in.push_back(make_buf(TERSE_DTYPE_FLOAT32, v));
                }
                check_contract(params_of(te::kRel, 1e-3, z), TERSE_DTYPE_FLOAT32, in, true,
                               std::string(file) + " ranks=" + std::to_string(nranks) + (z ? " zstd" : ""));
                check_contract(params_of(te::kRel, 1e-5, z), TERSE_DTYPE_FLOAT32, in, false, "rel=1e-5");
            }
    }
    if (found == 0) GTEST_SKIP() << "no sample fields in " << shared_data_dir() << " (set TERSE_SHARED_DATA)";
}

TEST(ErrboundContract, LengthsAndAlignment) {
    for (size_t n : {size_t{1}, size_t{2}, size_t{31}, size_t{32}, size_t{33}, size_t{63}, size_t{65},
                     size_t{1000}, size_t{4097}})
        for (size_t mis : {size_t{0}, size_t{1}, size_t{3}}) {
            const auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Laplace, n, 3, 5, mis);
            check_contract(params_of(te::kRel, 1e-2), TERSE_DTYPE_FLOAT32, in, n >= 64,
                           "n=" + std::to_string(n) + " misalign=" + std::to_string(mis));
        }
    auto inst = make_inst(params_of(te::kAbs, 1), TERSE_DTYPE_FLOAT32, 1);
    std::vector<uint8_t> out(64);
    size_t len = 0;
    float x = 1;
    EXPECT_EQ(te::encode(*inst, &x, 0, out.data(), out.size(), &len, nullptr), TERSE_CODEC_RAW);
}

TEST(ErrboundContract, RatioOnGradientLikeData) {
    // Deterministic data, so the sizes are regression guards, not timings.
    // (The ratio grows with the chunk: a longer heavy tail widens the range.)
    const size_t n = 1 << 18;
    for (bool z : {false, true}) {
        auto inst = make_inst(params_of(te::kRel, 1e-3, z), TERSE_DTYPE_FLOAT32, 1);
        const auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::StudentT, n, 1, 1);
        Reduction red = reduce(*inst, in);
        ASSERT_EQ(red.rc, TERSE_CODEC_OK);
        const double ratio = static_cast<double>(n * 4) / static_cast<double>(red.payload.size());
        RecordProperty(z ? "ratio_zstd" : "ratio", std::to_string(ratio));
        EXPECT_GT(ratio, z ? 6.5 : 5.5) << (z ? "zstd" : "plain");
    }
}

// ---------------------------------------------------------------- raw chunks and agreed stats

TEST(ErrboundRaw, NonFiniteGoesRaw) {
    for (terse_dtype_t dt : kFloatTypes)
        for (te::Mode m : {te::kAbs, te::kRel, te::kNorm})
            for (double bad :
                 {static_cast<double>(NAN), static_cast<double>(INFINITY), -static_cast<double>(INFINITY)}) {
                auto inst = make_inst(params_of(m, m == te::kAbs ? 10 : 0.5), dt, 3);
                auto in = rank_inputs(dt, Shape::Gaussian, 1000, 3, 1);
                in[2].set(999, bad);
                std::vector<double> st(te::stats_count(*inst, 1000));
                ASSERT_EQ(te::stats(*inst, in[2].data(), 1000, st.data()), TERSE_CODEC_OK);
                for (double v : st) EXPECT_TRUE(std::isinf(v) && v > 0);
                EXPECT_EQ(reduce(*inst, in).rc, TERSE_CODEC_RAW) << dtype_str(dt) << " mode " << m;
            }
}

TEST(ErrboundRaw, InconsistentAgreedStatsAreRefused) {
    auto inst = make_inst(params_of(te::kAbs, 1e-3), TERSE_DTYPE_FLOAT32, 2);
    auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Gaussian, 640, 1, 1);
    std::vector<uint8_t> out(te::max_encoded_size(*inst, 640));
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    double agreed = 1e-4;  // below the data
    call.agreed_stats = &agreed;
    size_t len = 0;
    EXPECT_EQ(te::encode(*inst, in[0].data(), 640, out.data(), out.size(), &len, &call), TERSE_CODEC_ERR_PARAM);
    agreed = 1.0;
    in[0].set(5, NAN);
    EXPECT_EQ(te::encode(*inst, in[0].data(), 640, out.data(), out.size(), &len, &call), TERSE_CODEC_RAW);
    in[0].set(5, 0.0);
    EXPECT_EQ(te::encode(*inst, in[0].data(), 640, out.data(), 50, &len, &call), TERSE_CODEC_ERR_NOSPACE);
    EXPECT_EQ(te::encode(*inst, in[0].data(), 640, out.data(), out.size(), &len, &call), TERSE_CODEC_OK);
}

TEST(ErrboundRaw, ConstantDataAndZeroRange) {
    // rel with a zero range asks for exact sums: raw.  All zeros: exact and tiny.
    auto rel = make_inst(params_of(te::kRel, 1e-3), TERSE_DTYPE_FLOAT32, 2);
    std::vector<Buf> c{make_buf(TERSE_DTYPE_FLOAT32, std::vector<double>(512, 3.5)),
                       make_buf(TERSE_DTYPE_FLOAT32, std::vector<double>(512, 3.5))};
    EXPECT_EQ(reduce(*rel, c).rc, TERSE_CODEC_RAW);
    std::vector<Buf> z{make_buf(TERSE_DTYPE_FLOAT32, std::vector<double>(512, 0.0)),
                       make_buf(TERSE_DTYPE_FLOAT32, std::vector<double>(512, 0.0))};
    Reduction red = reduce(*rel, z);
    ASSERT_EQ(red.rc, TERSE_CODEC_OK);
    EXPECT_LT(red.payload.size(), te::kHeaderBytes + 16u);
    for (size_t i = 0; i < 512; i++) EXPECT_EQ(red.result.get(i), 0.0);
}

// ---------------------------------------------------------------- code paths produce the same bits

TEST(ErrboundIsa, AllPathsWriteTheSameBits) {
    const auto paths = isas();
    if (paths.size() == 1) GTEST_SKIP() << "only the scalar path runs on this CPU";
    for (terse_dtype_t dt : kFloatTypes)
        for (te::Mode m : {te::kAbs, te::kRel, te::kNorm})
            for (bool z : {false, true}) {
                const te::Params p = params_of(m, m == te::kAbs ? 1e-3 : 0.02, z);
                const size_t n = 32 * 40 + 21;
                const auto in = rank_inputs(dt, Shape::Mixed, n, 3, 21, 1);
                SCOPED_TRACE(std::string(dtype_str(dt)) + " mode " + std::to_string(m) + (z ? " zstd" : ""));
                std::vector<uint8_t> ref_payload, ref_out, ref_acc;
                std::vector<double> ref_stats;
                for (Isa isa : paths) {
                    auto inst = make_inst(p, dt, 3, isa);
                    std::vector<double> st(te::stats_count(*inst, n));
                    ASSERT_EQ(te::stats(*inst, in[1].data(), n, st.data()), TERSE_CODEC_OK);
                    Reduction red = reduce(*inst, in);
                    if (red.rc == TERSE_CODEC_RAW) continue;  // the 16-bit types at a fine bound
                    ASSERT_EQ(red.rc, TERSE_CODEC_OK);
                    Buf acc = make_buf(dt, make_shape(Shape::Gaussian, n, 5));
                    acc.set(3, NAN);
                    acc.set(4, INFINITY);
                    acc.set(5, -INFINITY);
                    ASSERT_EQ(
                        te::decode(*inst, red.payload.data(), red.payload.size(), acc.data(), n, 1, TERSE_OP_SUM),
                        TERSE_CODEC_OK);
                    if (ref_payload.empty()) {
                        ref_payload = red.payload;
                        ref_out = red.result.raw();
                        ref_acc = acc.raw();
                        ref_stats = st;
                        continue;
                    }
                    EXPECT_EQ(st, ref_stats) << terse_codec::isa_name(isa);
                    EXPECT_EQ(red.payload, ref_payload) << terse_codec::isa_name(isa);
                    EXPECT_EQ(red.result.raw(), ref_out) << terse_codec::isa_name(isa);
                    EXPECT_EQ(acc.raw(), ref_acc) << terse_codec::isa_name(isa);
                }
            }
}

// ---------------------------------------------------------------- sizes

TEST(ErrboundSize, WorstCaseIsRespected) {
    // Noise at the largest step count the codes allow, for the widest payloads.
    for (int nranks : {1, 2, 7})
        for (bool z : {false, true}) {
            auto inst = make_inst(params_of(te::kAbs, 1e-7, z), TERSE_DTYPE_FLOAT64, nranks);
            std::vector<Buf> in;
            for (int r = 0; r < nranks; r++) {
                Rng g(static_cast<uint64_t>(r) + 1);
                std::vector<double> v(1000);
                for (double &x : v) x = (g.uniform() * 2 - 1) * 1e-7 * (1 << 28) / (nranks * nranks);
                in.push_back(make_buf(TERSE_DTYPE_FLOAT64, v));
            }
            Reduction red = reduce(*inst, in);
            if (red.rc != TERSE_CODEC_OK) continue;
            for (size_t s : red.sizes) EXPECT_LE(s, te::max_encoded_size(*inst, 1000));
        }
}

// ---------------------------------------------------------------- corrupt payloads

namespace {

std::vector<uint8_t> sample_payload(const te::Instance &inst, size_t n, int nranks) {
    const auto in = rank_inputs(inst.dtype, Shape::Laplace, n, nranks, 8);
    Reduction red = reduce(inst, in);
    EXPECT_EQ(red.rc, TERSE_CODEC_OK);
    return red.payload;
}

}  // namespace

TEST(ErrboundCorrupt, TruncatedAndExtendedPayloadsAreRejected) {
    for (bool z : {false, true}) {
        auto inst = make_inst(params_of(te::kRel, 1e-2, z), TERSE_DTYPE_FLOAT32, 3);
        const size_t n = 300;
        const auto pay = sample_payload(*inst, n, 3);
        std::vector<float> out(n);
        for (size_t len = 0; len < pay.size(); len++)
            EXPECT_EQ(te::decode(*inst, pay.data(), len, out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_ERR_CORRUPT)
                << len;
        std::vector<uint8_t> longer = pay;
        longer.push_back(0);
        EXPECT_EQ(te::decode(*inst, longer.data(), longer.size(), out.data(), n, 0, TERSE_OP_SUM),
                  TERSE_CODEC_ERR_CORRUPT);
        EXPECT_EQ(te::decode(*inst, pay.data(), pay.size(), out.data(), n + 1, 0, TERSE_OP_SUM),
                  TERSE_CODEC_ERR_CORRUPT);
        EXPECT_EQ(te::decode(*inst, pay.data(), pay.size(), out.data(), n, 0, TERSE_OP_MIN),
                  TERSE_CODEC_ERR_UNSUPPORTED);
        EXPECT_EQ(te::decode(*inst, pay.data(), pay.size(), out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_OK);
    }
}

TEST(ErrboundCorrupt, BadFieldsAreRejected) {
    auto inst = make_inst(params_of(te::kRel, 1e-2), TERSE_DTYPE_FLOAT32, 3);
    const size_t n = 100;  // 4 blocks, the last one partial
    const auto pay = sample_payload(*inst, n, 3);
    const te::Header h = te::read_header(pay.data());
    ASSERT_TRUE(te::nibble_widths(h.contributors, h.kmax));
    std::vector<float> out(n);
    auto expect_corrupt = [&](const char *what, auto mutate) {
        std::vector<uint8_t> p = pay;
        mutate(p);
        EXPECT_EQ(te::decode(*inst, p.data(), p.size(), out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_ERR_CORRUPT)
            << what;
        std::vector<uint8_t> o(te::max_encoded_size(*inst, n));
        size_t lo = 0;
        EXPECT_EQ(
            te::combine(*inst, p.data(), p.size(), 3, pay.data(), pay.size(), 3, n, o.data(), o.size(), &lo),
            TERSE_CODEC_ERR_CORRUPT)
            << what;
    };
    const size_t wpos = te::kHeaderBytes;  // widths: 4 nibbles in 2 bytes
    expect_corrupt("version", [](auto &p) { p[0] = 9; });
    expect_corrupt("flags", [](auto &p) { p[1] = 2; });
    expect_corrupt("zstd flag on a plain stream", [](auto &p) { p[1] = 1; });
    expect_corrupt("block", [](auto &p) { p[2] = 6; });
    expect_corrupt("reserved", [](auto &p) { p[3] = 1; });
    expect_corrupt("reserved 2", [](auto &p) { p[29] = 1; });
    expect_corrupt("contributors 0", [](auto &p) { terse_codec::put_u32(p.data() + 4, 0); });
    expect_corrupt("count", [](auto &p) { terse_codec::put_u64(p.data() + 8, 101); });
    expect_corrupt("q zero", [](auto &p) { terse_codec::put_u64(p.data() + 16, 0); });
    expect_corrupt("q NaN", [](auto &p) { terse_codec::put_u64(p.data() + 16, 0x7ff8000000000000ull); });
    expect_corrupt("q negative", [](auto &p) { p[23] |= 0x80; });
    expect_corrupt("kmax 0", [](auto &p) { terse_codec::put_u32(p.data() + 24, 0); });
    expect_corrupt("kmax huge", [](auto &p) { terse_codec::put_u32(p.data() + 24, 1u << 29); });
    expect_corrupt("stream length", [](auto &p) {
        terse_codec::put_u64(p.data() + 32, te::read_header(p.data()).stream_bytes + 4);
    });
    expect_corrupt("width beyond wmax",
                   [&](auto &p) { p[wpos] = static_cast<uint8_t>((p[wpos] & 0xf0) | 0x0f); });
    expect_corrupt("width sum", [&](auto &p) { p[wpos] = static_cast<uint8_t>(p[wpos] ^ 0x01); });
    // The last block is partial (100 = 3*32 + 4): its padding codes must be zero.
    expect_corrupt("padding", [&](auto &p) { p[p.size() - 1] |= 0x80; });
    // A code above zmax: every rank's first element is the agreed max, so the
    // first block has the widest width; all ones in its planes exceeds zmax.
    std::vector<Buf> in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Laplace, n, 3, 8);
    for (Buf &b : in) b.set(0, 0.05);
    Reduction red = reduce(*inst, in);
    ASSERT_EQ(red.rc, TERSE_CODEC_OK);
    const te::Header hr = te::read_header(red.payload.data());
    const int w0 = red.payload[wpos] & 0xf;
    ASSERT_EQ(w0, te::width_max(hr.contributors, hr.kmax));
    std::vector<uint8_t> p = red.payload;
    for (int j = 0; j < w0; j++) terse_codec::put_u32(p.data() + wpos + 2 + 4 * j, 0xffffffffu);
    EXPECT_EQ(te::decode(*inst, p.data(), p.size(), out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_ERR_CORRUPT);
    std::vector<uint8_t> o(te::max_encoded_size(*inst, n));
    size_t lo = 0;
    EXPECT_EQ(te::combine(*inst, p.data(), p.size(), 3, red.payload.data(), red.payload.size(), 3, n, o.data(),
                          o.size(), &lo),
              TERSE_CODEC_ERR_CORRUPT);
}

TEST(ErrboundCorrupt, UnusedWidthNibbleAndZstdGarbage) {
    auto inst = make_inst(params_of(te::kRel, 1e-2), TERSE_DTYPE_FLOAT32, 1);
    const size_t n = 96;  // 3 blocks: the fourth nibble is unused
    auto pay = sample_payload(*inst, n, 1);
    std::vector<float> out(n);
    ASSERT_EQ(te::decode(*inst, pay.data(), pay.size(), out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_OK);
    pay[te::kHeaderBytes + 1] |= 0x10;
    EXPECT_EQ(te::decode(*inst, pay.data(), pay.size(), out.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_ERR_CORRUPT);

    auto zi = make_inst(params_of(te::kRel, 1e-2, true), TERSE_DTYPE_FLOAT32, 1);
    auto zp = sample_payload(*zi, 4096, 1);
    ASSERT_EQ(zp[1], te::kFlagZstd);
    std::vector<float> big(4096);
    for (size_t pos : {te::kHeaderBytes, te::kHeaderBytes + 5, zp.size() / 2, zp.size() - 1}) {
        auto p = zp;
        p[pos] ^= 0x5a;
        const int rc = te::decode(*zi, p.data(), p.size(), big.data(), 4096, 0, TERSE_OP_SUM);
        EXPECT_TRUE(rc == TERSE_CODEC_ERR_CORRUPT || rc == TERSE_CODEC_OK) << pos;
    }
}

TEST(ErrboundCorrupt, CombineRejectsMismatches) {
    auto inst = make_inst(params_of(te::kRel, 1e-2), TERSE_DTYPE_FLOAT32, 4);
    const size_t n = 200;
    const auto in = rank_inputs(TERSE_DTYPE_FLOAT32, Shape::Laplace, n, 2, 3);
    const size_t cap = te::max_encoded_size(*inst, n);
    std::vector<uint8_t> a(cap), b(cap), o(cap);
    size_t la = 0, lb = 0, lo = 0;
    ASSERT_EQ(te::encode(*inst, in[0].data(), n, a.data(), cap, &la, nullptr), TERSE_CODEC_OK);
    ASSERT_EQ(te::encode(*inst, in[1].data(), n, b.data(), cap, &lb, nullptr), TERSE_CODEC_OK);
    EXPECT_EQ(te::combine(*inst, a.data(), la, 1, b.data(), lb, 1, n, o.data(), cap, &lo),
              TERSE_CODEC_ERR_CORRUPT);
    EXPECT_EQ(te::combine(*inst, a.data(), la, 2, a.data(), la, 1, n, o.data(), cap, &lo),
              TERSE_CODEC_ERR_CORRUPT);
    EXPECT_EQ(te::combine(*inst, a.data(), la, 1, a.data(), la, 1, n, o.data(), 30, &lo),
              TERSE_CODEC_ERR_NOSPACE);
    ASSERT_EQ(te::combine(*inst, a.data(), la, 1, a.data(), la, 1, n, o.data(), cap, &lo), TERSE_CODEC_OK);
    std::vector<float> one(n), two(n);
    ASSERT_EQ(te::decode(*inst, a.data(), la, one.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_OK);
    ASSERT_EQ(te::decode(*inst, o.data(), lo, two.data(), n, 0, TERSE_OP_SUM), TERSE_CODEC_OK);
    for (size_t i = 0; i < n; i++) EXPECT_EQ(two[i], 2 * one[i]) << i;
}

TEST(ErrboundCorrupt, RandomDamageNeverCrashes) {
    for (bool z : {false, true}) {
        auto inst = make_inst(params_of(te::kRel, 1e-2, z), TERSE_DTYPE_FLOAT32, 4);
        const size_t n = 1500;
        const auto pay = sample_payload(*inst, n, 2);
        Rng r(77);
        std::vector<float> out(n);
        std::vector<uint8_t> o(te::max_encoded_size(*inst, n));
        for (int t = 0; t < 5000; t++) {
            std::vector<uint8_t> p = pay;
            const int flips = 1 + static_cast<int>(r.next() % 3);
            for (int f = 0; f < flips; f++) p[r.next() % p.size()] ^= static_cast<uint8_t>(1u << (r.next() % 8));
            const int rc = te::decode(*inst, p.data(), p.size(), out.data(), n, 0, TERSE_OP_SUM);
            ASSERT_TRUE(rc == TERSE_CODEC_OK || rc == TERSE_CODEC_ERR_CORRUPT);
            if (rc == TERSE_CODEC_OK)
                for (float v : out) ASSERT_TRUE(std::isfinite(v));
            size_t lo = 0;
            const int rc2 = te::combine(*inst, p.data(), p.size(), 2, pay.data(), pay.size(), 2, n, o.data(),
                                        o.size(), &lo);
            ASSERT_TRUE(rc2 == TERSE_CODEC_OK || rc2 == TERSE_CODEC_ERR_CORRUPT);
        }
    }
}

// ---------------------------------------------------------------- the module as the engine loads it

TEST(ErrboundPlugin, ModuleExportsAValidDescriptor) {
    const char *path = std::getenv("TERSE_PLUGIN_PATH");
    std::string so;
    if (path) {
        std::string p = path;
        size_t start = 0;
        while (start <= p.size()) {
            const size_t end = p.find(':', start);
            const std::string cand = p.substr(start, end == std::string::npos ? std::string::npos : end - start) +
                                     "/terse_errbound.so";
            if (FILE *f = std::fopen(cand.c_str(), "rb")) {
                std::fclose(f);
                so = cand;
                break;
            }
            if (end == std::string::npos) break;
            start = end + 1;
        }
    }
    if (so.empty()) GTEST_SKIP() << "terse_errbound.so not found in TERSE_PLUGIN_PATH";
    void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto entry = reinterpret_cast<terse_codec_entry_fn>(dlsym(h, TERSE_CODEC_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr);
    const terse_codec_descriptor_t *d = entry();
    EXPECT_EQ(d->abi_version, TERSE_CODEC_ABI_VERSION);
    EXPECT_EQ(d->struct_size, sizeof(terse_codec_descriptor_t));
    EXPECT_STREQ(d->name, "errbound");
    EXPECT_EQ(d->mode, TERSE_REDUCE_SUMMABLE);
    EXPECT_TRUE(d->flags & TERSE_CODEC_FLAG_ERROR_BOUND);
    for (void *r : d->reserved) EXPECT_EQ(r, nullptr);

    const terse_codec_kv_t kv[] = {{"abs", "1e-3"}, {"zstd", "on"}};
    void *params = nullptr;
    char err[256] = {0};
    ASSERT_EQ(d->parse(kv, 2, &params, err, sizeof err), TERSE_CODEC_OK) << err;
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
    for (size_t i = 0; i < x.size(); i++) EXPECT_LE(std::fabs(static_cast<double>(y[i]) - 2.0 * x[i]), 1e-3) << i;
    d->destroy(inst);
    d->free_params(params);
    dlclose(h);
}
