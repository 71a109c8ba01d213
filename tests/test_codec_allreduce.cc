// Every codec end to end through libterse, on several ranks: MPI_Allreduce
// is intercepted (min_bytes=0) and each result is held to the accuracy
// contract its codec's man page states, against the exact sum of the ranks'
// inputs.  Run by test_codec_allreduce.sh for several communicator sizes and
// algorithms.
//
//   test_codec_allreduce [--algorithm A] [--count N] SECTION...
//     contract   each codec of kCodecs on float and double: the contract
//                element by element, identical bits on every rank, the call
//                intercepted and (lossy codecs) fewer bytes on the wire
//     nonfinite  the same with NaN and +-Inf on some ranks: they appear where
//                the exact sum has them, the rest of the result keeps the
//                contract, and the affected chunks were sent raw
//     edges      the table on inputs that put codecs at their bounds (Shape)
//     feedback   repeated allreduces of one buffer: with error feedback the
//                running mean of the results converges to the exact mean,
//                without it it does not
//     world      the codec of TERSE_CODEC on MPI_COMM_WORLD, configured only
//                by the environment (TERSE_CHUNK_BYTES <= 64K, TERSE_FEEDBACK=off)
//
// Each table case runs on its own duplicate of MPI_COMM_WORLD configured
// with terse_comm_configure (codec, min_bytes=0, chunk_bytes, algorithm,
// feedback), so its statistics and feedback state start from zero.
//
// Inputs are a deterministic function of (rank, index), so every rank can
// recompute any rank's input; the exact sums are formed in double and, where
// that is not decisive, in binary128.  The work of checking is shared: rank
// r checks the chunks c with c % nranks == r (every rank holds the same
// bits, which is checked first).
#include <mpi.h>
#include <terse/terse.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "mpi_check.h"

