// Shared by the C and Fortran bindings: the decision "terse or PMPI" and
// the error path.  Callers hold a ReentryGuard.
#pragma once

#include "status.h"

#include <mpi.h>

namespace terse {

// The body of MPI_Allreduce (sendbuf may be MPI_IN_PLACE).
int dispatch_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm);

// Report a terse failure on comm the MPI way: print the message, invoke the
// communicator's error handler (fatal by default), return an MPI error code.
int report_error(MPI_Comm comm, Status status, const char *call);

// Start terse after PMPI_Init / PMPI_Init_thread succeeded.
void start_runtime(int provided);

}  // namespace terse
