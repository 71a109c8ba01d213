/* A plain MPI program, not linked with terse: used to check interception
 * under LD_PRELOAD and terse-run.  One large allreduce, result checked. */
#include "mpi_check.h"

#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 1 << 18;
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    for (int i = 0; i < n; ++i) a[i] = i * 0.5;
    CHECK(MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce");
    for (int i = 0; i < n; ++i) CHECK(b[i] == i * 0.5 * size, "elem %d: %g", i, b[i]);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
