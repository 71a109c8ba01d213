// The two-level schedule (algorithm=two_level) end to end through libterse,
// on the nodes TERSE_NODE_KEY names (or the MPI library's shared-memory
// split when it is unset): results against PMPI_Allreduce, exactly for the
// lossless codec (integers, and floats holding small integers) and within
// quantize:bits=8's contract (applied to the rails' allreduce of node sums),
// identical bits on every rank, only rail ranks sending between nodes, and
// a failure injected on one rank reaching every rank.
//
//   test_two_level            (run by test_two_level.sh with TERSE_MIN_BYTES=0)
//   test_two_level mismatch   (TERSE_NODE_KEY on some ranks only: every rank
//                              gets an error naming the variable)
//   test_two_level weighed    (algorithm=auto under TERSE_PLANNER=model: the
//                              planner weighs the two-level schedule with the
//                              flat ones; lossless results stay exact whatever
//                              it picks, blocking and non-blocking calls mixed)
#include <mpi.h>
#include <terse/terse.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "mpi_check.h"

extern "C" int terse_engine_test_fail_next(const char *where);

namespace {

int g_rank, g_size;

// The layout the test expects, found independently of terse.
struct Layout {
    int node = 0;  // this rank's node (index of its first rank's key)
    int node_rank = 0, node_size = 1, nodes = 1, shards = 1, max_node = 1;
    bool on_rail() const { return node_rank < shards; }
    std::vector<int> node_of;  // per rank
};

Layout find_layout() {
    Layout l;
    const char *key = std::getenv("TERSE_NODE_KEY");
    char mine[65] = {0};
    if (key) std::snprintf(mine, sizeof mine, "%s", key);
    else {
        // Unset: the MPI library's shared-memory split decides.
        MPI_Comm node;
        PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
        int first = 0;
        PMPI_Allreduce(&g_rank, &first, 1, MPI_INT, MPI_MIN, node);
        PMPI_Comm_free(&node);
        std::snprintf(mine, sizeof mine, "shm%d", first);
    }
    std::vector<char> all(size_t(g_size) * 65);
    PMPI_Allgather(mine, 65, MPI_CHAR, all.data(), 65, MPI_CHAR, MPI_COMM_WORLD);
    l.node_of.assign(size_t(g_size), -1);
    for (int q = 0; q < g_size; ++q)
        for (int p = 0; p <= q; ++p)
            if (std::strcmp(&all[size_t(p) * 65], &all[size_t(q) * 65]) == 0) {
                l.node_of[size_t(q)] = p;
                break;
            }
    l.node = l.node_of[size_t(g_rank)];
    std::vector<int> size_of(size_t(g_size), 0);
    l.node_rank = 0;
    for (int q = 0; q < g_size; ++q) {
        size_of[size_t(l.node_of[size_t(q)])]++;
        if (q < g_rank && l.node_of[size_t(q)] == l.node) l.node_rank++;
    }
    l.node_size = size_of[size_t(l.node)];
    l.nodes = 0;
    l.shards = g_size;
    l.max_node = 0;
    for (int s : size_of)
        if (s > 0) {
            l.nodes++;
            l.shards = std::min(l.shards, s);
            l.max_node = std::max(l.max_node, s);
        }
    return l;
}

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
    return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
    return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<int32_t>() {
    return MPI_INT32_T;
}
template <>
MPI_Datatype mpi_type<int64_t>() {
    return MPI_INT64_T;
}
template <class T>
const char *type_name() {
    return std::is_same_v<T, float>     ? "float"
           : std::is_same_v<T, double>  ? "double"
           : std::is_same_v<T, int32_t> ? "int32"
                                        : "int64";
}

uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}
// Rank r's element i: small integers (exact sums in any order) or spread
// reals with signs.
double value(int r, size_t i, int seed, bool integral) {
    uint64_t h = mix(uint64_t(r) * 0x9E3779B97F4A7C15ull + i * 0x632BE59BD9B4E019ull + uint64_t(seed));
    if (integral) return double(int64_t(h % 2001) - 1000);
    double u = double(h >> 11) * 0x1p-53;
    return (u - 0.5) * std::ldexp(1.0, int((h >> 3) % 9) - 2);
}

