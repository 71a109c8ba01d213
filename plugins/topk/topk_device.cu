// topk on a CUDA device: thin __global__ launchers over the kernel tasks of
// topk_device_body.h, and CudaExec, the executor the host side of each
// call (topk_device_ops.h) runs them with.  The collective steps (shared
// memory histograms, the block scan that finds the crossing bin, the block
// scans of a tile's counts, the size scans of common/scan_device.cuh) are
// the only code here that the host emulation does with loops instead;
// tests/test_topk_device_body.cc checks everything else against the CPU
// codec, tests/gpu/device-check.sh these kernels on a GPU.
//
// The host sizes every grid from what it knows (the chunk's count, k, the
// payload's length); the kernels read what earlier ones decided from the
// result at the head of the workspace (stream order) and return early
// once the call's verdict is not OK.
#include "topk_device.h"
#include "topk_device_ops.h"

#include "../common/launch_grid.cuh"
#include "../common/scan_device.cuh"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <cstdint>

namespace terse_topk {
namespace dev {
namespace {

using namespace terse_codec::grid;

constexpr unsigned kMaxGrid = 4096;
constexpr int kPickThreads = 1024;  // 4 bins each
static_assert(kPickThreads * 4 == kBins, "the pick kernel covers the bins");

inline unsigned grid_for(size_t n) { return capped_blocks(n, kMaxGrid); }

__global__ void k_reset(DevResult *r, uint32_t *hist) {
    if (thread_index() == 0) reset_result(r);
    for (size_t b = thread_index(); b < kBins; b += grid_stride()) hist[b] = 0;
}

__global__ void k_set_rank(DevResult *r, size_t k) { r->rank = k; }

// Pass p's histogram over a source: per block in shared memory, then
// added to the global one.
// Pass 0 (over the chunk) also flags a NaN or Inf.
template <typename U, typename Src>
__global__ void k_hist(Src src, int pass, uint64_t inf, DevResult *r, uint32_t *hist) {
    __shared__ uint32_t sh[kBins];
    if (pass > 0 && r->nonfinite) return;  // raw: the candidates were never made (whole blocks)
    for (size_t b = threadIdx.x; b < kBins; b += blockDim.x) sh[b] = 0;
    __syncthreads();
    const unsigned long long prefix = r->prefix;
    const size_t m = src.size(r);
    const int lane = static_cast<int>(threadIdx.x & 31);
    int nonfinite = 0;
    // Whole warps step together, so that lanes of the same bin add once
    // (gradients crowd into few bins; a shared atomic per lane would queue).
    for (size_t base = thread_index() - static_cast<size_t>(lane); base < m; base += grid_stride()) {
        const size_t c = base + static_cast<size_t>(lane);
        int b = -1;
        if (c < m) {
            const uint64_t key = src.key(c);
            if (pass == 0) nonfinite |= key >= inf;
            b = bin_of<U>(key, pass, prefix);
        }
        const unsigned peers = __match_any_sync(kFull, b);
        if (b >= 0 && lane == __ffs(static_cast<int>(peers)) - 1)
            atomicAdd(&sh[b], static_cast<uint32_t>(__popc(peers)));
    }
    if (__syncthreads_or(nonfinite) && threadIdx.x == 0) flag_set(&r->nonfinite);
    for (size_t b = threadIdx.x; b < kBins; b += blockDim.x)
        if (sh[b]) atomicAdd(&hist[b], sh[b]);
}

// One block: the bin where the count from the top reaches the rank; the
// histogram is zeroed for the next pass.  Thread t holds bins 4095 - 4t
// down to 4092 - 4t, so an exclusive scan over threads counts the bins above.
__global__ void __launch_bounds__(kPickThreads) k_pick(int bits, DevResult *r, uint32_t *hist) {
    using Scan = cub::BlockScan<unsigned long long, kPickThreads>;
    __shared__ typename Scan::TempStorage tmp;
    const unsigned long long rank = r->rank;
    uint32_t h[4];
    unsigned long long s = 0;
    for (int q = 0; q < 4; q++) {
        const uint32_t d = static_cast<uint32_t>(kBins - 1 - 4 * threadIdx.x - q);
        h[q] = hist[d];
        hist[d] = 0;
        s += h[q];
    }
    unsigned long long above;
    Scan(tmp).ExclusiveSum(s, above);
    __syncthreads();  // every thread has read r->rank
    for (int q = 0; q < 4; q++) {
        const uint32_t d = static_cast<uint32_t>(kBins - 1 - 4 * threadIdx.x - q);
        if (crossing(above, h[q], rank)) take_digit(r, bits, d, above);  // one thread, one bin
        above += h[q];
    }
}

// One block per tile of a source: the tile's pair of counts under a rule
// (zero for tiles past the source's end, so that the scans over every
// tile the host sized the grid for add nothing for them).
template <typename U, typename Src, typename Rule>
__global__ void k_tile_counts(Src src, DevResult *r, uint32_t *first, uint32_t *second) {
    using Reduce = cub::BlockReduce<unsigned long long, kTileThreads>;
    __shared__ typename Reduce::TempStorage tmp;
    const size_t m = r->nonfinite ? 0 : src.size(r);
    const size_t base = static_cast<size_t>(blockIdx.x) * kTile;
    if (base >= m) {  // whole blocks
        if (threadIdx.x == 0) first[blockIdx.x] = second[blockIdx.x] = 0;
        return;
    }
    const Rule rule = Rule::template of<U>(r);
    unsigned long long c = 0;
    for (size_t round = 0; round < kTileRounds; round++) {
        const size_t i = base + round * kTileThreads + threadIdx.x;
        if (i < m) c += rule.pair(src.key(i));
    }
    const unsigned long long s = Reduce(tmp).Sum(c);
    if (threadIdx.x == 0) {
        first[blockIdx.x] = static_cast<uint32_t>(s >> 32);
        second[blockIdx.x] = static_cast<uint32_t>(s);
    }
}

// One block per tile, in rounds of consecutive elements: each kept
// element's index at its place.
template <typename U, typename Src, typename Rule>
__global__ void k_tile_places(Src src, DevResult *r, const uint64_t *first_off, const uint64_t *second_off,
                              uint32_t *out) {
    using Scan = cub::BlockScan<unsigned long long, kTileThreads>;
    __shared__ typename Scan::TempStorage tmp;
    const size_t m = r->nonfinite ? 0 : src.size(r);
    const size_t base = static_cast<size_t>(blockIdx.x) * kTile;
    if (base >= m) return;  // whole blocks
    const Rule rule = Rule::template of<U>(r);
    unsigned long long above = first_off[blockIdx.x], equal = second_off[blockIdx.x];
    for (size_t round = 0; round < kTileRounds; round++) {
        const size_t i = base + round * kTileThreads + threadIdx.x;
        const uint64_t key = i < m ? src.key(i) : 0;
        const unsigned long long c = i < m ? rule.pair(key) : 0ull;
        unsigned long long ex, agg;
        Scan(tmp).ExclusiveSum(c, ex, agg);
        if (i < m) {
            const long long at = rule.place(key, above + (ex >> 32), equal + (ex & 0xffffffffull));
            if (at >= 0) out[at] = src.index(i);
        }
        above += agg >> 32;
        equal += agg & 0xffffffffull;
        __syncthreads();  // tmp is reused
    }
}

__global__ void k_varint_sizes(const uint32_t *sel, size_t k, uint32_t *sizes, const DevResult *r) {
    if (r->nonfinite) return;
    for (size_t j = thread_index(); j < k; j += grid_stride()) sizes[j] = varint_len(gap_at(sel, j));
}

__global__ void k_group_sizes(const uint32_t *sel, size_t k, uint32_t *sizes, const DevResult *r) {
    if (r->nonfinite) return;
    for (size_t g = thread_index(); g < groups_of(k); g += grid_stride())
        sizes[g] = group_len(k, g, group_width(sel, k, g));
}

__global__ void k_encode_header(uint8_t *dst, size_t cap, size_t n, size_t k, size_t vs, terse_dtype_t dt,
                                DevResult *r) {
    task_encode_header(dst, cap, n, k, vs, dt, r);
}

template <typename U>
__global__ void k_gather(const U *x, const uint32_t *sel, size_t k, uint8_t *vals, const DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK) return;
    for (size_t j = thread_index(); j < k; j += grid_stride()) task_gather(x, sel, j, vals);
}

__global__ void k_write_varint(const uint32_t *sel, size_t k, const uint64_t *off, uint8_t *idx,
                               const DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK || r->coding != kVarint) return;
    for (size_t j = thread_index(); j < k; j += grid_stride()) task_write_varint(sel, off, j, idx);
}

__global__ void k_write_groups(const uint32_t *sel, size_t k, const uint64_t *off, uint8_t *idx,
                               const DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK || r->coding != kBitpacked) return;
    for (size_t g = thread_index(); g < groups_of(k); g += grid_stride()) task_write_group(sel, k, off, g, idx);
}

