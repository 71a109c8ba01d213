#include "topk_params.h"

#include "../common/params.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace terse_topk {
namespace {

// The shared helpers, under the names this file's messages are written with.
constexpr auto &fail = terse_codec::param_error;
constexpr auto &parse_double = terse_codec::parse_strtod_finite;

bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return false;
    const char *end = s + std::strlen(s);
    auto [p, ec] = std::from_chars(s, end, *out, 10);
    return ec == std::errc() && p == end;
}

}  // namespace

size_t Params::kept(size_t n) const {
    if (n == 0) return 0;
    if (k != 0) return k < n ? size_t(k) : n;
    const double r = std::nearbyint(ratio * double(n));
    if (r < 1.0) return 1;
    return r >= double(n) ? n : size_t(r);
}

int parse_params(const terse_codec_kv_t *kv, size_t nkv, Params *out, char *err, size_t errlen) {
    Params p;
    bool have_ratio = false, have_k = false, have_select = false;
    for (size_t i = 0; i < nkv; i++) {
        const std::string key = kv[i].key ? kv[i].key : "";
        const char *value = kv[i].value ? kv[i].value : "";
        bool *seen = key == "ratio"    ? &have_ratio
                     : key == "k"      ? &have_k
                     : key == "select" ? &have_select
                                       : nullptr;
        if (!seen) return fail(err, errlen, "unknown parameter '" + key + "' (accepted: " + kParamsHelp + ")");
        if (*seen) return fail(err, errlen, "parameter '" + key + "' given twice");
        *seen = true;
        if (key == "ratio") {
            double r;
            if (!parse_double(value, &r))
                return fail(err, errlen,
                            "ratio=" + std::string(value) + " is not a number (accepted: 0 < ratio <= 1)");
            if (!(r > 0.0 && r <= 1.0))
                return fail(err, errlen,
                            "ratio=" + std::string(value) + " is out of range (accepted: 0 < ratio <= 1)");
            p.ratio = r;
        } else if (key == "k") {
            uint64_t k;
            if (!parse_u64(value, &k) || k < 1 || k > UINT32_MAX)
                return fail(
                    err, errlen,
                    "k=" + std::string(value) + " is out of range (accepted: integer 1 <= k <= 4294967295)");
            p.k = k;
        } else {
            if (std::strcmp(value, "exact") == 0) p.method = Method::Exact;
            else if (std::strcmp(value, "sampled") == 0) p.method = Method::Sampled;
            else
                return fail(err, errlen,
                            "select=" + std::string(value) + " is not accepted (accepted: exact, sampled)");
        }
    }
    if (have_ratio && have_k)
        return fail(err, errlen,
                    "ratio= and k= both given; give one of them (ratio: fraction kept "
                    "per chunk, k: elements kept per chunk)");
    *out = p;
    return TERSE_CODEC_OK;
}

size_t params_string(const Params &p, char *buf, size_t buflen) {
    char tmp[96];
    int n;
    const char *sel = p.method == Method::Exact ? "exact" : "sampled";
    if (p.k != 0) {
        n = snprintf(tmp, sizeof tmp, "k=%llu,select=%s", static_cast<unsigned long long>(p.k), sel);
    } else {
        // Shortest text that reads back as the same double.
        char num[40];
        auto res = std::to_chars(num, num + sizeof num - 1, p.ratio);
        *res.ptr = '\0';
        n = snprintf(tmp, sizeof tmp, "ratio=%s,select=%s", num, sel);
    }
    if (n < 0) n = 0;
    if (buf && buflen) snprintf(buf, buflen, "%s", tmp);
    return size_t(n);
}

}  // namespace terse_topk
