// Every engine schedule on simulated ranks (engine_sim.h): lossless results
// against exact references, lossy error bounds, identical bits on every
// rank, non-finite values, error feedback, and the poisoned mode.
#include "engine_sim.h"
#include "engine/planner.h"

#include <gtest/gtest.h>

#include <cinttypes>

using namespace sim;
using terse::Algorithm;
using terse::CollKind;

extern "C" void terse_engine_test_corrupt_next_sends(int count);

namespace {

const char *alg_name(Algorithm a) { return terse::algorithm_name(a); }

double elem(terse_dtype_t dt, const std::vector<uint8_t> &v, size_t i) {
    return terse::element_as_double(dt, v.data(), i);
}

// Exact (integers, MAX/MIN) or double-precision (float sums) reference of
// the reduction of element i over ranks, plus sum of |x| for tolerances.
struct Ref {
    std::vector<uint8_t> exact;  // in dtype, reduced in rank order with the engine's kernels
    std::vector<double> sum, abs;
};

Ref reference(terse_dtype_t dt, terse_op_t op, const std::vector<std::vector<uint8_t>> &in, size_t elems) {
    Ref r;
    r.exact = in[0];
    for (size_t q = 1; q < in.size(); ++q) terse::reduce_inplace(dt, op, r.exact.data(), in[q].data(), elems);
    r.sum.assign(elems, 0);
    r.abs.assign(elems, 0);
    for (auto &v : in)
        for (size_t i = 0; i < elems; ++i) {
            r.sum[i] += elem(dt, v, i);
            r.abs[i] += std::fabs(elem(dt, v, i));
        }
    return r;
}

double eps_of(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return 1.2e-7;
    case TERSE_DTYPE_FLOAT64: return 2.3e-16;
    case TERSE_DTYPE_FLOAT16: return 1e-3;
    case TERSE_DTYPE_BFLOAT16: return 8e-3;
    default: return 0;
    }
}

// All ranks OK, nothing hung, every rank holds the same bits.
::testing::AssertionResult ok_and_identical(const std::vector<RankResult> &res, bool hung,
                                            bool compare_bits = true) {
    if (hung) return ::testing::AssertionFailure() << "operation hung";
    for (size_t r = 0; r < res.size(); ++r)
        if (res[r].status != TERSE_OK)
            return ::testing::AssertionFailure()
                   << "rank " << r << ": " << terse_status_string(res[r].status) << ": " << res[r].message;
    if (compare_bits)
        for (size_t r = 1; r < res.size(); ++r)
            if (res[r].out != res[0].out)
                return ::testing::AssertionFailure() << "rank " << r << " differs from rank 0";
    return ::testing::AssertionSuccess();
}

struct Case {
    int n;
    size_t count;
    terse_dtype_t dt;
    terse_op_t op;
    bool in_place;
    Algorithm alg;
    size_t chunk_bytes;
    int depth;
    bool eager;
};

std::string describe(const Case &c) {
    char buf[200];
    snprintf(buf, sizeof buf, "n=%d count=%zu dtype=%s op=%d in_place=%d alg=%s chunk=%zu depth=%d eager=%d", c.n,
             c.count, terse::dtype_name(c.dt), int(c.op), int(c.in_place), alg_name(c.alg), c.chunk_bytes,
             c.depth, int(c.eager));
    return buf;
}

void check_lossless_allreduce(const Case &c) {
    SCOPED_TRACE(describe(c));
    World w(identity_codec(), c.n, c.dt, c.chunk_bytes / terse::dtype_size(c.dt) + 1);
    RunSpec s;
    s.codec = identity_codec();
    s.kind = CollKind::Allreduce;
    s.dtype = c.dt;
    s.op = c.op;
    s.count = c.count;
    s.n = c.n;
    s.in_place = c.in_place;
    s.algorithm = c.alg;
    s.chunk_bytes = c.chunk_bytes;
    s.depth = c.depth;
    s.eager = c.eager;
    s.seed = uint32_t(c.count * 31 + c.n);
    auto in = make_inputs(c.dt, c.count, c.n, s.seed);
    bool hung = false;
    auto res = w.run(s, in, &hung);
    ASSERT_TRUE(ok_and_identical(res, hung));
    Ref ref = reference(c.dt, c.op, in, c.count);
    const bool is_float = terse::dtype_is_float(c.dt);
    if (!is_float || c.op != TERSE_OP_SUM) {
        ASSERT_EQ(res[0].out, ref.exact) << "exact result expected";
    } else {
        for (size_t i = 0; i < c.count; ++i) {
            double got = elem(c.dt, res[0].out, i);
            double tol = c.n * eps_of(c.dt) * ref.abs[i] + 1e-30;
            ASSERT_NEAR(got, ref.sum[i], tol) << "element " << i;
        }
    }
    // The lossless codec sends exactly what raw frames would.
    for (auto &r : res) EXPECT_EQ(r.stats.counters().bytes_wire, r.stats.counters().bytes_wire_raw);
}

}  // namespace