__global__ void k_check_header(const uint8_t *p, size_t len, size_t count, terse_dtype_t dt, size_t vs, int acc,
                               terse_op_t op, size_t kmax, DevResult *r) {
    task_check_header(p, len, count, dt, vs, acc, op, kmax, r);
}

__device__ inline bool decoding(const DevResult *r, uint8_t coding) {
    return r->verdict == TERSE_CODEC_OK && r->h.coding == coding;
}

__global__ void k_term_flags(const uint8_t *p, size_t vs, size_t sb, uint32_t *flags, const DevResult *r) {
    if (!decoding(r, kVarint)) return;
    const Header h = r->h;
    const uint8_t *s = section_of(p, h, vs);
    for (size_t b = thread_index(); b < sb; b += grid_stride()) task_term_flag(s, h, b, flags);
}

__global__ void k_varint_gaps(const uint8_t *p, size_t vs, size_t sb, const uint64_t *term_off, uint32_t *gaps,
                              DevResult *r) {
    if (!decoding(r, kVarint)) return;
    const Header h = r->h;
    const uint8_t *s = section_of(p, h, vs);
    for (size_t b = thread_index(); b < sb && b < h.index_bytes; b += grid_stride())
        task_varint_gap(s, b, term_off, h.k, gaps, r);
}

