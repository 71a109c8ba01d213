// Bit planes of groups of 32 unsigned codes: a group of width W is W 32-bit
// words, word j holding bit j of code i in bit i.  Sums of such codes are
// formed plane by plane with a ripple-carry adder on whole words (32 codes
// per operation), and compared with a constant the same way, so combining
// payloads never unpacks a code.  TERSE_HD: the CUDA build uses these as is.
#pragma once

#include "le.h"

#include <terse/codec.h>

#include <cstdint>

namespace terse_codec {

// Planes of 32 codes (all < 2^w).
TERSE_HD inline void planes_pack(const uint32_t *z, int w, uint32_t *planes) {
    for (int j = 0; j < w; j++) {
        uint32_t p = 0;
        for (int i = 0; i < 32; i++) p |= ((z[i] >> j) & 1u) << i;
        planes[j] = p;
    }
}

TERSE_HD inline void planes_unpack(const uint32_t *planes, int w, uint32_t *z) {
    for (int i = 0; i < 32; i++) z[i] = 0;
    for (int j = 0; j < w; j++)
        for (int i = 0; i < 32; i++) z[i] |= ((planes[j] >> i) & 1u) << j;
}

// Lanes (bits) whose code exceeds k; k < 2^w.
TERSE_HD inline uint32_t planes_greater_than(const uint32_t *planes, int w, uint32_t k) {
    uint32_t gt = 0, eq = 0xffffffffu;
    for (int j = w - 1; j >= 0; j--) {
        const uint32_t kj = ((k >> j) & 1u) ? 0xffffffffu : 0u;
        gt |= eq & planes[j] & ~kj;
        eq &= ~(planes[j] ^ kj);
    }
    return gt;
}

// out = a + b for 32 codes at once; returns the carry out of plane wo - 1
// (non-zero: the sum does not fit wo bits).
TERSE_HD inline uint32_t planes_add(const uint32_t *a, int wa, const uint32_t *b, int wb, uint32_t *out, int wo) {
    uint32_t carry = 0;
    for (int j = 0; j < wo; j++) {
        const uint32_t x = j < wa ? a[j] : 0u, y = j < wb ? b[j] : 0u;
        const uint32_t h = x ^ y;
        out[j] = h ^ carry;
        carry = (x & y) | (carry & h);
    }
    for (int j = wo; j < wa || j < wb; j++) carry |= (j < wa ? a[j] : 0u) | (j < wb ? b[j] : 0u);
    return carry;
}

TERSE_HD inline void load_planes(const uint8_t *in, int w, uint32_t *planes) {
    for (int j = 0; j < w; j++) planes[j] = get_u32(in + 4 * j);
}

TERSE_HD inline void store_planes(const uint32_t *planes, int w, uint8_t *out) {
    for (int j = 0; j < w; j++) put_u32(out + 4 * j, planes[j]);
}

}  // namespace terse_codec
