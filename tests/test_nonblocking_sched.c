/* Scheduling of non-blocking collectives (runtime/nonblocking.h):
 *   many      many outstanding operations of every kind on one
 *             communicator, issued with rank-dependent delays and
 *             completed in a different order on every rank (MPI_Wait in a
 *             shuffled order, MPI_Waitany, MPI_Testsome), results checked;
 *   threads   MPI_THREAD_MULTIPLE: two threads, each with its own
 *             communicator and many outstanding operations; on a third
 *             communicator one rank holds a large operation back until
 *             the others' work is done, which must not stall them
 *             (exit 77 without MPI_THREAD_MULTIPLE);
 *   priority  several large operations at priority 0, then one at
 *             priority 10 issued last (terse_set_next_priority): it must
 *             finish first on every rank (checked with nb_policy=priority;
 *             with "priority report" the order is only printed);
 *   memory N  N outstanding 1 MiB MPI_Iallreduce: prints the growth of
 *             the resident set over the user's buffers, which must stay
 *             below the bound given as third argument (MiB). */
#include "mpi_check.h"
#include "proc_memory.h"

#include <terse/terse.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

/* A deterministic per-rank shuffle of 0..n-1. */
static void shuffle(int *perm, int n, unsigned seed) {
    for (int i = 0; i < n; ++i) perm[i] = i;
    for (int i = n - 1; i > 0; --i) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 8) % (unsigned)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* One outstanding operation of the "many" workload: kind k % 3. */
struct op {
    int kind, count;
    int *in, *out;
};

static void op_issue(struct op *o, int k, MPI_Comm comm, MPI_Request *req) {
    o->kind = k % 3;
    o->count = 20000 + 7919 * (k % 11); /* every size above the floor, distinct */
    o->in = malloc((size_t)o->count * size * sizeof(int));
    o->out = malloc((size_t)o->count * size * sizeof(int));
    CHECK(o->in && o->out, "out of memory");
    for (int i = 0; i < o->count * size; ++i) o->in[i] = (rank + 1) * (i % 97) + k;
    int rc;
    if (o->kind == 0) rc = MPI_Iallreduce(o->in, o->out, o->count, MPI_INT, MPI_SUM, comm, req);
    else if (o->kind == 1) rc = MPI_Ireduce_scatter_block(o->in, o->out, o->count, MPI_INT, MPI_SUM, comm, req);
    else rc = MPI_Iallgather(o->in, o->count, MPI_INT, o->out, o->count, MPI_INT, comm, req);
    CHECK(rc == MPI_SUCCESS, "issuing operation %d", k);
}

static void op_check(struct op *o, int k) {
    const int sum_ranks = size * (size + 1) / 2;
    if (o->kind == 0) {
        for (int i = 0; i < o->count; ++i)
            CHECK(o->out[i] == sum_ranks * (i % 97) + size * k, "op %d allreduce [%d] = %d", k, i, o->out[i]);
    } else if (o->kind == 1) {
        for (int i = 0; i < o->count; ++i) {
            int g = rank * o->count + i;
            CHECK(o->out[i] == sum_ranks * (g % 97) + size * k, "op %d reduce-scatter [%d] = %d", k, i,
                  o->out[i]);
        }
    } else {
        for (int q = 0; q < size; ++q)
            for (int i = 0; i < o->count; ++i)
                CHECK(o->out[q * o->count + i] == (q + 1) * (i % 97) + k, "op %d allgather from %d [%d] = %d", k,
                      q, i, o->out[q * o->count + i]);
    }
    free(o->in);
    free(o->out);
}

/* n operations on comm, rank r sleeping r * delay_us between issues, then
 * completed in an order of this rank's own; tag varies the workload. */
