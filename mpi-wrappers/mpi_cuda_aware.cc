#include "mpi_cuda_aware.h"

#include "device/staged_call.h"
#include "util/log.h"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace terse {

void detect_mpi_cuda_aware() {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    const bool aware = MPIX_Query_cuda_support() == 1;
    TERSE_LOG_DEBUG("MPI library %s CUDA-aware (MPIX_Query_cuda_support): device buffers of the calls it serves "
                    "go to it %s",
                    aware ? "is" : "is not", aware ? "as they are" : "staged through pinned host memory");
#else
    const bool aware = false;
    TERSE_LOG_DEBUG("MPI library without MPIX_Query_cuda_support: taken as not CUDA-aware; device buffers of the "
                    "calls it serves go to it staged through pinned host memory");
#endif
    device::set_mpi_reads_device_memory(aware);
}

}  // namespace terse
