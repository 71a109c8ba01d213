// topk: keep the k largest-magnitude elements of each chunk (ties to the
// lower index), exactly, and send them as (gap-coded index, value) pairs.
// Reduction mode gather: the engine all-gathers every rank's payload and
// decodes-and-adds each into a zeroed buffer, so sparse payloads are never
// summed as if they were dense.  Error feedback is on by default (the engine
// carries the dropped mass to the next call).
//
// An instance is used by one thread at a time; encode and decode reuse its
// buffers and allocate nothing.  In a build with CUDA, instances created for
// device memory run topk_device.h instead (same payloads, bit for bit).
#include "topk_device.h"
#include "topk_float_bits.h"
#include "topk_format.h"
#include "topk_index_coding.h"
#include "topk_params.h"
#include "topk_select.h"

#include "../common/c_abi.h"

#include <terse/codec.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

namespace terse_topk {
namespace {

struct Instance {
    Params params;
    terse_dtype_t dtype;
    size_t vsize;
    size_t max_count;
    terse_mem_kind_t mem = TERSE_MEM_HOST;  // TERSE_MEM_CUDA: the callbacks run topk_device.h
    SelectWork work;
    std::vector<uint32_t> sel;  // kept indices of the chunk being encoded (host instances)

    dev::Setup device_setup() const { return dev::Setup{params, dtype, vsize, max_count}; }
};

#if defined(TERSE_TOPK_CUDA)
constexpr uint32_t kMemKinds = TERSE_MEM_HOST | TERSE_MEM_CUDA;
#else
constexpr uint32_t kMemKinds = TERSE_MEM_HOST;
#endif

constexpr uint32_t kDtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64) |
                             TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT16) | TERSE_DTYPE_BIT(TERSE_DTYPE_BFLOAT16);

void message(char *err, size_t errlen, const char *text) {
    if (err && errlen) snprintf(err, errlen, "%s", text);
}

using dev::min_payload;

template <typename U>
int encode_t(Instance *in, const U *x, size_t n, uint8_t *dst, size_t cap, size_t *len) {
    const size_t vs = sizeof(U);
    const size_t k = in->params.kept(n);
    const size_t raw = n * vs;
    if (n == 0 || min_payload(k, vs) >= raw) return TERSE_CODEC_RAW;  // cannot shrink

    uint32_t *sel = in->sel.data();
    if (select_topk<U>(x, n, k, U(inf_key(in->dtype)), in->params.method, in->work, sel) != SelectResult::Ok)
        return TERSE_CODEC_RAW;  // Inf or NaN: the engine sends the chunk as it is

    const size_t vsz = varint_size(sel, k);
    const size_t bsz = bitpacked_size(sel, k);
    const IndexCoding coding = bsz <= vsz ? kBitpacked : kVarint;
    const size_t isz = coding == kBitpacked ? bsz : vsz;
    const size_t total = kHeaderSize + k * vs + isz;
    if (total >= raw) return TERSE_CODEC_RAW;
    if (total > cap) return TERSE_CODEC_ERR_NOSPACE;

    write_header(dst,
                 Header{kFormatVersion, uint8_t(in->dtype), coding, 0, uint32_t(k), uint32_t(n), uint32_t(isz)});
    uint8_t *vals = dst + kHeaderSize;
    for (size_t j = 0; j < k; j++) std::memcpy(vals + j * vs, &x[sel[j]], vs);
    uint8_t *idx = vals + k * vs;
    if (coding == kBitpacked) bitpacked_write(sel, k, idx);
    else varint_write(sel, k, idx);
    *len = total;
    return TERSE_CODEC_OK;
}

template <typename Sink>
bool read_indices(IndexCoding coding, const uint8_t *p, size_t len, size_t k, uint64_t count, Sink &&sink) {
    return coding == kBitpacked ? bitpacked_read(p, len, k, count, sink) : varint_read(p, len, k, count, sink);
}

// dst[i] (+)= v for one kept element, in the element type.
template <typename U>
struct Scatter;

template <>
struct Scatter<uint32_t> {
    static void put(void *d, size_t i, const uint8_t *v) { std::memcpy(static_cast<float *>(d) + i, v, 4); }
    static void add(void *d, size_t i, const uint8_t *v, terse_dtype_t) {
        float f;
        std::memcpy(&f, v, 4);
        static_cast<float *>(d)[i] += f;
    }
};