static void many(MPI_Comm comm, int n, int delay_us, unsigned tag) {
    struct op *ops = calloc((size_t)n, sizeof *ops);
    MPI_Request *reqs = malloc((size_t)n * sizeof *reqs);
    int *perm = malloc((size_t)n * sizeof *perm), *idx = malloc((size_t)n * sizeof *idx);
    for (int k = 0; k < n; ++k) {
        op_issue(&ops[k], k + (int)tag, comm, &reqs[k]);
        if (delay_us) usleep((useconds_t)((rank * delay_us) % 3000));
    }
    /* A third in a shuffled order, a third by MPI_Waitany, the rest by
     * MPI_Testsome. */
    shuffle(perm, n, 17u * (unsigned)rank + tag + 1);
    int done = 0;
    for (int i = 0; i < n / 3; ++i) {
        int k = perm[i];
        if (reqs[k] == MPI_REQUEST_NULL) continue;
        CHECK(MPI_Wait(&reqs[k], MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait %d", k);
        op_check(&ops[k], k + (int)tag);
        ++done;
    }
    for (int i = 0; i < n / 3; ++i) {
        int k = -1;
        CHECK(MPI_Waitany(n, reqs, &k, MPI_STATUS_IGNORE) == MPI_SUCCESS, "waitany");
        if (k == MPI_UNDEFINED) break;
        op_check(&ops[k], k + (int)tag);
        ++done;
    }
    while (done < n) {
        int outcount = 0;
        CHECK(MPI_Testsome(n, reqs, &outcount, idx, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "testsome");
        CHECK(outcount != MPI_UNDEFINED, "testsome: nothing active with %d operations left", n - done);
        for (int i = 0; i < outcount; ++i) op_check(&ops[idx[i]], idx[i] + (int)tag);
        done += outcount;
    }
    free(ops);
    free(reqs);
    free(perm);
    free(idx);
}

struct job {
    MPI_Comm comm;
    int id;
};

static void *thread_main(void *arg) {
    struct job *j = arg;
    for (int round = 0; round < 3; ++round) many(j->comm, 24, 200 * (j->id + 1), 1000u * (unsigned)j->id + round);
    return NULL;
}

static int threads(void) {
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) return 77;
    MPI_Comm c[3];
    for (int i = 0; i < 3; ++i) MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
    /* The slow communicator: every rank but the last issues a large
     * allreduce now; the last issues it only after the two threads' work
     * on the other communicators finished, so it waits on that rank all
     * along and must not hold them up. */
    const int big = 1 << 20;
    float *bin = malloc(big * sizeof(float)), *bout = malloc(big * sizeof(float));
    for (int i = 0; i < big; ++i) bin[i] = (float)(rank + 1);
    MPI_Request slow = MPI_REQUEST_NULL;
    /* The first non-blocking call on a communicator is collective (it makes
     * the control plane's duplicate): every rank makes it here. */
    CHECK(MPI_Iallreduce(bin, bout, big, MPI_FLOAT, MPI_SUM, c[2], &slow) == MPI_SUCCESS, "first");
    CHECK(MPI_Wait(&slow, MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait first");
    const int late = rank == size - 1;
    if (!late) CHECK(MPI_Iallreduce(bin, bout, big, MPI_FLOAT, MPI_SUM, c[2], &slow) == MPI_SUCCESS, "slow");
    pthread_t t[2];
    struct job jobs[2] = {{c[0], 0}, {c[1], 1}};
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, thread_main, &jobs[i]);
    for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
    if (!late && size > 1) {
        int flag = 1;
        CHECK(MPI_Test(&slow, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS, "test slow");
        CHECK(!flag, "the slow allreduce finished before its last rank issued it");
    }
    /* The last rank issues it only once every other rank has looked: its
     * own threads may finish first, and then the allreduce may complete
     * before a slower rank's test. */
    MPI_Barrier(c[0]);
    if (late) CHECK(MPI_Iallreduce(bin, bout, big, MPI_FLOAT, MPI_SUM, c[2], &slow) == MPI_SUCCESS, "slow");
    CHECK(MPI_Wait(&slow, MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait slow");
    for (int i = 0; i < big; ++i) CHECK(bout[i] == (float)(size * (size + 1) / 2), "slow [%d] = %g", i, bout[i]);
    free(bin);
    free(bout);
    for (int i = 0; i < 3; ++i) MPI_Comm_free(&c[i]);
    return 0;
}

/* LOW operations of count elements at priority 0, then one at priority 10. */
static int priority(int check) {
    enum { LOW = 4 };
    const int count = 4 << 20; /* 16 MiB of floats each */
    float *in[LOW + 1], *out[LOW + 1];
    for (int k = 0; k <= LOW; ++k) {
        in[k] = malloc((size_t)count * sizeof(float));
        out[k] = malloc((size_t)count * sizeof(float));
        CHECK(in[k] && out[k], "out of memory");
        for (int i = 0; i < count; ++i) in[k][i] = (float)(rank + k);
        memset(out[k], 0, (size_t)count * sizeof(float));
    }
    MPI_Request reqs[LOW + 1];
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    double at_issue = 0, at_done[LOW + 1];
    for (int k = 0; k <= LOW; ++k) {
        if (k == LOW) at_issue = MPI_Wtime() - t0;
        if (k == LOW) CHECK(terse_set_next_priority(MPI_COMM_WORLD, 10) == TERSE_OK, "set priority");
        CHECK(MPI_Iallreduce(in[k], out[k], count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &reqs[k]) == MPI_SUCCESS,
              "iallreduce %d", k);
    }
    int order[LOW + 1], n = 0;
    while (n <= LOW) {
        for (int k = 0; k <= LOW; ++k) {
            if (reqs[k] == MPI_REQUEST_NULL) continue;
            int flag = 0;
            CHECK(MPI_Test(&reqs[k], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS, "test %d", k);
            if (flag) {
                at_done[k] = MPI_Wtime() - t0;
                order[n++] = k;
            }
        }
    }
    char line[128];
    int at = snprintf(line, sizeof line, "rank %d completion order:", rank);
    for (int i = 0; i <= LOW; ++i) at += snprintf(line + at, sizeof line - (size_t)at, " %d", order[i]);
    printf("%s (operation %d has priority 10)\n", line, LOW);
    if (!check) {
        printf("rank %d: last issued at %.1f ms; finished at (ms):", rank, 1e3 * at_issue);
        for (int k = 0; k <= LOW; ++k) printf(" %.1f", 1e3 * at_done[k]);
        printf("\n");
    }
    for (int k = 0; k <= LOW; ++k) {
        const float want = (float)(size * (size - 1) / 2 + size * k);
        for (int i = 0; i < count; i += 4099) CHECK(out[k][i] == want, "op %d [%d] = %g", k, i, out[k][i]);
        free(in[k]);
        free(out[k]);
    }
    if (check) CHECK(order[0] == LOW, "the priority-10 operation issued last finished at place %d", n);
    return 0;
}

static int memory(int n, long bound_mib) {
    const int count = 1 << 18; /* 1 MiB of floats */
    float *in = malloc((size_t)count * sizeof(float));
    float **out = malloc((size_t)n * sizeof *out);
    MPI_Request *reqs = malloc((size_t)n * sizeof *reqs);
    CHECK(in && out && reqs, "out of memory");
    for (int i = 0; i < count; ++i) in[i] = (float)rank;
    for (int k = 0; k < n; ++k) {
        out[k] = malloc((size_t)count * sizeof(float));
        CHECK(out[k], "out of memory");
        memset(out[k], 0, (size_t)count * sizeof(float)); /* the user's memory, resident before we measure */
    }
    /* One round first: the transport, the ports and the pools exist. */
    for (int k = 0; k < 2; ++k)
        CHECK(MPI_Iallreduce(in, out[k], count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &reqs[k]) == MPI_SUCCESS,
              "warm");
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    const long base = rss_kib();
    long peak = base;
    for (int k = 0; k < n; ++k) {
        /* One shared send buffer: MPI lets outstanding operations read it. */
        CHECK(MPI_Iallreduce(in, out[k], count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &reqs[k]) == MPI_SUCCESS,
              "iallreduce %d", k);
        long r = rss_kib();
        if (r > peak) peak = r;
    }
    for (int flag = 0; !flag;) {
        CHECK(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "testall");
        long r = rss_kib();
        if (r > peak) peak = r;
    }
    const float want = (float)(size * (size - 1) / 2);
    for (int k = 0; k < n; ++k) {
        CHECK(out[k][0] == want && out[k][count - 1] == want, "op %d: %g", k, out[k][0]);
        free(out[k]);
    }
    long growth = 0, mine = (peak - base) / 1024;
    MPI_Allreduce(&mine, &growth, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d outstanding 1 MiB MPI_Iallreduce on %d ranks: resident set grew by at most %ld MiB over the "
               "buffers (bound %ld MiB)\n",
               n, size, growth, bound_mib);
    CHECK(mine <= bound_mib, "resident set grew by %ld MiB with %d outstanding operations", mine, n);
    free(in);
    free(out);
    free(reqs);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "many";
    int provided = 0;
    MPI_Init_thread(&argc, &argv, strcmp(mode, "threads") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = 0;
    if (strcmp(mode, "many") == 0) {
        many(MPI_COMM_WORLD, 60, 300, 0);
        many(MPI_COMM_WORLD, 40, 0, 7);
    } else if (strcmp(mode, "threads") == 0) {
        rc = threads();
    } else if (strcmp(mode, "priority") == 0) {
        rc = priority(!(argc > 2 && strcmp(argv[2], "report") == 0));
    } else if (strcmp(mode, "memory") == 0) {
        rc = memory(argc > 2 ? atoi(argv[2]) : 1000, argc > 3 ? atol(argv[3]) : 64);
    } else {
        fprintf(stderr, "usage: %s many|threads|priority [report]|memory [N [MiB]]\n", argv[0]);
        rc = 2;
    }
    MPI_Finalize();
    return rc;
}
