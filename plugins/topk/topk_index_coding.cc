#include "topk_index_coding.h"

namespace terse_topk {
namespace {

inline uint32_t gap_at(const uint32_t *idx, size_t j) { return j == 0 ? idx[0] : idx[j] - idx[j - 1] - 1; }

inline unsigned bit_width(uint32_t v) { return v == 0 ? 0 : 32u - unsigned(__builtin_clz(v)); }

inline unsigned group_width(const uint32_t *idx, size_t g, size_t n) {
    uint32_t all = 0;
    for (size_t j = 0; j < n; j++) all |= gap_at(idx, g + j);
    return bit_width(all);
}

}  // namespace

size_t varint_size(const uint32_t *idx, size_t k) {
    size_t bytes = 0;
    for (size_t j = 0; j < k; j++) {
        const uint32_t gap = gap_at(idx, j);
        bytes += 1 + (gap >= (1u << 7)) + (gap >= (1u << 14)) + (gap >= (1u << 21)) + (gap >= (1u << 28));
    }
    return bytes;
}

size_t varint_write(const uint32_t *idx, size_t k, uint8_t *out) {
    uint8_t *p = out;
    for (size_t j = 0; j < k; j++) {
        uint32_t gap = gap_at(idx, j);
        while (gap >= 0x80u) {
            *p++ = uint8_t(gap | 0x80u);
            gap >>= 7;
        }
        *p++ = uint8_t(gap);
    }
    return size_t(p - out);
}

size_t bitpacked_size(const uint32_t *idx, size_t k) {
    size_t bytes = 0;
    for (size_t g = 0; g < k; g += kGroup) {
        const size_t n = k - g < kGroup ? k - g : kGroup;
        bytes += 1 + (n * group_width(idx, g, n) + 7) / 8;
    }
    return bytes;
}

size_t bitpacked_write(const uint32_t *idx, size_t k, uint8_t *out) {
    uint8_t *p = out;
    for (size_t g = 0; g < k; g += kGroup) {
        const size_t n = k - g < kGroup ? k - g : kGroup;
        const unsigned w = group_width(idx, g, n);
        *p++ = uint8_t(w);
        uint64_t buf = 0;
        unsigned have = 0;
        for (size_t j = 0; j < n; j++) {
            buf |= uint64_t(gap_at(idx, g + j)) << have;
            have += w;
            while (have >= 8) {
                *p++ = uint8_t(buf);
                buf >>= 8;
                have -= 8;
            }
        }
        if (have) *p++ = uint8_t(buf);
    }
    return size_t(p - out);
}

}  // namespace terse_topk
