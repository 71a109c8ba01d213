// quantize on a device: the host side of each call (the same checks and
// status decisions as quantize_codec.cc), written once over an executor
// that runs the kernel tasks of quantize_device_body.h: CudaExec
// (quantize_device.cu) launches them on the call's stream, EmuExec
// (quantize_device_emulation.cc) runs them in host loops.  So the tests on
// a machine without a GPU check the decisions the device path takes too.
//
// An executor provides:
//   dev::DevResult *result();          the workspace head (device memory on a GPU)
//   double *scratch(size_t n);         n doubles of workspace after it, or nullptr
//   void begin();                      reset the result
//   template <T> void stats(const dev::StatsJob<T> &, bool mean);
//   template <T> void encode_scales(const dev::EncodeDevJob<T> &, size_t blocks);
//   template <T, BITS, ROUND> void encode_codes(const dev::EncodeDevJob<T> &);
//   template <T> void nonfinite(const T *x, size_t count);
//   void check_payload(const uint8_t *p, size_t len, size_t count, int scale_bytes, int which);
//   template <T> void decode(const uint8_t *p, size_t count, T *dst, bool accumulate);
//   void combine(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t out_cap, size_t count,
//                int a_contributors, int b_contributors);
//   void put_header(uint8_t *dst, const Header &);
//   bool finish(dev::DevResult *out);  wait for the call's work; false: the device failed
#pragma once

#include "quantize_codec.h"
#include "quantize_device_body.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace terse_quantize {
namespace dev {

// Workspace a device instance needs for chunks of up to max_count elements.
inline size_t workspace_size(const Params &p, size_t max_count) {
    return kResultBytes + block_count(max_count, p.log2_block) * sizeof(double);
}

template <typename F>
inline int with_dtype(int dindex, F &&f) {
    switch (dindex) {
    case 0: return f(static_cast<const float *>(nullptr));
    case 1: return f(static_cast<const double *>(nullptr));
    case 2: return f(static_cast<const F16 *>(nullptr));
    case 3: return f(static_cast<const BF16 *>(nullptr));
    default: return TERSE_CODEC_ERR_INTERNAL;
    }
}

template <typename Exec>
int run_stats(Exec &x, const Instance &in, const void *src, size_t count, double *out) {
    if (count == 0) return TERSE_CODEC_OK;
    if (!src || !out) return TERSE_CODEC_ERR_PARAM;
    x.begin();
    const bool mean = scale_is_mean(in.p.bits, in.p.rounding);
    with_dtype(in.dindex, [&](auto *tag) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
        x.template stats<T>(StatsJob<T>{static_cast<const T *>(src), count, in.p.log2_block, out}, mean);
        return 0;
    });
    DevResult r;
    return x.finish(&r) ? TERSE_CODEC_OK : TERSE_CODEC_ERR_INTERNAL;
}

template <typename Exec, typename T, int BITS>
void encode_codes_rounded(Exec &x, const EncodeDevJob<T> &j) {
    if (j.rounding == kStochastic) x.template encode_codes<T, BITS, kStochastic>(j);
    else x.template encode_codes<T, BITS, kNearest>(j);
}

template <typename Exec, typename T>
void encode_codes_dispatch(Exec &x, const EncodeDevJob<T> &j) {
    switch (j.bits) {
    case 1: encode_codes_rounded<Exec, T, 1>(x, j); break;
    case 2: encode_codes_rounded<Exec, T, 2>(x, j); break;
    case 4: encode_codes_rounded<Exec, T, 4>(x, j); break;
    case 8: encode_codes_rounded<Exec, T, 8>(x, j); break;
    default: encode_codes_rounded<Exec, T, 16>(x, j); break;
    }
}

