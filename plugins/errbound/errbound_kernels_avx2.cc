// The AVX2 code path (with F16C).  Entered only where
// isa_available(Isa::Avx2); writes exactly the bits of the scalar reference
// (errbound_kernels.h).
#include "errbound_kernels.h"

#if defined(__x86_64__)
#include "../common/simd_avx2.h"

#define TE_TARGET TERSE_AVX2_TARGET
#define TE_INLINE TERSE_AVX2_INLINE

namespace terse_errbound {
namespace {

using namespace terse_codec::avx2;

TE_INLINE __m256i zigzag8(__m256i k) {
    return _mm256_xor_si256(_mm256_slli_epi32(k, 1), _mm256_srai_epi32(k, 31));
}
TE_INLINE __m256i unzigzag8(__m256i z) {
    return _mm256_xor_si256(_mm256_srli_epi32(z, 1),
                            _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_and_si256(z, _mm256_set1_epi32(1))));
}

// 32 codes as 4 vectors of 8.
TE_INLINE int pack_planes(const __m256i *z, uint8_t *out) {
    const __m256i o = _mm256_or_si256(_mm256_or_si256(z[0], z[1]), _mm256_or_si256(z[2], z[3]));
    const __m128i o2 = _mm_or_si128(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
    const __m128i o4 = _mm_or_si128(o2, _mm_unpackhi_epi64(o2, o2));
    const uint32_t all = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_or_si128(o4, _mm_srli_epi64(o4, 32))));
    const int w = all ? 32 - __builtin_clz(all) : 0;
    if (w <= 16) {
        // Codes fit 16 bits: 8 planes per byte of the codes without a branch
        // per plane (the caller's buffer has room for 32 bytes per byte).
        const __m256i m = _mm256_set1_epi32(0xff);
        for (int half = 0; half < (w > 8 ? 2 : 1); half++) {
            __m256i y[4];
            for (int i = 0; i < 4; i++) y[i] = _mm256_and_si256(half ? _mm256_srli_epi32(z[i], 8) : z[i], m);
            const __m256i p01 = _mm256_packus_epi32(y[0], y[1]), p23 = _mm256_packus_epi32(y[2], y[3]);
            const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23),
                                                          _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            for (int j = 0; j < 8; j++) {
                const __m256i sh = _mm256_sll_epi16(b, _mm_cvtsi32_si128(7 - j));
                terse_codec::put_u32(out + 32 * half + 4 * j, static_cast<uint32_t>(_mm256_movemask_epi8(sh)));
            }
        }
        return w;
    }
    for (int j = 0; j < w; j++) {
        const __m128i sh = _mm_cvtsi32_si128(31 - j);  // bit j to the sign bit
        uint32_t p = 0;
        for (int i = 0; i < 4; i++)
            p |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_sll_epi32(z[i], sh))))
                 << (8 * i);
        terse_codec::put_u32(out + 4 * j, p);
    }
    return w;
}

TE_INLINE void unpack_planes(const uint8_t *in, int w, __m256i *z) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i one = _mm256_set1_epi32(1);
    for (int i = 0; i < 4; i++) z[i] = _mm256_setzero_si256();
    for (int j = 0; j < w; j++) {
        const __m256i p = _mm256_set1_epi32(static_cast<int>(terse_codec::get_u32(in + 4 * j)));
        const __m128i sj = _mm_cvtsi32_si128(j);
        for (int i = 0; i < 4; i++) {
            const __m256i bits = _mm256_and_si256(
                _mm256_srlv_epi32(p, _mm256_add_epi32(lane, _mm256_set1_epi32(8 * i))), one);
            z[i] = _mm256_or_si256(z[i], _mm256_sll_epi32(bits, sj));
        }
    }
}

struct Avx2Body {
    template <typename T>
    TE_TARGET static bool encode_blocks(const T *x, size_t nblocks, double M, double inv, bool nibbles,
                                        uint8_t *widths, size_t first_block, uint8_t **data) {
        const __m256d mv = _mm256_set1_pd(M);
        const __m256d iv = _mm256_set1_pd(inv);
        const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
        __m256d bad = _mm256_setzero_pd();
        uint8_t *d = *data;
        for (size_t b = 0; b < nblocks; b++) {
            __m256d v[8];
            load32(x + kBlock * b, v);
            __m128i k[8];
            for (int i = 0; i < 8; i++) {
                bad = _mm256_or_pd(bad, _mm256_cmp_pd(_mm256_and_pd(v[i], absmask), mv, _CMP_NLE_UQ));
                k[i] = _mm256_cvtpd_epi32(_mm256_mul_pd(v[i], iv));  // current rounding mode, as nearbyint
            }
            __m256i z[4];
            for (int i = 0; i < 4; i++) z[i] = zigzag8(_mm256_set_m128i(k[2 * i + 1], k[2 * i]));
            const int w = pack_planes(z, d);
            put_width(widths, first_block + b, nibbles, w);
            d += 4 * w;
        }
        *data = d;
        return _mm256_movemask_pd(bad) == 0;
    }