template <>
struct Scatter<uint64_t> {
    static void put(void *d, size_t i, const uint8_t *v) { std::memcpy(static_cast<double *>(d) + i, v, 8); }
    static void add(void *d, size_t i, const uint8_t *v, terse_dtype_t) {
        double f;
        std::memcpy(&f, v, 8);
        static_cast<double *>(d)[i] += f;
    }
};

template <>
struct Scatter<uint16_t> {
    static void put(void *d, size_t i, const uint8_t *v) { std::memcpy(static_cast<uint16_t *>(d) + i, v, 2); }
    // 16-bit floats are added in float and rounded once, to nearest even.
    static void add(void *d, size_t i, const uint8_t *v, terse_dtype_t dt) {
        uint16_t a, b;
        std::memcpy(&b, v, 2);
        uint16_t *p = static_cast<uint16_t *>(d) + i;
        a = *p;
        if (dt == TERSE_DTYPE_FLOAT16) *p = float_to_half(half_to_float(a) + half_to_float(b));
        else *p = float_to_bf16(bf16_to_float(a) + bf16_to_float(b));
    }
};

template <typename U>
int decode_t(Instance *in, const uint8_t *src, size_t src_len, void *dst, size_t count, int accumulate,
             terse_op_t op) {
    const size_t vs = sizeof(U);
    if (src_len < kHeaderSize) return TERSE_CODEC_ERR_CORRUPT;
    const Header h = read_header(src);
    if (h.version != kFormatVersion || h.dtype != uint8_t(in->dtype) || h.reserved != 0 ||
        (h.coding != kVarint && h.coding != kBitpacked) || uint64_t(h.count) != uint64_t(count) || h.k > h.count)
        return TERSE_CODEC_ERR_CORRUPT;
    const uint64_t expect = uint64_t(kHeaderSize) + uint64_t(h.k) * vs + uint64_t(h.index_bytes);
    if (expect != uint64_t(src_len)) return TERSE_CODEC_ERR_CORRUPT;
    if (accumulate && op != TERSE_OP_SUM) return TERSE_CODEC_ERR_UNSUPPORTED;

    const IndexCoding coding = IndexCoding(h.coding);
    const uint8_t *vals = src + kHeaderSize;
    const uint8_t *idx = vals + size_t(h.k) * vs;
    // Validate everything before touching dst, so a rejected payload leaves
    // the accumulator as it was.
    if (!read_indices(coding, idx, h.index_bytes, h.k, count, [](size_t, uint32_t) {}))
        return TERSE_CODEC_ERR_CORRUPT;
    if (accumulate) {
        const terse_dtype_t dt = in->dtype;
        read_indices(coding, idx, h.index_bytes, h.k, count,
                     [&](size_t j, uint32_t i) { Scatter<U>::add(dst, i, vals + j * vs, dt); });
    } else {
        if (count) std::memset(dst, 0, count * vs);
        read_indices(coding, idx, h.index_bytes, h.k, count,
                     [&](size_t j, uint32_t i) { Scatter<U>::put(dst, i, vals + j * vs); });
    }
    return TERSE_CODEC_OK;
}

// ---------------------------------------------------------------- callbacks

