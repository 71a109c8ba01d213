// errbound on a CUDA device: thin __global__ launchers over the kernel
// tasks of errbound_device_body.h, and CudaExec, the executor the host side
// of each call (errbound_device_ops.h) runs them with.  The warp-level
// steps (the OR of a block's codes, the ballots that form its bit planes,
// all-lanes checks) and the scans' block primitives are the only code here
// that the host emulation does with loops instead;
// tests/test_errbound_device_body.cc checks everything else against the
// CPU codec, tests/gpu/device-check.sh these kernels on a GPU.
//
// Compiled with --fmad=false: like the CPU code (-ffp-contract=off), every
// multiply and add must round on its own for the bits to match.
#include "errbound_device.h"
#include "errbound_device_ops.h"

#include "../common/launch_grid.cuh"
#include "../common/scan_device.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace terse_errbound {
namespace dev {
namespace {

using namespace terse_codec::grid;

// A plane word: one store where aligned, else byte by byte.
__device__ inline void store_word(uint8_t *q, uint32_t v) {
    if ((reinterpret_cast<uintptr_t>(q) & 3u) == 0) *reinterpret_cast<uint32_t *>(q) = v;
    else terse_codec::put_u32(q, v);
}

// The warp's planes of its lanes' codes z (w of them): lane j stores plane j.
__device__ inline void store_planes_warp(uint32_t z, int w, int lane, uint8_t *q) {
    for (int j = 0; j < w; j++) {
        const uint32_t plane = __ballot_sync(kFull, (z >> j) & 1u);
        if (lane == j) store_word(q + 4 * j, plane);
    }
}

// Lane `lane`'s code: lane j loads plane j, and each lane takes its bit of
// every plane from the lane that holds it (w is the same for the warp).
__device__ inline uint32_t warp_lane_code(const Planes &pl, int lane) {
    const uint32_t mine = lane < pl.w ? plane_word(pl, lane) : 0u;
    uint32_t z = 0;
    for (int j = 0; j < pl.w; j++) z |= ((__shfl_sync(kFull, mine, j) >> lane) & 1u) << j;
    return z;
}

__device__ inline uint32_t warp_combine_code(const CombineSide &a, const CombineSide &b, const DevResult *r,
                                             size_t count, size_t blk, int lane, bool *ok) {
    const uint32_t za = warp_lane_code(side_planes(a, r->ha, count, blk), lane);
    const uint32_t zb = warp_lane_code(side_planes(b, r->hb, count, blk), lane);
    return combine_codes(r, count, blk, lane, za, zb, ok);
}

__global__ void k_reset(DevResult *r) { reset_result(r); }

template <typename T>
__global__ void k_stats_partials(const T *x, size_t count, bool range, StatsPartial *parts) {
    __shared__ StatsPartial sh[kStatsThreads];
    StatsPartial p = empty_partial();
    for (size_t i = thread_index(); i < count; i += grid_stride()) stats_element(x, i, range, &p);
    sh[threadIdx.x] = p;
    __syncthreads();
    if (threadIdx.x == 0) {
        StatsPartial b = empty_partial();
        for (unsigned t = 0; t < kStatsThreads; t++) b = merge_partial(b, sh[t]);
        parts[blockIdx.x] = b;
    }
}

template <typename T>
__global__ void k_sumsq_lanes(const T *x, size_t count, double *lanes) {
    if (threadIdx.x < 8) lanes[threadIdx.x] = sumsq_lane(x, count, static_cast<int>(threadIdx.x));
}

template <typename T>
__global__ void k_stats_final(Mode mode, const StatsPartial *parts, size_t nblocks, const double *lanes,
                              double *out) {
    task_stats_final<T>(mode, parts, nblocks, lanes, out);
}

__global__ void k_zero_lanes(double *lanes) {
    if (threadIdx.x < 8) lanes[threadIdx.x] = 0.0;
}

__global__ void k_plan(Params p, int nranks, terse_dtype_t dt, size_t eb, const double *agreed, size_t count,
                       size_t cap, DevResult *r) {
    task_plan(p, nranks, dt, eb, agreed, count, cap, r);
}

// One warp per errbound block.
template <typename T>
__global__ void k_encode_widths(const T *x, size_t count, size_t nb, uint32_t *sizes, DevResult *r) {
    const size_t b = thread_index() / 32;
    const int lane = static_cast<int>(threadIdx.x & 31);
    if (b >= nb || r->verdict != TERSE_CODEC_OK) return;  // whole warps
    bool ok, nf;
    const uint32_t z = encode_lane(x, count, r, b, lane, &ok, &nf);
    const uint32_t all = __reduce_or_sync(kFull, z);
    const bool any_bad = __any_sync(kFull, !ok), any_nf = __any_sync(kFull, nf);
    if (lane == 0) {
        sizes[b] = block_bytes(all);
        if (any_bad) flag_set(&r->enc_bad);
        if (any_nf) flag_set(&r->nonfinite);
    }
}

__global__ void k_encode_header(uint8_t *dst, size_t cap, size_t count, DevResult *r) {
    task_encode_header(dst, cap, count, r);
}

// The widths of an output stream whose verdict is still OK.
__global__ void k_widths_bytes(uint8_t *dst, const uint32_t *sizes, size_t nb, DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK || r->a_bad || r->b_bad) return;
    const bool nib = r->nib != 0;
    const size_t n = widths_bytes(nb, nib);
    for (size_t i = thread_index(); i < n; i += grid_stride())
        task_widths_byte(dst + kHeaderBytes, sizes, nb, nib, i);
}

template <typename T>
__global__ void k_encode_pack(const T *x, size_t count, size_t nb, const uint32_t *sizes, const uint64_t *offs,
                              uint8_t *dst, DevResult *r) {
    const size_t b = thread_index() / 32;
    const int lane = static_cast<int>(threadIdx.x & 31);
    if (b >= nb || r->verdict != TERSE_CODEC_OK) return;
    bool ok, nf;
    const uint32_t z = encode_lane(x, count, r, b, lane, &ok, &nf);
    uint8_t *data = dst + kHeaderBytes + widths_bytes(nb, r->nib != 0);
    store_planes_warp(z, static_cast<int>(sizes[b] / 4), lane, data + offs[b]);
}

__global__ void k_check_header(const uint8_t *p, size_t len, size_t count, int which, DevResult *r) {
    task_check_header(p, len, count, which ? &r->hb : &r->ha, which ? &r->b_bad : &r->a_bad);
}

__global__ void k_check_widths(const uint8_t *p, size_t nb, int which, uint32_t *sizes, DevResult *r) {
    uint32_t *bad = which ? &r->b_bad : &r->a_bad;
    if (*bad) return;
    const Header h = which ? r->hb : r->ha;
    for (size_t b = thread_index(); b < nb; b += grid_stride()) task_check_width(p, h, b, sizes, bad);
}

__global__ void k_check_total(size_t count, int which, DevResult *r) {
    task_check_total(which ? r->hb : r->ha, count, r->total[which], which ? &r->b_bad : &r->a_bad);
}

template <typename T>
__global__ void k_decode(const uint8_t *p, size_t count, size_t nb, const uint32_t *sizes, const uint64_t *offs,
                         T *dst, bool acc, DevResult *r) {
    const size_t b = thread_index() / 32;
    const int lane = static_cast<int>(threadIdx.x & 31);
    if (b >= nb || r->a_bad) return;  // a refused payload is not decoded
    const Header h = r->ha;
    const uint32_t z = warp_lane_code(planes_of(p, h, count, sizes, offs, b), lane);
    const bool ok = decode_code(h, count, b, lane, z, dst, acc);
    if (!__all_sync(kFull, ok) && lane == 0) flag_set(&r->code_bad);
}

__global__ void k_combine_header(int ac, int bc, size_t cap, DevResult *r) {
    task_combine_header(ac, bc, cap, r);
}

__global__ void k_combine_widths(CombineSide a, CombineSide b, size_t count, size_t nb, uint32_t *sizes,
                                 DevResult *r) {
    const size_t blk = thread_index() / 32;
    const int lane = static_cast<int>(threadIdx.x & 31);
    if (blk >= nb || !combine_runs(r)) return;
    bool ok;
    const uint32_t z = warp_combine_code(a, b, r, count, blk, lane, &ok);
    const uint32_t all = __reduce_or_sync(kFull, z);
    const bool all_ok = __all_sync(kFull, ok);
    if (lane == 0) {
        sizes[blk] = block_bytes(all);
        if (!all_ok) flag_set(&r->code_bad);
    }
}

__global__ void k_combine_finish(uint8_t *out, size_t cap, size_t count, DevResult *r) {
    task_combine_finish(out, cap, count, r);
}

__global__ void k_combine_pack(CombineSide a, CombineSide b, size_t count, size_t nb, const uint32_t *sizes,
                               const uint64_t *offs, uint8_t *out, DevResult *r) {
    const size_t blk = thread_index() / 32;
    const int lane = static_cast<int>(threadIdx.x & 31);
    if (blk >= nb || !combine_runs(r)) return;
    bool ok;
    const uint32_t z = warp_combine_code(a, b, r, count, blk, lane, &ok);
    uint8_t *data = out + kHeaderBytes + widths_bytes(nb, r->nib != 0);
    store_planes_warp(z, static_cast<int>(sizes[blk] / 4), lane, data + offs[blk]);
}

class CudaExec {
public:
    CudaExec(const terse_codec_call_t *call, size_t max_count)
        : stream_(static_cast<cudaStream_t>(call->stream)), w_{static_cast<uint8_t *>(call->workspace),
                                                               layout_for(max_count)} {}

