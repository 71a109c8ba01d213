/*
 * terse-osu-iallreduce: OSU-style MPI_Iallreduce overlap benchmark.
 *
 * Per size, as OSU's osu_iallreduce (5.x, 7.x) measures it:
 *  - pure communication time: MPI_Iallreduce + MPI_Wait, nothing between;
 *  - compute time: a busy loop calibrated to last the pure communication
 *    time, run between MPI_Iallreduce and MPI_Wait (with -t N, N MPI_Test
 *    calls spread evenly through it, OSU's -t); re-calibrated per size and
 *    then after every iteration from the time it took, so that the match
 *    holds while a shared host's load drifts;
 *  - overall time: MPI_Iallreduce to the end of MPI_Wait around that compute;
 *  - overlap % = max(0, 100 * (1 - (overall - compute) / pure)).
 * Times are averaged over iterations, then over ranks (OSU's Avg).
 *
 * The same binary measures the plain MPI library and, under LD_PRELOAD or
 * terse-run, terse: nothing of terse is linked (terse_version is looked up
 * with dlsym only to say in the header whether terse is loaded).
 *
 * -I SECONDS measures the idle cost of the MPI library's (or terse's) helper
 * threads instead: one MPI_Iallreduce completes (so that terse's progress
 * thread has started), then the rank sleeps, then computes, SECONDS each,
 * and reports the CPU time per second of wall time of the whole process and
 * of its threads other than the main one (getrusage RUSAGE_SELF minus
 * RUSAGE_THREAD), and the context switches per second.
 *
 * Buffers hold gradient-like float data (Laplace, per-layer scales, different
 * on every rank), so a compressing codec sees a realistic ratio.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "osu_options.h"
#include "compute_loop.h"

typedef struct options {
    osu_options_t osu; /* -m -i -x -f -L -o */
    int tests;         /* MPI_Test calls during the compute */
    int thread_multiple;
    double idle_seconds;
} options_t;

static int world_rank, world_size;

static void die(const char *fmt, const char *arg) { bench_die("terse-osu-iallreduce", fmt, arg); }

static void usage(void) {
    if (world_rank != 0) return;
    printf("Usage: terse-osu-iallreduce [options]\n"
           "  -m MIN:MAX   message sizes in bytes, powers of two from MIN to MAX\n"
           "               (suffixes K, M, G accepted; \"-m MAX\" alone sets the maximum)\n"
           "  -i N         timed iterations per size (default 1000, 100 above 8 KiB)\n"
           "  -x N         warmup iterations per size (default 200, 10 above 8 KiB)\n"
           "  -t N         MPI_Test calls spread through the compute (default 0)\n"
           "  -f           full table: Min/Max overall time and Iterations columns\n"
           "  -L SECONDS   at most about SECONDS of timed iterations per size (default none)\n"
           "  -M           initialise with MPI_THREAD_MULTIPLE (default: MPI_Init, as OSU)\n"
           "  -I SECONDS   idle cost instead: one MPI_Iallreduce of MAX bytes, then SECONDS of\n"
           "               sleep and SECONDS of compute; CPU time per second of the process\n"
           "               and of its threads other than the main one\n"
           "  -o FORMAT    table (default) or csv; also OSU_BENCH_FORMAT=csv\n"
           "  -h           this help\n"
           "Overlap(%%) = max(0, 100 (1 - (overall - compute) / pure)), from the averages.\n");
}

static void parse_options(int argc, char **argv, options_t *o) {
    memset(o, 0, sizeof *o);
    osu_options_init(&o->osu, 4);
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, OSU_OPTIONS_LETTERS "t:MI:")) != -1) {
        if (osu_options_take(&o->osu, c, optarg, usage, die)) continue;
        switch (c) {
        case 't':
            if (!bench_parse_int(optarg, &o->tests))
                die("-t: expected a count of MPI_Test calls >= 0, got \"%s\"", optarg);
            break;
        case 'M': break; /* read before MPI_Init_thread, see main() */
        case 'I': o->idle_seconds = osu_parse_seconds("-I", optarg, die); break;
        }
    }
    osu_options_finish(&o->osu, argc, argv, die);
    if (o->osu.max_bytes < sizeof(float)) die("-m: MAX must be at least one float (4 bytes)%s", "");
    if (o->osu.max_bytes / sizeof(float) > (size_t)INT32_MAX) die("-m: MAX exceeds INT_MAX elements%s", "");
}

/* --------------------------------------------------------- measurement */

typedef struct result {
    double overall_us, compute_us, pure_us, min_overall_us, max_overall_us, overlap;
    int iterations;
} result_t;

/* The compute between MPI_Iallreduce and MPI_Wait: `units` of the
 * calibrated loop in tests+1 equal parts, MPI_Test after each but the last. */
static void compute_with_tests(double units, int tests, MPI_Request *req) {
    double part = units / (tests + 1);
    for (int k = 0; k <= tests; k++) {
        compute_loop_run(part);
        if (k < tests) {
            int done = 0;
            MPI_Test(req, &done, MPI_STATUS_IGNORE);
        }
    }
}

