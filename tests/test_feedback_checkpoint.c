/* Error feedback with stable keys, saved and restored (terse_feedback(3)).
 * The launcher (test_feedback_checkpoint.sh) sets the codec, feedback and
 * feedback_key, and compares what runs print.
 *
 *   test_feedback_checkpoint FIRST LAST fixed|moving [--tags] [--nonblocking]
 *       [--restore PATH] [--save PATH] [--try-restore-at CALL PATH]
 *
 * runs the calls FIRST..LAST-1 of a training-like sequence on a duplicate of
 * MPI_COMM_WORLD: each iteration allreduces BUCKETS gradient buckets (two of
 * the same size, one smaller) and ends with terse_feedback_step.  Call c is
 * bucket c % BUCKETS of iteration c / BUCKETS; its input depends only on
 * (rank, c), so a run split in two processes computes the same inputs.
 *   fixed      each bucket keeps its buffer;
 *   moving     every call gets a freshly allocated buffer (all kept until
 *              the end, so no address repeats);
 *   --tags     terse_set_next_feedback_tag(bucket) before each call;
 *   --nonblocking  an iteration's buckets go out with MPI_Iallreduce and
 *              complete together with MPI_Waitall;
 *   --restore  terse_feedback_restore(PATH) before the first call;
 *   --save     terse_feedback_save(PATH) after the last call;
 *   --try-restore-at  before call CALL, a restore from PATH that must fail
 *              (the run goes on with the residuals it had).
 * Rank 0 prints "call C: HASH" (FNV-1a of the result's bytes) for each call
 * and "intercepted N" at the end.  A save or restore that fails prints
 * "rank R: STATUS: MESSAGE" on each rank and exits with 3. */
#include "mpi_check.h"

#include <terse/terse.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BUCKETS = 3, MAX_CALLS = 64 };

static int bucket_count(int b) { return b < 2 ? 1 << 14 : 3 * 4096 + 5; }

/* A value in [-1, 1) from (rank, call, element): not a multiple of the
 * quantizer's step, so every call leaves a residual. */
static float input(int rank, int call, int i) {
    uint64_t x = (uint64_t)rank * 0x9E3779B97F4A7C15ull ^ (uint64_t)call * 0xBF58476D1CE4E5B9ull ^ (uint64_t)i;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static uint64_t fnv(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The name of the codes a save or restore returns, for the launcher. */
static const char *code(terse_status_t s) {
    switch (s) {
    case TERSE_ERR_INVALID: return "TERSE_ERR_INVALID";
    case TERSE_ERR_MISMATCH: return "TERSE_ERR_MISMATCH";
    case TERSE_ERR_CORRUPT: return "TERSE_ERR_CORRUPT";
    case TERSE_ERR_IO: return "TERSE_ERR_IO";
    case TERSE_ERR_REMOTE: return "TERSE_ERR_REMOTE";
    default: return terse_status_string(s);
    }
}

/* Report a failed save/restore on this rank and leave with 3 (every rank
 * fails together, so none is left waiting). */
static void failed(int rank, const char *what, terse_status_t s) {
    printf("rank %d: %s: %s: %s\n", rank, what, code(s), terse_last_error());
    fflush(stdout);
    MPI_Finalize();
    exit(3);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(argc >= 4, "usage: test_feedback_checkpoint FIRST LAST fixed|moving [options]");
    const int first = atoi(argv[1]), last = atoi(argv[2]);
    const int moving = strcmp(argv[3], "moving") == 0;
    CHECK(moving || strcmp(argv[3], "fixed") == 0, "buffers: fixed or moving, not %s", argv[3]);
    CHECK(0 <= first && first <= last && last <= MAX_CALLS, "calls %d..%d", first, last);
    int tags = 0, nonblocking = 0, try_at = -1;
    const char *restore = NULL, *save = NULL, *try_path = NULL;
    for (int a = 4; a < argc; ++a) {
        if (!strcmp(argv[a], "--tags")) tags = 1;
        else if (!strcmp(argv[a], "--nonblocking")) nonblocking = 1;
        else if (!strcmp(argv[a], "--restore") && a + 1 < argc) restore = argv[++a];
        else if (!strcmp(argv[a], "--save") && a + 1 < argc) save = argv[++a];
        else if (!strcmp(argv[a], "--try-restore-at") && a + 2 < argc) {
            try_at = atoi(argv[++a]);
            try_path = argv[++a];
        } else CHECK(0, "unknown argument %s", argv[a]);
    }
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_name(c, "gradients");
    terse_status_t s;
    if (restore && (s = terse_feedback_restore(c, restore)) != TERSE_OK) failed(rank, "restore", s);

    float *fixed_in[BUCKETS], *out[BUCKETS];
    for (int b = 0; b < BUCKETS; ++b) {
        fixed_in[b] = malloc(bucket_count(b) * sizeof(float));
        out[b] = malloc(bucket_count(b) * sizeof(float));
        CHECK(fixed_in[b] && out[b], "out of memory");
    }
    float *kept[MAX_CALLS] = {0};
    MPI_Request req[BUCKETS];
    int pending = 0, pending_first = 0;
    for (int call = first; call < last; ++call) {
        const int b = call % BUCKETS, n = bucket_count(b);
        if (call == try_at) {
            s = terse_feedback_restore(c, try_path);
            CHECK(s != TERSE_OK, "the restore from %s before call %d succeeded", try_path, call);
            printf("rank %d: refused: %s: %s\n", rank, code(s), terse_last_error());
        }
        float *in = fixed_in[b];
        if (moving) {
            in = kept[call] = malloc(n * sizeof(float));
            CHECK(in, "out of memory");
        }
        for (int i = 0; i < n; ++i) in[i] = input(rank, call, i);
        if (tags) CHECK(terse_set_next_feedback_tag(c, (uint64_t)b + 100) == TERSE_OK, "%s", terse_last_error());
        if (nonblocking) {
            if (!pending) pending_first = call;
            CHECK(MPI_Iallreduce(in, out[b], n, MPI_FLOAT, MPI_SUM, c, &req[pending++]) == MPI_SUCCESS, "call %d",
                  call);
        } else {
            CHECK(MPI_Allreduce(in, out[b], n, MPI_FLOAT, MPI_SUM, c) == MPI_SUCCESS, "call %d", call);
        }
        const int ends_iteration = b == BUCKETS - 1 || call == last - 1;
        if (nonblocking && ends_iteration) {
            CHECK(MPI_Waitall(pending, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
            pending = 0;
        }
        if (!nonblocking || ends_iteration)
            for (int d = nonblocking ? pending_first : call; d <= call && rank == 0; ++d)
                printf("call %d: %016llx\n", d,
                       (unsigned long long)fnv(out[d % BUCKETS], bucket_count(d % BUCKETS) * sizeof(float)));
        if (b == BUCKETS - 1) CHECK(terse_feedback_step(c) == TERSE_OK, "%s", terse_last_error());
    }
    if (save && (s = terse_feedback_save(c, save)) != TERSE_OK) failed(rank, "save", s);
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(c, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
    if (rank == 0) printf("intercepted %llu\n", (unsigned long long)st.calls_intercepted);
    for (int i = 0; i < MAX_CALLS; ++i) free(kept[i]);
    for (int b = 0; b < BUCKETS; ++b) {
        free(fixed_in[b]);
        free(out[b]);
    }
    MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
}
