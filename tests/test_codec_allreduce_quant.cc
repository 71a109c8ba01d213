// quantize and errbound end to end: MPI_Allreduce intercepted by libterse
// (TERSE_MIN_BYTES=0) with the codec named in TERSE_CODEC, every element
// checked against the exact sum of all ranks' inputs (binary128) with the
// bound the codec's man page states, identical bits on every rank, and
// NaN/Inf propagated.  Run by test_codec_allreduce_quant.sh for several
// communicator sizes.
//
//   test_codec_allreduce_quant quantize BITS nearest|stochastic [BLOCK]
//   test_codec_allreduce_quant errbound abs BOUND
//   test_codec_allreduce_quant errbound rel FRACTION
#include <mpi.h>
#include <terse/terse.h>

#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "mpi_check.h"

namespace {

int g_rank, g_size;

struct Contract {
    bool quantize = true;
    int bits = 8;
    bool stochastic = false;
    size_t block = 256;
    bool rel = false;  // errbound: rel (else abs)
    double bound = 0;  // errbound: abs bound or rel fraction
};

// Input of rank r, element i: deterministic, so every rank knows every
// rank's input.  Heavy-tailed like gradients: mostly small, a few large.
double value(int r, size_t i, int seed) {
    uint64_t x = (uint64_t(r) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(i) * 0xBF58476D1CE4E5B9ull) ^ uint64_t(seed);
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    const double u = double(x >> 11) / double(1ull << 53) * 2.0 - 1.0;
    const double big = (x & 1023) == 7 ? 100.0 : 1.0;
    return u * u * u * big * (1.0 + 0.5 * r);
}

template <typename T>
MPI_Datatype mpi_type() {
    return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

template <typename T>
double ulp(double r) {
    const double a = std::fabs(r);
    const double tiny = std::is_same_v<T, float> ? 0x1p-149 : 0x1p-1074;
    if (a < (std::is_same_v<T, float> ? double(FLT_MIN) : DBL_MIN)) return tiny;
    int e;
    std::frexp(a, &e);
    return std::ldexp(1.0, e - (std::is_same_v<T, float> ? 24 : 53));
}

uint64_t fnv(const void *p, size_t n) {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

void check_identical(const void *buf, size_t bytes, const char *what) {
    uint64_t h = fnv(buf, bytes), hmax = 0, hmin = 0;
    PMPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    CHECK(hmax == hmin, "%s: ranks hold different results", what);
}

// Upper bound of the agreed block max of element i's block, whatever the
// engine's chunking: any block holding i lies within the three aligned
// windows of `block` elements around it.
std::vector<double> window_max(const std::vector<std::vector<double>> &x, size_t block) {
    const size_t n = x[0].size(), nb = (n + block - 1) / block;
    std::vector<double> bm(nb, 0.0), w(n);
    for (const auto &v : x)
        for (size_t i = 0; i < n; ++i) bm[i / block] = std::max(bm[i / block], std::fabs(v[i]));
    for (size_t i = 0; i < n; ++i) {
        const size_t b = i / block;
        double m = bm[b];
        if (b > 0) m = std::max(m, bm[b - 1]);
        if (b + 1 < nb) m = std::max(m, bm[b + 1]);
        w[i] = m;
    }
    return w;
}

template <typename T>
void run(const Contract &c, size_t count, bool in_place, int seed) {
    std::vector<std::vector<double>> x(g_size, std::vector<double>(count));
    for (int r = 0; r < g_size; ++r)
        for (size_t i = 0; i < count; ++i) x[r][i] = double(T(value(r, i, seed)));  // exactly what rank r sends
    std::vector<T> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = T(x[g_rank][i]);
    if (in_place) {
        out = in;
        CHECK(MPI_Allreduce(MPI_IN_PLACE, out.data(), int(count), mpi_type<T>(), MPI_SUM, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "allreduce failed");
    } else {
        CHECK(MPI_Allreduce(in.data(), out.data(), int(count), mpi_type<T>(), MPI_SUM, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "allreduce failed");
    }

    std::vector<double> mw;
    double range = 0;
    if (c.quantize) {
        mw = window_max(x, c.block);
    } else if (c.rel) {
        double hi = -INFINITY, lo = INFINITY;
        for (const auto &v : x)
            for (double e : v) hi = std::max(hi, e), lo = std::min(lo, e);
        range = hi - lo;
    }
    const double n = g_size;
    double worst = 0;
    for (size_t i = 0; i < count; ++i) {
        __float128 exact = 0;
        for (int r = 0; r < g_size; ++r) exact += __float128(x[r][i]);
        double bound;
        if (c.quantize) {
            const double m = mw[i];
            const double L = double((1u << (c.bits - 1)) - 1u);
            // 1-bit nearest: the per-rank error max(s, m - s) is at most m.
            const double e = c.bits == 1 ? (c.stochastic ? 2 * m : m) : (c.stochastic ? m / L : m / (2 * L));
            bound = n * e * (1 + 0x1p-32) + ulp<T>(double(out[i]));
        } else {
            bound = c.rel ? c.bound * range : c.bound;  // rel: the chunk's range is at most the global one
        }
        const __float128 d = __float128(double(out[i])) - exact;
        const double err = std::fabs(double(d));
        CHECK(d <= __float128(bound) && -d <= __float128(bound),
              "%s count=%zu element %zu: result %.17g, exact %.17g, error %.3g above the bound %.3g",
              std::is_same_v<T, float> ? "float" : "double", count, i, double(out[i]), double(exact), err, bound);
        if (bound > 0) worst = std::max(worst, err / bound);
    }
    check_identical(out.data(), count * sizeof(T), "result");
    if (g_rank == 0)
        printf("  %s count=%zu%s: worst error %.3f of the bound\n",
               std::is_same_v<T, float> ? "float " : "double", count, in_place ? " in place" : "", worst);
}

// NaN and Inf on some ranks: they reach every rank where the exact sum has them.
template <typename T>
void run_nonfinite(size_t count) {
    std::vector<T> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = T(value(g_rank, i, 99));
    const int r_nan = 1 % g_size, r_inf = 2 % g_size, last = g_size - 1;
    if (g_rank == r_nan) in[5] = T(NAN);
    if (g_rank == r_inf) in[77] = T(INFINITY);
    if (g_rank == 0) in[78] = -T(INFINITY);
    if (g_rank == 0) in[count - 1] = T(INFINITY);
    if (g_rank == last) in[count - 1] = g_size > 1 ? -T(INFINITY) : T(NAN);  // +Inf + -Inf = NaN
    CHECK(MPI_Allreduce(in.data(), out.data(), int(count), mpi_type<T>(), MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
          "allreduce with NaN/Inf failed");
    CHECK(std::isnan(out[5]), "NaN at 5 lost: %g", double(out[5]));
    if (r_inf != 0) {
        CHECK(std::isinf(out[77]) && out[77] > 0, "+Inf at 77 lost: %g", double(out[77]));
        CHECK(std::isinf(out[78]) && out[78] < 0, "-Inf at 78 lost: %g", double(out[78]));
    } else {
        CHECK(std::isinf(out[77]) && out[77] > 0, "+Inf at 77 lost: %g", double(out[77]));
    }
    CHECK(std::isnan(out[count - 1]), "+Inf + -Inf should be NaN, got %g", double(out[count - 1]));
    for (size_t i = 0; i < count; ++i)
        if (i != 5 && i != 77 && i != 78 && i != count - 1)
            CHECK(std::isfinite(out[i]), "element %zu became %g", i, double(out[i]));
    check_identical(out.data(), count * sizeof(T), "result with NaN/Inf");
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    Contract c;
    const std::string codec = argc > 1 ? argv[1] : "";
    if (codec == "quantize" && argc >= 4) {
        c.bits = atoi(argv[2]);
        c.stochastic = std::string(argv[3]) == "stochastic";
        c.block = argc > 4 ? size_t(atol(argv[4]))
                           : size_t(c.bits == 1   ? 2048
                                    : c.bits == 2 ? 1024
                                    : c.bits == 4 ? 512
                                                  : 256);
    } else if (codec == "errbound" && argc >= 4) {
        c.quantize = false;
        c.rel = std::string(argv[2]) == "rel";
        c.bound = atof(argv[3]);
    } else {
        if (g_rank == 0)
            fprintf(stderr, "usage: %s quantize BITS nearest|stochastic [BLOCK] | errbound abs|rel BOUND\n",
                    argv[0]);
        MPI_Finalize();
        return 2;
    }
    for (size_t count : {size_t(1000), size_t(4099), size_t(300007)})
        for (bool in_place : {false, true}) {
            run<float>(c, count, in_place, 21 + int(count));
            run<double>(c, count, in_place, 37 + int(count));
        }
    run_nonfinite<float>(100000);
    run_nonfinite<double>(100000);

    terse_comm_stats_t s;
    CHECK(terse_comm_stats(MPI_COMM_WORLD, &s, sizeof s) == TERSE_OK, "terse_comm_stats: %s", terse_last_error());
    CHECK(s.calls_intercepted == 14, "expected 14 intercepted calls, got %" PRIu64, s.calls_intercepted);
    if (g_size > 1) CHECK(s.bytes_wire < s.bytes_wire_raw, "the codec did not shrink the wire bytes");
    if (g_rank == 0) printf("ok (size %d)\n", g_size);
    MPI_Finalize();
    return 0;
}
