// A lossy codec that breaks its own promise on request, for the error
// guard's tests (tests/test_guard.sh).  Its payload is the elements as they
// are, so it is exact, until a chunk holds a value of magnitude >= above:
// then every element it encodes comes out 1 too large, far beyond the bound
// it states.  Parameters:
//   bound=<abs>|none   the error bound error_bound() states (default 1e-6);
//                      none: it states no bound
//   above=<x>          the magnitude from which it misbehaves (default 1e30)
// float32 and float64, recompress mode, no stats or combine.
#include <terse/codec.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct Params {
    double bound = 1e-6;  // < 0: none stated
    double above = 1e30;
};
struct Instance {
    Params p;
    terse_dtype_t dtype;
};

bool number(const char *text, double *out) {
    char *end = nullptr;
    *out = std::strtod(text, &end);
    return end != text && *end == '\0' && std::isfinite(*out);
}

template <class T>
void encode_as(const Instance &in, const void *src, size_t n, void *dst) {
    const T *x = static_cast<const T *>(src);
    T *y = static_cast<T *>(dst);
    bool spoil = false;
    for (size_t i = 0; i < n; ++i)
        if (std::fabs(double(x[i])) >= in.p.above) spoil = true;
    for (size_t i = 0; i < n; ++i) y[i] = spoil ? T(x[i] + T(1)) : x[i];
}

template <class T>
void decode_as(const void *src, void *dst, size_t n, int accumulate) {
    const T *x = static_cast<const T *>(src);
    T *y = static_cast<T *>(dst);
    for (size_t i = 0; i < n; ++i) y[i] = accumulate ? T(y[i] + x[i]) : x[i];
}

size_t esize(terse_dtype_t dt) { return dt == TERSE_DTYPE_FLOAT64 ? 8 : 4; }

extern "C" {
static int dr_parse(const terse_codec_kv_t *kv, size_t nkv, void **params, char *err, size_t errlen) {
    *params = nullptr;
    Params p;
    for (size_t i = 0; i < nkv; ++i) {
        double v;
        if (std::strcmp(kv[i].key, "bound") == 0 && std::strcmp(kv[i].value, "none") == 0) p.bound = -1;
        else if (std::strcmp(kv[i].key, "bound") == 0 && number(kv[i].value, &v) && v >= 0) p.bound = v;
        else if (std::strcmp(kv[i].key, "above") == 0 && number(kv[i].value, &v) && v > 0) p.above = v;
        else {
            snprintf(err, errlen, "%s='%s' not accepted (accepted: bound=<number >= 0>|none, above=<number > 0>)",
                     kv[i].key, kv[i].value);
            return TERSE_CODEC_ERR_PARAM;
        }
    }
    *params = new Params(p);
    return TERSE_CODEC_OK;
}
static void dr_free_params(void *p) { delete static_cast<Params *>(p); }
static size_t dr_params_string(const void *pp, char *buf, size_t n) {
    const Params &p = *static_cast<const Params *>(pp);
    int len = p.bound < 0 ? snprintf(buf, n, "above=%.17g,bound=none", p.above)
                          : snprintf(buf, n, "above=%.17g,bound=%.17g", p.above, p.bound);
    return len < 0 ? 0 : size_t(len);
}
static int dr_create(const void *p, const terse_codec_setup_t *setup, void **inst, char *, size_t) {
    *inst = new Instance{*static_cast<const Params *>(p), setup->dtype};
    return TERSE_CODEC_OK;
}
static void dr_destroy(void *inst) { delete static_cast<Instance *>(inst); }
static size_t dr_max_encoded_size(void *inst, size_t count) {
    return count * esize(static_cast<Instance *>(inst)->dtype);
}
static int dr_encode(void *inst, const void *src, size_t n, void *dst, size_t cap, size_t *len,
                     const terse_codec_call_t *) {
    const Instance &in = *static_cast<Instance *>(inst);
    *len = n * esize(in.dtype);
    if (*len > cap) return TERSE_CODEC_ERR_NOSPACE;
    if (in.dtype == TERSE_DTYPE_FLOAT64) encode_as<double>(in, src, n, dst);
    else encode_as<float>(in, src, n, dst);
    return TERSE_CODEC_OK;
}
static int dr_decode(void *inst, const void *src, size_t len, void *dst, size_t n, int accumulate, terse_op_t,
                     const terse_codec_call_t *) {
    const Instance &in = *static_cast<Instance *>(inst);
    if (len != n * esize(in.dtype)) return TERSE_CODEC_ERR_CORRUPT;
    if (in.dtype == TERSE_DTYPE_FLOAT64) decode_as<double>(src, dst, n, accumulate);
    else decode_as<float>(src, dst, n, accumulate);
    return TERSE_CODEC_OK;
}
static double dr_error_bound(const void *pp, terse_dtype_t, size_t, int, double, double) {
    return static_cast<const Params *>(pp)->bound;
}
}  // extern "C"

terse_codec_descriptor_t make() {
    terse_codec_descriptor_t d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = "drift";
    d.description = "exact until a value reaches 'above', then 1 off per encode (guard tests)";
    d.params_help = "bound=<number >= 0>|none, above=<number > 0>";
    d.dtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64);
    d.mem_kinds = TERSE_MEM_HOST;
    d.flags = 0;  // lossy
    d.mode = TERSE_REDUCE_RECOMPRESS;
    d.parse = dr_parse;
    d.free_params = dr_free_params;
    d.params_string = dr_params_string;
    d.create = dr_create;
    d.destroy = dr_destroy;
    d.max_encoded_size = dr_max_encoded_size;
    d.encode = dr_encode;
    d.decode = dr_decode;
    d.error_bound = dr_error_bound;
    return d;
}

const terse_codec_descriptor_t kDesc = make();

}  // namespace

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) { return &kDesc; }
