// quantize on a CUDA device: thin __global__ launchers over the kernel tasks
// of quantize_device_body.h, and CudaExec, the executor the host side of
// each call (quantize_device_ops.h) runs them with.  The warp-level steps
// (assembling a packed word, the max over lanes, broadcasting a block's
// constants) are the only code here that the host emulation does with
// loops instead; tests/test_quantize_device_body.cc checks everything else
// against the CPU codec, tests/gpu/device-check.sh these kernels on a GPU.
//
// Compiled with --fmad=false: like the CPU code (-ffp-contract=off), every
// multiply and add must round on its own for the bits to match.
#include "quantize_device.h"
#include "quantize_device_ops.h"

#include "../common/launch_grid.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace terse_quantize {
namespace dev {
namespace {

using namespace terse_codec::grid;

// The word's 32 bits, aligned: one store; else (an odd payload address, the
// short last group) byte by byte as store_code_word does.
__device__ inline void store_word(uint8_t *codes, size_t count, int w, size_t g, int j, uint32_t word) {
    uint8_t *p = codes + 4 * static_cast<size_t>(w) * g + 4 * static_cast<size_t>(j);
    if ((reinterpret_cast<uintptr_t>(p) & 3u) == 0 && 4 * static_cast<size_t>(j) + 4 <= group_bytes(count, w, g))
        *reinterpret_cast<uint32_t *>(p) = word;
    else store_code_word(codes, count, w, g, j, word);
}

__global__ void k_reset(DevResult *r) { reset_result(r); }

__global__ void k_put_header(uint8_t *dst, Header h) { write_header(dst, h); }

// One warp per quantize block.
template <typename T>
__global__ void k_stats_max(StatsJob<T> j, size_t blocks) {
    const size_t b = thread_index() / 32;
    const int lane = static_cast<int>(threadIdx.x & 31);
    if (b >= blocks) return;  // whole warps: blockDim is a multiple of 32
    unsigned long long m = block_max_bits_lane(j, b, lane, 32);
    for (int off = 16; off; off >>= 1) {
        const unsigned long long o = __shfl_xor_sync(kFull, m, off);
        m = o > m ? o : m;
    }
    if (lane == 0) j.out[b] = block_max_of_bits<T>(m);
}

// Eight threads per quantize block, as the CPU's eight lanes.
template <typename T>
__global__ void k_stats_mean(StatsJob<T> j, size_t blocks) {
    const size_t t = thread_index();
    const size_t b = t / 8;
    const int k = static_cast<int>(t & 7);
    const double s = b < blocks ? block_abs_sum_lane(j, b, k) : 0.0;
    double lanes[8];
    const int base = static_cast<int>(threadIdx.x & 31) & ~7;
    for (int q = 0; q < 8; q++) lanes[q] = __shfl_sync(kFull, s, base + q);
    if (k == 0 && b < blocks) j.out[b] = block_mean_of_lanes(lanes, block_len(j.count, j.log2_block, b));
}

template <typename T>
__global__ void k_encode_scales(EncodeDevJob<T> j, size_t blocks, DevResult *r) {
    for (size_t b = thread_index(); b < blocks; b += grid_stride()) task_encode_scale(j, r, b);
}

// A warp takes kGroups consecutive groups of 32 and loads all their
// elements (and lanes 0..kGroups-1 their blocks' constants) before
// computing any: one 4-byte load per thread in flight leaves an H200's
// memory system mostly idle (measured: encode at 31% of a device copy).
constexpr int kGroups = 8;

// Both run on a grid of a few waves whose warps stride over the groups, so
// that a warp's set-up (decode: the flag and header it reads first) is paid
// once per warp, not once per kGroups groups.
constexpr unsigned kMaxGroupBlocks = 4096;
inline unsigned group_blocks_for(size_t groups) {
    return capped_blocks(32 * ((groups + kGroups - 1) / kGroups), kMaxGroupBlocks);
}
__device__ inline size_t warp_index() { return thread_index() / 32; }
__device__ inline size_t warp_count() { return grid_stride() / 32; }

template <typename T, int BITS, int ROUND>
__device__ inline void encode_warp(const EncodeDevJob<T> &j, size_t groups, size_t g0, DevResult *r) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    T v[kGroups];  // as stored: half the registers of doubles
#pragma unroll
    for (int k = 0; k < kGroups; k++) {
        const size_t i = 32 * (g0 + k) + static_cast<size_t>(lane);
        v[k] = i < j.count ? j.x[i] : T{};
    }
    BlockConsts mine{0, 0};
    if (lane < kGroups && g0 + lane < groups) mine = encode_consts<T, BITS, ROUND>(j, g0 + lane);
#pragma unroll
    for (int k = 0; k < kGroups; k++) {
        const size_t g = g0 + k;
        if (g >= groups) break;  // the same for the whole warp
        BlockConsts c;
        c.inv = __shfl_sync(kFull, mine.inv, k);
        c.limit = __shfl_sync(kFull, mine.limit, k);
        const size_t i = 32 * g + static_cast<size_t>(lane);
        bool ok = true;
        uint32_t code = 0;
        if (i < j.count) code = encode_value<T, BITS, ROUND>(j, i, Elem<T>::load(&v[k]), c, &ok);
        uint32_t word;
        if constexpr (BITS == 1) {
            word = __ballot_sync(kFull, code != 0);
        } else {
            word = code_word_part(code, lane, BITS);
            for (int off = (32 / BITS) / 2; off; off >>= 1) word |= __shfl_xor_sync(kFull, word, off);
        }
        if (!__all_sync(kFull, ok) && lane == 0) flag_set(&r->encode_bad);
        if (lane_starts_word(lane, BITS)) store_word(j.codes, j.count, BITS, g, word_of_lane(lane, BITS), word);
    }
}

template <typename T, int BITS, int ROUND>
__global__ void k_encode(EncodeDevJob<T> j, size_t groups, DevResult *r) {
    for (size_t g0 = warp_index() * kGroups; g0 < groups; g0 += warp_count() * kGroups)
        encode_warp<T, BITS, ROUND>(j, groups, g0, r);
}

template <typename T>
__global__ void k_nonfinite(const T *x, size_t count, DevResult *r) {
    if (!r->encode_bad) return;
    for (size_t i = thread_index(); i < count; i += grid_stride()) task_nonfinite(x, r, i);
}

__global__ void k_check_header(const uint8_t *p, size_t len, size_t count, int sb, DevResult *r, int which) {
    task_check_header(p, len, count, sb, r, which);
}

__global__ void k_check_scale(const uint8_t *p, size_t count, DevResult *r, int which, size_t blocks) {
    for (size_t b = thread_index(); b < blocks; b += grid_stride()) task_check_scale(p, count, r, which, b);
}

// kGroups groups per warp, as k_encode: codes, scales and (accumulating)
// the destination's values are all loaded before the first store.
template <typename T>
__device__ inline void decode_warp(const DecodeDevJob<T> &j, size_t groups, size_t g0, DevResult *r) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    uint32_t s[kGroups];
    T old[kGroups];
#pragma unroll
    for (int k = 0; k < kGroups; k++) {
        const bool in = g0 + k < groups;
        s[k] = in ? decode_lane_code(j, g0 + k, lane) : 0;
        old[k] = in ? decode_lane_old(j, g0 + k, lane) : T{};
    }
    double mine = 0;
    if (lane < kGroups && g0 + lane < groups) mine = decode_step(j, g0 + lane);
    bool ok = true;
#pragma unroll
    for (int k = 0; k < kGroups; k++) {
        if (g0 + k >= groups) break;  // the same for the whole warp
        const double u = __shfl_sync(kFull, mine, k);
        ok &= decode_lane_put(j, g0 + k, lane, s[k], old[k], u);
    }
    if (!__all_sync(kFull, ok) && lane == 0) flag_set(&r->code_bad);
}

