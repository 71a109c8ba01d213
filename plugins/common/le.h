// Little-endian field access for payload headers (byte-wise, so it is
// correct at any alignment and on any host).
#pragma once

#include <terse/codec.h>

#include <cstdint>

namespace terse_codec {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !defined(__CUDA_ARCH__)
#define TERSE_LE_HOST 1
#endif

TERSE_HD inline void put_u16(uint8_t *p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}
TERSE_HD inline void put_u32(uint8_t *p, uint32_t v) {
#ifdef TERSE_LE_HOST
    __builtin_memcpy(p, &v, 4);
#else
    for (int i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
#endif
}
TERSE_HD inline void put_u64(uint8_t *p, uint64_t v) {
#ifdef TERSE_LE_HOST
    __builtin_memcpy(p, &v, 8);
#else
    for (int i = 0; i < 8; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
#endif
}
TERSE_HD inline uint16_t get_u16(const uint8_t *p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
TERSE_HD inline uint32_t get_u32(const uint8_t *p) {
#ifdef TERSE_LE_HOST
    uint32_t w;
    __builtin_memcpy(&w, p, 4);
    return w;
#endif
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
TERSE_HD inline uint64_t get_u64(const uint8_t *p) {
#ifdef TERSE_LE_HOST
    uint64_t w;
    __builtin_memcpy(&w, p, 8);
    return w;
#endif
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

}  // namespace terse_codec
