// quantize kernels: the per-element arithmetic (TERSE_HD, shared by every
// code path and by the CUDA build to come), the chunk drivers, and the
// per-ISA kernel tables.  A SIMD body only has to reproduce quantize_one /
// dequantize_one on full groups of 32 elements; the drivers do the blocks,
// the scales and the tails with the scalar reference, so every path writes
// the same bits.
#pragma once

#include "quantize_format.h"

#include "../common/bitplanes.h"
#include "../common/counter_hash.h"
#include "../common/elem.h"
#include "../common/isa.h"

#include <cfloat>
#include <cmath>
#include <cstring>

namespace terse_quantize {

using terse_codec::BF16;
using terse_codec::Elem;
using terse_codec::F16;

struct EncodeJob {
    const void *src;  // count elements of the chunk's dtype
    size_t count;
    int log2_block;
    int bits;
    Rounding rounding;
    uint64_t seed;
    const double *agreed;  // per block: agreed max |x|, already checked finite and >= 0
    uint8_t *scales;       // out: one scale per block (4 or 8 bytes)
    uint8_t *codes;        // out: packed codes of width `bits`
};

struct DecodeJob {
    const uint8_t *scales;  // checked: finite, >= 0, usable step
    const uint8_t *codes;   // bit planes when contributors >= 2
    size_t count;
    int log2_block;
    int bits;
    int width;
    Rounding rounding;
    uint32_t contributors;
    void *dst;
};

// Per-block max |x| (or, mean: mean |x|) of a chunk; +inf for a block holding NaN or Inf.
using StatsFn = void (*)(const void *src, size_t count, int log2_block, bool mean, double *out);
// false: some element is NaN or exceeds its block's agreed max.
using EncodeFn = bool (*)(const EncodeJob &);
// false: some code exceeds contributors * code_max (corrupt payload).
using DecodeFn = bool (*)(const DecodeJob &, bool accumulate);
// Bit planes of `groups` full groups of single-rank codes of width `bits`
// (1, 2, 4, 8, 16): out gets groups * bits words, and may be written up to
// 16 words past that.
using ToPlanesFn = void (*)(const uint8_t *codes, int bits, size_t groups, uint32_t *out);
// The sum of two single-rank payloads' codes, `groups` full groups, as
// planes one wider than the codes (8-bit codes: 9 planes; 4-bit: 5), at
// out as little-endian words; non-zero when a code of either exceeds cmax.
// The first combine of a ring's reduce-scatter, and every one of a 2-rank
// ring, is this case.  nullptr where a body has none: combine then makes
// planes of each term and adds them (the reference the SIMD bodies are
// tested against).
using AddCodesFn = uint32_t (*)(const uint8_t *a, const uint8_t *b, uint32_t cmax, size_t groups, uint8_t *out);

struct Kernels {
    StatsFn stats[4];          // by terse_codec::dtype_index
    EncodeFn encode[4][5][2];  // dtype, bits_index, rounding
    DecodeFn decode[4];        // dtype
    ToPlanesFn to_planes;
    AddCodesFn add_bytes_to_planes;    // 8-bit codes
    AddCodesFn add_nibbles_to_planes;  // 4-bit codes
};

const Kernels &kernels_scalar();
const Kernels &kernels_avx2();    // only call where isa_available(Isa::Avx2)
const Kernels &kernels_avx512();  // only call where isa_available(Isa::Avx512)
const Kernels &kernels_for(terse_codec::Isa isa);

// ---------------------------------------------------------------- element arithmetic

// The scale stored for a block: the agreed max, rounded up to a float for
// data narrower than double (it already is one when it came from stats()).
template <typename T>
TERSE_HD inline double stored_scale(double agreed) {
    if constexpr (sizeof(T) == 8) {
        return agreed + 0.0;  // -0 -> +0
    } else {
        float f = static_cast<float>(agreed);
        if (static_cast<double>(f) < agreed) f = nextafterf(f, INFINITY);
        return static_cast<double>(f) + 0.0;
    }
}

template <typename T>
TERSE_HD inline void put_scale(uint8_t *scales, size_t b, double m) {
    if constexpr (sizeof(T) == 8) {
        terse_codec::put_u64(scales + 8 * b, terse_codec::f64_bits(m));
    } else {
        terse_codec::put_u32(scales + 4 * b, terse_codec::f32_bits(static_cast<float>(m)));
    }
}

TERSE_HD inline double get_scale(const uint8_t *scales, size_t b, int scale_bytes) {
    if (scale_bytes == 8) return terse_codec::f64_from_bits(terse_codec::get_u64(scales + 8 * b));
    return static_cast<double>(terse_codec::f32_from_bits(terse_codec::get_u32(scales + 4 * b)));
}

// Inverse step used by the encoder (0 for an all-zero block).
TERSE_HD inline double inverse_step(double m, double u) { return m > 0 ? 1.0 / u : 0.0; }

// Code S of one element for one rank (0 .. code_max(BITS)).
template <int BITS, int ROUND>
TERSE_HD inline uint32_t quantize_one(double x, double inv, uint32_t key, uint32_t lo) {
    if constexpr (BITS == 1) {
        if constexpr (ROUND == kNearest) {
            return x >= 0.0 ? 1u : 0u;
        } else {
            const double p = (x * inv + 1.0) * 0.5;
            double f = floor(p + terse_codec::hash_unit(key, lo));
            f = f > 1.0 ? 1.0 : f;
            f = f >= 0.0 ? f : 0.0;
            return static_cast<uint32_t>(f);
        }
    } else {
        constexpr double L = static_cast<double>((1u << (BITS - 1)) - 1u);
        const double t = x * inv;
        double f;
        if constexpr (ROUND == kNearest) f = nearbyint(t);
        else f = floor(t + terse_codec::hash_unit(key, lo));
        f = f > L ? L : f;
        f = f >= -L ? f : -L;
        return static_cast<uint32_t>(static_cast<int32_t>(f) + static_cast<int32_t>(L));
    }
}

TERSE_HD inline double dequantize_one(uint32_t s, uint32_t mul, uint32_t zoff, double u) {
    return static_cast<double>(static_cast<int32_t>(mul * s - zoff)) * u;
}

// ---------------------------------------------------------------- chunk drivers

// Body provides, for full groups of 32 elements:
//   template <T, BITS, ROUND> static bool encode_groups(const T *x, size_t groups, double m,
//        double inv, uint32_t key, uint32_t lo, uint8_t *out);
//   template <T> static bool decode_groups(const uint8_t *in, size_t groups, int width,
//        uint32_t mul, uint32_t zoff, uint32_t smax, double u, T *dst, bool acc);
//   template <T> static bool decode_plane_groups(... the same, codes as bit planes);
//   static void to_planes(const uint8_t *codes, int bits, size_t groups, uint32_t *out);
//   template <T> static uint64 block_max_bits(const T *x, size_t n);   (any n)
//   template <T> static size_t abs_sum_lanes(const T *x, size_t n, double *lanes8);
//        adds |x[i]| to lanes8[i % 8] in order for a prefix of x, returns its length

template <typename T, int BITS, int ROUND>
TERSE_HD inline bool encode_tail(const T *x, size_t n, double m, double inv, uint32_t key, uint32_t lo,
                                 uint32_t *codes) {
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        const double v = Elem<T>::load(x + i);
        ok &= fabs(v) <= m;
        codes[i] = quantize_one<BITS, ROUND>(v, inv, key, lo + static_cast<uint32_t>(i));
    }
    return ok;
}

