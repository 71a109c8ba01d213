// The one symbol the quantize module exports.
#include "quantize_codec.h"

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) {
    return terse_quantize::descriptor();
}
