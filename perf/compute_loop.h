/*
 * The busy compute the overlap benchmarks run while an operation is in
 * flight: a loop of multiply-adds on a small array (in L1, so it measures
 * the core, not memory), in "units" whose rate is calibrated at start-up.
 * Work, not a clock: when another thread (an MPI progress thread) takes the
 * core, the compute takes longer, as a real computation would, and the
 * benchmarks report the time it actually took.
 */
#ifndef TERSE_PERF_COMPUTE_LOOP_H
#define TERSE_PERF_COMPUTE_LOOP_H

#include <mpi.h>
#include <stdint.h>

#define COMPUTE_LOOP_WIDTH 256
static volatile double compute_loop_sink;

/* `units` passes over the array; fractional units round to whole ones. */
static inline void compute_loop_run(double units) {
    double a[COMPUTE_LOOP_WIDTH];
    for (int j = 0; j < COMPUTE_LOOP_WIDTH; j++) a[j] = 1.0 + j * 1e-6;
    uint64_t n = units > 0 ? (uint64_t)(units + 0.5) : 0;
    for (uint64_t i = 0; i < n; i++)
        for (int j = 0; j < COMPUTE_LOOP_WIDTH; j++) a[j] = a[j] * 0.9999999 + 1e-7;
    double s = 0;
    for (int j = 0; j < COMPUTE_LOOP_WIDTH; j++) s += a[j];
    compute_loop_sink = s;
}

/* Units per second, measured on every rank of `comm` at once (so ranks that
 * share cores calibrate as they will run) and averaged over the ranks: the
 * median of five runs of about 20 ms each. */
static inline double compute_loop_calibrate(MPI_Comm comm) {
    PMPI_Barrier(comm);
    double n = 64;
    for (;;) {
        double t0 = MPI_Wtime();
        compute_loop_run(n);
        if (MPI_Wtime() - t0 >= 0.02) break;
        n *= 2;
    }
    double rate[5];
    for (int k = 0; k < 5; k++) {
        double t0 = MPI_Wtime();
        compute_loop_run(n);
        double dt = MPI_Wtime() - t0;
        rate[k] = n / (dt > 0 ? dt : 1e-9);
        for (int m = k; m > 0 && rate[m] < rate[m - 1]; m--) {
            double t = rate[m];
            rate[m] = rate[m - 1];
            rate[m - 1] = t;
        }
    }
    int size = 1;
    double sum = 0;
    MPI_Comm_size(comm, &size);
    PMPI_Allreduce(&rate[2], &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
    return sum / size;
}

#endif
