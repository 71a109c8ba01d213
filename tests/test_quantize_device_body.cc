// quantize's device kernels, emulated on the host (quantize_device_body.h
// run by quantize_device_emulation.h over the CUDA grid's indices), against
// the CPU codec: payloads byte-identical, statistics and decoded (and
// accumulated) values bit-identical, the same status for every raw,
// refused or corrupt case.  This is what checks the kernels' indexing,
// packing and decisions on a machine without a GPU; the device check
// (tests/gpu/device-check.sh) compares the real kernels on a GPU.
#include "codec_test_data.h"
#include "codec_test_util.h"

#include "../plugins/quantize/quantize_codec.h"
#include "../plugins/quantize/quantize_device_emulation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using namespace codec_test;
namespace tq = terse_quantize;
namespace qd = terse_quantize::dev;

namespace {

using InstPtr = InstancePtr<tq::Instance>;
constexpr size_t kMaxChunk = size_t{1} << 22;
constexpr terse_dtype_t kDtypes[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16,
                                     TERSE_DTYPE_BFLOAT16};
constexpr int kBits[] = {1, 2, 4, 8, 16};

tq::Params params_of(int bits, int log2_block, tq::Rounding r) {
    tq::Params p;
    p.bits = bits;
    p.log2_block = log2_block;
    p.rounding = r;
    return p;
}

InstPtr make_inst(const tq::Params &p, terse_dtype_t dt, int nranks) {
    tq::Instance *inst = nullptr;
    char err[256] = {0};
    const int rc = create_host_instance(p, dt, nranks, kMaxChunk, terse_codec::best_isa(), &inst, err,
                                        sizeof err);
    EXPECT_EQ(rc, TERSE_CODEC_OK) << err;
    return InstPtr(inst);
}

// The device workspace, as a device instance of these parameters has it.
struct Workspace {
    std::vector<uint64_t> words;
    explicit Workspace(const tq::Params &p, size_t max_count = kMaxChunk)
        : words((qd::workspace_size(p, max_count) + 7) / 8) {}
    void *data() { return words.data(); }
    size_t bytes() const { return words.size() * 8; }
};

std::string what(const tq::Instance &in, size_t n, const char *extra = "") {
    return std::string(dtype_str(in.dtype)) + " bits=" + std::to_string(in.p.bits) +
           " block=" + std::to_string(1 << in.p.log2_block) +
           (in.p.rounding == tq::kStochastic ? " stochastic" : " nearest") + " n=" + std::to_string(n) + " " +
           extra;
}

// Encodes with both; the same status, and on success the same bytes (the
// whole capacity: neither may write past its payload).
::testing::AssertionResult same_encode(const tq::Instance &in, const void *src, size_t n, const double *agreed,
                                       uint64_t seed, std::vector<uint8_t> *payload = nullptr) {
    const size_t cap = tq::max_encoded_size(in, n);
    std::vector<uint8_t> a(cap + 16, 0xa5), b(cap + 16, 0xa5);
    size_t la = 0, lb = 0;
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    call.agreed_stats = agreed;
    call.seed = seed;
    Workspace ws(in.p);
    const int ra = tq::encode(in, src, n, a.data(), cap, &la, &call);
    const int rb = qd::emu_encode(in, ws.data(), ws.bytes(), src, n, b.data(), cap, &lb, &call);
    if (ra != rb) return ::testing::AssertionFailure() << "status cpu " << ra << " device " << rb;
    if (ra != TERSE_CODEC_OK) return ::testing::AssertionSuccess();
    if (la != lb) return ::testing::AssertionFailure() << "length cpu " << la << " device " << lb;
    for (size_t i = 0; i < a.size(); i++)
        if (a[i] != b[i])
            return ::testing::AssertionFailure()
                   << "byte " << i << " of " << la << ": cpu " << int(a[i]) << " device " << int(b[i]);
    if (payload) payload->assign(a.begin(), a.begin() + static_cast<long>(la));
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_stats(const tq::Instance &in, const void *src, size_t n,
                                      std::vector<double> *out = nullptr) {
    const size_t nb = tq::stats_count(in, n);
    std::vector<double> a(nb + 1, -7.0), b(nb + 1, -7.0);
    Workspace ws(in.p);
    const int ra = tq::stats(in, src, n, a.data());
    const int rb = qd::emu_stats(in, ws.data(), ws.bytes(), src, n, b.data());
    if (ra != rb) return ::testing::AssertionFailure() << "status cpu " << ra << " device " << rb;
    if (std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) != 0) {
        for (size_t k = 0; k < a.size(); k++)
            if (std::memcmp(&a[k], &b[k], sizeof(double)) != 0)
                return ::testing::AssertionFailure() << "block " << k << ": cpu " << a[k] << " device " << b[k];
    }
    if (out) out->assign(a.begin(), a.begin() + static_cast<long>(nb));
    return ::testing::AssertionSuccess();
}

// Decodes (and decode-accumulates onto `base`) with both: same status, same bits.
::testing::AssertionResult same_decode(const tq::Instance &in, const std::vector<uint8_t> &pay, size_t n,
                                       const Buf &base) {
    for (int acc = 0; acc < 2; acc++) {
        Buf a = base, b = base;
        Workspace ws(in.p);
        const int ra = tq::decode(in, pay.data(), pay.size(), a.data(), n, acc, TERSE_OP_SUM);
        const int rb = qd::emu_decode(in, ws.data(), ws.bytes(), pay.data(), pay.size(), b.data(), n, acc,
                                      TERSE_OP_SUM);
        if (ra != rb)
            return ::testing::AssertionFailure()
                   << "accumulate=" << acc << " status cpu " << ra << " device " << rb;
        if (ra == TERSE_CODEC_OK && a.bytes != b.bytes) {
            for (size_t i = 0; i < n; i++)
                if (std::memcmp(&a.bytes[i * terse_codec::dtype_bytes(in.dtype)],
                                &b.bytes[i * terse_codec::dtype_bytes(in.dtype)],
                                terse_codec::dtype_bytes(in.dtype)) != 0)
                    return ::testing::AssertionFailure() << "accumulate=" << acc << " element " << i << ": cpu "
                                                         << a.get(i) << " device " << b.get(i);
            return ::testing::AssertionFailure() << "accumulate=" << acc << " bytes past the elements differ";
        }
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_combine(const tq::Instance &in, const std::vector<uint8_t> &a, int ac,
                                        const std::vector<uint8_t> &b, int bc, size_t n, size_t cap,
                                        std::vector<uint8_t> *out = nullptr) {
    std::vector<uint8_t> oa(cap + 16, 0x5a), ob(cap + 16, 0x5a);
    size_t la = 0, lb = 0;
    Workspace ws(in.p);
    const int ra = tq::combine(in, a.data(), a.size(), ac, b.data(), b.size(), bc, n, oa.data(), cap, &la);
    const int rb = qd::emu_combine(in, ws.data(), ws.bytes(), a.data(), a.size(), ac, b.data(), b.size(), bc, n,
                                   ob.data(), cap, &lb);
    if (ra != rb) return ::testing::AssertionFailure() << "status cpu " << ra << " device " << rb;
    if (ra != TERSE_CODEC_OK) return ::testing::AssertionSuccess();
    if (la != lb) return ::testing::AssertionFailure() << "length cpu " << la << " device " << lb;
    if (oa != ob) return ::testing::AssertionFailure() << "combined payloads differ";
    if (out) out->assign(oa.begin(), oa.begin() + static_cast<long>(la));
    return ::testing::AssertionSuccess();
}

// The agreed statistics of several ranks: the max over their stats().
std::vector<double> agreed_of(const tq::Instance &in, const std::vector<Buf> &ranks) {
    std::vector<double> m;
    for (const Buf &b : ranks) {
        std::vector<double> s(tq::stats_count(in, b.n));
        EXPECT_EQ(tq::stats(in, b.data(), b.n, s.data()), TERSE_CODEC_OK);
        if (m.empty()) m = s;
        else
            for (size_t k = 0; k < s.size(); k++) m[k] = std::max(m[k], s[k]);
    }
    return m;
}

// One chunk through everything a single rank does: stats, encode without
// and with agreed stats, decode and decode-accumulate.
void check_single_rank(const tq::Instance &in, const Buf &x, uint64_t seed) {
    const size_t n = x.n;
    std::vector<double> st;
    ASSERT_TRUE(same_stats(in, x.data(), n, &st)) << what(in, n, "stats");
    std::vector<uint8_t> pay;
    ASSERT_TRUE(same_encode(in, x.data(), n, nullptr, seed, &pay)) << what(in, n, "local stats");
    ASSERT_TRUE(same_encode(in, x.data(), n, st.data(), seed, &pay)) << what(in, n, "agreed stats");
    if (pay.empty()) return;  // raw: nothing to decode
    ASSERT_TRUE(same_decode(in, pay, n, x)) << what(in, n, "decode");
}

}  // namespace

TEST(QuantizeDeviceBody, EveryDtypeWidthRoundingCountAndBlock) {
    const size_t counts[] = {1, 17, 31, 32, 33, 95, 100, 257, 1000, 2049, 4100};
    int checked = 0;
    for (terse_dtype_t dt : kDtypes)
        for (int bits : kBits)
            for (tq::Rounding r : {tq::kNearest, tq::kStochastic})
                for (int lb : {tq::kMinLog2Block, 7, tq::default_log2_block(bits)}) {
                    auto in = make_inst(params_of(bits, lb, r), dt, 1);
                    for (size_t n : counts)
                        for (Shape s : {Shape::Gaussian, Shape::Mixed, Shape::Zero, Shape::Tiny}) {
                            const Buf x = make_buf(dt, make_shape(s, n, 11 + n, bits));
                            check_single_rank(*in, x, 0x1234567890ull + n);
                            if (::testing::Test::HasFatalFailure()) return;
                            checked++;
                        }
                }
    EXPECT_GT(checked, 1000);
}

TEST(QuantizeDeviceBody, LongChunksLargeBlocksAndMisalignedData) {
    for (terse_dtype_t dt : kDtypes)
        for (int bits : {1, 4, 16}) {
            auto in = make_inst(params_of(bits, tq::kMaxLog2Block, tq::kStochastic), dt, 1);
            Buf x = make_buf(dt, make_shape(Shape::StudentT, 140001, 5, 0), 1);  // misaligned by one element
            check_single_rank(*in, x, 99);
            if (HasFatalFailure()) return;
        }
}

TEST(QuantizeDeviceBody, SummedPayloadsCombineAndDecodeAlike) {
    for (terse_dtype_t dt : kDtypes)
        for (int bits : kBits)
            for (tq::Rounding r : {tq::kNearest, tq::kStochastic})
                for (size_t n : {size_t{5}, size_t{64}, size_t{1001}}) {
                    const int nranks = 5;
                    auto in = make_inst(params_of(bits, 6, r), dt, nranks);
                    std::vector<Buf> ranks;
                    for (int k = 0; k < nranks; k++)
                        ranks.push_back(make_buf(dt, make_shape(Shape::Laplace, n, 3, k)));
                    const auto agreed = agreed_of(*in, ranks);
                    const size_t cap = tq::max_encoded_size(*in, n);
                    std::vector<std::vector<uint8_t>> pays(nranks);
                    for (int k = 0; k < nranks; k++)
                        ASSERT_TRUE(same_encode(*in, ranks[k].data(), n, agreed.data(), 7 + k, &pays[k]))
                            << what(*in, n, "rank");
                    if (pays[0].empty()) continue;  // raw (would not shrink)
                    // A ring's partial sums: 1+1, then 2+1, 3+1, and a tree's 2+2 and 4+1.
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
                }
}

TEST(QuantizeDeviceBody, SampleFieldsAndTransformerGradients) {
    std::vector<std::string> files(std::begin(kFields), std::end(kFields));
    files.push_back("transformer_grad_3438080_f32.raw");
    int found = 0;
    for (const std::string &f : files) {
        std::vector<float> v = load_field(f);
        if (v.empty()) continue;
        found++;
        const size_t n = std::min<size_t>(v.size(), 1 << 20);  // a chunk the engine could hand over
        std::vector<double> d(v.begin(), v.begin() + static_cast<long>(n));
        for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_BFLOAT16})
            for (int bits : {1, 4, 8})
                for (tq::Rounding r : {tq::kNearest, tq::kStochastic}) {
                    auto in = make_inst(params_of(bits, tq::default_log2_block(bits), r), dt, 1);
                    const Buf x = make_buf(dt, d);
                    check_single_rank(*in, x, 2024);
                    if (HasFatalFailure()) return;
                }
    }
    if (found == 0) GTEST_SKIP() << "no sample fields in " << shared_data_dir() << " (set TERSE_SHARED_DATA)";
}