TEST(EngineSim, LosslessAllreduceMatrix) {
    const Algorithm algs[] = {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Gather, Algorithm::Auto};
    const terse_dtype_t dts[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_INT32, TERSE_DTYPE_INT64};
    const terse_op_t ops[] = {TERSE_OP_SUM, TERSE_OP_MAX, TERSE_OP_MIN};
    unsigned combo = 0;
    for (int n : {1, 2, 3, 4, 5, 8})
        for (size_t count :
             {size_t(0), size_t(1), size_t(2), size_t(n > 1 ? n - 1 : 3), size_t(7), size_t(31), size_t(1000)})
            for (Algorithm alg : algs)
                for (bool in_place : {false, true}) {
                    ++combo;
                    // Vary the remaining knobs with the combination instead of
                    // multiplying them out.
                    Case c{n,
                           count,
                           dts[combo % 4],
                           ops[(combo / 4) % 3],
                           in_place,
                           alg,
                           (combo % 3 == 0) ? size_t(1) << 20 : size_t(8 << (combo % 4)),
                           1 + int(combo % 3),
                           combo % 5 == 0};
                    check_lossless_allreduce(c);
                    if (HasFatalFailure()) return;
                }
}

TEST(EngineSim, LosslessAllreduceLarger) {
    for (int n : {3, 5, 8})
        for (size_t count : {size_t(65537), size_t(1) << 18})
            for (Algorithm alg : {Algorithm::Ring, Algorithm::RecursiveDoubling}) {
                Case c{
                    n, count, n == 5 ? TERSE_DTYPE_INT64 : TERSE_DTYPE_FLOAT32, TERSE_OP_SUM, n == 8, alg, 16384,
                    2, false};
                check_lossless_allreduce(c);
                if (HasFatalFailure()) return;
            }
}

TEST(EngineSim, RingDepthOneManyChunksRendezvous) {
    // Many more chunks per block than the window: the case that deadlocks
    // if receives ever wait for send slots.
    for (int n : {2, 3, 7}) {
        Case c{n, 20011, TERSE_DTYPE_FLOAT64, TERSE_OP_SUM, false, Algorithm::Ring, 64, 1, false};
        check_lossless_allreduce(c);
    }
}

TEST(EngineSim, HalfPrecisionLossless) {
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT16, TERSE_DTYPE_BFLOAT16})
        for (Algorithm alg : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Gather}) {
            SCOPED_TRACE(alg_name(alg));
            World w(identity_codec(), 5, dt, 1 << 20);
            RunSpec s;
            s.dtype = dt;
            s.count = 777;
            s.n = 5;
            s.algorithm = alg;
            s.chunk_bytes = 128;
            auto in = make_inputs(dt, s.count, 5, 3);
            bool hung;
            auto res = w.run(s, in, &hung);
            ASSERT_TRUE(ok_and_identical(res, hung));
            Ref ref = reference(dt, TERSE_OP_SUM, in, s.count);
            for (size_t i = 0; i < s.count; ++i)
                ASSERT_NEAR(elem(dt, res[0].out, i), ref.sum[i], 5 * eps_of(dt) * ref.abs[i] * 4 + 1e-6) << i;
        }
}

TEST(EngineSim, ReduceScatterBlockAndAllgather) {
    for (int n : {1, 2, 3, 5, 8})
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1000)})
            for (bool in_place : {false, true})
                for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_INT64}) {
                    SCOPED_TRACE("n=" + std::to_string(n) + " count=" + std::to_string(count) +
                                 " in_place=" + std::to_string(in_place) + " dt=" + terse::dtype_name(dt));
                    const size_t es = terse::dtype_size(dt);
                    World w(identity_codec(), n, dt, 1 << 20);
                    RunSpec s;
                    s.dtype = dt;
                    s.count = count;
                    s.n = n;
                    s.in_place = in_place;
                    s.chunk_bytes = 48;
                    s.depth = 2;
                    // Reduce-scatter: rank r gets block r of the sum.
                    s.kind = CollKind::ReduceScatterBlock;
                    s.op = dt == TERSE_DTYPE_INT64 ? TERSE_OP_SUM : TERSE_OP_MAX;
                    auto in = make_inputs(dt, count * n, n, 11);
                    bool hung;
                    auto res = w.run(s, in, &hung);
                    ASSERT_TRUE(ok_and_identical(res, hung, false));
                    Ref ref = reference(dt, s.op, in, count * n);
                    for (int r = 0; r < n; ++r)
                        ASSERT_EQ(0, std::memcmp(res[r].out.data(), ref.exact.data() + size_t(r) * count * es,
                                                 count * es))
                            << "rank " << r;
                    // Allgather: everyone gets every rank's block.
                    s.kind = CollKind::Allgather;
                    auto in2 = make_inputs(dt, count, n, 12);
                    res = w.run(s, in2, &hung);
                    ASSERT_TRUE(ok_and_identical(res, hung));
                    for (int q = 0; q < n; ++q)
                        ASSERT_EQ(
                            0, std::memcmp(res[0].out.data() + size_t(q) * count * es, in2[q].data(), count * es))
                            << "block " << q;
                }
}

