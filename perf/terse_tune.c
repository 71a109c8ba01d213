/* terse-tune: a short calibration on a job's ranks that writes a tuning file
 * (terse-tune(1); the file's syntax is in terse(7), TUNING FILE).
 *
 * For each message size (powers of 4 from MIN to MAX) it times every
 * candidate configuration -- the MPI library itself, the ring with the
 * communicator's codec or lossless at two chunk sizes, recursive doubling
 * with either codec -- in interleaved repeats (every repeat visits every
 * size and candidate in turn, so drift in the machine spreads over all of
 * them), takes each candidate's median over the repeats of the slowest
 * rank's time, and writes one entry per size range with the fastest.
 * Linked with libterse: it sets each candidate with terse_comm_configure()
 * on its own duplicate of MPI_COMM_WORLD. */
#include <terse/terse.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SIZES = 16, MAX_CANDS = 8, MAX_REPS = 64 };

typedef struct {
    const char *schedule; /* "mpi", "ring", "recursive_doubling" */
    int lossless;         /* codec=none */
    size_t chunk;         /* chunk_bytes; 0: as configured */
} Candidate;

static int rank_;

static void die(const char *fmt, const char *arg) {
    if (rank_ == 0) {
        fprintf(stderr, "terse-tune: ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n");
    }
    MPI_Finalize();
    exit(2);
}

static size_t parse_size(const char *s) {
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    if (*end == 'K' || *end == 'k') v <<= 10, ++end;
    else if (*end == 'M' || *end == 'm') v <<= 20, ++end;
    else if (*end == 'G' || *end == 'g') v <<= 30, ++end;
    return *end ? 0 : (size_t)v;
}

static void size_text(size_t v, char *buf, size_t n) {
    if (v && v % (1u << 20) == 0) snprintf(buf, n, "%zuM", v >> 20);
    else if (v && v % 1024 == 0) snprintf(buf, n, "%zuK", v >> 10);
    else snprintf(buf, n, "%zu", v);
}

