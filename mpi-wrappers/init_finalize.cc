// MPI_Init, MPI_Init_thread and MPI_Finalize: start terse after the MPI
// library is up (its address exchange needs MPI_COMM_WORLD) and stop it
// before the library goes down.
#include "dispatch.h"
#include "error_codes.h"
#include "mpi_cuda_aware.h"
#include "reentry_guard.h"

#include "runtime/comm_state.h"
#include "runtime/nonblocking.h"
#include "util/log.h"

#include <cstdio>

namespace terse {

void start_runtime(int provided) {
    ReentryGuard guard;
    register_error_codes();
    Status s = runtime_init(provided);
    // After runtime_init: the log level is set.
    detect_mpi_cuda_aware();
    if (s == TERSE_OK) {
        nb_init(provided, mpi_error_code);
        return;
    }
    // A misconfiguration must not silently change what the job computes or
    // how: stop with the reason rather than run without terse.
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "terse[%d] error: %s\nterse[%d] error: aborting (%s); see terse(7)\n", rank, last_error(),
            rank, terse_status_string(s));
    fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace terse

extern "C" int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) return rc;
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    terse::start_runtime(provided);
    return rc;
}

extern "C" int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc != MPI_SUCCESS) return rc;
    terse::start_runtime(*provided);
    return rc;
}

extern "C" int MPI_Finalize(void) {
    {
        terse::ReentryGuard guard;
        terse::runtime_finalize();
    }
    return PMPI_Finalize();
}