// ---------------------------------------------------------------- lossy codecs

namespace {

struct LossyCase {
    const terse_codec_descriptor_t *codec;
    int n;
    size_t count;
    terse_dtype_t dt;
    Algorithm alg;
    bool in_place;
};

std::vector<RankResult> run_lossy(World &w, const LossyCase &c, const std::vector<std::vector<uint8_t>> &in,
                                  bool *hung, bool feedback = false, size_t chunk_bytes = 256) {
    RunSpec s;
    s.codec = c.codec;
    s.dtype = c.dt;
    s.count = c.count;
    s.n = c.n;
    s.algorithm = c.alg;
    s.in_place = c.in_place;
    s.chunk_bytes = chunk_bytes;
    s.depth = 2;
    s.feedback = feedback;
    return w.run(s, in, hung);
}

// Reference of the sparse codec: each rank's chunk keeps its largest
// quarter; the engine sums decoded contributions in rank order in float.
std::vector<float> sparse_reference(const std::vector<std::vector<uint8_t>> &in, size_t count, size_t chunk) {
    std::vector<float> out(count, 0.0f);
    for (size_t q = 0; q < in.size(); ++q) {
        const float *x = reinterpret_cast<const float *>(in[q].data());
        for (size_t off = 0; off < count; off += chunk) {
            size_t n = std::min(chunk, count - off);
            size_t k = (n + 3) / 4;
            bool raw = 4 + 8 * k >= 4 * n;
            std::vector<uint32_t> idx(n);
            for (size_t i = 0; i < n; ++i) idx[i] = uint32_t(i);
            std::partial_sort(idx.begin(), idx.begin() + (raw ? n : k), idx.end(), [&](uint32_t a, uint32_t b) {
                float fa = std::fabs(x[off + a]), fb = std::fabs(x[off + b]);
                return fa != fb ? fa > fb : a < b;
            });
            std::vector<float> dense(n, 0.0f);
            for (size_t j = 0; j < (raw ? n : k); ++j) dense[idx[j]] = x[off + idx[j]];
            for (size_t i = 0; i < n; ++i) out[off + i] = q == 0 ? dense[i] : out[off + i] + dense[i];
        }
    }
    return out;
}

}  // namespace

TEST(EngineSim, LossyCodecsBoundedAndIdentical) {
    for (auto codec : {trunc_codec(), fixq_codec()})
        for (int n : {2, 3, 5, 8})
            for (size_t count : {size_t(1), size_t(7), size_t(1000), size_t(5003)})
                for (Algorithm alg : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Gather})
                    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64}) {
                        LossyCase c{codec, n, count, dt, alg, count % 2 == 1};
                        SCOPED_TRACE(std::string(codec->name) + " n=" + std::to_string(n) + " count=" +
                                     std::to_string(count) + " " + alg_name(alg) + " " + terse::dtype_name(dt));
                        World w(codec, n, dt, 1 << 16);
                        auto in = make_inputs(dt, count, n, 5);
                        bool hung;
                        auto res = run_lossy(w, c, in, &hung);
                        ASSERT_TRUE(ok_and_identical(res, hung));
                        Ref ref = reference(dt, TERSE_OP_SUM, in, count);
                        double maxabs = 0;
                        for (size_t i = 0; i < count; ++i) {
                            double err = std::fabs(elem(dt, res[0].out, i) - ref.sum[i]);
                            double bound;
                            if (codec == trunc_codec())
                                bound = (n + 2) * (dt == TERSE_DTYPE_FLOAT32 ? std::ldexp(1.0, -8) : 1.2e-7) *
                                        ref.abs[i];
                            else  // fixq: each contribution off by half a step; steps are max|x| / 2^20 <= n / 2^20
                                bound = n * (n / double(1 << 20)) + 4 * n * eps_of(dt) * ref.abs[i];
                            ASSERT_LE(err, bound + 1e-12) << "element " << i;
                            maxabs = std::max(maxabs, err);
                        }
                        if (codec == trunc_codec() && count >= 1000) {
                            EXPECT_GT(maxabs, 0.0) << "a lossy codec should lose something";
                            EXPECT_LT(res[0].stats.counters().bytes_wire, res[0].stats.counters().bytes_wire_raw);
                        }
                    }
}

