// quantize's device kernels emulated on the host: EmuExec runs every kernel
// task of quantize_device_body.h in loops over the same indices the CUDA
// grid covers, and does the warps' collective steps (the OR that assembles
// a packed word, the max over lanes, the broadcast of a block's constants)
// with plain loops.  The emu_* calls are the device calls of
// quantize_device.h on host memory; tests compare them with the CPU codec.
// Header only: tests and the device check include it; the plugin does not.
#pragma once

#include "quantize_device_ops.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace terse_quantize {
namespace dev {

class EmuExec {
public:
    // workspace: at least kResultBytes, 8-byte aligned, as a device call gets it.
    EmuExec(void *workspace, size_t bytes) : ws_(static_cast<uint8_t *>(workspace)), bytes_(bytes) {}

    DevResult *result() { return reinterpret_cast<DevResult *>(ws_); }
    double *scratch(size_t n) {
        return bytes_ >= kResultBytes && (bytes_ - kResultBytes) / sizeof(double) >= n
                   ? reinterpret_cast<double *>(ws_ + kResultBytes)
                   : nullptr;
    }
    void begin() { reset_result(result()); }
    void put_header(uint8_t *dst, const Header &h) { write_header(dst, h); }
    bool finish(DevResult *out) {
        *out = *result();
        return true;
    }

    template <typename T>
    void stats(const StatsJob<T> &j, bool mean) {
        const size_t nb = block_count(j.count, j.log2_block);
        for (size_t b = 0; b < nb; b++) {
            if (mean) {
                double lanes[8];
                for (int k = 0; k < 8; k++) lanes[k] = block_abs_sum_lane(j, b, k);
                j.out[b] = block_mean_of_lanes(lanes, block_len(j.count, j.log2_block, b));
            } else {
                uint64_t m = 0;
                for (int lane = 0; lane < 32; lane++) {
                    const uint64_t v = block_max_bits_lane(j, b, lane, 32);
                    m = v > m ? v : m;
                }
                j.out[b] = block_max_of_bits<T>(m);
            }
        }
    }

    template <typename T>
    void encode_scales(const EncodeDevJob<T> &j, size_t blocks) {
        for (size_t b = 0; b < blocks; b++) task_encode_scale(j, result(), b);
    }

    template <typename T, int BITS, int ROUND>
    void encode_codes(const EncodeDevJob<T> &j) {
        const size_t groups = (j.count + 31) / 32;
        for (size_t g = 0; g < groups; g++) {
            const BlockConsts c = encode_consts<T, BITS, ROUND>(j, g);  // lane 0, broadcast
            uint32_t words[16] = {0};
            bool all_ok = true;
            for (int lane = 0; lane < 32; lane++) {
                const size_t i = 32 * g + static_cast<size_t>(lane);
                uint32_t code = 0;
                bool ok = true;
                if (i < j.count) code = encode_code<T, BITS, ROUND>(j, i, c, &ok);
                all_ok &= ok;
                words[word_of_lane(lane, BITS)] |= code_word_part(code, lane, BITS);  // the warp's OR
            }
            if (!all_ok) flag_set(&result()->encode_bad);
            for (int lane = 0; lane < 32; lane++)
                if (lane_starts_word(lane, BITS))
                    store_code_word(j.codes, j.count, BITS, g, word_of_lane(lane, BITS),
                                    words[word_of_lane(lane, BITS)]);
        }
    }

    template <typename T>
    void nonfinite(const T *x, size_t count) {
        for (size_t i = 0; i < count; i++) task_nonfinite(x, result(), i);
    }

    void check_payload(const uint8_t *p, size_t len, size_t count, int scale_bytes, int which) {
        task_check_header(p, len, count, scale_bytes, result(), which);
        const size_t blocks = block_count(count, kMinLog2Block);  // the grid: the most blocks a payload has
        for (size_t b = 0; b < blocks; b++) task_check_scale(p, count, result(), which, b);
    }

    template <typename T>
    void decode(const uint8_t *p, size_t count, T *dst, bool acc) {
        DevResult *r = result();
        if (r->a_bad) return;
        const DecodeDevJob<T> j = decode_job_of(p, count, r->ha, dst, acc);
        const size_t groups = (count + 31) / 32;
        for (size_t g = 0; g < groups; g++) {
            const double u = decode_step(j, g);  // lane 0, broadcast
            bool all_ok = true;
            for (int lane = 0; lane < 32; lane++) all_ok &= decode_lane(j, g, lane, u);
            if (!all_ok) flag_set(&r->code_bad);
        }
    }

    void combine(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t out_cap, size_t count, int ac, int bc) {
        DevResult *r = result();
        task_combine_header(out, out_cap, count, ac, bc, r);
        const size_t blocks = block_count(count, kMinLog2Block);
        for (size_t k = 0; k < blocks; k++) task_combine_scale(a, b, out, count, r, k);
        const size_t groups = (count + 31) / 32;
        for (size_t g = 0; g < groups; g++) task_combine_group(a, b, out, count, r, g);
    }

private:
    uint8_t *ws_;
    size_t bytes_;
};

// The device calls on host memory, with a workspace of workspace_size() bytes.
inline int emu_stats(const Instance &in, void *ws, size_t ws_bytes, const void *src, size_t count, double *out) {
    EmuExec x(ws, ws_bytes);
    return run_stats(x, in, src, count, out);
}

inline int emu_encode(const Instance &in, void *ws, size_t ws_bytes, const void *src, size_t count, void *dst,
                      size_t dst_cap, size_t *dst_len, const terse_codec_call_t *call) {
    EmuExec x(ws, ws_bytes);
    return run_encode(x, in, src, count, dst, dst_cap, dst_len, call);
}

inline int emu_decode(const Instance &in, void *ws, size_t ws_bytes, const void *src, size_t src_len, void *dst,
                      size_t count, int accumulate, terse_op_t op) {
    EmuExec x(ws, ws_bytes);
    return run_decode(x, in, src, src_len, dst, count, accumulate, op);
}

inline int emu_combine(const Instance &in, void *ws, size_t ws_bytes, const void *a, size_t a_len,
                       int a_contributors, const void *b, size_t b_len, int b_contributors, size_t count,
                       void *out, size_t out_cap, size_t *out_len) {
    EmuExec x(ws, ws_bytes);
    return run_combine(x, in, a, a_len, a_contributors, b, b_len, b_contributors, count, out, out_cap, out_len);
}

}  // namespace dev
}  // namespace terse_quantize
