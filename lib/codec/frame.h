// The frame: header + payload of every chunk terse puts on the wire.
//
//   offset size field
//        0    4 magic "TRSF"
//        4    1 version (1)
//        5    1 dtype (terse_dtype_t)
//        6    1 flags (FRAME_RAW, FRAME_POISON)
//        7    1 reserved (0)
//        8    4 codec id (crc32c of the codec name; 0 for raw)
//       12    4 contributors (ranks summed into this frame)
//       16    8 element count
//       24    8 payload length in bytes
//       32    4 check value: crc32c over bytes 0..31 and the payload
//       36    4 reserved (0)
//       40      payload
//
// A receiver checks every field against what it expects before any decoder
// sees the payload; a foreign, truncated or corrupt frame is an error.
// FRAME_POISON carries no payload: a rank that failed sends it so that every
// other rank fails the same operation instead of waiting forever.
#pragma once

#include "util/status.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse {

constexpr size_t kFrameHeaderSize = 40;
constexpr uint32_t kFrameMagic = 0x46535254u;  // "TRSF" little-endian
constexpr uint8_t kFrameVersion = 1;

enum FrameFlags : uint8_t { FRAME_RAW = 1u << 0, FRAME_POISON = 1u << 1 };

struct FrameInfo {
    terse_dtype_t dtype;
    uint8_t flags;
    uint32_t codec_id;
    uint32_t contributors;
    uint64_t count;
    uint64_t payload_len;
    const uint8_t *payload;
};

// CRC32C (Castagnoli), hardware-accelerated where the CPU has SSE4.2.
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

// Write the header in front of a payload already placed at dst+kFrameHeaderSize
// and compute the check value.  Returns the total frame length.
size_t frame_seal(void *dst, terse_dtype_t dtype, uint8_t flags, uint32_t codec_id, uint32_t contributors,
                  uint64_t count, uint64_t payload_len);

// Sealing and opening in two steps, for a caller that computes the check
// value over the payload itself, in the same pass that produces or reads
// the payload (the data then passes through the cache once):
//   frame_seal_header writes every field but the check value and returns
//   the check value of the header; continue it with crc32c over the payload
//   and store it with frame_seal_check.
//   frame_open_header makes every check of frame_open except the check
//   value and returns the header's part of it in *check; continue it over
//   the payload and compare with frame_open_check.
// frame_seal and frame_open are the two steps in one.
uint32_t frame_seal_header(void *dst, terse_dtype_t dtype, uint8_t flags, uint32_t codec_id,
                           uint32_t contributors, uint64_t count, uint64_t payload_len);
void frame_seal_check(void *dst, uint32_t check);
Status frame_open_header(const void *buf, size_t len, terse_dtype_t expect_dtype, uint32_t expect_codec_id,
                         uint64_t expect_count, int peer, FrameInfo *out, uint32_t *check);
Status frame_open_check(const void *buf, uint32_t check, int peer);

// The header of a frame of len bytes that this process sealed or already
// validated with frame_open: fields as stored, nothing checked.
FrameInfo frame_info(const void *frame, size_t len);

// Test hook: spoil the check value of a sealed frame, so that its receiver
// finds it corrupt.
void frame_spoil_check(void *frame);

// Validate a received frame of len bytes.  expect_codec_id is checked unless
// the frame is raw or poison; expect_count and expect_dtype always.  Names
// the peer (rank) in the error message.
Status frame_open(const void *buf, size_t len, terse_dtype_t expect_dtype, uint32_t expect_codec_id,
                  uint64_t expect_count, int peer, FrameInfo *out);

}  // namespace terse