namespace {

int g_rank, g_size;

// Every lossy codec's contract is checked on every row of this table (plus
// the lossless reference).  Parameters are chosen so that chunks are
// compressed, not sent raw, except where the data makes them raw on purpose.
const char *const kCodecs[] = {
    "none",
    "quantize:bits=8",
    "quantize:bits=8,rounding=stochastic",
    "quantize:bits=4",
    "quantize:bits=4,rounding=stochastic,block=64",
    "quantize:bits=2",
    "quantize:bits=2,rounding=stochastic",
    "quantize:bits=1",
    "quantize:bits=1,rounding=stochastic",
    "quantize:bits=16",
    "errbound:abs=1e-2",
    "errbound:rel=1e-3",
    "errbound:norm=1e-2",
    "errbound:rel=1e-4,zstd=on",
    "errbound:abs=1e-3,zstd=on,zstd_level=3",
    "zfp:accuracy=1e-3",
    "zfp:rate=8",
    "topk:ratio=0.01",
    "topk:k=100,select=exact",
    "topk:ratio=0.05,select=sampled",
};

// Chunk sizes the cases cycle through (bytes of input).  At most 64 KiB, the
// planner's smallest chunk, so that the planner takes them as they are and
// the test knows where every chunk starts (see chunk_elems).
const size_t kChunkBytes[] = {16384, 12288, 65536};

// ---------------------------------------------------------------- contracts

enum class Kind { Lossless, Quantize, Errbound, Zfp, Topk };

struct Contract {
    std::string spec;
    Kind kind = Kind::Lossless;
    // quantize
    int bits = 8;
    size_t block = 256;
    bool stochastic = false;
    // errbound: 'a'bs, 'r'el or 'n'orm, with its number
    char eb_mode = 0;
    double eb_f = 0;
    // zfp: only accuracy mode has an error bound
    bool zfp_accuracy = false;
    double zfp_tol = 0;
    // topk: k per chunk (0: from ratio)
    double ratio = 0.01;
    uint64_t k = 0;
    bool lossy() const { return kind != Kind::Lossless; }
};

// The contract of a codec specification, from the parameters and defaults
// its man page gives.  Keys that do not change the contract (zstd, select)
// are ignored.
Contract parse_contract(const std::string &spec) {
    Contract c;
    c.spec = spec;
    std::string name = spec.substr(0, spec.find(':'));
    std::map<std::string, std::string> kv;
    if (spec.find(':') != std::string::npos) {
        std::string rest = spec.substr(spec.find(':') + 1);
        size_t p = 0;
        while (p <= rest.size()) {
            size_t e = rest.find(',', p);
            if (e == std::string::npos) e = rest.size();
            std::string item = rest.substr(p, e - p);
            size_t eq = item.find('=');
            if (eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
            p = e + 1;
        }
    }
    auto get = [&](const char *k) { return kv.count(k) ? kv[k] : std::string(); };
    if (name == "none") {
        c.kind = Kind::Lossless;
    } else if (name == "quantize") {
        c.kind = Kind::Quantize;
        if (!get("bits").empty()) c.bits = atoi(get("bits").c_str());
        c.stochastic = get("rounding") == "stochastic";
        // Default block by width (terse_codec_quantize(7)).
        c.block = c.bits >= 8 ? 256 : c.bits == 4 ? 512 : c.bits == 2 ? 1024 : 2048;
        if (!get("block").empty()) c.block = strtoul(get("block").c_str(), nullptr, 10);
    } else if (name == "errbound") {
        c.kind = Kind::Errbound;
        for (const char *m : {"abs", "rel", "norm"})
            if (!get(m).empty()) {
                c.eb_mode = m[0];
                c.eb_f = strtod(get(m).c_str(), nullptr);
            }
        CHECK(c.eb_mode, "%s: no bound in the specification", spec.c_str());
    } else if (name == "zfp") {
        c.kind = Kind::Zfp;
        if (!get("accuracy").empty()) {
            c.zfp_accuracy = true;
            c.zfp_tol = strtod(get("accuracy").c_str(), nullptr);
        }
    } else if (name == "topk") {
        c.kind = Kind::Topk;
        if (!get("ratio").empty()) c.ratio = strtod(get("ratio").c_str(), nullptr);
        if (!get("k").empty()) c.k = strtoull(get("k").c_str(), nullptr, 10);
    } else {
        CHECK(false, "no contract known for codec '%s'", spec.c_str());
    }
    return c;
}

// ---------------------------------------------------------------- layout

enum class Sched { Ring, RecursiveDoubling, Gather };

Sched sched_of(const Contract &c, const std::string &alg) {
    if (c.kind == Kind::Topk) return Sched::Gather;  // gather-mode codecs always are
    if (alg == "ring") return Sched::Ring;
    if (alg == "recursive_doubling") return Sched::RecursiveDoubling;
    if (alg == "gather") return Sched::Gather;
    CHECK(false, "algorithm '%s': the test needs ring, recursive_doubling or gather", alg.c_str());
    return Sched::Ring;
}

// Elements per chunk for a configured chunk size: the planner uses the
// configured size as it is when it is at most its 64 KiB minimum, rounded
// down to a multiple of 1024 elements from 4096 up (lib/planner.cc).
size_t chunk_elems(size_t chunk_bytes, size_t esize) {
    CHECK(chunk_bytes <= 65536, "chunk_bytes=%zu: the test needs at most 64K to know the chunk layout",
          chunk_bytes);
    size_t c = std::max<size_t>(1, chunk_bytes / esize);
    if (c >= 4096) c &= ~size_t(1023);
    return c;
}

struct Chunk {
    size_t off, len;
};

// Where the codec sees chunks: the ring cuts the data into nranks blocks of
// sizes differing by at most one and each block into chunks; the other
// schedules cut the whole array from 0 (lib/chunk_plan.h).
std::vector<Chunk> layout(Sched s, size_t count, int n, size_t chunk) {
    std::vector<Chunk> out;
    auto cut = [&](size_t off, size_t len) {
        for (size_t k = 0; k < len; k += chunk) out.push_back({off + k, std::min(chunk, len - k)});
    };
    if (s == Sched::Ring) {
        size_t base = count / size_t(n), extra = count % size_t(n), off = 0;
        for (int b = 0; b < n; ++b) {
            size_t len = base + (size_t(b) < extra ? 1 : 0);
            cut(off, len);
            off += len;
        }
    } else {
        cut(0, count);
    }
    return out;
}

// Number of encodings a recompress codec's error passes through on the way
// to the result: ring and gather encode every contribution once per hop
// (n in all, with the allgather's); recursive doubling encodes both partial
// results at each of the 2^k - 1 combining steps, plus one fold per extra rank.
int recompress_encodes(Sched s, int n) {
    if (s != Sched::RecursiveDoubling) return n;
    int pof2 = 1;
    while (pof2 * 2 <= n) pof2 *= 2;
    return 2 * (pof2 - 1) + (n - pof2);
}

// ---------------------------------------------------------------- inputs

struct Inject {
    int rank;
    size_t index;
    double value;
};

// Shapes of input.  Gradient is the ordinary one; the others are edge cases
// that put a codec at its stated bound:
//   Midpoints  every element exactly halfway between two levels of an
//              L-level quantizer with step 2^-7 (block max L * 2^-7 at every
//              32nd element, the others (k + 1/2) 2^-7, k even >= 0), so that
//              nearest rounding errs by exactly half a step on every rank;
//   Plateau    magnitudes between 0.9 and 1 with zeros at the same places on
//              every rank (the first 50 of every 2048): a block's mean |x| is
//              close to its max, and a zero errs by the whole 1-bit level;
//   Ties       +-1 and +-2 only: top-k's tie rule decides almost everything.
enum class Shape { Gradient, Midpoints, Plateau, Ties };

struct Data {
    size_t count = 0;
    uint64_t seed = 1;
    Shape shape = Shape::Gradient;
    bool regions = true;  // the special regions of base_value (Gradient)
    int levels = 127;     // L of Midpoints
    std::vector<Inject> inject;
};

uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
double unit(uint64_t h) { return (double(h >> 11) + 0.5) * 0x1p-53; }  // in (0, 1)

double edge_value(int q, size_t i, const Data &d) {
    const uint64_t h = mix(d.seed * 0x100000001B3ull ^ mix(uint64_t(q) << 40 ^ uint64_t(i)));
    switch (d.shape) {
    case Shape::Midpoints: {
        if (i % 32 == 0) return d.levels * 0x1p-7;
        const uint64_t k = 2 * (h % uint64_t((d.levels + 1) / 2));  // even, k + 1/2 < L
        return (double(k) + 0.5) * 0x1p-7;
    }
    case Shape::Plateau: return i % 2048 < 50 ? 0.0 : 0.9 + 0.1 * unit(h);
    case Shape::Ties: return (h & 1 ? -1.0 : 1.0) * ((h >> 1) % 10 == 0 ? 2.0 : 1.0);
    default: return 0;
    }
}

// Gradient-like values (Gaussian with 1% outliers twelve times larger) under
// an envelope that varies 20-fold along the array and grows with the rank,
// with runs of zeros (whole chunks), constants, tiny (1e-30) and huge (1e20)
// magnitudes at fixed fractions of the count.
double base_value(int q, size_t i, const Data &d) {
    if (d.shape != Shape::Gradient) return edge_value(q, i, d);
    const size_t n = d.count;
    if (d.regions && i - n / 7 < 5000) return 0.0;
    if (d.regions && i - (2 * n / 3 + 5) < 600) return 0.5 * (q + 1);
    uint64_t h = mix(d.seed * 0x100000001B3ull ^ mix(uint64_t(q) << 40 ^ uint64_t(i)));
    double u1 = unit(h), u2 = unit(mix(h)), u3 = unit(mix(h + 1));
    double v = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    if (u3 < 0.01) v *= 12;
    v *= std::exp(1.5 * std::sin(double(i) * 6.283185307179586 / 40000.0)) * (1.0 + 0.25 * q);
    if (d.regions && i - n / 3 < 500) v *= 1e-30;
    if (d.regions && i - (n / 2 + 11) < 300) v *= 1e20;
    return v;
}

template <typename T>
T value(int q, size_t i, const Data &d) {
    for (const Inject &j : d.inject)
        if (j.rank == q && j.index == i) return T(j.value);
    return T(base_value(q, i, d));
}

// ---------------------------------------------------------------- helpers

template <typename T>
MPI_Datatype mpi_type() {
    return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}
template <typename T>
const char *type_name() {
    return std::is_same_v<T, float> ? "float" : "double";
}
// Unit roundoff of T.
template <typename T>
double unit_roundoff() {
    return std::ldexp(1.0, -std::numeric_limits<T>::digits);
}
// One unit in the last place of T at r (the smallest subnormal below the normals).
template <typename T>
double ulp_of(double r) {
    double a = std::fabs(r);
    if (a < double(std::numeric_limits<T>::min())) return double(std::numeric_limits<T>::denorm_min());
    return std::ldexp(1.0, std::ilogb(a) - (std::numeric_limits<T>::digits - 1));
}

uint64_t fnv(const void *p, size_t n) {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

void check_identical(MPI_Comm comm, const void *buf, size_t bytes, const char *what) {
    uint64_t h = fnv(buf, bytes), hmax = 0, hmin = 0;
    PMPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, comm);
    PMPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, comm);
    CHECK(hmax == hmin, "%s: ranks hold different results (hash %016" PRIx64 " .. %016" PRIx64 ")", what, hmin,
          hmax);
}

terse_comm_stats_t stats_of(MPI_Comm comm) {
    terse_comm_stats_t s;
    CHECK(terse_comm_stats(comm, &s, sizeof s) == TERSE_OK, "terse_comm_stats: %s", terse_last_error());
    return s;
}

void configure(MPI_Comm comm, const char *key, const char *value) {
    CHECK(terse_comm_configure(comm, key, value) == TERSE_OK, "terse_comm_configure(%s, %s): %s", key, value,
          terse_last_error());
}

// One field of terse_comm_get_config's canonical string.
std::string config_field(MPI_Comm comm, const char *key) {
    char buf[1024];
    CHECK(terse_comm_get_config(comm, buf, sizeof buf) == TERSE_OK, "terse_comm_get_config: %s",
          terse_last_error());
    std::string s = std::string(" ") + buf, k = std::string(" ") + key + "=";
    size_t p = s.find(k);
    CHECK(p != std::string::npos, "configuration '%s' has no %s", buf, key);
    p += k.size();
    return s.substr(p, s.find(' ', p) - p);
}

size_t parse_size(const std::string &v) {
    char *end = nullptr;
    unsigned long long n = strtoull(v.c_str(), &end, 10);
    std::string suf = end ? end : "";
    if (suf == "K" || suf == "KiB") n <<= 10;
    else if (suf == "M" || suf == "MiB") n <<= 20;
    else CHECK(suf.empty(), "size '%s' not understood", v.c_str());
    return size_t(n);
}

// ---------------------------------------------------------------- checking

// The inputs of every rank for one chunk, and the result there.
template <typename T>
struct ChunkView {
    size_t off = 0, len = 0;
    int n = 0;
    std::vector<T> x;  // x[q * len + j]: rank q's element off + j
    const T *r = nullptr;
    T at(int q, size_t j) const { return x[size_t(q) * len + j]; }
    bool finite_input(size_t j) const {
        for (int q = 0; q < n; ++q)
            if (!std::isfinite(at(q, j))) return false;
        return true;
    }
    bool all_finite() const {
        for (T v : x)
            if (!std::isfinite(v)) return false;
        return true;
    }
};

// Violations found by this rank in one case; details of the first few.
struct Findings {
    uint64_t violations = 0;
    uint64_t checked = 0;
    double worst = 0;     // largest error / bound, where the bound is the codec's
    uint64_t unsure = 0;  // chunks where either of two outcomes was accepted
    std::string what;
    int printed = 0;
    void report(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
        ++violations;
        if (printed++ >= 4) return;
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "[rank %d] VIOLATION %s: %s\n", g_rank, what.c_str(), msg);
    }
};

