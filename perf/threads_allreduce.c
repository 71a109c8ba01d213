/*
 * threads-allreduce: per-call latency of MPI_Allreduce when several threads
 * of each rank run allreduces at the same time, each on its own duplicate of
 * MPI_COMM_WORLD (MPI_THREAD_MULTIPLE).  Anything the threads share on the
 * call path (a lock, a contended cache line) shows as a latency that grows
 * with the thread count while a single thread's does not.  An ordinary MPI
 * program: run it plain and under terse (LD_PRELOAD) and compare.
 *
 *   mpirun -np 2 perf/threads-allreduce -t 2 -n 200000 -c 1 -d int
 *
 * Prints one line: the mean microseconds per call of the slowest thread on
 * the slowest rank, and of the fastest.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_THREADS = 16 };

typedef struct job {
    MPI_Comm comm;
    MPI_Datatype type;
    int count, iters, warmup;
    pthread_barrier_t *start;
    double seconds;
} job_t;

static void *run(void *arg) {
    job_t *j = arg;
    int esize = 0;
    MPI_Type_size(j->type, &esize);
    char *in = calloc((size_t)j->count + 1, (size_t)esize), *out = calloc((size_t)j->count + 1, (size_t)esize);
    for (int i = 0; i < j->warmup; ++i) MPI_Allreduce(in, out, j->count, j->type, MPI_SUM, j->comm);
    /* Every thread of the rank starts timing together, after its peers on
     * the other ranks are ready too. */
    MPI_Barrier(j->comm);
    pthread_barrier_wait(j->start);
    double t0 = MPI_Wtime();
    for (int i = 0; i < j->iters; ++i) MPI_Allreduce(in, out, j->count, j->type, MPI_SUM, j->comm);
    j->seconds = MPI_Wtime() - t0;
    free(in);
    free(out);
    return NULL;
}

static void usage(void) {
    fprintf(stderr,
            "usage: threads-allreduce [-t THREADS (1..%d)] [-n ITERS] [-w WARMUP] [-c COUNT] "
            "[-d float|double|int]\n",
            MAX_THREADS);
}

int main(int argc, char **argv) {
    int threads = 2, iters = 100000, warmup = 1000, count = 1;
    MPI_Datatype type = MPI_INT;
    const char *type_name = "int";
    int opt;
    while ((opt = getopt(argc, argv, "t:n:w:c:d:h")) != -1) {
        switch (opt) {
        case 't': threads = atoi(optarg); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'c': count = atoi(optarg); break;
        case 'd':
            type_name = optarg;
            if (strcmp(optarg, "float") == 0) type = MPI_FLOAT;
            else if (strcmp(optarg, "double") == 0) type = MPI_DOUBLE;
            else if (strcmp(optarg, "int") == 0) type = MPI_INT;
            else {
                usage();
                return 2;
            }
            break;
        default: usage(); return 2;
        }
    }
    if (threads < 1 || threads > MAX_THREADS || iters < 1 || warmup < 0 || count < 0) {
        usage();
        return 2;
    }
    int provided = 0, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE && threads > 1) {
        if (rank == 0) fprintf(stderr, "threads-allreduce: the MPI library provides no MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 77;
    }
    job_t jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int t = 0; t < threads; ++t) {
        jobs[t] = (job_t){.type = type, .count = count, .iters = iters, .warmup = warmup, .start = &start};
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
    }
    for (int t = 0; t < threads; ++t) pthread_create(&th[t], NULL, run, &jobs[t]);
    for (int t = 0; t < threads; ++t) pthread_join(th[t], NULL);
    double slow = 0, fast = 1e30;
    for (int t = 0; t < threads; ++t) {
        double us = jobs[t].seconds / iters * 1e6;
        if (us > slow) slow = us;
        if (us < fast) fast = us;
        MPI_Comm_free(&jobs[t].comm);
    }
    double slowest = 0, fastest = 0;
    MPI_Reduce(&slow, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&fast, &fastest, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("ranks=%d threads=%d count=%d type=%s iters=%d us_per_call slowest=%.3f fastest=%.3f\n", size,
               threads, count, type_name, iters, slowest, fastest);
    pthread_barrier_destroy(&start);
    MPI_Finalize();
    return 0;
}