template <typename Body, typename T, int BITS, int ROUND>
bool encode_chunk(const EncodeJob &j) {
    const T *x = static_cast<const T *>(j.src);
    const size_t block = size_t{1} << j.log2_block;
    const size_t nb = block_count(j.count, j.log2_block);
    const auto pack = terse_codec::pack32_table()[BITS];
    bool ok = true;
    for (size_t b = 0; b < nb; b++) {
        const size_t first = b << j.log2_block;
        const size_t n = j.count - first < block ? j.count - first : block;
        const double m = stored_scale<T>(j.agreed[b]);
        put_scale<T>(j.scales, b, m);
        const double inv = inverse_step(m, step_of(m, BITS, ROUND));
        // Values must lie within the agreed max; sign coding takes any finite value.
        const double limit = scale_is_mean(BITS, ROUND) ? DBL_MAX : m;
        const uint32_t key = terse_codec::hash_key(j.seed, static_cast<uint32_t>(first >> 32));
        const uint32_t lo = static_cast<uint32_t>(first);
        uint8_t *out = j.codes + first / 8 * BITS;
        const size_t groups = n / 32;
        if (groups)
            ok &= Body::template encode_groups<T, BITS, ROUND>(x + first, groups, limit, inv, key, lo, out);
        const size_t done = groups * 32;
        if (done < n) {
            uint32_t codes[32];
            ok &= encode_tail<T, BITS, ROUND>(x + first + done, n - done, limit, inv, key,
                                              lo + static_cast<uint32_t>(done), codes);
            terse_codec::pack_group(pack, BITS, codes, n - done, first + done, j.codes);
        }
    }
    return ok;
}