TEST(QuantizeDeviceBody, RawAndRefusedChunksDecideAlike) {
    for (terse_dtype_t dt : kDtypes)
        for (int bits : {1, 8})
            for (tq::Rounding r : {tq::kNearest, tq::kStochastic}) {
                auto in = make_inst(params_of(bits, 5, r), dt, 2);
                const size_t n = 300;
                const auto v = make_shape(Shape::Gaussian, n, 1, 0);
                for (double bad : {double(NAN), double(INFINITY), -double(INFINITY)}) {
                    for (size_t at : {size_t{0}, size_t{31}, size_t{299}}) {
                        auto w = v;
                        w[at] = bad;
                        const Buf x = make_buf(dt, w);
                        std::vector<double> st;
                        ASSERT_TRUE(same_stats(*in, x.data(), n, &st));
                        EXPECT_TRUE(same_encode(*in, x.data(), n, nullptr, 1)) << what(*in, n, "non-finite");
                        // Agreed stats from the other ranks (finite), this rank's NaN beyond them.
                        const Buf clean = make_buf(dt, v);
                        const auto agreed = agreed_of(*in, {clean});
                        EXPECT_TRUE(same_encode(*in, x.data(), n, agreed.data(), 1))
                            << what(*in, n, "beyond agreed");
                    }
                }
                const Buf x = make_buf(dt, v);
                auto agreed = agreed_of(*in, {x});
                auto small = agreed;
                for (double &m : small) m *= 0.5;  // stats that do not cover the data
                EXPECT_TRUE(same_encode(*in, x.data(), n, small.data(), 1)) << what(*in, n, "small stats");
                auto neg_then_nan = agreed;
                neg_then_nan[2] = -1.0;
                neg_then_nan[5] = NAN;
                EXPECT_TRUE(same_encode(*in, x.data(), n, neg_then_nan.data(), 1)) << what(*in, n, "-1 then NaN");
                auto nan_then_neg = agreed;
                nan_then_neg[2] = INFINITY;
                nan_then_neg[5] = -1.0;
                EXPECT_TRUE(same_encode(*in, x.data(), n, nan_then_neg.data(), 1)) << what(*in, n, "Inf then -1");
                auto huge = agreed;
                huge[0] = 1e300;  // beyond a float scale
                EXPECT_TRUE(same_encode(*in, x.data(), n, huge.data(), 1)) << what(*in, n, "huge scale");
                auto tiny = agreed;
                tiny[1] = 1e-310;  // a subnormal step
                EXPECT_TRUE(same_encode(*in, x.data(), n, tiny.data(), 1)) << what(*in, n, "tiny scale");
            }
}

