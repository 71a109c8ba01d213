// errbound plugin: the C ABI around errbound_codec.h.  No exception crosses
// this boundary (the callbacks are common/c_abi.h's); the code path
// (AVX-512, AVX2 or scalar) is chosen once per instance from what the CPU
// supports.
#include "errbound_codec.h"

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
    d.mem_kinds = TERSE_MEM_HOST;
    d.flags = TERSE_CODEC_FLAG_ERROR_BOUND;
    d.mode = TERSE_REDUCE_SUMMABLE;
    terse_codec::set_forwarding_callbacks<Params, Instance>(d);
    d.error_bound = error_bound;
    d.error_contract = error_contract;
    return d;
}

}  // namespace

const terse_codec_descriptor_t *descriptor() {
    static const terse_codec_descriptor_t d = make_descriptor();
    return &d;
}

}  // namespace terse_errbound
