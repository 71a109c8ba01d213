/* The error guard (guard=K) on a codec made to break its bound: the
 * launcher script (test_guard.sh) sets TERSE_CODEC to the drift test codec
 * (tests/plugins/drift_codec.cc), exact until an input reaches 'above'.
 *
 *   test_guard CALLS SPOIL_FROM TRIP_AT
 *
 * runs CALLS allreduces on a duplicate of MPI_COMM_WORLD; from call
 * SPOIL_FROM on (0: never) one input element is large enough to make the
 * codec misbehave.  TRIP_AT is the call at which every rank must see the
 * guard switch the communicator to lossless (0: never).  Checked on every
 * rank, after every call: the result is exact exactly when it should be
 * (before the spoiled calls; from TRIP_AT on, the checked call itself
 * included), guard_trips moves from 0 to 1 at TRIP_AT and never again,
 * guard_trip_call names it, and every rank holds the same bits. */
#include "mpi_check.h"

#include <terse/terse.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 1 << 14 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc == 4, "usage: test_guard CALLS SPOIL_FROM TRIP_AT");
    const int calls = atoi(argv[1]), spoil_from = atoi(argv[2]), trip_at = atoi(argv[3]);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_name(c, "guarded");
    float *in = malloc(COUNT * sizeof(float)), *out = malloc(COUNT * sizeof(float));
    float *all = malloc((size_t)size * 4 * sizeof(float));
    CHECK(in && out && all, "out of memory");

    for (int call = 1; call <= calls; ++call) {
        /* Quarters and small integers: every sum is exact in float. */
        for (int i = 0; i < COUNT; ++i) in[i] = (float)((rank + 1) * (i % 7)) * 0.25f + (float)call;
        const int spoiled = spoil_from > 0 && call >= spoil_from;
        if (spoiled) in[0] = 100.0f;
        CHECK(MPI_Allreduce(in, out, COUNT, MPI_FLOAT, MPI_SUM, c) == MPI_SUCCESS, "allreduce %d: %s", call,
              terse_last_error());
        int exact = 1;
        for (int i = 0; i < COUNT && exact; ++i) {
            float want = 0;
            for (int r = 0; r < size; ++r) want += (float)((r + 1) * (i % 7)) * 0.25f + (float)call;
            if (i == 0 && spoiled) want = 100.0f * (float)size;
            exact = out[i] == want;
        }
        terse_comm_stats_t st;
        CHECK(terse_comm_stats(c, &st, sizeof st) == TERSE_OK, "stats: %s", terse_last_error());
        const int tripped = trip_at > 0 && call >= trip_at;
        CHECK(st.guard_trips == (uint64_t)tripped, "call %d: guard_trips=%llu, expected %d", call,
              (unsigned long long)st.guard_trips, tripped);
        CHECK(st.guard_trip_call == (uint64_t)(tripped ? trip_at : 0), "call %d: guard_trip_call=%llu", call,
              (unsigned long long)st.guard_trip_call);
        const int want_exact = !spoiled || tripped;
        CHECK(exact == want_exact, "call %d: result %s, expected %s (out[0]=%g)", call,
              exact ? "exact" : "inexact", want_exact ? "exact" : "inexact", out[0]);
        /* The same bits everywhere: a few samples of every rank's result. */
        float mine[4] = {out[0], out[1], out[COUNT / 2], out[COUNT - 1]};
        MPI_Allgather(mine, 4, MPI_FLOAT, all, 4, MPI_FLOAT, MPI_COMM_WORLD);
        for (int r = 1; r < size; ++r)
            CHECK(memcmp(all, all + 4 * r, sizeof mine) == 0, "call %d: ranks 0 and %d differ", call, r);
    }
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(c, &st, sizeof st) == TERSE_OK, "stats: %s", terse_last_error());
    if (rank == 0)
        printf("guard_checks=%llu guard_trips=%llu guard_trip_call=%llu\n", (unsigned long long)st.guard_checks,
               (unsigned long long)st.guard_trips, (unsigned long long)st.guard_trip_call);
    free(in);
    free(out);
    free(all);
    MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
}
