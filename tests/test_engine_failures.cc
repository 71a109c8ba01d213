// No rank left waiting: a local failure on one rank, at every step of every
// schedule, reaches every rank as an error under MPI_ERRORS_RETURN, the
// error code explains itself (MPI_Error_string / MPI_Error_class), and the
// next call on the communicator works and gives the right result.
//
//   test_engine_failures CODEC      (CODEC: none, or e.g. quantize:bits=8)
//
// Failures come from the engine's test hook terse_engine_test_fail_next
// (engine.h): "start" and "begin" fail as out of memory would, a hop spoils
// the frame received there as a corrupt transfer would.  Run with
// TERSE_MIN_BYTES=0 under a time limit (a hang fails the test).
#include <mpi.h>
#include <terse/terse.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_check.h"

extern "C" int terse_engine_test_fail_next(const char *where);

namespace {

int g_rank, g_size;
bool g_lossless;

enum class Kind { Allreduce, ReduceScatter, Allgather };

struct Sched {
    const char *name;
    const char *algorithm;
    Kind kind;
};

const Sched kScheds[] = {
    {"ring allreduce", "ring", Kind::Allreduce}, {"ring reduce-scatter", "ring", Kind::ReduceScatter},
    {"ring allgather", "ring", Kind::Allgather}, {"recursive doubling", "recursive_doubling", Kind::Allreduce},
    {"gather", "gather", Kind::Allreduce},
};

const char *const kSteps[] = {"start",    "begin",     "rs:first", "rs:middle", "rs:last",
                              "ag:first", "ag:middle", "ag:last",  "hop:last"};

// Elements per rank's contribution (per block for the reduce-scatter); with
// chunk_bytes=4096 every hop carries several chunks.
constexpr size_t kCount = 3001;

float value(int rank, size_t i) { return float((rank + 1) * int(i % 7 + 1)); }

bool folded_in_recursive_doubling(int rank) {
    int pof2 = 1;
    while (pof2 * 2 <= g_size) pof2 *= 2;
    return rank < 2 * (g_size - pof2) && rank % 2 == 0;
}

// Whether `rank` has the step `step` in schedule s (see engine.h: recursive
// doubling's fold and exchanges are "rs", its returned result "ag"; gather's
// steps are "ag").
bool applies(const Sched &s, const std::string &step, int rank) {
    const bool rs = step.rfind("rs:", 0) == 0, ag = step.rfind("ag:", 0) == 0;
    if (!rs && !ag) return true;
    if (std::string(s.algorithm) == "recursive_doubling" && s.kind == Kind::Allreduce)
        return rs ? !folded_in_recursive_doubling(rank) : folded_in_recursive_doubling(rank);
    if (std::string(s.algorithm) == "gather" && s.kind == Kind::Allreduce) return ag;
    return rs ? s.kind != Kind::Allgather : s.kind != Kind::ReduceScatter;
}

struct Buffers {
    std::vector<float> in, out;
};

Buffers make_buffers(Kind k) {
    Buffers b;
    const size_t n = size_t(g_size);
    b.in.resize(k == Kind::ReduceScatter ? kCount * n : kCount);
    for (size_t i = 0; i < b.in.size(); ++i) b.in[i] = value(g_rank, i);
    b.out.assign(k == Kind::Allgather ? kCount * n : kCount, -1.0f);
    return b;
}

int call(MPI_Comm comm, Kind k, Buffers &b) {
    switch (k) {
    case Kind::Allreduce: return MPI_Allreduce(b.in.data(), b.out.data(), int(kCount), MPI_FLOAT, MPI_SUM, comm);
    case Kind::ReduceScatter:
        return MPI_Reduce_scatter_block(b.in.data(), b.out.data(), int(kCount), MPI_FLOAT, MPI_SUM, comm);
    case Kind::Allgather:
        return MPI_Allgather(b.in.data(), int(kCount), MPI_FLOAT, b.out.data(), int(kCount), MPI_FLOAT, comm);
    }
    return MPI_ERR_OTHER;
}

// The result is right: exact for the lossless codec, within a few
// quantization steps for a lossy one.
void check_result(Kind k, const Buffers &b, const char *what) {
    double max_err = 0, max_ref = 0;
    for (size_t i = 0; i < b.out.size(); ++i) {
        double ref = 0;
        if (k == Kind::Allgather) {
            ref = value(int(i / kCount), i % kCount);
        } else {
            const size_t at = k == Kind::ReduceScatter ? size_t(g_rank) * kCount + i : i;
            for (int q = 0; q < g_size; ++q) ref += value(q, at);
        }
        max_err = std::fmax(max_err, std::fabs(b.out[i] - ref));
        max_ref = std::fmax(max_ref, std::fabs(ref));
    }
    const double bound = g_lossless ? 0.0 : (g_size + 1) * max_ref * std::ldexp(4.0, -8);
    CHECK(max_err <= bound, "%s: result off by %.3g (allowed %.3g)", what, max_err, bound);
}

std::string error_string(int code) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK(MPI_Error_string(code, s, &len) == MPI_SUCCESS, "MPI_Error_string(%d) failed", code);
    return std::string(s, size_t(len));
}

