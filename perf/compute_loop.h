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

/* Units per second, measured on every rank of `comm` at once and averaged
 * over the ranks: all ranks start together and compute for the same window
 * of wall time, so ranks that share cores calibrate as they will run (a
 * rank that calibrated alone while the others still slept in a barrier
 * would count a whole core).  The median of three windows of 0.2 s. */
static inline double compute_loop_calibrate(MPI_Comm comm) {
    double rate[3];
    for (int k = 0; k < 3; k++) {
        PMPI_Barrier(comm);
        double t0 = MPI_Wtime(), t = t0, units = 0;
        while (t - t0 < 0.2) {
            compute_loop_run(64);
            units += 64;
            t = MPI_Wtime();
        }
        rate[k] = units / (t - t0);
    }
    double mid = rate[0] > rate[1] ? (rate[1] > rate[2]   ? rate[1]
                                      : rate[0] > rate[2] ? rate[2]
                                                          : rate[0])
                                   : (rate[0] > rate[2]   ? rate[0]
                                      : rate[1] > rate[2] ? rate[2]
                                                          : rate[1]);
    int size = 1;
    double sum = 0;
    MPI_Comm_size(comm, &size);
    PMPI_Allreduce(&mid, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
    return sum / size;
}

#endif