TEST(EngineSim, SummableReduceScatterAndAllgather) {
    for (int n : {2, 3, 5}) {
        World w(fixq_codec(), n, TERSE_DTYPE_FLOAT64, 1 << 16);
        RunSpec s;
        s.dtype = TERSE_DTYPE_FLOAT64;
        s.count = 301;
        s.n = n;
        s.chunk_bytes = 400;
        s.kind = CollKind::ReduceScatterBlock;
        auto in = make_inputs(s.dtype, s.count * n, n, 21);
        bool hung;
        auto res = w.run(s, in, &hung);
        ASSERT_TRUE(ok_and_identical(res, hung, false));
        Ref ref = reference(s.dtype, TERSE_OP_SUM, in, s.count * n);
        for (int r = 0; r < n; ++r)
            for (size_t i = 0; i < s.count; ++i)
                ASSERT_NEAR(elem(s.dtype, res[r].out, i), ref.sum[size_t(r) * s.count + i],
                            n * n / double(1 << 20) + 1e-12);
        s.kind = CollKind::Allgather;
        auto in2 = make_inputs(s.dtype, s.count, n, 22);
        res = w.run(s, in2, &hung);
        ASSERT_TRUE(ok_and_identical(res, hung));
        for (int q = 0; q < n; ++q)
            for (size_t i = 0; i < s.count; ++i)
                ASSERT_NEAR(elem(s.dtype, res[0].out, size_t(q) * s.count + i), elem(s.dtype, in2[q], i),
                            n / double(1 << 20));
    }
}

TEST(EngineSim, GatherModeSumsInRankOrder) {
    for (int n : {1, 2, 3, 5, 8})
        for (size_t count : {size_t(1), size_t(9), size_t(1000), size_t(4099)})
            for (bool in_place : {false, true}) {
                SCOPED_TRACE("n=" + std::to_string(n) + " count=" + std::to_string(count));
                World w(sparse_codec(), n, TERSE_DTYPE_FLOAT32, 1 << 16);
                LossyCase c{sparse_codec(), n, count, TERSE_DTYPE_FLOAT32, Algorithm::Auto, in_place};
                auto in = make_inputs(c.dt, count, n, 9);
                bool hung;
                auto res = run_lossy(w, c, in, &hung);
                ASSERT_TRUE(ok_and_identical(res, hung));
                if (n == 1) {
                    ASSERT_EQ(res[0].out, in[0]);
                    continue;
                }
                terse::CommConfig cfg;
                cfg.chunk_bytes = 256;
                cfg.pipeline_depth = 2;
                terse::CollArgs a;
                a.count = count;
                a.dtype = c.dt;
                terse::Plan plan = terse::plan_collective(cfg, n, a, sparse_codec(), 1 << 16);
                ASSERT_EQ(plan.schedule, terse::Schedule::Gather);
                auto expect = sparse_reference(in, count, plan.chunk_elems);
                const float *got = reinterpret_cast<const float *>(res[0].out.data());
                for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], expect[i]) << "element " << i;
            }
}

TEST(EngineSim, NonFiniteValuesSurvive) {
    for (auto codec : {trunc_codec(), fixq_codec(), sparse_codec()})
        for (Algorithm alg : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Gather}) {
            SCOPED_TRACE(std::string(codec->name) + " " + alg_name(alg));
            const int n = 5;
            const size_t count = 600;
            World w(codec, n, TERSE_DTYPE_FLOAT32, 1 << 16);
            auto in = make_inputs(TERSE_DTYPE_FLOAT32, count, n, 4);
            reinterpret_cast<float *>(in[1].data())[3] = NAN;
            reinterpret_cast<float *>(in[2].data())[100] = INFINITY;
            reinterpret_cast<float *>(in[4].data())[101] = -INFINITY;
            LossyCase c{codec, n, count, TERSE_DTYPE_FLOAT32, alg, false};
            bool hung;
            auto res = run_lossy(w, c, in, &hung);
            ASSERT_TRUE(ok_and_identical(res, hung));
            const float *got = reinterpret_cast<const float *>(res[0].out.data());
            EXPECT_TRUE(std::isnan(got[3]));
            EXPECT_EQ(got[100], INFINITY);
            EXPECT_EQ(got[101], -INFINITY);
            size_t finite = 0;
            for (size_t i = 0; i < count; ++i) finite += std::isfinite(got[i]);
            EXPECT_EQ(finite, count - 3);
            uint64_t raw = 0;
            for (auto &r : res) raw += r.stats.counters().chunks_raw;
            EXPECT_GT(raw, 0u) << "chunks with non-finite values go raw";
        }
}