__global__ void k_varint_check(const uint8_t *p, size_t vs, DevResult *r) {
    if (!decoding(r, kVarint)) return;
    task_varint_check(section_of(p, r->h, vs), r->h, r);
}

// task_walk_groups with the section staged through shared memory a window
// at a time (the block loads it, one thread hops from header to header), so
// each hop waits on shared memory rather than on global memory.
constexpr size_t kWalkWindow = 32768;
__global__ void __launch_bounds__(1024)
    k_walk_groups(const uint8_t *p, size_t vs, uint64_t *start, uint32_t *width, DevResult *r) {
    __shared__ uint8_t win[kWalkWindow];
    __shared__ unsigned long long s_pos, s_g;
    __shared__ int s_done;
    if (!decoding(r, kBitpacked)) return;  // whole block
    const Header h = r->h;
    const uint8_t *s = section_of(p, h, vs);
    const size_t len = h.index_bytes, groups = groups_of(h.k);
    if (threadIdx.x == 0) {
        s_pos = 0;
        s_g = 0;
        s_done = 0;
    }
    __syncthreads();
    while (!s_done) {
        const size_t base = s_pos;
        const size_t have = len - base < kWalkWindow ? len - base : kWalkWindow;
        for (size_t i = threadIdx.x; i < have; i += blockDim.x) win[i] = s[base + i];
        __syncthreads();
        if (threadIdx.x == 0) {
            size_t pos = base, g = s_g;
            bool bad = false;
            for (; g < groups; g++) {
                if (pos >= len) {
                    bad = true;
                    break;
                }
                if (pos >= base + have) break;  // the next window holds this header
                if (!walk_group(h, g, win[pos - base], &pos, start, width)) {
                    bad = true;
                    break;
                }
            }
            if (bad) {
                r->gap_bad = 1;
                s_done = 1;
            } else if (g == groups) {
                if (pos != len) r->gap_bad = 1;
                s_done = 1;
            }
            s_pos = pos;
            s_g = g;
        }
        __syncthreads();
    }
}

__global__ void k_packed_gaps(const uint8_t *p, size_t vs, size_t kb, const uint64_t *start,
                              const uint32_t *width, uint32_t *gaps, DevResult *r) {
    if (!decoding(r, kBitpacked) || r->gap_bad) return;
    const Header h = r->h;
    const uint8_t *s = section_of(p, h, vs);
    for (size_t j = thread_index(); j < kb && j < h.k; j += grid_stride())
        task_packed_gap(s, start, width, j, gaps, r);
}

