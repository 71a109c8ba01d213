/* Two communicators driven from two threads at once under
 * MPI_THREAD_MULTIPLE: each thread runs intercepted allreduces on its own
 * duplicate of MPI_COMM_WORLD and checks every result.  Then the lock-free
 * lookup of communicator states: each thread creates, configures, uses and
 * frees communicators in a loop while the other does the same, so that
 * entries come and go next to the ones being looked up and freed handles
 * are reused; every lookup must find the state of its own communicator
 * (its own configuration and statistics), never another's or a freed one. */
#include "mpi_check.h"

#include <terse/terse.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 100003, ITERS = 20 };

struct job {
    MPI_Comm comm;
    int id;
};

static void *run(void *arg) {
    struct job *j = arg;
    int rank, size;
    MPI_Comm_rank(j->comm, &rank);
    MPI_Comm_size(j->comm, &size);
    int *in = malloc(COUNT * sizeof(int)), *out = malloc(COUNT * sizeof(int));
    for (int it = 0; it < ITERS; ++it) {
        for (int i = 0; i < COUNT; ++i) in[i] = (rank + 1) * (i % 1000) + j->id * it;
        CHECK(MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, j->comm) == MPI_SUCCESS, "allreduce");
        for (int i = 0; i < COUNT; ++i) {
            int expect = (size * (size + 1) / 2) * (i % 1000) + size * j->id * it;
            CHECK(out[i] == expect, "thread %d iter %d elem %d: %d != %d", j->id, it, i, out[i], expect);
        }
    }
    free(in);
    free(out);
    return NULL;
}

enum { ROUNDS = 150, SMALL = 1000 };

/* The communicator handles a thread saw, to report whether freed handles
 * were reused (the allocator decides; the checks hold either way). */
struct churn_job {
    MPI_Comm parent;
    int id;
    int reused;
};

static void *churn(void *arg) {
    struct churn_job *j = arg;
    int rank, size;
    MPI_Comm_rank(j->parent, &rank);
    MPI_Comm_size(j->parent, &size);
    int in[SMALL], out[SMALL];
    MPI_Comm prev = MPI_COMM_NULL;
    for (int r = 0; r < ROUNDS; ++r) {
        MPI_Comm c;
        CHECK(MPI_Comm_dup(j->parent, &c) == MPI_SUCCESS, "dup");
        if (c == prev) j->reused++;
        prev = c;
        /* A setting only this communicator has: chunk sizes are multiples
         * of 4 KiB, distinct per thread and round. */
        char want[32], cfg[512], key[48];
        snprintf(want, sizeof want, "%d", 4096 * (1 + j->id * ROUNDS + r));
        CHECK(terse_comm_configure(c, "chunk_bytes", want) == TERSE_OK, "%s", terse_last_error());
        for (int i = 0; i < SMALL; ++i) in[i] = rank + i + r;
        CHECK(MPI_Allreduce(in, out, SMALL, MPI_INT, MPI_SUM, c) == MPI_SUCCESS, "allreduce");
        for (int i = 0; i < SMALL; ++i)
            CHECK(out[i] == size * (size - 1) / 2 + size * (i + r), "thread %d round %d elem %d: %d", j->id, r, i,
                  out[i]);
        CHECK(terse_comm_get_config(c, cfg, sizeof cfg) == TERSE_OK, "%s", terse_last_error());
        snprintf(key, sizeof key, " chunk_bytes=%s ", want);
        CHECK(strstr(cfg, key), "thread %d round %d: the communicator's configuration is '%s', want%s", j->id, r,
              cfg, key);
        terse_comm_stats_t st;
        CHECK(terse_comm_stats(c, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
        CHECK(st.calls_intercepted == 1 && st.calls_passed == 0,
              "thread %d round %d: statistics of another communicator (intercepted %llu, passed %llu)", j->id, r,
              (unsigned long long)st.calls_intercepted, (unsigned long long)st.calls_passed);
        CHECK(MPI_Comm_free(&c) == MPI_SUCCESS, "free");
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        printf("SKIP: MPI library provides thread level %d only\n", provided);
        MPI_Finalize();
        return 77;
    }
    struct job jobs[2];
    pthread_t th[2];
    for (int t = 0; t < 2; ++t) {
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
        jobs[t].id = t + 1;
    }
    for (int t = 0; t < 2; ++t) pthread_create(&th[t], NULL, run, &jobs[t]);
    for (int t = 0; t < 2; ++t) pthread_join(th[t], NULL);
    for (int t = 0; t < 2; ++t) {
        terse_comm_stats_t st;
        CHECK(terse_comm_stats(jobs[t].comm, &st, sizeof st) == TERSE_OK, "%s", terse_last_error());
        CHECK(st.calls_intercepted == ITERS, "comm %d: intercepted %llu of %d calls", t,
              (unsigned long long)st.calls_intercepted, ITERS);
    }

    struct churn_job churns[2];
    for (int t = 0; t < 2; ++t) {
        churns[t] = (struct churn_job){.parent = jobs[t].comm, .id = t};
        pthread_create(&th[t], NULL, churn, &churns[t]);
    }
    for (int t = 0; t < 2; ++t) pthread_join(th[t], NULL);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("lookup under threads: %d rounds per thread; a freed handle came back in %d and %d of them\n",
               ROUNDS, churns[0].reused, churns[1].reused);
    for (int t = 0; t < 2; ++t) MPI_Comm_free(&jobs[t].comm);
    MPI_Finalize();
    return 0;
}