TEST(QuantizeDeviceBody, CorruptPayloadsAreRefusedAlike) {
    for (int nranks : {1, 3})
        for (int bits : {1, 4, 8}) {
            auto in = make_inst(params_of(bits, 5, tq::kNearest), TERSE_DTYPE_FLOAT32, 4);
            const size_t n = 150;
            std::vector<Buf> ranks;
            for (int k = 0; k < nranks; k++)
                ranks.push_back(make_buf(TERSE_DTYPE_FLOAT32, make_shape(Shape::Gaussian, n, 8, k)));
            const auto agreed = agreed_of(*in, ranks);
            const size_t cap = tq::max_encoded_size(*in, n);
            std::vector<uint8_t> pay, one;
            ASSERT_TRUE(same_encode(*in, ranks[0].data(), n, agreed.data(), 1, &pay));
            one = pay;
            for (int k = 1; k < nranks; k++) {
                std::vector<uint8_t> enc, next;
                ASSERT_TRUE(same_encode(*in, ranks[k].data(), n, agreed.data(), 1, &enc));
                ASSERT_TRUE(same_combine(*in, pay, k, enc, 1, n, cap, &next));
                pay = next;
            }
            const Buf base = ranks[0];
            for (size_t len = 0; len < pay.size(); len += 7) {
                std::vector<uint8_t> t(pay.begin(), pay.begin() + static_cast<long>(len));
                EXPECT_TRUE(same_decode(*in, t, n, base)) << "truncated to " << len;
            }
            Rng r(77 + bits);
            for (int t = 0; t < 3000; t++) {
                std::vector<uint8_t> p = pay;
                const int flips = 1 + static_cast<int>(r.next() % 3);
                for (int f = 0; f < flips; f++)
                    p[r.next() % p.size()] ^= static_cast<uint8_t>(1u << (r.next() % 8));
                ASSERT_TRUE(same_decode(*in, p, n, base)) << "damage " << t;
                ASSERT_TRUE(same_combine(*in, p, nranks, one, 1, n, cap)) << "damage " << t;
                ASSERT_TRUE(same_combine(*in, one, 1, p, nranks, n, cap)) << "damage " << t;
            }
            // Mismatched contributor counts, a short output, the wrong count.
            EXPECT_TRUE(same_combine(*in, pay, nranks + 1, one, 1, n, cap));
            EXPECT_TRUE(same_combine(*in, pay, nranks, one, 1, n, pay.size()));
            EXPECT_TRUE(same_combine(*in, pay, nranks, one, 1, n - 1, cap));
            EXPECT_TRUE(same_decode(*in, pay, n - 1, base));
            Buf out = base;
            Workspace ws(in->p);
            EXPECT_EQ(qd::emu_decode(*in, ws.data(), ws.bytes(), pay.data(), pay.size(), out.data(), n, 0,
                                     TERSE_OP_MAX),
                      TERSE_CODEC_ERR_UNSUPPORTED);
        }
}

TEST(QuantizeDeviceBody, EncodeWithoutAgreedStatsNeedsItsWorkspace) {
    auto in = make_inst(params_of(8, 8, tq::kNearest), TERSE_DTYPE_FLOAT32, 1);
    const size_t n = 4096;
    const Buf x = make_buf(TERSE_DTYPE_FLOAT32, make_shape(Shape::Gaussian, n, 1, 0));
    Workspace small(in->p, 256);  // sized for chunks of 256 elements
    std::vector<uint8_t> out(tq::max_encoded_size(*in, n));
    size_t len = 0;
    EXPECT_EQ(
        qd::emu_encode(*in, small.data(), small.bytes(), x.data(), n, out.data(), out.size(), &len, nullptr),
        TERSE_CODEC_ERR_PARAM);
    Workspace enough(in->p, n);
    EXPECT_EQ(
        qd::emu_encode(*in, enough.data(), enough.bytes(), x.data(), n, out.data(), out.size(), &len, nullptr),
        TERSE_CODEC_OK);
}
