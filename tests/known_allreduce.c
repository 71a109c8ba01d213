/* Allreduces on known data, for test_capture_eval.sh (run under
 * TERSE_CAPTURE; terse-eval's emulated reduced-result error on the captured
 * inputs is compared with the live one printed here) and
 * test_example_plugin.sh (the example codec in a real allreduce).
 *
 * Every rank can compute every other rank's input (a formula of rank, call
 * and index), so each rank checks its result against the exact sum in double
 * precision.  Values are multiples of 1/256 below 8 in magnitude: their
 * float32 sums are exact, so the exact sum is also what MPI_SUM gives.
 *
 * Output (rank 0), one line each:
 *   live_max_abs_err <e>        largest |result - exact| over all calls
 *   verify_max_abs_err <e>      terse_comm_stats() max_abs_error (TERSE_VERIFY=1)
 *   result_hash <h>             FNV-1a of every result, to compare runs
 */
#include "mpi_check.h"

#include <terse/terse.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 50000, CALLS = 4 };

/* Input element i of rank r in call c (gradient-like: mostly small, some large). */
static float input(int r, int c, size_t i) {
    uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503u + c * 977u);
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    int v = (int)(h % 2001u) - 1000; /* -1000..1000 */
    if ((h >> 24) % 8 != 0) v /= 16; /* most values small */
    return (float)v / 256.0f;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* One allreduce of call c on comm; returns max |result - exact|. */
static double run_call(MPI_Comm comm, int c, int in_place, float *send, float *recv, uint64_t *hash) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (size_t i = 0; i < COUNT; i++) send[i] = input(rank, c, i);
    int rc;
    if (in_place) {
        memcpy(recv, send, sizeof(float) * COUNT);
        rc = MPI_Allreduce(MPI_IN_PLACE, recv, COUNT, MPI_FLOAT, MPI_SUM, comm);
    } else {
        rc = MPI_Allreduce(send, recv, COUNT, MPI_FLOAT, MPI_SUM, comm);
    }
    CHECK(rc == MPI_SUCCESS, "MPI_Allreduce returned %d", rc);
    if (!in_place)
        for (size_t i = 0; i < COUNT; i++) CHECK(send[i] == input(rank, c, i), "send buffer modified at %zu", i);
    double err = 0;
    for (size_t i = 0; i < COUNT; i++) {
        double exact = 0;
        for (int r = 0; r < size; r++) exact += input(r, c, i);
        double e = fabs((double)recv[i] - exact);
        if (e > err) err = e;
    }
    *hash = hash_bytes(*hash, recv, sizeof(float) * COUNT);
    return err;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    float *send = malloc(sizeof(float) * COUNT), *recv = malloc(sizeof(float) * COUNT);
    CHECK(send && recv, "out of memory");

    MPI_Comm grad;
    MPI_Comm_dup(MPI_COMM_WORLD, &grad);
    MPI_Comm_set_name(grad, "grad");

    uint64_t hash = 14695981039346656037ull;
    double err = 0, e;
    for (int c = 0; c < CALLS; c++) {
        e = run_call(MPI_COMM_WORLD, c, c == 2, send, recv, &hash);
        if (e > err) err = e;
    }
    for (int c = 0; c < 2; c++) {
        e = run_call(grad, 100 + c, 0, send, recv, &hash);
        if (e > err) err = e;
    }

    double gerr;
    MPI_Allreduce(&err, &gerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double verify = 0;
    MPI_Comm comms[2] = {MPI_COMM_WORLD, grad};
    for (int k = 0; k < 2; k++) {
        terse_comm_stats_t st;
        terse_status_t s = terse_comm_stats(comms[k], &st, sizeof st);
        CHECK(s == TERSE_OK, "terse_comm_stats: %s", terse_last_error());
        CHECK(st.calls_intercepted > 0, "no call intercepted on communicator %d", k);
        if (st.max_abs_error > verify) verify = st.max_abs_error;
    }
    double gverify;
    MPI_Allreduce(&verify, &gverify, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("live_max_abs_err %.9g\n", gerr);
        printf("verify_max_abs_err %.9g\n", gverify);
        printf("result_hash %016llx\n", (unsigned long long)hash);
    }
    MPI_Comm_free(&grad);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
