// quantize on a device: the per-thread and per-group work of every kernel,
// as TERSE_HD functions of (job, index).  quantize_device.cu runs them from
// thin __global__ launchers over a grid; quantize_device_emulation.cc runs
// the very same functions in host loops over the same indices, so that the
// indexing, the packing and the status decisions of the kernels are tested
// against the CPU codec on a machine without a GPU
// (tests/test_quantize_device_body.cc).
//
// Work split (a group is 32 codes, never straddling a block):
//   encode, decode: one thread per element, one warp per group.  The warp
//     assembles a packed code word by OR-ing its lanes' shifted codes
//     (code_word_part); the lane that starts a word stores it
//     (store_code_word).  Block constants (scale, step) are computed by lane
//     0 and broadcast.
//   stats, max:  one warp per quantize block, lanes striding by 32, then a
//     max over lanes (integers: any order gives the same bits);
//   stats, mean: eight threads per block, lane k summing elements k, k+8,
//     ... in order, exactly the CPU's eight lanes (lanes8_sum).
//   combine: one thread per group (bit planes are a ripple-carry adder
//     across words).
//   checks: one thread per block (scales) and one for the header.
#pragma once

#include "quantize_format.h"
#include "quantize_kernels.h"

#include "../common/bitplanes.h"
#include "../common/counter_hash.h"
#include "../common/elem.h"
#include "../common/half.h"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace terse_quantize {
namespace dev {

// Verdicts of the agreed-stats check, in the order the CPU encode returns them.
constexpr int kAgreedOk = 0;
constexpr int kAgreedRaw = 1;    // NaN, Inf, or a scale the format cannot hold
constexpr int kAgreedParam = 2;  // negative: the caller's error

// Classification by bits: the same on the host and the device, whatever math headers each has.
TERSE_HD inline uint64_t abs_bits64(double v) { return terse_codec::f64_bits(v) & 0x7fffffffffffffffull; }
TERSE_HD inline bool is_nan64(double v) { return abs_bits64(v) > 0x7ff0000000000000ull; }
TERSE_HD inline bool is_inf64(double v) { return abs_bits64(v) == 0x7ff0000000000000ull; }
TERSE_HD inline bool is_finite64(double v) { return abs_bits64(v) < 0x7ff0000000000000ull; }
TERSE_HD inline bool sign_bit64(double v) { return (terse_codec::f64_bits(v) >> 63) != 0; }

TERSE_HD inline int agreed_verdict(double m, int scale_bytes, int bits, int rounding) {
    if (is_nan64(m) || is_inf64(m)) return kAgreedRaw;
    if (m < 0) return kAgreedParam;
    if (scale_bytes == 4 && m > FLT_MAX) return kAgreedRaw;
    if (scale_bytes == 8 && m > 0 && !(step_of(m, bits, rounding) >= DBL_MIN)) return kAgreedRaw;
    return kAgreedOk;
}

// A stored scale a decoder accepts.
TERSE_HD inline bool scale_ok(double m, int bits, int rounding) {
    if (!(m >= 0) || sign_bit64(m) || !is_finite64(m)) return false;
    return !(m > 0 && !(step_of(m, bits, rounding) >= DBL_MIN));
}

// The header checks of a payload of len bytes for count elements (the
// scales and the padding are checked per block / at the end).
TERSE_HD inline bool header_ok(const uint8_t *p, size_t len, size_t count, int scale_bytes, Header *out) {
    if (len < kHeaderBytes) return false;
    const Header h = read_header(p);
    if (h.version != kVersion || !valid_bits(h.bits) || h.log2_block < kMinLog2Block ||
        h.log2_block > kMaxLog2Block || h.scale_bytes != scale_bytes || h.rounding > kStochastic ||
        !reserved_zero(p) || h.contributors == 0 || h.width != width_for(h.bits, h.contributors) ||
        h.count != count)
        return false;
    if (count > SIZE_MAX / 64) return false;
    if (len != payload_bytes(count, h.log2_block, h.scale_bytes, h.width, h.contributors)) return false;
    const size_t bits = count * h.width;
    if (!planes_layout(h.contributors) && bits % 8) {
        if (p[len - 1] >> (bits % 8)) return false;  // padding must be zero
    }
    *out = h;
    return true;
}

// ---------------------------------------------------------------- packed code words

// Code words of the single-rank layout: width W in {1, 2, 4, 8, 16} divides
// 32, so code i of a group lies in word (i*W)/32 at bit (i*W)%32.
TERSE_HD inline int word_of_lane(int lane, int w) { return (lane * w) >> 5; }
TERSE_HD inline uint32_t code_word_part(uint32_t code, int lane, int w) { return code << ((lane * w) & 31); }
TERSE_HD inline bool lane_starts_word(int lane, int w) { return ((lane * w) & 31) == 0; }

// Bytes of group g's codes that lie in a packed stream of `count` codes.
TERSE_HD inline size_t group_bytes(size_t count, int w, size_t g) {
    const size_t first = 32 * g;
    const size_t n = count - first < 32 ? count - first : 32;
    return terse_codec::packed_bytes(n, w);
}

// Stores word j of group g; the last group stores only its bytes (as pack_group).
TERSE_HD inline void store_code_word(uint8_t *codes, size_t count, int w, size_t g, int j, uint32_t word) {
    uint8_t *p = codes + 4 * static_cast<size_t>(w) * g + 4 * static_cast<size_t>(j);
    const size_t have = group_bytes(count, w, g);
    const size_t at = 4 * static_cast<size_t>(j);
    if (at + 4 <= have) {
        terse_codec::put_u32(p, word);
        return;
    }
    for (size_t k = 0; at + k < have; k++) p[k] = static_cast<uint8_t>(word >> (8 * k));
}

// A little-endian word: on the device one 32-bit load where aligned (the
// payload's code words are, when the payload is), else byte by byte.
TERSE_HD inline uint32_t load_word(const uint8_t *p) {
#if defined(__CUDA_ARCH__)
    if ((reinterpret_cast<uintptr_t>(p) & 3u) == 0) return *reinterpret_cast<const uint32_t *>(p);
#endif
    return terse_codec::get_u32(p);
}

// Loads word j of group g; bytes past the stream read as zero (as unpack_group).
TERSE_HD inline uint32_t load_code_word(const uint8_t *codes, size_t count, int w, size_t g, int j) {
    const uint8_t *p = codes + 4 * static_cast<size_t>(w) * g + 4 * static_cast<size_t>(j);
    const size_t have = group_bytes(count, w, g);
    const size_t at = 4 * static_cast<size_t>(j);
    if (at + 4 <= have) return load_word(p);
    uint32_t v = 0;
    for (size_t k = 0; at + k < have; k++) v |= static_cast<uint32_t>(p[k]) << (8 * k);
    return v;
}

// Code of lane `lane` of group g, in either layout.
TERSE_HD inline uint32_t load_code(const uint8_t *codes, size_t count, int w, bool planes, size_t g, int lane) {
    if (planes) {
        const uint8_t *p = codes + 4 * static_cast<size_t>(w) * g;
        uint32_t s = 0;
        for (int j = 0; j < w; j++) s |= ((load_word(p + 4 * j) >> lane) & 1u) << j;
        return s;
    }
    const uint32_t word = load_code_word(codes, count, w, g, word_of_lane(lane, w));
    const uint32_t mask = w == 32 ? 0xffffffffu : (1u << w) - 1u;
    return (word >> ((lane * w) & 31)) & mask;
}

// ---------------------------------------------------------------- stats

template <typename T>
struct StatsJob {
    const T *x;
    size_t count;
    int log2_block;
    double *out;  // one per block
};

TERSE_HD inline size_t block_len(size_t count, int log2_block, size_t b) {
    const size_t first = b << log2_block;
    const size_t block = size_t{1} << log2_block;
    return count - first < block ? count - first : block;
}

// Max |x| bits of block b over the elements lane, lane + nlanes, ...
template <typename T>
TERSE_HD inline uint64_t block_max_bits_lane(const StatsJob<T> &j, size_t b, int lane, int nlanes) {
    const size_t first = b << j.log2_block;
    const size_t n = block_len(j.count, j.log2_block, b);
    typename Elem<T>::Bits m = 0;
    for (size_t i = static_cast<size_t>(lane); i < n; i += static_cast<size_t>(nlanes)) {
        const auto a = Elem<T>::abs_bits(j.x + first + i);
        m = a > m ? a : m;
    }
    return m;
}

template <typename T>
TERSE_HD inline double block_max_of_bits(uint64_t bits) {
    return Elem<T>::from_abs_bits(static_cast<typename Elem<T>::Bits>(bits));
}

// Lane k (0..7) of the CPU's eight-lane sum of |x| over block b.
template <typename T>
TERSE_HD inline double block_abs_sum_lane(const StatsJob<T> &j, size_t b, int k) {
    const size_t first = b << j.log2_block;
    const size_t n = block_len(j.count, j.log2_block, b);
    double s = 0;
    for (size_t i = static_cast<size_t>(k); i < n; i += 8) s += fabs(Elem<T>::load(j.x + first + i));
    return s;
}

TERSE_HD inline double block_mean_of_lanes(const double *lanes8, size_t n) {
    const double v = lanes8_sum(lanes8) / static_cast<double>(n);
    return v <= DBL_MAX ? v : INFINITY;  // NaN or Inf in the block
}

// ---------------------------------------------------------------- encode

template <typename T>
struct EncodeDevJob {
    const T *x;
    size_t count;
    int log2_block;
    int bits;
    int rounding;
    uint64_t seed;
    const double *agreed;  // per block
    uint8_t *scales;
    uint8_t *codes;
};

// What a warp needs of its block, computed once per group.
struct BlockConsts {
    double limit;  // largest |x| the block accepts
    double inv;    // inverse step
};

// Checks the agreed max of block b and writes its stored scale; returns the verdict.
template <typename T>
TERSE_HD inline int encode_block_scale(const EncodeDevJob<T> &j, size_t b) {
    const double a = j.agreed[b];
    const int v = agreed_verdict(a, sizeof(T) == 8 ? 8 : 4, j.bits, j.rounding);
    if (v == kAgreedOk) put_scale<T>(j.scales, b, stored_scale<T>(a));
    return v;
}

template <typename T, int BITS, int ROUND>
TERSE_HD inline BlockConsts encode_consts(const EncodeDevJob<T> &j, size_t g) {
    const size_t b = (32 * g) >> j.log2_block;
    const double m = stored_scale<T>(j.agreed[b]);
    BlockConsts c;
    c.inv = inverse_step(m, step_of(m, BITS, ROUND));
    c.limit = scale_is_mean(BITS, ROUND) ? DBL_MAX : m;
    return c;
}

// Code of element i (< count) of value v (Elem<T>::load of it, loaded
// ahead by the caller); *ok false when the element lies outside its block's max.
template <typename T, int BITS, int ROUND>
TERSE_HD inline uint32_t encode_value(const EncodeDevJob<T> &j, size_t i, double v, const BlockConsts &c,
                                      bool *ok) {
    *ok = fabs(v) <= c.limit;
    const uint32_t key = terse_codec::hash_key(j.seed, static_cast<uint32_t>(i >> 32));
    return quantize_one<BITS, ROUND>(v, c.inv, key, static_cast<uint32_t>(i));
}

template <typename T, int BITS, int ROUND>
TERSE_HD inline uint32_t encode_code(const EncodeDevJob<T> &j, size_t i, const BlockConsts &c, bool *ok) {
    return encode_value<T, BITS, ROUND>(j, i, Elem<T>::load(j.x + i), c, ok);
}

// ---------------------------------------------------------------- decode

template <typename T>
struct DecodeDevJob {
    const uint8_t *scales;
    const uint8_t *codes;
    size_t count;
    int log2_block;
    int bits;
    int width;
    int rounding;
    uint32_t contributors;
    T *dst;
    bool accumulate;
};

template <typename T>
TERSE_HD inline double decode_step(const DecodeDevJob<T> &j, size_t g) {
    const size_t b = (32 * g) >> j.log2_block;
    return step_of(get_scale(j.scales, b, sizeof(T) == 8 ? 8 : 4), j.bits, j.rounding);
}

// Decodes lane `lane` of group g (element 32g + lane, which may lie past
// count in the last group: then only its padding is checked); false: a code
// out of range or a non-zero padding code.
// decode_lane in its three steps, so that a kernel can issue the loads of
// several groups before their stores: the lane's code (past count: its
// padding in the planes layout, else 0), the destination's value when
// accumulating (else 0), then the store and the check.
template <typename T>
TERSE_HD inline uint32_t decode_lane_code(const DecodeDevJob<T> &j, size_t g, int lane) {
    const bool planes = planes_layout(j.contributors);
    if (32 * g + static_cast<size_t>(lane) >= j.count && !planes) return 0;
    return load_code(j.codes, j.count, j.width, planes, g, lane);
}
template <typename T>
TERSE_HD inline T decode_lane_old(const DecodeDevJob<T> &j, size_t g, int lane) {
    const size_t i = 32 * g + static_cast<size_t>(lane);
    return j.accumulate && i < j.count ? j.dst[i] : T{};
}
template <typename T>
TERSE_HD inline bool decode_lane_put(const DecodeDevJob<T> &j, size_t g, int lane, uint32_t s, const T &old,
                                     double u) {
    const size_t i = 32 * g + static_cast<size_t>(lane);
    if (i >= j.count) return s == 0;
    const uint32_t smax = j.contributors * code_max(j.bits);
    const double v = dequantize_one(s, code_mul(j.bits), j.contributors * zero_code(j.bits), u);
    if (j.accumulate) Elem<T>::put_sum(j.dst + i, Elem<T>::load(&old), v);
    else Elem<T>::store(j.dst + i, v);
    return s <= smax;
}

template <typename T>
TERSE_HD inline bool decode_lane(const DecodeDevJob<T> &j, size_t g, int lane, double u) {
    const uint32_t s = decode_lane_code(j, g, lane);
    return decode_lane_put(j, g, lane, s, decode_lane_old(j, g, lane), u);
}

// ---------------------------------------------------------------- combine

struct CombineDevJob {
    const uint8_t *ca, *cb;  // codes of the two payloads
    Header ha, hb;
    size_t count;
    uint8_t *co;
    int wo;
};

// Planes of group g of a payload's codes (copied, or converted from the single-rank layout).
TERSE_HD inline void group_planes_of(const uint8_t *codes, const Header &h, size_t count, size_t g,
                                     uint32_t *planes) {
    if (planes_layout(h.contributors)) {
        terse_codec::load_planes(codes + 4 * static_cast<size_t>(h.width) * g, h.width, planes);
        return;
    }
    uint32_t s[32];
    for (int lane = 0; lane < 32; lane++) s[lane] = load_code(codes, count, h.width, false, g, lane);
    terse_codec::planes_pack(s, h.width, planes);
}

// out group g = a + b; false: a code out of range, non-zero padding, or overflow.
TERSE_HD inline bool combine_group(const CombineDevJob &j, size_t g) {
    uint32_t a[32], b[32], o[32];
    group_planes_of(j.ca, j.ha, j.count, g, a);
    group_planes_of(j.cb, j.hb, j.count, g, b);
    uint32_t bad = 0;
    bad |= terse_codec::planes_greater_than(a, j.ha.width, j.ha.contributors * code_max(j.ha.bits));
    bad |= terse_codec::planes_greater_than(b, j.hb.width, j.hb.contributors * code_max(j.hb.bits));
    bad |= terse_codec::planes_add(a, j.ha.width, b, j.hb.width, o, j.wo);
    const size_t groups = (j.count + 31) / 32;
    if (g == groups - 1 && j.count % 32) {
        const uint32_t pad = ~((1u << (j.count % 32)) - 1u);
        for (int k = 0; k < j.ha.width; k++) bad |= a[k] & pad;
        for (int k = 0; k < j.hb.width; k++) bad |= b[k] & pad;
    }
    terse_codec::store_planes(o, j.wo, j.co + 4 * static_cast<size_t>(j.wo) * g);
    return bad == 0;
}

// ---------------------------------------------------------------- non-finite scan

template <typename T>
TERSE_HD inline bool is_nonfinite(const T *x, size_t i) {
    return Elem<T>::abs_bits(x + i) >= Elem<T>::kInfBits;
}

}  // namespace dev
}  // namespace terse_quantize

