// Memory-kind detection on a real GPU (device/mem_kind.h): device, managed,
// page-locked, registered and plain host buffers, pointers inside them,
// memory freed and allocated again, and what a classification costs (with
// and without the range cache, printed).  Exits 77 (skipped) with a message
// where the CUDA runtime finds no device or no driver.
//
// Plain C++ with the CUDA runtime, no GoogleTest: tests/gpu/device-check.sh
// builds it from the working tree on a machine that may have no more than
// a compiler and the toolkit.
#include "device/cuda_driver.h"
#include "device/cuda_mem_query.h"
#include "device/mem_kind.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace terse::device;

namespace {

int g_failures = 0;

const char *kind_name(terse_mem_kind_t k) {
    switch (k) {
    case TERSE_MEM_HOST: return "host";
    case TERSE_MEM_CUDA: return "device";
    case TERSE_MEM_CUDA_HOST: return "pinned host";
    case TERSE_MEM_CUDA_MANAGED: return "managed";
    }
    return "?";
}

void expect_kind(const char *what, const void *p, size_t len, terse_mem_kind_t want) {
    const terse_mem_kind_t got = buffer_mem_kind(p, len);
    if (got == want) return;
    fprintf(stderr, "FAIL: %s at %p: %s, expected %s\n", what, p, kind_name(got), kind_name(want));
    ++g_failures;
}

void expect(bool ok, const char *what) {
    if (ok) return;
    fprintf(stderr, "FAIL: %s\n", what);
    ++g_failures;
}

bool cuda_ok(cudaError_t e, const char *call) {
    if (e == cudaSuccess) return true;
    fprintf(stderr, "FAIL: %s: %s\n", call, cudaGetErrorString(e));
    ++g_failures;
    return false;
}

template <class F>
double ns_per_call(int n, F &&f) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

}  // namespace

int main() {
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        printf("SKIP: no CUDA device here (cudaGetDeviceCount: %s, %d devices)\n",
               e == cudaSuccess ? "ok" : cudaGetErrorString(e), devices);
        return 77;
    }
    // The runtime found a device, so terse's loader must find the driver.
    if (!driver_present()) {
        fprintf(stderr, "FAIL: CUDA runtime sees %d devices but terse found no driver: %s\n", devices,
                cuda_driver_absence());
        return 1;
    }
    printf("CUDA driver %d, %d devices\n", cuda_driver()->version, devices);
    const size_t n = size_t(1) << 20;
    void *dev = nullptr, *managed = nullptr, *pinned = nullptr;
    if (!cuda_ok(cudaMalloc(&dev, n), "cudaMalloc") ||
        !cuda_ok(cudaMallocManaged(&managed, n), "cudaMallocManaged") ||
        !cuda_ok(cudaMallocHost(&pinned, n), "cudaMallocHost"))
        return 1;
    char *plain = static_cast<char *>(malloc(n));
    char *registered = static_cast<char *>(malloc(n));
    int on_stack = 0;
    if (!cuda_ok(cudaHostRegister(registered, n, cudaHostRegisterDefault), "cudaHostRegister")) return 1;

    expect_kind("cudaMalloc", dev, n, TERSE_MEM_CUDA);
    expect_kind("cudaMalloc + 4096", static_cast<char *>(dev) + 4096, 64, TERSE_MEM_CUDA);
    expect_kind("cudaMallocManaged", managed, n, TERSE_MEM_CUDA_MANAGED);
    expect_kind("cudaMallocManaged + 1000", static_cast<char *>(managed) + 1000, 8, TERSE_MEM_CUDA_MANAGED);
    expect_kind("cudaMallocHost", pinned, n, TERSE_MEM_CUDA_HOST);
    expect_kind("cudaHostRegister", registered + 512, 512, TERSE_MEM_CUDA_HOST);
    expect_kind("malloc", plain, n, TERSE_MEM_HOST);
    expect_kind("stack", &on_stack, sizeof on_stack, TERSE_MEM_HOST);
    expect(mem_kind_of_call(buffer_mem_kind(plain, n), buffer_mem_kind(dev, n)) == TERSE_MEM_CUDA,
           "a host send buffer with a device receive buffer is a device call");
    const MemKindCounters c0 = mem_kind_counters();
    expect(c0.hits >= 2, "pointers inside cached allocations are found in the cache");

    // Freed: no longer device memory.  Allocated again (the driver usually
    // hands the same addresses back): a new id, queried anew.
    void *old = dev;
    cuda_ok(cudaFree(dev), "cudaFree");
    expect_kind("freed cudaMalloc", old, n, TERSE_MEM_HOST);
    void *again = nullptr;
    if (cuda_ok(cudaMalloc(&again, n), "cudaMalloc again")) {
        const uint64_t stale = mem_kind_counters().stale;
        expect_kind("cudaMalloc again", again, n, TERSE_MEM_CUDA);
        if (again == old)
            expect(mem_kind_counters().stale == stale + 1,
                   "memory allocated again at the same address is queried anew (its cached range is stale)");
        else printf("note: the driver gave new addresses; reuse at the same address not exercised\n");
    }
    cuda_ok(cudaFree(managed), "cudaFree managed");
    expect_kind("freed managed", managed, n, TERSE_MEM_HOST);

    // What a classification costs: through the cache (a hit: the id query),
    // the full query it spares, and host memory (the id query).
    const MemQueryOps ops = cuda_mem_query_ops();
    volatile int sink = 0;
    const int reps = 200000;
    const double hit = ns_per_call(reps, [&] { sink = sink + buffer_mem_kind(again, n); });
    const double host = ns_per_call(reps, [&] { sink = sink + buffer_mem_kind(plain, n); });
    MemRange r;
    const double full = ns_per_call(reps, [&] { sink = sink + ops.allocation(again, &r); });
    const double id = ns_per_call(reps, [&] { sink = sink + int(ops.buffer_id(again) & 1); });
    printf("classify: device (cache hit) %.0f ns, host %.0f ns; driver: id query %.0f ns, full query %.0f ns\n",
           hit, host, id, full);
    const MemKindCounters c = mem_kind_counters();
    printf("cache: hits=%llu misses=%llu stale=%llu host=%llu\n", (unsigned long long)c.hits,
           (unsigned long long)c.misses, (unsigned long long)c.stale, (unsigned long long)c.host);

    cudaFree(again);
    cudaFreeHost(pinned);
    cudaHostUnregister(registered);
    free(registered);
    free(plain);
    if (g_failures) {
        fprintf(stderr, "%d failures\n", g_failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
