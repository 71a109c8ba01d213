// errbound kernels: per-block arithmetic (TERSE_HD, shared by every code
// path and the CUDA build to come), chunk drivers, and per-ISA tables.  A
// SIMD body implements whole 32-element blocks; the drivers handle widths,
// offsets and the last partial block with the scalar reference, so every
// path writes the same bits.
#pragma once

#include "errbound_format.h"

#include "../common/elem.h"
#include "../common/isa.h"

#include <cmath>

namespace terse_errbound {

using terse_codec::BF16;
using terse_codec::Elem;
using terse_codec::F16;

// Block writers may store up to this many bytes past the block they write
// (whole groups of 8 planes, to avoid a branch per plane); buffers have room.
constexpr size_t kPackSlack = 64;

enum StatsMode { kStatsAbs = 0, kStatsRange = 1, kStatsNorm = 2 };

struct ChunkStats {
    uint64_t absmax_bits = 0;                  // max |x| bit pattern (>= the Inf pattern: a NaN or Inf)
    double vmax = -INFINITY, vmin = INFINITY;  // kStatsRange
    double sumsq = 0;                          // kStatsNorm, summed in 8 lanes (i mod 8), see sumsq_ref
};

struct EncodeJob {
    const void *src;
    size_t count;
    double M;    // agreed max |x|
    double inv;  // 1 / q
    bool nibbles;
    uint8_t *widths;  // widths_bytes(...) bytes
    uint8_t *data;    // room for the worst case + kPackSlack
    size_t data_len;  // out
};

struct DecodeJob {
    const uint8_t *widths;  // validated: every width <= wmax, offsets inside the stream
    bool nibbles;
    const uint8_t *data;
    size_t count;
    double q;
    uint32_t zmax;  // largest allowed zigzag code
    void *dst;
};

struct CombineJob {
    size_t count;
    const uint8_t *wa, *da;
    bool na;
    uint32_t zmax_a;
    const uint8_t *wb, *db;
    bool nb;
    uint32_t zmax_b;
    uint8_t *wo, *dout;  // room for the worst case of the sum + kPackSlack
    bool no;
    size_t out_len;  // out
};

using StatsFn = void (*)(const void *src, size_t count, int mode, ChunkStats *out);
using EncodeFn = bool (*)(EncodeJob &);              // false: a value is NaN or beyond M
using DecodeFn = bool (*)(const DecodeJob &, bool);  // false: a code beyond zmax
using CombineFn = bool (*)(CombineJob &);            // false: a code beyond its zmax

struct Kernels {
    StatsFn stats[4];
    EncodeFn encode[4];
    DecodeFn decode[4];
    CombineFn combine;
};

const Kernels &kernels_scalar();
const Kernels &kernels_avx2();
const Kernels &kernels_avx512();
const Kernels &kernels_for(terse_codec::Isa isa);

// ---------------------------------------------------------------- per-block reference

TERSE_HD inline int32_t quantize_one(double x, double inv) {
    double f = nearbyint(x * inv);
    f = f > 2147483647.0 ? 2147483647.0 : f;
    f = f >= -2147483647.0 ? f : -2147483647.0;  // NaN lands here too (flagged by the caller)
    return static_cast<int32_t>(f);
}

// Bit planes of 32 zigzag codes; returns the width.
TERSE_HD inline int planes_pack(const uint32_t *z, uint8_t *out) {
    uint32_t all = 0;
    for (int i = 0; i < 32; i++) all |= z[i];
    const int w = terse_codec::bit_length(all);
    for (int j = 0; j < w; j++) {
        uint32_t p = 0;
        for (int i = 0; i < 32; i++) p |= ((z[i] >> j) & 1u) << i;
        terse_codec::put_u32(out + 4 * j, p);
    }
    return w;
}

TERSE_HD inline void planes_unpack(const uint8_t *in, int w, uint32_t *z) {
    for (int i = 0; i < 32; i++) z[i] = 0;
    for (int j = 0; j < w; j++) {
        const uint32_t p = terse_codec::get_u32(in + 4 * j);
        for (int i = 0; i < 32; i++) z[i] |= ((p >> i) & 1u) << j;
    }
}

template <typename T>
TERSE_HD inline bool encode_block_ref(const T *x, size_t n, double M, double inv, uint8_t *out, int *w) {
    uint32_t z[32];
    bool ok = true;
    for (size_t i = 0; i < 32; i++) {
        if (i < n) {
            const double v = Elem<T>::load(x + i);
            ok &= fabs(v) <= M;
            z[i] = zigzag(quantize_one(v, inv));
        } else {
            z[i] = 0;
        }
    }
    *w = planes_pack(z, out);
    return ok;
}

template <typename T>
TERSE_HD inline bool decode_block_ref(const uint8_t *in, int w, size_t n, double q, uint32_t zmax, T *dst,
                                      bool acc) {
    uint32_t z[32];
    planes_unpack(in, w, z);
    bool ok = true;
    for (size_t i = 0; i < 32; i++) ok &= (i < n ? z[i] <= zmax : z[i] == 0);  // padding must be zero
    for (size_t i = 0; i < n; i++) {
        const double v = static_cast<double>(unzigzag(z[i])) * q;
        if (acc) Elem<T>::accumulate(dst + i, v);
        else Elem<T>::store(dst + i, v);
    }
    return ok;
}

TERSE_HD inline bool combine_block_ref(const uint8_t *a, int wa, uint32_t zmax_a, const uint8_t *b, int wb,
                                       uint32_t zmax_b, uint8_t *out, int *wo) {
    uint32_t za[32], zb[32];
    planes_unpack(a, wa, za);
    planes_unpack(b, wb, zb);
    bool ok = true;
    for (int i = 0; i < 32; i++) {
        ok &= za[i] <= zmax_a && zb[i] <= zmax_b;
        za[i] = zigzag(unzigzag(za[i]) + unzigzag(zb[i]));  // |sum| < 2^30 when both are in range
    }
    *wo = planes_pack(za, out);
    return ok;
}

template <typename T>
TERSE_HD inline void stats_ref(const T *x, size_t n, size_t lane0, int mode, ChunkStats *s, double *lanes8) {
    for (size_t i = 0; i < n; i++) {
        const auto a = Elem<T>::abs_bits(x + i);
        s->absmax_bits = a > s->absmax_bits ? a : s->absmax_bits;
        const double v = Elem<T>::load(x + i);
        if (mode == kStatsRange) {
            s->vmax = v > s->vmax ? v : s->vmax;
            s->vmin = v < s->vmin ? v : s->vmin;
        } else if (mode == kStatsNorm) {
            lanes8[(lane0 + i) & 7] += v * v;
        }
    }
}

TERSE_HD inline double sum_lanes8(const double *l) {
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// ---------------------------------------------------------------- drivers

// Body provides (for full blocks):
//   template <T> static bool encode_blocks(const T *x, size_t nblocks, double M, double inv,
//        bool nibbles, uint8_t *widths, size_t first_block, uint8_t **data);
//   template <T> static bool decode_blocks(const uint8_t *widths, bool nibbles, size_t first_block,
//        size_t nblocks, const uint8_t **data, double q, uint32_t zmax, T *dst, bool acc);
//   static bool combine_blocks(CombineJob &j, size_t nblocks, const uint8_t **a, const uint8_t **b, uint8_t **o);
//   template <T> static void stats(const T *x, size_t n, int mode, ChunkStats *s, double *lanes8, size_t *done);

template <typename Body, typename T>
bool encode_chunk(EncodeJob &j) {
    const T *x = static_cast<const T *>(j.src);
    const size_t full = j.count / kBlock;
    uint8_t *d = j.data;
    bool ok = Body::template encode_blocks<T>(x, full, j.M, j.inv, j.nibbles, j.widths, 0, &d);
    if (j.count % kBlock) {
        int w;
        ok &= encode_block_ref<T>(x + full * kBlock, j.count % kBlock, j.M, j.inv, d, &w);
        put_width(j.widths, full, j.nibbles, w);
        d += 4 * static_cast<size_t>(w);
    }
    j.data_len = static_cast<size_t>(d - j.data);
    return ok;
}

template <typename Body, typename T>
bool decode_chunk(const DecodeJob &j, bool acc) {
    T *dst = static_cast<T *>(j.dst);
    const size_t full = j.count / kBlock;
    const uint8_t *d = j.data;
    bool ok = Body::template decode_blocks<T>(j.widths, j.nibbles, 0, full, &d, j.q, j.zmax, dst, acc);
    if (j.count % kBlock) {
        const int w = get_width(j.widths, full, j.nibbles);
        ok &= decode_block_ref<T>(d, w, j.count % kBlock, j.q, j.zmax, dst + full * kBlock, acc);
    }
    return ok;
}

template <typename Body>
bool combine_chunk(CombineJob &j) {
    const size_t full = j.count / kBlock;
    const uint8_t *a = j.da, *b = j.db;
    uint8_t *o = j.dout;
    bool ok = Body::combine_blocks(j, full, &a, &b, &o);
    if (const size_t rest = j.count % kBlock) {  // the padding of a partial block must be zero
        const int wa = get_width(j.wa, full, j.na), wb = get_width(j.wb, full, j.nb);
        uint32_t za[32], zb[32];
        planes_unpack(a, wa, za);
        planes_unpack(b, wb, zb);
        for (size_t i = 0; i < 32; i++) {
            ok &= i < rest ? (za[i] <= j.zmax_a && zb[i] <= j.zmax_b) : (za[i] == 0 && zb[i] == 0);
            za[i] = zigzag(unzigzag(za[i]) + unzigzag(zb[i]));
        }
        const int wo = planes_pack(za, o);
        put_width(j.wo, full, j.no, wo);
        o += 4 * static_cast<size_t>(wo);
    }
    j.out_len = static_cast<size_t>(o - j.dout);
    return ok;
}

template <typename Body, typename T>
void stats_chunk(const void *src, size_t count, int mode, ChunkStats *s) {
    const T *x = static_cast<const T *>(src);
    *s = ChunkStats{};
    double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t done = 0;
    Body::template stats<T>(x, count, mode, s, lanes, &done);
    stats_ref<T>(x + done, count - done, done, mode, s, lanes);
    s->sumsq = sum_lanes8(lanes);
}

template <typename Body>
Kernels make_kernels() {
    Kernels k{};
    k.stats[0] = &stats_chunk<Body, float>;
    k.stats[1] = &stats_chunk<Body, double>;
    k.stats[2] = &stats_chunk<Body, F16>;
    k.stats[3] = &stats_chunk<Body, BF16>;
    k.encode[0] = &encode_chunk<Body, float>;
    k.encode[1] = &encode_chunk<Body, double>;
    k.encode[2] = &encode_chunk<Body, F16>;
    k.encode[3] = &encode_chunk<Body, BF16>;
    k.decode[0] = &decode_chunk<Body, float>;
    k.decode[1] = &decode_chunk<Body, double>;
    k.decode[2] = &decode_chunk<Body, F16>;
    k.decode[3] = &decode_chunk<Body, BF16>;
    k.combine = &combine_chunk<Body>;
    return k;
}

// The scalar combine of whole blocks, shared by bodies without a SIMD one.
inline bool combine_blocks_ref(CombineJob &j, size_t nblocks, const uint8_t **a, const uint8_t **b, uint8_t **o) {
    bool ok = true;
    for (size_t blk = 0; blk < nblocks; blk++) {
        const int wa = get_width(j.wa, blk, j.na), wb = get_width(j.wb, blk, j.nb);
        int wo;
        ok &= combine_block_ref(*a, wa, j.zmax_a, *b, wb, j.zmax_b, *o, &wo);
        put_width(j.wo, blk, j.no, wo);
        *a += 4 * static_cast<size_t>(wa);
        *b += 4 * static_cast<size_t>(wb);
        *o += 4 * static_cast<size_t>(wo);
    }
    return ok;
}

}  // namespace terse_errbound
