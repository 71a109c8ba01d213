// errbound parameters: abs= | rel= | norm= (exactly one), zstd=on|off, zstd_level=1..19.
#include "errbound_codec.h"

#include "../common/params.h"

#include <cstdio>

namespace terse_errbound {

using terse_codec::is_key;
using terse_codec::set_message;

namespace {
const char *mode_key(Mode m) { return m == kAbs ? "abs" : m == kRel ? "rel" : "norm"; }
}  // namespace

int parse_params(const terse_codec_kv_t *kv, size_t nkv, Params *out, char *err, size_t errlen) {
    Params p;
    int nbounds = 0;
    const char *first_bound = nullptr;
    bool seen_zstd = false, seen_level = false;
    for (size_t i = 0; i < nkv; i++) {
        const char *key = kv[i].key ? kv[i].key : "";
        const char *val = kv[i].value ? kv[i].value : "";
        if (is_key(key, "abs") || is_key(key, "rel") || is_key(key, "norm")) {
            if (nbounds) {
                set_message(err, errlen, "%s and %s are both given (accepted: exactly one of abs, rel, norm)",
                            first_bound, key);
                return TERSE_CODEC_ERR_PARAM;
            }
            nbounds++;
            first_bound = key;
            p.mode = is_key(key, "abs") ? kAbs : is_key(key, "rel") ? kRel : kNorm;
            double v = 0;
            const bool ok = terse_codec::parse_finite_double(val, &v) && v > 0 && (p.mode == kAbs || v <= 1);
            if (!ok) {
                set_message(err, errlen, "%s=%s is not accepted (accepted: %s)", key, val,
                            p.mode == kAbs ? "a finite number > 0" : "a number in (0, 1]");
                return TERSE_CODEC_ERR_PARAM;
            }
            p.bound = v;
        } else if (is_key(key, "zstd")) {
            if (seen_zstd) {
                set_message(err, errlen, "parameter 'zstd' is given twice");
                return TERSE_CODEC_ERR_PARAM;
            }
            seen_zstd = true;
            if (is_key(val, "on")) {
                p.zstd = true;
            } else if (is_key(val, "off")) {
                p.zstd = false;
            } else {
                set_message(err, errlen, "zstd=%s is not accepted (accepted: on, off)", val);
                return TERSE_CODEC_ERR_PARAM;
            }
        } else if (is_key(key, "zstd_level")) {
            if (seen_level) {
                set_message(err, errlen, "parameter 'zstd_level' is given twice");
                return TERSE_CODEC_ERR_PARAM;
            }
            seen_level = true;
            unsigned long long v = 0;
            if (!terse_codec::parse_uint(val, &v) || v < 1 || v > 19) {
                set_message(err, errlen, "zstd_level=%s is not accepted (accepted: 1 to 19)", val);
                return TERSE_CODEC_ERR_PARAM;
            }
            p.zstd_level = static_cast<int>(v);
        } else {
            set_message(err, errlen, "unknown parameter '%s' (accepted: abs, rel, norm, zstd, zstd_level)", key);
            return TERSE_CODEC_ERR_PARAM;
        }
    }
    if (nbounds == 0) {
        set_message(err, errlen,
                    "a bound is required (accepted: exactly one of abs=<bound>, rel=<fraction of the value "
                    "range>, norm=<fraction of the L2 norm>)");
        return TERSE_CODEC_ERR_PARAM;
    }
    if (seen_level && !p.zstd) {
        set_message(err, errlen, "zstd_level is given but zstd is off (accepted: zstd_level with zstd=on)");
        return TERSE_CODEC_ERR_PARAM;
    }
    if (p.zstd && !zstd_available()) {
        set_message(err, errlen,
                    "zstd=on is not available: this build of terse has no libzstd (accepted: zstd=off)");
        return TERSE_CODEC_ERR_PARAM;
    }
    *out = p;
    return TERSE_CODEC_OK;
}

size_t params_string(const Params &p, char *buf, size_t buflen) {
    char tmp[128];
    int n;
    if (p.zstd)
        n = snprintf(tmp, sizeof tmp, "%s=%.17g,zstd=on,zstd_level=%d", mode_key(p.mode), p.bound, p.zstd_level);
    else n = snprintf(tmp, sizeof tmp, "%s=%.17g,zstd=off", mode_key(p.mode), p.bound);
    if (buf && buflen) snprintf(buf, buflen, "%s", tmp);
    return n > 0 ? static_cast<size_t>(n) : 0;
}

}  // namespace terse_errbound
