// quantize plugin: the C ABI around quantize_codec.h.  No exception crosses
// this boundary; the code path (AVX-512, AVX2 or scalar) is chosen once per
// instance from what the CPU supports.
#include "quantize_codec.h"

#include "../common/elem.h"

#include <new>

namespace terse_quantize {
namespace {

extern "C" {

static int q_parse(const terse_codec_kv_t *kv, size_t nkv, void **params, char *err, size_t errlen) {
    *params = nullptr;
    Params p;
    const int rc = parse_params(kv, nkv, &p, err, errlen);
    if (rc != TERSE_CODEC_OK) return rc;
    auto *out = new (std::nothrow) Params(p);
    if (!out) return TERSE_CODEC_ERR_NOMEM;
    *params = out;
    return TERSE_CODEC_OK;
}

static void q_free_params(void *params) { delete static_cast<Params *>(params); }

static size_t q_params_string(const void *params, char *buf, size_t buflen) {
    return params_string(*static_cast<const Params *>(params), buf, buflen);
}

static int q_create(const void *params, const terse_codec_setup_t *setup, void **instance, char *err,
                    size_t errlen) {
    Instance *inst = nullptr;
    const int rc = create_instance(*static_cast<const Params *>(params), setup, terse_codec::best_isa(), &inst,
                                   err, errlen);
    *instance = inst;
    return rc;
}

static void q_destroy(void *instance) { destroy_instance(static_cast<Instance *>(instance)); }

static size_t q_max_encoded_size(void *instance, size_t count) {
    return max_encoded_size(*static_cast<Instance *>(instance), count);
}

static size_t q_stats_count(void *instance, size_t count) {
    return stats_count(*static_cast<Instance *>(instance), count);
}

static int q_stats(void *instance, const void *src, size_t count, double *out, const terse_codec_call_t *) {
    return stats(*static_cast<Instance *>(instance), src, count, out);
}

static int q_encode(void *instance, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                    const terse_codec_call_t *call) {
    try {
        return encode(*static_cast<Instance *>(instance), src, count, dst, dst_cap, dst_len, call);
    } catch (...) {
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

static int q_decode(void *instance, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                    terse_op_t op, const terse_codec_call_t *) {
    return decode(*static_cast<Instance *>(instance), src, src_len, dst, count, accumulate, op);
}

static int q_combine(void *instance, const void *a, size_t a_len, int a_contributors, const void *b,
                     size_t b_len, int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len,
                     const terse_codec_call_t *) {
    return combine(*static_cast<Instance *>(instance), a, a_len, a_contributors, b, b_len, b_contributors, count,
                   out, out_cap, out_len);
}

}  // extern "C"

terse_codec_descriptor_t make_descriptor() {
    terse_codec_descriptor_t d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = "quantize";
    d.description = "per-block scaled integer quantization, summed exactly in the code domain";
    d.params_help = "bits=1|2|4|8|16 (default 8), block=32..65536 power of two (default 256 for 8 and 16 "
                    "bits, 512, 1024, 2048 for 4, 2, 1 bits), rounding=nearest|stochastic (default nearest)";
    d.dtypes = terse_codec::kLossyDtypes;
    d.mem_kinds = TERSE_MEM_HOST;
    d.flags = 0;
    d.mode = TERSE_REDUCE_SUMMABLE;
    d.parse = q_parse;
    d.free_params = q_free_params;
    d.params_string = q_params_string;
    d.create = q_create;
    d.destroy = q_destroy;
    d.max_encoded_size = q_max_encoded_size;
    d.stats_count = q_stats_count;
    d.stats = q_stats;
    d.encode = q_encode;
    d.decode = q_decode;
    d.combine = q_combine;
    return d;
}

}  // namespace

const terse_codec_descriptor_t *descriptor() {
    static const terse_codec_descriptor_t d = make_descriptor();
    return &d;
}

}  // namespace terse_quantize