    const Work &work() const { return w_; }
    void begin() {
        k_reset<<<1, 1, 0, stream_>>>(r());
        note();
    }
    bool finish(DevResult *out) {
        note(cudaMemcpyAsync(out, r(), sizeof *out, cudaMemcpyDeviceToHost, stream_));
        note(cudaStreamSynchronize(stream_));
        return ok_;
    }

    template <typename T>
    void stats(const T *x, size_t count, Mode mode, double *out) {
        const size_t blocks = stats_blocks(count);
        k_stats_partials<T>
            <<<static_cast<unsigned>(blocks), kStatsThreads, 0, stream_>>>(x, count, mode == kRel, w_.partials());
        note();
        if (mode == kNorm) k_sumsq_lanes<T><<<1, 32, 0, stream_>>>(x, count, w_.lanes8());
        else k_zero_lanes<<<1, 32, 0, stream_>>>(w_.lanes8());
        note();
        k_stats_final<T><<<1, 1, 0, stream_>>>(mode, w_.partials(), blocks, w_.lanes8(), out);
        note();
    }
    void plan(const Params &p, int nranks, terse_dtype_t dt, size_t eb, const double *agreed, size_t count,
              size_t cap) {
        k_plan<<<1, 1, 0, stream_>>>(p, nranks, dt, eb, agreed, count, cap, r());
        note();
    }
    template <typename T>
    void encode_widths(const T *x, size_t count) {
        const size_t nb = block_count(count);
        k_encode_widths<T><<<blocks_for(32 * nb), kThreads, 0, stream_>>>(x, count, nb, w_.sizes(2), r());
        note();
    }
    void scan(int s, size_t nb) {
        note(
            terse_codec::scan_dev::scan_sizes(w_.sizes(s), nb, w_.tiles(s), w_.offs(s), &r()->total[s], stream_));
    }
    void encode_header(uint8_t *dst, size_t cap, size_t count) {
        k_encode_header<<<1, 1, 0, stream_>>>(dst, cap, count, r());
        note();
    }
    template <typename T>
    void encode_pack(const T *x, size_t count, uint8_t *dst) {
        const size_t nb = block_count(count);
        k_widths_bytes<<<loop_blocks_for(nb), kThreads, 0, stream_>>>(dst, w_.sizes(2), nb, r());
        note();
        k_encode_pack<T>
            <<<blocks_for(32 * nb), kThreads, 0, stream_>>>(x, count, nb, w_.sizes(2), w_.offs(2), dst, r());
        note();
    }
    void check_payload(const uint8_t *p, size_t len, size_t count, int which) {
        const size_t nb = block_count(count);
        k_check_header<<<1, 1, 0, stream_>>>(p, len, count, which, r());
        note();
        k_check_widths<<<loop_blocks_for(nb), kThreads, 0, stream_>>>(p, nb, which, w_.sizes(which), r());
        note();
        scan(which, nb);
        k_check_total<<<1, 1, 0, stream_>>>(count, which, r());
        note();
    }
    template <typename T>
    void decode(const uint8_t *p, size_t count, T *dst, bool acc) {
        const size_t nb = block_count(count);
        if (!nb) return;
        k_decode<T>
            <<<blocks_for(32 * nb), kThreads, 0, stream_>>>(p, count, nb, w_.sizes(0), w_.offs(0), dst, acc, r());
        note();
    }
    void combine(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t cap, size_t count, int ac, int bc) {
        const size_t nb = block_count(count);
        const CombineSide sa{a, w_.sizes(0), w_.offs(0)}, sb{b, w_.sizes(1), w_.offs(1)};
        k_combine_header<<<1, 1, 0, stream_>>>(ac, bc, cap, r());
        note();
        if (nb) {
            k_combine_widths<<<blocks_for(32 * nb), kThreads, 0, stream_>>>(sa, sb, count, nb, w_.sizes(2), r());
            note();
        }
        scan(2, nb);
        k_combine_finish<<<1, 1, 0, stream_>>>(out, cap, count, r());
        note();
        k_widths_bytes<<<loop_blocks_for(nb), kThreads, 0, stream_>>>(out, w_.sizes(2), nb, r());
        note();
        if (nb) {
            k_combine_pack<<<blocks_for(32 * nb), kThreads, 0, stream_>>>(sa, sb, count, nb, w_.sizes(2),
                                                                          w_.offs(2), out, r());
            note();
        }
    }

private:
    DevResult *r() const { return w_.result(); }
    void note(cudaError_t e = cudaGetLastError()) { ok_ &= e == cudaSuccess; }

