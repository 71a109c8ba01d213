/*
 * The MPI side shared by the perf/ benchmarks (header-only, plain C): the
 * error exit, the header lines that say which MPI library ran and whether
 * terse was loaded (found with dlsym, so that the same binary measures both),
 * and the -m MIN:MAX option.
 */
#ifndef TERSE_PERF_BENCH_MPI_H
#define TERSE_PERF_BENCH_MPI_H

#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

/* Rank 0 prints "PROG: " and the message (fmt takes one %s), then every
 * rank finalizes and exits with failure. */
static inline void bench_die(const char *prog, const char *fmt, const char *arg) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        fprintf(stderr, "%s: ", prog);
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
    MPI_Finalize();
    exit(EXIT_FAILURE);
}

/* "# MPI library: ..." (its first line only: Open MPI appends its
 * repository and date) and "# terse: ..." (version and codec, or not
 * loaded). */
static inline void bench_print_libraries(void) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = '\0';
    printf("# MPI library: %s\n", lib);
    typedef void (*version_fn)(int *, int *, int *);
    version_fn v = (version_fn)dlsym(RTLD_DEFAULT, "terse_version");
    const char *codec = getenv("TERSE_CODEC");
    if (v) {
        int ma = 0, mi = 0, pa = 0;
        v(&ma, &mi, &pa);
        printf("# terse: %d.%d.%d loaded, TERSE_CODEC=%s\n", ma, mi, pa, codec ? codec : "(unset)");
    } else {
        printf("# terse: not loaded (plain MPI)%s%s\n", codec ? ", TERSE_CODEC=" : "", codec ? codec : "");
    }
}

/* MPI_Init_thread asking for `want`, and this rank's place in
 * MPI_COMM_WORLD.  Returns the level provided: a benchmark that needs
 * MPI_THREAD_MULTIPLE says so once its options are parsed (the option that
 * asked for it names the error). */
static inline int bench_init_thread(int *argc, char ***argv, int want, int *rank, int *size) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return provided;
}

/* -m MIN:MAX or -m MAX (MIN unchanged).  Returns 0 on a malformed value. */
static inline int bench_parse_range(const char *arg, size_t *min, size_t *max) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", arg);
    char *colon = strchr(buf, ':');
    if (!colon) return bench_parse_size(buf, max);
    *colon = '\0';
    return bench_parse_size(buf, min) && bench_parse_size(colon + 1, max);
}

#endif
