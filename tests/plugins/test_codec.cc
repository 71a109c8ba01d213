// A well-formed codec plugin whose parse() and create() fail on request, so
// that the registry tests can check how plugin errors reach the user:
//   key "limit" with a non-number  -> ERR_PARAM with a message
//   key "silent"                   -> ERR_PARAM with an empty message
//   key "throw"                    -> parse throws a C++ exception
//   create with nranks > limit     -> ERR_PARAM with a message
// params_string() gives "limit=N".
#include <terse/codec.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace {

struct Params {
    long limit = 1000;
};

int g_live_params = 0;     // parse/free balance, read by the test via the descriptor
int g_live_instances = 0;  // create/destroy balance

extern "C" {
static int tc_parse(const terse_codec_kv_t *kv, size_t nkv, void **params, char *err, size_t errlen) {
    *params = nullptr;
    Params p;
    for (size_t i = 0; i < nkv; i++) {
        if (std::strcmp(kv[i].key, "throw") == 0) throw std::runtime_error("parse throws");
        if (std::strcmp(kv[i].key, "silent") == 0) return TERSE_CODEC_ERR_PARAM;
        if (std::strcmp(kv[i].key, "limit") != 0) {
            snprintf(err, errlen, "unknown key '%s' (accepted: limit)", kv[i].key);
            return TERSE_CODEC_ERR_PARAM;
        }
        char *end = nullptr;
        p.limit = std::strtol(kv[i].value, &end, 10);
        if (end == kv[i].value || *end) {
            snprintf(err, errlen, "limit='%s' is not an integer", kv[i].value);
            return TERSE_CODEC_ERR_PARAM;
        }
    }
    *params = new Params(p);
    g_live_params++;
    return TERSE_CODEC_OK;
}
static void tc_free_params(void *p) {
    delete static_cast<Params *>(p);
    g_live_params--;
}
static size_t tc_params_string(const void *p, char *buf, size_t n) {
    int len = snprintf(buf, n, "limit=%ld", static_cast<const Params *>(p)->limit);
    return len < 0 ? 0 : static_cast<size_t>(len);
}
static int tc_create(const void *p, const terse_codec_setup_t *setup, void **inst, char *err, size_t errlen) {
    const long limit = static_cast<const Params *>(p)->limit;
    if (setup->nranks > limit) {
        snprintf(err, errlen, "%d ranks exceed limit=%ld", setup->nranks, limit);
        return TERSE_CODEC_ERR_PARAM;
    }
    *inst = new int(0);
    g_live_instances++;
    return TERSE_CODEC_OK;
}
static void tc_destroy(void *inst) {
    delete static_cast<int *>(inst);
    g_live_instances--;
}
static size_t tc_max_encoded_size(void *, size_t count) { return count * 4; }
static int tc_encode(void *, const void *, size_t, void *, size_t, size_t *len, const terse_codec_call_t *) {
    *len = 0;
    return TERSE_CODEC_RAW;
}
static int tc_decode(void *, const void *, size_t, void *, size_t, int, terse_op_t, const terse_codec_call_t *) {
    return TERSE_CODEC_ERR_CORRUPT;
}

// Lets the test read the balances without exporting more symbols.
static size_t tc_live(void *, size_t which) {
    return static_cast<size_t>(which == 0 ? g_live_params : g_live_instances);
}
}  // extern "C"

terse_codec_descriptor_t make() {
    terse_codec_descriptor_t d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = "testcodec";
    d.description = "fails on request (registry tests)";
    d.params_help = "limit=<integer>";
    d.dtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64);
    d.mem_kinds = TERSE_MEM_HOST;
    d.mode = TERSE_REDUCE_GATHER;
    d.parse = tc_parse;
    d.free_params = tc_free_params;
    d.params_string = tc_params_string;
    d.create = tc_create;
    d.destroy = tc_destroy;
    d.max_encoded_size = tc_max_encoded_size;
    d.stats_count = tc_live;  // not used by the engine for gather codecs; test hook
    d.encode = tc_encode;
    d.decode = tc_decode;
    return d;
}

const terse_codec_descriptor_t kDesc = make();

}  // namespace

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) { return &kDesc; }
