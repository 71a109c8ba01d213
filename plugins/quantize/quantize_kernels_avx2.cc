// The AVX2 code path (with F16C and BMI2).  Every function that uses the
// instructions carries the target attribute, so this file builds with the
// baseline flags and is only entered where isa_available(Isa::Avx2).
// It must write exactly the bits of the scalar reference (quantize_kernels.h).
#include "quantize_kernels.h"

#if defined(__x86_64__)
#include "../common/simd_avx2.h"

#define TQ_TARGET TERSE_AVX2_TARGET
#define TQ_INLINE TERSE_AVX2_INLINE

namespace terse_quantize {
namespace {

using namespace terse_codec::avx2;
// ---------------------------------------------------------------- counter hash, 8 lanes

TQ_INLINE __m256i mix32x8(__m256i x) {
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(terse_codec::kHashMul1)));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 13));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(terse_codec::kHashMul2)));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
    return x;
}

TQ_INLINE void draws8(uint32_t key, uint32_t lo, __m256d *r) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(lo)), lane);
    __m256i h = _mm256_add_epi32(
        _mm256_mullo_epi32(idx, _mm256_set1_epi32(static_cast<int>(terse_codec::kHashGolden))),
        _mm256_set1_epi32(static_cast<int>(key)));
    h = _mm256_srli_epi32(mix32x8(h), 8);
    const __m256d scale = _mm256_set1_pd(0x1p-24);
    r[0] = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(h)), scale);
    r[1] = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(h, 1)), scale);
}

// Codes of 32 elements as four vectors of 8 int32.
template <int BITS, int ROUND>
TQ_INLINE void quantize32(const __m256d *d, __m256d inv, uint32_t key, uint32_t lo, __m256i *c) {
    __m128i k[8];
    __m256d r[8];
    if constexpr (ROUND == kStochastic)
        for (int i = 0; i < 4; i++) draws8(key, lo + 8 * i, r + 2 * i);
    for (int i = 0; i < 8; i++) {
        if constexpr (BITS == 1 && ROUND == kNearest) {
            const __m256d ge = _mm256_cmp_pd(d[i], _mm256_setzero_pd(), _CMP_GE_OQ);
            const __m128i m = _mm256_cvtpd_epi32(_mm256_and_pd(ge, _mm256_set1_pd(1.0)));
            k[i] = m;
        } else if constexpr (BITS == 1) {
            const __m256d t = _mm256_mul_pd(d[i], inv);
            const __m256d p = _mm256_mul_pd(_mm256_add_pd(t, _mm256_set1_pd(1.0)), _mm256_set1_pd(0.5));
            k[i] = _mm256_cvttpd_epi32(
                _mm256_round_pd(_mm256_add_pd(p, r[i]), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
        } else if constexpr (ROUND == kNearest) {
            k[i] = _mm256_cvtpd_epi32(_mm256_mul_pd(d[i], inv));  // current rounding mode, as nearbyint
        } else {
            const __m256d t = _mm256_mul_pd(d[i], inv);
            k[i] = _mm256_cvttpd_epi32(
                _mm256_round_pd(_mm256_add_pd(t, r[i]), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
        }
    }
    const int z = BITS >= 2 ? static_cast<int>(levels(BITS)) : 0;
    const __m256i zv = _mm256_set1_epi32(z);
    const __m256i top = _mm256_set1_epi32(static_cast<int>(code_max(BITS)));
    for (int i = 0; i < 4; i++) {
        const __m256i v = _mm256_set_m128i(k[2 * i + 1], k[2 * i]);
        c[i] = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v, zv), _mm256_setzero_si256()), top);
    }
}

// 32 codes (each < 256) as bytes, in order.
TQ_INLINE __m256i codes_to_bytes(const __m256i *c) {
    const __m256i p01 = _mm256_packus_epi32(c[0], c[1]);
    const __m256i p23 = _mm256_packus_epi32(c[2], c[3]);
    const __m256i b = _mm256_packus_epi16(p01, p23);
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <int W>
TQ_INLINE void pack32(const __m256i *c, uint8_t *out) {
    if constexpr (W == 16) {
        for (int i = 0; i < 2; i++) {
            const __m256i p = _mm256_packus_epi32(c[2 * i], c[2 * i + 1]);
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + 32 * i), _mm256_permute4x64_epi64(p, 0xd8));
        }
    } else if constexpr (W == 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), codes_to_bytes(c));
    } else if constexpr (W == 4) {
        const __m256i b = codes_to_bytes(c);
        const __m256i y = _mm256_and_si256(_mm256_or_si256(b, _mm256_srli_epi16(b, 4)), _mm256_set1_epi16(0xff));
        const __m256i z = _mm256_permute4x64_epi64(_mm256_packus_epi16(y, y), 0x08);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out), _mm256_castsi256_si128(z));
    } else if constexpr (W == 2) {
        const __m256i b = codes_to_bytes(c);
        const __m256i y = _mm256_or_si256(b, _mm256_srli_epi32(b, 6));
        const __m256i z = _mm256_or_si256(_mm256_and_si256(y, _mm256_set1_epi32(0x0f)),
                                          _mm256_and_si256(_mm256_srli_epi32(y, 12), _mm256_set1_epi32(0xf0)));
        const __m256i s = _mm256_shuffle_epi8(
            z, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1, -1,
                                -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
        terse_codec::put_u32(out, static_cast<uint32_t>(_mm256_extract_epi32(s, 0)));
        terse_codec::put_u32(out + 4, static_cast<uint32_t>(_mm256_extract_epi32(s, 4)));
    } else {
        static_assert(W == 1, "width");
        const __m256i b = codes_to_bytes(c);
        terse_codec::put_u32(out, static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_slli_epi16(b, 7))));
    }
}

