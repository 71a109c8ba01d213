#include "topk_collect.h"

#include "topk_float_bits.h"

#include <string_view>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace terse_topk {
namespace {

// Portable kernel, also the tail of the SIMD ones.  Blocks of 64 keep the
// early-stop check off the per-element path.
template <typename U>
size_t collect_scalar(const U *x, size_t begin, size_t n, U lo, uint32_t *out, size_t c, size_t cap) {
    constexpr U mask = abs_mask<U>();
    for (size_t i = begin; i < n; i++) {
        out[c] = uint32_t(i);
        c += (x[i] & mask) >= lo;
        if ((i & 63) == 63 && c > cap) return c;
    }
    return c;
}

#if defined(__x86_64__)

// Keys are below 2^(bits-1) after the sign is cleared, so signed compares
// against lo - 1 are exact: key > lo - 1 <=> key >= lo (lo = 0 gives -1).
__attribute__((target("avx2,bmi,popcnt"))) size_t collect_avx2_32(const uint32_t *x, size_t n, uint32_t lo,
                                                                  uint32_t *out, size_t cap) {
    const __m256i mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i t = _mm256_set1_epi32(int32_t(lo) - 1);
    size_t c = 0, i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i *p = reinterpret_cast<const __m256i *>(x + i);
        const __m256i a = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_loadu_si256(p + 0), mask), t);
        const __m256i b = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_loadu_si256(p + 1), mask), t);
        const __m256i cc = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_loadu_si256(p + 2), mask), t);
        const __m256i d = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_loadu_si256(p + 3), mask), t);
        const __m256i any = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(cc, d));
        if (_mm256_testz_si256(any, any)) continue;
        uint32_t bits = uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(a))) |
                        uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(b))) << 8 |
                        uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(cc))) << 16 |
                        uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(d))) << 24;
        while (bits) {
            out[c++] = uint32_t(i) + uint32_t(__builtin_ctz(bits));
            bits &= bits - 1;
        }
        if (c > cap) return c;
    }
    return collect_scalar(x, i, n, lo, out, c, cap);
}

__attribute__((target("avx2,bmi,popcnt"))) size_t collect_avx2_64(const uint64_t *x, size_t n, uint64_t lo,
                                                                  uint32_t *out, size_t cap) {
    const __m256i mask = _mm256_set1_epi64x(0x7fffffffffffffffll);
    const __m256i t = _mm256_set1_epi64x(int64_t(lo) - 1);
    size_t c = 0, i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i *p = reinterpret_cast<const __m256i *>(x + i);
        const __m256i a = _mm256_cmpgt_epi64(_mm256_and_si256(_mm256_loadu_si256(p + 0), mask), t);
        const __m256i b = _mm256_cmpgt_epi64(_mm256_and_si256(_mm256_loadu_si256(p + 1), mask), t);
        const __m256i cc = _mm256_cmpgt_epi64(_mm256_and_si256(_mm256_loadu_si256(p + 2), mask), t);
        const __m256i d = _mm256_cmpgt_epi64(_mm256_and_si256(_mm256_loadu_si256(p + 3), mask), t);
        const __m256i any = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(cc, d));
        if (_mm256_testz_si256(any, any)) continue;
        uint32_t bits = uint32_t(_mm256_movemask_pd(_mm256_castsi256_pd(a))) |
                        uint32_t(_mm256_movemask_pd(_mm256_castsi256_pd(b))) << 4 |
                        uint32_t(_mm256_movemask_pd(_mm256_castsi256_pd(cc))) << 8 |
                        uint32_t(_mm256_movemask_pd(_mm256_castsi256_pd(d))) << 12;
        while (bits) {
            out[c++] = uint32_t(i) + uint32_t(__builtin_ctz(bits));
            bits &= bits - 1;
        }
        if (c > cap) return c;
    }
    return collect_scalar(x, i, n, lo, out, c, cap);
}

// AVX-512: compress-store the matching lane indices, no per-bit loop, so the
// cost stays flat however many elements match.
__attribute__((target("avx512f"))) size_t collect_avx512_32(const uint32_t *x, size_t n, uint32_t lo,
                                                            uint32_t *out, size_t cap) {
    const __m512i mask = _mm512_set1_epi32(0x7fffffff);
    const __m512i t = _mm512_set1_epi32(int32_t(lo));
    const __m512i step = _mm512_set1_epi32(16);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    size_t c = 0, i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i *p = reinterpret_cast<const __m512i *>(x + i);
        const __mmask16 a = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_loadu_si512(p + 0), mask), t);
        const __mmask16 b = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_loadu_si512(p + 1), mask), t);
        const __mmask16 cc = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_loadu_si512(p + 2), mask), t);
        const __mmask16 d = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_loadu_si512(p + 3), mask), t);
        if ((a | b | cc | d) != 0) {
            const __m512i base = _mm512_add_epi32(iota, _mm512_set1_epi32(int32_t(i)));
            _mm512_mask_compressstoreu_epi32(out + c, a, base);
            c += size_t(__builtin_popcount(a));
            _mm512_mask_compressstoreu_epi32(out + c, b, _mm512_add_epi32(base, step));
            c += size_t(__builtin_popcount(b));
            _mm512_mask_compressstoreu_epi32(out + c, cc, _mm512_add_epi32(base, _mm512_slli_epi32(step, 1)));
            c += size_t(__builtin_popcount(cc));
            _mm512_mask_compressstoreu_epi32(
                out + c, d, _mm512_add_epi32(base, _mm512_mullo_epi32(step, _mm512_set1_epi32(3))));
            c += size_t(__builtin_popcount(d));
            if (c > cap) return c;
        }
    }
    return collect_scalar(x, i, n, lo, out, c, cap);
}