    cudaStream_t stream_;
    Work w_;
    bool ok_ = true;
};

// The call carries the workspace this instance asked for (revision 3).
bool has_workspace(const Instance &in, const terse_codec_call_t *call) {
    return TERSE_CODEC_CALL_HAS(call, workspace_size) && call->workspace &&
           call->workspace_size >= workspace_size(in.max_chunk_count);
}

}  // namespace

bool cuda_built() { return true; }

int cuda_stats(const Instance &in, const void *src, size_t count, double *out, const terse_codec_call_t *call) {
    if (!has_workspace(in, call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call, in.max_chunk_count);
    return run_stats(x, in, src, count, out);
}

int cuda_encode(const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                const terse_codec_call_t *call) {
    if (!has_workspace(in, call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call, in.max_chunk_count);
    return run_encode(x, in, src, count, dst, dst_cap, dst_len, call);
}

int cuda_decode(const Instance &in, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                terse_op_t op, const terse_codec_call_t *call) {
    if (!has_workspace(in, call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call, in.max_chunk_count);
    return run_decode(x, in, src, src_len, dst, count, accumulate, op);
}

int cuda_combine(const Instance &in, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
                 int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len,
                 const terse_codec_call_t *call) {
    if (!has_workspace(in, call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call, in.max_chunk_count);
    return run_combine(x, in, a, a_len, a_contributors, b, b_len, b_contributors, count, out, out_cap, out_len);
}

}  // namespace dev
}  // namespace terse_errbound
