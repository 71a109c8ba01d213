#include "codec/codec_status.h"

#include <terse/codec.h>

namespace terse {

Status codec_status(int rc) {
    switch (rc) {
    case TERSE_CODEC_ERR_PARAM: return TERSE_ERR_INVALID;
    case TERSE_CODEC_ERR_UNSUPPORTED: return TERSE_ERR_UNSUPPORTED;
    case TERSE_CODEC_ERR_NOMEM: return TERSE_ERR_NO_MEMORY;
    case TERSE_CODEC_ERR_CORRUPT: return TERSE_ERR_CORRUPT;
    default: return TERSE_ERR_PLUGIN;
    }
}

const char *codec_status_text(int rc) {
    switch (rc) {
    case TERSE_CODEC_OK: return "ok";
    case TERSE_CODEC_RAW: return "raw";
    case TERSE_CODEC_ERR_PARAM: return "bad parameter";
    case TERSE_CODEC_ERR_UNSUPPORTED: return "unsupported datatype, memory kind or op";
    case TERSE_CODEC_ERR_NOSPACE: return "output larger than its declared max_encoded_size";
    case TERSE_CODEC_ERR_CORRUPT: return "payload malformed or truncated";
    case TERSE_CODEC_ERR_NOMEM: return "out of memory";
    case TERSE_CODEC_ERR_INTERNAL: return "internal error";
    default: return "unknown codec status";
    }
}

}  // namespace terse
