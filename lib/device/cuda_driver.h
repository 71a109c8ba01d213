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
// Only built with the toolkit's headers (TERSE_HAVE_CUDA).  Entry points
// are resolved by the names cuda.h's macros map the API to (the _v2 forms
// of the copies and of cuMemHostAlloc's neighbours), so that each pointer
// has the ABI of the declaration its type is taken from.
#pragma once

#include "terse_build_config.h"

#ifdef TERSE_HAVE_CUDA
#include <cuda.h>

namespace terse::device {

struct CudaDriver {
    decltype(&cuPointerGetAttributes) pointer_get_attributes = nullptr;
    decltype(&cuGetErrorString) get_error_string = nullptr;
    // Staging device buffers through pinned host memory (device/staging.h):
    // the copies run in the buffer's own context, pushed on the thread that
    // copies (an application thread or the progress thread).
    decltype(&cuCtxPushCurrent) ctx_push = nullptr;
    decltype(&cuCtxPopCurrent) ctx_pop = nullptr;
    decltype(&cuMemHostAlloc) mem_host_alloc = nullptr;
    decltype(&cuMemFreeHost) mem_free_host = nullptr;
    decltype(&cuMemcpyDtoHAsync) memcpy_dtoh_async = nullptr;
    decltype(&cuMemcpyHtoDAsync) memcpy_htod_async = nullptr;
    decltype(&cuStreamCreate) stream_create = nullptr;
    decltype(&cuStreamDestroy) stream_destroy = nullptr;
    decltype(&cuStreamSynchronize) stream_synchronize = nullptr;
    decltype(&cuEventCreate) event_create = nullptr;
    decltype(&cuEventDestroy) event_destroy = nullptr;
    decltype(&cuEventRecord) event_record = nullptr;
    decltype(&cuEventSynchronize) event_synchronize = nullptr;
    // Device codecs on a communicator's lane (device/device_lane.h): device
    // scratch, an event polled without blocking, and one stream waiting
    // for another's work without the host waiting.
    decltype(&cuMemAlloc) mem_alloc = nullptr;
    decltype(&cuMemFree) mem_free = nullptr;
    decltype(&cuEventQuery) event_query = nullptr;
    decltype(&cuStreamWaitEvent) stream_wait_event = nullptr;
    // An in-place reduce-scatter's result moved to the buffer's start.
    decltype(&cuMemcpyDtoDAsync) memcpy_dtod_async = nullptr;
    int version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
};

// A CUresult as text ("CUDA_ERROR_...: why"), for messages.
const char *cuda_result_string(const CudaDriver &d, CUresult rc);

// The loaded driver, or nullptr when this machine has none.  Thread-safe;
// loads once, on the first call.
const CudaDriver *cuda_driver();

// Why cuda_driver() is nullptr (dlerror() or the failing call), for logs
// and tests; "" while a driver is loaded.  Loads it first, as
// cuda_driver() does.
const char *cuda_driver_absence();

}  // namespace terse::device
#endif