std::string rank_values(double *v, int n) {
    std::string s;
    char b[40];
    for (int q = 0; q < n; ++q) {
        snprintf(b, sizeof b, "%s%.9g", q ? "," : "", v[q]);
        s += b;
    }
    return s;
}

// The exact sum of element j lies within `bound` of the result.  Decided in
// double where the rounding of the double sum cannot matter, else in
// binary128 (the test's own rounding of the bound is allowed 2^-50).
template <typename T>
void expect_within(const ChunkView<T> &v, size_t j, double bound, const char *why, Findings *f,
                   bool codec_bound = true) {
    ++f->checked;
    const T r = v.r[j];
    double e = 0, sa = 0;
    for (int q = 0; q < v.n; ++q) {
        e += double(v.at(q, j));
        sa += std::fabs(double(v.at(q, j)));
    }
    double err = std::fabs(double(r) - e);
    const double ref_slack = v.n * 0x1p-53 * sa;  // rounding of the double reference
    if ((err + ref_slack) * (1 + 0x1p-50) <= bound) {
        if (bound > 0 && codec_bound) f->worst = std::max(f->worst, err / bound);
        return;
    }
    __float128 s = 0;
    for (int q = 0; q < v.n; ++q) s += __float128(v.at(q, j));
    __float128 d = __float128(r) - s;
    if (d < 0) d = -d;
    if (bound > 0 && codec_bound) f->worst = std::max(f->worst, double(d / __float128(bound)));
    if (std::isfinite(double(r)) && d <= __float128(bound) * (1 + __float128(0x1p-50))) return;
    double xs[64];
    for (int q = 0; q < v.n && q < 64; ++q) xs[q] = double(v.at(q, j));
    f->report("element %zu (chunk at %zu, %zu long): result %.17g, exact %.17g, |error| %.17g > bound %.17g "
              "by %.3g ulp(result) (%s); inputs %s",
              v.off + j, v.off, v.len, double(r), double(s), double(d), bound,
              double(d - __float128(bound)) / ulp_of<T>(double(r)), why, rank_values(xs, v.n).c_str());
}