__attribute__((target("avx512f"))) size_t collect_avx512_64(const uint64_t *x, size_t n, uint64_t lo,
                                                            uint32_t *out, size_t cap) {
    const __m512i mask = _mm512_set1_epi64(0x7fffffffffffffffll);
    const __m512i t = _mm512_set1_epi64(int64_t(lo));
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    size_t c = 0, i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512i *p = reinterpret_cast<const __m512i *>(x + i);
        const __mmask8 a = _mm512_cmpge_epu64_mask(_mm512_and_si512(_mm512_loadu_si512(p + 0), mask), t);
        const __mmask8 b = _mm512_cmpge_epu64_mask(_mm512_and_si512(_mm512_loadu_si512(p + 1), mask), t);
        const __mmask8 cc = _mm512_cmpge_epu64_mask(_mm512_and_si512(_mm512_loadu_si512(p + 2), mask), t);
        const __mmask8 d = _mm512_cmpge_epu64_mask(_mm512_and_si512(_mm512_loadu_si512(p + 3), mask), t);
        if ((a | b | cc | d) != 0) {
            const __mmask8 m[4] = {a, b, cc, d};
            for (int v = 0; v < 4; v++) {
                const __m256i idx = _mm256_add_epi32(iota, _mm256_set1_epi32(int32_t(i) + 8 * v));
                // 8 lanes of 32-bit indices: compress within a 512-bit register.
                const __m512i wide = _mm512_castsi256_si512(idx);
                _mm512_mask_compressstoreu_epi32(out + c, __mmask16(m[v]), wide);
                c += size_t(__builtin_popcount(m[v]));
            }
            if (c > cap) return c;
        }
    }
    return collect_scalar(x, i, n, lo, out, c, cap);
}

enum class Isa { Scalar, Avx2, Avx512 };

Isa detect() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return Isa::Avx512;
    if (__builtin_cpu_supports("avx2")) return Isa::Avx2;
    return Isa::Scalar;
}

const Isa kBestIsa = detect();
Isa kIsa = kBestIsa;

#else
enum class Isa { Scalar };
const Isa kBestIsa = Isa::Scalar;
Isa kIsa = Isa::Scalar;
#endif

}  // namespace

size_t collect(const uint32_t *x, size_t n, uint32_t lo, uint32_t *out, size_t cap) {
#if defined(__x86_64__)
    if (kIsa == Isa::Avx512) return collect_avx512_32(x, n, lo, out, cap);
    if (kIsa == Isa::Avx2) return collect_avx2_32(x, n, lo, out, cap);
#endif
    return collect_scalar(x, 0, n, lo, out, 0, cap);
}

size_t collect(const uint64_t *x, size_t n, uint64_t lo, uint32_t *out, size_t cap) {
#if defined(__x86_64__)
    if (kIsa == Isa::Avx512) return collect_avx512_64(x, n, lo, out, cap);
    if (kIsa == Isa::Avx2) return collect_avx2_64(x, n, lo, out, cap);
#endif
    return collect_scalar(x, 0, n, lo, out, 0, cap);
}

size_t collect(const uint16_t *x, size_t n, uint16_t lo, uint32_t *out, size_t cap) {
    return collect_scalar(x, 0, n, lo, out, 0, cap);
}

bool collect_use_isa(const char *name) {
    const std::string_view n = name ? name : "";
#if defined(__x86_64__)
    if (n == "avx512" && kBestIsa == Isa::Avx512) {
        kIsa = Isa::Avx512;
        return true;
    }
    if (n == "avx2" && kBestIsa != Isa::Scalar) {
        kIsa = Isa::Avx2;
        return true;
    }
#endif
    if (n == "scalar") {
        kIsa = Isa::Scalar;
        return true;
    }
    return false;
}

const char *collect_isa() {
#if defined(__x86_64__)
    if (kIsa == Isa::Avx512) return "avx512";
    if (kIsa == Isa::Avx2) return "avx2";
#endif
    return "scalar";
}

}  // namespace terse_topk