// ---------------------------------------------------------------- decode: codes -> values

template <int W>
TQ_INLINE void unpack32v(const uint8_t *in, __m256i *s) {
    if constexpr (W == 16) {
        for (int i = 0; i < 4; i++)
            s[i] = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in + 16 * i)));
    } else if constexpr (W == 8) {
        for (int i = 0; i < 4; i++)
            s[i] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(in + 8 * i)));
    } else if constexpr (W == 4) {
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in));
        const __m128i m = _mm_set1_epi8(0x0f);
        const __m128i lo = _mm_and_si128(b, m);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
        const __m128i x0 = _mm_unpacklo_epi8(lo, hi), x1 = _mm_unpackhi_epi8(lo, hi);
        s[0] = _mm256_cvtepu8_epi32(x0);
        s[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(x0, 8));
        s[2] = _mm256_cvtepu8_epi32(x1);
        s[3] = _mm256_cvtepu8_epi32(_mm_srli_si128(x1, 8));
    } else if constexpr (W == 2) {
        const __m256i sh0 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
        const __m256i sh1 = _mm256_setr_epi32(16, 18, 20, 22, 24, 26, 28, 30);
        const __m256i three = _mm256_set1_epi32(3);
        for (int i = 0; i < 2; i++) {
            const __m256i w = _mm256_set1_epi32(static_cast<int>(terse_codec::get_u32(in + 4 * i)));
            s[2 * i] = _mm256_and_si256(_mm256_srlv_epi32(w, sh0), three);
            s[2 * i + 1] = _mm256_and_si256(_mm256_srlv_epi32(w, sh1), three);
        }
    } else if constexpr (W == 1) {
        const __m256i w = _mm256_set1_epi32(static_cast<int>(terse_codec::get_u32(in)));
        const __m256i one = _mm256_set1_epi32(1);
        for (int i = 0; i < 4; i++) {
            const __m256i sh = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                _mm256_set1_epi32(8 * i));
            s[i] = _mm256_and_si256(_mm256_srlv_epi32(w, sh), one);
        }
    } else {
        alignas(32) uint32_t tmp[32];
        terse_codec::unpack32<W>(in, tmp);
        for (int i = 0; i < 4; i++) s[i] = _mm256_load_si256(reinterpret_cast<const __m256i *>(tmp + 8 * i));
    }
}

