/* Non-blocking collectives from two threads at once under
 * MPI_THREAD_MULTIPLE, each on its own duplicate of MPI_COMM_WORLD: each
 * thread keeps several MPI_Iallreduce and MPI_Iallgather calls
 * outstanding, computes meanwhile, and completes them with MPI_Waitall
 * and MPI_Test loops (mixed with its own MPI_Isend/MPI_Irecv), checking
 * every result.  Exit 77 (skipped) where the MPI library has no
 * MPI_THREAD_MULTIPLE. */
#include "mpi_check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { COUNT = 60001, DEPTH = 4, ITERS = 12 };

struct job {
    MPI_Comm comm;
    int id;
};

static void *run(void *arg) {
    struct job *j = arg;
    int rank, size;
    MPI_Comm_rank(j->comm, &rank);
    MPI_Comm_size(j->comm, &size);
    int *in[DEPTH], *out[DEPTH], *gat = malloc((size_t)COUNT * size * sizeof(int));
    for (int d = 0; d < DEPTH; ++d) {
        in[d] = malloc(COUNT * sizeof(int));
        out[d] = malloc(COUNT * sizeof(int));
    }
    for (int it = 0; it < ITERS; ++it) {
        MPI_Request reqs[DEPTH + 3];
        for (int d = 0; d < DEPTH; ++d) {
            for (int i = 0; i < COUNT; ++i) in[d][i] = (rank + 1) * (i % 1000) + j->id * it + d;
            CHECK(MPI_Iallreduce(in[d], out[d], COUNT, MPI_INT, MPI_SUM, j->comm, &reqs[d]) == MPI_SUCCESS,
                  "iallreduce");
        }
        CHECK(MPI_Iallgather(in[0], COUNT, MPI_INT, gat, COUNT, MPI_INT, j->comm, &reqs[DEPTH]) == MPI_SUCCESS,
              "iallgather");
        int sendv = rank + 100 * j->id, recvv = -1;
        MPI_Irecv(&recvv, 1, MPI_INT, (rank + size - 1) % size, 3, j->comm, &reqs[DEPTH + 1]);
        MPI_Isend(&sendv, 1, MPI_INT, (rank + 1) % size, 3, j->comm, &reqs[DEPTH + 2]);
        /* Compute while they progress. */
        volatile double acc = 0;
        for (int k = 0; k < 200000; ++k) acc += k * 1e-9;
        if (it % 2) {
            CHECK(MPI_Waitall(DEPTH + 3, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "waitall");
        } else {
            for (int left = DEPTH + 3; left > 0;)
                for (int r = 0; r < DEPTH + 3; ++r) {
                    if (reqs[r] == MPI_REQUEST_NULL) continue;
                    int flag = 0;
                    CHECK(MPI_Test(&reqs[r], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS, "test");
                    if (flag) --left;
                }
        }
        CHECK(recvv == (rank + size - 1) % size + 100 * j->id, "thread %d: ring exchange got %d", j->id, recvv);
        for (int d = 0; d < DEPTH; ++d)
            for (int i = 0; i < COUNT; ++i) {
                int expect = (size * (size + 1) / 2) * (i % 1000) + size * (j->id * it + d);
                CHECK(out[d][i] == expect, "thread %d iter %d op %d elem %d: %d != %d", j->id, it, d, i,
                      out[d][i], expect);
            }
        for (int q = 0; q < size; ++q)
            for (int i = 0; i < COUNT; i += 97)
                CHECK(gat[(size_t)q * COUNT + i] == (q + 1) * (i % 1000) + j->id * it, "thread %d allgather",
                      j->id);
    }
    for (int d = 0; d < DEPTH; ++d) {
        free(in[d]);
        free(out[d]);
    }
    free(gat);
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
        jobs[t].id = t;
    }
    for (int t = 0; t < 2; ++t) pthread_create(&th[t], NULL, run, &jobs[t]);
    for (int t = 0; t < 2; ++t) pthread_join(th[t], NULL);
    for (int t = 0; t < 2; ++t) MPI_Comm_free(&jobs[t].comm);
    MPI_Finalize();
    return 0;
}
