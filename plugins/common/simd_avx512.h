// AVX-512 element loads and stores shared by the codecs' AVX-512 paths:
// 16 or 32 elements of any codec dtype widened exactly to double, and
// doubles written back with the rounding and saturation of elem.h
// (store = saturate, accumulate = dst + v), bit for bit like the scalar
// Elem<T> functions.  Include only from files compiled for x86-64; every
// function carries the target attribute, so the includer needs no flags.
#pragma once

#include "elem.h"

#if defined(__x86_64__)
// GCC 12 reports its own _mm512_undefined_* helpers as uninitialized (a
// false positive inside <immintrin.h>).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <type_traits>

#define TERSE_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,f16c,bmi2")))
#define TERSE_AVX512_INLINE TERSE_AVX512_TARGET inline __attribute__((always_inline))

namespace terse_codec {
namespace avx512 {

TERSE_AVX512_INLINE void widen(__m512 a, __m512d *d) {
    d[0] = _mm512_cvtps_pd(_mm512_castps512_ps256(a));
    d[1] = _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1));
}

TERSE_AVX512_INLINE __m512 load16_f32(const float *x) { return _mm512_loadu_ps(x); }
TERSE_AVX512_INLINE __m512 load16_f32(const F16 *x) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x)));
}
TERSE_AVX512_INLINE __m512 load16_f32(const BF16 *x) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// 32 elements as 4 vectors of 8 doubles (exact).
template <typename T>
TERSE_AVX512_INLINE void load32(const T *x, __m512d *d) {
    if constexpr (sizeof(T) == 8) {
        for (int i = 0; i < 4; i++) d[i] = _mm512_loadu_pd(reinterpret_cast<const double *>(x) + 8 * i);
    } else {
        widen(load16_f32(x), d);
        widen(load16_f32(x + 16), d + 2);
    }
}

TERSE_AVX512_INLINE __m512i join(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

TERSE_AVX512_INLINE __m512d clamp_pd(__m512d v, double max) {
    return _mm512_min_pd(_mm512_max_pd(v, _mm512_set1_pd(-max)), _mm512_set1_pd(max));
}

// 16 floats from two vectors of 8 doubles, one rounding each.
TERSE_AVX512_INLINE __m512 narrow(__m512d lo, __m512d hi) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
}

TERSE_AVX512_INLINE __m256i f32_to_bf16x16(__m512 f) {
    const __m512i x = _mm512_castps_si512(f);
    const __m512i absx = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(absx, _mm512_set1_epi32(0x7f800000));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd), 16);
    const __m512i q = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
    r = _mm512_mask_mov_epi32(r, nan, q);
    return _mm512_cvtepi32_epi16(r);
}

// dst[0..16) = v (saturated) or dst += v, for v as two vectors of 8 doubles.
template <typename T>
TERSE_AVX512_INLINE void store16(T *dst, __m512d v0, __m512d v1, bool acc) {
    if constexpr (sizeof(T) == 8) {
        double *d = reinterpret_cast<double *>(dst);
        if (acc) {
            _mm512_storeu_pd(d, _mm512_add_pd(_mm512_loadu_pd(d), v0));
            _mm512_storeu_pd(d + 8, _mm512_add_pd(_mm512_loadu_pd(d + 8), v1));
        } else {
            _mm512_storeu_pd(d, clamp_pd(v0, DBL_MAX));
            _mm512_storeu_pd(d + 8, clamp_pd(v1, DBL_MAX));
        }
    } else {
        __m512 out;
        if (acc) {
            __m512d c[2];
            widen(load16_f32(dst), c);
            out = narrow(_mm512_add_pd(c[0], v0), _mm512_add_pd(c[1], v1));
        } else {
            const double max = std::is_same_v<T, float> ? static_cast<double>(FLT_MAX)
                               : std::is_same_v<T, F16> ? static_cast<double>(kF16Max)
                                                        : static_cast<double>(kBF16Max);
            out = narrow(clamp_pd(v0, max), clamp_pd(v1, max));
        }
        if constexpr (std::is_same_v<T, float>) {
            _mm512_storeu_ps(reinterpret_cast<float *>(dst), out);
        } else if constexpr (std::is_same_v<T, F16>) {
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst),
                                _mm512_cvtps_ph(out, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        } else {
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst), f32_to_bf16x16(out));
        }
    }
}

// Values k * u for 16 int32 k, stored or accumulated like dequantize in the scalar code.
template <typename T>
TERSE_AVX512_INLINE void store_scaled16(T *dst, __m512i k, __m512d u, bool acc) {
    const __m512d v0 = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(k)), u);
    const __m512d v1 = _mm512_mul_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(k, 1)), u);
    store16<T>(dst, v0, v1, acc);
}

}  // namespace avx512
}  // namespace terse_codec

#endif
