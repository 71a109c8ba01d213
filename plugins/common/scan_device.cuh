// The device side of scan_layout.h (CUDA sources only): three launches that
// turn n uint32 sizes into uint64 exclusive offsets and their total, in
// device memory, on one stream.  Built on CUB's block primitives (shipped
// with the toolkit) rather than hand-written warp scans.
#pragma once

#include "scan_layout.h"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace terse_codec {
namespace scan_dev {

// Tile t's sum of sizes into tile_sums[t].
__global__ void __launch_bounds__(kScanThreads)
    k_tile_sums(const uint32_t *sizes, size_t n, uint64_t *tile_sums) {
    using Reduce = cub::BlockReduce<unsigned long long, kScanThreads>;
    __shared__ typename Reduce::TempStorage tmp;
    const size_t base = static_cast<size_t>(blockIdx.x) * kScanTile;
    unsigned long long s = 0;
    for (size_t k = 0; k < kScanItemsPerThread; k++) {  // coalesced: thread-strided inside the tile
        const size_t i = base + k * kScanThreads + threadIdx.x;
        if (i < n) s += sizes[i];
    }
    const unsigned long long t = Reduce(tmp).Sum(s);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = t;
}

// One block: tile_sums become the tiles' exclusive bases; *total the sum.
__global__ void __launch_bounds__(1024)
    k_scan_tiles(uint64_t *tile_sums, size_t tiles, unsigned long long *total) {
    using Scan = cub::BlockScan<unsigned long long, 1024>;
    __shared__ typename Scan::TempStorage tmp;
    __shared__ unsigned long long carry;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (size_t first = 0; first < tiles; first += 1024) {
        const size_t i = first + threadIdx.x;
        const unsigned long long v = i < tiles ? tile_sums[i] : 0ull;
        unsigned long long ex, agg;
        Scan(tmp).ExclusiveSum(v, ex, agg);
        const unsigned long long c = carry;
        if (i < tiles) tile_sums[i] = c + ex;
        __syncthreads();  // every thread has read carry and tmp
        if (threadIdx.x == 0) carry = c + agg;
        __syncthreads();
    }
    if (threadIdx.x == 0) *total = carry;
}

// Each item's offset: its tile's base plus the sizes before it in the tile.
__global__ void __launch_bounds__(kScanThreads)
    k_tile_offsets(const uint32_t *sizes, size_t n, const uint64_t *tile_base, uint64_t *off) {
    using Scan = cub::BlockScan<unsigned long long, kScanThreads>;
    __shared__ typename Scan::TempStorage tmp;
    const size_t base = static_cast<size_t>(blockIdx.x) * kScanTile + threadIdx.x * kScanItemsPerThread;
    unsigned long long v[kScanItemsPerThread];
    unsigned long long s = 0;
    for (size_t k = 0; k < kScanItemsPerThread; k++) {
        const size_t i = base + k;
        v[k] = i < n ? sizes[i] : 0ull;
        s += v[k];
    }
    unsigned long long ex;
    Scan(tmp).ExclusiveSum(s, ex);
    unsigned long long o = tile_base[blockIdx.x] + ex;
    for (size_t k = 0; k < kScanItemsPerThread; k++) {
        const size_t i = base + k;
        if (i < n) off[i] = o;
        o += v[k];
    }
}

// The three launches; tile_sums holds scan_tiles(n) entries.  Returns the
// first launch error (the outcome itself stays on the device).
inline cudaError_t scan_sizes(const uint32_t *sizes, size_t n, uint64_t *tile_sums, uint64_t *off,
                              unsigned long long *total, cudaStream_t s) {
    const size_t tiles = scan_tiles(n);
    if (tiles) k_tile_sums<<<static_cast<unsigned>(tiles), kScanThreads, 0, s>>>(sizes, n, tile_sums);
    k_scan_tiles<<<1, 1024, 0, s>>>(tile_sums, tiles, total);
    if (tiles) k_tile_offsets<<<static_cast<unsigned>(tiles), kScanThreads, 0, s>>>(sizes, n, tile_sums, off);
    return cudaGetLastError();
}

}  // namespace scan_dev
}  // namespace terse_codec
