/*
 * terse-osu-allreduce: OSU-style MPI_Allreduce latency benchmark with
 * realistic data and compression columns.
 *
 * It is an ordinary MPI program: run it as is for the plain MPI library, or
 * under terse (LD_PRELOAD=libterse.so, terse-run) to measure terse.  The same
 * binary serves both, so terse's statistics are looked up at run time with
 * dlsym(RTLD_DEFAULT, ...) instead of being linked.
 *
 * Differences from osu_allreduce, and why:
 *  - buffers hold realistic data (heavy-tailed gradients, Gaussian, smooth
 *    fields or a file), different on every rank; constant buffers make any
 *    compression ratio and any error figure meaningless;
 *  - WireRatio: bytes an uncompressed schedule would send / bytes sent, from
 *    terse_comm_stats() when terse is present ("-" otherwise);
 *  - MaxAbsErr / MaxRelErr: the result against an exact reference computed
 *    once per size with PMPI_Allreduce in double precision on the same
 *    inputs (PMPI_ so that terse never intercepts the reference);
 *  - BusBW: nccl-tests' allreduce bus bandwidth, size/avg * 2(n-1)/n;
 *  - -L caps the time spent per size so slow emulated links stay usable.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osu_options.h"

/* Mirror of terse_comm_stats_t from <terse/terse.h>.  Kept local so the
 * benchmark builds and runs without terse; the size argument of
 * terse_comm_stats() lets terse check that the layouts agree. */
typedef struct bench_terse_stats {
    uint64_t calls_intercepted, calls_passed, bytes_in, bytes_wire, bytes_wire_raw, chunks_raw;
    double seconds_total, seconds_encode, seconds_decode, seconds_wait, max_abs_error, max_rel_error;
} bench_terse_stats_t;
typedef int (*stats_fn)(MPI_Comm, bench_terse_stats_t *, size_t);
typedef int (*stats_reset_fn)(MPI_Comm);

enum data_kind { DATA_LAPLACE, DATA_GAUSS, DATA_SMOOTH, DATA_FILE };

typedef struct options {
    osu_options_t osu; /* -m -i -x -f -L -o */
    int use_double;
    enum data_kind kind;
    const char *file;
    int check;
    double tolerance; /* < 0: lossless default */
    uint64_t seed;
} options_t;

static int world_rank, world_size;

static void die(const char *fmt, const char *arg) { bench_die("terse-osu-allreduce", fmt, arg); }

static void usage(void) {
    if (world_rank != 0) return;
    printf("Usage: terse-osu-allreduce [options]\n"
           "  -m MIN:MAX   message sizes in bytes, powers of two from MIN to MAX\n"
           "               (suffixes K, M, G accepted; \"-m MAX\" alone sets the maximum)\n"
           "  -i N         timed iterations per size (default 1000, 100 above 8 KiB)\n"
           "  -x N         warmup iterations per size (default 200, 10 above 8 KiB)\n"
           "  -f           full table: Min/Max latency and Iterations columns\n"
           "  -d TYPE      float (default) or double\n"
           "  -t KIND      data: laplace (default; heavy-tailed gradient-like), gauss,\n"
           "               smooth (sum of sinusoids), file:PATH (raw little-endian float32,\n"
           "               tiled; each rank starts at a different offset)\n"
           "  -s SEED      base random seed (default 12345; every rank derives its own)\n"
           "  -c           check: every rank holds identical bits and MaxRelErr <= tolerance;\n"
           "               exit status 1 when a size fails\n"
           "  -e TOL       tolerance for -c (default: float rounding of a lossless sum)\n"
           "  -L SECONDS   at most about SECONDS of timed iterations per size (default none)\n"
           "  -o FORMAT    table (default) or csv; also OSU_BENCH_FORMAT=csv\n"
           "  -h           this help\n"
           "Latency is the time of one MPI_Allreduce averaged over iterations; Avg/Min/Max\n"
           "are over ranks.  BusBW = size/avg * 2(n-1)/n (nccl-tests).  WireRatio needs terse.\n");
}