__global__ void k_steps(const uint32_t *gaps, size_t kb, uint32_t *steps, const DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK || r->gap_bad) return;
    const Header h = r->h;
    for (size_t j = thread_index(); j < kb; j += grid_stride()) task_step(gaps, h, j, steps);
}

__global__ void k_check_indices(size_t count, DevResult *r) { task_check_indices(count, r); }

template <typename U>
__global__ void k_zero(U *dst, size_t count, const DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK) return;
    for (size_t i = thread_index(); i < count; i += grid_stride()) dst[i] = 0;
}

template <typename U>
__global__ void k_scatter(const uint8_t *p, size_t kb, const uint32_t *gaps, const uint64_t *off, void *dst,
                          bool acc, terse_dtype_t dt, const DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK) return;
    const size_t k = r->h.k;
    const uint8_t *vals = p + kHeaderSize;
    for (size_t j = thread_index(); j < kb && j < k; j += grid_stride())
        task_scatter<U>(vals, j, index_at(gaps, off, j), dst, acc, dt);
}

class CudaExec {
public:
    CudaExec(const terse_codec_call_t *call, const Setup &s)
        : stream_(static_cast<cudaStream_t>(call->stream)), w_{static_cast<uint8_t *>(call->workspace),
                                                               layout_of(s)} {}

    const Work &work() const { return w_; }
    void begin() {
        k_reset<<<4, kThreads, 0, stream_>>>(r(), w_.hist());
        note();
    }
    bool finish(DevResult *out) {
        note(cudaMemcpyAsync(out, r(), sizeof *out, cudaMemcpyDeviceToHost, stream_));
        note(cudaStreamSynchronize(stream_));
        return ok_;
    }