// Elements whose exact sum is not finite: NaN where it is NaN, the same
// infinity where it is infinite.  Returns false for elements with a finite
// exact sum (left to the codec's contract).
template <typename T>
bool expect_nonfinite(const ChunkView<T> &v, size_t j, Findings *f) {
    if (v.finite_input(j)) return false;
    double e = 0;
    for (int q = 0; q < v.n; ++q) e += double(v.at(q, j));  // Inf - Inf = NaN, NaN propagates
    const double r = double(v.r[j]);
    ++f->checked;
    bool ok = std::isnan(e) ? std::isnan(r) : r == e;
    if (!ok) f->report("element %zu: result %g where the exact sum is %g", v.off + j, r, e);
    return true;
}

// What summing the raw inputs in T gives: within (n-1) roundings of the sum of magnitudes.
template <typename T>
double raw_bound(const ChunkView<T> &v, size_t j) {
    double sa = 0;
    for (int q = 0; q < v.n; ++q) sa += std::fabs(double(v.at(q, j)));
    return (v.n - 1) * unit_roundoff<T>() * (1 + 1e-6) * sa;
}

template <typename T>
void check_raw_chunk(const ChunkView<T> &v, const char *why, Findings *f) {
    for (size_t j = 0; j < v.len; ++j)
        if (!expect_nonfinite(v, j, f)) expect_within(v, j, raw_bound(v, j), why, f, false);
}

// terse_codec_quantize(7), CONTRACT: |r - sum| <= n e (1 + 2^-32) + ulp(r),
// e from (bits, rounding) and the block's agreed statistics; a chunk with a
// NaN or Inf on any rank is sent raw by every rank.
template <typename T>
void check_quantize(const Contract &c, const ChunkView<T> &v, Findings *f) {
    if (!v.all_finite()) return check_raw_chunk(v, "quantize: chunk with NaN/Inf is sent raw", f);
    const double L = double((1u << (c.bits - 1)) - 1u);
    for (size_t b0 = 0; b0 < v.len; b0 += c.block) {
        const size_t nb = std::min(c.block, v.len - b0);
        double m = 0, s = 0;  // largest |x| of any rank; largest mean |x| of a rank
        for (int q = 0; q < v.n; ++q) {
            double sum = 0;
            for (size_t j = b0; j < b0 + nb; ++j) {
                double a = std::fabs(double(v.at(q, j)));
                m = std::max(m, a);
                sum += a;
            }
            s = std::max(s, sum / double(nb));
        }
        // The 1-bit scale travels as float32 for float and 16-bit data,
        // rounded up (terse_codec_quantize(7)): the bound uses it as stored.
        if (sizeof(T) < 8) {
            float sf = static_cast<float>(s);
            if (double(sf) < s) sf = std::nextafter(sf, INFINITY);
            s = sf;
        }
        double e;
        if (c.bits == 1) e = c.stochastic ? 2 * m : std::max(s, m - s);
        else e = c.stochastic ? m / L : m / (2 * L);
        char why[160];
        snprintf(why, sizeof why, "n*e*(1+2^-32)+ulp(r), e=%.9g from block max %.9g%s", e, m,
                 c.bits == 1 && !c.stochastic ? " and mean" : "");
        for (size_t j = b0; j < b0 + nb; ++j)
            expect_within(v, j, v.n * e * (1 + 0x1p-32) + ulp_of<T>(double(v.r[j])), why, f);
    }
}

