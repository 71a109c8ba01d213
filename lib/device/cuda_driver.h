// The CUDA driver API, loaded at first need.
//
// libterse never links libcuda or libcudart: a libterse.so built with CUDA
// runs on machines without a driver or a GPU.  The first call of
// cuda_driver() dlopen()s libcuda.so.1 (as NCCL and UCX's lazy loading do)
// and resolves the few entry points terse uses; a machine without it (or
// with only the toolkit's stub library) is a state, "no CUDA driver", not
// an error: every buffer is then host memory, as in a build without CUDA.
//
// terse never calls cuInit(): a process that has not initialised CUDA
// itself has no device memory, and the driver answers its queries with
// CUDA_ERROR_NOT_INITIALIZED, which callers read as "host".  The library
// is never unloaded: the application's own CUDA teardown may still be
// running at exit, and unloading the driver under it is not safe.
//
// Only built with the toolkit's headers (TERSE_HAVE_CUDA); the entry
// points are the unversioned ones, stable since CUDA 7.
#pragma once

#include "terse_build_config.h"

#ifdef TERSE_HAVE_CUDA
#include <cuda.h>

namespace terse::device {

struct CudaDriver {
    decltype(&cuPointerGetAttributes) pointer_get_attributes = nullptr;
    decltype(&cuGetErrorString) get_error_string = nullptr;
    int version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
};

// The loaded driver, or nullptr when this machine has none.  Thread-safe;
// loads once, on the first call.
const CudaDriver *cuda_driver();

// Why cuda_driver() is nullptr (dlerror() or the failing call), for logs
// and tests; "" while a driver is loaded.  Loads it first, as
// cuda_driver() does.
const char *cuda_driver_absence();

}  // namespace terse::device
#endif