TEST(EngineSim, ErrorFeedbackBoundsCumulativeError) {
    struct FbCase {
        const terse_codec_descriptor_t *codec;
        Algorithm alg;
        int n;
    };
    for (FbCase fc :
         {FbCase{trunc_codec(), Algorithm::Ring, 4}, FbCase{trunc_codec(), Algorithm::RecursiveDoubling, 5},
          FbCase{trunc_codec(), Algorithm::Gather, 3}, FbCase{fixq_codec(), Algorithm::Ring, 3},
          FbCase{sparse_codec(), Algorithm::Gather, 3}}) {
        SCOPED_TRACE(std::string(fc.codec->name) + " " + alg_name(fc.alg));
        const size_t count = 2000;
        const int T = 30;
        auto in = make_inputs(TERSE_DTYPE_FLOAT32, count, fc.n, 17);
        Ref ref = reference(TERSE_DTYPE_FLOAT32, TERSE_OP_SUM, in, count);
        double cum_err[2] = {0, 0};
        for (int fb = 0; fb < 2; ++fb) {
            World w(fc.codec, fc.n, TERSE_DTYPE_FLOAT32, 1 << 16);
            std::vector<double> cum(count, 0.0);
            for (int t = 0; t < T; ++t) {
                LossyCase c{fc.codec, fc.n, count, TERSE_DTYPE_FLOAT32, fc.alg, t % 2 == 1 && false};
                bool hung;
                auto res = run_lossy(w, c, in, &hung, fb == 1);
                ASSERT_TRUE(ok_and_identical(res, hung));
                for (size_t i = 0; i < count; ++i) cum[i] += elem(TERSE_DTYPE_FLOAT32, res[0].out, i);
            }
            for (size_t i = 0; i < count; ++i)
                cum_err[fb] = std::max(cum_err[fb], std::fabs(cum[i] - T * ref.sum[i]));
        }
        // Without feedback the same rounding repeats every call; with it the
        // errors cancel over calls.
        EXPECT_LT(cum_err[1] * 4, cum_err[0]) << "no feedback " << cum_err[0] << ", feedback " << cum_err[1];
    }
}

TEST(EngineSim, ErrorFeedbackInPlace) {
    const int n = 3;
    const size_t count = 1500;
    World w(trunc_codec(), n, TERSE_DTYPE_FLOAT32, 1 << 16);
    auto in = make_inputs(TERSE_DTYPE_FLOAT32, count, n, 8);
    Ref ref = reference(TERSE_DTYPE_FLOAT32, TERSE_OP_SUM, in, count);
    std::vector<double> cum(count, 0.0);
    const int T = 20;
    for (int t = 0; t < T; ++t) {
        LossyCase c{trunc_codec(), n, count, TERSE_DTYPE_FLOAT32, Algorithm::Ring, true};
        bool hung;
        auto res = run_lossy(w, c, in, &hung, true);
        ASSERT_TRUE(ok_and_identical(res, hung));
        for (size_t i = 0; i < count; ++i) cum[i] += elem(TERSE_DTYPE_FLOAT32, res[0].out, i);
    }
    double worst = 0;
    for (size_t i = 0; i < count; ++i)
        worst = std::max(worst, std::fabs(cum[i] - T * ref.sum[i]) / (ref.abs[i] + 1e-9));
    EXPECT_LT(worst, 3 * (n + 2) * std::ldexp(1.0, -8)) << "cumulative error should stay at one call's size";
}

// ---------------------------------------------------------------- failures