// terse_codec_errbound(7), CONTRACT: |r - sum| <= B for every element of every
// chunk the codec encodes.  Whether a chunk is encoded follows the page's
// rules; where the test's estimate of them is not clear-cut (the step is
// only known to be "a little below 2B/n"), either outcome is accepted.
template <typename T>
void check_errbound(const Contract &c, const ChunkView<T> &v, Findings *f) {
    if (!v.all_finite()) return check_raw_chunk(v, "errbound: chunk with NaN/Inf is sent raw", f);
    const int n = v.n;
    double M = 0, vmax = -INFINITY, vmin = INFINITY, N = 0;
    for (int q = 0; q < n; ++q) {
        double sq = 0;
        for (size_t j = 0; j < v.len; ++j) {
            double x = double(v.at(q, j));
            M = std::max(M, std::fabs(x));
            vmax = std::max(vmax, x);
            vmin = std::min(vmin, x);
            sq += x * x;
        }
        N = std::max(N, std::sqrt(sq));
    }
    double B = c.eb_mode == 'a'   ? c.eb_f
               : c.eb_mode == 'r' ? c.eb_f * (vmax + -vmin)
                                  : c.eb_f * N / std::sqrt(double(v.len));
    const bool f32 = std::is_same_v<T, float>;
    const double eps = f32 ? 0x1p-24 : 0, eta = f32 ? 0x1p-150 : 0x1p-1074;
    const double R = n * M + B;
    const double rounding = n * M * 0x1p-51 + R * 0x1p-53 + R * eps + eta;
    const double codes = B > 0 ? n * (M / (2 * B / n) + 1) : INFINITY;
    enum { Encoded, Raw, Either } expect;
    if (c.eb_mode == 'r' && vmax == vmin) expect = M == 0 ? Encoded : Raw;  // all zero: exact
    else if (rounding > B || codes > 0x1p32) expect = Raw;
    else if (rounding < B / 4 && codes < 0x1p28) expect = Encoded;
    else expect = Either;
    if (expect == Either) ++f->unsure;
    char why[160];
    snprintf(why, sizeof why, "B=%.9g from %s=%g (chunk max |x| %.6g)%s", B,
             c.eb_mode == 'a'   ? "abs"
             : c.eb_mode == 'r' ? "rel"
                                : "norm",
             c.eb_f, M,
             expect == Raw      ? ", raw"
             : expect == Either ? ", raw or encoded"
                                : "");
    for (size_t j = 0; j < v.len; ++j) {
        double bound = expect == Encoded ? B : expect == Raw ? raw_bound(v, j) : std::max(B, raw_bound(v, j));
        expect_within(v, j, bound, why, f, expect == Encoded);
    }
}

// terse_codec_zfp(7), CONTRACT: each encode changes no element by more than
// the tolerance; the result passes through E encodes (recompress_encodes)
// plus the rounding of the additions (at most 2(E+1) roundings in T of
// values below sum|x| + E tol).  Raw chunks (NaN/Inf, too large for the
// tolerance) are exact, within the same bound.
template <typename T>
void check_zfp(const Contract &c, Sched s, const ChunkView<T> &v, Findings *f) {
    const int E = recompress_encodes(s, v.n);
    char why[120];
    snprintf(why, sizeof why, "%d encodes x tol %g + rounding of the additions", E, c.zfp_tol);
    for (size_t j = 0; j < v.len; ++j) {
        if (expect_nonfinite(v, j, f)) continue;
        double sa = 0;
        for (int q = 0; q < v.n; ++q) sa += std::fabs(double(v.at(q, j)));
        double bound = E * c.zfp_tol + 2.0 * (E + 1) * unit_roundoff<T>() * (sa + E * c.zfp_tol);
        expect_within(v, j, bound, why, f);
    }
}

// terse_codec_topk(7), CONTRACT: each rank keeps exactly k elements of each
// chunk, the k largest by |x| (ties to the lower index), bit-exact; a chunk
// holding NaN/Inf, or whose payload would not be smaller than the chunk, is
// sent raw; the result is the sum over ranks, in rank order, of what each
// kept.  The reference below computes exactly that sum in T, so the result
// must equal it.  Where the test cannot tell whether a payload would shrink
// (between the format's smallest and largest index coding), either is accepted.
template <typename T>
void check_topk(const Contract &c, const ChunkView<T> &v, Findings *f) {
    const size_t len = v.len;
    uint64_t k = c.k ? std::min<uint64_t>(c.k, len)
                     : std::max<uint64_t>(1, uint64_t(std::nearbyint(c.ratio * double(len))));
    // Header, values, and at least one width byte per 32 indices (bit-packed) or 5 bytes each (varints).
    const size_t payload_min = 16 + k * sizeof(T) + (k + 31) / 32, payload_max = 16 + k * (sizeof(T) + 5);
    // ref[0]: encoded chunks keep top k; ref[1]: chunks that may not shrink are raw.
    std::vector<T> ref[2] = {std::vector<T>(len, T(0)), std::vector<T>(len, T(0))};
    std::vector<char> keep(len);
    std::vector<uint32_t> idx(len);
    bool ambiguous = false;
    for (int q = 0; q < v.n; ++q) {
        bool nonfinite = false;
        for (size_t j = 0; j < len; ++j) nonfinite |= !std::isfinite(v.at(q, j));
        const bool raw_sure = nonfinite || k >= len || payload_min >= len * sizeof(T);
        const bool raw_maybe = !raw_sure && payload_max >= len * sizeof(T);
        ambiguous |= raw_maybe;
        f->unsure += raw_maybe;
        if (raw_sure) {
            std::fill(keep.begin(), keep.end(), 1);
        } else {
            std::fill(keep.begin(), keep.end(), 0);
            std::iota(idx.begin(), idx.end(), 0u);
            auto larger = [&](uint32_t a, uint32_t b) {
                T xa = std::fabs(v.at(q, a)), xb = std::fabs(v.at(q, b));
                return xa != xb ? xa > xb : a < b;
            };
            std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), larger);
            for (uint64_t i = 0; i < k; ++i) keep[idx[i]] = 1;
        }
        for (int alt = 0; alt < 2; ++alt)
            for (size_t j = 0; j < len; ++j)
                if (keep[j] || (alt == 1 && raw_maybe))
                    ref[alt][j] = q == 0 ? v.at(q, j) : T(ref[alt][j] + v.at(q, j));
    }
    for (size_t j = 0; j < len; ++j) {
        ++f->checked;
        const T r = v.r[j];
        auto same = [&](T a) { return a == r || (std::isnan(a) && std::isnan(r)); };
        if (same(ref[0][j]) || (ambiguous && same(ref[1][j]))) continue;
        double xs[64];
        for (int q = 0; q < v.n && q < 64; ++q) xs[q] = double(v.at(q, j));
        f->report("element %zu (chunk at %zu, %zu long, k=%" PRIu64
                  "): result %.9g, sum of the kept elements %.9g; "
                  "inputs %s",
                  v.off + j, v.off, len, k, double(r), double(ref[0][j]), rank_values(xs, v.n).c_str());
    }
}

