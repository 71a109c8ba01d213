#include "codec/crc32c.h"

#include "codec/frame.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define TERSE_CRC_X86 1
#endif

namespace terse {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // Castagnoli, bit-reflected

using Table = std::array<std::array<uint32_t, 256>, 8>;

// Slicing-by-8 tables: t[k][b] is the register after byte b followed by k
// zero bytes, so eight input bytes are folded with eight lookups.
constexpr Table make_tables() {
    Table t{};
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int b = 0; b < 8; b++) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
        t[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t i = 0; i < 256; i++) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xffu];
    return t;
}

constexpr Table kTables = make_tables();

inline uint32_t load32(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Raw register update (no pre/post inversion).
uint32_t sw_update(uint32_t s, const uint8_t *p, size_t n) {
    const auto &t = kTables;
    while (n && (reinterpret_cast<uintptr_t>(p) & 7u)) {
        s = (s >> 8) ^ t[0][(s ^ *p++) & 0xffu];
        n--;
    }
    while (n >= 8) {
        uint32_t lo = load32(p) ^ s;
        uint32_t hi = load32(p + 4);
        s = t[7][lo & 0xffu] ^ t[6][(lo >> 8) & 0xffu] ^ t[5][(lo >> 16) & 0xffu] ^ t[4][lo >> 24] ^
            t[3][hi & 0xffu] ^ t[2][(hi >> 8) & 0xffu] ^ t[1][(hi >> 16) & 0xffu] ^ t[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) s = (s >> 8) ^ t[0][(s ^ *p++) & 0xffu];
    return s;
}

#ifdef TERSE_CRC_X86

// The CRC register is linear over GF(2): running a block B from state s
// gives Z_|B|(s) ^ crc_raw(B) where Z_n advances s over n zero bytes.  So
// three blocks can be run as independent streams (hiding the 3-cycle
// latency of the crc32 instruction) and joined with Z.  Z_n for a fixed n
// is a 32x32 bit matrix, applied here as four 256-entry byte tables.
struct ZeroShift {
    std::array<std::array<uint32_t, 256>, 4> t;

    explicit ZeroShift(size_t nbytes) {
        uint32_t col[32];
        for (int i = 0; i < 32; i++) {
            uint32_t s = 1u << i;
            for (size_t k = 0; k < nbytes; k++) s = (s >> 8) ^ kTables[0][s & 0xffu];
            col[i] = s;
        }
        for (int k = 0; k < 4; k++)
            for (uint32_t v = 0; v < 256; v++) {
                uint32_t r = 0;
                for (int b = 0; b < 8; b++)
                    if (v & (1u << b)) r ^= col[8 * k + b];
                t[k][v] = r;
            }
    }

    uint32_t operator()(uint32_t s) const {
        return t[0][s & 0xffu] ^ t[1][(s >> 8) & 0xffu] ^ t[2][(s >> 16) & 0xffu] ^ t[3][s >> 24];
    }
};

constexpr size_t kLongBlock = 8192;  // per stream; 24 KiB per round
constexpr size_t kShortBlock = 256;  // per stream; 768 B per round

const ZeroShift &long_shift() {
    static const ZeroShift z(kLongBlock);
    return z;
}

const ZeroShift &short_shift() {
    static const ZeroShift z(kShortBlock);
    return z;
}

template <size_t Block>
__attribute__((target("sse4.2"))) inline uint32_t hw_three_way(uint32_t s, const uint8_t *p, const ZeroShift &z) {
    uint64_t a = s, b = 0, c = 0;
    const uint8_t *pb = p + Block;
    const uint8_t *pc = p + 2 * Block;
    for (size_t i = 0; i < Block; i += 8) {
        a = _mm_crc32_u64(a, load64(p + i));
        b = _mm_crc32_u64(b, load64(pb + i));
        c = _mm_crc32_u64(c, load64(pc + i));
    }
    uint32_t r = z(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b);
    return z(r) ^ static_cast<uint32_t>(c);
}

__attribute__((target("sse4.2"))) uint32_t hw_update(uint32_t s, const uint8_t *p, size_t n) {
    while (n && (reinterpret_cast<uintptr_t>(p) & 7u)) {
        s = _mm_crc32_u8(s, *p++);
        n--;
    }
    if (n >= 3 * kLongBlock) {
        const ZeroShift &z = long_shift();
        do {
            s = hw_three_way<kLongBlock>(s, p, z);
            p += 3 * kLongBlock;
            n -= 3 * kLongBlock;
        } while (n >= 3 * kLongBlock);
    }
    if (n >= 3 * kShortBlock) {
        const ZeroShift &z = short_shift();
        do {
            s = hw_three_way<kShortBlock>(s, p, z);
            p += 3 * kShortBlock;
            n -= 3 * kShortBlock;
        } while (n >= 3 * kShortBlock);
    }
    uint64_t s64 = s;
    while (n >= 8) {
        s64 = _mm_crc32_u64(s64, load64(p));
        p += 8;
        n -= 8;
    }
    s = static_cast<uint32_t>(s64);
    while (n--) s = _mm_crc32_u8(s, *p++);
    return s;
}

bool detect_hw() { return __builtin_cpu_supports("sse4.2"); }

#endif  // TERSE_CRC_X86

}  // namespace

uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len) {
    return ~sw_update(~crc, static_cast<const uint8_t *>(data), len);
}

bool crc32c_hw_available() {
#ifdef TERSE_CRC_X86
    static const bool hw = detect_hw();
    return hw;
#else
    return false;
#endif
}

uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len) {
#ifdef TERSE_CRC_X86
    return ~hw_update(~crc, static_cast<const uint8_t *>(data), len);
#else
    return crc32c_sw(crc, data, len);
#endif
}

uint32_t crc32c(uint32_t crc, const void *data, size_t len) {
    return crc32c_hw_available() ? crc32c_hw(crc, data, len) : crc32c_sw(crc, data, len);
}

}  // namespace terse
