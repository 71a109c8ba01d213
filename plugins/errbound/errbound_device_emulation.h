// errbound's device kernels emulated on the host: EmuExec runs every kernel
// task of errbound_device_body.h in loops over the same indices the CUDA
// grid covers, and does the warps' collective steps (the OR of a block's
// codes, the ballot that forms a bit plane, all-lanes checks) and the
// scans with plain loops.  The emu_* calls are the device calls of
// errbound_device.h on host memory; tests compare them with the CPU codec.
// Header only: tests include it; the plugin does not.
#pragma once

#include "errbound_device_ops.h"

#include <cstddef>
#include <cstdint>

namespace terse_errbound {
namespace dev {

class EmuExec {
public:
    // workspace: workspace_size(max_count) bytes, 8-byte aligned.
    EmuExec(void *workspace, size_t max_count) : w_{static_cast<uint8_t *>(workspace), layout_for(max_count)} {}

    const Work &work() const { return w_; }
    void begin() { reset_result(r()); }
    bool finish(DevResult *out) {
        *out = *r();
        return true;
    }

    // The grid's threads take elements t, t + G, ...; each block's
    // threads are merged in reverse (any order must give the same bits).
    template <typename T>
    void stats(const T *x, size_t count, Mode mode, double *out) {
        const size_t blocks = stats_blocks(count), grid = blocks * kStatsThreads;
        StatsPartial *parts = w_.partials();
        for (size_t blk = 0; blk < blocks; blk++) {
            StatsPartial bp = empty_partial();
            for (size_t t = kStatsThreads; t-- > 0;) {
                StatsPartial tp = empty_partial();
                for (size_t i = blk * kStatsThreads + t; i < count; i += grid)
                    stats_element(x, i, mode == kRel, &tp);
                bp = merge_partial(tp, bp);
            }
            parts[blk] = bp;
        }
        double *lanes = w_.lanes8();
        for (int k = 0; k < 8; k++) lanes[k] = mode == kNorm ? sumsq_lane(x, count, k) : 0.0;
        task_stats_final<T>(mode, parts, blocks, lanes, out);
    }

    void plan(const Params &p, int nranks, terse_dtype_t dt, size_t eb, const double *agreed, size_t count,
              size_t cap) {
        task_plan(p, nranks, dt, eb, agreed, count, cap, r());
    }

    template <typename T>
    void encode_widths(const T *x, size_t count) {
        if (r()->verdict != TERSE_CODEC_OK) return;
        const size_t nb = block_count(count);
        for (size_t b = 0; b < nb; b++) {
            uint32_t all = 0;
            bool any_bad = false, any_nf = false;
            for (int lane = 0; lane < 32; lane++) {
                bool ok, nf;
                all |= encode_lane(x, count, r(), b, lane, &ok, &nf);
                any_bad |= !ok;
                any_nf |= nf;
            }
            w_.sizes(2)[b] = block_bytes(all);
            if (any_bad) flag_set(&r()->enc_bad);
            if (any_nf) flag_set(&r()->nonfinite);
        }
    }

    void scan(int s, size_t nb) { r()->total[s] = terse_codec::scan_sizes_host(w_.sizes(s), nb, w_.offs(s)); }

    void encode_header(uint8_t *dst, size_t cap, size_t count) { task_encode_header(dst, cap, count, r()); }

    template <typename T>
    void encode_pack(const T *x, size_t count, uint8_t *dst) {
        if (r()->verdict != TERSE_CODEC_OK) return;
        const size_t nb = block_count(count);
        put_widths(dst, nb);
        uint8_t *data = dst + kHeaderBytes + widths_bytes(nb, r()->nib != 0);
        for (size_t b = 0; b < nb; b++) {
            uint32_t z[32];
            for (int lane = 0; lane < 32; lane++) {
                bool ok, nf;
                z[lane] = encode_lane(x, count, r(), b, lane, &ok, &nf);
            }
            store_planes(z, w_.sizes(2)[b] / 4, data + w_.offs(2)[b]);
        }
    }

    void check_payload(const uint8_t *p, size_t len, size_t count, int which) {
        uint32_t *bad = which ? &r()->b_bad : &r()->a_bad;
        Header *h = which ? &r()->hb : &r()->ha;
        task_check_header(p, len, count, h, bad);
        if (*bad) return;
        const size_t nb = block_count(count);
        for (size_t b = 0; b < nb; b++) task_check_width(p, *h, b, w_.sizes(which), bad);
        scan(which, nb);
        task_check_total(*h, count, r()->total[which], bad);
    }

