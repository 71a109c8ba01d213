// End to end through libterse: MPI_Allreduce is intercepted and run by the
// engine (TERSE_MIN_BYTES=0), and every result is checked against the MPI
// library's own PMPI_Allreduce.  Run by test_engine_allreduce.sh for several
// communicator sizes and algorithms (TERSE_ALGORITHM).
//
//   test_engine_allreduce exact [big]   lossless codec: integers and MAX/MIN
//                                       bit-exact, float sums within n*eps*sum|x|
//   test_engine_allreduce lossy BITS    quantize codec: bounded, identical on all ranks
//   test_engine_allreduce poison        a corrupt frame on one rank: every rank
//                                       gets an error, nothing hangs, comm still usable
#include <mpi.h>
#include <terse/terse.h>

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <typeinfo>
#include <vector>

#include "mpi_check.h"

extern "C" void terse_engine_test_corrupt_next_sends(int count);

namespace {

int g_rank, g_size;

// Input of rank r, element i: deterministic, so every rank can compute any
// rank's input (for tolerances) without communicating.
double value(int r, size_t i, int seed) {
    uint64_t x = (uint64_t(r) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(i) * 0xBF58476D1CE4E5B9ull) ^ uint64_t(seed);
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return (double(x >> 11) / double(1ull << 53) * 2.0 - 1.0) * (r + 1);
}

template <typename T>
T make(int r, size_t i, int seed) {
    double v = value(r, i, seed);
    if constexpr (std::is_same_v<T, int32_t>) return int32_t(std::lround(v * 1000));
    else if constexpr (std::is_same_v<T, int64_t>) return int64_t(std::llround(v * 1e12));
    else return T(v);
}

uint64_t fnv(const void *p, size_t n) {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

// Every rank of comm holds the same bits.
void check_identical(MPI_Comm comm, const void *buf, size_t bytes, const char *what) {
    uint64_t h = fnv(buf, bytes), hmax = 0, hmin = 0;
    PMPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, comm);
    PMPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, comm);
    CHECK(hmax == hmin, "%s: ranks hold different results", what);
}

uint64_t intercepted(MPI_Comm comm) {
    terse_comm_stats_t s;
    CHECK(terse_comm_stats(comm, &s, sizeof s) == TERSE_OK, "terse_comm_stats: %s", terse_last_error());
    return s.calls_intercepted;
}

template <typename T>
MPI_Datatype mpi_type() {
    if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
    else if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
    else if constexpr (std::is_same_v<T, int32_t>) return MPI_INT32_T;
    else return MPI_INT64_T;
}

const char *op_name(MPI_Op op) { return op == MPI_SUM ? "sum" : op == MPI_MAX ? "max" : "min"; }

template <typename T>
void run_exact(MPI_Comm comm, size_t count, MPI_Op op, bool in_place, int seed) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    std::vector<T> in(count), out(count + 4), ref(count + 1);
    for (size_t i = 0; i < count; ++i) in[i] = make<T>(rank, i, seed);
    const T canary = T(123);
    for (size_t j = count; j < count + 4; ++j) out[j] = canary;
    MPI_Datatype t = mpi_type<T>();
    char what[160];
    snprintf(what, sizeof what, "%s count=%zu op=%s in_place=%d size=%d", typeid(T).name(), count, op_name(op),
             int(in_place), size);

    uint64_t before = intercepted(comm);
    int rc;
    if (in_place) {
        std::memcpy(out.data(), in.data(), count * sizeof(T));
        rc = MPI_Allreduce(MPI_IN_PLACE, out.data(), int(count), t, op, comm);
    } else {
        rc = MPI_Allreduce(in.data(), out.data(), int(count), t, op, comm);
    }
    CHECK(rc == MPI_SUCCESS, "%s: MPI_Allreduce returned %d", what, rc);
    CHECK(intercepted(comm) == before + 1, "%s: call was not run by terse", what);
    for (size_t j = count; j < count + 4; ++j) CHECK(out[j] == canary, "%s: wrote past the end", what);
    if (!in_place) {
        for (size_t i = 0; i < count; ++i)
            CHECK(in[i] == make<T>(rank, i, seed), "%s: send buffer modified", what);
    }
    PMPI_Allreduce(in.data(), ref.data(), int(count), t, op, comm);

    if (std::is_integral_v<T> || op != MPI_SUM) {
        CHECK(std::memcmp(out.data(), ref.data(), count * sizeof(T)) == 0, "%s: differs from PMPI_Allreduce",
              what);
    } else {
        const double eps = sizeof(T) == 4 ? 1.2e-7 : 2.3e-16;
        for (size_t i = 0; i < count; ++i) {
            double sum_abs = 0, exact = 0;
            for (int q = 0; q < size; ++q) {
                double v = double(make<T>(q, i, seed));
                sum_abs += std::fabs(v);
                exact += v;
            }
            double tol = 2 * size * eps * sum_abs;
            CHECK(std::fabs(double(out[i]) - exact) <= tol,
                  "%s: element %zu = %.17g, exact %.17g (tolerance %.3g)", what, i, double(out[i]), exact, tol);
        }
    }
    check_identical(comm, out.data(), count * sizeof(T), what);
}

