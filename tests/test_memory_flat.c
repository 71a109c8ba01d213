/* Memory stays bounded: the resident set must not grow over many eligible
 * allreduces on one communicator, nor over many rounds of communicator
 * create / use / free, and a steady stream of calls must not fault its
 * buffers in again every call (scratch memory unmapped and mapped anew).
 *
 *   test_memory_flat [CALLS [ROUNDS [BYTES]]]
 *
 * make check runs short counts; the figures in perf/README.md come from
 * CALLS=100000 ROUNDS=10000 (1 MiB).  Every count is measured after a
 * warm-up (the first tenth, at least 20) that fills the caches a steady
 * state keeps. */
#include "mpi_check.h"
#include "proc_memory.h"

#include <terse/terse.h>

#include <stdio.h>
#include <stdlib.h>

/* Growth allowed over the measured part of either loop: far below one
 * leaked buffer per call or per communicator (a 1 MiB input, or a chunk
 * of scratch, leaked every 100 iterations would exceed it in the short
 * run already), above the noise of the MPI library's own caches. */
enum { SLACK_KIB = 2048 };
/* Minor page faults allowed per call in the steady state.  Re-faulting the
 * scratch of a 1 MiB call costs at least 256 (4 KiB pages). */
enum { MAX_FAULTS_PER_CALL = 8 };

static int g_rank, g_size;

static void allreduce_checked(MPI_Comm c, float *buf, int count) {
    for (int i = 0; i < count; i += 4096) buf[i] = 1.0f;
    buf[count - 1] = 1.0f;
    CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, c) == MPI_SUCCESS, "allreduce: %s",
          terse_last_error());
    CHECK(buf[0] == (float)g_size && buf[count - 1] == (float)g_size, "got %f, %f want %d", buf[0],
          buf[count - 1], g_size);
}

static long warmup_of(long n) { return n / 10 > 20 ? n / 10 : 20; }

/* The largest RSS growth over the measured part on any rank, and its
 * figures for the report. */
static void report(const char *what, long n, long base, long end, long peak, long faults, long calls) {
    long grown = end - base, worst = 0;
    MPI_Allreduce(&grown, &worst, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    double per_call = calls > 0 ? (double)faults / (double)calls : 0.0, worst_per_call = 0;
    MPI_Allreduce(&per_call, &worst_per_call, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("%s: %ld after warm-up: RSS %ld -> %ld KiB (peak %ld, growth %ld KiB on the worst rank)", what, n,
               base, end, peak, worst);
        if (calls > 0) printf(", %.2f minor faults per call", worst_per_call);
        printf("\n");
    }
    CHECK(worst < SLACK_KIB, "%s: RSS grew by %ld KiB over %ld iterations (slack %d KiB)", what, worst, n,
          SLACK_KIB);
    CHECK(worst_per_call <= MAX_FAULTS_PER_CALL,
          "%s: %.1f minor page faults per call (at most %d): buffers "
          "are mapped anew every call",
          what, worst_per_call, MAX_FAULTS_PER_CALL);
}

static void calls_loop(long calls, int count) {
    float *buf = calloc((size_t)count, sizeof(float));
    CHECK(buf, "out of memory");
    long warm = warmup_of(calls), base = 0, peak = 0, f0 = 0;
    for (long i = 0; i < warm + calls; ++i) {
        if (i == warm) {
            base = rss_kib();
            f0 = minor_faults();
        }
        allreduce_checked(MPI_COMM_WORLD, buf, count);
        if (i >= warm && (i & 255) == 0) {
            long r = rss_kib();
            if (r > peak) peak = r;
        }
    }
    long faults = minor_faults() - f0, end = rss_kib();
    if (end > peak) peak = end;
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(MPI_COMM_WORLD, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
    CHECK(st.calls_intercepted == (uint64_t)(warm + calls), "intercepted %llu of %ld calls",
          (unsigned long long)st.calls_intercepted, warm + calls);
    report("eligible allreduces", calls, base, end, peak, faults, calls);
    free(buf);
}

static void rounds_loop(long rounds, int count) {
    float *buf = calloc((size_t)count, sizeof(float));
    CHECK(buf, "out of memory");
    long warm = warmup_of(rounds), base = 0, peak = 0;
    for (long r = 0; r < warm + rounds; ++r) {
        if (r == warm) base = rss_kib();
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        allreduce_checked(c, buf, count);
        terse_comm_stats_t st;
        CHECK(terse_comm_stats(c, &st, sizeof st) == TERSE_OK && st.calls_intercepted == 1,
              "round %ld: the allreduce on the new communicator was not intercepted", r);
        MPI_Comm_free(&c);
        if (r >= warm && (r & 63) == 0) {
            long k = rss_kib();
            if (k > peak) peak = k;
        }
    }
    long end = rss_kib();
    if (end > peak) peak = end;
    report("communicator dup/allreduce/free rounds", rounds, base, end, peak, 0, 0);
    free(buf);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    long calls = argc > 1 ? atol(argv[1]) : 1000;
    long rounds = argc > 2 ? atol(argv[2]) : 500;
    long bytes = argc > 3 ? atol(argv[3]) : 1L << 20;
    CHECK(calls >= 0 && rounds >= 0 && bytes >= 4 && bytes / 4 <= 0x7fffffffL, "bad arguments");
    int count = (int)(bytes / 4);
    if (calls) calls_loop(calls, count);
    if (rounds) rounds_loop(rounds, count);
    MPI_Finalize();
    return 0;
}
