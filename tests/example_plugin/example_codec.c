/*
 * The worked example of terse_codec(3): a complete codec plugin in plain C.
 *
 * "example" rounds float32 to bfloat16 (the top 16 bits of a float32: same
 * exponent range, 8 significant bits), halving the bytes on the wire.  It is
 * lossy with a relative error of at most 2^-8 per encoding (2^-9 with
 * rounding=nearest), and runs in RECOMPRESS mode: at every hop of the ring
 * the engine decodes, adds, and encodes again.
 *
 *   TERSE_PLUGIN_PATH=/dir/with/terse_example.so TERSE_CODEC=example:rounding=zero ...
 *
 * Build: cc -shared -fPIC -I<prefix>/include -o terse_example.so example_codec.c
 */
#include <terse/codec.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ parameters */

typedef enum { ROUND_NEAREST, ROUND_ZERO } rounding_t;

typedef struct {
    rounding_t rounding;
} example_params_t;

static const char kParamsHelp[] = "rounding=nearest|zero (default nearest)";

/* Unknown keys and bad values are errors with a message naming the key, the
 * value and what is accepted: the user sees this text verbatim. */
static int example_parse(const terse_codec_kv_t *kv, size_t nkv, void **params, char *err, size_t errlen) {
    example_params_t p = {ROUND_NEAREST};
    for (size_t i = 0; i < nkv; i++) {
        if (strcmp(kv[i].key, "rounding") == 0) {
            if (strcmp(kv[i].value, "nearest") == 0) {
                p.rounding = ROUND_NEAREST;
            } else if (strcmp(kv[i].value, "zero") == 0) {
                p.rounding = ROUND_ZERO;
            } else {
                snprintf(err, errlen, "invalid value '%s' for rounding (accepted: nearest, zero)", kv[i].value);
                return TERSE_CODEC_ERR_PARAM;
            }
        } else {
            snprintf(err, errlen, "unknown key '%s' (accepted: %s)", kv[i].key, kParamsHelp);
            return TERSE_CODEC_ERR_PARAM;
        }
    }
    example_params_t *out = malloc(sizeof *out);
    if (!out) return TERSE_CODEC_ERR_NOMEM;
    *out = p;
    *params = out;
    return TERSE_CODEC_OK;
}

static void example_free_params(void *params) { free(params); }

/* Canonical text: every key, fixed order, so that ranks that wrote the spec
 * differently ("example" and "example:rounding=nearest") still agree. */
static size_t example_params_string(const void *params, char *buf, size_t buflen) {
    const example_params_t *p = params;
    int n = snprintf(buf, buflen, "rounding=%s", p->rounding == ROUND_ZERO ? "zero" : "nearest");
    return n < 0 ? 0 : (size_t)n;
}

/* ------------------------------------------------------------ instances */

static int example_create(const void *params, const terse_codec_setup_t *setup, void **instance, char *err,
                          size_t errlen) {
    if (setup->dtype != TERSE_DTYPE_FLOAT32 || setup->mem_kind != TERSE_MEM_HOST) {
        snprintf(err, errlen, "example handles float32 in host memory only");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    example_params_t *inst = malloc(sizeof *inst);
    if (!inst) return TERSE_CODEC_ERR_NOMEM;
    *inst = *(const example_params_t *)params;
    *instance = inst;
    return TERSE_CODEC_OK;
}

static void example_destroy(void *instance) { free(instance); }

static size_t example_max_encoded_size(void *instance, size_t count) {
    (void)instance;
    return 2 * count;
}

/* ------------------------------------------------------------ kernels */

static uint16_t to_bf16(float f, rounding_t r) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    if (r == ROUND_NEAREST) b += 0x7fffu + ((b >> 16) & 1u); /* ties to even */
    return (uint16_t)(b >> 16);
}

static float from_bf16(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* The payload is count little-endian 16-bit words.  A NaN or infinity (or a
 * finite value that would round to infinity) cannot be represented
 * faithfully, so the whole chunk goes raw: the engine then sends it as it is
 * and reduces it itself. */
static int example_encode(void *instance, const void *src, size_t count, void *dst, size_t dst_cap,
                          size_t *dst_len, const terse_codec_call_t *call) {
    (void)call;
    const example_params_t *p = instance;
    const float *in = src;
    unsigned char *out = dst;
    if (dst_cap < 2 * count) return TERSE_CODEC_ERR_NOSPACE;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(in[i])) return TERSE_CODEC_RAW;
        uint16_t h = to_bf16(in[i], p->rounding);
        if ((h & 0x7f80u) == 0x7f80u) return TERSE_CODEC_RAW;
        out[2 * i] = (unsigned char)(h & 0xff);
        out[2 * i + 1] = (unsigned char)(h >> 8);
    }
    *dst_len = 2 * count;
    return TERSE_CODEC_OK;
}

/* Never trust the length: a payload of the wrong size is refused before
 * anything is written. */
static int example_decode(void *instance, const void *src, size_t src_len, void *dst, size_t count,
                          int accumulate, terse_op_t op, const terse_codec_call_t *call) {
    (void)instance;
    (void)call;
    const unsigned char *in = src;
    float *out = dst;
    if (src_len != 2 * count) return TERSE_CODEC_ERR_CORRUPT;
    for (size_t i = 0; i < count; i++) {
        float v = from_bf16((uint16_t)(in[2 * i] | (in[2 * i + 1] << 8)));
        if (!accumulate) {
            out[i] = v;
        } else if (op == TERSE_OP_SUM) {
            out[i] += v;
        } else if (op == TERSE_OP_MAX) {
            out[i] = out[i] > v ? out[i] : v;
        } else if (op == TERSE_OP_MIN) {
            out[i] = out[i] < v ? out[i] : v;
        } else {
            return TERSE_CODEC_ERR_UNSUPPORTED;
        }
    }
    return TERSE_CODEC_OK;
}

/* ------------------------------------------------------------ descriptor */

static const terse_codec_descriptor_t kDescriptor = {
    .abi_version = TERSE_CODEC_ABI_VERSION,
    .struct_size = sizeof(terse_codec_descriptor_t),
    .name = "example",
    .description = "float32 rounded to bfloat16 (worked example of terse_codec(3))",
    .params_help = kParamsHelp,
    .dtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32),
    .mem_kinds = TERSE_MEM_HOST,
    .flags = 0,
    .mode = TERSE_REDUCE_RECOMPRESS,
    .parse = example_parse,
    .free_params = example_free_params,
    .params_string = example_params_string,
    .create = example_create,
    .destroy = example_destroy,
    .max_encoded_size = example_max_encoded_size,
    .stats_count = NULL, /* SUMMABLE codecs only */
    .stats = NULL,
    .encode = example_encode,
    .decode = example_decode,
    .combine = NULL, /* SUMMABLE codecs only */
    .reserved = {NULL},
};

TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) { return &kDescriptor; }
