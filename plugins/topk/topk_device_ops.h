// topk on a device: the host side of each call (the same checks and status
// decisions as topk_codec.cc), written once over an executor that runs the
// kernel tasks of topk_device_body.h: CudaExec (topk_device.cu) launches
// them on the call's stream, EmuExec (topk_device_emulation.h) runs them in
// host loops.
//
// An executor provides (w: the workspace, dev::Work):
//   void begin();                                   reset the result and the histogram
//   template <U> void select(const U *x, size_t n, size_t k, terse_dtype_t);   sel[0..k)
//   void code_sizes(size_t k);                      the codings' sizes and offsets
//   void encode_header(uint8_t *dst, size_t cap, size_t n, size_t k, size_t vs, terse_dtype_t);
//   template <U> void encode_write(const U *x, size_t k, uint8_t *dst);
//   void check_payload(const uint8_t *p, size_t len, size_t count, terse_dtype_t, size_t vs, int acc,
//                      terse_op_t op, size_t kmax);   header, gaps, indices
//   template <U> void scatter(const uint8_t *p, size_t count, void *dst, bool acc, terse_dtype_t);
//   bool finish(dev::DevResult *out);   wait for the call's work; false: the device failed
#pragma once

#include "topk_device_body.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace terse_topk {
namespace dev {

// What a device instance was created for.
struct Setup {
    Params params;
    terse_dtype_t dtype;
    size_t vsize;
    size_t max_count;
};

inline Layout layout_of(const Setup &s) { return layout_for(s.max_count, s.params.kept(s.max_count)); }

// Workspace a device instance needs.
inline size_t workspace_size(const Setup &s) { return layout_of(s).bytes; }

// Smallest payload k kept elements can take (all gaps zero, bit-packed).
inline size_t min_payload(size_t k, size_t vsize) { return kHeaderSize + k * vsize + (k + kGroup - 1) / kGroup; }

template <typename F>
inline int with_key_type(terse_dtype_t dt, F &&f) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return f(static_cast<const uint32_t *>(nullptr));
    case TERSE_DTYPE_FLOAT64: return f(static_cast<const uint64_t *>(nullptr));
    default: return f(static_cast<const uint16_t *>(nullptr));
    }
}

template <typename Exec>
int run_encode(Exec &x, const Setup &s, const void *src, size_t n, void *dst, size_t cap, size_t *len) {
    if (n > s.max_count) return TERSE_CODEC_ERR_INTERNAL;  // the engine promised max_chunk_count
    const size_t vs = s.vsize;
    const size_t k = s.params.kept(n);
    if (n == 0 || min_payload(k, vs) >= n * vs) return TERSE_CODEC_RAW;  // cannot shrink
    if (!src || !dst || !len) return TERSE_CODEC_ERR_PARAM;
    uint8_t *p = static_cast<uint8_t *>(dst);
    x.begin();
    with_key_type(s.dtype, [&](auto *tag) {
        using U = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
        const U *xs = static_cast<const U *>(src);
        x.template select<U>(xs, n, k, s.dtype);
        x.code_sizes(k);
        x.encode_header(p, cap, n, k, vs, s.dtype);
        x.template encode_write<U>(xs, k, p);
        return 0;
    });
    DevResult r;
    if (!x.finish(&r)) return TERSE_CODEC_ERR_INTERNAL;
    if (r.verdict != TERSE_CODEC_OK) return r.verdict;
    *len = static_cast<size_t>(r.out_len);
    return TERSE_CODEC_OK;
}

template <typename Exec>
int run_decode(Exec &x, const Setup &s, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
               terse_op_t op) {
    if ((!src && src_len) || (!dst && count)) return TERSE_CODEC_ERR_PARAM;
    if (count > s.max_count) return TERSE_CODEC_ERR_PARAM;  // larger than the instance's chunks
    const uint8_t *p = static_cast<const uint8_t *>(src);
    x.begin();
    x.check_payload(p, src_len, count, s.dtype, s.vsize, accumulate, op, x.work().l.kmax);
    with_key_type(s.dtype, [&](auto *tag) {
        using U = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
        x.template scatter<U>(p, count, dst, accumulate != 0, s.dtype);
        return 0;
    });
    DevResult r;
    if (!x.finish(&r)) return TERSE_CODEC_ERR_INTERNAL;
    return r.verdict;
}

}  // namespace dev
}  // namespace terse_topk