template <typename T>
__global__ void k_decode(const uint8_t *p, size_t count, T *dst, bool acc, size_t groups, DevResult *r) {
    if (r->a_bad) return;  // a refused payload is not decoded
    const DecodeDevJob<T> j = decode_job_of(p, count, r->ha, dst, acc);
    for (size_t g0 = warp_index() * kGroups; g0 < groups; g0 += warp_count() * kGroups)
        decode_warp(j, groups, g0, r);
}

__global__ void k_combine_header(uint8_t *out, size_t cap, size_t count, int ac, int bc, DevResult *r) {
    task_combine_header(out, cap, count, ac, bc, r);
}

__global__ void k_combine_scale(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t count, DevResult *r,
                                size_t blocks) {
    for (size_t k = thread_index(); k < blocks; k += grid_stride()) task_combine_scale(a, b, out, count, r, k);
}

// One thread per group: the planes' adder ripples across words.
__global__ void k_combine_group(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t count, DevResult *r,
                                size_t groups) {
    const size_t g = thread_index();
    if (g < groups) task_combine_group(a, b, out, count, r, g);
}

class CudaExec {
public:
    CudaExec(const terse_codec_call_t *call)
        : stream_(static_cast<cudaStream_t>(call->stream)), ws_(static_cast<uint8_t *>(call->workspace)),
          bytes_(call->workspace_size) {}

