// quantize parameters: bits, block, rounding.
#include "quantize_codec.h"

#include "../common/params.h"

#include <cstdio>

namespace terse_quantize {

using terse_codec::is_key;
using terse_codec::set_message;

int parse_params(const terse_codec_kv_t *kv, size_t nkv, Params *out, char *err, size_t errlen) {
    Params p;
    bool seen_bits = false, seen_block = false, seen_rounding = false;
    for (size_t i = 0; i < nkv; i++) {
        const char *key = kv[i].key ? kv[i].key : "";
        const char *val = kv[i].value ? kv[i].value : "";
        bool *seen = is_key(key, "bits")       ? &seen_bits
                     : is_key(key, "block")    ? &seen_block
                     : is_key(key, "rounding") ? &seen_rounding
                                               : nullptr;
        if (!seen) {
            set_message(err, errlen, "unknown parameter '%s' (accepted: bits, block, rounding)", key);
            return TERSE_CODEC_ERR_PARAM;
        }
        if (*seen) {
            set_message(err, errlen, "parameter '%s' is given twice", key);
            return TERSE_CODEC_ERR_PARAM;
        }
        *seen = true;
        unsigned long long v = 0;
        if (is_key(key, "bits")) {
            if (!terse_codec::parse_uint(val, &v) || v > 64 || !valid_bits(static_cast<int>(v))) {
                set_message(err, errlen, "bits=%s is not accepted (accepted: 1, 2, 4, 8, 16)", val);
                return TERSE_CODEC_ERR_PARAM;
            }
            p.bits = static_cast<int>(v);
        } else if (is_key(key, "block")) {
            const bool ok = terse_codec::parse_uint(val, &v) && v >= (1ull << kMinLog2Block) &&
                            v <= (1ull << kMaxLog2Block) && (v & (v - 1)) == 0;
            if (!ok) {
                set_message(err, errlen, "block=%s is not accepted (accepted: a power of two from 32 to 65536)",
                            val);
                return TERSE_CODEC_ERR_PARAM;
            }
            p.log2_block = terse_codec::bit_length(v) - 1;
        } else {
            if (is_key(val, "nearest")) {
                p.rounding = kNearest;
            } else if (is_key(val, "stochastic")) {
                p.rounding = kStochastic;
            } else {
                set_message(err, errlen, "rounding=%s is not accepted (accepted: nearest, stochastic)", val);
                return TERSE_CODEC_ERR_PARAM;
            }
        }
    }
    if (!seen_block) p.log2_block = default_log2_block(p.bits);
    *out = p;
    return TERSE_CODEC_OK;
}

size_t params_string(const Params &p, char *buf, size_t buflen) {
    char tmp[96];
    const int n = snprintf(tmp, sizeof tmp, "bits=%d,block=%zu,rounding=%s", p.bits, size_t{1} << p.log2_block,
                           p.rounding == kNearest ? "nearest" : "stochastic");
    if (buf && buflen) snprintf(buf, buflen, "%s", tmp);
    return n > 0 ? static_cast<size_t>(n) : 0;
}

}  // namespace terse_quantize
