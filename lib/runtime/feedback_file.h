// One rank's error-feedback file (terse_feedback_save / restore,
// runtime/feedback_api.cc): its residuals, the store's clock and the
// ordinals of sequence keys, with what they were made under, so that a
// restored communicator continues as the saved one would have.  No MPI
// here: encoding, the checks of decoding, and the file itself.
//
// Format, version 1 (integers little-endian; documented in
// terse_feedback(3)):
//   offset size
//        0    8  magic "TERSE-FB"
//        8    4  version (1)
//       12    4  byte order of the residual data: 1 little-endian, 2 big-endian
//       16    8  length of the whole file in bytes, check value included
//       24    4  rank that wrote it
//       28    4  size of the communicator
//       32    4  key mode: 1 sequence, 2 tag
//       36    4  L, then L bytes: the communicator's codec (canonical spec)
//             8  the store's clock (its least recently used order)
//             4  M, then M x (8 shape, 8 next ordinal): sequence ordinals
//             4  N, then N residuals, each: 8 key id, 8 key shape,
//                8 count, 4 datatype (terse_dtype_t), 8 last use,
//                count x datatype size bytes of data (host byte order)
//        end-4  4  CRC32C of every byte before it
#pragma once

#include "config/config.h"
#include "engine/error_feedback.h"
#include "engine/feedback_key.h"
#include "util/status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace terse {

// What a file was written under; restore requires the same.
struct FeedbackFileOrigin {
    int rank = 0;
    int size = 1;
    FeedbackKeyMode mode = FeedbackKeyMode::Sequence;
    std::string codec;  // CodecSpec::text()
};

// The file of `rank` for the path a user passes: "PATH.rankR".
std::string feedback_file_name(const std::string &path, int rank);

// store may be null (feedback off on the communicator): no residuals.
Status feedback_file_encode(const FeedbackFileOrigin &origin, const FeedbackStore *store,
                            const FeedbackKeyer::Ordinals &ordinals, std::string *out);

// Checks bytes (read from `file`, for messages) against `expect` and fills
// *store (empty, or null when feedback is off: then a file with residuals
// is refused) and *ordinals.  Errors: TERSE_ERR_CORRUPT (damaged, truncated
// or not such a file), TERSE_ERR_MISMATCH (written under another rank,
// communicator size, key mode or codec), TERSE_ERR_INVALID (residuals
// where feedback is off).
Status feedback_file_decode(const std::string &bytes, const std::string &file, const FeedbackFileOrigin &expect,
                            FeedbackStore *store, FeedbackKeyer::Ordinals *ordinals);

// Whole-file I/O with TERSE_ERR_IO and the system's reason on failure.
// write() goes to file + ".tmp"; commit() renames it to file, discard()
// removes it, so that a failed save leaves no partial file behind.
Status feedback_file_write(const std::string &file, const std::string &bytes);
Status feedback_file_commit(const std::string &file);
void feedback_file_discard(const std::string &file);
// At most `limit` bytes; a larger file is refused as not a feedback file.
Status feedback_file_read(const std::string &file, size_t limit, std::string *bytes);

}  // namespace terse
