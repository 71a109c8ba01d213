// Compact coding of the kept indices (strictly increasing, < count <= 2^32-1)
// as gaps g[i] = idx[i] - idx[i-1] - 1 with idx[-1] = -1.  Two codings, and
// the encoder keeps whichever is smaller for the chunk at hand:
//  - varint: LEB128, 1 byte for gaps < 128; adapts to clustered indices.
//  - bitpacked: groups of 32 gaps, each group a width byte w then 32*w bits
//    (the last group holds the remainder); cheap to decode and at most
//    ~w bits per gap when gaps are evenly spread.
// Decoders never trust a length: every read is checked against the section
// end and every index against count.
#pragma once

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse_topk {

constexpr size_t kGroup = 32;

// Exact sizes of the index section for the given indices.
size_t varint_size(const uint32_t *idx, size_t k);
size_t bitpacked_size(const uint32_t *idx, size_t k);

// Write the section (size as returned above) to out.  Returns bytes written.
size_t varint_write(const uint32_t *idx, size_t k, uint8_t *out);
size_t bitpacked_write(const uint32_t *idx, size_t k, uint8_t *out);

// Decode k indices from exactly len bytes, calling sink(j, index) for each
// in order.  Returns false (having possibly called sink for a prefix) if the
// section is malformed: a read past len, unused trailing bytes, a width over
// 32, an index >= count.  Callers validate first with a no-op sink when the
// side effects of a prefix are not acceptable.
template <typename Sink>
TERSE_HD bool varint_read(const uint8_t *in, size_t len, size_t k, uint64_t count, Sink &&sink) {
    size_t pos = 0;
    uint64_t next = 0;  // smallest index the next gap may give
    for (size_t j = 0; j < k; j++) {
        uint64_t gap = 0;
        unsigned shift = 0;
        for (;;) {
            if (pos >= len || shift > 28) return false;  // truncated, or gap >= 2^35
            const uint8_t b = in[pos++];
            gap |= uint64_t(b & 0x7fu) << shift;
            if (!(b & 0x80u)) break;
            shift += 7;
        }
        const uint64_t index = next + gap;
        if (index >= count) return false;
        sink(j, uint32_t(index));
        next = index + 1;
    }
    return pos == len;
}

template <typename Sink>
TERSE_HD bool bitpacked_read(const uint8_t *in, size_t len, size_t k, uint64_t count, Sink &&sink) {
    size_t pos = 0;
    uint64_t next = 0;
    for (size_t g = 0; g < k; g += kGroup) {
        const size_t n = k - g < kGroup ? k - g : kGroup;
        if (pos >= len) return false;
        const unsigned w = in[pos++];
        if (w > 32) return false;
        const size_t bytes = (n * w + 7) / 8;
        if (bytes > len - pos) return false;
        const uint8_t *p = in + pos;
        uint64_t buf = 0;  // bits not yet consumed, LSB first
        unsigned have = 0;
        size_t byte = 0;
        const uint64_t mask = w == 0 ? 0 : (~uint64_t(0) >> (64 - w));
        for (size_t j = 0; j < n; j++) {
            while (have < w) {
                buf |= uint64_t(p[byte++]) << have;
                have += 8;
            }
            const uint64_t gap = buf & mask;
            buf >>= w;
            have -= w;
            const uint64_t index = next + gap;
            if (index >= count) return false;
            sink(g + j, uint32_t(index));
            next = index + 1;
        }
        pos += bytes;
    }
    return pos == len;
}

}  // namespace terse_topk
