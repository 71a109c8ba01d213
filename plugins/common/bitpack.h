// Fixed-width bit packing: element i of a stream of W-bit unsigned fields
// occupies bits [i*W, i*W + W) of a little-endian bit stream (bit 0 is the
// least significant bit of byte 0).  For W = 8 and 16 this is plain bytes and
// little-endian uint16.  Fields are handled in groups of 32, which fill
// exactly 4*W bytes, so every group starts on a byte (and 32-bit) boundary.
#pragma once

#include "le.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <utility>

// Unrolling asked of both compilers (nvcc does not know GCC's pragma).
#if defined(__CUDACC__)
#define TERSE_UNROLL32 _Pragma("unroll 32")
#else
#define TERSE_UNROLL32 _Pragma("GCC unroll 32")
#endif

namespace terse_codec {

TERSE_HD inline int bit_length(uint64_t v) {
    int n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

TERSE_HD inline size_t packed_bytes(size_t count, int width) {
    return (count * static_cast<size_t>(width) + 7) / 8;
}

template <int W>
TERSE_HD inline void unpack32(const uint8_t *in, uint32_t *out) {
    static_assert(W >= 1 && W <= 32, "width");
    constexpr uint64_t mask = (W == 32) ? 0xffffffffull : ((1ull << W) - 1);
    constexpr int kBytes = 4 * W;  // the group; never read past it
    TERSE_UNROLL32
    for (int i = 0; i < 32; i++) {
        const int bit = i * W;
        const int byte = bit >> 3;
        uint64_t v;
        if (byte + 8 <= kBytes) {
            v = get_u64(in + byte);
        } else {
            v = 0;
            for (int k = 0; byte + k < kBytes; k++) v |= static_cast<uint64_t>(in[byte + k]) << (8 * k);
        }
        out[i] = static_cast<uint32_t>((v >> (bit & 7)) & mask);
    }
}

template <int W>
TERSE_HD inline void pack32(const uint32_t *in, uint8_t *out) {
    static_assert(W >= 1 && W <= 32, "width");
    constexpr uint64_t mask = (W == 32) ? 0xffffffffull : ((1ull << W) - 1);
    uint64_t acc = 0;
    int nbits = 0, j = 0;
    TERSE_UNROLL32
    for (int i = 0; i < 32; i++) {
        acc |= (static_cast<uint64_t>(in[i]) & mask) << nbits;
        nbits += W;
        if (nbits >= 32) {
            put_u32(out + 4 * j, static_cast<uint32_t>(acc));
            j++;
            acc >>= 32;
            nbits -= 32;
        }
    }
}

using Unpack32Fn = void (*)(const uint8_t *, uint32_t *);
using Pack32Fn = void (*)(const uint32_t *, uint8_t *);

namespace detail {
template <size_t... I>
inline const Unpack32Fn *make_unpack_table(std::index_sequence<I...>) {
    static const Unpack32Fn t[] = {nullptr, &unpack32<static_cast<int>(I) + 1>...};
    return t;
}
template <size_t... I>
inline const Pack32Fn *make_pack_table(std::index_sequence<I...>) {
    static const Pack32Fn t[] = {nullptr, &pack32<static_cast<int>(I) + 1>...};
    return t;
}
}  // namespace detail

// Tables indexed by width (1..32; entry 0 is null).  Host side.
inline const Unpack32Fn *unpack32_table() { return detail::make_unpack_table(std::make_index_sequence<32>()); }
inline const Pack32Fn *pack32_table() { return detail::make_pack_table(std::make_index_sequence<32>()); }

// Unpack fields [first, first + n) where first is a multiple of 32; n <= 32.
// Reads only bytes inside the stream of `total` fields.
TERSE_HD inline void unpack_group(const Unpack32Fn fn, int width, const uint8_t *stream, size_t total,
                                  size_t first, size_t n, uint32_t *out) {
    const uint8_t *g = stream + first / 8 * static_cast<size_t>(width);
    if (n == 32) {
        fn(g, out);
        return;
    }
    uint8_t tmp[128] = {0};
    const size_t have = packed_bytes(total, width) - first / 8 * static_cast<size_t>(width);
    for (size_t i = 0; i < have && i < 4u * static_cast<unsigned>(width); i++) tmp[i] = g[i];
    fn(tmp, out);
}

// Pack n <= 32 fields as the group starting at field `first` (a multiple of
// 32); a short last group writes only its ceil(n*W/8) bytes (padding zero).
TERSE_HD inline void pack_group(const Pack32Fn fn, int width, const uint32_t *in, size_t n, size_t first,
                                uint8_t *stream) {
    uint8_t *g = stream + first / 8 * static_cast<size_t>(width);
    if (n == 32) {
        fn(in, g);
        return;
    }
    uint32_t vals[32] = {0};
    for (size_t i = 0; i < n; i++) vals[i] = in[i];
    uint8_t tmp[128];
    fn(vals, tmp);
    const size_t bytes = packed_bytes(n, width);
    for (size_t i = 0; i < bytes; i++) g[i] = tmp[i];
}

}  // namespace terse_codec
