// errbound plugin: the C ABI around errbound_codec.h.  No exception crosses
// this boundary (the callbacks are common/c_abi.h's); the code path
// (AVX-512, AVX2 or scalar) is chosen once per instance from what the CPU
// supports.
#include "errbound_codec.h"
#include "errbound_device.h"
#include "errbound_device_ops.h"

#include "../common/c_abi.h"
#include "../common/elem.h"

namespace terse_errbound {
namespace {

// The stated bound B at the call's statistics: rel is a fraction of each
// chunk's value range, which the call's range bounds; norm a fraction of a
// chunk's L2 norm over sqrt(count), which the largest |x| bounds.
double error_bound(const void *params, terse_dtype_t, size_t, int, double max_abs, double range) {
    const Params &p = *static_cast<const Params *>(params);
    switch (p.mode) {
    case kAbs: return p.bound;
    case kRel: return p.bound * range;
    case kNorm: return p.bound * max_abs;
    }
    return -1;
}

// terse_codec_errbound(7): abs=B is B; rel=f is f times the chunk's value
// range, at most 2 m wide; norm=f is f N / sqrt(count) with N <= m
// sqrt(count).  Whatever the number of ranks.
int error_contract(const void *params, int, int *kind, double *value) {
    const Params &p = *static_cast<const Params *>(params);
    switch (p.mode) {
    case kAbs:
        *kind = TERSE_BOUND_ABS;
        *value = p.bound;
        break;
    case kRel:
        *kind = TERSE_BOUND_REL;
        *value = 2.0 * p.bound;
        break;
    case kNorm:
        *kind = TERSE_BOUND_REL;
        *value = p.bound;
        break;
    }
    return TERSE_CODEC_OK;
}

#if defined(TERSE_ERRBOUND_CUDA)
// Device instances run errbound_device.h; host ones the forwarding
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
    try {
        return inst(i).mem == TERSE_MEM_CUDA ? dev::cuda_decode(inst(i), src, len, dst, count, acc, op, call)
                                             : decode(inst(i), src, len, dst, count, acc, op);
    } catch (...) {
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

int combine_cb(void *i, const void *a, size_t a_len, int ac, const void *b, size_t b_len, int bc, size_t count,
               void *out, size_t cap, size_t *out_len, const terse_codec_call_t *call) {
    try {
        return inst(i).mem == TERSE_MEM_CUDA
                   ? dev::cuda_combine(inst(i), a, a_len, ac, b, b_len, bc, count, out, cap, out_len, call)
                   : combine(inst(i), a, a_len, ac, b, b_len, bc, count, out, cap, out_len);
    } catch (...) {
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

size_t device_workspace_size_cb(void *i) {
    return inst(i).mem == TERSE_MEM_CUDA ? dev::workspace_size(inst(i).max_chunk_count) : 0;
}
#endif

terse_codec_descriptor_t make_descriptor() {
    terse_codec_descriptor_t d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = "errbound";
    d.description =
        "error-bounded quantization with block bit-width packing (SZp style), |result - exact| <= bound";
    d.params_help =
        "exactly one of abs=<bound> | rel=<fraction of the value range, (0,1]> | "
        "norm=<fraction of the L2 norm, (0,1]>; zstd=on|off (default off), zstd_level=1..19 (default 1)";
    d.dtypes = terse_codec::kLossyDtypes;
    d.mem_kinds = mem_kinds();
    d.flags = TERSE_CODEC_FLAG_ERROR_BOUND;
    d.mode = TERSE_REDUCE_SUMMABLE;
    terse_codec::set_forwarding_callbacks<Params, Instance>(d);
    d.error_bound = error_bound;
    d.error_contract = error_contract;
#if defined(TERSE_ERRBOUND_CUDA)
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

}  // namespace terse_errbound
