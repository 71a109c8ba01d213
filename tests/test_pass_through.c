/* The pass-through floor (terse(7), "Which calls terse takes"): run with
 * TERSE_MIN_BYTES=4096, so the job's floor is 4096 bytes.  Calls below it,
 * and calls of a datatype or operation terse never takes, go to the MPI
 * library without terse looking at their communicator: they are counted
 * per process (the TERSE_STATS process line, which the launcher script
 * compares with the count this program expects), never in a
 * communicator's calls_passed.  A communicator agrees at its first call at
 * or above the floor; a min_bytes below the floor, from
 * terse_comm_configure() or a hint, applies from then on. */
#include "mpi_check.h"

#include <terse/terse.h>

#include <stdlib.h>
#include <string.h>

enum { FLOOR = 4096, SMALL = 100, LARGE = 2048 };

static int g_rank, g_size;
static long g_straight; /* calls this rank expects to pass straight */

static terse_comm_stats_t stats(MPI_Comm c) {
    terse_comm_stats_t st;
    CHECK(terse_comm_stats(c, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
    return st;
}

static void expect(MPI_Comm c, const char *what, unsigned long long intercepted, unsigned long long passed) {
    terse_comm_stats_t st = stats(c);
    CHECK(st.calls_intercepted == intercepted && st.calls_passed == passed,
          "%s: intercepted %llu passed %llu, want %llu and %llu", what, (unsigned long long)st.calls_intercepted,
          (unsigned long long)st.calls_passed, intercepted, passed);
}

/* An allreduce of n floats (sum of rank+1+i), result checked exactly. */
static void sum_floats(MPI_Comm c, int n) {
    float *in = malloc(sizeof(float) * n), *out = malloc(sizeof(float) * n);
    for (int i = 0; i < n; ++i) in[i] = (float)(g_rank + 1 + i % 7);
    CHECK(MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, c) == MPI_SUCCESS, "allreduce of %d floats", n);
    for (int i = 0; i < n; ++i)
        CHECK(out[i] == (float)(g_size * (g_size + 1) / 2 + g_size * (i % 7)), "element %d: %f", i, out[i]);
    free(in);
    free(out);
}

static void my_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; ++i) ((float *)inout)[i] += ((float *)in)[i];
}