void identical(const void *buf, size_t bytes, const char *what) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = static_cast<const unsigned char *>(buf);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
    uint64_t lo = 0, hi = 0;
    PMPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "%s: ranks hold different bits", what);
}

int call(MPI_Comm comm, const void *in, void *out, size_t count, MPI_Datatype t, MPI_Op op, bool in_place) {
    if (in_place) return MPI_Allreduce(MPI_IN_PLACE, out, int(count), t, op, comm);
    return MPI_Allreduce(in, out, int(count), t, op, comm);
}

// Lossless: exactly PMPI's result (integers; floats holding small
// integers), and the same bits everywhere for spread reals.
template <class T>
void lossless(MPI_Comm comm, size_t count, MPI_Op op, bool in_place, bool integral, int seed) {
    std::vector<T> in(count), out(count), ref(count);
    for (size_t i = 0; i < count; ++i) in[i] = T(value(g_rank, i, seed, integral));
    if (in_place) out = in;
    CHECK(call(comm, in.data(), out.data(), count, mpi_type<T>(), op, in_place) == MPI_SUCCESS,
          "allreduce failed");
    char what[128];
    std::snprintf(what, sizeof what, "lossless %s count=%zu%s%s", type_name<T>(), count,
                  in_place ? " in place" : "", integral ? "" : " (reals)");
    identical(out.data(), count * sizeof(T), what);
    if (!integral) return;
    PMPI_Allreduce(in.data(), ref.data(), int(count), mpi_type<T>(), op, MPI_COMM_WORLD);
    for (size_t i = 0; i < count; ++i)
        CHECK(std::memcmp(&out[i], &ref[i], sizeof(T)) == 0, "%s: element %zu is %.17g, PMPI says %.17g", what, i,
              double(out[i]), double(ref[i]));
}

template <class T>
double ulp(double x) {
    int e = 0;
    std::frexp(x == 0 ? 1e-300 : x, &e);
    return std::ldexp(1.0, e - (std::is_same_v<T, float> ? 24 : 53));
}

// quantize:bits=8 (nearest, block 256) on the rails: their inputs are node
// sums, so n is the number of nodes and m the largest |node sum| of any
// block holding the element (within the three aligned 256-element windows
// around it, whatever the shard and chunk boundaries); each node sum is the
// MPI library's rounded float sum, a few ulps from the exact one.
template <class T>
void lossy(MPI_Comm comm, const Layout &l, size_t count, bool in_place, int seed) {
    constexpr size_t kBlock = 256;
    std::vector<std::vector<double>> node_sum(size_t(g_size), std::vector<double>(count, 0.0));
    std::vector<double> exact(count, 0.0);
    for (int r = 0; r < g_size; ++r)
        for (size_t i = 0; i < count; ++i) {
            const double x = double(T(value(r, i, seed, false)));
            node_sum[size_t(l.node_of[size_t(r)])][i] += x;
            exact[i] += x;
        }
    std::vector<T> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = T(value(g_rank, i, seed, false));
    if (in_place) out = in;
    CHECK(call(comm, in.data(), out.data(), count, mpi_type<T>(), MPI_SUM, in_place) == MPI_SUCCESS,
          "allreduce failed");
    char what[128];
    std::snprintf(what, sizeof what, "quantize:bits=8 %s count=%zu%s", type_name<T>(), count,
                  in_place ? " in place" : "");
    identical(out.data(), count * sizeof(T), what);
    const size_t nb = (count + kBlock - 1) / kBlock;
    std::vector<double> bm(nb, 0.0);
    for (const auto &s : node_sum)
        for (size_t i = 0; i < count; ++i) bm[i / kBlock] = std::max(bm[i / kBlock], std::fabs(s[i]));
    const double L = 127, n = l.nodes;
    for (size_t i = 0; i < count; ++i) {
        const size_t b = i / kBlock;
        double m = bm[b];
        if (b > 0) m = std::max(m, bm[b - 1]);
        if (b + 1 < nb) m = std::max(m, bm[b + 1]);
        m += l.max_node * ulp<T>(m);  // the node sums as rounded
        const double bound = n * (m / (2 * L)) * (1 + 0x1p-32) + ulp<T>(double(out[i])) +
                             n * l.max_node * ulp<T>(m);
        const double err = std::fabs(double(out[i]) - exact[i]);
        CHECK(err <= bound, "%s: element %zu is %.9g, exact %.9g: error %.3g above the bound %.3g", what, i,
              double(out[i]), exact[i], err, bound);
    }
}

