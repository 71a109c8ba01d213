// Exclusive prefix sums of per-item byte sizes on a device, as the device
// codecs use them to place variable-length pieces of a payload (errbound's
// blocks, topk's index groups) without a host round trip: the sizes are
// summed per tile, the tile sums are scanned by one thread block, and every
// item's offset is its tile's base plus its place in the tile.  This header
// holds the arithmetic both the CUDA kernels (scan_device.cuh) and the
// host emulations use; sums of integers, so any order gives the same bits.
#pragma once

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse_codec {

constexpr size_t kScanThreads = 256;
constexpr size_t kScanItemsPerThread = 8;
constexpr size_t kScanTile = kScanThreads * kScanItemsPerThread;

TERSE_HD inline size_t scan_tiles(size_t n) { return (n + kScanTile - 1) / kScanTile; }

// The scan of n sizes in host loops: off[i] = sizes[0] + ... + sizes[i-1];
// returns the total (the emulations' and the tests' version of the kernels).
inline uint64_t scan_sizes_host(const uint32_t *sizes, size_t n, uint64_t *off) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        off[i] = s;
        s += sizes[i];
    }
    return s;
}

}  // namespace terse_codec
