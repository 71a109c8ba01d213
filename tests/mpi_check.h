/* Minimal checks for multi-rank test programs: a failed check prints the
 * rank, the location and the message, then aborts the whole job so that no
 * rank is left waiting. */
#ifndef TERSE_TESTS_MPI_CHECK_H
#define TERSE_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            int r_ = -1;                                                                           \
            PMPI_Comm_rank(MPI_COMM_WORLD, &r_);                                                   \
            fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ", r_, __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            fflush(stderr);                                                                        \
            PMPI_Abort(MPI_COMM_WORLD, 1);                                                         \
        }                                                                                          \
    } while (0)

#endif
