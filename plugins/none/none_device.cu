// The none codec's device part (none_device.h): copies, and the lossless
// reduction as a thin __global__ launcher over reduce_value, the code the
// host emulation runs too (reduce_element_of;
// tests/test_reduce_device_body.cc), on a grid of a few waves that strides
// over the rest.
#include "none_device.h"

#include "../common/launch_grid.cuh"

#include <cuda_runtime.h>

namespace terse_none {
namespace {

using namespace terse_codec::grid;

constexpr unsigned kMaxBlocks = 8192;  // about 8 waves of an H200 (132 SMs x 8 blocks)

// 16 bytes of each operand per thread per step (4 floats, 8 bfloat16s), a
// grid stride apart (each warp still reads and writes whole lines), all
// loaded before the first store: one element per thread left an H200 at
// 31% of a device copy for 16-bit types.
template <terse_dtype_t DT>
__global__ void k_reduce(terse_codec::ReduceJob j) {
    using E = typename terse_codec::ReduceStorage<DT>::type;
    constexpr int kUnroll = 16 / sizeof(E);
    E *dst = static_cast<E *>(j.dst);
    const E *src = static_cast<const E *>(j.src);
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t base = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; base < j.count;
         base += kUnroll * stride) {
        E a[kUnroll], b[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; k++) {
            const size_t i = base + k * stride;
            if (i < j.count) a[k] = dst[i], b[k] = src[i];
        }
#pragma unroll
        for (int k = 0; k < kUnroll; k++) {
            const size_t i = base + k * stride;
            if (i < j.count) dst[i] = terse_codec::reduce_value<DT>(a[k], b[k], j.op);
        }
    }
}

int status_of(cudaError_t e) { return e == cudaSuccess ? TERSE_CODEC_OK : TERSE_CODEC_ERR_INTERNAL; }

}  // namespace

bool cuda_built() { return true; }

int cuda_copy(void *dst, const void *src, size_t bytes, void *stream) {
    if (bytes == 0 || dst == src) return TERSE_CODEC_OK;
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s); e != cudaSuccess)
        return status_of(e);
    return status_of(cudaStreamSynchronize(s));
}

int cuda_reduce(const terse_codec::ReduceJob &job, void *stream) {
    if (job.count == 0) return TERSE_CODEC_OK;
    if (job.op != TERSE_OP_SUM && job.op != TERSE_OP_MAX && job.op != TERSE_OP_MIN)
        return TERSE_CODEC_ERR_UNSUPPORTED;
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    const unsigned blocks = capped_blocks(job.count, kMaxBlocks);
    const bool known = terse_codec::with_reduce_dtype(job.dtype, [&](auto tag) {
        k_reduce<decltype(tag)::value><<<blocks, kThreads, 0, s>>>(job);
    });
    if (!known) return TERSE_CODEC_ERR_UNSUPPORTED;
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return status_of(e);
    return status_of(cudaStreamSynchronize(s));
}

}  // namespace terse_none
