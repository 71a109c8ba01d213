// The AVX-512 code path (F, BW, DQ, VL).  Every function that uses the
// instructions carries the target attribute, so this file builds with the
// baseline flags and is only entered where isa_available(Isa::Avx512).
// It must write exactly the bits of the scalar reference (quantize_kernels.h).
#include "quantize_kernels.h"

#if defined(__x86_64__)
#include "../common/simd_avx512.h"

#define TQ_TARGET TERSE_AVX512_TARGET
#define TQ_INLINE TERSE_AVX512_INLINE

namespace terse_quantize {
namespace {

using namespace terse_codec::avx512;
// ---------------------------------------------------------------- counter hash, 16 lanes

TQ_INLINE __m512i mix32x16(__m512i x) {
    x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
    x = _mm512_mullo_epi32(x, _mm512_set1_epi32(static_cast<int>(terse_codec::kHashMul1)));
    x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 13));
    x = _mm512_mullo_epi32(x, _mm512_set1_epi32(static_cast<int>(terse_codec::kHashMul2)));
    x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
    return x;
}

// Uniform [0,1) draws for elements lo .. lo+15, as two vectors of 8 doubles.
TQ_INLINE void draws16(uint32_t key, uint32_t lo, __m512d *r) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(lo)), lane);
    __m512i h = _mm512_add_epi32(
        _mm512_mullo_epi32(idx, _mm512_set1_epi32(static_cast<int>(terse_codec::kHashGolden))),
        _mm512_set1_epi32(static_cast<int>(key)));
    h = _mm512_srli_epi32(mix32x16(h), 8);
    const __m512d scale = _mm512_set1_pd(0x1p-24);
    r[0] = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(h)), scale);
    r[1] = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(h, 1)), scale);
}

// Codes of 32 elements as two vectors of 16 int32 (quantize_one, vectorised).
template <int BITS, int ROUND>
TQ_INLINE void quantize32(const __m512d *d, __m512d inv, uint32_t key, uint32_t lo, __m512i *c) {
    __m256i k[4];
    __m512d r[4];
    if constexpr (ROUND == kStochastic) {
        draws16(key, lo, r);
        draws16(key, lo + 16, r + 2);
    }
    for (int i = 0; i < 4; i++) {
        if constexpr (BITS == 1 && ROUND == kNearest) {
            const __mmask8 ge = _mm512_cmp_pd_mask(d[i], _mm512_setzero_pd(), _CMP_GE_OQ);
            k[i] = _mm256_maskz_mov_epi32(ge, _mm256_set1_epi32(1));
        } else if constexpr (BITS == 1) {
            const __m512d t = _mm512_mul_pd(d[i], inv);
            const __m512d p = _mm512_mul_pd(_mm512_add_pd(t, _mm512_set1_pd(1.0)), _mm512_set1_pd(0.5));
            const __m512d f = _mm512_roundscale_pd(_mm512_add_pd(p, r[i]),
                                                   _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
            k[i] = _mm512_cvttpd_epi32(f);
        } else if constexpr (ROUND == kNearest) {
            k[i] = _mm512_cvtpd_epi32(_mm512_mul_pd(d[i], inv));  // current rounding mode, as nearbyint
        } else {
            const __m512d t = _mm512_mul_pd(d[i], inv);
            const __m512d f = _mm512_roundscale_pd(_mm512_add_pd(t, r[i]),
                                                   _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
            k[i] = _mm512_cvttpd_epi32(f);
        }
    }
    c[0] = join(k[0], k[1]);
    c[1] = join(k[2], k[3]);
    const int z = BITS >= 2 ? static_cast<int>(levels(BITS)) : 0;
    const __m512i zv = _mm512_set1_epi32(z);
    const __m512i top = _mm512_set1_epi32(static_cast<int>(code_max(BITS)));
    for (int i = 0; i < 2; i++)
        c[i] = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(c[i], zv), _mm512_setzero_si512()), top);
}

