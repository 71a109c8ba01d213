// Whether the MPI library reads CUDA device memory itself.
#pragma once

namespace terse {

// Asked once, at MPI_Init (after PMPI_Init): Open MPI's
// MPIX_Query_cuda_support() where <mpi-ext.h> declares it at build time
// (the answer is the run-time library's: a CUDA-aware build may be the one
// loaded); false for every other library, whose device support terse
// cannot ask.  The answer goes to device::set_mpi_reads_device_memory() and
// the debug log.
void detect_mpi_cuda_aware();

}  // namespace terse
