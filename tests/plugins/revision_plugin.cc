// Codec plugins as built against two revisions of include/terse/codec.h
// (tests/registry.am builds this file twice):
//   PLUGIN_REVISION 2: a host-only plugin compiled against the revision-2
//     header, whose descriptor ended in reserved[6] (declared here as that
//     header declared it, so the module holds exactly the old bytes);
//   PLUGIN_REVISION 3: a device codec: mem_kinds host and cuda, and
//     device_workspace_size, which reports 1000 bytes per element of a chunk
//     for cuda instances (create records the kind).
// Both must load; the registry tests check what each exposes.
#include <terse/codec.h>

#include <cstddef>

#ifndef PLUGIN_NAME
#error "PLUGIN_NAME must be defined"
#endif

namespace {

struct Inst {
    terse_mem_kind_t mem;
    size_t max_chunk_count;
};

extern "C" {
static int rev_parse(const terse_codec_kv_t *, size_t, void **p, char *, size_t) {
    *p = nullptr;
    return TERSE_CODEC_OK;
}
static void rev_free_params(void *) {}
static size_t rev_params_string(const void *, char *buf, size_t n) {
    if (n) buf[0] = '\0';
    return 0;
}
static int rev_create(const void *, const terse_codec_setup_t *s, void **inst, char *, size_t) {
    *inst = new Inst{s->mem_kind, s->max_chunk_count};
    return TERSE_CODEC_OK;
}
static void rev_destroy(void *i) { delete static_cast<Inst *>(i); }
static size_t rev_max_encoded_size(void *, size_t count) { return count * 4; }
static int rev_encode(void *, const void *, size_t, void *, size_t, size_t *, const terse_codec_call_t *) {
    return TERSE_CODEC_RAW;
}
static int rev_decode(void *, const void *, size_t, void *, size_t, int, terse_op_t, const terse_codec_call_t *) {
    return TERSE_CODEC_ERR_CORRUPT;
}
#if PLUGIN_REVISION >= 3
static size_t rev_workspace(void *i) {
    const Inst *in = static_cast<Inst *>(i);
    return in->mem == TERSE_MEM_CUDA ? 1000 * in->max_chunk_count : 0;
}
#endif
}  // extern "C"

#if PLUGIN_REVISION == 2
// The descriptor of include/terse/codec.h at revision 2.
struct DescriptorRev2 {
    uint32_t abi_version, struct_size;
    const char *name, *description, *params_help;
    uint32_t dtypes, mem_kinds, flags;
    terse_reduce_mode_t mode;
    int (*parse)(const terse_codec_kv_t *, size_t, void **, char *, size_t);
    void (*free_params)(void *);
    size_t (*params_string)(const void *, char *, size_t);
    int (*create)(const void *, const terse_codec_setup_t *, void **, char *, size_t);
    void (*destroy)(void *);
    size_t (*max_encoded_size)(void *, size_t);
    size_t (*stats_count)(void *, size_t);
    int (*stats)(void *, const void *, size_t, double *, const terse_codec_call_t *);
    int (*encode)(void *, const void *, size_t, void *, size_t, size_t *, const terse_codec_call_t *);
    int (*decode)(void *, const void *, size_t, void *, size_t, int, terse_op_t, const terse_codec_call_t *);
    int (*combine)(void *, const void *, size_t, int, const void *, size_t, int, size_t, void *, size_t, size_t *,
                   const terse_codec_call_t *);
    double (*error_bound)(const void *, terse_dtype_t, size_t, int, double, double);
    int (*error_contract)(const void *, int, int *, double *);
    void *reserved[6];
};
static_assert(sizeof(DescriptorRev2) == sizeof(terse_codec_descriptor_t),
              "a revision keeps the descriptor's size: old plugins pass the size check");
using Descriptor = DescriptorRev2;
#else
using Descriptor = terse_codec_descriptor_t;
#endif

Descriptor make() {
    Descriptor d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = PLUGIN_NAME;
    d.description = "a plugin of one ABI revision";
    d.params_help = "none";
    d.dtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32);
    d.mem_kinds = TERSE_MEM_HOST;
    d.mode = TERSE_REDUCE_RECOMPRESS;
    d.parse = rev_parse;
    d.free_params = rev_free_params;
    d.params_string = rev_params_string;
    d.create = rev_create;
    d.destroy = rev_destroy;
    d.max_encoded_size = rev_max_encoded_size;
    d.encode = rev_encode;
    d.decode = rev_decode;
#if PLUGIN_REVISION >= 3
    d.mem_kinds = TERSE_MEM_HOST | TERSE_MEM_CUDA;
    d.device_workspace_size = rev_workspace;
#endif
    return d;
}

const Descriptor kDesc = make();

}  // namespace

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) {
    return reinterpret_cast<const terse_codec_descriptor_t *>(&kDesc);
}
