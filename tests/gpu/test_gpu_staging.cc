// Staging device buffers through pinned host memory on a real GPU
// (device/staged_call.h, chunked_copy.h, staging_pool.h): a staged call's
// regions copied in and back, from the thread that owns the context and
// from one that has none current (as the progress thread), slots reused
// in steady state, and the chunked copy's bandwidth in both directions
// against cudaMemcpy between the same device buffer and pinned memory
// (printed).  Exits 77 (skipped) with a message where the CUDA runtime
// finds no device or no driver.
//
// Plain C++ with the CUDA runtime, no GoogleTest: tests/gpu/device-check.sh
// builds it from the working tree.
#include "device/chunked_copy.h"
#include "device/cuda_driver.h"
#include "device/mem_kind.h"
#include "device/staged_call.h"
#include "device/staging_pool.h"
#include "util/status.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

using namespace terse::device;

namespace {

int g_failures = 0;

void expect(bool ok, const char *what) {
    if (ok) return;
    fprintf(stderr, "FAIL: %s (%s)\n", what, terse::last_error());
    ++g_failures;
}

double seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<char> pattern(size_t n, int salt) {
    std::vector<char> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = char(i * 131 + salt * 7 + (i >> 12));
    return v;
}

void round_trip(char *send, char *recv, size_t n, int salt, const char *who) {
    const std::vector<char> in = pattern(n, salt), out = pattern(n, salt + 1);
    cudaMemcpy(send, in.data(), n, cudaMemcpyHostToDevice);
    StagedCall sc;
    char what[128];
    snprintf(what, sizeof what, "%s: staging in", who);
    expect(sc.begin(StageRegion{send, 0, n, true}, StageRegion{recv, 0, n, false}) == TERSE_OK, what);
    if (!sc.any()) return;
    snprintf(what, sizeof what, "%s: the host copy holds the device data", who);
    expect(memcmp(sc.send(), in.data(), n) == 0, what);
    memcpy(sc.recv(), out.data(), n);
    snprintf(what, sizeof what, "%s: copying back", who);
    expect(sc.finish() == TERSE_OK, what);
    std::vector<char> back(n);
    cudaMemcpy(back.data(), recv, n, cudaMemcpyDeviceToHost);
    snprintf(what, sizeof what, "%s: the device holds the result", who);
    expect(back == out, what);
}

}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("test_gpu_staging: no CUDA device: skipped\n");
        return 77;
    }
    cudaSetDevice(0);
    if (!cuda_driver()) {
        printf("test_gpu_staging: no CUDA driver for terse (%s): skipped\n", cuda_driver_absence());
        return 77;
    }
    const size_t n = size_t(256) << 20;
    void *send_mem = nullptr, *recv_mem = nullptr;
    if (cudaMalloc(&send_mem, n) != cudaSuccess || cudaMalloc(&recv_mem, n) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaMalloc of 2 x %zu bytes\n", n);
        return 1;
    }
    char *send = static_cast<char *>(send_mem), *recv = static_cast<char *>(recv_mem);
    expect(buffer_mem_kind(send, n) == TERSE_MEM_CUDA, "cudaMalloc memory is device memory");

    round_trip(send, recv, n, 1, "application thread");
    StagingPool *pool = staging_pool();
    const uint64_t made = pool->counters().allocations;
    std::thread t([&] { round_trip(send, recv, n, 3, "thread without a current context"); });
    t.join();
    expect(pool->counters().allocations == made, "steady state: the second call reuses the pool's slots");
    expect(device_calls_staged() == 2, "two calls counted as staged");
    expect(device_bytes_staged() == 4 * n, "their bytes counted, both directions");

    // Bandwidth: the chunked copy against cudaMemcpy on the same memory.
    std::unique_ptr<StagingSlot> slot;
    CUcontext ctx = nullptr;
    {
        CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_CONTEXT};
        void *data[] = {&ctx};
        cuda_driver()->pointer_get_attributes(1, a, data, CUdeviceptr(send));
    }
    expect(pool->acquire(ctx, n, &slot) == TERSE_OK, "a slot for the bandwidth runs");
    if (slot) {
        const int reps = 5;
        for (size_t piece : {size_t(1) << 20, kStagingPieceBytes, size_t(16) << 20, n}) {
            for (CopyDirection dir : {CopyDirection::ToHost, CopyDirection::ToDevice}) {
                chunked_copy(*cuda_driver(), *slot, dir, CUdeviceptr(send), n, piece);
                const double t0 = seconds();
                for (int r = 0; r < reps; ++r)
                    expect(chunked_copy(*cuda_driver(), *slot, dir, CUdeviceptr(send), n, piece) == TERSE_OK,
                           "chunked copy");
                const double gbs = double(n) * reps / (seconds() - t0) / 1e9;
                printf("test_gpu_staging: chunked copy %s, pieces of %zu MiB: %.1f GB/s\n",
                       dir == CopyDirection::ToHost ? "device->host" : "host->device", piece >> 20, gbs);
            }
        }
        for (int to_host = 1; to_host >= 0; --to_host) {
            const double t0 = seconds();
            for (int r = 0; r < reps; ++r) {
                if (to_host) cudaMemcpy(slot->host.data(), send, n, cudaMemcpyDeviceToHost);
                else cudaMemcpy(send, slot->host.data(), n, cudaMemcpyHostToDevice);
            }
            printf("test_gpu_staging: cudaMemcpy %s (pinned, one piece): %.1f GB/s\n",
                   to_host ? "device->host" : "host->device", double(n) * reps / (seconds() - t0) / 1e9);
        }
        pool->release(std::move(slot));
    }
    cudaFree(send);
    cudaFree(recv);
    staging_release_idle();
    if (g_failures) {
        fprintf(stderr, "test_gpu_staging: %d failures\n", g_failures);
        return 1;
    }
    printf("test_gpu_staging: PASS\n");
    return 0;
}
