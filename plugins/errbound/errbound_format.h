// errbound payload format and the arithmetic that defines it (SZp style:
// linear quantization, then per-block bit-width packing).
//
// Every rank rounds x to the nearest multiple of one step q (agreed through
// the MAX-reduced stats), k = round(x / q).  Codes of ranks are summed as
// integers (combine), so the result is K*q with K = sum(k) and
//     |K*q - sum(x)| <= n*q/2 + tiny,
// and plan_step() picks q so that this, plus the rounding of the final
// multiply and of the conversion to the output type, stays <= the bound.
//
// Payload (little-endian):
//   0  u8  version (1)
//   1  u8  flags: bit 0 = the stream is zstd-compressed
//   2  u8  log2 of the block (5: 32 elements)
//   3  u8  reserved, 0
//   4  u32 contributors c (>= 1)
//   8  u64 count
//   16 f64 q (step), > 0
//   24 u32 kmax: per-rank bound of |k| (from the agreed stats; every rank the same)
//   28 u32 reserved, 0
//   32 u64 stream bytes (before zstd)
//   40 stream, or a zstd frame holding it
// Stream:
//   widths: one per block, 4 bits each (low nibble first) when
//           wmax = bit_length(2*c*kmax) <= 15, else one byte each
//   blocks: for a block of width w, w 32-bit words: word j holds bit j of the
//           zigzag code z = (K << 1) ^ (K >> 31) of element i in bit i
//           (bit planes; a last partial block is padded with zeros).
// Every K of a payload satisfies |K| <= c*kmax (decoders check it).
#pragma once

#include "../common/bitpack.h"
#include "../common/le.h"

#include <terse/codec.h>

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace terse_errbound {

constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = 40;
constexpr int kLog2Block = 5;
constexpr size_t kBlock = 32;
constexpr uint8_t kFlagZstd = 1;
// c*kmax stays below this, so zigzag codes fit 31 bits and sums fit int32.
constexpr uint64_t kMaxSum = 1ull << 30;

struct Header {
    uint8_t version = kVersion;
    uint8_t flags = 0;
    uint8_t log2_block = kLog2Block;
    uint32_t contributors = 0;
    uint64_t count = 0;
    double q = 0;
    uint32_t kmax = 0;
    uint64_t stream_bytes = 0;
};

TERSE_HD inline void write_header(uint8_t *p, const Header &h) {
    p[0] = h.version;
    p[1] = h.flags;
    p[2] = h.log2_block;
    p[3] = 0;
    terse_codec::put_u32(p + 4, h.contributors);
    terse_codec::put_u64(p + 8, h.count);
    uint64_t qb;
    __builtin_memcpy(&qb, &h.q, 8);
    terse_codec::put_u64(p + 16, qb);
    terse_codec::put_u32(p + 24, h.kmax);
    terse_codec::put_u32(p + 28, 0);
    terse_codec::put_u64(p + 32, h.stream_bytes);
}

TERSE_HD inline Header read_header(const uint8_t *p) {
    Header h;
    h.version = p[0];
    h.flags = p[1];
    h.log2_block = p[2];
    h.contributors = terse_codec::get_u32(p + 4);
    h.count = terse_codec::get_u64(p + 8);
    const uint64_t qb = terse_codec::get_u64(p + 16);
    __builtin_memcpy(&h.q, &qb, 8);
    h.kmax = terse_codec::get_u32(p + 24);
    h.stream_bytes = terse_codec::get_u64(p + 32);
    return h;
}

TERSE_HD inline bool reserved_zero(const uint8_t *p) { return p[3] == 0 && terse_codec::get_u32(p + 28) == 0; }

TERSE_HD inline size_t block_count(size_t count) { return (count + kBlock - 1) / kBlock; }

// Largest zigzag code of a payload of c contributors, and its width.
TERSE_HD inline uint64_t zigzag_max(uint64_t c, uint32_t kmax) { return 2 * c * kmax; }
TERSE_HD inline int width_max(uint64_t c, uint32_t kmax) { return terse_codec::bit_length(zigzag_max(c, kmax)); }
TERSE_HD inline bool nibble_widths(uint64_t c, uint32_t kmax) { return width_max(c, kmax) <= 15; }

TERSE_HD inline size_t widths_bytes(size_t nblocks, bool nibbles) {
    return nibbles ? (nblocks + 1) / 2 : nblocks;
}

// Worst-case stream of a payload of c contributors.
TERSE_HD inline size_t stream_worst(size_t count, uint64_t c, uint32_t kmax) {
    const size_t nb = block_count(count);
    return widths_bytes(nb, nibble_widths(c, kmax)) + nb * 4 * static_cast<size_t>(width_max(c, kmax));
}

TERSE_HD inline int get_width(const uint8_t *widths, size_t b, bool nibbles) {
    return nibbles ? (widths[b / 2] >> (4 * (b & 1))) & 0xf : widths[b];
}
TERSE_HD inline void put_width(uint8_t *widths, size_t b, bool nibbles, int w) {
    if (!nibbles) {
        widths[b] = static_cast<uint8_t>(w);
    } else if ((b & 1) == 0) {
        widths[b / 2] = static_cast<uint8_t>(w);
    } else {
        widths[b / 2] = static_cast<uint8_t>(widths[b / 2] | (w << 4));
    }
}

TERSE_HD inline uint32_t zigzag(int32_t k) {
    return (static_cast<uint32_t>(k) << 1) ^ static_cast<uint32_t>(k >> 31);
}
TERSE_HD inline int32_t unzigzag(uint32_t z) { return static_cast<int32_t>((z >> 1) ^ (0u - (z & 1u))); }

// How the output type rounds a decoded value of magnitude <= R: at most
// R*rel + abs (abs covers subnormal results).  The 16-bit types go through
// float first, so both roundings count.
struct OutRounding {
    double rel, abs;
};
TERSE_HD inline OutRounding out_rounding(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return {0x1p-24, 0x1p-150};
    case TERSE_DTYPE_FLOAT64: return {0.0, 0x1p-1074};
    case TERSE_DTYPE_FLOAT16: return {0x1p-24 + 0x1p-11 + 0x1p-34, 0x1p-150 + 0x1p-25};
    default: return {0x1p-24 + 0x1p-8 + 0x1p-31, 0x1p-150 + 0x1p-134};
    }
}

