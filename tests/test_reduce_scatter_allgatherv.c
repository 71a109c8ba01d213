/* MPI_Reduce_scatter (unequal and zero recvcounts) and MPI_Allgatherv
 * (unequal counts, scattered and negative displacements) through terse's
 * engine, in place and not, for float, double and int, against PMPI on the
 * same inputs.  Mode "exact" (a lossless codec): integers and gathered
 * data bit for bit, reduced floats to rounding (MPI adds in another order);
 * mode "lossy" (quantize:bits=8, feedback off): within the codec's
 * contract.  Every rank holds the same allgathered bits, and the per-kind
 * statistics count every call. */
#include "mpi_check.h"

#include <terse/terse.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, lossy;

enum { F32, F64, I32 };
static MPI_Datatype mpi_of(int t) { return t == F32 ? MPI_FLOAT : t == F64 ? MPI_DOUBLE : MPI_INT; }
static size_t esize(int t) { return t == F64 ? 8 : 4; }
static const char *tname(int t) { return t == F32 ? "float" : t == F64 ? "double" : "int"; }

static void put(int t, void *buf, size_t i, double v) {
    if (t == F32) ((float *)buf)[i] = (float)v;
    else if (t == F64) ((double *)buf)[i] = v;
    else ((int *)buf)[i] = (int)v;
}
static double get(int t, const void *buf, size_t i) {
    if (t == F32) return ((const float *)buf)[i];
    if (t == F64) return ((const double *)buf)[i];
    return ((const int *)buf)[i];
}
static double input(int t, size_t i, int r) {
    if (t == I32) return (double)((long)(i * 2654435761u % 10007) - 5003) * (r + 1);
    return sin((double)i * 0.013 + r) * (1.0 + r * 0.25);
}

/* Within the contract: exact for integers and the lossless codec up to the
 * summation order (floats), n * M / 254 (+ ulp) for quantize:bits=8. */
static int close_enough(int t, double got, double want, double maxabs, int terms) {
    if (t == I32) return got == want;
    /* Rounding of a sum of `terms` values up to maxabs, in either order. */
    double ulp = maxabs * terms * (t == F32 ? 1.2e-7 : 2.3e-16) + 1e-300;
    double tol = lossy ? terms * maxabs / 254.0 * (1 + 1e-6) + 4 * ulp : 4 * ulp;
    return fabs(got - want) <= tol;
}

/* Unequal counts with zeros: rank i gets base*(i+1)/2 + i, none for every
 * third rank. */
static void make_counts(int base, int *counts, int *total) {
    *total = 0;
    for (int i = 0; i < size; ++i) {
        counts[i] = (i % 3 == 1) ? 0 : base * (i + 1) / 2 + (base ? i : 0);
        *total += counts[i];
    }
}

static void check_rs(int t, int base, int in_place) {
    int counts[64], total;
    make_counts(base, counts, &total);
    const size_t es = esize(t);
    char *in = malloc((size_t)total * es + 16), *out = malloc((size_t)total * es + 16);
    char *ref = malloc((size_t)counts[rank] * es + 16);
    double maxabs = 0;
    for (int i = 0; i < total; ++i) put(t, in, i, input(t, i, rank));
    for (int i = 0; i < total; ++i)
        for (int r = 0; r < size; ++r) maxabs = fmax(maxabs, fabs(input(t, i, r)));
    PMPI_Reduce_scatter(in, ref, counts, mpi_of(t), MPI_SUM, MPI_COMM_WORLD);
    int rc;
    if (in_place) {
        memcpy(out, in, (size_t)total * es);
        rc = MPI_Reduce_scatter(MPI_IN_PLACE, out, counts, mpi_of(t), MPI_SUM, MPI_COMM_WORLD);
    } else {
        rc = MPI_Reduce_scatter(in, out, counts, mpi_of(t), MPI_SUM, MPI_COMM_WORLD);
    }
    CHECK(rc == MPI_SUCCESS, "MPI_Reduce_scatter returned %d", rc);
    for (int i = 0; i < counts[rank]; ++i)
        CHECK(close_enough(t, get(t, out, i), get(t, ref, i), maxabs, size),
              "reduce_scatter %s base %d in_place %d elem %d: %.9g != %.9g", tname(t), base, in_place, i,
              get(t, out, i), get(t, ref, i));
    free(in);
    free(out);
    free(ref);
}

