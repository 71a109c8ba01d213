/*
 * The options the OSU-style benchmarks of perf/ share (terse-osu-allreduce,
 * terse-osu-iallreduce), parsed and checked in one place so that -m, -i,
 * -x, -f, -L and -o mean the same thing, with the same messages, in both
 * (header-only, plain C).  A benchmark keeps its own options beside these:
 * its getopt loop hands every option to osu_options_take() first.
 */
#ifndef TERSE_PERF_OSU_OPTIONS_H
#define TERSE_PERF_OSU_OPTIONS_H

#include <getopt.h>

#include "bench_mpi.h"

/* The getopt letters osu_options_take() handles, to put in optstring. */
#define OSU_OPTIONS_LETTERS "m:i:x:fL:o:h"

typedef struct osu_options {
    size_t min_bytes, max_bytes;
    int iterations, warmup; /* -1: OSU's defaults by size (osu_iterations_for) */
    int full;               /* -f: Min/Max and Iterations columns */
    int csv;                /* -o csv, or OSU_BENCH_FORMAT=csv */
    double time_limit;      /* -L: seconds of timed iterations per size, 0 = none */
} osu_options_t;

/* Reports a bad option and exits (bench_die with the program's name). */
typedef void (*osu_die_fn)(const char *fmt, const char *arg);

static inline void osu_options_init(osu_options_t *o, size_t min_bytes) {
    memset(o, 0, sizeof *o);
    o->min_bytes = min_bytes;
    o->max_bytes = 1 << 20; /* OSU's default maximum */
    o->iterations = o->warmup = -1;
    const char *fmt = getenv("OSU_BENCH_FORMAT");
    if (fmt && strcmp(fmt, "csv") == 0) o->csv = 1;
}

/* Seconds > 0 for option flag ("-L"). */
static inline double osu_parse_seconds(const char *flag, const char *arg, osu_die_fn die) {
    char *end;
    const double s = strtod(arg, &end);
    if (end == arg || *end || !(s > 0)) {
        char fmt[64];
        snprintf(fmt, sizeof fmt, "%s: expected seconds > 0, got \"%%s\"", flag);
        die(fmt, arg);
    }
    return s;
}

/* Handles getopt's result c if it is one of the shared options, or -h, or
 * an unknown option or missing value (usage printed, then die).  Returns 1
 * when it took c, 0 when c is the benchmark's own. */
static inline int osu_options_take(osu_options_t *o, int c, const char *arg, void (*usage)(void),
                                   osu_die_fn die) {
    switch (c) {
    case 'm':
        if (!bench_parse_range(arg, &o->min_bytes, &o->max_bytes))
            die("-m: expected MIN:MAX in bytes (e.g. 1M:64M), got \"%s\"", arg);
        return 1;
    case 'i':
        if (!bench_parse_int(arg, &o->iterations) || o->iterations < 1)
            die("-i: expected a positive iteration count, got \"%s\"", arg);
        return 1;
    case 'x':
        if (!bench_parse_int(arg, &o->warmup)) die("-x: expected a warmup count >= 0, got \"%s\"", arg);
        return 1;
    case 'f': o->full = 1; return 1;
    case 'L': o->time_limit = osu_parse_seconds("-L", arg, die); return 1;
    case 'o':
        if (strcmp(arg, "table") == 0) o->csv = 0;
        else if (strcmp(arg, "csv") == 0) o->csv = 1;
        else die("-o: expected table or csv, got \"%s\"", arg);
        return 1;
    case 'h':
        usage();
        MPI_Finalize();
        exit(EXIT_SUCCESS);
    case '?':
    case ':': {
        char opt[3] = {'-', (char)optopt, 0};
        usage();
        die("unknown option or missing value: %s", opt);
    }
    }
    return 0;
}

/* After the getopt loop: no operands, and MIN <= MAX. */
static inline void osu_options_finish(const osu_options_t *o, int argc, char **argv, osu_die_fn die) {
    if (optind < argc) die("unexpected argument \"%s\" (see -h)", argv[optind]);
    if (o->min_bytes > o->max_bytes) die("-m: MIN must not exceed MAX%s", "");
}

/* OSU's iteration and warmup counts by message size, unless -i / -x set them. */
static inline int osu_iterations_for(const osu_options_t *o, size_t bytes) {
    if (o->iterations > 0) return o->iterations;
    return bytes > 8192 ? 100 : 1000;
}
static inline int osu_warmup_for(const osu_options_t *o, size_t bytes) {
    if (o->warmup >= 0) return o->warmup;
    return bytes > 8192 ? 10 : 200;
}

#endif