static void parse_options(int argc, char **argv, options_t *o) {
    memset(o, 0, sizeof *o);
    osu_options_init(&o->osu, 0);
    o->kind = DATA_LAPLACE;
    o->tolerance = -1;
    o->seed = 12345;
    int c;
    opterr = 0;
    while ((c = getopt(argc, argv, OSU_OPTIONS_LETTERS "d:t:s:ce:")) != -1) {
        if (osu_options_take(&o->osu, c, optarg, usage, die)) continue;
        switch (c) {
        case 'd':
            if (strcmp(optarg, "float") == 0) o->use_double = 0;
            else if (strcmp(optarg, "double") == 0) o->use_double = 1;
            else die("-d: expected float or double, got \"%s\"", optarg);
            break;
        case 't':
            if (strcmp(optarg, "laplace") == 0) o->kind = DATA_LAPLACE;
            else if (strcmp(optarg, "gauss") == 0) o->kind = DATA_GAUSS;
            else if (strcmp(optarg, "smooth") == 0) o->kind = DATA_SMOOTH;
            else if (strncmp(optarg, "file:", 5) == 0 && optarg[5]) o->kind = DATA_FILE, o->file = optarg + 5;
            else die("-t: expected laplace, gauss, smooth or file:PATH, got \"%s\"", optarg);
            break;
        case 's': {
            char *end;
            o->seed = strtoull(optarg, &end, 10);
            if (end == optarg || *end) die("-s: expected an integer seed, got \"%s\"", optarg);
            break;
        }
        case 'c': o->check = 1; break;
        case 'e': {
            char *end;
            o->tolerance = strtod(optarg, &end);
            if (end == optarg || *end || !(o->tolerance >= 0))
                die("-e: expected a tolerance >= 0, got \"%s\"", optarg);
            break;
        }
        }
    }
    osu_options_finish(&o->osu, argc, argv, die);
}

/* ------------------------------------------------------------------ data */