// Every rank got an error; the failing rank's says what failed, the others'
// that another rank failed, each with its own error class.
void check_errors(int rc, bool origin, bool hop, const char *what) {
    CHECK(rc != MPI_SUCCESS, "%s: the call succeeded on rank %d", what, g_rank);
    const std::string text = error_string(rc);
    CHECK(text.rfind("terse: ", 0) == 0, "%s: MPI_Error_string says '%s'", what, text.c_str());
    const char *want = !origin ? "another rank" : hop ? "corrupt" : "out of memory";
    CHECK(text.find(want) != std::string::npos, "%s: MPI_Error_string says '%s', expected '%s'", what,
          text.c_str(), want);
    int cls = 0;
    CHECK(MPI_Error_class(rc, &cls) == MPI_SUCCESS, "%s: MPI_Error_class failed", what);
    CHECK(cls != MPI_ERR_OTHER && cls != MPI_ERR_INTERN, "%s: error class %d is MPI's own", what, cls);
    CHECK(error_string(cls) == text, "%s: class %d says '%s', its code '%s'", what, cls,
          error_string(cls).c_str(), text.c_str());
    // The failing rank's class differs from everyone else's.
    std::vector<int> all(size_t(g_size) * 2);
    int mine[2] = {origin ? 1 : 0, cls};
    PMPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, MPI_COMM_WORLD);
    for (int q = 0; q < g_size; ++q)
        for (int p = 0; p < g_size; ++p)
            if (all[2 * q] != all[2 * p])
                CHECK(all[2 * q + 1] != all[2 * p + 1], "%s: failing and other ranks share class %d", what,
                      all[2 * q + 1]);
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    CHECK(argc == 2, "usage: %s CODEC", argv[0]);
    const char *codec = argv[1];
    g_lossless = std::string(codec) == "none";
    CHECK(terse_engine_test_fail_next("nowhere") == -1, "the test hook accepted a bad spec");

    int cases = 0;
    for (const Sched &s : kScheds) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        CHECK(terse_comm_configure(comm, "codec", codec) == TERSE_OK, "%s", terse_last_error());
        CHECK(terse_comm_configure(comm, "algorithm", s.algorithm) == TERSE_OK, "%s", terse_last_error());
        CHECK(terse_comm_configure(comm, "chunk_bytes", "4096") == TERSE_OK, "%s", terse_last_error());
        CHECK(terse_comm_configure(comm, "min_bytes", "0") == TERSE_OK, "%s", terse_last_error());
        for (const char *step : kSteps) {
            // The failing rank: the first one, from a rotating start, that
            // has such a step in this schedule.
            int origin = -1;
            for (int d = 0; d < g_size && origin < 0; ++d) {
                int q = (cases + d) % g_size;
                if (applies(s, step, q)) origin = q;
            }
            if (origin < 0) continue;  // e.g. no folded rank on 2 ranks
            char what[160];
            snprintf(what, sizeof what, "%s, %s, %s on rank %d of %d", codec, s.name, step, origin, g_size);
            const bool hop = std::strchr(step, ':') != nullptr;

            Buffers b = make_buffers(s.kind);
            if (g_rank == origin) CHECK(terse_engine_test_fail_next(step) == 0, "%s: hook refused", what);
            int rc = call(comm, s.kind, b);
            terse_engine_test_fail_next(nullptr);
            check_errors(rc, g_rank == origin, hop, what);

            // The communicator is usable again, with the right result.
            Buffers again = make_buffers(s.kind);
            rc = call(comm, s.kind, again);
            CHECK(rc == MPI_SUCCESS, "%s: the next call failed: %s", what, error_string(rc).c_str());
            check_result(s.kind, again, what);
            ++cases;
        }
        terse_comm_stats_t st;
        CHECK(terse_comm_stats(comm, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
        CHECK(st.calls_intercepted > 0, "%s: terse's engine ran none of the calls", s.name);
        MPI_Comm_free(&comm);
    }
    if (g_rank == 0)
        printf("failures: %d cases, every rank failed each time and recovered (%s, %d ranks)\n", cases, codec,
               g_size);
    MPI_Finalize();
    return 0;
}