template <typename T>
void check_chunk(const Contract &c, Sched s, const ChunkView<T> &v, Findings *f) {
    switch (c.kind) {
    case Kind::Lossless: return check_raw_chunk(v, "lossless: the sum in T", f);
    case Kind::Quantize: return check_quantize(c, v, f);
    case Kind::Errbound: return check_errbound(c, v, f);
    case Kind::Zfp:
        if (c.zfp_accuracy) return check_zfp(c, s, v, f);
        for (size_t j = 0; j < v.len; ++j) expect_nonfinite(v, j, f);  // no error bound in rate/precision mode
        return;
    case Kind::Topk: return check_topk(c, v, f);
    }
}

// ---------------------------------------------------------------- one case

struct CaseSetup {
    Contract c;
    std::string alg;
    size_t chunk_bytes = 16384;
    bool own_comm = true;  // false: MPI_COMM_WORLD as the environment configured it
};

// One allreduce of `d` under codec c, then every check.
template <typename T>
void run_case(const CaseSetup &cs, const Data &d, bool expect_raw_chunks) {
    const Contract &c = cs.c;
    MPI_Comm comm = MPI_COMM_WORLD;
    char chunk_str[32];
    snprintf(chunk_str, sizeof chunk_str, "%zu", cs.chunk_bytes);
    if (cs.own_comm) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        configure(comm, "codec", c.spec.c_str());
        configure(comm, "min_bytes", "0");
        configure(comm, "chunk_bytes", chunk_str);
        configure(comm, "algorithm", cs.alg.c_str());
        configure(comm, "feedback", "off");
    }
    CHECK(parse_size(config_field(comm, "chunk_bytes")) == cs.chunk_bytes, "chunk_bytes not as configured");
    CHECK(config_field(comm, "algorithm") == cs.alg, "algorithm not as configured");
    CHECK(config_field(comm, "min_bytes") == "0", "min_bytes is not 0: the calls would not be intercepted");
    const Sched sched = sched_of(c, cs.alg);
    const size_t count = d.count;

    char what[256];
    snprintf(what, sizeof what, "codec %s, %s, np=%d, algorithm=%s, count=%zu, chunk_bytes=%zu%s", c.spec.c_str(),
             type_name<T>(), g_size, cs.alg.c_str(), count, cs.chunk_bytes, d.inject.empty() ? "" : ", NaN/Inf");

    std::vector<T> in(count), out(count + 4);
    for (size_t i = 0; i < count; ++i) in[i] = value<T>(g_rank, i, d);
    const T canary = T(-7.25);
    for (size_t j = count; j < count + 4; ++j) out[j] = canary;
    const terse_comm_stats_t before = stats_of(comm);
    int rc = MPI_Allreduce(in.data(), out.data(), int(count), mpi_type<T>(), MPI_SUM, comm);
    CHECK(rc == MPI_SUCCESS, "%s: MPI_Allreduce returned %d (%s)", what, rc, terse_last_error());
    for (size_t j = count; j < count + 4; ++j) CHECK(out[j] == canary, "%s: wrote past the end", what);
    for (size_t i = 0; i < count; i += 97)
        CHECK(in[i] == value<T>(g_rank, i, d) || std::isnan(in[i]), "%s: input modified", what);

    // Statistics: the call ran on terse's engine and a lossy codec shrank it.
    const terse_comm_stats_t st = stats_of(comm);
    CHECK(st.calls_intercepted == before.calls_intercepted + 1 && st.calls_passed == before.calls_passed,
          "%s: the call was not run by terse (intercepted %" PRIu64 ", passed %" PRIu64 ")", what,
          st.calls_intercepted, st.calls_passed);
    const uint64_t wire = st.bytes_wire - before.bytes_wire, wire_raw = st.bytes_wire_raw - before.bytes_wire_raw;
    if (c.lossy() && g_size > 1)
        CHECK(wire < wire_raw, "%s: no compression: %" PRIu64 " bytes on the wire, %" PRIu64 " uncompressed",
              what, wire, wire_raw);
    if (expect_raw_chunks && c.lossy()) {
        uint64_t raw = st.chunks_raw - before.chunks_raw, raw_max = 0;
        PMPI_Allreduce(&raw, &raw_max, 1, MPI_UINT64_T, MPI_MAX, comm);
        CHECK(raw_max > 0, "%s: no rank sent a chunk raw although inputs hold NaN and Inf", what);
    }

    check_identical(comm, out.data(), count * sizeof(T), what);

    // The contract, on this rank's share of the chunks.
    const std::vector<Chunk> chunks = layout(sched, count, g_size, chunk_elems(cs.chunk_bytes, sizeof(T)));
    Findings f;
    f.what = what;
    ChunkView<T> v;
    v.n = g_size;
    for (size_t ci = size_t(g_rank); ci < chunks.size(); ci += size_t(g_size)) {
        v.off = chunks[ci].off;
        v.len = chunks[ci].len;
        v.x.resize(size_t(g_size) * v.len);
        for (int q = 0; q < g_size; ++q)
            for (size_t j = 0; j < v.len; ++j) v.x[size_t(q) * v.len + j] = value<T>(q, v.off + j, d);
        v.r = out.data() + v.off;
        check_chunk(c, sched, v, &f);
    }
    uint64_t mine[3] = {f.violations, f.checked, f.unsure}, all[3] = {0, 0, 0};
    PMPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, comm);
    double worst = 0;
    PMPI_Allreduce(&f.worst, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (g_rank == 0) {
        char unsure[64] = "";
        if (all[2]) snprintf(unsure, sizeof unsure, "; %" PRIu64 " chunk(s) raw or encoded", all[2]);
        printf("  %-44s %-6s %9" PRIu64 " checked, %s; wire/raw %.3f%s\n", c.spec.c_str(), type_name<T>(), all[1],
               all[0] ? "VIOLATED" : "ok", wire_raw ? double(wire) / double(wire_raw) : 1.0, unsure);
        if (worst > 0 &&
            (c.kind == Kind::Quantize || c.kind == Kind::Errbound || (c.kind == Kind::Zfp && c.zfp_accuracy)))
            printf("  %-44s %-6s largest error / bound %.3f\n", "", "", worst);
        fflush(stdout);
    }
    CHECK(all[0] == 0, "%s: %" PRIu64 " of %" PRIu64 " checked elements violate the contract (details above)",
          what, all[0], all[1]);
    if (cs.own_comm) MPI_Comm_free(&comm);
}