template <int W>
TQ_INLINE void pack32(const __m512i *c, uint8_t *out) {
    if constexpr (W == 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), _mm512_cvtepi32_epi16(c[0]));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + 32), _mm512_cvtepi32_epi16(c[1]));
    } else if constexpr (W == 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out), _mm512_cvtepi32_epi8(c[0]));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + 16), _mm512_cvtepi32_epi8(c[1]));
    } else if constexpr (W == 4) {
        for (int i = 0; i < 2; i++) {
            const __m512i v = _mm512_or_si512(c[i], _mm512_srli_epi64(c[i], 28));
            _mm_storel_epi64(reinterpret_cast<__m128i *>(out + 8 * i), _mm512_cvtepi64_epi8(v));
        }
    } else if constexpr (W == 2) {
        for (int i = 0; i < 2; i++) {
            const __m512i v = _mm512_or_si512(c[i], _mm512_srli_epi64(c[i], 30));  // 4 bits per qword
            const __m256i w = _mm512_cvtepi64_epi32(v);
            const __m256i y = _mm256_or_si256(w, _mm256_srli_epi64(w, 28));  // 8 bits per qword
            const uint32_t word = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm256_cvtepi64_epi8(y)));
            terse_codec::put_u32(out + 4 * i, word);
        }
    } else {
        static_assert(W == 1, "width");
        const uint32_t m0 = _mm512_test_epi32_mask(c[0], c[0]);
        const uint32_t m1 = _mm512_test_epi32_mask(c[1], c[1]);
        terse_codec::put_u32(out, m0 | (m1 << 16));
    }
}

// ---------------------------------------------------------------- decode: codes -> values

template <int W>
TQ_INLINE void unpack32v(const uint8_t *in, __m512i *s) {
    if constexpr (W == 16) {
        s[0] = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(in)));
        s[1] = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + 32)));
    } else if constexpr (W == 8) {
        s[0] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in)));
        s[1] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in + 16)));
    } else if constexpr (W == 4) {
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in));
        const __m128i m = _mm_set1_epi8(0x0f);
        const __m128i lo = _mm_and_si128(b, m);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
        s[0] = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
        s[1] = _mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi));
    } else if constexpr (W == 2) {
        const __m512i sh = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i three = _mm512_set1_epi32(3);
        for (int i = 0; i < 2; i++) {
            const __m512i w = _mm512_set1_epi32(static_cast<int>(terse_codec::get_u32(in + 4 * i)));
            s[i] = _mm512_and_si512(_mm512_srlv_epi32(w, sh), three);
        }
    } else if constexpr (W == 1) {
        const uint32_t m = terse_codec::get_u32(in);
        const __m512i one = _mm512_set1_epi32(1);
        s[0] = _mm512_maskz_mov_epi32(static_cast<__mmask16>(m), one);
        s[1] = _mm512_maskz_mov_epi32(static_cast<__mmask16>(m >> 16), one);
    } else {  // any other width: the scalar unpacker
        alignas(64) uint32_t tmp[32];
        terse_codec::unpack32<W>(in, tmp);
        s[0] = _mm512_load_si512(tmp);
        s[1] = _mm512_load_si512(tmp + 16);
    }
}

template <typename T, int W>
TQ_TARGET bool decode_run(const uint8_t *in, size_t groups, uint32_t mul, uint32_t zoff, uint32_t smax, double u,
                          T *dst, bool acc) {
    const __m512d uv = _mm512_set1_pd(u);
    const __m512i zv = _mm512_set1_epi32(static_cast<int>(zoff));
    __m512i hi = _mm512_setzero_si512();
    for (size_t g = 0; g < groups; g++) {
        __m512i s[2];
        unpack32v<W>(in + 4 * W * g, s);
        for (int i = 0; i < 2; i++) {
            hi = _mm512_max_epu32(hi, s[i]);
            const __m512i k = _mm512_sub_epi32(mul == 2 ? _mm512_slli_epi32(s[i], 1) : s[i], zv);
            store_scaled16<T>(dst + 32 * g + 16 * i, k, uv, acc);
        }
    }
    return _mm512_reduce_max_epu32(hi) <= smax;
}

