// quantize plugin: the C ABI around quantize_codec.h.  No exception crosses
// this boundary (the callbacks are common/c_abi.h's); the code path
// (AVX-512, AVX2 or scalar) is chosen once per instance from what the CPU
// supports.
#include "quantize_codec.h"

#include "../common/c_abi.h"
#include "../common/elem.h"

namespace terse_quantize {
namespace {

terse_codec_descriptor_t make_descriptor() {
    terse_codec_descriptor_t d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = "quantize";
    d.description = "per-block scaled integer quantization, summed exactly in the code domain";
    d.params_help = "bits=1|2|4|8|16 (default 8), block=32..65536 power of two (default 256 for 8 and 16 "
                    "bits, 512, 1024, 2048 for 4, 2, 1 bits), rounding=nearest|stochastic (default nearest)";
    d.dtypes = terse_codec::kLossyDtypes;
    d.mem_kinds = TERSE_MEM_HOST;
    d.flags = 0;
    d.mode = TERSE_REDUCE_SUMMABLE;
    terse_codec::set_forwarding_callbacks<Params, Instance>(d);
    return d;
}

}  // namespace

const terse_codec_descriptor_t *descriptor() {
    static const terse_codec_descriptor_t d = make_descriptor();
    return &d;
}

}  // namespace terse_quantize
