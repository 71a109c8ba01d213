// errbound on a device: the host side of each call (the same checks and
// status decisions as errbound_codec.cc), written once over an executor
// that runs the kernel tasks of errbound_device_body.h: CudaExec
// (errbound_device.cu) launches them on the call's stream, EmuExec
// (errbound_device_emulation.h) runs them in host loops.
//
// An executor provides (w: the workspace, dev::Work):
//   void begin();                                   reset the result
//   template <T> void stats(const T *x, size_t count, Mode mode, double *out);
//   void plan(const Params &, int nranks, terse_dtype_t, size_t elem_bytes, const double *agreed,
//             size_t count, size_t dst_cap);
//   template <T> void encode_widths(const T *x, size_t count);      sizes(2)
//   void scan(int s, size_t nb);                                      offs(s), total[s]
//   void encode_header(uint8_t *dst, size_t cap, size_t count);
//   template <T> void encode_pack(const T *x, size_t count, uint8_t *dst);
//   void check_payload(const uint8_t *p, size_t len, size_t count, int which);   incl. its scan
//   template <T> void decode(const uint8_t *p, size_t count, T *dst, bool acc);
//   void combine(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t cap, size_t count, int ac, int bc);
//   bool finish(dev::DevResult *out);   wait for the call's work; false: the device failed
// The zstd stage has no device side: device instances are created only
// with zstd=off (create_instance says so otherwise).
#pragma once

#include "errbound_codec.h"
#include "errbound_device_body.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace terse_errbound {
namespace dev {

// Workspace a device instance needs for chunks of up to max_count elements.
inline size_t workspace_size(size_t max_count) { return layout_for(max_count).bytes; }

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

#define TERSE_ERRBOUND_WITH_T(in, body)                                       \
    with_dtype((in).dindex, [&](auto *tag_) {                                 \
        using T = std::remove_const_t<std::remove_pointer_t<decltype(tag_)>>; \
        body;                                                                 \
        return 0;                                                             \
    })

template <typename Exec>
int run_stats(Exec &x, const Instance &in, const void *src, size_t count, double *out) {
    if (!out || (!src && count)) return TERSE_CODEC_ERR_PARAM;
    x.begin();
    TERSE_ERRBOUND_WITH_T(in, x.template stats<T>(static_cast<const T *>(src), count, in.p.mode, out));
    DevResult r;
    return x.finish(&r) ? TERSE_CODEC_OK : TERSE_CODEC_ERR_INTERNAL;
}

// As errbound_codec.cc's encode; agreed stats (call->agreed_stats) in device
// memory, else the chunk's own, computed into the workspace's result.
template <typename Exec>
int run_encode(Exec &x, const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap,
               size_t *dst_len, const terse_codec_call_t *call) {
    if (count == 0 || count > SIZE_MAX / 256) return TERSE_CODEC_RAW;
    if (!src || !dst || !dst_len) return TERSE_CODEC_ERR_PARAM;
    if (block_count(count) > x.work().l.nb) return TERSE_CODEC_ERR_PARAM;  // larger than the instance's chunks
    const double *agreed = call ? call->agreed_stats : nullptr;
    uint8_t *p = static_cast<uint8_t *>(dst);
    x.begin();
    TERSE_ERRBOUND_WITH_T(in, {
        const T *xs = static_cast<const T *>(src);
        if (!agreed) {  // a single rank (tools): its own stats
            double *local = x.work().result()->local;
            x.template stats<T>(xs, count, in.p.mode, local);
            agreed = local;
        }
        x.plan(in.p, in.nranks, in.dtype, in.elem_bytes, agreed, count, dst_cap);
        x.template encode_widths<T>(xs, count);
        x.scan(2, block_count(count));
        x.encode_header(p, dst_cap, count);
        x.template encode_pack<T>(xs, count, p);
    });
    DevResult r;
    if (!x.finish(&r)) return TERSE_CODEC_ERR_INTERNAL;
    if (r.verdict != TERSE_CODEC_OK) return r.verdict;
    *dst_len = static_cast<size_t>(r.out_len);
    return TERSE_CODEC_OK;
}

template <typename Exec>
int run_decode(Exec &x, const Instance &in, const void *src, size_t src_len, void *dst, size_t count,
               int accumulate, terse_op_t op) {
    if (op != TERSE_OP_SUM) return TERSE_CODEC_ERR_UNSUPPORTED;
    if (!src || (!dst && count)) return TERSE_CODEC_ERR_PARAM;
    if (block_count(count) > x.work().l.nb) return TERSE_CODEC_ERR_PARAM;
    const uint8_t *p = static_cast<const uint8_t *>(src);
    x.begin();
    x.check_payload(p, src_len, count, 0);
    TERSE_ERRBOUND_WITH_T(in, x.template decode<T>(p, count, static_cast<T *>(dst), accumulate != 0));
    DevResult r;
    if (!x.finish(&r)) return TERSE_CODEC_ERR_INTERNAL;
    if (r.a_bad) return static_cast<int>(r.a_bad);
    return r.code_bad ? TERSE_CODEC_ERR_CORRUPT : TERSE_CODEC_OK;
}

template <typename Exec>
int run_combine(Exec &x, const Instance &, const void *a, size_t a_len, int a_contributors, const void *b,
                size_t b_len, int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len) {
    if (!a || !b || !out || !out_len) return TERSE_CODEC_ERR_PARAM;
    if (block_count(count) > x.work().l.nb) return TERSE_CODEC_ERR_PARAM;
    const uint8_t *pa = static_cast<const uint8_t *>(a), *pb = static_cast<const uint8_t *>(b);
    x.begin();
    x.check_payload(pa, a_len, count, 0);
    x.check_payload(pb, b_len, count, 1);
    x.combine(pa, pb, static_cast<uint8_t *>(out), out_cap, count, a_contributors, b_contributors);
    DevResult r;
    if (!x.finish(&r)) return TERSE_CODEC_ERR_INTERNAL;
    // The CPU's order: each payload, the headers against each other, the room, the codes, the fit.
    if (r.a_bad) return static_cast<int>(r.a_bad);
    if (r.b_bad) return static_cast<int>(r.b_bad);
    if (r.verdict != TERSE_CODEC_OK) return r.verdict;
    *out_len = static_cast<size_t>(r.out_len);
    return TERSE_CODEC_OK;
}

#undef TERSE_ERRBOUND_WITH_T

}  // namespace dev
}  // namespace terse_errbound