// Planes of 32 byte-sized codes (two vectors of 16 int32, each < 256): 8
// words at out, two planes per movemask.
TQ_INLINE void byte_planes8(__m512i s0, __m512i s1, uint32_t *out) {
    const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(s0)),
                                              _mm512_cvtepi32_epi8(s1), 1);
    const __m512i bb = _mm512_inserti64x4(_mm512_castsi256_si512(b), b, 1);
    for (int j = 0; j < 8; j += 2) {
        const __m512i sh = _mm512_sllv_epi16(bb,
                                             _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(7 - j)),
                                                                _mm256_set1_epi16(static_cast<short>(6 - j)), 1));
        const uint64_t two = _mm512_movepi8_mask(sh);  // plane j low, plane j + 1 high
        __builtin_memcpy(out + j, &two, 8);
    }
}

template <int W>
TQ_TARGET void to_planes_w(const uint8_t *codes, size_t groups, uint32_t *out) {
    for (size_t g = 0; g < groups; g++) {
        __m512i s[2];
        unpack32v<W>(codes + 4 * W * g, s);
        uint32_t *o = out + static_cast<size_t>(W) * g;
        if constexpr (W == 16) {
            byte_planes8(s[0], s[1], o);
            byte_planes8(_mm512_srli_epi32(s[0], 8), _mm512_srli_epi32(s[1], 8), o + 8);
        } else {
            byte_planes8(s[0], s[1], o);  // writes 8 words; the caller has slack
        }
    }
}

// Planes 0..W-1 of 64 byte-sized codes (two groups, each code < 2^W) to
// the groups' words at g0 and g1 (g1 may be null): plane j of the group at
// g0 in the low half of its mask, of the one at g1 in the high half.
template <int W>
TQ_INLINE void store_byte_planes2(__m512i s, uint8_t *g0, uint8_t *g1) {
    for (int j = 0; j < W; j++) {
        const uint64_t m = _mm512_movepi8_mask(_mm512_sll_epi16(s, _mm_cvtsi32_si128(7 - j)));
        terse_codec::put_u32(g0 + 4 * j, static_cast<uint32_t>(m));
        if (g1) terse_codec::put_u32(g1 + 4 * j, static_cast<uint32_t>(m >> 32));
    }
}

// The 9 planes of two groups' sums of bytes: the low 8 of the byte sums,
// the ninth the add's carry.
TQ_INLINE void store_sum_planes(__m512i sum, uint64_t carry, uint8_t *g0, uint8_t *g1) {
    store_byte_planes2<8>(sum, g0, g1);
    terse_codec::put_u32(g0 + 32, static_cast<uint32_t>(carry));
    if (g1) terse_codec::put_u32(g1 + 32, static_cast<uint32_t>(carry >> 32));
}

struct Avx512Body {
    // Two groups a step: the sums' low 8 bits are a byte add, their ninth
    // the add's carry (the sum below either term).
    TQ_TARGET static uint32_t add_bytes_to_planes(const uint8_t *a, const uint8_t *b, uint32_t cmax,
                                                  size_t groups, uint8_t *out) {
        const __m512i vmax = _mm512_set1_epi8(static_cast<char>(cmax));
        __mmask64 bad = 0;
        size_t g = 0;
        for (; g + 2 <= groups; g += 2) {
            const __m512i x = _mm512_loadu_si512(a + 32 * g), y = _mm512_loadu_si512(b + 32 * g);
            bad |= _mm512_cmpgt_epu8_mask(x, vmax) | _mm512_cmpgt_epu8_mask(y, vmax);
            const __m512i sum = _mm512_add_epi8(x, y);
            store_sum_planes(sum, _mm512_cmplt_epu8_mask(sum, x), out + 36 * g, out + 36 * (g + 1));
        }
        if (g < groups) {  // the last full group alone: its 32 bytes, the rest zero
            const __mmask64 lo = 0xffffffffull;
            const __m512i x = _mm512_maskz_loadu_epi8(lo, a + 32 * g),
                          y = _mm512_maskz_loadu_epi8(lo, b + 32 * g);
            bad |= _mm512_cmpgt_epu8_mask(x, vmax) | _mm512_cmpgt_epu8_mask(y, vmax);
            const __m512i sum = _mm512_add_epi8(x, y);
            store_sum_planes(sum, _mm512_cmplt_epu8_mask(sum, x), out + 36 * g, nullptr);
        }
        return bad != 0;
    }

