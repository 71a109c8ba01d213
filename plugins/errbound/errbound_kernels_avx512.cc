// The AVX-512 code path (F, BW, DQ, VL).  Entered only where
// isa_available(Isa::Avx512); writes exactly the bits of the scalar
// reference (errbound_kernels.h).
#include "errbound_kernels.h"

#if defined(__x86_64__)
#include "../common/simd_avx512.h"

#define TE_TARGET TERSE_AVX512_TARGET
#define TE_INLINE TERSE_AVX512_INLINE

namespace terse_errbound {
namespace {

using namespace terse_codec::avx512;

TE_INLINE __m512i zigzag16(__m512i k) {
    return _mm512_xor_si512(_mm512_slli_epi32(k, 1), _mm512_srai_epi32(k, 31));
}
TE_INLINE __m512i unzigzag16(__m512i z) {
    return _mm512_xor_si512(_mm512_srli_epi32(z, 1),
                            _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_and_si512(z, _mm512_set1_epi32(1))));
}

TE_INLINE int width_of(__m512i z0, __m512i z1) {
    const uint32_t all = static_cast<uint32_t>(_mm512_reduce_or_epi32(_mm512_or_si512(z0, z1)));
    return all ? 32 - __builtin_clz(all) : 0;
}

TE_INLINE int pack_planes(__m512i z0, __m512i z1, uint8_t *out) {
    const int w = width_of(z0, z1);
    if (w <= 16) {
        // The usual case: codes fit 16 bits.  Their low (and high) bytes give
        // 8 planes each, two per movemask, without a branch per plane; the
        // caller's buffer has room for the 32 (64) bytes where fewer are kept.
        const __m512i shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(-1), 1);
        for (int half = 0; half < (w > 8 ? 2 : 1); half++) {
            const __m512i y0 = half ? _mm512_srli_epi32(z0, 8) : z0, y1 = half ? _mm512_srli_epi32(z1, 8) : z1;
            const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(y0)),
                                                      _mm512_cvtepi32_epi8(y1), 1);
            const __m512i bb = _mm512_inserti64x4(_mm512_castsi256_si512(b), b, 1);
            for (int j = 0; j < 8; j += 2) {
                // plane j in the low half (shift 7 - j), plane j + 1 in the high half (6 - j)
                const __m512i sh = _mm512_sllv_epi16(
                    bb, _mm512_add_epi16(_mm512_set1_epi16(static_cast<short>(7 - j)), shifts));
                const uint64_t two = _mm512_movepi8_mask(sh);
                __builtin_memcpy(out + 32 * half + 4 * j, &two, 8);
            }
        }
        return w;
    }
    __m512i bit = _mm512_set1_epi32(1);
    for (int j = 0; j < w; j++) {
        const uint32_t p = static_cast<uint32_t>(_mm512_test_epi32_mask(z0, bit)) |
                           (static_cast<uint32_t>(_mm512_test_epi32_mask(z1, bit)) << 16);
        terse_codec::put_u32(out + 4 * j, p);
        bit = _mm512_slli_epi32(bit, 1);
    }
    return w;
}

TE_INLINE void unpack_planes(const uint8_t *in, int w, __m512i *z0, __m512i *z1) {
    __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
    __m512i bit = _mm512_set1_epi32(1);
    for (int j = 0; j < w; j++) {
        const uint32_t p = terse_codec::get_u32(in + 4 * j);
        a = _mm512_mask_or_epi32(a, static_cast<__mmask16>(p), a, bit);
        b = _mm512_mask_or_epi32(b, static_cast<__mmask16>(p >> 16), b, bit);
        bit = _mm512_slli_epi32(bit, 1);
    }
    *z0 = a;
    *z1 = b;
}

struct Avx512Body {
    template <typename T>
    TE_TARGET static bool encode_blocks(const T *x, size_t nblocks, double M, double inv, bool nibbles,
                                        uint8_t *widths, size_t first_block, uint8_t **data) {
        const __m512d mv = _mm512_set1_pd(M);
        const __m512d iv = _mm512_set1_pd(inv);
        __mmask8 bad = 0;
        uint8_t *d = *data;
        for (size_t b = 0; b < nblocks; b++) {
            __m512d v[4];
            load32(x + kBlock * b, v);
            __m256i k[4];
            for (int i = 0; i < 4; i++) {
                bad |= _mm512_cmp_pd_mask(_mm512_abs_pd(v[i]), mv, _CMP_NLE_UQ);
                k[i] = _mm512_cvtpd_epi32(_mm512_mul_pd(v[i], iv));  // current rounding mode, as nearbyint
            }
            const int w = pack_planes(zigzag16(join(k[0], k[1])), zigzag16(join(k[2], k[3])), d);
            put_width(widths, first_block + b, nibbles, w);
            d += 4 * w;
        }
        *data = d;
        return bad == 0;
    }

