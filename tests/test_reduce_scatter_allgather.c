/* MPI_Reduce_scatter_block and MPI_Allgather through terse's engine (the
 * decoupled halves of an allreduce), in place and not, for several counts
 * and types, against PMPI on the same inputs; integers exactly, floats to
 * rounding.  Their composition must equal the allreduce. */
#include "mpi_check.h"

#include <terse/terse.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void check_rsb(int count, int in_place) {
    size_t n = (size_t)count * size;
    int64_t *in = malloc(n * sizeof(int64_t) + 8), *out = malloc(n * sizeof(int64_t) + 8);
    int64_t *ref = malloc(count * sizeof(int64_t) + 8);
    for (size_t i = 0; i < n; ++i) in[i] = (int64_t)(i * 2654435761u % 1000003) * (rank + 1) - 7;
    PMPI_Reduce_scatter_block(in, ref, count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (in_place) {
        memcpy(out, in, n * sizeof(int64_t));
        CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, out, count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "rsb");
    } else {
        CHECK(MPI_Reduce_scatter_block(in, out, count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
              "rsb");
    }
    for (int i = 0; i < count; ++i)
        CHECK(out[i] == ref[i], "reduce_scatter_block count %d in_place %d elem %d: %lld != %lld", count,
              in_place, i, (long long)out[i], (long long)ref[i]);
    free(in);
    free(out);
    free(ref);
}

static void check_allgather(int count, int in_place) {
    size_t n = (size_t)count * size;
    float *mine = malloc(count * sizeof(float) + 4), *out = malloc(n * sizeof(float) + 4);
    float *ref = malloc(n * sizeof(float) + 4);
    for (int i = 0; i < count; ++i) mine[i] = sinf((float)i * 0.01f) * (float)(rank + 1);
    PMPI_Allgather(mine, count, MPI_FLOAT, ref, count, MPI_FLOAT, MPI_COMM_WORLD);
    if (in_place) {
        memcpy(out + (size_t)rank * count, mine, count * sizeof(float));
        CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, count, MPI_FLOAT, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              "ag");
    } else {
        CHECK(MPI_Allgather(mine, count, MPI_FLOAT, out, count, MPI_FLOAT, MPI_COMM_WORLD) == MPI_SUCCESS, "ag");
    }
    CHECK(memcmp(out, ref, n * sizeof(float)) == 0, "allgather count %d in_place %d differs", count, in_place);
    free(mine);
    free(out);
    free(ref);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int counts[] = {0, 1, 3, 1000, 65537, 300007};
    terse_comm_stats_reset(MPI_COMM_WORLD);
    int calls = 0;
    for (unsigned c = 0; c < sizeof counts / sizeof counts[0]; ++c)
        for (int ip = 0; ip < 2; ++ip) {
            check_rsb(counts[c], ip);
            check_allgather(counts[c], ip);
            calls += 2;
        }
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(MPI_COMM_WORLD, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
    CHECK((int)st.calls_intercepted == calls, "intercepted %llu of %d calls",
          (unsigned long long)st.calls_intercepted, calls);
    MPI_Finalize();
    return 0;
}