    // Four groups (64 bytes) a step.  Each byte holds two codes, the even
    // one low; the nibbles' sums (< 32) are bytes, put back in code order
    // per group: unpacking interleaves even and odd within each 128-bit lane
    // (a group), and a permute puts each group's two halves side by side.
    TQ_TARGET static uint32_t add_nibbles_to_planes(const uint8_t *a, const uint8_t *b, uint32_t cmax,
                                                    size_t groups, uint8_t *out) {
        const __m512i vmax = _mm512_set1_epi8(static_cast<char>(cmax)), low = _mm512_set1_epi8(0x0f);
        const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
        const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
        __mmask64 bad = 0;
        for (size_t g = 0; g < groups; g += 4) {
            const size_t n = groups - g < 4 ? groups - g : 4;
            const __mmask64 k = n == 4 ? ~0ull : (1ull << (16 * n)) - 1;  // bytes beyond are zero codes
            const __m512i x = _mm512_maskz_loadu_epi8(k, a + 16 * g), y = _mm512_maskz_loadu_epi8(k, b + 16 * g);
            const __m512i xl = _mm512_and_si512(x, low), xh = _mm512_and_si512(_mm512_srli_epi16(x, 4), low);
            const __m512i yl = _mm512_and_si512(y, low), yh = _mm512_and_si512(_mm512_srli_epi16(y, 4), low);
            bad |= _mm512_cmpgt_epu8_mask(xl, vmax) | _mm512_cmpgt_epu8_mask(xh, vmax) |
                   _mm512_cmpgt_epu8_mask(yl, vmax) | _mm512_cmpgt_epu8_mask(yh, vmax);
            const __m512i sl = _mm512_add_epi8(xl, yl), sh = _mm512_add_epi8(xh, yh);
            const __m512i u0 = _mm512_unpacklo_epi8(sl, sh), u1 = _mm512_unpackhi_epi8(sl, sh);
            uint8_t *o = out + 20 * g;
            store_byte_planes2<5>(_mm512_permutex2var_epi64(u0, first, u1), o, n > 1 ? o + 20 : nullptr);
            if (n > 2)
                store_byte_planes2<5>(_mm512_permutex2var_epi64(u0, second, u1), o + 40,
                                      n > 3 ? o + 60 : nullptr);
        }
        return bad != 0;
    }