    template <typename T>
    TE_TARGET static bool decode_blocks(const uint8_t *widths, bool nibbles, size_t first_block, size_t nblocks,
                                        const uint8_t **data, double q, uint32_t zmax, T *dst, bool acc) {
        const __m512d qv = _mm512_set1_pd(q);
        __m512i hi = _mm512_setzero_si512();
        const uint8_t *d = *data;
        for (size_t b = 0; b < nblocks; b++) {
            const int w = get_width(widths, first_block + b, nibbles);
            __m512i z0, z1;
            unpack_planes(d, w, &z0, &z1);
            d += 4 * w;
            hi = _mm512_max_epu32(hi, _mm512_max_epu32(z0, z1));
            store_scaled16<T>(dst + kBlock * b, unzigzag16(z0), qv, acc);
            store_scaled16<T>(dst + kBlock * b + 16, unzigzag16(z1), qv, acc);
        }
        *data = d;
        return _mm512_reduce_max_epu32(hi) <= zmax;
    }

    TE_TARGET static bool combine_blocks(CombineJob &j, size_t nblocks, const uint8_t **a, const uint8_t **b,
                                         uint8_t **o) {
        __m512i hia = _mm512_setzero_si512(), hib = _mm512_setzero_si512();
        const uint8_t *pa = *a, *pb = *b;
        uint8_t *po = *o;
        for (size_t blk = 0; blk < nblocks; blk++) {
            const int wa = get_width(j.wa, blk, j.na), wb = get_width(j.wb, blk, j.nb);
            __m512i a0, a1, b0, b1;
            unpack_planes(pa, wa, &a0, &a1);
            unpack_planes(pb, wb, &b0, &b1);
            pa += 4 * wa;
            pb += 4 * wb;
            hia = _mm512_max_epu32(hia, _mm512_max_epu32(a0, a1));
            hib = _mm512_max_epu32(hib, _mm512_max_epu32(b0, b1));
            const __m512i s0 = zigzag16(_mm512_add_epi32(unzigzag16(a0), unzigzag16(b0)));
            const __m512i s1 = zigzag16(_mm512_add_epi32(unzigzag16(a1), unzigzag16(b1)));
            const int wo = pack_planes(s0, s1, po);
            put_width(j.wo, blk, j.no, wo);
            po += 4 * wo;
        }
        *a = pa;
        *b = pb;
        *o = po;
        return _mm512_reduce_max_epu32(hia) <= j.zmax_a && _mm512_reduce_max_epu32(hib) <= j.zmax_b;
    }

    template <typename T>
    TE_TARGET static void stats(const T *x, size_t n, int mode, ChunkStats *s, double *lanes8, size_t *done) {
        size_t i = 0;
        __m512i amax = _mm512_setzero_si512();
        __m512d vmax = _mm512_set1_pd(-INFINITY), vmin = _mm512_set1_pd(INFINITY);
        __m512d sq = _mm512_loadu_pd(lanes8);
        const __m512i absmask = _mm512_set1_epi64(0x7fffffffffffffffll);
        for (; i + 32 <= n; i += 32) {
            __m512d v[4];
            load32(x + i, v);
            for (int k = 0; k < 4; k++) {
                // The double's magnitude pattern orders like the element's own.
                amax = _mm512_max_epu64(amax, _mm512_and_si512(_mm512_castpd_si512(v[k]), absmask));
                if (mode == kStatsRange) {
                    vmax = _mm512_max_pd(vmax, v[k]);
                    vmin = _mm512_min_pd(vmin, v[k]);
                } else if (mode == kStatsNorm) {
                    sq = _mm512_add_pd(sq, _mm512_mul_pd(v[k], v[k]));
                }
            }
        }
        _mm512_storeu_pd(lanes8, sq);
        const uint64_t dbits = _mm512_reduce_max_epu64(amax);
        double dmax;
        __builtin_memcpy(&dmax, &dbits, 8);
        // Back to the element's own pattern (exact: the value is one of the elements, or 0).
        s->absmax_bits = i ? (dbits >= 0x7ff0000000000000ull ? Elem<T>::kInfBits : elem_abs_bits<T>(dmax)) : 0;
        if (mode == kStatsRange && i) {
            s->vmax = _mm512_reduce_max_pd(vmax);
            s->vmin = _mm512_reduce_min_pd(vmin);
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

const Kernels &kernels_avx512() {
    static const Kernels k = make_kernels<Avx512Body>();
    return k;
}

}  // namespace terse_errbound

#else
namespace terse_errbound {
const Kernels &kernels_avx512() { return kernels_scalar(); }
}  // namespace terse_errbound
#endif