namespace {

void expect_all_fail(const std::vector<RankResult> &res, bool hung, Status origin_status, int origin = -1) {
    ASSERT_FALSE(hung) << "a failure must not hang";
    int origins = 0;
    for (size_t r = 0; r < res.size(); ++r) {
        EXPECT_NE(res[r].status, TERSE_OK) << "rank " << r << " must fail too";
        if (res[r].status == origin_status) {
            ++origins;
            if (origin >= 0) {
                EXPECT_EQ(int(r), origin);
            }
        } else {
            EXPECT_EQ(res[r].status, TERSE_ERR_REMOTE) << "rank " << r << ": " << res[r].message;
            if (origin >= 0) {
                EXPECT_NE(res[r].message.find("failed on rank " + std::to_string(origin)), std::string::npos)
                    << res[r].message;
            }
        }
    }
    EXPECT_EQ(origins, 1);
}

}  // namespace

TEST(EngineSim, CorruptFramePoisonsEveryRank) {
    for (Algorithm alg : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Gather})
        for (int n : {2, 5, 6})
            for (bool eager : {false, true}) {
                SCOPED_TRACE(std::string(alg_name(alg)) + " n=" + std::to_string(n));
                World w(identity_codec(), n, TERSE_DTYPE_FLOAT32, 1 << 16);
                RunSpec s;
                s.count = 3000;
                s.n = n;
                s.algorithm = alg;
                s.chunk_bytes = 256;
                s.depth = 2;
                s.eager = eager;
                auto in = make_inputs(s.dtype, s.count, n, 2);
                terse_engine_test_corrupt_next_sends(1);
                bool hung;
                auto res = w.run(s, in, &hung);
                terse_engine_test_corrupt_next_sends(0);
                expect_all_fail(res, hung, TERSE_ERR_CORRUPT);
                for (auto &r : res)
                    if (r.status == TERSE_ERR_CORRUPT) {
                        EXPECT_NE(r.message.find("check value"), std::string::npos) << r.message;
                    }
                // The communicator is usable again afterwards.
                res = w.run(s, in, &hung);
                ASSERT_TRUE(ok_and_identical(res, hung));
            }
}

TEST(EngineSim, CodecFailurePoisonsEveryRank) {
    for (Algorithm alg : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Gather}) {
        SCOPED_TRACE(alg_name(alg));
        const int n = 5;
        World w(failing_codec(), n, TERSE_DTYPE_FLOAT32, 1 << 16);
        auto in = make_inputs(TERSE_DTYPE_FLOAT32, 2000, n, 6);
        LossyCase c{failing_codec(), n, 2000, TERSE_DTYPE_FLOAT32, alg, false};
        g_failing_rank_decode = 3;
        bool hung;
        auto res = run_lossy(w, c, in, &hung);
        g_failing_rank_decode = -1;
        expect_all_fail(res, hung, TERSE_ERR_CORRUPT, 3);
        EXPECT_NE(res[3].message.find("failed to decode"), std::string::npos) << res[3].message;
    }
}