    // As the emulation's select: pass 0 over the chunk, the candidates in
    // index order, the later passes and the final compaction over them.
    // Grids over the candidates are sized for the whole chunk; their blocks
    // read the candidates' count and stop.
    template <typename U>
    void select(const U *x, size_t n, size_t k, terse_dtype_t dt) {
        k_set_rank<<<1, 1, 0, stream_>>>(r(), k);
        note();
        const AllSource<U> all{x, n};
        const CandSource<U> cands{x, w_.cand()};
        const uint64_t inf = inf_key_of<U>(dt);
        histogram_pass<U>(all, 0, n, inf);
        compact<U, CandRule>(all, n, w_.cand(), kScanCands);
        for (int pass = 1; pass < select_passes<U>(); pass++) histogram_pass<U>(cands, pass, n, inf);
        compact<U, KeepRule>(cands, n, w_.sel(), kScanAbove);
    }
    void code_sizes(size_t k) {
        k_varint_sizes<<<grid_for(k), kThreads, 0, stream_>>>(w_.sel(), k, w_.a32(), r());
        note();
        k_group_sizes<<<grid_for(groups_of(k)), kThreads, 0, stream_>>>(w_.sel(), k, w_.g32(), r());
        note();
        scan(w_.a32(), k, w_.a64(), kScanVarint);
        scan(w_.g32(), groups_of(k), w_.g64(), kScanGroups);
    }
    void encode_header(uint8_t *dst, size_t cap, size_t n, size_t k, size_t vs, terse_dtype_t dt) {
        k_encode_header<<<1, 1, 0, stream_>>>(dst, cap, n, k, vs, dt, r());
        note();
    }
    template <typename U>
    void encode_write(const U *x, size_t k, uint8_t *dst) {
        uint8_t *vals = dst + kHeaderSize, *idx = vals + k * sizeof(U);
        k_gather<U><<<grid_for(k), kThreads, 0, stream_>>>(x, w_.sel(), k, vals, r());
        note();
        k_write_varint<<<grid_for(k), kThreads, 0, stream_>>>(w_.sel(), k, w_.a64(), idx, r());
        note();
        k_write_groups<<<grid_for(groups_of(k)), kThreads, 0, stream_>>>(w_.sel(), k, w_.g64(), idx, r());
        note();
    }
    void check_payload(const uint8_t *p, size_t len, size_t count, terse_dtype_t dt, size_t vs, int acc,
                       terse_op_t op, size_t kmax) {
        k_check_header<<<1, 1, 0, stream_>>>(p, len, count, dt, vs, acc, op, kmax, r());
        note();
        const size_t sb = section_bound(len, w_.l), kb = k_bound(len, vs, w_.l);
        k_term_flags<<<grid_for(sb), kThreads, 0, stream_>>>(p, vs, sb, w_.a32(), r());
        note();
        scan(w_.a32(), sb, w_.a64(), kScanTerms);
        k_varint_gaps<<<grid_for(sb), kThreads, 0, stream_>>>(p, vs, sb, w_.a64(), w_.b32(), r());
        note();
        k_varint_check<<<1, 1, 0, stream_>>>(p, vs, r());
        note();
        k_walk_groups<<<1, 1024, 0, stream_>>>(p, vs, w_.g64(), w_.g32(), r());
        note();
        k_packed_gaps<<<grid_for(kb), kThreads, 0, stream_>>>(p, vs, kb, w_.g64(), w_.g32(), w_.b32(), r());
        note();
        k_steps<<<grid_for(kb), kThreads, 0, stream_>>>(w_.b32(), kb, w_.c32(), r());
        note();
        scan(w_.c32(), kb, w_.c64(), kScanGaps);
        k_check_indices<<<1, 1, 0, stream_>>>(count, r());
        note();
        kb_ = kb;
    }
    template <typename U>
    void scatter(const uint8_t *p, size_t count, void *dst, bool acc, terse_dtype_t dt) {
        if (!acc && count) {
            k_zero<U><<<grid_for(count), kThreads, 0, stream_>>>(static_cast<U *>(dst), count, r());
            note();
        }
        k_scatter<U><<<grid_for(kb_), kThreads, 0, stream_>>>(p, kb_, w_.b32(), w_.c64(), dst, acc, dt, r());
        note();
    }

private:
    template <typename U, typename Src>
    void histogram_pass(const Src &src, int pass, size_t bound, uint64_t inf) {
        k_hist<U, Src><<<grid_for(bound), kThreads, 0, stream_>>>(src, pass, inf, r(), w_.hist());
        note();
        k_pick<<<1, kPickThreads, 0, stream_>>>(digit_of<U>(pass).bits, r(), w_.hist());
        note();
    }
    template <typename U, typename Rule, typename Src>
    void compact(const Src &src, size_t bound, uint32_t *out, int slot) {
        const unsigned tiles = static_cast<unsigned>(tiles_of(bound));
        k_tile_counts<U, Src, Rule><<<tiles, kTileThreads, 0, stream_>>>(src, r(), w_.cnt(0), w_.cnt(1));
        note();
        scan(w_.cnt(0), tiles, w_.cnt_off(0), slot);
        scan(w_.cnt(1), tiles, w_.cnt_off(1), kScanEqual);
        k_tile_places<U, Src, Rule>
            <<<tiles, kTileThreads, 0, stream_>>>(src, r(), w_.cnt_off(0), w_.cnt_off(1), out);
        note();
    }

    DevResult *r() const { return w_.result(); }
    void scan(const uint32_t *sizes, size_t n, uint64_t *off, int slot) {
        note(terse_codec::scan_dev::scan_sizes(sizes, n, w_.scan_tiles(), off, &r()->total[slot], stream_));
    }
    void note(cudaError_t e = cudaGetLastError()) { ok_ &= e == cudaSuccess; }

    cudaStream_t stream_;
    Work w_;
    size_t kb_ = 0;
    bool ok_ = true;
};

bool has_workspace(const Setup &s, const terse_codec_call_t *call) {
    return TERSE_CODEC_CALL_HAS(call, workspace_size) && call->workspace &&
           call->workspace_size >= workspace_size(s);
}

}  // namespace

bool cuda_built() { return true; }

int cuda_encode(const Setup &s, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                const terse_codec_call_t *call) {
    if (!has_workspace(s, call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call, s);
    return run_encode(x, s, src, count, dst, dst_cap, dst_len);
}

int cuda_decode(const Setup &s, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                terse_op_t op, const terse_codec_call_t *call) {
    if (!has_workspace(s, call)) return TERSE_CODEC_ERR_PARAM;
    CudaExec x(call, s);
    return run_decode(x, s, src, src_len, dst, count, accumulate, op);
}

}  // namespace dev
}  // namespace terse_topk
