// The one symbol the errbound module exports.
#include "errbound_codec.h"

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) {
    return terse_errbound::descriptor();
}