template <typename T, int W>
TQ_TARGET bool decode_run(const uint8_t *in, size_t groups, uint32_t mul, uint32_t zoff, uint32_t smax, double u,
                          T *dst, bool acc) {
    const __m256d uv = _mm256_set1_pd(u);
    const __m256i zv = _mm256_set1_epi32(static_cast<int>(zoff));
    __m256i hi = _mm256_setzero_si256();
    for (size_t g = 0; g < groups; g++) {
        __m256i s[4];
        unpack32v<W>(in + 4 * W * g, s);
        for (int i = 0; i < 4; i++) {
            hi = _mm256_max_epu32(hi, s[i]);
            const __m256i k = _mm256_sub_epi32(mul == 2 ? _mm256_slli_epi32(s[i], 1) : s[i], zv);
            store_scaled8<T>(dst + 32 * g + 8 * i, k, uv, acc);
        }
    }
    return hmax_epu32(hi) <= smax;
}

// Plane j (< 8) of 32 byte-sized codes: bit i is bit j of byte i.
TQ_INLINE uint32_t byte_plane(__m256i b, int j) {
    return static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_sll_epi16(b, _mm_cvtsi32_si128(7 - j))));
}

// Planes of 32 byte-sized codes: 8 words at out.
TQ_INLINE void byte_planes8(const __m256i *c, uint32_t *out) {
    const __m256i b = codes_to_bytes(c);
    for (int j = 0; j < 8; j++) out[j] = byte_plane(b, j);
}

template <int W>
TQ_TARGET void to_planes_w(const uint8_t *codes, size_t groups, uint32_t *out) {
    for (size_t g = 0; g < groups; g++) {
        __m256i s[4];
        unpack32v<W>(codes + 4 * W * g, s);
        uint32_t *o = out + static_cast<size_t>(W) * g;
        if constexpr (W == 16) {
            const __m256i m = _mm256_set1_epi32(0xff);
            __m256i lo[4], hi[4];
            for (int i = 0; i < 4; i++) {
                lo[i] = _mm256_and_si256(s[i], m);
                hi[i] = _mm256_srli_epi32(s[i], 8);
            }
            byte_planes8(lo, o);
            byte_planes8(hi, o + 8);
        } else {
            byte_planes8(s, o);  // writes 8 words; the caller has slack
        }
    }
}

// 32 bytes, byte i = 0xff where bit i of p is set.
TQ_INLINE __m256i expand_bits(uint32_t p) {
    const __m256i v = _mm256_set1_epi32(static_cast<int>(p));
    const __m256i idx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                         3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i sel = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, idx), sel), sel);
}

// One delta swap of an 8 x 8 bit matrix in each 64-bit lane: the bits
// selected by m trade places with the bits S above them.
template <int S>
TQ_INLINE __m256i delta_swap64(__m256i v, long long m) {
    const __m256i t = _mm256_and_si256(_mm256_xor_si256(v, _mm256_srli_epi64(v, S)), _mm256_set1_epi64x(m));
    return _mm256_xor_si256(v, _mm256_xor_si256(t, _mm256_slli_epi64(t, S)));
}

// Bytes of a group's 32 codes from 8 of its planes (8 words): byte i
// holds bit i of each, the first plane's in bit 0.  Each 64-bit lane first
// gathers one byte of every plane (8 codes: an 8 x 8 bit matrix, a plane
// a row), then transposes it in three delta swaps: about 20 instructions
// where a plane at a time (planes_to_bytes) takes 7 a plane.
TQ_INLINE __m256i planes8_to_bytes(__m256i planes) {
    const __m256i by_byte = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1,
                                             5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    // Dword k of each 128-bit lane: byte k of the lane's 4 planes; then
    // qword k: byte k of all 8.
    __m256i v = _mm256_shuffle_epi8(planes, by_byte);
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    v = delta_swap64<7>(v, 0x00AA00AA00AA00AALL);
    v = delta_swap64<14>(v, 0x0000CCCC0000CCCCLL);
    return delta_swap64<28>(v, 0x00000000F0F0F0F0LL);
}

// The same from the first n (< 8) planes at p, a plane at a time.  (The
// transpose of n planes and 8 - n zero ones, read with a masked load, was
// no faster at n = 3 and 5: bits=2 and 4 on 2 ranks.)
TQ_INLINE __m256i planes_to_bytes(const uint8_t *p, int n) {
    __m256i b = _mm256_setzero_si256();
    for (int j = 0; j < n; j++)
        b = _mm256_or_si256(b, _mm256_and_si256(expand_bits(terse_codec::get_u32(p + 4 * j)),
                                                _mm256_set1_epi8(static_cast<char>(1 << j))));
    return b;
}

