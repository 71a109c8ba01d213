// quantize plugin: the C ABI around quantize_codec.h.  No exception crosses
// this boundary (the callbacks are common/c_abi.h's); the code path
// (AVX-512, AVX2 or scalar) is chosen once per instance from what the CPU
// supports.
#include "quantize_codec.h"
#include "quantize_device.h"
#include "quantize_device_ops.h"

#include "../common/c_abi.h"
#include "../common/elem.h"

namespace terse_quantize {
namespace {

// The contract (terse_codec_quantize(7)): |r - sum| <= n e (1 + 2^-32) +
// ulp(r), with the per-rank error e from each block's agreed max m, which
// the call's max |x| bounds; ulp(r) is bounded through |r| <= n (M + e).
double error_bound(const void *params, terse_dtype_t dtype, size_t, int nranks, double max_abs, double) {
    const Params &p = *static_cast<const Params *>(params);
    const double m = max_abs, L = double((1 << (p.bits - 1)) - 1);
    double e;
    if (p.bits == 1) e = p.rounding == kNearest ? m : 2 * m;
    else e = p.rounding == kNearest ? m / (2 * L) : m / L;
    double eps;
    switch (dtype) {
    case TERSE_DTYPE_FLOAT32: eps = 0x1p-23; break;
    case TERSE_DTYPE_FLOAT64: eps = 0x1p-52; break;
    case TERSE_DTYPE_FLOAT16: eps = 0x1p-10; break;
    case TERSE_DTYPE_BFLOAT16: eps = 0x1p-7; break;
    default: return -1;
    }
    const double n = nranks;
    return n * e * (1 + 0x1p-32) + eps * n * (m + e);
}

// The contract (terse_codec_quantize(7)): n ranks err by at most n * e,
// e = m / (2L) nearest, m / L stochastic (L = 2^(bits-1) - 1); one bit:
// max(s, m - s) <= m nearest, 2m stochastic.  The factor 1 + 2^-32 of the
// contract is rounded up into the last digit.
int error_contract(const void *params, int nranks, int *kind, double *value) {
    const Params &p = *static_cast<const Params *>(params);
    const bool nearest = p.rounding == kNearest;
    double e;
    if (p.bits == 1) {
        e = nearest ? 1.0 : 2.0;
    } else {
        const double levels = double((1 << (p.bits - 1)) - 1);
        e = nearest ? 0.5 / levels : 1.0 / levels;
    }
    *kind = TERSE_BOUND_REL;
    *value = double(nranks) * e * (1.0 + 0x1p-31);
    return TERSE_CODEC_OK;
}

#if defined(TERSE_QUANTIZE_CUDA)
// Device instances run quantize_device.h; host ones the forwarding
// callbacks' functions.  No exception leaves either.
const Instance &inst(void *i) { return *static_cast<const Instance *>(i); }

int stats_cb(void *i, const void *src, size_t count, double *out, const terse_codec_call_t *call) {
    return inst(i).mem == TERSE_MEM_CUDA ? dev::cuda_stats(inst(i), src, count, out, call)
                                         : stats(inst(i), src, count, out);
}

int encode_cb(void *i, const void *src, size_t count, void *dst, size_t cap, size_t *len,
              const terse_codec_call_t *call) {
    try {
        return inst(i).mem == TERSE_MEM_CUDA ? dev::cuda_encode(inst(i), src, count, dst, cap, len, call)
                                             : encode(inst(i), src, count, dst, cap, len, call);
    } catch (...) {
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

int decode_cb(void *i, const void *src, size_t len, void *dst, size_t count, int acc, terse_op_t op,
              const terse_codec_call_t *call) {
    return inst(i).mem == TERSE_MEM_CUDA ? dev::cuda_decode(inst(i), src, len, dst, count, acc, op, call)
                                         : decode(inst(i), src, len, dst, count, acc, op);
}

int combine_cb(void *i, const void *a, size_t a_len, int ac, const void *b, size_t b_len, int bc, size_t count,
               void *out, size_t cap, size_t *out_len, const terse_codec_call_t *call) {
    return inst(i).mem == TERSE_MEM_CUDA
               ? dev::cuda_combine(inst(i), a, a_len, ac, b, b_len, bc, count, out, cap, out_len, call)
               : combine(inst(i), a, a_len, ac, b, b_len, bc, count, out, cap, out_len);
}

size_t device_workspace_size_cb(void *i) {
    return inst(i).mem == TERSE_MEM_CUDA ? dev::workspace_size(inst(i).p, inst(i).max_chunk_count) : 0;
}
#endif

terse_codec_descriptor_t make_descriptor() {
    terse_codec_descriptor_t d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = "quantize";
    d.description = "per-block scaled integer quantization, summed exactly in the code domain";
    d.params_help = "bits=1|2|4|8|16 (default 8), block=32..65536 power of two (default 256 for 8 and 16 "
                    "bits, 512, 1024, 2048 for 4, 2, 1 bits), rounding=nearest|stochastic (default nearest)";
    d.dtypes = terse_codec::kLossyDtypes;
    d.mem_kinds = mem_kinds();
    d.flags = 0;
    d.mode = TERSE_REDUCE_SUMMABLE;
    terse_codec::set_forwarding_callbacks<Params, Instance>(d);
    d.error_bound = error_bound;
    d.error_contract = error_contract;
#if defined(TERSE_QUANTIZE_CUDA)
    d.stats = stats_cb;
    d.encode = encode_cb;
    d.decode = decode_cb;
    d.combine = combine_cb;
    d.device_workspace_size = device_workspace_size_cb;
#endif
    return d;
}

}  // namespace

const terse_codec_descriptor_t *descriptor() {
    static const terse_codec_descriptor_t d = make_descriptor();
    return &d;
}

}  // namespace terse_quantize