    template <typename T>
    void decode(const uint8_t *p, size_t count, T *dst, bool acc) {
        if (r()->a_bad) return;
        const size_t nb = block_count(count);
        for (size_t b = 0; b < nb; b++) {
            bool all_ok = true;
            const Planes pl = planes_of(p, r()->ha, count, w_.sizes(0), w_.offs(0), b);
            for (int lane = 0; lane < 32; lane++)
                all_ok &= decode_code(r()->ha, count, b, lane, lane_code(pl, lane), dst, acc);
            if (!all_ok) flag_set(&r()->code_bad);
        }
    }

    void combine(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t cap, size_t count, int ac, int bc) {
        task_combine_header(ac, bc, cap, r());
        if (!combine_runs(r())) return;
        const size_t nb = block_count(count);
        const CombineSide sa{a, w_.sizes(0), w_.offs(0)}, sb{b, w_.sizes(1), w_.offs(1)};
        for (size_t blk = 0; blk < nb; blk++) {
            uint32_t all = 0;
            bool all_ok = true;
            for (int lane = 0; lane < 32; lane++) {
                bool ok;
                all |= combine_lane(sa, sb, count, blk, lane, &ok);
                all_ok &= ok;
            }
            w_.sizes(2)[blk] = block_bytes(all);
            if (!all_ok) flag_set(&r()->code_bad);
        }
        scan(2, nb);
        task_combine_finish(out, cap, count, r());
        if (!combine_runs(r())) return;
        put_widths(out, nb);
        uint8_t *data = out + kHeaderBytes + widths_bytes(nb, r()->nib != 0);
        for (size_t blk = 0; blk < nb; blk++) {
            uint32_t z[32];
            for (int lane = 0; lane < 32; lane++) {
                bool ok;
                z[lane] = combine_lane(sa, sb, count, blk, lane, &ok);
            }
            store_planes(z, w_.sizes(2)[blk] / 4, data + w_.offs(2)[blk]);
        }
    }

private:
    DevResult *r() const { return w_.result(); }

    // A lane of the combine: both codes gathered from their planes.
    uint32_t combine_lane(const CombineSide &a, const CombineSide &b, size_t count, size_t blk, int lane,
                          bool *ok) {
        const uint32_t za = lane_code(side_planes(a, r()->ha, count, blk), lane);
        const uint32_t zb = lane_code(side_planes(b, r()->hb, count, blk), lane);
        return combine_codes(r(), count, blk, lane, za, zb, ok);
    }

    void put_widths(uint8_t *dst, size_t nb) {
        const bool nib = r()->nib != 0;
        for (size_t i = 0; i < widths_bytes(nb, nib); i++)
            task_widths_byte(dst + kHeaderBytes, w_.sizes(2), nb, nib, i);
    }

    // The warp's ballots: plane j holds bit j of every lane's code.
    static void store_planes(const uint32_t *z, uint32_t w, uint8_t *q) {
        for (uint32_t j = 0; j < w; j++) {
            uint32_t plane = 0;
            for (int lane = 0; lane < 32; lane++) plane |= ((z[lane] >> j) & 1u) << lane;
            terse_codec::put_u32(q + 4 * j, plane);
        }
    }

    Work w_;
};

// The device calls on host memory, with a workspace of workspace_size(in.max_chunk_count) bytes.
inline int emu_stats(const Instance &in, void *ws, const void *src, size_t count, double *out) {
    EmuExec x(ws, in.max_chunk_count);
    return run_stats(x, in, src, count, out);
}

inline int emu_encode(const Instance &in, void *ws, const void *src, size_t count, void *dst, size_t dst_cap,
                      size_t *dst_len, const terse_codec_call_t *call) {
    EmuExec x(ws, in.max_chunk_count);
    return run_encode(x, in, src, count, dst, dst_cap, dst_len, call);
}

inline int emu_decode(const Instance &in, void *ws, const void *src, size_t src_len, void *dst, size_t count,
                      int accumulate, terse_op_t op) {
    EmuExec x(ws, in.max_chunk_count);
    return run_decode(x, in, src, src_len, dst, count, accumulate, op);
}

inline int emu_combine(const Instance &in, void *ws, const void *a, size_t a_len, int a_contributors,
                       const void *b, size_t b_len, int b_contributors, size_t count, void *out, size_t out_cap,
                       size_t *out_len) {
    EmuExec x(ws, in.max_chunk_count);
    return run_combine(x, in, a, a_len, a_contributors, b, b_len, b_contributors, count, out, out_cap, out_len);
}

}  // namespace dev
}  // namespace terse_errbound