// Byte k (bits 8k .. 8k + 7) of a group's 32 codes, from its planes at p
// (width of them in all).
TQ_INLINE __m256i code_byte(const uint8_t *p, int width, int k) {
    const int n = width - 8 * k;
    p += 32 * k;
    if (n >= 8) return planes8_to_bytes(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return n > 0 ? planes_to_bytes(p, n) : _mm256_setzero_si256();
}

// Planes 0..W-1 of one group's 32 byte-sized codes (each < 2^W) to its
// words at out.
template <int W>
TQ_INLINE void store_byte_planes(__m256i s, uint8_t *out) {
    for (int j = 0; j < W; j++) terse_codec::put_u32(out + 4 * j, byte_plane(s, j));
}

struct Avx2Body {
    // One group a step: the sums' low 8 bits are a byte add, their ninth the
    // add's carry, the top bit of (x & y) | ((x | y) & ~sum).
    TQ_TARGET static uint32_t add_bytes_to_planes(const uint8_t *a, const uint8_t *b, uint32_t cmax,
                                                  size_t groups, uint8_t *out) {
        const __m256i vmax = _mm256_set1_epi8(static_cast<char>(cmax));
        __m256i over = _mm256_setzero_si256();
        for (size_t g = 0; g < groups; g++) {
            const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + 32 * g));
            const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 32 * g));
            // x > vmax exactly where max(x, vmax) differs from vmax
            over = _mm256_or_si256(over, _mm256_xor_si256(_mm256_max_epu8(x, vmax), vmax));
            over = _mm256_or_si256(over, _mm256_xor_si256(_mm256_max_epu8(y, vmax), vmax));
            const __m256i sum = _mm256_add_epi8(x, y);
            const __m256i carry = _mm256_or_si256(_mm256_and_si256(x, y),
                                                  _mm256_andnot_si256(sum, _mm256_or_si256(x, y)));
            uint8_t *o = out + 36 * g;
            store_byte_planes<8>(sum, o);
            terse_codec::put_u32(o + 32, static_cast<uint32_t>(_mm256_movemask_epi8(carry)));
        }
        return _mm256_testz_si256(over, over) ? 0u : 1u;
    }

    // Two groups (32 bytes) a step.  Each byte holds two codes, the even one
    // low; the nibbles' sums (< 32) are bytes, put back in code order per
    // group: unpacking interleaves even and odd within each 128-bit lane (a
    // group), and a permute puts each group's two halves side by side.
    TQ_TARGET static uint32_t add_nibbles_to_planes(const uint8_t *a, const uint8_t *b, uint32_t cmax,
                                                    size_t groups, uint8_t *out) {
        const __m256i vmax = _mm256_set1_epi8(static_cast<char>(cmax)), low = _mm256_set1_epi8(0x0f);
        __m256i over = _mm256_setzero_si256();
        for (size_t g = 0; g < groups; g += 2) {
            __m256i x, y;
            if (groups - g >= 2) {
                x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + 16 * g));
                y = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 16 * g));
            } else {  // the last group alone: the upper lane is zero codes
                x = _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(a + 16 * g)));
                y = _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b + 16 * g)));
            }
            const __m256i xl = _mm256_and_si256(x, low), xh = _mm256_and_si256(_mm256_srli_epi16(x, 4), low);
            const __m256i yl = _mm256_and_si256(y, low), yh = _mm256_and_si256(_mm256_srli_epi16(y, 4), low);
            for (__m256i v : {xl, xh, yl, yh})
                over = _mm256_or_si256(over, _mm256_xor_si256(_mm256_max_epu8(v, vmax), vmax));
            const __m256i sl = _mm256_add_epi8(xl, yl), sh = _mm256_add_epi8(xh, yh);
            const __m256i u0 = _mm256_unpacklo_epi8(sl, sh), u1 = _mm256_unpackhi_epi8(sl, sh);
            store_byte_planes<5>(_mm256_permute2x128_si256(u0, u1, 0x20), out + 20 * g);
            if (groups - g >= 2)
                store_byte_planes<5>(_mm256_permute2x128_si256(u0, u1, 0x31), out + 20 * (g + 1));
        }
        return _mm256_testz_si256(over, over) ? 0u : 1u;
    }

    TQ_TARGET static void to_planes(const uint8_t *codes, int bits, size_t groups, uint32_t *out) {
        switch (bits) {
        case 1:
            for (size_t g = 0; g < groups; g++) out[g] = terse_codec::get_u32(codes + 4 * g);
            return;
        case 2: to_planes_w<2>(codes, groups, out); return;
        case 4: to_planes_w<4>(codes, groups, out); return;
        case 8: to_planes_w<8>(codes, groups, out); return;
        default: to_planes_w<16>(codes, groups, out); return;
        }
    }

    template <typename T>
    TQ_TARGET static bool decode_plane_groups(const uint8_t *in, size_t groups, int width, uint32_t mul,
                                              uint32_t zoff, uint32_t smax, double u, T *dst, bool acc) {
        if (width > 24) return decode_plane_groups_ref<T>(in, groups, width, mul, zoff, smax, u, dst, acc);
        const __m256d uv = _mm256_set1_pd(u);
        const __m256i zv = _mm256_set1_epi32(static_cast<int>(zoff));
        __m256i hi = _mm256_setzero_si256();
        for (size_t g = 0; g < groups; g++) {
            const uint8_t *p = in + 4 * static_cast<size_t>(width) * g;
            // Byte k of every code, from planes 8k .. 8k + 7.
            const __m256i b0 = code_byte(p, width, 0), b1 = code_byte(p, width, 1);
            const __m256i lo16 = _mm256_unpacklo_epi8(b0, b1), hi16 = _mm256_unpackhi_epi8(b0, b1);
            __m256i z[4];
            z[0] = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(lo16));
            z[1] = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(hi16));
            z[2] = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(lo16, 1));
            z[3] = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(hi16, 1));
            if (width > 16) {  // the third byte of each code
                const __m256i b2 = code_byte(p, width, 2);
                const __m256i lo16c = _mm256_unpacklo_epi8(b2, _mm256_setzero_si256());
                const __m256i hi16c = _mm256_unpackhi_epi8(b2, _mm256_setzero_si256());
                z[0] = _mm256_or_si256(
                    z[0], _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(lo16c)), 16));
                z[1] = _mm256_or_si256(
                    z[1], _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(hi16c)), 16));
                z[2] = _mm256_or_si256(
                    z[2], _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(lo16c, 1)), 16));
                z[3] = _mm256_or_si256(
                    z[3], _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(hi16c, 1)), 16));
            }
            for (int i = 0; i < 4; i++) {
                hi = _mm256_max_epu32(hi, z[i]);
                const __m256i k = _mm256_sub_epi32(mul == 2 ? _mm256_slli_epi32(z[i], 1) : z[i], zv);
                store_scaled8<T>(dst + 32 * g + 8 * i, k, uv, acc);
            }
        }
        return hmax_epu32(hi) <= smax;
    }

    template <typename T, int BITS, int ROUND>
    TQ_TARGET static bool encode_groups(const T *x, size_t groups, double m, double inv, uint32_t key,
                                        uint32_t lo, uint8_t *out) {
        const __m256d mv = _mm256_set1_pd(m);
        const __m256d iv = _mm256_set1_pd(inv);
        const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
        __m256d bad = _mm256_setzero_pd();
        for (size_t g = 0; g < groups; g++) {
            __m256d d[8];
            load32(x + 32 * g, d);
            for (int i = 0; i < 8; i++)
                bad = _mm256_or_pd(bad, _mm256_cmp_pd(_mm256_and_pd(d[i], absmask), mv, _CMP_NLE_UQ));
            __m256i c[4];
            quantize32<BITS, ROUND>(d, iv, key, lo + static_cast<uint32_t>(32 * g), c);
            pack32<BITS>(c, out + 4 * BITS * g);
        }
        return _mm256_movemask_pd(bad) == 0;
    }

    template <typename T>
    TQ_TARGET static bool decode_groups(const uint8_t *in, size_t groups, int width, uint32_t mul, uint32_t zoff,
                                        uint32_t smax, double u, T *dst, bool acc) {
        switch (width) {
            // clang-format would take the case labels inside TQ_W for statements.
            // clang-format off
#define TQ_W(W) \
    case W: return decode_run<T, W>(in, groups, mul, zoff, smax, u, dst, acc);
            TQ_W(1) TQ_W(2) TQ_W(3) TQ_W(4) TQ_W(5) TQ_W(6) TQ_W(7) TQ_W(8) TQ_W(9) TQ_W(10) TQ_W(11) TQ_W(12)
            TQ_W(13) TQ_W(14) TQ_W(15) TQ_W(16) TQ_W(17) TQ_W(18) TQ_W(19) TQ_W(20) TQ_W(21) TQ_W(22) TQ_W(23)
            TQ_W(24) TQ_W(25) TQ_W(26) TQ_W(27) TQ_W(28) TQ_W(29) TQ_W(30) TQ_W(31) TQ_W(32)
#undef TQ_W
                // clang-format on
                default : return false;
        }
    }

    template <typename T>
    TQ_TARGET static size_t abs_sum_lanes(const T *x, size_t n, double *lanes8) {
        const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
        __m256d a0 = _mm256_loadu_pd(lanes8), a1 = _mm256_loadu_pd(lanes8 + 4);
        size_t i = 0;
        for (; i + 32 <= n; i += 32) {
            __m256d d[8];
            load32(x + i, d);
            for (int k = 0; k < 8; k += 2) {
                a0 = _mm256_add_pd(a0, _mm256_and_pd(d[k], absmask));
                a1 = _mm256_add_pd(a1, _mm256_and_pd(d[k + 1], absmask));
            }
        }
        _mm256_storeu_pd(lanes8, a0);
        _mm256_storeu_pd(lanes8 + 4, a1);
        return i;
    }

    template <typename T>
    TQ_TARGET static uint64_t block_max_bits(const T *x, size_t n) {
        size_t i = 0;
        uint64_t m = 0;
        alignas(32) uint64_t q[4];
        alignas(32) uint32_t d[8];
        if constexpr (sizeof(T) == 8) {
            __m256i acc = _mm256_setzero_si256();
            const __m256i mask = _mm256_set1_epi64x(0x7fffffffffffffffll);
            for (; i + 4 <= n; i += 4) {
                const __m256i v = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + i)),
                                                   mask);
                acc = _mm256_blendv_epi8(acc, v, _mm256_cmpgt_epi64(v, acc));  // both < 2^63: signed ok
            }
            _mm256_store_si256(reinterpret_cast<__m256i *>(q), acc);
            for (uint64_t v : q) m = v > m ? v : m;
        } else if constexpr (sizeof(T) == 4) {
            __m256i acc = _mm256_setzero_si256();
            const __m256i mask = _mm256_set1_epi32(0x7fffffff);
            for (; i + 8 <= n; i += 8)
                acc = _mm256_max_epu32(
                    acc, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + i)), mask));
            _mm256_store_si256(reinterpret_cast<__m256i *>(d), acc);
            for (uint32_t v : d) m = v > m ? v : m;
        } else {
            __m256i acc = _mm256_setzero_si256();
            const __m256i mask = _mm256_set1_epi16(0x7fff);
            for (; i + 16 <= n; i += 16)
                acc = _mm256_max_epu16(
                    acc, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + i)), mask));
            const __m256i wide = _mm256_max_epu32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(acc)),
                                                  _mm256_cvtepu16_epi32(_mm256_extracti128_si256(acc, 1)));
            _mm256_store_si256(reinterpret_cast<__m256i *>(d), wide);
            for (uint32_t v : d) m = v > m ? v : m;
        }
        const uint64_t t = max_abs_bits_ref<T>(x + i, n - i);
        return t > m ? t : m;
    }
};

}  // namespace

const Kernels &kernels_avx2() {
    static const Kernels k = make_kernels<Avx2Body>();
    return k;
}

}  // namespace terse_quantize

#else
namespace terse_quantize {
const Kernels &kernels_avx2() { return kernels_scalar(); }
}  // namespace terse_quantize
#endif