std::string error_string(int code) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, s, &len);
    return std::string(s, size_t(len));
}

MPI_Comm make_comm(const char *codec, const char *algorithm = "two_level") {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    CHECK(terse_comm_configure(comm, "codec", codec) == TERSE_OK, "%s", terse_last_error());
    CHECK(terse_comm_configure(comm, "algorithm", algorithm) == TERSE_OK, "%s", terse_last_error());
    CHECK(terse_comm_configure(comm, "chunk_bytes", "16K") == TERSE_OK, "%s", terse_last_error());
    CHECK(terse_comm_configure(comm, "min_bytes", "0") == TERSE_OK, "%s", terse_last_error());
    return comm;
}

// Only rail ranks send between nodes, and they do when there are nodes to
// send to: what terse's statistics show after a call.
void check_rails(MPI_Comm comm, const Layout &l, const char *codec) {
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(comm, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
    CHECK(st.calls_intercepted > 0, "%s: terse's engine ran none of the calls", codec);
    const bool sends = l.on_rail() && l.nodes > 1;
    CHECK((st.bytes_wire > 0) == sends, "%s: rank %d (node rank %d of %d, %d nodes, %d shards) sent %llu bytes",
          codec, g_rank, l.node_rank, l.node_size, l.nodes, l.shards, (unsigned long long)st.bytes_wire);
}

// A local failure on one rank at each step reaches every rank, and the next
// call works.  A rank on no rail has no hops; nor has a rail of one node.
void failures(MPI_Comm comm, const Layout &l, const char *codec) {
    const char *const steps[] = {"start", "begin", "hop:first", "hop:last"};
    const size_t count = 40000;
    std::vector<int> on_rail(static_cast<size_t>(g_size));
    int mine = l.on_rail() ? 1 : 0;
    PMPI_Allgather(&mine, 1, MPI_INT, on_rail.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int cases = 0;
    for (int origin = 0; origin < g_size; origin += std::max(1, g_size / 3)) {
        for (const char *step : steps) {
            const bool hop = std::strchr(step, ':') != nullptr;
            const bool fails = !hop || (on_rail[size_t(origin)] && l.nodes > 1);
            std::vector<float> in(count), out(count);
            for (size_t i = 0; i < count; ++i) in[i] = float(value(g_rank, i, 7, true));
            if (g_rank == origin) CHECK(terse_engine_test_fail_next(step) == 0, "hook refused %s", step);
            int rc = MPI_Allreduce(in.data(), out.data(), int(count), MPI_FLOAT, MPI_SUM, comm);
            terse_engine_test_fail_next(nullptr);
            char what[128];
            std::snprintf(what, sizeof what, "%s: %s on rank %d of %d", codec, step, origin, g_size);
            if (!fails) {
                CHECK(rc == MPI_SUCCESS, "%s: failed where it has no hop: %s", what, error_string(rc).c_str());
            } else {
                CHECK(rc != MPI_SUCCESS, "%s: the call succeeded on rank %d", what, g_rank);
                const std::string text = error_string(rc);
                const char *want = g_rank != origin ? "another rank" : hop ? "corrupt" : "out of memory";
                CHECK(text.find(want) != std::string::npos, "%s: rank %d's error says '%s', expected '%s'", what,
                      g_rank, text.c_str(), want);
                ++cases;
            }
            lossless<int32_t>(comm, 3001, MPI_SUM, false, true, origin);
        }
    }
    if (g_rank == 0) std::printf("  %s: %d injected failures reached every rank\n", codec, cases);
}

void mismatch() {
    MPI_Comm comm = make_comm("none");
    std::vector<float> in(1000, 1.0f), out(1000);
    int rc = MPI_Allreduce(in.data(), out.data(), 1000, MPI_FLOAT, MPI_SUM, comm);
    CHECK(rc != MPI_SUCCESS, "rank %d: the call succeeded with TERSE_NODE_KEY on some ranks only", g_rank);
    const std::string text = error_string(rc), detail = terse_last_error();
    CHECK(text.find("disagree") != std::string::npos, "rank %d's error says '%s'", g_rank, text.c_str());
    CHECK(detail.find("TERSE_NODE_KEY is set on rank 0 (to 'x') but not on rank 1") != std::string::npos,
          "rank %d's last error says '%s'", g_rank, detail.c_str());
    MPI_Comm_free(&comm);
    if (g_rank == 0) std::printf("mismatched TERSE_NODE_KEY: every rank got the error\n");
}

// algorithm=auto, model planner: every size class a few times (so that the
// planner's choice settles, two-level or not), lossless and exact, then
// non-blocking calls on the same communicator (flat schedules only).
void weighed() {
    MPI_Comm comm = make_comm("none", "auto");
    int seed = 100;
    for (int round = 0; round < 4; ++round)
        for (size_t count : {size_t(1000), size_t(50001), size_t(1) << 18})
            for (bool in_place : {false, true}) {
                lossless<float>(comm, count, MPI_SUM, in_place, false, ++seed);
                lossless<int32_t>(comm, count, MPI_SUM, in_place, true, ++seed);
            }
    std::vector<float> in(size_t(1) << 18), out(in.size()), want(in.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = float((i * 7 + size_t(g_rank)) % 13);
    PMPI_Allreduce(in.data(), want.data(), int(in.size()), MPI_FLOAT, MPI_SUM, comm);
    MPI_Request r;
    CHECK(MPI_Iallreduce(in.data(), out.data(), int(in.size()), MPI_FLOAT, MPI_SUM, comm, &r) == MPI_SUCCESS,
          "MPI_Iallreduce failed");
    CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait failed");
    CHECK(out == want, "rank %d: non-blocking allreduce differs from PMPI", g_rank);
    lossless<float>(comm, size_t(1) << 18, MPI_SUM, false, false, ++seed);  // blocking again, after it
    MPI_Comm_free(&comm);
    if (g_rank == 0) std::printf("algorithm=auto, model planner: lossless results exact\n");
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (argc > 1 && std::string(argv[1]) == "mismatch") {
        mismatch();
        MPI_Finalize();
        return 0;
    }
    if (argc > 1 && std::string(argv[1]) == "weighed") {
        weighed();
        MPI_Finalize();
        return 0;
    }
    const Layout l = find_layout();
    if (g_rank == 0)
        std::printf("%d ranks on %d nodes (%d..%d ranks), %d shards\n", g_size, l.nodes, l.shards, l.max_node,
                    l.shards);

    MPI_Comm plain = make_comm("none");
    const size_t counts[] = {1, 5, 1000, 50001};
    int seed = 0;
    for (size_t count : counts)
        for (bool in_place : {false, true}) {
            lossless<int32_t>(plain, count, MPI_SUM, in_place, true, ++seed);
            lossless<int64_t>(plain, count, MPI_SUM, in_place, true, ++seed);
            lossless<int32_t>(plain, count, MPI_MAX, in_place, true, ++seed);
            lossless<float>(plain, count, MPI_SUM, in_place, true, ++seed);
            lossless<double>(plain, count, MPI_SUM, in_place, true, ++seed);
            lossless<float>(plain, count, MPI_SUM, in_place, false, ++seed);
            lossless<double>(plain, count, MPI_MIN, in_place, false, ++seed);
        }
    check_rails(plain, l, "none");

    MPI_Comm q8 = make_comm("quantize:bits=8");
    for (size_t count : {size_t(700), size_t(50001)})
        for (bool in_place : {false, true}) {
            lossy<float>(q8, l, count, in_place, ++seed);
            lossy<double>(q8, l, count, in_place, ++seed);
        }
    check_rails(q8, l, "quantize:bits=8");
    if (g_rank == 0)
        std::printf("  results: lossless exact, quantize:bits=8 within its contract, identical bits\n");

    failures(plain, l, "none");
    failures(q8, l, "quantize:bits=8");
    MPI_Comm_free(&plain);
    MPI_Comm_free(&q8);
    MPI_Finalize();
    return 0;
}