static double rng_gauss(rng_t *r) {
    double u = rng_unit(r), v = rng_unit(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static void fill_gauss(double *x, size_t n, rng_t *r) {
    for (size_t i = 0; i < n; i++) x[i] = 1e-2 * rng_gauss(r);
}

/* A smooth field: a few sinusoids of long wavelength whose amplitudes and
 * phases differ per rank, plus a rank-dependent offset. */
static void fill_smooth(double *x, size_t n, rng_t *r) {
    double amp[4], wav[4], ph[4];
    for (int k = 0; k < 4; k++) {
        amp[k] = 0.5 + rng_unit(r);
        wav[k] = 1000.0 * (k + 1) * (0.5 + rng_unit(r));
        ph[k] = 6.283185307179586 * rng_unit(r);
    }
    double offset = rng_gauss(r);
    for (size_t i = 0; i < n; i++) {
        double v = offset;
        for (int k = 0; k < 4; k++) v += amp[k] * sin(6.283185307179586 * (double)i / wav[k] + ph[k]);
        x[i] = v;
    }
}

/* Raw float32 file, tiled to n elements; rank r starts r/size of the way in
 * so that ranks hold different data. */
static void fill_file(double *x, size_t n, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) die("-t file: cannot open \"%s\"", path);
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    size_t m = bytes > 0 ? (size_t)bytes / sizeof(float) : 0;
    if (m == 0) {
        fclose(f);
        die("-t file: \"%s\" holds no float32 values", path);
    }
    float *buf = malloc(m * sizeof(float));
    if (!buf || fread(buf, sizeof(float), m, f) != m) {
        fclose(f);
        die("-t file: cannot read \"%s\"", path);
    }
    fclose(f);
    size_t start = (size_t)((double)m * world_rank / world_size);
    for (size_t i = 0; i < n; i++) x[i] = buf[(start + i) % m];
    free(buf);
}

static const char *kind_name(const options_t *o) {
    switch (o->kind) {
    case DATA_LAPLACE: return "laplace (heavy-tailed gradient-like, per-rank seed)";
    case DATA_GAUSS: return "gauss (N(0,0.01), per-rank seed)";
    case DATA_SMOOTH: return "smooth (sum of sinusoids, per-rank phases)";
    case DATA_FILE: return o->file;
    }
    return "?";
}

/* --------------------------------------------------------- measurement */

typedef struct result {
    double avg_us, min_us, max_us;
    int iterations;
    double max_abs, max_rel;
    int identical;
    int have_ratio;
    double ratio;
    uint64_t intercepted;
} result_t;

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* Reference in double precision over chunks so memory stays bounded at any
 * message size.  PMPI_ so terse never touches the reference. */
#define REF_CHUNK 1048576
static void compare_with_reference(const double *input, const void *result, size_t count, int is_double,
                                   double *max_abs, double *max_rel) {
    double *in = malloc(REF_CHUNK * sizeof(double)), *ref = malloc(REF_CHUNK * sizeof(double));
    if (!in || !ref) die("out of memory for the reference%s", "");
    double err = 0, amax = 0;
    int nonfinite = 0;
    for (size_t off = 0; off < count; off += REF_CHUNK) {
        int n = (int)(count - off < REF_CHUNK ? count - off : REF_CHUNK);
        memcpy(in, input + off, (size_t)n * sizeof(double));
        PMPI_Allreduce(in, ref, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) {
            double got = is_double ? ((const double *)result)[off + i] : (double)((const float *)result)[off + i];
            double d = fabs(got - ref[i]);
            if (!isfinite(d)) nonfinite = 1;
            else if (d > err) err = d;
            if (fabs(ref[i]) > amax) amax = fabs(ref[i]);
        }
    }
    free(in);
    free(ref);
    double local[2] = {err, nonfinite ? 1.0 : 0.0}, global[2];
    PMPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *max_abs = global[1] > 0 ? INFINITY : global[0];
    *max_rel = amax > 0 ? *max_abs / amax : *max_abs;
}

static result_t run_size(const options_t *o, size_t count, void *sendbuf, void *recvbuf, const double *input,
                         stats_fn get_stats, stats_reset_fn reset_stats) {
    MPI_Datatype type = o->use_double ? MPI_DOUBLE : MPI_FLOAT;
    size_t bytes = count * (o->use_double ? sizeof(double) : sizeof(float));
    result_t res;
    memset(&res, 0, sizeof res);
    int iters = osu_iterations_for(&o->osu, bytes), warm = osu_warmup_for(&o->osu, bytes);

    MPI_Barrier(MPI_COMM_WORLD);
    double t_warm = 0;
    for (int i = 0; i < warm; i++) {
        double t0 = MPI_Wtime();
        MPI_Allreduce(sendbuf, recvbuf, (int)count, type, MPI_SUM, MPI_COMM_WORLD);
        t_warm += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (o->osu.time_limit > 0) {
        /* The slowest rank's estimate decides, so every rank runs the same count. */
        double est = 0;
        if (warm > 0) {
            double mine = t_warm / warm;
            PMPI_Allreduce(&mine, &est, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        } else {
            double t0 = MPI_Wtime();
            MPI_Allreduce(sendbuf, recvbuf, (int)count, type, MPI_SUM, MPI_COMM_WORLD);
            double mine = MPI_Wtime() - t0;
            PMPI_Allreduce(&mine, &est, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (est > 0 && est * iters > o->osu.time_limit) {
            int capped = (int)(o->osu.time_limit / est);
            iters = capped < 1 ? 1 : capped;
        }
    }

    if (reset_stats) reset_stats(MPI_COMM_WORLD);
    double timer = 0;
    for (int i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        MPI_Allreduce(sendbuf, recvbuf, (int)count, type, MPI_SUM, MPI_COMM_WORLD);
        timer += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double lat = timer * 1e6 / iters, sum = 0;
    PMPI_Reduce(&lat, &res.min_us, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    PMPI_Reduce(&lat, &res.max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    res.avg_us = sum / world_size;
    res.iterations = iters;

    if (get_stats) {
        bench_terse_stats_t st;
        memset(&st, 0, sizeof st);
        uint64_t local[3] = {0, 0, 0}, global[3];
        if (get_stats(MPI_COMM_WORLD, &st, sizeof st) == 0) {
            local[0] = st.bytes_wire_raw;
            local[1] = st.bytes_wire;
            local[2] = st.calls_intercepted;
        }
        PMPI_Allreduce(local, global, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        res.intercepted = global[2];
        if (global[1] > 0) {
            res.have_ratio = 1;
            res.ratio = (double)global[0] / (double)global[1];
        }
    }

    compare_with_reference(input, recvbuf, count, o->use_double, &res.max_abs, &res.max_rel);
    uint64_t h = fnv1a(recvbuf, bytes), hmin, hmax;
    PMPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    res.identical = hmin == hmax;
    return res;
}

/* ---------------------------------------------------------------- output */

static void print_header(const options_t *o, double tol) {
    printf("# terse-osu-allreduce: MPI_Allreduce(MPI_SUM) latency\n");
    bench_print_libraries();
    printf("# Ranks: %d\n", world_size);
    printf("# Datatype: %s\n", o->use_double ? "MPI_DOUBLE" : "MPI_FLOAT");
    printf("# Data: %s\n", kind_name(o));
    if (o->osu.time_limit > 0) printf("# Time limit per size: %g s of timed iterations\n", o->osu.time_limit);
    if (o->check) printf("# Check: identical bits on every rank and MaxRelErr <= %g\n", tol);
    if (o->osu.csv) {
        printf("size,avg_us,min_us,max_us,iterations,busbw_gbs,wire_ratio,max_abs_err,max_rel_err,identical%s\n",
               o->check ? ",check" : "");
    } else {
        printf("%-12s%18s", "# Size", "Avg Latency(us)");
        if (o->osu.full) printf("%18s%18s%12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
        printf("%13s%11s%12s%12s", "BusBW(GB/s)", "WireRatio", "MaxAbsErr", "MaxRelErr");
        if (o->check) printf("%8s", "Check");
        printf("\n");
    }
    fflush(stdout);
}

static void print_row(const options_t *o, size_t bytes, const result_t *r, int pass) {
    double busbw = r->avg_us > 0 ? (double)bytes / (r->avg_us * 1e-6) / 1e9 * 2.0 * (world_size - 1) / world_size
                                 : 0;
    char ratio[32];
    if (r->have_ratio) snprintf(ratio, sizeof ratio, "%.2f", r->ratio);
    else snprintf(ratio, sizeof ratio, o->osu.csv ? "" : "-");
    if (o->osu.csv) {
        printf("%zu,%.2f,%.2f,%.2f,%d,%.4f,%s,%.3e,%.3e,%d", bytes, r->avg_us, r->min_us, r->max_us,
               r->iterations, busbw, ratio, r->max_abs, r->max_rel, r->identical);
        if (o->check) printf(",%s", pass ? "pass" : "fail");
    } else {
        printf("%-12zu%18.2f", bytes, r->avg_us);
        if (o->osu.full) printf("%18.2f%18.2f%12d", r->min_us, r->max_us, r->iterations);
        printf("%13.3f%11s%12.3e%12.3e", busbw, ratio, r->max_abs, r->max_rel);
        if (o->check) printf("%8s", pass ? "Pass" : "Fail");
    }
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    options_t o;
    parse_options(argc, argv, &o);
    size_t elem = o.use_double ? sizeof(double) : sizeof(float);
    size_t min_bytes = o.osu.min_bytes < elem ? elem : o.osu.min_bytes;
    if (o.osu.max_bytes < elem)
        die("-m: MAX must be at least one element (%s)", o.use_double ? "8 bytes" : "4 bytes");
    if (o.osu.max_bytes / elem > (size_t)INT32_MAX) die("-m: MAX exceeds INT_MAX elements%s", "");

    /* A float sum over n ranks in any order is off by at most about
     * (n-1) float roundings of the largest partial sums. */
    double eps = o.use_double ? DBL_EPSILON : FLT_EPSILON;
    double tol = o.tolerance >= 0 ? o.tolerance : 4.0 * world_size * eps;

    stats_fn get_stats = (stats_fn)dlsym(RTLD_DEFAULT, "terse_comm_stats");
    stats_reset_fn reset_stats = (stats_reset_fn)dlsym(RTLD_DEFAULT, "terse_comm_stats_reset");

    size_t max_count = o.osu.max_bytes / elem;
    double *input = malloc(max_count * sizeof(double));
    void *sendbuf = malloc(o.osu.max_bytes), *recvbuf = malloc(o.osu.max_bytes);
    if (!input || !sendbuf || !recvbuf) die("out of memory for %s-byte buffers", "MAX");
    rng_t rng;
    rng_seed(&rng, o.seed * 1000003ULL + (uint64_t)world_rank);
    switch (o.kind) {
    case DATA_LAPLACE: fill_laplace(input, max_count, &rng); break;
    case DATA_GAUSS: fill_gauss(input, max_count, &rng); break;
    case DATA_SMOOTH: fill_smooth(input, max_count, &rng); break;
    case DATA_FILE: fill_file(input, max_count, o.file); break;
    }
    /* The reference must see exactly the values sent: round to float first. */
    for (size_t i = 0; i < max_count; i++) {
        if (o.use_double) ((double *)sendbuf)[i] = input[i];
        else input[i] = ((float *)sendbuf)[i] = (float)input[i];
    }
    memset(recvbuf, 0, o.osu.max_bytes);

    if (world_rank == 0) print_header(&o, tol);
    int failed = 0;
    for (size_t bytes = 1; bytes <= o.osu.max_bytes; bytes *= 2) {
        if (bytes < min_bytes) continue;
        size_t count = bytes / elem;
        result_t r = run_size(&o, count, sendbuf, recvbuf, input, get_stats, reset_stats);
        int pass = r.identical && r.max_rel <= tol;
        if (o.check && !pass) failed = 1;
        if (world_rank == 0) print_row(&o, bytes, &r, pass);
    }
    free(input);
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return o.check && failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
