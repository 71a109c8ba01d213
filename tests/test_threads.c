/* Two communicators driven from two threads at once under
 * MPI_THREAD_MULTIPLE: each thread runs intercepted allreduces on its own
 * duplicate of MPI_COMM_WORLD and checks every result. */
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
        MPI_Comm_free(&jobs[t].comm);
    }
    MPI_Finalize();
    return 0;
}