// ---------------------------------------------------------------- kernel tasks
//
// What one thread (or, for the warp-assembled ones, one warp's lane) of each
// kernel does, with its outcome recorded in a DevResult at the head of the
// device workspace.  The later kernels of a call read what the earlier ones
// recorded (stream order), so a refused payload is never decoded.

namespace terse_quantize {
namespace dev {

struct DevResult {
    unsigned long long first_bad_block;  // encode: (block << 2) | verdict of the first refused block; ~0 none
    uint32_t encode_bad;                 // encode: an element outside its block's max
    uint32_t nonfinite;                  // encode: the chunk holds a NaN or Inf
    uint32_t a_bad, b_bad;               // decode/combine: payload a (b) refused
    uint32_t code_bad;                   // decode/combine: a code out of range or bad padding
    uint32_t scales_differ;              // combine: a and b were encoded with different scales
    int32_t combine_verdict;             // combine: TERSE_CODEC_OK or the header-stage error
    uint32_t pad_;
    unsigned long long out_len;  // combine: the output payload's length
    Header ha, hb;               // the payloads' headers, once checked
};

constexpr size_t kResultBytes = 256;  // the workspace's head; stats scratch follows
static_assert(sizeof(DevResult) <= kResultBytes, "result");

TERSE_HD inline void reset_result(DevResult *r) {
    r->first_bad_block = ~0ull;
    r->encode_bad = r->nonfinite = r->a_bad = r->b_bad = r->code_bad = r->scales_differ = 0;
    r->combine_verdict = TERSE_CODEC_OK;
    r->pad_ = 0;
    r->out_len = 0;
}

TERSE_HD inline void flag_set(uint32_t *f) {
#if defined(__CUDA_ARCH__)
    atomicOr(f, 1u);
#else
    *f = 1u;
#endif
}

TERSE_HD inline void min_u64(unsigned long long *p, unsigned long long v) {
#if defined(__CUDA_ARCH__)
    atomicMin(p, v);
#else
    if (v < *p) *p = v;
#endif
}

// encode, per block b.
template <typename T>
TERSE_HD inline void task_encode_scale(const EncodeDevJob<T> &j, DevResult *r, size_t b) {
    const int v = encode_block_scale(j, b);
    if (v != kAgreedOk) min_u64(&r->first_bad_block, (static_cast<unsigned long long>(b) << 2) | unsigned(v));
}

// encode, per element i: the chunk's non-finite scan, only after a refused element.
template <typename T>
TERSE_HD inline void task_nonfinite(const T *x, DevResult *r, size_t i) {
    if (r->encode_bad && is_nonfinite(x, i)) flag_set(&r->nonfinite);
}

// decode/combine, one thread: the header of payload p (which = 0: a, 1: b).
TERSE_HD inline void task_check_header(const uint8_t *p, size_t len, size_t count, int scale_bytes, DevResult *r,
                                       int which) {
    Header h;
    const bool ok = header_ok(p, len, count, scale_bytes, &h);
    uint32_t *bad = which ? &r->b_bad : &r->a_bad;
    if (!ok) *bad = 1u;
    else if (which) r->hb = h;
    else r->ha = h;
}

// decode/combine, per block b (b may exceed the payload's blocks: nothing to do).
TERSE_HD inline void task_check_scale(const uint8_t *p, size_t count, DevResult *r, int which, size_t b) {
    uint32_t *bad = which ? &r->b_bad : &r->a_bad;
    if (*bad) return;
    const Header &h = which ? r->hb : r->ha;
    if (b >= block_count(count, h.log2_block)) return;
    if (!scale_ok(get_scale(p + kHeaderBytes, b, h.scale_bytes), h.bits, h.rounding)) flag_set(bad);
}

// The decode job of a checked payload.
template <typename T>
TERSE_HD inline DecodeDevJob<T> decode_job_of(const uint8_t *p, size_t count, const Header &h, T *dst, bool acc) {
    DecodeDevJob<T> j;
    j.scales = p + kHeaderBytes;
    j.codes = j.scales + block_count(count, h.log2_block) * h.scale_bytes;
    j.count = count;
    j.log2_block = h.log2_block;
    j.bits = h.bits;
    j.width = h.width;
    j.rounding = h.rounding;
    j.contributors = h.contributors;
    j.dst = dst;
    j.accumulate = acc;
    return j;
}

// combine, one thread: the checks between the two headers, the output's
// header and length.  Returns through r->combine_verdict.
TERSE_HD inline void task_combine_header(uint8_t *out, size_t out_cap, size_t count, int a_contributors,
                                         int b_contributors, DevResult *r) {
    if (r->a_bad || r->b_bad) return;
    const Header &ha = r->ha, &hb = r->hb;
    if (a_contributors < 1 || b_contributors < 1 || ha.contributors != static_cast<uint32_t>(a_contributors) ||
        hb.contributors != static_cast<uint32_t>(b_contributors) || ha.bits != hb.bits ||
        ha.log2_block != hb.log2_block || ha.rounding != hb.rounding) {
        r->combine_verdict = TERSE_CODEC_ERR_CORRUPT;
        return;
    }
    const uint64_t c = static_cast<uint64_t>(ha.contributors) + hb.contributors;
    const int wo = width_for(ha.bits, c);
    if (wo == 0) {
        r->combine_verdict = TERSE_CODEC_ERR_UNSUPPORTED;
        return;
    }
    const size_t need = payload_bytes(count, ha.log2_block, ha.scale_bytes, wo, c);
    if (need > out_cap) {
        r->combine_verdict = TERSE_CODEC_ERR_NOSPACE;
        return;
    }
    Header ho = ha;
    ho.width = static_cast<uint8_t>(wo);
    ho.contributors = static_cast<uint32_t>(c);
    write_header(out, ho);
    r->out_len = need;
}

TERSE_HD inline bool combine_may_write(const DevResult *r) {
    return !r->a_bad && !r->b_bad && r->combine_verdict == TERSE_CODEC_OK;
}

// combine, per block b: the scales must agree; they are copied to the output.
TERSE_HD inline void task_combine_scale(const uint8_t *pa, const uint8_t *pb, uint8_t *out, size_t count,
                                        DevResult *r, size_t b) {
    // Compared whatever the output's width and room (the CPU checks the scales first).
    if (r->a_bad || r->b_bad || r->combine_verdict == TERSE_CODEC_ERR_CORRUPT) return;
    if (b >= block_count(count, r->ha.log2_block)) return;
    const size_t sb = r->ha.scale_bytes;
    const uint8_t *sa = pa + kHeaderBytes + b * sb, *sbp = pb + kHeaderBytes + b * sb;
    bool same = true;
    for (size_t k = 0; k < sb; k++) same &= sa[k] == sbp[k];
    if (!same) flag_set(&r->scales_differ);
    if (!combine_may_write(r)) return;
    for (size_t k = 0; k < sb; k++) out[kHeaderBytes + b * sb + k] = sa[k];
}

TERSE_HD inline CombineDevJob combine_job_of(const uint8_t *pa, const uint8_t *pb, uint8_t *out, size_t count,
                                             const DevResult *r) {
    const size_t scale_len = block_count(count, r->ha.log2_block) * r->ha.scale_bytes;
    CombineDevJob j;
    j.ca = pa + kHeaderBytes + scale_len;
    j.cb = pb + kHeaderBytes + scale_len;
    j.ha = r->ha;
    j.hb = r->hb;
    j.count = count;
    j.co = out + kHeaderBytes + scale_len;
    j.wo = width_for(r->ha.bits, static_cast<uint64_t>(r->ha.contributors) + r->hb.contributors);
    return j;
}

// combine, per group g.
TERSE_HD inline void task_combine_group(const uint8_t *pa, const uint8_t *pb, uint8_t *out, size_t count,
                                        DevResult *r, size_t g) {
    if (!combine_may_write(r) || r->scales_differ) return;
    if (!combine_group(combine_job_of(pa, pb, out, count, r), g)) flag_set(&r->code_bad);
}

}  // namespace dev
}  // namespace terse_quantize
