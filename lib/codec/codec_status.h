// What a codec plugin's status code means to terse: the one mapping from
// terse_codec_status_t to a terse Status, and a text for messages.  Every
// place that calls a codec (the registry's parse/create, the engine's
// encode/decode/stats/combine) reports failures through these two.
#pragma once

#include "util/status.h"

namespace terse {

// TERSE_CODEC_ERR_PARAM -> TERSE_ERR_INVALID, _UNSUPPORTED -> TERSE_ERR_UNSUPPORTED,
// _NOMEM -> TERSE_ERR_NO_MEMORY, _CORRUPT -> TERSE_ERR_CORRUPT; anything else
// (NOSPACE, INTERNAL, an unknown code, or OK/RAW where a result was required)
// is the plugin's fault: TERSE_ERR_PLUGIN.
Status codec_status(int rc);

// A few words on rc ("payload malformed or truncated").
const char *codec_status_text(int rc);

}  // namespace terse