static void configure(MPI_Comm c, const char *key, const char *value) {
    if (terse_comm_configure(c, key, value) != TERSE_OK) die("%s", terse_last_error());
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void) {
    if (rank_ == 0)
        fprintf(stderr, "usage: terse-tune -o FILE [-m MIN:MAX] [-r REPEATS] [-i ITERS] [-s SCHEDULES]\n"
                        "  -o FILE       tuning file to write (rank 0)\n"
                        "  -m MIN:MAX    message sizes in bytes, powers of 4 (default 64K:4M)\n"
                        "  -r N          interleaved repeats, the median counts (default 5)\n"
                        "  -i N          calls timed per candidate and repeat (default 10)\n"
                        "  -s LIST       schedules to consider, comma-separated among mpi, ring,\n"
                        "                recursive_doubling (default all)\n"
                        "The codec measured is the communicator's (TERSE_CODEC); float data.\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *out_path = NULL, *schedules = "mpi,ring,recursive_doubling";
    size_t lo = 64 << 10, hi = 4 << 20;
    int reps = 5, iters = 10;
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage();
            MPI_Finalize();
            return 0;
        }
        if (!v) die("option %s needs a value (see --help)", o);
        ++i;
        if (!strcmp(o, "-o")) out_path = v;
        else if (!strcmp(o, "-r")) reps = atoi(v);
        else if (!strcmp(o, "-i")) iters = atoi(v);
        else if (!strcmp(o, "-s")) schedules = v;
        else if (!strcmp(o, "-m")) {
            const char *colon = strchr(v, ':');
            char min[64];
            snprintf(min, sizeof min, "%.*s", colon ? (int)(colon - v) : 0, v);
            if (colon) lo = parse_size(min);
            hi = parse_size(colon ? colon + 1 : v);
            if (!lo || !hi || lo > hi) die("bad sizes '%s' (MIN:MAX, e.g. 64K:4M)", v);
        } else die("unknown option %s (see --help)", o);
    }
    if (!out_path) die("%s", "-o FILE is required (see --help)");
    if (reps < 1 || reps > MAX_REPS || iters < 1) die("%s", "-r must be 1..64 and -i at least 1");

    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_name(c, "terse-tune");
    /* The communicator's codec as configured, the one the file's
     * codec=configured entries will run. */
    char cfg[1024], codec[512] = "none";
    if (terse_comm_get_config(c, cfg, sizeof cfg) != TERSE_OK) die("%s", terse_last_error());
    const char *p = strstr(cfg, "codec=");
    if (p) sscanf(p + 6, "%511s", codec);
    const int lossy = strcmp(codec, "none") != 0;
    configure(c, "tune_file", ""); /* measure the candidates, not an older file */
    configure(c, "min_bytes", "0");
    /* Time each candidate as set, not the model planner's choice among the
     * MPI library and the schedules (a file entry overrides the model). */
    configure(c, "planner", "fixed");

    Candidate all[] = {
        {"mpi", 0, 0},        {"ring", 0, 256 << 10},       {"ring", 0, 1 << 20},        {"ring", 1, 256 << 10},
        {"ring", 1, 1 << 20}, {"recursive_doubling", 0, 0}, {"recursive_doubling", 1, 0}};
    Candidate cands[MAX_CANDS];
    int ncand = 0;
    for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k) {
        if (all[k].lossless && !lossy) continue; /* the same as the configured codec */
        char list[256];
        snprintf(list, sizeof list, ",%s,", schedules);
        char want[64];
        snprintf(want, sizeof want, ",%s,", all[k].schedule);
        if (strstr(list, want)) cands[ncand++] = all[k];
    }
    if (ncand == 0) die("no candidate among -s %s (accepted: mpi, ring, recursive_doubling)", schedules);

    size_t sizes[MAX_SIZES];
    int nsize = 0;
    for (size_t s = lo; s <= hi && nsize < MAX_SIZES; s *= 4) sizes[nsize++] = s;
    static double t[MAX_SIZES][MAX_CANDS][MAX_REPS];
    float *in = malloc(hi), *out = malloc(hi);
    if (!in || !out) die("%s", "out of memory");
    for (size_t i = 0; i < hi / sizeof(float); ++i) in[i] = (float)((i * 7 + (size_t)rank_ * 13) % 101) / 101.0f;

    char orig_chunk[64] = "1048576";
    if ((p = strstr(cfg, "chunk_bytes="))) sscanf(p + 12, "%63[0-9]", orig_chunk);
    for (int r = 0; r < reps; ++r)
        for (int s = 0; s < nsize; ++s)
            for (int k = 0; k < ncand; ++k) {
                const Candidate *cd = &cands[k];
                const int count = (int)(sizes[s] / sizeof(float));
                const int mpi = !strcmp(cd->schedule, "mpi");
                if (!mpi) {
                    char chunk[32];
                    snprintf(chunk, sizeof chunk, "%zu", cd->chunk);
                    configure(c, "algorithm", cd->schedule);
                    configure(c, "codec", cd->lossless ? "none" : codec);
                    configure(c, "chunk_bytes", cd->chunk ? chunk : orig_chunk);
                    configure(c, "pipeline_depth", "4");
                }
                /* One untimed call: the re-agreement of a new configuration. */
                if (mpi) PMPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, c);
                else if (MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, c) != MPI_SUCCESS)
                    die("%s", terse_last_error());
                PMPI_Barrier(c);
                double t0 = MPI_Wtime();
                for (int it = 0; it < iters; ++it) {
                    if (mpi) PMPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, c);
                    else MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, c);
                }
                double dt = (MPI_Wtime() - t0) / iters, slowest;
                PMPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, c);
                t[s][k][r] = slowest;
            }

    if (rank_ == 0) {
        FILE *f = fopen(out_path, "w");
        if (!f) die("cannot write %s", out_path);
        fprintf(f, "# terse tuning file written by terse-tune: %d ranks, codec %s,\n", size, codec);
        fprintf(f, "# median of %d interleaved repeats of %d calls; the times are the slowest rank's.\n", reps,
                iters);
        for (int s = 0; s < nsize; ++s) {
            double med[MAX_CANDS];
            int best = 0;
            for (int k = 0; k < ncand; ++k) {
                double v[MAX_REPS];
                memcpy(v, t[s][k], sizeof(double) * reps);
                qsort(v, reps, sizeof(double), cmp_double);
                med[k] = v[reps / 2];
                if (med[k] < med[best]) best = k;
            }
            char a[32], b[32], m[32];
            size_text(sizes[s], m, sizeof m);
            fprintf(f, "# %s:", m);
            for (int k = 0; k < ncand; ++k)
                fprintf(f, " %s%s%s %.1fus%s", cands[k].schedule, cands[k].lossless ? "/none" : "",
                        cands[k].chunk ? (cands[k].chunk == (1u << 20) ? "/1M" : "/256K") : "", med[k] * 1e6,
                        k + 1 < ncand ? "," : "\n");
            /* Ranges meet halfway (geometrically) between measured sizes. */
            size_t from = s == 0 ? 0 : (sizes[s - 1] * 2) & ~(size_t)1023;
            size_t to = (sizes[s] * 2) & ~(size_t)1023;
            size_text(from, a, sizeof a);
            size_text(to, b, sizeof b);
            const Candidate *cd = &cands[best];
            fprintf(f, "allreduce:%s-%s:@%s", a, s + 1 == nsize ? "inf" : b, cd->schedule);
            if (cd->lossless) fprintf(f, ":codec=none");
            if (cd->chunk) {
                size_text(cd->chunk, a, sizeof a);
                fprintf(f, ":chunk=%s:depth=4", a);
            }
            fprintf(f, ":ranks=%d\n", size);
        }
        fclose(f);
        printf("terse-tune: wrote %s (%d sizes, %d candidates, %d repeats)\n", out_path, nsize, ncand, reps);
    }
    free(in);
    free(out);
    MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
}
