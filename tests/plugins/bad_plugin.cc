// Deliberately broken codec plugins for the registry tests.  One source,
// built once per defect (tests/registry.am): exactly one BAD_* macro selects
// what is wrong, PLUGIN_NAME is the name in the descriptor.  Everything else
// is a well-formed descriptor, so each module exercises one refusal.
#include <terse/codec.h>

#include <stdexcept>

#ifndef PLUGIN_NAME
#error "PLUGIN_NAME must be defined"
#endif

namespace {

extern "C" {
static int bad_parse(const terse_codec_kv_t *, size_t, void **p, char *, size_t) {
    *p = nullptr;
    return TERSE_CODEC_OK;
}
static void bad_free_params(void *) {}
static size_t bad_params_string(const void *, char *buf, size_t n) {
    if (n) buf[0] = '\0';
    return 0;
}
static int bad_create(const void *, const terse_codec_setup_t *, void **inst, char *, size_t) {
    static int token;
    *inst = &token;
    return TERSE_CODEC_OK;
}
static void bad_destroy(void *) {}
static size_t bad_max_encoded_size(void *, size_t count) { return count * 8; }
static size_t bad_stats_count(void *, size_t) { return 1; }
static int bad_stats(void *, const void *, size_t, double *out, const terse_codec_call_t *) {
    out[0] = 0;
    return TERSE_CODEC_OK;
}
static int bad_encode(void *, const void *, size_t, void *, size_t, size_t *len, const terse_codec_call_t *) {
    *len = 0;
    return TERSE_CODEC_OK;
}
static int bad_decode(void *, const void *, size_t, void *, size_t, int, terse_op_t, const terse_codec_call_t *) {
    return TERSE_CODEC_OK;
}
static int bad_combine(void *, const void *, size_t, int, const void *, size_t, int, size_t, void *, size_t,
                       size_t *len, const terse_codec_call_t *) {
    *len = 0;
    return TERSE_CODEC_OK;
}
static size_t bad_workspace(void *) { return 64; }
}  // extern "C"

terse_codec_descriptor_t make() {
    terse_codec_descriptor_t d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = PLUGIN_NAME;
    d.description = "broken on purpose";
    d.params_help = "none";
    d.dtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32);
    d.mem_kinds = TERSE_MEM_HOST;
    d.flags = 0;
    d.mode = TERSE_REDUCE_RECOMPRESS;
    d.parse = bad_parse;
    d.free_params = bad_free_params;
    d.params_string = bad_params_string;
    d.create = bad_create;
    d.destroy = bad_destroy;
    d.max_encoded_size = bad_max_encoded_size;
    d.encode = bad_encode;
    d.decode = bad_decode;
#if defined(BAD_ABI)
    d.abi_version = 7;
#elif defined(BAD_SIZE)
    d.struct_size = sizeof d - sizeof(void *);
#elif defined(BAD_NO_ENCODE)
    d.encode = nullptr;
#elif defined(BAD_SUMMABLE)
    d.mode = TERSE_REDUCE_SUMMABLE;  // but no stats/combine
#elif defined(BAD_COMBINE)
    d.combine = bad_combine;  // combine on a recompress codec
#elif defined(BAD_MODE)
    d.mode = static_cast<terse_reduce_mode_t>(9);
#elif defined(BAD_DTYPES)
    d.dtypes = 0;
#elif defined(BAD_DTYPE_RANGE)
    d.dtypes |= 1u << 20;
#elif defined(BAD_MEM)
    d.mem_kinds = TERSE_MEM_CUDA;
#elif defined(BAD_RESERVED)
    d.reserved[3] = reinterpret_cast<void *>(&make);
#elif defined(BAD_WORKSPACE)
    d.device_workspace_size = bad_workspace;  // a device workspace on a host-only codec
#elif defined(BAD_IDENTITY)
    d.flags = TERSE_CODEC_FLAG_IDENTITY;  // an identity payload that is not lossless
#elif defined(GOOD_SUMMABLE)
    d.mode = TERSE_REDUCE_SUMMABLE;
    d.stats_count = bad_stats_count;
    d.stats = bad_stats;
    d.combine = bad_combine;
#endif
    (void)bad_stats_count;
    (void)bad_stats;
    (void)bad_combine;
    (void)bad_workspace;
    return d;
}

const terse_codec_descriptor_t kDesc = make();

}  // namespace

#if defined(BAD_NO_ENTRY)
// Exports something, just not the entry point.
extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v0(void) { return &kDesc; }
#else
extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) {
#if defined(BAD_NULL_ENTRY)
    return nullptr;
#elif defined(BAD_THROW)
    throw std::runtime_error("entry point throws");
#else
    return &kDesc;
#endif
}
#endif
