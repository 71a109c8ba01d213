// topk parameters: ratio=<0<r<=1> or k=<int>=1> (one of them; default
// ratio=0.01), select=exact|sampled (default sampled).
#pragma once

#include "topk_select.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse_topk {

struct Params {
    double ratio = 0.01;  // used when k == 0
    uint64_t k = 0;       // fixed count per chunk, 0 = use ratio
    Method method = Method::Sampled;

    // Elements kept from a chunk of n: k (at most n), or
    // max(1, round(ratio * n)).  0 only for n == 0.
    size_t kept(size_t n) const;
};

constexpr const char *kParamsHelp =
    "ratio=<fraction kept per chunk, 0 < ratio <= 1; default 0.01> or k=<elements kept per chunk, "
    "integer >= 1> (not both); select=exact|sampled (default sampled)";

// Returns TERSE_CODEC_OK or TERSE_CODEC_ERR_PARAM with a message in err.
int parse_params(const terse_codec_kv_t *kv, size_t nkv, Params *out, char *err, size_t errlen);

// Canonical text, e.g. "ratio=0.01,select=sampled" or "k=100,select=exact".
size_t params_string(const Params &p, char *buf, size_t buflen);

}  // namespace terse_topk