    template <typename T>
    TE_TARGET static bool decode_blocks(const uint8_t *widths, bool nibbles, size_t first_block, size_t nblocks,
                                        const uint8_t **data, double q, uint32_t zmax, T *dst, bool acc) {
        const __m256d qv = _mm256_set1_pd(q);
        __m256i hi = _mm256_setzero_si256();
        const uint8_t *d = *data;
        for (size_t b = 0; b < nblocks; b++) {
            const int w = get_width(widths, first_block + b, nibbles);
            __m256i z[4];
            unpack_planes(d, w, z);
            d += 4 * w;
            for (int i = 0; i < 4; i++) {
                hi = _mm256_max_epu32(hi, z[i]);
                store_scaled8<T>(dst + kBlock * b + 8 * i, unzigzag8(z[i]), qv, acc);
            }
        }
        *data = d;
        return hmax_epu32(hi) <= zmax;
    }

    TE_TARGET static bool combine_blocks(CombineJob &j, size_t nblocks, const uint8_t **a, const uint8_t **b,
                                         uint8_t **o) {
        __m256i hia = _mm256_setzero_si256(), hib = _mm256_setzero_si256();
        const uint8_t *pa = *a, *pb = *b;
        uint8_t *po = *o;
        for (size_t blk = 0; blk < nblocks; blk++) {
            const int wa = get_width(j.wa, blk, j.na), wb = get_width(j.wb, blk, j.nb);
            __m256i za[4], zb[4], s[4];
            unpack_planes(pa, wa, za);
            unpack_planes(pb, wb, zb);
            pa += 4 * wa;
            pb += 4 * wb;
            for (int i = 0; i < 4; i++) {
                hia = _mm256_max_epu32(hia, za[i]);
                hib = _mm256_max_epu32(hib, zb[i]);
                s[i] = zigzag8(_mm256_add_epi32(unzigzag8(za[i]), unzigzag8(zb[i])));
            }
            const int wo = pack_planes(s, po);
            put_width(j.wo, blk, j.no, wo);
            po += 4 * wo;
        }
        *a = pa;
        *b = pb;
        *o = po;
        return hmax_epu32(hia) <= j.zmax_a && hmax_epu32(hib) <= j.zmax_b;
    }

    template <typename T>
    TE_TARGET static void stats(const T *x, size_t n, int mode, ChunkStats *s, double *lanes8, size_t *done) {
        size_t i = 0;
        __m256i amax = _mm256_setzero_si256();
        __m256d vmax = _mm256_set1_pd(-INFINITY), vmin = _mm256_set1_pd(INFINITY);
        __m256d sq0 = _mm256_loadu_pd(lanes8), sq1 = _mm256_loadu_pd(lanes8 + 4);
        const __m256i absmask = _mm256_set1_epi64x(0x7fffffffffffffffll);
        for (; i + 32 <= n; i += 32) {
            __m256d v[8];
            load32(x + i, v);
            for (int k = 0; k < 8; k++) {
                const __m256i a = _mm256_and_si256(_mm256_castpd_si256(v[k]), absmask);
                amax = _mm256_blendv_epi8(amax, a, _mm256_cmpgt_epi64(a, amax));  // both < 2^63
                if (mode == kStatsRange) {
                    vmax = _mm256_max_pd(vmax, v[k]);
                    vmin = _mm256_min_pd(vmin, v[k]);
                } else if (mode == kStatsNorm) {
                    if (k % 2 == 0) sq0 = _mm256_add_pd(sq0, _mm256_mul_pd(v[k], v[k]));
                    else sq1 = _mm256_add_pd(sq1, _mm256_mul_pd(v[k], v[k]));
                }
            }
        }
        _mm256_storeu_pd(lanes8, sq0);
        _mm256_storeu_pd(lanes8 + 4, sq1);
        alignas(32) uint64_t q[4];
        alignas(32) double mx[4], mn[4];
        _mm256_store_si256(reinterpret_cast<__m256i *>(q), amax);
        _mm256_store_pd(mx, vmax);
        _mm256_store_pd(mn, vmin);
        uint64_t dbits = 0;
        for (int k = 0; k < 4; k++) dbits = q[k] > dbits ? q[k] : dbits;
        double dmax;
        __builtin_memcpy(&dmax, &dbits, 8);
        s->absmax_bits = i ? (dbits >= 0x7ff0000000000000ull ? Elem<T>::kInfBits : elem_abs_bits<T>(dmax)) : 0;
        if (mode == kStatsRange && i) {
            for (int k = 0; k < 4; k++) {
                s->vmax = mx[k] > s->vmax ? mx[k] : s->vmax;
                s->vmin = mn[k] < s->vmin ? mn[k] : s->vmin;
            }
        }
        *done = i;
    }

    template <typename T>
    static uint64_t elem_abs_bits(double a) {
        if constexpr (sizeof(T) == 8) {
            return terse_codec::f64_bits(a);
        } else if constexpr (sizeof(T) == 4) {
            return terse_codec::f32_bits(static_cast<float>(a));
        } else if constexpr (std::is_same_v<T, F16>) {
            return terse_codec::f32_to_f16(static_cast<float>(a));
        } else {
            return terse_codec::f32_bits(static_cast<float>(a)) >> 16;
        }
    }
};

}  // namespace

const Kernels &kernels_avx2() {
    static const Kernels k = make_kernels<Avx2Body>();
    return k;
}

}  // namespace terse_errbound

#else
namespace terse_errbound {
const Kernels &kernels_avx2() { return kernels_scalar(); }
}  // namespace terse_errbound
#endif
