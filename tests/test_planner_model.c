/* The model planner (TERSE_PLANNER=model) end to end: whatever it chooses
 * for each call (the MPI library, the lossless engine or the codec), the
 * result matches PMPI_Allreduce (exactly with a lossless codec, within a
 * tolerance otherwise), every rank receives the same bits, and every rank
 * made the same choices (the same counts of calls taken and passed).
 * Neither the planner's measurements nor the engine's agreements start a
 * non-blocking collective or make a communicator of the MPI library's
 * (engine/link_agreement.h): counted by the shims below, which this
 * executable exports (-rdynamic) so that they interpose on the MPI
 * library for the preloaded terse.
 *   test_planner_model lossless
 *   test_planner_model lossy TOL     max |r - exact| <= TOL * n * max|x|
 */
#define _GNU_SOURCE
#include "mpi_check.h"

#include <terse/terse.h>

#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int g_nonblocking, g_comms;  // started by anyone but this file's main()

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))
int PMPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *q) {
    ++g_nonblocking;
    return NEXT(PMPI_Iallreduce)(s, r, n, t, o, c, q);
}
int PMPI_Ireduce_scatter(const void *s, void *r, const int *n, MPI_Datatype t, MPI_Op o, MPI_Comm c,
                         MPI_Request *q) {
    ++g_nonblocking;
    return NEXT(PMPI_Ireduce_scatter)(s, r, n, t, o, c, q);
}
int PMPI_Iallgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *d,
                     MPI_Datatype rt, MPI_Comm c, MPI_Request *q) {
    ++g_nonblocking;
    return NEXT(PMPI_Iallgatherv)(s, sn, st, r, rn, d, rt, c, q);
}
int PMPI_Iallgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c,
                    MPI_Request *q) {
    ++g_nonblocking;
    return NEXT(PMPI_Iallgather)(s, sn, st, r, rn, rt, c, q);
}
int PMPI_Comm_dup(MPI_Comm c, MPI_Comm *out) {
    ++g_comms;
    return NEXT(PMPI_Comm_dup)(c, out);
}
int PMPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *out) {
    ++g_comms;
    return NEXT(PMPI_Comm_split)(c, color, key, out);
}
int PMPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *out) {
    ++g_comms;
    return NEXT(PMPI_Comm_split_type)(c, type, key, info, out);
}

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; ++i) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void same_on_every_rank(uint64_t v, const char *what) {
    uint64_t lo = 0, hi = 0;
    PMPI_Allreduce(&v, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&v, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "%s differs between ranks", what);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc >= 2, "usage: %s lossless | lossy TOL", argv[0]);
    const int lossless = strcmp(argv[1], "lossless") == 0;
    const double tol = lossless ? 0 : (argc > 2 ? atof(argv[2]) : 0.05);

    const size_t counts[] = {16384, 65536, 262144, 1048576};
    const size_t maxn = 1048576;
    float *in = malloc(maxn * sizeof *in), *out = malloc(maxn * sizeof *out), *ref = malloc(maxn * sizeof *ref);
    double *din = malloc(maxn / 4 * sizeof *din), *dout = malloc(maxn / 4 * sizeof *dout),
           *dref = malloc(maxn / 4 * sizeof *dref);
    int32_t *iin = malloc(maxn / 4 * sizeof *iin), *iout = malloc(maxn / 4 * sizeof *iout),
            *iref = malloc(maxn / 4 * sizeof *iref);
    CHECK(in && out && ref && din && dout && dref && iin && iout && iref, "out of memory");
    for (int rep = 0; rep < 6; ++rep) {
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
            const size_t n = counts[c];
            for (size_t i = 0; i < n; ++i)
                in[i] = (float)sin(0.001 * (double)(i * (rank + 3) + rep)) * (1.0f + rank);
            MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            PMPI_Allreduce(in, ref, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double maxabs = 0, err = 0;
            for (size_t i = 0; i < n; ++i) {
                if (fabs(in[i]) > maxabs) maxabs = fabs(in[i]);
                const double d = fabs((double)out[i] - (double)ref[i]);
                if (d > err) err = d;
            }
            PMPI_Allreduce(MPI_IN_PLACE, &maxabs, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            // Two ranks' float sum is one addition either way; with more, the
            // engine's ring and the MPI library may add in another order, so
            // a lossless sum is held to the rounding of n additions.
            if (lossless && size <= 2)
                CHECK(memcmp(out, ref, n * sizeof *out) == 0, "float sum of %zu differs from PMPI", n);
            else if (lossless)
                CHECK(err <= size * size * FLT_EPSILON * maxabs, "float sum of %zu: error %g above rounding %g",
                      n, err, size * size * FLT_EPSILON * maxabs);
            else
                CHECK(err <= tol * size * maxabs + 1e-6 * maxabs, "float sum of %zu: error %g above %g", n, err,
                      tol * size * maxabs);
            same_on_every_rank(hash_bytes(out, n * sizeof *out), "the float result");
        }
        /* Integers and MAX: lossless paths only, exact always. */
        const size_t m = maxn / 4;
        for (size_t i = 0; i < m; ++i) iin[i] = (int32_t)(i * 2654435761u) ^ rank;
        MPI_Allreduce(iin, iout, (int)m, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        PMPI_Allreduce(iin, iref, (int)m, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        CHECK(memcmp(iout, iref, m * sizeof *iout) == 0, "int32 sum differs from PMPI");
        for (size_t i = 0; i < m; ++i) din[i] = cos((double)i + rank);
        MPI_Allreduce(din, dout, (int)m, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        PMPI_Allreduce(din, dref, (int)m, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        CHECK(memcmp(dout, dref, m * sizeof *dout) == 0, "double max differs from PMPI");
    }
    terse_comm_stats_t st;
    memset(&st, 0, sizeof st);
    CHECK(terse_comm_stats(MPI_COMM_WORLD, &st, sizeof st) == TERSE_OK, "terse_comm_stats");
    same_on_every_rank(st.calls_intercepted, "the number of calls the engine took");
    same_on_every_rank(st.calls_passed, "the number of calls passed to the MPI library");
    if (rank == 0)
        printf("planner: intercepted=%llu passed=%llu\n", (unsigned long long)st.calls_intercepted,
               (unsigned long long)st.calls_passed);
    int counted[2] = {g_nonblocking, g_comms}, total[2];
    PMPI_Allreduce(counted, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total[0] == 0, "terse started %d non-blocking collectives of the MPI library", total[0]);
    CHECK(total[1] == 0, "terse made %d communicators", total[1]);
    free(in);
    free(out);
    free(ref);
    free(din);
    free(dout);
    free(dref);
    free(iin);
    free(iout);
    free(iref);
    MPI_Finalize();
    return 0;
}
