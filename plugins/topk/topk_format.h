// The topk payload (inside the engine's checked frame):
//
//   offset size field
//        0    1 format version (1)
//        1    1 dtype of the values (terse_dtype_t; must match the instance)
//        2    1 index coding (IndexCoding)
//        3    1 reserved (0)
//        4    4 k: number of kept elements
//        8    4 count: elements of the chunk (must match the decode call)
//       12    4 index section length in bytes
//       16      k values, in the input type, in ascending index order
//               index section: the gaps idx[i] - idx[i-1] - 1 (idx[-1] = -1)
//
// All fields little-endian.  TERSE_HD: the device encoder writes the same
// header (topk_device_body.h).  The payload length is exactly
// 16 + k * value_size + index_bytes; anything else is corrupt.
#pragma once

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse_topk {

constexpr size_t kHeaderSize = 16;
constexpr uint8_t kFormatVersion = 1;

enum IndexCoding : uint8_t {
    kVarint = 0,    // LEB128 gaps: 7 bits per byte, high bit = more bytes follow
    kBitpacked = 1  // groups of 32 gaps: one width byte w <= 32, then 32 gaps of w bits
};

struct Header {
    uint8_t version;
    uint8_t dtype;
    uint8_t coding;
    uint8_t reserved;
    uint32_t k;
    uint32_t count;
    uint32_t index_bytes;
};

TERSE_HD inline void put_u32(uint8_t *p, uint32_t v) {
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
    p[2] = uint8_t(v >> 16);
    p[3] = uint8_t(v >> 24);
}
TERSE_HD inline uint32_t get_u32(const uint8_t *p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

TERSE_HD inline void write_header(uint8_t *p, const Header &h) {
    p[0] = h.version;
    p[1] = h.dtype;
    p[2] = h.coding;
    p[3] = h.reserved;
    put_u32(p + 4, h.k);
    put_u32(p + 8, h.count);
    put_u32(p + 12, h.index_bytes);
}

TERSE_HD inline Header read_header(const uint8_t *p) {
    return Header{p[0], p[1], p[2], p[3], get_u32(p + 4), get_u32(p + 8), get_u32(p + 12)};
}

}  // namespace terse_topk