// ---------------------------------------------------------------- sections

std::vector<Contract> table() {
    std::vector<Contract> out;
    for (const char *s : kCodecs) out.push_back(parse_contract(s));
    return out;
}

const char *shape_name(Shape s) {
    switch (s) {
    case Shape::Gradient: return "gradient-like";
    case Shape::Midpoints: return "midpoints";
    case Shape::Plateau: return "plateau";
    case Shape::Ties: return "ties";
    }
    return "?";
}

// The whole table on one shape of data (NaN/Inf added for `nonfinite`).
void run_table(const std::string &alg, size_t count, Shape shape, bool nonfinite) {
    Data d;
    d.count = count;
    d.shape = shape;
    d.seed = nonfinite ? 77 : 11;
    if (nonfinite) {
        // rank 1: NaN at i, +Inf at j; another rank -Inf at j (NaN there);
        // the last rank +Inf at k; rank 0 -Inf at l and NaN in the last
        // element.  Close together, so that most chunks stay compressible.
        const size_t i = count / 4 + 5, j = i + 17, k = i + 40, l = i + 100;
        const int other = g_size > 2 ? 2 : 0;
        d.inject = {{1, i, NAN},       {1, j, INFINITY},   {other, j, -INFINITY}, {g_size - 1, k, INFINITY},
                    {0, l, -INFINITY}, {0, count - 1, NAN}};
    }
    if (g_rank == 0)
        printf("%s: np=%d, algorithm=%s, count=%zu, %s data\n", nonfinite ? "nonfinite" : "contract", g_size,
               alg.c_str(), count, shape_name(shape));
    int ci = 0;
    for (const Contract &c : table()) {
        CaseSetup cs;
        cs.c = c;
        cs.alg = alg;
        cs.chunk_bytes = kChunkBytes[ci++ % 3];
        // Midpoints of this codec's own levels (quantize), else of 8 bits.
        d.levels = c.kind == Kind::Quantize && c.bits >= 2 ? int((1u << (c.bits - 1)) - 1u) : 127;
        run_case<float>(cs, d, nonfinite);
        run_case<double>(cs, d, nonfinite);
    }
}

