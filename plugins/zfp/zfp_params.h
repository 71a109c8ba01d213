// zfp parameters: mode=rate|accuracy|precision with rate=<bits per value>,
// accuracy=<absolute tolerance>, precision=<bit planes>.  Defaults mode=rate,
// rate=8.  Without mode=, the one of rate=/accuracy=/precision= that is
// given selects the mode.
#pragma once

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse_zfp {

enum class Mode : uint8_t { Rate = 0, Accuracy = 1, Precision = 2 };

struct Params {
    Mode mode = Mode::Rate;
    double rate = 8;         // bits per value, 1..64 (1..32 for float32: checked at create)
    double accuracy = 0;     // absolute error tolerance per encode, > 0
    unsigned precision = 0;  // 1..64 bit planes
};

constexpr const char *kParamsHelp =
    "mode=rate|accuracy|precision (default rate); rate=<bits per value: 1..32 for float32, 1..64 for "
    "float64; default 8>; accuracy=<absolute error tolerance > 0>; precision=<bit planes 1..64>";

int parse_params(const terse_codec_kv_t *kv, size_t nkv, Params *out, char *err, size_t errlen);
size_t params_string(const Params &p, char *buf, size_t buflen);

}  // namespace terse_zfp