template <typename T>
TERSE_HD inline void dequantize_run(const uint32_t *s, size_t n, uint32_t mul, uint32_t zoff, double u, T *dst,
                                    bool acc) {
    for (size_t i = 0; i < n; i++) {
        const double v = dequantize_one(s[i], mul, zoff, u);
        if (acc) Elem<T>::accumulate(dst + i, v);
        else Elem<T>::store(dst + i, v);
    }
}

template <typename Body, typename T>
bool decode_chunk(const DecodeJob &j, bool acc) {
    T *dst = static_cast<T *>(j.dst);
    const size_t block = size_t{1} << j.log2_block;
    const size_t nb = block_count(j.count, j.log2_block);
    const int sb = sizeof(T) == 8 ? 8 : 4;
    const uint32_t mul = code_mul(j.bits);
    const uint32_t zoff = j.contributors * zero_code(j.bits);
    const uint32_t smax = j.contributors * code_max(j.bits);
    const auto unpack = terse_codec::unpack32_table()[j.width];
    bool ok = true;
    for (size_t b = 0; b < nb; b++) {
        const size_t first = b << j.log2_block;
        const size_t n = j.count - first < block ? j.count - first : block;
        const double u = step_of(get_scale(j.scales, b, sb), j.bits, j.rounding);
        // Both layouts put group g (32 codes) at byte g * 4 * width.
        const uint8_t *in = j.codes + first / 8 * static_cast<size_t>(j.width);
        const size_t groups = n / 32;
        const bool planes = planes_layout(j.contributors);
        if (groups)
            ok &= planes ? Body::template decode_plane_groups<T>(in, groups, j.width, mul, zoff, smax, u,
                                                                 dst + first, acc)
                         : Body::template decode_groups<T>(in, groups, j.width, mul, zoff, smax, u, dst + first,
                                                           acc);
        const size_t done = groups * 32;
        if (done < n) {
            uint32_t s[32];
            if (planes) {
                uint32_t p[32];
                terse_codec::load_planes(in + groups * 4 * static_cast<size_t>(j.width), j.width, p);
                terse_codec::planes_unpack(p, j.width, s);
                for (size_t i = n - done; i < 32; i++) ok &= s[i] == 0;  // padding codes are zero
            } else {
                terse_codec::unpack_group(unpack, j.width, j.codes, j.count, first + done, n - done, s);
            }
            for (size_t i = 0; i < n - done; i++) ok &= s[i] <= smax;
            dequantize_run<T>(s, n - done, mul, zoff, u, dst + first + done, acc);
        }
    }
    return ok;
}

template <typename T>
TERSE_HD inline void abs_sum_ref(const T *x, size_t n, size_t lane0, double *lanes8) {
    for (size_t i = 0; i < n; i++) lanes8[(lane0 + i) & 7] += fabs(Elem<T>::load(x + i));
}