/* A communicator with the environment's configuration (min_bytes = floor). */
static void plain_communicator(void) {
    MPI_Comm a;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    for (int k = 0; k < 3; ++k) sum_floats(a, SMALL);
    g_straight += 3;
    /* Types and operations terse never takes, at or above the floor. */
    short *s = calloc(LARGE * 2, sizeof(short)), *so = calloc(LARGE * 2, sizeof(short));
    CHECK(MPI_Allreduce(s, so, LARGE * 2, MPI_SHORT, MPI_SUM, a) == MPI_SUCCESS, "short");
    MPI_Op op;
    MPI_Op_create(my_op, 1, &op);
    float *f = calloc(LARGE, sizeof(float)), *fo = calloc(LARGE, sizeof(float));
    CHECK(MPI_Allreduce(f, fo, LARGE, MPI_FLOAT, op, a) == MPI_SUCCESS, "user op");
    g_straight += 2;
    expect(a, "below the floor, before the first agreement", 0, 0);
    /* The first call at or above the floor agrees and is taken. */
    sum_floats(a, LARGE);
    expect(a, "first call at the floor", 1, 0);
    sum_floats(a, SMALL);
    g_straight += 1;
    expect(a, "below the floor, agreed", 1, 0);
    int *in = calloc(LARGE, sizeof(int)), *out = calloc(LARGE, sizeof(int));
    in[5] = g_rank;
    CHECK(MPI_Allreduce(in, out, LARGE, MPI_INT, MPI_MAX, a) == MPI_SUCCESS, "max");
    CHECK(out[5] == g_size - 1, "max %d", out[5]);
    expect(a, "MPI_MAX at the floor (lossless codec)", 2, 0);

    /* A communicator that the configuration turns off: at the floor its
     * calls are counted as passed, below it they pass straight. */
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    CHECK(terse_comm_configure(d, "enable", "0") == TERSE_OK, "%s", terse_last_error());
    sum_floats(d, LARGE);
    sum_floats(d, SMALL);
    g_straight += 1;
    expect(d, "enable=0", 0, 1);
    MPI_Comm_free(&d);

    /* A min_bytes below the floor applies once the communicator agreed. */
    MPI_Comm b;
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    CHECK(terse_comm_configure(b, "min_bytes", "0") == TERSE_OK, "%s", terse_last_error());
    sum_floats(b, SMALL);
    g_straight += 1;
    expect(b, "min_bytes=0 before the first agreement", 0, 0);
    sum_floats(b, LARGE);
    expect(b, "min_bytes=0, first call at the floor", 1, 0);
    sum_floats(b, SMALL);
    expect(b, "min_bytes=0, agreed", 2, 0);
    CHECK(MPI_Allreduce(in, out, SMALL, MPI_INT, MPI_PROD, b) == MPI_SUCCESS, "prod");
    g_straight += 1;
    /* b lowered this process's gate: a's small calls now reach its state,
     * and must still count as straight passes, not as a's. */
    sum_floats(a, SMALL);
    g_straight += 1;
    expect(a, "below the floor while another communicator lowered the gate", 2, 0);
    MPI_Comm_free(&b);
    sum_floats(a, SMALL);
    g_straight += 1;
    expect(a, "below the floor after that communicator was freed", 2, 0);

    /* The same through an MPI_Info hint. */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "terse_min_bytes", "0");
    MPI_Comm c;
    CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c) == MPI_SUCCESS, "dup_with_info");
    MPI_Info_free(&info);
    sum_floats(c, SMALL);
    g_straight += 1;
    sum_floats(c, LARGE);
    sum_floats(c, SMALL);
    expect(c, "hint min_bytes=0", 2, 0);
    MPI_Comm_free(&c);

    /* The decoupled halves: the floor is compared with the whole input of a
     * reduce-scatter and with one rank's block of an allgather. */
    int block = FLOOR / (4 * g_size) + 1;
    float *rs = calloc((size_t)block * g_size, sizeof(float)), *rr = calloc((size_t)block, sizeof(float));
    for (int i = 0; i < block * g_size; ++i) rs[i] = 1.0f;
    CHECK(MPI_Reduce_scatter_block(rs, rr, 1, MPI_FLOAT, MPI_SUM, a) == MPI_SUCCESS, "reduce_scatter small");
    g_straight += 1;
    CHECK(MPI_Reduce_scatter_block(rs, rr, block, MPI_FLOAT, MPI_SUM, a) == MPI_SUCCESS, "reduce_scatter");
    CHECK(rr[0] == (float)g_size && rr[block - 1] == (float)g_size, "reduce_scatter %f", rr[0]);
    expect(a, "reduce-scatter whose whole input reaches the floor", 3, 0);
    float *ag = calloc((size_t)LARGE * g_size, sizeof(float));
    CHECK(MPI_Allgather(rr, 1, MPI_FLOAT, ag, 1, MPI_FLOAT, a) == MPI_SUCCESS, "allgather small");
    g_straight += 1;
    CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, LARGE, MPI_FLOAT, a) == MPI_SUCCESS, "allgather");
    expect(a, "allgather of a block at the floor", 4, 0);

    free(ag);
    free(rs);
    free(rr);
    free(in);
    free(out);
    free(s);
    free(so);
    free(f);
    free(fo);
    MPI_Op_free(&op);
    MPI_Comm_free(&a);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const char *env = getenv("TERSE_MIN_BYTES");
    CHECK(env && strcmp(env, "4096") == 0, "run with TERSE_MIN_BYTES=4096 (got %s)", env ? env : "nothing");
    plain_communicator();
    if (g_rank == 0) printf("expected passed_straight=%ld\n", g_straight);
    MPI_Finalize();
    return 0;
}