static double mean_over_ranks(double v) {
    double sum = 0;
    PMPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / world_size;
}

static void one_iallreduce(const float *send, float *recv, int count) {
    MPI_Request req;
    MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
}

static result_t run_size(const options_t *o, size_t bytes, const float *send, float *recv, double units_per_s) {
    int count = (int)(bytes / sizeof(float));
    int iters = osu_iterations_for(&o->osu, bytes);
    int warm = osu_warmup_for(&o->osu, bytes);
    result_t res;
    memset(&res, 0, sizeof res);

    MPI_Barrier(MPI_COMM_WORLD);
    double t_warm = 0;
    for (int i = 0; i < warm; i++) {
        double t0 = MPI_Wtime();
        one_iallreduce(send, recv, count);
        t_warm += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (o->osu.time_limit > 0) {
        /* Both loops (pure, then with compute) take about the pure time per
         * iteration; the slowest rank's estimate decides for all. */
        double mine = warm > 0 ? t_warm / warm : 0, est = 0;
        if (warm == 0) {
            double t0 = MPI_Wtime();
            one_iallreduce(send, recv, count);
            mine = MPI_Wtime() - t0;
        }
        PMPI_Allreduce(&mine, &est, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (est > 0 && 2 * est * iters > o->osu.time_limit) {
            int capped = (int)(o->osu.time_limit / (2 * est));
            iters = capped < 1 ? 1 : capped;
        }
    }

    double pure = 0;
    for (int i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        one_iallreduce(send, recv, count);
        pure += MPI_Wtime() - t0;
    }
    /* Every rank computes the same amount: the ranks' mean pure time,
     * re-calibrated at this length (as OSU does per size: the start-up
     * rate drifts with the load of a shared host). */
    double pure_s = mean_over_ranks(pure / iters);
    double units = pure_s * units_per_s;
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = MPI_Wtime();
    compute_loop_run(units);
    double took = mean_over_ranks(MPI_Wtime() - c0);
    if (took > 0 && units >= 1) units *= pure_s / took;

    double overall = 0, compute = 0;
    for (int i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Request req;
        MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        double c0 = MPI_Wtime();
        compute_with_tests(units, o->tests, &req);
        double took = MPI_Wtime() - c0;
        compute += took;
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        overall += MPI_Wtime() - t0;
        /* Keep the compute matched to the pure time while the host's load
         * drifts (it swings by tens of percent on a shared machine): the
         * next iteration's work follows this one's mean time over ranks. */
        double mean = mean_over_ranks(took);
        if (mean > 0 && units >= 1) units *= pure_s / mean;
    }
    double overall_us = overall * 1e6 / iters;
    res.overall_us = mean_over_ranks(overall_us);
    res.compute_us = mean_over_ranks(compute * 1e6 / iters);
    res.pure_us = pure_s * 1e6;
    PMPI_Allreduce(&overall_us, &res.min_overall_us, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&overall_us, &res.max_overall_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double ov = res.pure_us > 0 ? 100.0 * (1.0 - (res.overall_us - res.compute_us) / res.pure_us) : 0;
    res.overlap = ov < 0 ? 0 : ov > 100 ? 100 : ov;
    res.iterations = iters;
    return res;
}

/* ---------------------------------------------------------- idle cost */

typedef struct cpu_sample {
    double wall, process, main_thread;
    long switches;
} cpu_sample_t;

static double tv_seconds(struct timeval tv) { return (double)tv.tv_sec + tv.tv_usec * 1e-6; }

static cpu_sample_t cpu_now(void) {
    struct rusage self, thread;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_THREAD, &thread);
    cpu_sample_t s;
    s.wall = MPI_Wtime();
    s.process = tv_seconds(self.ru_utime) + tv_seconds(self.ru_stime);
    s.main_thread = tv_seconds(thread.ru_utime) + tv_seconds(thread.ru_stime);
    s.switches = self.ru_nvcsw + self.ru_nivcsw;
    return s;
}

static void sleep_seconds(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {}
}

/* One phase (sleep or compute) of `seconds`; prints the ranks' mean and
 * largest CPU time per second of the process and of its other threads. */
static void idle_phase(const options_t *o, const char *name, int compute, double units_per_s) {
    MPI_Barrier(MPI_COMM_WORLD);
    cpu_sample_t a = cpu_now();
    if (compute) compute_loop_run(o->idle_seconds * units_per_s);
    else sleep_seconds(o->idle_seconds);
    cpu_sample_t b = cpu_now();
    double wall = b.wall - a.wall;
    /* The two getrusage calls are not atomic: clamp a tiny negative. */
    double other = (b.process - a.process) - (b.main_thread - a.main_thread);
    double local[3] = {(b.process - a.process) / wall, other > 0 ? other / wall : 0,
                       (double)(b.switches - a.switches) / wall};
    double sum[3], max[3];
    PMPI_Reduce(local, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(local, max, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (world_rank != 0) return;
    if (o->osu.csv)
        printf("%s,%.3f,%.4f,%.4f,%.5f,%.5f,%.1f,%.1f\n", name, wall, sum[0] / world_size, max[0],
               sum[1] / world_size, max[1], sum[2] / world_size, max[2]);
    else
        printf("%-10s%10.2f%14.4f%14.4f%16.5f%16.5f%14.1f%14.1f\n", name, wall, sum[0] / world_size, max[0],
               sum[1] / world_size, max[1], sum[2] / world_size, max[2]);
    fflush(stdout);
}

/* Threads of this process (Linux /proc), -1 where unknown: shows whether a
 * progress thread was started. */
static int thread_count(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1) break;
    fclose(f);
    return n;
}

static void run_idle(const options_t *o, const float *send, float *recv, double units_per_s) {
    int before = thread_count(), after, range[2];
    one_iallreduce(send, recv, (int)(o->osu.max_bytes / sizeof(float)));
    after = thread_count();
    PMPI_Reduce(&before, &range[0], 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(&after, &range[1], 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank == 0) {
        printf("# Idle cost after one MPI_Iallreduce of %zu bytes: %g s of each phase\n", o->osu.max_bytes,
               o->idle_seconds);
        printf("# Threads per rank (most over ranks): %d before the MPI_Iallreduce, %d after\n", range[0],
               range[1]);
        printf("# cpu = CPU seconds per wall second (user + system, whole process); other = the same\n"
               "# without the main thread (helper and progress threads); switches = context switches/s\n");
        if (o->osu.csv) printf("phase,wall_s,cpu_avg,cpu_max,other_avg,other_max,switches_avg,switches_max\n");
        else
            printf("%-10s%10s%14s%14s%16s%16s%14s%14s\n", "# Phase", "Wall(s)", "CPU avg", "CPU max", "Other avg",
                   "Other max", "Switch/s avg", "Switch/s max");
    }
    idle_phase(o, "sleep", 0, units_per_s);
    idle_phase(o, "compute", 1, units_per_s);
}

/* ---------------------------------------------------------------- output */

static void print_header(const options_t *o, int provided, double units_per_s) {
    printf("# terse-osu-iallreduce: MPI_Iallreduce(MPI_SUM, MPI_FLOAT) overlap\n");
    bench_print_libraries();
    printf("# Ranks: %d\n", world_size);
    printf("# Thread level: %s\n", provided == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "below multiple");
    printf("# Compute loop: %.3g units/s calibrated on every rank at once; MPI_Test calls: %d\n", units_per_s,
           o->tests);
    if (o->idle_seconds > 0) return;
    if (o->osu.time_limit > 0) printf("# Time limit per size: %g s of timed iterations\n", o->osu.time_limit);
    if (o->osu.csv) {
        printf("size,overall_us,compute_us,pure_us,overlap_pct,min_overall_us,max_overall_us,iterations\n");
    } else {
        printf("%-12s%16s%16s%18s%14s", "# Size", "Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)");
        if (o->osu.full) printf("%18s%18s%12s", "Min Overall(us)", "Max Overall(us)", "Iterations");
        printf("\n");
    }
    fflush(stdout);
}

static void print_row(const options_t *o, size_t bytes, const result_t *r) {
    if (o->osu.csv) {
        printf("%zu,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%d\n", bytes, r->overall_us, r->compute_us, r->pure_us,
               r->overlap, r->min_overall_us, r->max_overall_us, r->iterations);
    } else {
        printf("%-12zu%16.2f%16.2f%18.2f%14.2f", bytes, r->overall_us, r->compute_us, r->pure_us, r->overlap);
        if (o->osu.full) printf("%18.2f%18.2f%12d", r->min_overall_us, r->max_overall_us, r->iterations);
        printf("\n");
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    int want = MPI_THREAD_SINGLE;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-M") == 0) want = MPI_THREAD_MULTIPLE;
    const int provided = bench_init_thread(&argc, &argv, want, &world_rank, &world_size);
    options_t o;
    parse_options(argc, argv, &o);
    if (want == MPI_THREAD_MULTIPLE && provided != MPI_THREAD_MULTIPLE)
        die("-M: the MPI library does not provide MPI_THREAD_MULTIPLE%s", "");

    size_t max_count = o.osu.max_bytes / sizeof(float);
    float *send = malloc(o.osu.max_bytes), *recv = malloc(o.osu.max_bytes);
    if (!send || !recv) die("out of memory for %s-byte buffers", "MAX");
    rng_t rng;
    rng_seed(&rng, 12345 * 1000003ULL + (uint64_t)world_rank);
    if (!fill_laplace_float(send, max_count, &rng)) die("out of memory for the data%s", "");
    memset(recv, 0, o.osu.max_bytes);

    double units_per_s = compute_loop_calibrate(MPI_COMM_WORLD);
    if (world_rank == 0) print_header(&o, provided, units_per_s);
    if (o.idle_seconds > 0) {
        run_idle(&o, send, recv, units_per_s);
    } else {
        for (size_t bytes = 1; bytes <= o.osu.max_bytes; bytes *= 2) {
            if (bytes < o.osu.min_bytes || bytes < sizeof(float)) continue;
            result_t r = run_size(&o, bytes, send, recv, units_per_s);
            if (world_rank == 0) print_row(&o, bytes, &r);
        }
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return EXIT_SUCCESS;
}
