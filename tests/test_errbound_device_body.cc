// errbound's device kernels, emulated on the host (errbound_device_body.h
// run by errbound_device_emulation.h over the CUDA grid's indices), against
// the CPU codec: payloads byte-identical, statistics and decoded (and
// accumulated) values bit-identical, the same status for every raw,
// refused or corrupt case.  This is what checks the kernels' codes, widths,
// scans and decisions on a machine without a GPU; the device check
// (tests/gpu/device-check.sh) compares the real kernels on a GPU.
#include "codec_test_data.h"
#include "codec_test_util.h"

#include "../plugins/errbound/errbound_codec.h"
#include "../plugins/errbound/errbound_device_emulation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace codec_test;
namespace te = terse_errbound;
namespace ed = terse_errbound::dev;

namespace {

using InstPtr = InstancePtr<te::Instance>;
constexpr size_t kMaxChunk = size_t{1} << 18;
constexpr terse_dtype_t kDtypes[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16,
                                     TERSE_DTYPE_BFLOAT16};

te::Params params_of(te::Mode m, double bound) {
    te::Params p;
    p.mode = m;
    p.bound = bound;
    return p;
}

// The CPU side runs the scalar path: the reference every path matches.
InstPtr make_inst(const te::Params &p, terse_dtype_t dt, int nranks) {
    te::Instance *inst = nullptr;
    char err[256] = {0};
    const int rc = create_host_instance(p, dt, nranks, kMaxChunk, terse_codec::Isa::Scalar, &inst, err,
                                        sizeof err);
    EXPECT_EQ(rc, TERSE_CODEC_OK) << err;
    return InstPtr(inst);
}

struct Workspace {
    std::vector<uint64_t> words;
    explicit Workspace(size_t max_count = kMaxChunk)
        : words((ed::workspace_size(max_count) + 7) / 8, 0xdeadull) {}
    void *data() { return words.data(); }
};

const char *mode_str(te::Mode m) { return m == te::kAbs ? "abs" : m == te::kRel ? "rel" : "norm"; }

std::string what(const te::Instance &in, size_t n, const char *extra = "") {
    return std::string(dtype_str(in.dtype)) + " " + mode_str(in.p.mode) + "=" + std::to_string(in.p.bound) +
           " n=" + std::to_string(n) + " " + extra;
}

::testing::AssertionResult same_encode(const te::Instance &in, const void *src, size_t n, const double *agreed,
                                       std::vector<uint8_t> *payload = nullptr, size_t cap = 0) {
    if (!cap) cap = te::max_encoded_size(in, n);
    std::vector<uint8_t> a(cap + 16, 0xa5), b(cap + 16, 0xa5);
    size_t la = 0, lb = 0;
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    call.agreed_stats = agreed;
    Workspace ws;
    const int ra = te::encode(in, src, n, a.data(), cap, &la, agreed ? &call : nullptr);
    const int rb = ed::emu_encode(in, ws.data(), src, n, b.data(), cap, &lb, agreed ? &call : nullptr);
    if (ra != rb) return ::testing::AssertionFailure() << "status cpu " << ra << " device " << rb;
    if (ra != TERSE_CODEC_OK) return ::testing::AssertionSuccess();
    if (la != lb) return ::testing::AssertionFailure() << "length cpu " << la << " device " << lb;
    for (size_t i = 0; i < la; i++)
        if (a[i] != b[i])
            return ::testing::AssertionFailure()
                   << "byte " << i << " of " << la << ": cpu " << int(a[i]) << " device " << int(b[i]);
    for (size_t i = la; i < a.size(); i++)
        if (b[i] != 0xa5) return ::testing::AssertionFailure() << "device wrote byte " << i << " past " << lb;
    if (payload) payload->assign(a.begin(), a.begin() + static_cast<long>(la));
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_stats(const te::Instance &in, const void *src, size_t n,
                                      std::vector<double> *out = nullptr) {
    const size_t ns = te::stats_count(in, n);
    std::vector<double> a(ns + 1, -7.0), b(ns + 1, -7.0);
    Workspace ws;
    const int ra = te::stats(in, src, n, a.data());
    const int rb = ed::emu_stats(in, ws.data(), src, n, b.data());
    if (ra != rb) return ::testing::AssertionFailure() << "status cpu " << ra << " device " << rb;
    for (size_t k = 0; k < a.size(); k++)
        if (std::memcmp(&a[k], &b[k], sizeof(double)) != 0)
            return ::testing::AssertionFailure() << "stat " << k << ": cpu " << a[k] << " device " << b[k];
    if (out) out->assign(a.begin(), a.begin() + static_cast<long>(ns));
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_decode(const te::Instance &in, const std::vector<uint8_t> &pay, size_t n,
                                       const Buf &base) {
    for (int acc = 0; acc < 2; acc++) {
        Buf a = base, b = base;
        Workspace ws;
        const int ra = te::decode(in, pay.data(), pay.size(), a.data(), n, acc, TERSE_OP_SUM);
        const int rb = ed::emu_decode(in, ws.data(), pay.data(), pay.size(), b.data(), n, acc, TERSE_OP_SUM);
        if (ra != rb)
            return ::testing::AssertionFailure()
                   << "accumulate=" << acc << " status cpu " << ra << " device " << rb;
        if (ra == TERSE_CODEC_OK && a.bytes != b.bytes) {
            const size_t eb = terse_codec::dtype_bytes(in.dtype);
            for (size_t i = 0; i < n; i++)
                if (std::memcmp(&a.bytes[i * eb], &b.bytes[i * eb], eb) != 0)
                    return ::testing::AssertionFailure() << "accumulate=" << acc << " element " << i << ": cpu "
                                                         << a.get(i) << " device " << b.get(i);
            return ::testing::AssertionFailure() << "accumulate=" << acc << " bytes past the elements differ";
        }
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_combine(const te::Instance &in, const std::vector<uint8_t> &a, int ac,
                                        const std::vector<uint8_t> &b, int bc, size_t n, size_t cap,
                                        std::vector<uint8_t> *out = nullptr) {
    std::vector<uint8_t> oa(cap + 16, 0x5a), ob(cap + 16, 0x5a);
    size_t la = 0, lb = 0;
    Workspace ws;
    const int ra = te::combine(in, a.data(), a.size(), ac, b.data(), b.size(), bc, n, oa.data(), cap, &la);
    const int rb = ed::emu_combine(in, ws.data(), a.data(), a.size(), ac, b.data(), b.size(), bc, n, ob.data(),
                                   cap, &lb);
    if (ra != rb) return ::testing::AssertionFailure() << "status cpu " << ra << " device " << rb;
    if (ra != TERSE_CODEC_OK) return ::testing::AssertionSuccess();
    if (la != lb) return ::testing::AssertionFailure() << "length cpu " << la << " device " << lb;
    if (!std::equal(oa.begin(), oa.begin() + static_cast<long>(la), ob.begin()))
        return ::testing::AssertionFailure() << "combined payloads differ";
    for (size_t i = lb; i < ob.size(); i++)
        if (ob[i] != 0x5a) return ::testing::AssertionFailure() << "device wrote byte " << i << " past " << lb;
    if (out) out->assign(oa.begin(), oa.begin() + static_cast<long>(la));
    return ::testing::AssertionSuccess();
}

std::vector<double> agreed_of(const te::Instance &in, const std::vector<Buf> &ranks) {
    std::vector<double> m;
    for (const Buf &b : ranks) {
        std::vector<double> s(te::stats_count(in, b.n));
        EXPECT_EQ(te::stats(in, b.data(), b.n, s.data()), TERSE_CODEC_OK);
        if (m.empty()) m = s;
        else
            for (size_t k = 0; k < s.size(); k++) m[k] = std::max(m[k], s[k]);
    }
    return m;
}

void check_single_rank(const te::Instance &in, const Buf &x) {
    const size_t n = x.n;
    std::vector<double> st;
    ASSERT_TRUE(same_stats(in, x.data(), n, &st)) << what(in, n, "stats");
    std::vector<uint8_t> pay;
    ASSERT_TRUE(same_encode(in, x.data(), n, nullptr, &pay)) << what(in, n, "local stats");
    ASSERT_TRUE(same_encode(in, x.data(), n, st.data(), &pay)) << what(in, n, "agreed stats");
    if (pay.empty()) return;
    ASSERT_TRUE(same_decode(in, pay, n, x)) << what(in, n, "decode");
}

struct ModeBound {
    te::Mode m;
    double b;
};
constexpr ModeBound kModes[] = {
    {te::kAbs, 1e-3}, {te::kAbs, 1e-6}, {te::kRel, 1e-2}, {te::kRel, 1e-5}, {te::kNorm, 1e-2}};

}  // namespace

TEST(ErrboundDeviceBody, EveryDtypeModeCountAndShape) {
    const size_t counts[] = {1, 2, 17, 31, 32, 33, 63, 64, 65, 95, 100, 257, 1000, 2049, 4100};
    int checked = 0;
    for (terse_dtype_t dt : kDtypes)
        for (const ModeBound &mb : kModes) {
            auto in = make_inst(params_of(mb.m, mb.b), dt, 1);
            for (size_t n : counts)
                for (Shape s : kAllShapes) {
                    const Buf x = make_buf(dt, make_shape(s, n, 11 + n, static_cast<int>(mb.m)));
                    check_single_rank(*in, x);
                    if (::testing::Test::HasFatalFailure()) return;
                    checked++;
                }
        }
    EXPECT_GT(checked, 2000);
}

TEST(ErrboundDeviceBody, LongChunksAndMisalignedData) {
    for (terse_dtype_t dt : kDtypes)
        for (const ModeBound &mb : kModes) {
            auto in = make_inst(params_of(mb.m, mb.b), dt, 3);
            const Buf x = make_buf(dt, make_shape(Shape::StudentT, 140001, 5, 0), 1);
            check_single_rank(*in, x);
            if (HasFatalFailure()) return;
        }
}

// Signed zeros tie for the largest and smallest value: the CPU keeps the
// first of them in index order, and so must the device's partials.
TEST(ErrboundDeviceBody, SignedZeroTiesInTheRangeStats) {
    for (terse_dtype_t dt : kDtypes) {
        auto in = make_inst(params_of(te::kRel, 1e-3), dt, 1);
        for (size_t n : {size_t{2}, size_t{300}, size_t{70000}}) {
            for (int first_negative = 0; first_negative < 2; first_negative++) {
                std::vector<double> v(n, 0.0);
                for (size_t i = 0; i < n; i++) v[i] = ((i * 7919 + first_negative) % 3 == 0) ? -0.0 : 0.0;
                v[0] = first_negative ? -0.0 : 0.0;
                v[n - 1] = first_negative ? 0.0 : -0.0;
                const Buf x = make_buf(dt, v);
                ASSERT_TRUE(same_stats(*in, x.data(), n)) << what(*in, n, "signed zeros");
                auto w = v;
                w[n / 2] = -1.0;  // a negative minimum, zeros tie for the maximum
                const Buf y = make_buf(dt, w);
                ASSERT_TRUE(same_stats(*in, y.data(), n)) << what(*in, n, "zeros and -1");
            }
        }
    }
}

TEST(ErrboundDeviceBody, SummedPayloadsCombineAndDecodeAlike) {
    for (terse_dtype_t dt : kDtypes)
        for (const ModeBound &mb : kModes)
            for (size_t n : {size_t{5}, size_t{64}, size_t{1001}, size_t{40000}}) {
                const int nranks = 5;
                auto in = make_inst(params_of(mb.m, mb.b), dt, nranks);
                std::vector<Buf> ranks;
                for (int k = 0; k < nranks; k++)
                    ranks.push_back(make_buf(dt, make_shape(Shape::Laplace, n, 3, k)));
                const auto agreed = agreed_of(*in, ranks);
                const size_t cap = te::max_encoded_size(*in, n);
                std::vector<std::vector<uint8_t>> pays(nranks);
                for (int k = 0; k < nranks; k++)
                    ASSERT_TRUE(same_encode(*in, ranks[k].data(), n, agreed.data(), &pays[k]))
                        << what(*in, n, "rank");
                if (pays[0].empty()) continue;  // raw
                std::vector<uint8_t> acc = pays[0];
                int c = 1;
                for (int k = 1; k < nranks; k++) {
                    std::vector<uint8_t> next;
                    ASSERT_TRUE(same_combine(*in, acc, c, pays[k], 1, n, cap, &next)) << what(*in, n, "ring");
                    acc = next;
                    c++;
                    ASSERT_TRUE(same_decode(*in, acc, n, ranks[0])) << what(*in, n, "partial sum");
                }
                std::vector<uint8_t> two_a, two_b, four;
                ASSERT_TRUE(same_combine(*in, pays[0], 1, pays[1], 1, n, cap, &two_a));
                ASSERT_TRUE(same_combine(*in, pays[2], 1, pays[3], 1, n, cap, &two_b));
                ASSERT_TRUE(same_combine(*in, two_a, 2, two_b, 2, n, cap, &four)) << what(*in, n, "tree");
                ASSERT_TRUE(same_combine(*in, four, 4, pays[4], 1, n, cap)) << what(*in, n, "tree");
                ASSERT_TRUE(same_combine(*in, pays[4], 1, four, 4, n, cap)) << what(*in, n, "tree, swapped");
                // Outputs too small, exactly large enough, and the header alone.
                ASSERT_TRUE(same_combine(*in, four, 4, pays[4], 1, n, acc.size())) << what(*in, n, "exact room");
                ASSERT_TRUE(same_combine(*in, four, 4, pays[4], 1, n, acc.size() - 1)) << what(*in, n, "short");
                ASSERT_TRUE(same_combine(*in, four, 4, pays[4], 1, n, te::kHeaderBytes))
                    << what(*in, n, "header");
            }
}

TEST(ErrboundDeviceBody, SampleFieldsAndTransformerGradients) {
    std::vector<std::string> files(std::begin(kFields), std::end(kFields));
    files.push_back("transformer_grad_3438080_f32.raw");
    int found = 0;
    for (const std::string &f : files) {
        std::vector<float> v = load_field(f);
        if (v.empty()) continue;
        found++;
        const size_t n = std::min<size_t>(v.size(), 200000);
        std::vector<double> d(v.begin(), v.begin() + static_cast<long>(n));
        for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_BFLOAT16})
            for (const ModeBound &mb : kModes) {
                auto in = make_inst(params_of(mb.m, mb.b), dt, 4);
                const Buf x = make_buf(dt, d);
                check_single_rank(*in, x);
                if (HasFatalFailure()) return;
            }
    }
    if (found == 0) GTEST_SKIP() << "no sample fields in " << shared_data_dir() << " (set TERSE_SHARED_DATA)";
}

TEST(ErrboundDeviceBody, RawAndRefusedChunksDecideAlike) {
    for (terse_dtype_t dt : kDtypes)
        for (const ModeBound &mb : kModes) {
            auto in = make_inst(params_of(mb.m, mb.b), dt, 2);
            const size_t n = 300;
            const auto v = make_shape(Shape::Gaussian, n, 1, 0);
            for (double bad : {double(NAN), double(INFINITY), -double(INFINITY)})
                for (size_t at : {size_t{0}, size_t{31}, size_t{299}}) {
                    auto w = v;
                    w[at] = bad;
                    const Buf x = make_buf(dt, w);
                    ASSERT_TRUE(same_stats(*in, x.data(), n)) << what(*in, n, "non-finite stats");
                    EXPECT_TRUE(same_encode(*in, x.data(), n, nullptr)) << what(*in, n, "non-finite");
                    const Buf clean = make_buf(dt, v);
                    const auto agreed = agreed_of(*in, {clean});
                    EXPECT_TRUE(same_encode(*in, x.data(), n, agreed.data())) << what(*in, n, "beyond agreed");
                }
            const Buf x = make_buf(dt, v);
            const auto agreed = agreed_of(*in, {x});
            auto small = agreed;
            for (double &m : small) m *= 0.5;  // stats that do not cover the data
            EXPECT_TRUE(same_encode(*in, x.data(), n, small.data())) << what(*in, n, "small stats");
            for (double odd : {double(NAN), double(INFINITY), -1.0, 0.0, 1e300, 1e-300}) {
                auto s = agreed;
                s[0] = odd;
                EXPECT_TRUE(same_encode(*in, x.data(), n, s.data())) << what(*in, n, "odd stats") << odd;
                s = agreed;
                s.back() = odd;
                EXPECT_TRUE(same_encode(*in, x.data(), n, s.data())) << what(*in, n, "odd stats") << odd;
            }
            // Capacities around the payload's length.
            std::vector<uint8_t> pay;
            ASSERT_TRUE(same_encode(*in, x.data(), n, agreed.data(), &pay));
            if (!pay.empty()) {
                for (size_t cap :
                     {pay.size(), pay.size() - 1, te::kHeaderBytes + 1, te::kHeaderBytes, size_t{3}}) {
                    EXPECT_TRUE(same_encode(*in, x.data(), n, agreed.data(), nullptr, cap)) << "cap " << cap;
                }
            }
        }
}

TEST(ErrboundDeviceBody, CorruptPayloadsAreRefusedAlike) {
    for (int nranks : {1, 3})
        for (const ModeBound &mb : kModes) {
            auto in = make_inst(params_of(mb.m, mb.b), TERSE_DTYPE_FLOAT32, 4);
            const size_t n = 150;
            std::vector<Buf> ranks;
            for (int k = 0; k < nranks; k++)
                ranks.push_back(make_buf(TERSE_DTYPE_FLOAT32, make_shape(Shape::Gaussian, n, 8, k)));
            const auto agreed = agreed_of(*in, ranks);
            const size_t cap = te::max_encoded_size(*in, n);
            std::vector<uint8_t> pay, one;
            ASSERT_TRUE(same_encode(*in, ranks[0].data(), n, agreed.data(), &pay));
            ASSERT_FALSE(pay.empty());
            one = pay;
            for (int k = 1; k < nranks; k++) {
                std::vector<uint8_t> enc, next;
                ASSERT_TRUE(same_encode(*in, ranks[k].data(), n, agreed.data(), &enc));
                ASSERT_TRUE(same_combine(*in, pay, k, enc, 1, n, cap, &next));
                pay = next;
            }
            const Buf base = ranks[0];
            for (size_t len = 0; len < pay.size(); len += 7) {
                std::vector<uint8_t> t(pay.begin(), pay.begin() + static_cast<long>(len));
                EXPECT_TRUE(same_decode(*in, t, n, base)) << "truncated to " << len;
            }
            Rng r(77 + nranks);
            for (int t = 0; t < 3000; t++) {
                std::vector<uint8_t> p = pay;
                const int flips = 1 + static_cast<int>(r.next() % 3);
                for (int f = 0; f < flips; f++) {
                    // Half the damage in the header, where every field is checked.
                    const size_t at = (t & 1) ? r.next() % te::kHeaderBytes : r.next() % p.size();
                    p[at] ^= static_cast<uint8_t>(1u << (r.next() % 8));
                }
                if (p[1] & te::kFlagZstd) continue;  // the device has no zstd stage (refused, UNSUPPORTED)
                ASSERT_TRUE(same_decode(*in, p, n, base)) << "damage " << t;
                ASSERT_TRUE(same_combine(*in, p, nranks, one, 1, n, cap)) << "damage " << t;
                ASSERT_TRUE(same_combine(*in, one, 1, p, nranks, n, cap)) << "damage " << t;
            }
            EXPECT_TRUE(same_combine(*in, pay, nranks + 1, one, 1, n, cap));
            EXPECT_TRUE(same_combine(*in, pay, nranks, one, 1, n - 1, cap));
            EXPECT_TRUE(same_decode(*in, pay, n - 1, base));
            Buf out = base;
            Workspace ws;
            EXPECT_EQ(ed::emu_decode(*in, ws.data(), pay.data(), pay.size(), out.data(), n, 0, TERSE_OP_MAX),
                      TERSE_CODEC_ERR_UNSUPPORTED);
        }
}

// A zstd-compressed payload (from a host rank with zstd=on) is refused by
// the device side, which has no zstd stage; device instances with zstd=on
// are refused at create, naming the parameter.
TEST(ErrboundDeviceBody, ZstdIsHostOnly) {
    te::Params p = params_of(te::kAbs, 1e-3);
    p.zstd = true;
    terse_codec_setup_t s{};
    s.struct_size = sizeof s;
    s.dtype = TERSE_DTYPE_FLOAT32;
    s.mem_kind = TERSE_MEM_CUDA;
    s.nranks = 2;
    s.max_chunk_count = 1024;
    te::Instance *inst = nullptr;
    char err[256] = {0};
    const int rc = te::create_instance(p, &s, terse_codec::Isa::Scalar, &inst, err, sizeof err);
    EXPECT_EQ(rc, TERSE_CODEC_ERR_UNSUPPORTED);
    EXPECT_EQ(inst, nullptr);
    if (te::mem_kinds() & TERSE_MEM_CUDA) {
        EXPECT_NE(std::string(err).find("zstd=on"), std::string::npos) << err;
    }
    if (!te::zstd_available()) return;
    auto zin = make_inst(p, TERSE_DTYPE_FLOAT32, 1);
    const size_t n = 20000;
    const Buf x = make_buf(TERSE_DTYPE_FLOAT32, make_shape(Shape::Smooth, n, 1, 0));
    std::vector<uint8_t> pay(te::max_encoded_size(*zin, n));
    size_t len = 0;
    ASSERT_EQ(te::encode(*zin, x.data(), n, pay.data(), pay.size(), &len, nullptr), TERSE_CODEC_OK);
    pay.resize(len);
    if (!(pay[1] & te::kFlagZstd)) return;  // zstd did not help on this data: stored plain
    Buf out = x;
    Workspace ws;
    EXPECT_EQ(ed::emu_decode(*zin, ws.data(), pay.data(), pay.size(), out.data(), n, 0, TERSE_OP_SUM),
              TERSE_CODEC_ERR_UNSUPPORTED);
}

TEST(ErrboundDeviceBody, ChunksLargerThanTheWorkspaceAreRefused) {
    auto in = make_inst(params_of(te::kAbs, 1e-3), TERSE_DTYPE_FLOAT32, 1);
    const size_t n = kMaxChunk + 33;
    const Buf x = make_buf(TERSE_DTYPE_FLOAT32, make_shape(Shape::Gaussian, n, 1, 0));
    std::vector<uint8_t> out(te::max_encoded_size(*in, n));
    size_t len = 0;
    Workspace ws;
    EXPECT_EQ(ed::emu_encode(*in, ws.data(), x.data(), n, out.data(), out.size(), &len, nullptr),
              TERSE_CODEC_ERR_PARAM);
}