extern "C" {

static int topk_create(const void *params, const terse_codec_setup_t *setup, void **instance, char *err,
                       size_t errlen) {
    *instance = nullptr;
    if (!setup || setup->struct_size < sizeof(terse_codec_setup_t)) {
        message(err, errlen, "setup struct is older than this plugin expects");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    if (!(kDtypes & TERSE_DTYPE_BIT(setup->dtype))) {
        message(err, errlen, "datatype not supported (accepted: float32, float64, float16, bfloat16)");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    if (!(static_cast<uint32_t>(setup->mem_kind) & kMemKinds) ||
        (setup->mem_kind != TERSE_MEM_HOST && setup->mem_kind != TERSE_MEM_CUDA)) {
        message(err, errlen,
                (kMemKinds & TERSE_MEM_CUDA) ? "memory kind not supported (accepted: host, cuda)"
                                             : "only host memory is supported");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    if (setup->max_chunk_count > UINT32_MAX) {
        if (err && errlen)
            snprintf(err, errlen,
                     "chunks of %zu elements are too large (accepted: at most 4294967295 "
                     "elements per chunk)",
                     setup->max_chunk_count);
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    try {
        auto *in = new Instance;
        in->params = *static_cast<const Params *>(params);
        in->dtype = setup->dtype;
        in->vsize = value_size(setup->dtype);
        in->max_count = setup->max_chunk_count;
        in->mem = setup->mem_kind;
        if (in->mem == TERSE_MEM_HOST) {  // a device instance works in its device workspace
            in->work.reserve(in->max_count);
            in->sel.resize(in->params.kept(in->max_count) + 1);
        }
        *instance = in;
        return TERSE_CODEC_OK;
    } catch (const std::bad_alloc &) {
        message(err, errlen, "out of memory for the selection buffers");
        return TERSE_CODEC_ERR_NOMEM;
    } catch (...) {
        message(err, errlen, "internal error while creating an instance");
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

static size_t topk_max_encoded_size(void *instance, size_t count) {
    const auto *in = static_cast<Instance *>(instance);
    const size_t k = in->params.kept(count);
    return kHeaderSize + k * (in->vsize + 5);  // a gap never needs more than 5 varint bytes
}

static int topk_encode(void *instance, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                       const terse_codec_call_t *call) {
    auto *in = static_cast<Instance *>(instance);
    if (count > in->max_count) return TERSE_CODEC_ERR_INTERNAL;  // the engine promised max_chunk_count
#if defined(TERSE_TOPK_CUDA)
    if (in->mem == TERSE_MEM_CUDA)
        return dev::cuda_encode(in->device_setup(), src, count, dst, dst_cap, dst_len, call);
#else
    (void)call;
#endif
    try {
        auto *d = static_cast<uint8_t *>(dst);
        switch (in->dtype) {
        case TERSE_DTYPE_FLOAT32:
            return encode_t(in, static_cast<const uint32_t *>(src), count, d, dst_cap, dst_len);
        case TERSE_DTYPE_FLOAT64:
            return encode_t(in, static_cast<const uint64_t *>(src), count, d, dst_cap, dst_len);
        default: return encode_t(in, static_cast<const uint16_t *>(src), count, d, dst_cap, dst_len);
        }
    } catch (...) {
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

static int topk_decode(void *instance, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                       terse_op_t op, const terse_codec_call_t *call) {
    auto *in = static_cast<Instance *>(instance);
#if defined(TERSE_TOPK_CUDA)
    if (in->mem == TERSE_MEM_CUDA)
        return dev::cuda_decode(in->device_setup(), src, src_len, dst, count, accumulate, op, call);
#else
    (void)call;
#endif
    const auto *s = static_cast<const uint8_t *>(src);
    switch (in->dtype) {
    case TERSE_DTYPE_FLOAT32: return decode_t<uint32_t>(in, s, src_len, dst, count, accumulate, op);
    case TERSE_DTYPE_FLOAT64: return decode_t<uint64_t>(in, s, src_len, dst, count, accumulate, op);
    default: return decode_t<uint16_t>(in, s, src_len, dst, count, accumulate, op);
    }
}

#if defined(TERSE_TOPK_CUDA)
static size_t topk_device_workspace_size(void *instance) {
    const auto *in = static_cast<Instance *>(instance);
    return in->mem == TERSE_MEM_CUDA ? dev::workspace_size(in->device_setup()) : 0;
}
#endif

}  // extern "C"

const terse_codec_descriptor_t kDescriptor = {
    TERSE_CODEC_ABI_VERSION,
    sizeof(terse_codec_descriptor_t),
    "topk",
    "sparse: keeps the largest-magnitude elements of each chunk (exact values, gap-coded indices)",
    kParamsHelp,
    kDtypes,
    kMemKinds,
    TERSE_CODEC_FLAG_FEEDBACK_DEFAULT,
    TERSE_REDUCE_GATHER,
    terse_codec::parse_callback<Params>,
    terse_codec::free_params_callback<Params>,
    terse_codec::params_string_callback<Params>,
    topk_create,
    terse_codec::destroy_callback<Instance>,
    topk_max_encoded_size,
    nullptr,
    nullptr,
    topk_encode,
    topk_decode,
    nullptr,
    nullptr,  // error_bound: none stated (terse_codec_topk(7))
    nullptr,  // error_contract: none stated
#if defined(TERSE_TOPK_CUDA)
    topk_device_workspace_size,
#else
    nullptr,  // device_workspace_size: host only in a build without CUDA
#endif
    {},
};

}  // namespace
}  // namespace terse_topk

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) {
    return &terse_topk::kDescriptor;
}