// A local failure at every step of every schedule (terse_engine_test_fail_next)
// reaches every rank as an error, and the next call works: lossless,
// recompress and summable codecs, 2, 3 and 5 ranks, each rank failing in turn.
TEST(EngineSim, InjectedFailureAtEveryStepReachesEveryRank) {
    struct Sched {
        Algorithm alg;
        CollKind kind;
        const char *name;
    };
    const Sched scheds[] = {{Algorithm::Ring, CollKind::Allreduce, "ring allreduce"},
                            {Algorithm::Ring, CollKind::ReduceScatterBlock, "ring reduce-scatter"},
                            {Algorithm::Ring, CollKind::Allgather, "ring allgather"},
                            {Algorithm::RecursiveDoubling, CollKind::Allreduce, "recursive doubling"},
                            {Algorithm::Gather, CollKind::Allreduce, "gather"}};
    const char *steps[] = {"start",     "begin",   "rs:first",  "rs:middle",  "rs:last", "ag:first",
                           "ag:middle", "ag:last", "hop:first", "hop:middle", "hop:last"};
    int fired = 0;
    for (const terse_codec_descriptor_t *codec : {identity_codec(), trunc_codec(), fixq_codec()})
        for (int n : {2, 3, 5}) {
            World w(codec, n, TERSE_DTYPE_FLOAT32, 1 << 16);
            for (const Sched &sc : scheds) {
                // Lossy results are bit-identical across ranks too, except a
                // reduce-scatter's (each rank holds another block); the
                // lossless ones also equal a clean run's.
                const bool same_bits = sc.kind != CollKind::ReduceScatterBlock;
                const bool exact = codec == identity_codec();
                RunSpec clean;
                clean.kind = sc.kind;
                clean.count = 1200;
                clean.n = n;
                clean.algorithm = sc.alg;
                clean.chunk_bytes = 1024;  // several chunks per hop
                clean.depth = 2;
                const size_t elems = sc.kind == CollKind::ReduceScatterBlock ? clean.count * size_t(n)
                                                                             : clean.count;
                const auto in = make_inputs(clean.dtype, elems, n, 4);
                bool hung = false;
                const auto baseline = w.run(clean, in, &hung);
                ASSERT_TRUE(ok_and_identical(baseline, hung, same_bits));
                for (const char *step : steps)
                    for (int origin = 0; origin < n; ++origin) {
                        SCOPED_TRACE(std::string(codec->name) + " " + sc.name + " n=" + std::to_string(n) + " " +
                                     step + " on rank " + std::to_string(origin));
                        RunSpec s = clean;
                        s.seed = uint32_t(origin + 1);
                        s.inject_rank = origin;
                        s.inject = step;
                        // Whether this rank has such a step at all.
                        const std::string st = step;
                        const bool rs = st.rfind("rs:", 0) == 0, ag = st.rfind("ag:", 0) == 0;
                        bool applies = true;
                        if (sc.alg == Algorithm::Ring) {
                            if (rs) applies = sc.kind != CollKind::Allgather;
                            if (ag) applies = sc.kind != CollKind::ReduceScatterBlock;
                        } else if (sc.alg == Algorithm::RecursiveDoubling) {
                            int pof2 = 1;
                            while (pof2 * 2 <= n) pof2 *= 2;
                            const bool folded = origin < 2 * (n - pof2) && origin % 2 == 0;
                            if (rs) applies = !folded;
                            if (ag) applies = folded;
                        } else if (rs) {
                            applies = false;  // gather has no reduce-scatter phase
                        }
                        auto res = w.run(s, in, &hung);
                        ASSERT_FALSE(hung);
                        if (!applies) {
                            ASSERT_TRUE(ok_and_identical(res, hung, same_bits));
                            continue;
                        }
                        ++fired;
                        const bool hop = st.find(':') != std::string::npos;
                        expect_all_fail(res, hung, hop ? TERSE_ERR_CORRUPT : TERSE_ERR_NO_MEMORY, origin);
                        if (!hop) {
                            EXPECT_NE(res[origin].message.find("injected"), std::string::npos)
                                << res[origin].message;
                        }
                        s.inject_rank = -1;
                        res = w.run(s, in, &hung);
                        ASSERT_TRUE(ok_and_identical(res, hung, same_bits))
                            << "the call after a failed one must work";
                        if (exact) {
                            for (int r = 0; r < n; ++r) EXPECT_EQ(res[r].out, baseline[r].out) << "rank " << r;
                        }
                    }
            }
        }
    EXPECT_GT(fired, 500);
}

TEST(EngineSim, UnknownInjectionIsRefused) {
    EXPECT_EQ(terse_engine_test_fail_next("rs:sometimes"), -1);
    EXPECT_EQ(terse_engine_test_fail_next("start:first"), -1);
    EXPECT_EQ(terse_engine_test_fail_next("nowhere"), -1);
    EXPECT_EQ(terse_engine_test_fail_next(nullptr), 0);
}

TEST(Planner, AutoPicksRecursiveDoublingForShortMessages) {
    terse::CommConfig cfg;
    terse::CollArgs a;
    a.dtype = TERSE_DTYPE_FLOAT32;
    a.count = 1000;
    EXPECT_EQ(terse::plan_collective(cfg, 8, a, identity_codec(), 1 << 18).schedule,
              terse::Schedule::RecursiveDoubling);
    a.count = 16 << 20;
    terse::Plan p = terse::plan_collective(cfg, 8, a, identity_codec(), 1 << 18);
    EXPECT_EQ(p.schedule, terse::Schedule::Ring);
    EXPECT_LE(p.chunk_elems, size_t(1) << 18);
    a.count = 3;
    EXPECT_EQ(terse::plan_collective(cfg, 8, a, identity_codec(), 1 << 18).schedule,
              terse::Schedule::RecursiveDoubling);
    EXPECT_EQ(terse::plan_collective(cfg, 8, a, sparse_codec(), 1 << 18).schedule, terse::Schedule::Gather);
    a.count = 0;
    EXPECT_EQ(terse::plan_collective(cfg, 8, a, identity_codec(), 1 << 18).schedule, terse::Schedule::Trivial);
    a.count = 100;
    EXPECT_EQ(terse::plan_collective(cfg, 1, a, identity_codec(), 1 << 18).schedule, terse::Schedule::Trivial);
    cfg.algorithm = Algorithm::Ring;
    EXPECT_EQ(terse::plan_collective(cfg, 8, a, identity_codec(), 1 << 18).schedule, terse::Schedule::Ring);
}

// ---------------------------------------------------------------- progress list