// As quantize_codec.cc's encode; agreed stats (call->agreed_stats) in device memory.
template <typename Exec>
int run_encode(Exec &x, const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap,
               size_t *dst_len, const terse_codec_call_t *call) {
    const int sb = in.dtype == TERSE_DTYPE_FLOAT64 ? 8 : 4;
    if (count == 0 || count > SIZE_MAX / 16) return TERSE_CODEC_RAW;
    const size_t need = payload_bytes(count, in.p.log2_block, sb, in.p.bits, 1);
    if (need >= count * in.elem_bytes) return TERSE_CODEC_RAW;
    if (need > dst_cap) return TERSE_CODEC_ERR_NOSPACE;
    if (!src || !dst || !dst_len) return TERSE_CODEC_ERR_PARAM;
    const size_t nb = block_count(count, in.p.log2_block);
    const double *agreed = call ? call->agreed_stats : nullptr;
    double *local = nullptr;
    if (!agreed) {
        local = x.scratch(nb);
        if (!local) return TERSE_CODEC_ERR_PARAM;  // a chunk larger than the instance was created for
    }
    x.begin();
    uint8_t *p = static_cast<uint8_t *>(dst);
    const Header h = single_rank_header(in.p, sb, count);
    x.put_header(p, h);
    with_dtype(in.dindex, [&](auto *tag) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
        const T *xs = static_cast<const T *>(src);
        if (local) {
            x.template stats<T>(StatsJob<T>{xs, count, in.p.log2_block, local},
                                scale_is_mean(in.p.bits, in.p.rounding));
        }
        EncodeDevJob<T> j;
        j.x = xs;
        j.count = count;
        j.log2_block = in.p.log2_block;
        j.bits = in.p.bits;
        j.rounding = in.p.rounding;
        j.seed = call ? call->seed : 0;
        j.agreed = local ? local : agreed;
        j.scales = p + kHeaderBytes;
        j.codes = p + kHeaderBytes + nb * static_cast<size_t>(sb);
        x.template encode_scales<T>(j, nb);
        encode_codes_dispatch(x, j);
        x.template nonfinite<T>(xs, count);
        return 0;
    });
    DevResult r;
    if (!x.finish(&r)) return TERSE_CODEC_ERR_INTERNAL;
    if (r.first_bad_block != ~0ull)
        return (r.first_bad_block & 3u) == kAgreedRaw ? TERSE_CODEC_RAW : TERSE_CODEC_ERR_PARAM;
    if (r.encode_bad) return r.nonfinite ? TERSE_CODEC_RAW : TERSE_CODEC_ERR_PARAM;
    *dst_len = need;
    return TERSE_CODEC_OK;
}

template <typename Exec>
int run_decode(Exec &x, const Instance &in, const void *src, size_t src_len, void *dst, size_t count,
               int accumulate, terse_op_t op) {
    if (op != TERSE_OP_SUM) return TERSE_CODEC_ERR_UNSUPPORTED;
    if (!src || (!dst && count)) return TERSE_CODEC_ERR_PARAM;
    const int sb = in.dtype == TERSE_DTYPE_FLOAT64 ? 8 : 4;
    const uint8_t *p = static_cast<const uint8_t *>(src);
    x.begin();
    x.check_payload(p, src_len, count, sb, 0);
    with_dtype(in.dindex, [&](auto *tag) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
        x.template decode<T>(p, count, static_cast<T *>(dst), accumulate != 0);
        return 0;
    });
    DevResult r;
    if (!x.finish(&r)) return TERSE_CODEC_ERR_INTERNAL;
    return r.a_bad || r.code_bad ? TERSE_CODEC_ERR_CORRUPT : TERSE_CODEC_OK;
}

template <typename Exec>
int run_combine(Exec &x, const Instance &in, const void *a, size_t a_len, int a_contributors, const void *b,
                size_t b_len, int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len) {
    if (!a || !b || !out || !out_len) return TERSE_CODEC_ERR_PARAM;
    const int sb = in.dtype == TERSE_DTYPE_FLOAT64 ? 8 : 4;
    const uint8_t *pa = static_cast<const uint8_t *>(a), *pb = static_cast<const uint8_t *>(b);
    x.begin();
    x.check_payload(pa, a_len, count, sb, 0);
    x.check_payload(pb, b_len, count, sb, 1);
    x.combine(pa, pb, static_cast<uint8_t *>(out), out_cap, count, a_contributors, b_contributors);
    DevResult r;
    if (!x.finish(&r)) return TERSE_CODEC_ERR_INTERNAL;
    // The CPU's order: each payload, the headers against each other, the
    // scales, the output's width and room, the codes.
    if (r.a_bad || r.b_bad) return TERSE_CODEC_ERR_CORRUPT;
    if (r.combine_verdict == TERSE_CODEC_ERR_CORRUPT) return TERSE_CODEC_ERR_CORRUPT;
    if (r.scales_differ) return TERSE_CODEC_ERR_CORRUPT;
    if (r.combine_verdict != TERSE_CODEC_OK) return r.combine_verdict;
    if (r.code_bad) return TERSE_CODEC_ERR_CORRUPT;
    *out_len = static_cast<size_t>(r.out_len);
    return TERSE_CODEC_OK;
}

}  // namespace dev
}  // namespace terse_quantize