// Error feedback (terse(7), ERROR FEEDBACK): the residual of each call is
// added to the next call's input on the same buffer, so sum_t r_t = T exact -
// sum_ranks residual_T: the error of the running mean falls like 1/T.
// Without feedback every call gives the same result and nothing improves.
void feedback_run(const std::string &spec, bool on, bool in_place, const std::string &alg, size_t count) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    configure(comm, "codec", spec.c_str());
    configure(comm, "min_bytes", "0");
    configure(comm, "algorithm", alg.c_str());
    configure(comm, "feedback", on ? "on" : "off");
    Data d;
    d.count = count;
    d.seed = 5;
    d.regions = false;  // gradient-like only: huge values would dominate the error norm
    std::vector<float> in(count), buf(count);
    for (size_t i = 0; i < count; ++i) in[i] = value<float>(g_rank, i, d);
    // This rank's share of the elements for the error of the running mean.
    const size_t lo = count * size_t(g_rank) / size_t(g_size), hi = count * size_t(g_rank + 1) / size_t(g_size);
    std::vector<double> exact(hi - lo), sum(hi - lo, 0.0);
    for (size_t i = lo; i < hi; ++i)
        for (int q = 0; q < g_size; ++q) exact[i - lo] += double(value<float>(q, i, d));
    const int kCalls = 50;
    const int checkpoints[] = {1, 5, 10, 25, 50};
    double err[5];
    int cp = 0;
    for (int t = 1; t <= kCalls; ++t) {
        int rc;
        if (in_place) {
            std::memcpy(buf.data(), in.data(), count * sizeof(float));
            rc = MPI_Allreduce(MPI_IN_PLACE, buf.data(), int(count), MPI_FLOAT, MPI_SUM, comm);
        } else {
            rc = MPI_Allreduce(in.data(), buf.data(), int(count), MPI_FLOAT, MPI_SUM, comm);
        }
        CHECK(rc == MPI_SUCCESS, "feedback %s: call %d failed: %s", spec.c_str(), t, terse_last_error());
        for (size_t i = lo; i < hi; ++i) sum[i - lo] += double(buf[i]);
        if (t == checkpoints[cp]) {
            double se[2] = {0, 0}, tot[2];  // squared error of the running mean, squared exact
            for (size_t i = lo; i < hi; ++i) {
                double e = sum[i - lo] / t - exact[i - lo];
                se[0] += e * e;
                se[1] += exact[i - lo] * exact[i - lo];
            }
            PMPI_Allreduce(se, tot, 2, MPI_DOUBLE, MPI_SUM, comm);
            err[cp++] = std::sqrt(tot[0] / tot[1]);  // relative RMS error
        }
    }
    terse_comm_stats_t st = stats_of(comm);
    CHECK(st.calls_intercepted == uint64_t(kCalls), "feedback %s: %" PRIu64 " of %d calls intercepted",
          spec.c_str(), st.calls_intercepted, kCalls);
    if (g_size > 1) CHECK(st.bytes_wire < st.bytes_wire_raw, "feedback %s: no compression", spec.c_str());
    if (g_rank == 0) {
        printf("  %-24s feedback=%-3s %s: relative RMS error of the running mean after", spec.c_str(),
               on ? "on" : "off", in_place ? "in place" : "send buf");
        for (int i = 0; i < 5; ++i) printf(" %d: %.4f%s", checkpoints[i], err[i], i < 4 ? "," : "\n");
        fflush(stdout);
    }
    if (on) {
        for (int i = 1; i < 5; ++i)
            CHECK(err[i] < err[i - 1],
                  "feedback %s on: error of the running mean did not fall from call %d to %d "
                  "(%.4g -> %.4g)",
                  spec.c_str(), checkpoints[i - 1], checkpoints[i], err[i - 1], err[i]);
        CHECK(err[4] < err[0] / 5,
              "feedback %s on: after %d calls the error of the mean is %.4g, not below 1/5 "
              "of one call's %.4g",
              spec.c_str(), kCalls, err[4], err[0]);
        // Still converging at the end (like 1/T once residuals stop growing), not settled on a floor.
        CHECK(err[4] < 0.75 * err[3],
              "feedback %s on: the error of the mean went only from %.4g to %.4g between "
              "calls 25 and 50",
              spec.c_str(), err[3], err[4]);
    } else {
        CHECK(err[4] >= 0.9 * err[0],
              "feedback %s off: the running mean improved (%.4g -> %.4g) although "
              "nothing carries the error",
              spec.c_str(), err[0], err[4]);
    }
    CHECK(err[0] > 0, "feedback %s: the first call was exact; the test needs a lossy setting", spec.c_str());
    MPI_Comm_free(&comm);
}

void section_feedback(const std::string &alg, size_t count) {
    if (g_rank == 0) printf("feedback: np=%d, algorithm=%s, count=%zu\n", g_size, alg.c_str(), count);
    for (bool on : {true, false}) {
        feedback_run("topk:ratio=0.1", on, false, alg, count);
        feedback_run("quantize:bits=2", on, true, alg, count);
    }
}

// The environment's configuration of MPI_COMM_WORLD (TERSE_CODEC, ...).
void section_world(size_t count) {
    const std::string fb = config_field(MPI_COMM_WORLD, "feedback");
    CHECK(fb == "off" || fb == "0", "world: run with TERSE_FEEDBACK=off (feedback=%s)", fb.c_str());
    CaseSetup cs;
    cs.c = parse_contract(config_field(MPI_COMM_WORLD, "codec"));
    cs.alg = config_field(MPI_COMM_WORLD, "algorithm");
    cs.chunk_bytes = parse_size(config_field(MPI_COMM_WORLD, "chunk_bytes"));
    cs.own_comm = false;
    if (g_rank == 0) printf("world: np=%d, TERSE_CODEC=%s\n", g_size, cs.c.spec.c_str());
    Data d;
    d.count = count;
    d.seed = 3;
    run_case<float>(cs, d, false);
    d.count = count + 1;  // another buffer key: nothing carried over
    run_case<double>(cs, d, false);
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    std::string alg = "ring";
    size_t count = 100003;
    std::vector<std::string> sections;
    for (int a = 1; a < argc; ++a) {
        std::string s = argv[a];
        if (s == "--algorithm" && a + 1 < argc) alg = argv[++a];
        else if (s == "--count" && a + 1 < argc) count = strtoul(argv[++a], nullptr, 10);
        else sections.push_back(s);
    }
    CHECK(g_size >= 2, "run on 2 or more ranks");
    CHECK(count >= 20000, "--count %zu: the data's special regions need at least 20000 elements", count);
    if (sections.empty()) sections = {"contract"};
    for (const std::string &s : sections) {
        if (s == "contract") run_table(alg, count, Shape::Gradient, false);
        else if (s == "nonfinite") run_table(alg, count, Shape::Gradient, true);
        else if (s == "edges")
            for (Shape sh : {Shape::Midpoints, Shape::Ties, Shape::Plateau}) run_table(alg, count, sh, false);
        else if (s == "feedback") section_feedback(alg, count);
        else if (s == "world") section_world(count);
        else CHECK(false, "unknown section '%s' (contract, nonfinite, edges, feedback, world)", s.c_str());
    }
    if (g_rank == 0) printf("all checks passed (np=%d)\n", g_size);
    MPI_Finalize();
    return 0;
}
