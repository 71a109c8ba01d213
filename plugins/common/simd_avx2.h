// AVX2 (+F16C) element loads and stores shared by the codecs' AVX2 paths;
// the same contract as simd_avx512.h, 8 lanes at a time.
#pragma once

#include "elem.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <type_traits>

#define TERSE_AVX2_TARGET __attribute__((target("avx2,f16c,bmi2")))
#define TERSE_AVX2_INLINE TERSE_AVX2_TARGET inline __attribute__((always_inline))

namespace terse_codec {
namespace avx2 {

TERSE_AVX2_INLINE __m256 load8_f32(const float *x) { return _mm256_loadu_ps(x); }
TERSE_AVX2_INLINE __m256 load8_f32(const F16 *x) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(x)));
}
TERSE_AVX2_INLINE __m256 load8_f32(const BF16 *x) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(x)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

TERSE_AVX2_INLINE void widen(__m256 a, __m256d *d) {
    d[0] = _mm256_cvtps_pd(_mm256_castps256_ps128(a));
    d[1] = _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1));
}

// 32 elements as 8 vectors of 4 doubles (exact).
template <typename T>
TERSE_AVX2_INLINE void load32(const T *x, __m256d *d) {
    if constexpr (sizeof(T) == 8) {
        for (int i = 0; i < 8; i++) d[i] = _mm256_loadu_pd(reinterpret_cast<const double *>(x) + 4 * i);
    } else {
        for (int i = 0; i < 4; i++) widen(load8_f32(x + 8 * i), d + 2 * i);
    }
}

TERSE_AVX2_INLINE __m256d clamp_pd(__m256d v, double max) {
    return _mm256_min_pd(_mm256_max_pd(v, _mm256_set1_pd(-max)), _mm256_set1_pd(max));
}

TERSE_AVX2_INLINE __m256 narrow(__m256d lo, __m256d hi) {
    return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}

TERSE_AVX2_INLINE __m128i f32_to_bf16x8(__m256 f) {
    const __m256i x = _mm256_castps_si256(f);
    const __m256i absx = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    const __m256i nan = _mm256_cmpgt_epi32(absx, _mm256_set1_epi32(0x7f800000));  // absx < 2^31: signed ok
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd),
                                        16);
    const __m256i q = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    const __m256i v = _mm256_blendv_epi8(r, q, nan);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0x08));
}

// dst[0..8) = v (saturated) or dst += v, for v as two vectors of 4 doubles.
template <typename T>
TERSE_AVX2_INLINE void store8(T *dst, __m256d v0, __m256d v1, bool acc) {
    if constexpr (sizeof(T) == 8) {
        double *d = reinterpret_cast<double *>(dst);
        if (acc) {
            _mm256_storeu_pd(d, _mm256_add_pd(_mm256_loadu_pd(d), v0));
            _mm256_storeu_pd(d + 4, _mm256_add_pd(_mm256_loadu_pd(d + 4), v1));
        } else {
            _mm256_storeu_pd(d, clamp_pd(v0, DBL_MAX));
            _mm256_storeu_pd(d + 4, clamp_pd(v1, DBL_MAX));
        }
    } else {
        __m256 out;
        if (acc) {
            __m256d c[2];
            widen(load8_f32(dst), c);
            out = narrow(_mm256_add_pd(c[0], v0), _mm256_add_pd(c[1], v1));
        } else {
            const double max = std::is_same_v<T, float> ? static_cast<double>(FLT_MAX)
                               : std::is_same_v<T, F16> ? static_cast<double>(kF16Max)
                                                        : static_cast<double>(kBF16Max);
            out = narrow(clamp_pd(v0, max), clamp_pd(v1, max));
        }
        if constexpr (std::is_same_v<T, float>) {
            _mm256_storeu_ps(reinterpret_cast<float *>(dst), out);
        } else if constexpr (std::is_same_v<T, F16>) {
            _mm_storeu_si128(reinterpret_cast<__m128i *>(dst),
                             _mm256_cvtps_ph(out, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        } else {
            _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), f32_to_bf16x8(out));
        }
    }
}

// Values k * u for 8 int32 k.
template <typename T>
TERSE_AVX2_INLINE void store_scaled8(T *dst, __m256i k, __m256d u, bool acc) {
    const __m256d v0 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(k)), u);
    const __m256d v1 = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(k, 1)), u);
    store8<T>(dst, v0, v1, acc);
}

TERSE_AVX2_INLINE uint32_t hmax_epu32(__m256i v) {
    alignas(32) uint32_t l[8];
    _mm256_store_si256(reinterpret_cast<__m256i *>(l), v);
    uint32_t m = 0;
    for (uint32_t x : l) m = x > m ? x : m;
    return m;
}

}  // namespace avx2
}  // namespace terse_codec

#endif
