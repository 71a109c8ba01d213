// The launch geometry the codecs' CUDA kernels share (CUDA sources only):
// 256-thread blocks (8 warps), a thread's global index and the grid's
// stride for kernels that loop over more indices than threads, and grids
// capped at a few waves for such loops.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace terse_codec {
namespace grid {

constexpr int kThreads = 256;             // 8 warps per thread block
constexpr unsigned kFull = 0xffffffffu;   // every lane of a warp
constexpr unsigned kMaxLoopBlocks = 1024; // kernels that mostly have nothing to do

__device__ inline size_t thread_index() { return static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline size_t grid_stride() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

inline unsigned blocks_for(size_t threads) { return static_cast<unsigned>((threads + kThreads - 1) / kThreads); }
// Blocks for `threads`, at least one and at most cap (the kernel loops
// over what is left by grid_stride()).
inline unsigned capped_blocks(size_t threads, unsigned cap) {
    const size_t b = (threads + kThreads - 1) / kThreads;
    return b == 0 ? 1u : (b < cap ? static_cast<unsigned>(b) : cap);
}
// Kernels that mostly have nothing to do (checks, scans that run only
// after a refusal) loop on a small grid: they cost a launch, not a thread
// per index.
inline unsigned loop_blocks_for(size_t n) { return capped_blocks(n, kMaxLoopBlocks); }

}  // namespace grid
}  // namespace terse_codec