TERSE_HD inline double lanes8_sum(const double *l) {
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

template <typename Body, typename T>
void stats_chunk(const void *src, size_t count, int log2_block, bool mean, double *out) {
    const T *x = static_cast<const T *>(src);
    const size_t block = size_t{1} << log2_block;
    const size_t nb = block_count(count, log2_block);
    for (size_t b = 0; b < nb; b++) {
        const size_t first = b << log2_block;
        const size_t n = count - first < block ? count - first : block;
        if (mean) {
            // Summed in 8 lanes (element i into lane i % 8), the same on every path.
            double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            const size_t done = Body::template abs_sum_lanes<T>(x + first, n, lanes);
            abs_sum_ref<T>(x + first + done, n - done, done, lanes);
            const double v = lanes8_sum(lanes) / static_cast<double>(n);
            out[b] = v <= DBL_MAX ? v : INFINITY;  // NaN or Inf in the block
        } else {
            out[b] = Elem<T>::from_abs_bits(
                static_cast<typename Elem<T>::Bits>(Body::template block_max_bits<T>(x + first, n)));
        }
    }
}

template <typename T>
TERSE_HD inline uint64_t max_abs_bits_ref(const T *x, size_t n) {
    typename Elem<T>::Bits m = 0;
    for (size_t i = 0; i < n; i++) {
        const auto a = Elem<T>::abs_bits(x + i);
        m = a > m ? a : m;
    }
    return m;
}

// Reference plane decode / conversion, for bodies without a SIMD one.
template <typename T>
inline bool decode_plane_groups_ref(const uint8_t *in, size_t groups, int width, uint32_t mul, uint32_t zoff,
                                    uint32_t smax, double u, T *dst, bool acc) {
    bool ok = true;
    for (size_t g = 0; g < groups; g++) {
        uint32_t p[32], s[32];
        terse_codec::load_planes(in + 4 * static_cast<size_t>(width) * g, width, p);
        terse_codec::planes_unpack(p, width, s);
        for (int i = 0; i < 32; i++) ok &= s[i] <= smax;
        dequantize_run<T>(s, 32, mul, zoff, u, dst + 32 * g, acc);
    }
    return ok;
}

inline void to_planes_ref(const uint8_t *codes, int bits, size_t groups, uint32_t *out) {
    const auto unpack = terse_codec::unpack32_table()[bits];
    for (size_t g = 0; g < groups; g++) {
        uint32_t s[32];
        unpack(codes + 4 * static_cast<size_t>(bits) * g, s);
        terse_codec::planes_pack(s, bits, out + static_cast<size_t>(bits) * g);
    }
}

// Fills a kernel table from a Body.
template <typename Body>
Kernels make_kernels() {
    Kernels k{};
    k.stats[0] = &stats_chunk<Body, float>;
    k.stats[1] = &stats_chunk<Body, double>;
    k.stats[2] = &stats_chunk<Body, F16>;
    k.stats[3] = &stats_chunk<Body, BF16>;
    k.decode[0] = &decode_chunk<Body, float>;
    k.decode[1] = &decode_chunk<Body, double>;
    k.decode[2] = &decode_chunk<Body, F16>;
    k.decode[3] = &decode_chunk<Body, BF16>;
    k.to_planes = &Body::to_planes;
    if constexpr (requires { &Body::add_bytes_to_planes; }) k.add_bytes_to_planes = &Body::add_bytes_to_planes;
    if constexpr (requires { &Body::add_nibbles_to_planes; })
        k.add_nibbles_to_planes = &Body::add_nibbles_to_planes;
#define TQ_ENC(D, T, BI, BITS)                                          \
    k.encode[D][BI][kNearest] = &encode_chunk<Body, T, BITS, kNearest>; \
    k.encode[D][BI][kStochastic] = &encode_chunk<Body, T, BITS, kStochastic>;
#define TQ_ENC_T(D, T) \
    TQ_ENC(D, T, 0, 1) TQ_ENC(D, T, 1, 2) TQ_ENC(D, T, 2, 4) TQ_ENC(D, T, 3, 8) TQ_ENC(D, T, 4, 16)
    TQ_ENC_T(0, float)
    TQ_ENC_T(1, double)
    TQ_ENC_T(2, F16)
    TQ_ENC_T(3, BF16)
#undef TQ_ENC_T
#undef TQ_ENC
    return k;
}

}  // namespace terse_quantize
