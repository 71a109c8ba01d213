#include "zfp_params.h"

#include "../common/params.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace terse_zfp {
namespace {

// The shared helpers, under the names this file's messages are written with.
constexpr auto &fail = terse_codec::param_error;
constexpr auto &parse_double = terse_codec::parse_strtod_finite;

std::string shortest(double v) {
    char num[40];
    auto res = std::to_chars(num, num + sizeof num - 1, v);
    *res.ptr = '\0';
    return num;
}

const char *mode_name(Mode m) {
    return m == Mode::Rate ? "rate" : m == Mode::Accuracy ? "accuracy" : "precision";
}

}  // namespace

int parse_params(const terse_codec_kv_t *kv, size_t nkv, Params *out, char *err, size_t errlen) {
    Params p;
    bool have_mode = false, have[3] = {false, false, false};  // indexed by Mode
    for (size_t i = 0; i < nkv; i++) {
        const std::string key = kv[i].key ? kv[i].key : "";
        const std::string value = kv[i].value ? kv[i].value : "";
        if (key == "mode") {
            if (have_mode) return fail(err, errlen, "parameter 'mode' given twice");
            have_mode = true;
            if (value == "rate") p.mode = Mode::Rate;
            else if (value == "accuracy") p.mode = Mode::Accuracy;
            else if (value == "precision") p.mode = Mode::Precision;
            else
                return fail(err, errlen,
                            "mode=" + value + " is not accepted (accepted: rate, accuracy, precision)");
        } else if (key == "rate") {
            if (have[0]) return fail(err, errlen, "parameter 'rate' given twice");
            have[0] = true;
            double r;
            if (!parse_double(value.c_str(), &r))
                return fail(err, errlen,
                            "rate=" + value +
                                " is not a number (accepted: 1 <= rate <= 32 for "
                                "float32, 1 <= rate <= 64 for float64, bits per value)");
            if (!(r >= 1.0 && r <= 64.0))
                return fail(err, errlen,
                            "rate=" + value +
                                " is out of range (accepted: 1 <= rate <= 32 for "
                                "float32, 1 <= rate <= 64 for float64, bits per value)");
            p.rate = r;
        } else if (key == "accuracy") {
            if (have[1]) return fail(err, errlen, "parameter 'accuracy' given twice");
            have[1] = true;
            double a;
            if (!parse_double(value.c_str(), &a))
                return fail(err, errlen,
                            "accuracy=" + value +
                                " is not a number (accepted: absolute error "
                                "tolerance > 0)");
            if (!(a > 0.0))
                return fail(err, errlen,
                            "accuracy=" + value +
                                " is out of range (accepted: absolute error "
                                "tolerance > 0)");
            p.accuracy = a;
        } else if (key == "precision") {
            if (have[2]) return fail(err, errlen, "parameter 'precision' given twice");
            have[2] = true;
            unsigned v = 0;
            const char *b = value.c_str(), *e = b + value.size();
            auto [ptr, ec] = std::from_chars(b, e, v, 10);
            if (value.empty() || ec != std::errc() || ptr != e || v < 1 || v > 64)
                return fail(err, errlen,
                            "precision=" + value +
                                " is out of range (accepted: integer 1 <= "
                                "precision <= 64, bit planes)");
            p.precision = v;
        } else {
            return fail(err, errlen, "unknown parameter '" + key + "' (accepted: " + kParamsHelp + ")");
        }
    }
    const int given = int(have[0]) + int(have[1]) + int(have[2]);
    if (!have_mode) {
        if (given > 1)
            return fail(err, errlen,
                        "rate=, accuracy= and precision= select different modes; give one "
                        "of them (or mode= with its own key)");
        p.mode = have[1] ? Mode::Accuracy : have[2] ? Mode::Precision : Mode::Rate;
    } else {
        static const char *keys[3] = {"rate", "accuracy", "precision"};
        for (int m = 0; m < 3; m++)
            if (have[m] && Mode(m) != p.mode)
                return fail(err, errlen,
                            std::string(keys[m]) + "= does not apply to mode=" + mode_name(p.mode) +
                                " (mode=" + mode_name(p.mode) + " takes " + keys[int(p.mode)] + "=)");
        if (p.mode == Mode::Accuracy && !have[1])
            return fail(err, errlen, "mode=accuracy needs accuracy=<absolute error tolerance > 0>");
        if (p.mode == Mode::Precision && !have[2])
            return fail(err, errlen, "mode=precision needs precision=<bit planes 1..64>");
    }
    *out = p;
    return TERSE_CODEC_OK;
}

size_t params_string(const Params &p, char *buf, size_t buflen) {
    std::string s = std::string("mode=") + mode_name(p.mode) + ",";
    switch (p.mode) {
    case Mode::Rate: s += "rate=" + shortest(p.rate); break;
    case Mode::Accuracy: s += "accuracy=" + shortest(p.accuracy); break;
    case Mode::Precision: s += "precision=" + std::to_string(p.precision); break;
    }
    if (buf && buflen) snprintf(buf, buflen, "%s", s.c_str());
    return s.size();
}

}  // namespace terse_zfp
