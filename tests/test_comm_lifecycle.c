/* Communicators created and freed in a loop, each used by an intercepted
 * allreduce: terse's per-communicator state must be released every time,
 * so the process's memory stays flat after warm-up. */
#include "mpi_check.h"
#include "proc_memory.h"

#include <terse/terse.h>

#include <stdio.h>
#include <stdlib.h>

enum { COUNT = 70000, DEFAULT_ROUNDS = 300, WARMUP = 50 };

static void use(MPI_Comm c) {
    int size;
    MPI_Comm_size(c, &size);
    float *buf = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; ++i) buf[i] = 1.0f;
    CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, COUNT, MPI_FLOAT, MPI_SUM, c) == MPI_SUCCESS, "allreduce");
    CHECK(buf[COUNT - 1] == (float)size, "got %f want %d", buf[COUNT - 1], size);
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(c, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
    CHECK(st.calls_intercepted == 1, "intercepted %llu", (unsigned long long)st.calls_intercepted);
    free(buf);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    /* A round count argument runs a short loop (valgrind) without the
     * memory check, which needs the full warm-up. */
    int rounds = argc > 1 ? atoi(argv[1]) : DEFAULT_ROUNDS;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long base = 0;
    for (int r = 0; r < rounds; ++r) {
        if (r == WARMUP) base = rss_kib();
        MPI_Comm dup, split;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        use(dup);
        MPI_Comm_split(dup, rank % 2, rank, &split);
        use(split);
        MPI_Comm_free(&split);
        MPI_Comm_free(&dup);
    }
    long end = rss_kib();
    if (rounds <= WARMUP) {
        MPI_Finalize();
        return 0;
    }
    /* 250 rounds of two communicators: a leak of even one small buffer per
     * communicator (a chunk scratch is >= 64 KiB) would exceed this. */
    CHECK(end - base < 4096, "RSS grew from %ld KiB to %ld KiB over %d rounds", base, end, rounds - WARMUP);
    if (rank == 0) printf("RSS after warm-up %ld KiB, at end %ld KiB\n", base, end);
    MPI_Finalize();
    return 0;
}
