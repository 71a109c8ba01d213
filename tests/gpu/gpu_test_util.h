// What the GPU codec tests share: failing loudly on a CUDA error, device
// buffers and streams released with their owners, mismatches counted,
// best-of-n timing on a stream, and the throughput report's format
// (GB/s of input against the card's device-to-device copy).
#pragma once

#include "../codec_test_data.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace gpu_test {

#define GPU_CUDA_OK(x)                                                                                      \
    do {                                                                                                    \
        const cudaError_t e_ = (x);                                                                         \
        if (e_ != cudaSuccess) {                                                                            \
            std::fprintf(stderr, "FAIL: %s: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
            std::exit(1);                                                                                   \
        }                                                                                                   \
    } while (0)

inline int &failures() {
    static int n = 0;
    return n;
}

inline void fail(const std::string &what) {
    if (failures() < 30) std::printf("MISMATCH: %s\n", what.c_str());
    failures()++;
}

struct DevBuf {
    void *p = nullptr;
    size_t n = 0;
    explicit DevBuf(size_t bytes) : n(bytes) { GPU_CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1)); }
    ~DevBuf() { cudaFree(p); }
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    void put(const void *h, size_t bytes) { GPU_CUDA_OK(cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice)); }
    void get(void *h, size_t bytes) const { GPU_CUDA_OK(cudaMemcpy(h, p, bytes, cudaMemcpyDeviceToHost)); }
    void fill(int byte) { GPU_CUDA_OK(cudaMemset(p, byte, n ? n : 1)); }
    template <typename T>
    T *as() const {
        return static_cast<T *>(p);
    }
};

struct Stream {
    cudaStream_t s = nullptr;
    Stream() { GPU_CUDA_OK(cudaStreamCreate(&s)); }
    ~Stream() { cudaStreamDestroy(s); }
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;
};

// Best of reps runs of f on stream s, in seconds.
template <typename F>
double best_time(cudaStream_t s, int reps, F &&f) {
    cudaEvent_t a, b;
    GPU_CUDA_OK(cudaEventCreate(&a));
    GPU_CUDA_OK(cudaEventCreate(&b));
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        GPU_CUDA_OK(cudaEventRecord(a, s));
        f();
        GPU_CUDA_OK(cudaEventRecord(b, s));
        GPU_CUDA_OK(cudaEventSynchronize(b));
        float ms = 0;
        GPU_CUDA_OK(cudaEventElapsedTime(&ms, a, b));
        best = std::min(best, ms * 1e-3);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return best;
}

// The throughput runs' input, the same for every codec: n gradient-like
// float32 values (heavy-tailed, drifting slowly along the buffer) put in
// the device buffer dst.
inline void put_gradient_like(DevBuf &dst, size_t n) {
    const std::vector<double> v = codec_test::make_shape(codec_test::Shape::StudentT, 1 << 20, 5, 0);
    std::vector<float> h(n);
    for (size_t i = 0; i < n; i++) h[i] = static_cast<float>(v[i % v.size()] * (1.0 + 1e-3 * double(i >> 20)));
    dst.put(h.data(), n * sizeof(float));
}

// The card's device-to-device copy of `bytes`, in GB/s of bytes copied.
inline double copy_rate(cudaStream_t s, size_t bytes, int reps) {
    DevBuf a(bytes), b(bytes);
    GPU_CUDA_OK(cudaMemset(a.p, 1, bytes));
    const double t = best_time(
        s, reps, [&] { GPU_CUDA_OK(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, s)); });
    return bytes / t * 1e-9;
}

// One line of the throughput report: `bytes` of input in t seconds.
inline void report(const std::string &what, size_t bytes, double t, double copy_gbs) {
    const double gbs = bytes / t * 1e-9;
    std::printf("  %-52s %8.0f GB/s  %5.1f%% of copy%s\n", what.c_str(), gbs, 100 * gbs / copy_gbs,
                gbs >= copy_gbs / 2 ? "" : "  (below the 50% target)");
}

// Whether a CUDA device is there; prints why not (the caller exits 77).
inline bool have_device() {
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        std::printf("SKIP: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none listed");
        return false;
    }
    cudaDeviceProp prop{};
    GPU_CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    return true;
}

}  // namespace gpu_test