template <typename T>
void sweep(MPI_Comm comm, const std::vector<size_t> &counts, int seed) {
    for (size_t count : counts)
        for (MPI_Op op : {MPI_SUM, MPI_MAX, MPI_MIN})
            for (bool in_place : {false, true}) run_exact<T>(comm, count, op, in_place, seed++);
}

int mode_exact(bool big) {
    for (MPI_Comm comm : {MPI_COMM_WORLD}) {
        int size;
        MPI_Comm_size(comm, &size);
        std::vector<size_t> counts = {0, 1, 2, size_t(size > 1 ? size - 1 : 3), 7, 31, 1000, 65537};
        sweep<float>(comm, counts, 1);
        sweep<double>(comm, counts, 2);
        sweep<int32_t>(comm, counts, 3);
        sweep<int64_t>(comm, counts, 4);
        if (big) {
            run_exact<float>(comm, size_t(1) << 20, MPI_SUM, false, 5);
            run_exact<float>(comm, 3145739, MPI_SUM, true, 6);  // prime near 3 Mi
            run_exact<int64_t>(comm, 1000003, MPI_MAX, false, 7);
        }
    }
    // A sub-communicator whose ranks are not the world's (odd/even split):
    // the engine must address peers by their world rank.
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_size - g_rank, &half);
    for (size_t count : {size_t(5), size_t(4097), size_t(100000)}) {
        run_exact<double>(half, count, MPI_SUM, false, 11);
        run_exact<int32_t>(half, count, MPI_MIN, true, 12);
    }
    MPI_Comm_free(&half);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_exact<float>(dup, 12345, MPI_SUM, false, 13);
    MPI_Comm_free(&dup);
    return 0;
}

// quantize:bits=B: every rank holds the same bits and the error is small
// relative to the data; TERSE_VERIFY recorded it.
int mode_lossy(int bits) {
    for (size_t count : {size_t(1), size_t(1000), size_t(300007)})
        for (bool in_place : {false, true}) {
            std::vector<float> in(count), out(count);
            for (size_t i = 0; i < count; ++i) in[i] = make<float>(g_rank, i, 21);
            if (in_place) {
                out = in;
                CHECK(MPI_Allreduce(MPI_IN_PLACE, out.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
                          MPI_SUCCESS,
                      "lossy allreduce failed");
            } else {
                CHECK(MPI_Allreduce(in.data(), out.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
                          MPI_SUCCESS,
                      "lossy allreduce failed");
            }
            double max_sum_abs = 0, max_err = 0;
            for (size_t i = 0; i < count; ++i) {
                double exact = 0, sa = 0;
                for (int q = 0; q < g_size; ++q) {
                    double v = make<float>(q, i, 21);
                    exact += v;
                    sa += std::fabs(v);
                }
                max_sum_abs = std::max(max_sum_abs, sa);
                max_err = std::max(max_err, std::fabs(out[i] - exact));
            }
            // A b-bit quantizer is off by at most a few steps of the block range per hop.
            double bound = (g_size + 1) * max_sum_abs * std::ldexp(4.0, -bits);
            CHECK(max_err <= bound, "lossy count=%zu: error %.3g above %.3g", count, max_err, bound);
            check_identical(MPI_COMM_WORLD, out.data(), count * sizeof(float), "lossy");
        }
    terse_comm_stats_t s;
    terse_comm_stats(MPI_COMM_WORLD, &s, sizeof s);
    CHECK(s.calls_intercepted == 6, "expected 6 intercepted calls, got %" PRIu64, s.calls_intercepted);
    if (g_size > 1) CHECK(s.bytes_wire < s.bytes_wire_raw, "lossy codec did not shrink the wire bytes");
    if (getenv("TERSE_VERIFY") && g_size > 1)
        CHECK(s.max_abs_error > 0, "TERSE_VERIFY recorded no error for a lossy codec");
    return 0;
}

// Rank 1 corrupts its next frame: every rank's MPI_Allreduce must fail (not
// hang), and the communicator keeps working afterwards.
int mode_poison() {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const size_t count = 200000;
    std::vector<float> in(count, 1.0f), out(count);
    for (int round = 0; round < 2; ++round) {
        if (g_rank == 1) terse_engine_test_corrupt_next_sends(1);
        int rc = MPI_Allreduce(in.data(), out.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        terse_engine_test_corrupt_next_sends(0);
        CHECK(rc != MPI_SUCCESS, "round %d: allreduce succeeded although rank 1 sent a corrupt frame", round);
        int ok = 1, all_ok = 0;
        PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        rc = MPI_Allreduce(in.data(), out.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "allreduce after a failed one returned %d", rc);
        for (size_t i = 0; i < count; i += 997) CHECK(out[i] == float(g_size), "wrong result after recovery");
    }
    if (g_rank == 0) printf("poison: every rank failed twice and recovered\n");
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    std::string mode = argc > 1 ? argv[1] : "exact";
    int rc;
    if (mode == "exact") rc = mode_exact(argc > 2 && std::string(argv[2]) == "big");
    else if (mode == "lossy") rc = mode_lossy(argc > 2 ? atoi(argv[2]) : 8);
    else if (mode == "poison") rc = mode_poison();
    else {
        fprintf(stderr, "usage: %s exact [big] | lossy BITS | poison\n", argv[0]);
        rc = 2;
    }
    if (rc == 0 && g_rank == 0) printf("%s: ok (size %d)\n", mode.c_str(), g_size);
    MPI_Finalize();
    return rc;
}
