// quantize payload format and the arithmetic that defines it.
//
// Payload (little-endian):
//   0  u8  version (1)
//   1  u8  bits: 1, 2, 4, 8 or 16
//   2  u8  width: bits per stored code, width_for(bits, contributors)
//   3  u8  log2 of the block (5 .. 16)
//   4  u8  scale bytes: 4 (float32, for float32/float16/bfloat16 data) or 8 (float64 data)
//   5  u8  rounding: 0 nearest, 1 stochastic
//   6  u16 reserved, 0
//   8  u32 contributors: how many ranks' codes are summed in this payload (>= 1)
//   12 u32 reserved, 0
//   16 u64 count
//   24 scales: one per block, the agreed max |x| of the block (m)
//   ..  codes, in one of two layouts:
//       contributors == 1: count fields of `width` bits packed LSB first
//                          (common/bitpack.h), padding bits 0: plain bytes
//                          or uint16 at 8 and 16 bits, fast to write and read;
//       contributors >= 2: groups of 32 codes, each group `width` 32-bit
//                          words of bit planes (common/bitplanes.h), the last
//                          group padded with zero codes: combine() adds two
//                          payloads plane by plane, 32 codes per operation.
//
// A code is an unsigned integer S.  For one rank S = k + Z where k is the
// signed level; codes of several ranks are summed as integers, so a payload
// of c contributors holds S = sum(k) + c*Z and decodes to
//     value = (mul*S - c*Z) * u
// with, for L = 2^(bits-1) - 1:
//     bits >= 2: mul = 1, Z = L, k in [-L, L],  u = m / L
//     bits == 1: mul = 2, Z = 1, k in {-1, +1}: S counts the +1s; the levels
//                are +-u with
//                  nearest:    u = s, the block's mean |x| (the level that
//                              minimises the squared error of sign coding);
//                              the stored scale is s, agreed as the max over
//                              ranks of each rank's block mean |x|;
//                  stochastic: u = m (unbiased needs the levels to span [-m, m]).
// The stored scale is m (the agreed block max |x|) in every other case.
// The width grows with the contributors, so early ring hops stay small:
//     width_for(bits, c) = bit length of c * code_max(bits)
#pragma once

#include "../common/bitpack.h"
#include "../common/le.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse_quantize {

constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = 24;
constexpr int kMinLog2Block = 5;
constexpr int kMaxLog2Block = 16;

enum Rounding : uint8_t { kNearest = 0, kStochastic = 1 };

struct Header {
    uint8_t version = kVersion;
    uint8_t bits = 0;
    uint8_t width = 0;
    uint8_t log2_block = 0;
    uint8_t scale_bytes = 0;
    uint8_t rounding = kNearest;
    uint32_t contributors = 0;
    uint64_t count = 0;
};

TERSE_HD inline void write_header(uint8_t *p, const Header &h) {
    p[0] = h.version;
    p[1] = h.bits;
    p[2] = h.width;
    p[3] = h.log2_block;
    p[4] = h.scale_bytes;
    p[5] = h.rounding;
    terse_codec::put_u16(p + 6, 0);
    terse_codec::put_u32(p + 8, h.contributors);
    terse_codec::put_u32(p + 12, 0);
    terse_codec::put_u64(p + 16, h.count);
}

// Reads the fields; says nothing about their validity (see check_header).
TERSE_HD inline Header read_header(const uint8_t *p) {
    Header h;
    h.version = p[0];
    h.bits = p[1];
    h.width = p[2];
    h.log2_block = p[3];
    h.scale_bytes = p[4];
    h.rounding = p[5];
    h.contributors = terse_codec::get_u32(p + 8);
    h.count = terse_codec::get_u64(p + 16);
    return h;
}

TERSE_HD inline bool reserved_zero(const uint8_t *p) {
    return terse_codec::get_u16(p + 6) == 0 && terse_codec::get_u32(p + 12) == 0;
}

TERSE_HD inline bool valid_bits(int bits) {
    return bits == 1 || bits == 2 || bits == 4 || bits == 8 || bits == 16;
}
TERSE_HD inline int bits_index(int bits) {
    return bits == 1 ? 0 : bits == 2 ? 1 : bits == 4 ? 2 : bits == 8 ? 3 : 4;
}

TERSE_HD inline uint32_t levels(int bits) { return bits >= 2 ? (1u << (bits - 1)) - 1u : 1u; }  // L
TERSE_HD inline uint32_t zero_code(int bits) { return bits >= 2 ? levels(bits) : 1u; }          // Z
TERSE_HD inline uint32_t code_mul(int bits) { return bits >= 2 ? 1u : 2u; }
TERSE_HD inline uint32_t code_max(int bits) { return bits >= 2 ? 2u * levels(bits) : 1u; }

// Width of a payload summing c contributors; 0 if the sum would not fit 32 bits.
TERSE_HD inline int width_for(int bits, uint64_t contributors) {
    const uint64_t top = contributors * code_max(bits);
    if (contributors == 0 || top > 0xffffffffull) return 0;
    return terse_codec::bit_length(top);
}

// Step u of a block whose stored scale is m.
TERSE_HD inline double step_of(double m, int bits, int rounding) {
    (void)rounding;
    if (bits >= 2) return m / static_cast<double>(levels(bits));
    return m;
}

// 1-bit nearest scales blocks by their mean |x| (stats() says which).
TERSE_HD inline bool scale_is_mean(int bits, int rounding) { return bits == 1 && rounding == kNearest; }

// Default block per width: keeps the per-block scale and the agreed stats
// near 5% of the code bits (measured: see terse_codec_quantize(7)).
TERSE_HD inline int default_log2_block(int bits) { return bits == 1 ? 11 : bits == 2 ? 10 : bits == 4 ? 9 : 8; }

TERSE_HD inline size_t block_count(size_t count, int log2_block) {
    return (count + (size_t{1} << log2_block) - 1) >> log2_block;
}

TERSE_HD inline bool planes_layout(uint64_t contributors) { return contributors >= 2; }

TERSE_HD inline size_t codes_bytes(size_t count, int width, uint64_t contributors) {
    if (planes_layout(contributors)) return (count + 31) / 32 * 4 * static_cast<size_t>(width);
    return terse_codec::packed_bytes(count, width);
}

TERSE_HD inline size_t payload_bytes(size_t count, int log2_block, int scale_bytes, int width,
                                     uint64_t contributors) {
    return kHeaderBytes + block_count(count, log2_block) * static_cast<size_t>(scale_bytes) +
           codes_bytes(count, width, contributors);
}

}  // namespace terse_quantize