    TQ_TARGET static void to_planes(const uint8_t *codes, int bits, size_t groups, uint32_t *out) {
        switch (bits) {
        case 1:  // one plane: the packed bits themselves
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
        const __m512d uv = _mm512_set1_pd(u);
        const __m512i zv = _mm512_set1_epi32(static_cast<int>(zoff));
        __m512i hi = _mm512_setzero_si512();
        for (size_t g = 0; g < groups; g++) {
            const uint8_t *p = in + 4 * static_cast<size_t>(width) * g;
            __m512i z0 = _mm512_setzero_si512(), z1 = _mm512_setzero_si512();
            __m512i bit = _mm512_set1_epi32(1);
            for (int j = 0; j < width; j++) {
                const uint32_t w = terse_codec::get_u32(p + 4 * j);
                z0 = _mm512_mask_or_epi32(z0, static_cast<__mmask16>(w), z0, bit);
                z1 = _mm512_mask_or_epi32(z1, static_cast<__mmask16>(w >> 16), z1, bit);
                bit = _mm512_slli_epi32(bit, 1);
            }
            hi = _mm512_max_epu32(hi, _mm512_max_epu32(z0, z1));
            const __m512i k0 = _mm512_sub_epi32(mul == 2 ? _mm512_slli_epi32(z0, 1) : z0, zv);
            const __m512i k1 = _mm512_sub_epi32(mul == 2 ? _mm512_slli_epi32(z1, 1) : z1, zv);
            store_scaled16<T>(dst + 32 * g, k0, uv, acc);
            store_scaled16<T>(dst + 32 * g + 16, k1, uv, acc);
        }
        return _mm512_reduce_max_epu32(hi) <= smax;
    }

    template <typename T, int BITS, int ROUND>
    TQ_TARGET static bool encode_groups(const T *x, size_t groups, double m, double inv, uint32_t key,
                                        uint32_t lo, uint8_t *out) {
        const __m512d mv = _mm512_set1_pd(m);
        const __m512d iv = _mm512_set1_pd(inv);
        __mmask8 bad = 0;
        for (size_t g = 0; g < groups; g++) {
            __m512d d[4];
            load32(x + 32 * g, d);
            for (int i = 0; i < 4; i++) bad |= _mm512_cmp_pd_mask(_mm512_abs_pd(d[i]), mv, _CMP_NLE_UQ);
            __m512i c[2];
            quantize32<BITS, ROUND>(d, iv, key, lo + static_cast<uint32_t>(32 * g), c);
            pack32<BITS>(c, out + 4 * BITS * g);
        }
        return bad == 0;
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
        __m512d acc = _mm512_loadu_pd(lanes8);
        size_t i = 0;
        for (; i + 32 <= n; i += 32) {
            __m512d d[4];
            load32(x + i, d);
            for (int k = 0; k < 4; k++) acc = _mm512_add_pd(acc, _mm512_abs_pd(d[k]));
        }
        _mm512_storeu_pd(lanes8, acc);
        return i;
    }

    template <typename T>
    TQ_TARGET static uint64_t block_max_bits(const T *x, size_t n) {
        size_t i = 0;
        uint64_t m = 0;
        if constexpr (sizeof(T) == 8) {
            __m512i acc = _mm512_setzero_si512();
            const __m512i mask = _mm512_set1_epi64(0x7fffffffffffffffll);
            for (; i + 8 <= n; i += 8)
                acc = _mm512_max_epu64(acc, _mm512_and_si512(_mm512_loadu_si512(x + i), mask));
            m = _mm512_reduce_max_epu64(acc);
        } else if constexpr (sizeof(T) == 4) {
            __m512i acc = _mm512_setzero_si512();
            const __m512i mask = _mm512_set1_epi32(0x7fffffff);
            for (; i + 16 <= n; i += 16)
                acc = _mm512_max_epu32(acc, _mm512_and_si512(_mm512_loadu_si512(x + i), mask));
            m = _mm512_reduce_max_epu32(acc);
        } else {
            __m512i acc = _mm512_setzero_si512();
            const __m512i mask = _mm512_set1_epi16(0x7fff);
            for (; i + 32 <= n; i += 32)
                acc = _mm512_max_epu16(acc, _mm512_and_si512(_mm512_loadu_si512(x + i), mask));
            const __m512i wide = _mm512_max_epu32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(acc)),
                                                  _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(acc, 1)));
            m = _mm512_reduce_max_epu32(wide);
        }
        const uint64_t t = max_abs_bits_ref<T>(x + i, n - i);
        return t > m ? t : m;
    }
};

}  // namespace

const Kernels &kernels_avx512() {
    static const Kernels k = make_kernels<Avx512Body>();
    return k;
}

}  // namespace terse_quantize

#else
namespace terse_quantize {
const Kernels &kernels_avx512() { return kernels_scalar(); }
}  // namespace terse_quantize
#endif