    DevResult *result() { return reinterpret_cast<DevResult *>(ws_); }
    double *scratch(size_t n) {
        return (bytes_ - kResultBytes) / sizeof(double) >= n ? reinterpret_cast<double *>(ws_ + kResultBytes)
                                                             : nullptr;
    }
    void begin() {
        k_reset<<<1, 1, 0, stream_>>>(result());
        note();
    }
    void put_header(uint8_t *dst, const Header &h) {
        k_put_header<<<1, 1, 0, stream_>>>(dst, h);
        note();
    }
    bool finish(DevResult *out) {
        note(cudaMemcpyAsync(out, result(), sizeof *out, cudaMemcpyDeviceToHost, stream_));
        note(cudaStreamSynchronize(stream_));
        return ok_;
    }

    template <typename T>
    void stats(const StatsJob<T> &j, bool mean) {
        const size_t nb = block_count(j.count, j.log2_block);
        if (mean) k_stats_mean<T><<<blocks_for(8 * nb), kThreads, 0, stream_>>>(j, nb);
        else k_stats_max<T><<<blocks_for(32 * nb), kThreads, 0, stream_>>>(j, nb);
        note();
    }
    template <typename T>
    void encode_scales(const EncodeDevJob<T> &j, size_t blocks) {
        k_encode_scales<T><<<loop_blocks_for(blocks), kThreads, 0, stream_>>>(j, blocks, result());
        note();
    }
    template <typename T, int BITS, int ROUND>
    void encode_codes(const EncodeDevJob<T> &j) {
        const size_t groups = (j.count + 31) / 32;
        k_encode<T, BITS, ROUND><<<group_blocks_for(groups), kThreads, 0, stream_>>>(j, groups, result());
        note();
    }
    template <typename T>
    void nonfinite(const T *x, size_t count) {
        k_nonfinite<T><<<loop_blocks_for(count), kThreads, 0, stream_>>>(x, count, result());
        note();
    }
    void check_payload(const uint8_t *p, size_t len, size_t count, int sb, int which) {
        k_check_header<<<1, 1, 0, stream_>>>(p, len, count, sb, result(), which);
        note();
        const size_t blocks = block_count(count, kMinLog2Block);
        k_check_scale<<<loop_blocks_for(blocks), kThreads, 0, stream_>>>(p, count, result(), which, blocks);
        note();
    }
    template <typename T>
    void decode(const uint8_t *p, size_t count, T *dst, bool acc) {
        const size_t groups = (count + 31) / 32;
        if (!groups) return;
        k_decode<T><<<group_blocks_for(groups), kThreads, 0, stream_>>>(p, count, dst, acc, groups, result());
        note();
    }
    void combine(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t cap, size_t count, int ac, int bc) {
        k_combine_header<<<1, 1, 0, stream_>>>(out, cap, count, ac, bc, result());
        note();
        const size_t blocks = block_count(count, kMinLog2Block);
        k_combine_scale<<<loop_blocks_for(blocks), kThreads, 0, stream_>>>(a, b, out, count, result(), blocks);
        note();
        const size_t groups = (count + 31) / 32;
        k_combine_group<<<blocks_for(groups), kThreads, 0, stream_>>>(a, b, out, count, result(), groups);
        note();
    }

private:
    void note(cudaError_t e = cudaGetLastError()) { ok_ &= e == cudaSuccess; }

    cudaStream_t stream_;
    uint8_t *ws_;
    size_t bytes_;
    bool ok_ = true;
};

// The call carries a workspace large enough for the result (revision 3).
bool has_workspace(const terse_codec_call_t *call) {
    return TERSE_CODEC_CALL_HAS(call, workspace_size) && call->workspace && call->workspace_size >= kResultBytes;
}

}  // namespace

bool cuda_built() { return true; }

int cuda_stats(const Instance &in, const void *src, size_t count, double *out, const terse_codec_call_t *call) {
    if (!has_workspace(call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call);
    return run_stats(x, in, src, count, out);
}

int cuda_encode(const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                const terse_codec_call_t *call) {
    if (!has_workspace(call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call);
    return run_encode(x, in, src, count, dst, dst_cap, dst_len, call);
}

int cuda_decode(const Instance &in, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                terse_op_t op, const terse_codec_call_t *call) {
    if (!has_workspace(call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call);
    return run_decode(x, in, src, src_len, dst, count, accumulate, op);
}

int cuda_combine(const Instance &in, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
                 int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len,
                 const terse_codec_call_t *call) {
    if (!has_workspace(call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call);
    return run_combine(x, in, a, a_len, a_contributors, b, b_len, b_contributors, count, out, out_cap, out_len);
}

}  // namespace dev
}  // namespace terse_quantize