struct Step {
    bool raw = true;  // no step can keep the bound (or the data holds NaN/Inf)
    double q = 0;
    uint32_t kmax = 0;
};

// The per-rank step for bound B (end to end), n ranks, agreed max |x| M.
TERSE_HD inline Step plan_step(double B, double M, int n, terse_dtype_t dt) {
    Step s;
    if (!(M >= 0) || !(M <= DBL_MAX) || !(B >= 0) || !(B <= DBL_MAX) || n < 1) return s;
    const double nd = static_cast<double>(n);
    if (M == 0) {  // every rank holds zeros: any step is exact
        s.raw = false;
        s.q = 1.0;
        s.kmax = 1;
        return s;
    }
    if (B == 0) return s;
    const OutRounding o = out_rounding(dt);
    const double R = nd * M + B;  // largest |result|
    // Rounding of x/q on each rank (|x| * 2^-51), of K*q (R * 2^-53), of the output type.
    const double fixed = nd * M * 0x1p-51 + R * 0x1p-53 + R * o.rel + o.abs;
    const double avail = B - fixed;
    if (!(avail > 0.5 * B)) return s;  // the type cannot hold results this precisely
    const double q = 2.0 * avail / nd * (1.0 - 0x1p-20);
    if (!(q >= DBL_MIN)) return s;
    const double t = M * (1.0 / q);
    if (!(t < 0x1p31)) return s;
    const uint64_t kmax = static_cast<uint64_t>(floor(t)) + 1;
    if (static_cast<uint64_t>(n) * kmax >= kMaxSum) return s;  // codes would not fit
    s.raw = false;
    s.q = q;
    s.kmax = static_cast<uint32_t>(kmax);
    return s;
}

}  // namespace terse_errbound
