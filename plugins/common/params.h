// Helpers for the codecs' parse() callbacks: strict number parsing and the
// error messages (name the key, the bad value, and what is accepted).
#pragma once

#include <terse/codec.h>

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace terse_codec {

__attribute__((format(printf, 3, 4))) inline void set_message(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

// Whole string is a decimal integer (no sign, no spaces, no suffix).
inline bool parse_uint(const char *s, unsigned long long *out) {
    if (!s || !*s) return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return false;
    errno = 0;
    char *end = nullptr;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

// Whole string is a finite floating-point number.
inline bool parse_finite_double(const char *s, double *out) {
    if (!s || !*s) return false;
    if (*s == ' ' || *s == '\t') return false;
    errno = 0;
    char *end = nullptr;
    const double v = strtod(s, &end);
    if (errno == ERANGE && v != 0) return false;
    if (*end || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

// Whole string is read by strtod as a finite number without a range error
// (an underflow too is rejected).  Unlike parse_finite_double, leading
// whitespace passes, as strtod skips it.
inline bool parse_strtod_finite(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end = nullptr;
    errno = 0;
    const double v = std::strtod(s, &end);
    if (*end != '\0' || errno == ERANGE || !std::isfinite(v)) return false;
    *out = v;
    return true;
}

// parse_params' error return: msg into err, TERSE_CODEC_ERR_PARAM.
inline int param_error(char *err, size_t errlen, const std::string &msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg.c_str());
    return TERSE_CODEC_ERR_PARAM;
}

inline bool is_key(const char *k, const char *name) { return k && std::strcmp(k, name) == 0; }

}  // namespace terse_codec