namespace {

class Recorder final : public terse::Operation {
public:
    Recorder(std::vector<int> *log, int id, int steps) : log_(log), id_(id), steps_(steps) {}
    Status progress(bool *done) override {
        log_->push_back(id_);
        *done = --steps_ <= 0;
        return *done && id_ == 3 ? terse::set_error(TERSE_ERR_CORRUPT, "op %d failed", id_) : TERSE_OK;
    }

private:
    std::vector<int> *log_;
    int id_, steps_;
};

}  // namespace

TEST(EngineProgress, RegisteredOperationsByPriority) {
    std::vector<int> log;
    Recorder low(&log, 1, 2), high(&log, 2, 2), normal(&log, 3, 1);
    low.priority = terse::Priority::Low;
    high.priority = terse::Priority::High;
    normal.priority = terse::Priority::Normal;
    terse::engine_progress_register(&low);
    terse::engine_progress_register(&high);
    terse::engine_progress_register(&normal);
    terse::engine_progress_all();
    EXPECT_EQ(log, (std::vector<int>{2, 3, 1}));
    terse::engine_progress_all();  // the finished op is skipped
    EXPECT_EQ(log, (std::vector<int>{2, 3, 1, 2, 1}));
    EXPECT_TRUE(high.finished());
    EXPECT_TRUE(low.finished());
    // The outcome is kept, message included, for whoever waits.
    terse::clear_error();
    EXPECT_EQ(terse::engine_wait(&normal), TERSE_ERR_CORRUPT);
    EXPECT_STREQ(terse::last_error(), "op 3 failed");
    EXPECT_EQ(terse::engine_wait(&low), TERSE_OK);
    terse::engine_progress_unregister(&low);
    terse::engine_progress_unregister(&high);
    terse::engine_progress_unregister(&normal);
    terse::engine_progress_all();
    EXPECT_EQ(log.size(), 5u);
}

TEST(EngineProgress, SimulatedRanksDrivenByTheList) {
    // Operations of 4 simulated ranks advanced only by engine_progress_all().
    const int n = 4;
    Fabric fabric(n, false);
    Collectives coll(n);
    auto in = make_inputs(TERSE_DTYPE_INT32, 5000, n, 3);
    std::vector<std::vector<int32_t>> out(n, std::vector<int32_t>(5000));
    std::vector<terse::OpHandle> ops(n);
    std::vector<std::unique_ptr<SimLink>> links;
    std::vector<std::unique_ptr<SimControl>> controls;
    std::vector<terse::Stats> stats(n);
    terse::CommConfig cfg;
    cfg.chunk_bytes = 1024;
    std::vector<std::unique_ptr<terse::CodecInstance>> keep;
    terse::CodecPlugin plugin{identity_codec(), "(test)", 1};
    for (int r = 0; r < n; ++r) {
        links.push_back(std::make_unique<SimLink>(&fabric, r));
        controls.push_back(std::make_unique<SimControl>(&coll, r));
        terse_codec_setup_t setup{sizeof setup, TERSE_DTYPE_INT32, TERSE_MEM_HOST, n, 1 << 16};
        void *inst = nullptr;
        identity_codec()->create(nullptr, &setup, &inst, nullptr, 0);
        keep.push_back(std::make_unique<terse::CodecInstance>(&plugin, inst, setup));
        terse::EngineEnv env;
        env.rank = r;
        env.size = n;
        env.codec = keep.back().get();
        env.stats = &stats[r];
        env.link = links[r].get();
        env.control = controls[r].get();
        terse::CollArgs a;
        a.sendbuf = in[r].data();
        a.recvbuf = out[r].data();
        a.count = 5000;
        a.dtype = TERSE_DTYPE_INT32;
        ASSERT_EQ(terse::engine_start(env, cfg, a, terse::Priority::Normal, &ops[r]), TERSE_OK);
        terse::engine_progress_register(ops[r].get());
    }
    for (int i = 0; i < 100000 && !std::all_of(ops.begin(), ops.end(), [](auto &o) { return o->finished(); });
         ++i)
        terse::engine_progress_all();
    for (auto &o : ops) {
        EXPECT_TRUE(o->finished());
        EXPECT_EQ(terse::engine_wait(o.get()), TERSE_OK);
        terse::engine_progress_unregister(o.get());
    }
    Ref ref = reference(TERSE_DTYPE_INT32, TERSE_OP_SUM, in, 5000);
    for (int r = 0; r < n; ++r) EXPECT_EQ(0, std::memcmp(out[r].data(), ref.exact.data(), 5000 * 4)) << r;
}
