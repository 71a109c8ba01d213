#include "device/cuda_driver.h"

#ifdef TERSE_HAVE_CUDA
#include "util/log.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>

namespace terse::device {

namespace {

struct Loaded {
    CudaDriver driver;
    bool present = false;
    char absence[256] = "";
};

template <class Fn>
bool resolve(void *lib, const char *name, Fn *fn, Loaded *l) {
    *fn = reinterpret_cast<Fn>(dlsym(lib, name));
    if (*fn) return true;
    snprintf(l->absence, sizeof l->absence, "libcuda.so.1 lacks %s", name);
    return false;
}

// The names below are what cuda.h's macros turn the API names into (the
// _v2 ABI); a driver lacking one is as unusable as one lacking any other.
bool resolve_staging(void *lib, Loaded *l) {
    CudaDriver &d = l->driver;
    return resolve(lib, "cuCtxPushCurrent_v2", &d.ctx_push, l) &&
           resolve(lib, "cuCtxPopCurrent_v2", &d.ctx_pop, l) &&
           resolve(lib, "cuMemHostAlloc", &d.mem_host_alloc, l) &&
           resolve(lib, "cuMemFreeHost", &d.mem_free_host, l) &&
           resolve(lib, "cuMemcpyDtoHAsync_v2", &d.memcpy_dtoh_async, l) &&
           resolve(lib, "cuMemcpyHtoDAsync_v2", &d.memcpy_htod_async, l) &&
           resolve(lib, "cuStreamCreate", &d.stream_create, l) &&
           resolve(lib, "cuStreamDestroy_v2", &d.stream_destroy, l) &&
           resolve(lib, "cuStreamSynchronize", &d.stream_synchronize, l) &&
           resolve(lib, "cuEventCreate", &d.event_create, l) &&
           resolve(lib, "cuEventDestroy_v2", &d.event_destroy, l) &&
           resolve(lib, "cuEventRecord", &d.event_record, l) &&
           resolve(lib, "cuEventSynchronize", &d.event_synchronize, l) &&
           resolve(lib, "cuMemAlloc_v2", &d.mem_alloc, l) && resolve(lib, "cuMemFree_v2", &d.mem_free, l) &&
           resolve(lib, "cuEventQuery", &d.event_query, l) &&
           resolve(lib, "cuStreamWaitEvent", &d.stream_wait_event, l) &&
           resolve(lib, "cuMemcpyDtoDAsync_v2", &d.memcpy_dtod_async, l);
}

void load(Loaded *l) {
    // Kept for the life of the process (see cuda_driver.h).
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(l->absence, sizeof l->absence, "%s", why ? why : "libcuda.so.1 not found");
        TERSE_LOG_DEBUG("no CUDA driver: %s; every buffer is host memory", l->absence);
        return;
    }
    decltype(&cuDriverGetVersion) get_version = nullptr;
    if (!resolve(lib, "cuDriverGetVersion", &get_version, l) ||
        !resolve(lib, "cuPointerGetAttributes", &l->driver.pointer_get_attributes, l) ||
        !resolve(lib, "cuGetErrorString", &l->driver.get_error_string, l) || !resolve_staging(lib, l)) {
        TERSE_LOG_WARN("CUDA driver unusable: %s; every buffer is taken as host memory", l->absence);
        return;
    }
    // The toolkit's stub library answers every call with
    // CUDA_ERROR_STUB_LIBRARY: a machine with only the toolkit.
    const CUresult rc = get_version(&l->driver.version);
    if (rc != CUDA_SUCCESS) {
        snprintf(l->absence, sizeof l->absence, "cuDriverGetVersion failed (CUresult %d)", int(rc));
        TERSE_LOG_DEBUG("no CUDA driver: %s; every buffer is host memory", l->absence);
        return;
    }
    l->present = true;
    TERSE_LOG_DEBUG("CUDA driver %d.%d loaded", l->driver.version / 1000, l->driver.version % 1000 / 10);
}

Loaded &loaded() {
    static Loaded l;
    static std::once_flag once;
    std::call_once(once, load, &l);
    return l;
}

}  // namespace

const CudaDriver *cuda_driver() {
    Loaded &l = loaded();
    return l.present ? &l.driver : nullptr;
}

const char *cuda_driver_absence() { return loaded().absence; }

const char *cuda_result_string(const CudaDriver &d, CUresult rc) {
    const char *s = nullptr;
    if (d.get_error_string(rc, &s) != CUDA_SUCCESS || !s) return "unknown CUresult";
    return s;
}

}  // namespace terse::device
#endif