static void check_agv(int t, int base, int in_place) {
    int counts[64], displs[64], total;
    make_counts(base, counts, &total);
    /* Blocks in reverse order with gaps of 3 elements; rank 1 shifts them
     * all by -5 from a base pointer 5 elements in (negative displacements). */
    const int shift = rank == 1 ? 5 : 0;
    int pos = 0;
    for (int i = size - 1; i >= 0; --i) {
        displs[i] = pos - shift;
        pos += counts[i] + 3;
    }
    const size_t es = esize(t), span = (size_t)pos + 8;
    char *mine = malloc((size_t)counts[rank] * es + 16);
    char *out = calloc(span, es), *ref = calloc(span, es);
    for (int i = 0; i < counts[rank]; ++i) put(t, mine, i, input(t, i, rank));
    char *obase = out + shift * es, *rbase = ref + shift * es;
    PMPI_Allgatherv(mine, counts[rank], mpi_of(t), rbase, counts, displs, mpi_of(t), MPI_COMM_WORLD);
    int rc;
    if (in_place) {
        memcpy(obase + (ptrdiff_t)displs[rank] * (ptrdiff_t)es, mine, (size_t)counts[rank] * es);
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, obase, counts, displs, mpi_of(t), MPI_COMM_WORLD);
    } else {
        rc = MPI_Allgatherv(mine, counts[rank], mpi_of(t), obase, counts, displs, mpi_of(t), MPI_COMM_WORLD);
    }
    CHECK(rc == MPI_SUCCESS, "MPI_Allgatherv returned %d", rc);
    double maxabs = 0;
    for (size_t i = 0; i < span; ++i) maxabs = fmax(maxabs, fabs(get(t, ref, i)));
    for (size_t i = 0; i < span; ++i)
        CHECK(
            lossy ? close_enough(t, get(t, out, i), get(t, ref, i), maxabs, 1) : get(t, out, i) == get(t, ref, i),
            "allgatherv %s base %d in_place %d elem %zu: %.9g != %.9g", tname(t), base, in_place, i,
            get(t, out, i), get(t, ref, i));
    /* Every rank holds the same bits, lossy or not (rank 0's, in rank
     * order: the layouts differ). */
    for (int b = 0; b < size; ++b) {
        char *blk = obase + (ptrdiff_t)displs[b] * (ptrdiff_t)es, *r0 = malloc((size_t)counts[b] * es + 1);
        memcpy(r0, blk, (size_t)counts[b] * es);
        PMPI_Bcast(r0, (int)((size_t)counts[b] * es), MPI_BYTE, 0, MPI_COMM_WORLD);
        CHECK(memcmp(r0, blk, (size_t)counts[b] * es) == 0, "allgatherv %s: block %d differs from rank 0's",
              tname(t), b);
        free(r0);
    }
    free(mine);
    free(out);
    free(ref);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "at most 64 ranks");
    lossy = argc > 1 && strcmp(argv[1], "lossy") == 0;
    const int bases[] = {0, 1, 7, 1000, 40001};
    terse_comm_stats_reset(MPI_COMM_WORLD);
    int calls = 0;
    for (int t = F32; t <= I32; ++t)
        for (unsigned b = 0; b < sizeof bases / sizeof bases[0]; ++b)
            for (int ip = 0; ip < 2; ++ip) {
                check_rs(t, bases[b], ip);
                check_agv(t, bases[b], ip);
                /* A lossy codec takes floating-point data only. */
                calls += (!lossy || t != I32);
            }
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(MPI_COMM_WORLD, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
    CHECK((int)st.per_kind[TERSE_KIND_REDUCE_SCATTER].calls == calls &&
              (int)st.per_kind[TERSE_KIND_ALLGATHERV].calls == calls,
          "per kind: reduce_scatter %llu, allgatherv %llu of %d calls",
          (unsigned long long)st.per_kind[TERSE_KIND_REDUCE_SCATTER].calls,
          (unsigned long long)st.per_kind[TERSE_KIND_ALLGATHERV].calls, calls);
    CHECK(st.calls_intercepted == 2u * (unsigned)calls && st.per_kind[TERSE_KIND_ALLREDUCE].calls == 0,
          "intercepted %llu, allreduce %llu", (unsigned long long)st.calls_intercepted,
          (unsigned long long)st.per_kind[TERSE_KIND_ALLREDUCE].calls);
    /* Wire bytes per kind add up to the total. */
    uint64_t wire = 0, in = 0;
    for (int k = 0; k < TERSE_KIND_COUNT; ++k) {
        wire += st.per_kind[k].bytes_wire;
        in += st.per_kind[k].bytes_in;
    }
    CHECK(wire == st.bytes_wire && in == st.bytes_in, "per-kind bytes %llu/%llu, totals %llu/%llu",
          (unsigned long long)wire, (unsigned long long)in, (unsigned long long)st.bytes_wire,
          (unsigned long long)st.bytes_in);
    uint64_t rs_wire = st.per_kind[TERSE_KIND_REDUCE_SCATTER].bytes_wire, all_wire = 0;
    PMPI_Allreduce(&rs_wire, &all_wire, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(size == 1 || all_wire > 0, "no reduce-scatter wire bytes counted on any rank");
    MPI_Finalize();
    return 0;
}
