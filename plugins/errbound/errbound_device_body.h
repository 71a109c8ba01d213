// errbound on a device: the per-thread, per-lane and one-thread work of
// every kernel, as TERSE_HD functions.  errbound_device.cu runs them from
// thin __global__ launchers; errbound_device_emulation.h runs the very same
// functions in host loops over the same indices, so that the checks, the
// codes, the widths and the placing of blocks are tested against the CPU
// codec on a machine without a GPU (tests/test_errbound_device_body.cc).
//
// Work split (an errbound block is 32 elements: one warp, lane = element):
//   stats (abs, rel): grid-stride partials of the max |x| bits, and of the
//     largest and smallest value with the index where each first occurs
//     (the CPU keeps the first of equal values: +0 and -0 differ in bits);
//     one thread combines the partials.  stats (norm): the CPU's eight
//     lanes, lane k summing x*x over i = k mod 8 in order (a serial pass).
//   encode: one thread plans the step from the agreed stats (plan_step, as
//     the CPU); a width pass (a warp per block: codes, their OR, the width)
//     writes each block's data bytes; these are scanned (scan_layout.h)
//     into offsets; one thread checks and writes the header; a pack pass
//     recomputes the codes and stores the bit planes (plane j is the warp's
//     ballot of bit j) at the block's offset, and the widths.
//   decode: one thread checks the header, a pass checks the widths, they
//     are scanned, one thread checks the stream length; then a warp per
//     block, each lane gathering its code from the planes.
//   combine: both payloads checked so; one thread compares the headers; a
//     width pass over the sums, a scan, a header thread, a pack pass.
#pragma once

#include "errbound_codec.h"
#include "errbound_format.h"
#include "errbound_kernels.h"

#include "../common/bitpack.h"
#include "../common/elem.h"
#include "../common/le.h"
#include "../common/scan_layout.h"

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace terse_errbound {
namespace dev {

constexpr size_t kResultBytes = 256;
// Stats partials: at most this many (the stats grid's threads, then blocks).
constexpr size_t kStatsBlocks = 512;
constexpr size_t kStatsThreads = 256;

// Classification by bits, the same on host and device.
TERSE_HD inline bool finite64(double v) {
    return (terse_codec::f64_bits(v) & 0x7fffffffffffffffull) < 0x7ff0000000000000ull;
}

// ---------------------------------------------------------------- stats

// A value and the index where it first occurs; idx ~0: none yet.
struct Extreme {
    double v;
    unsigned long long idx;
};

// The later of two candidates by index order wins only if strictly
// beyond (NaN never enters: every comparison with it is false).
TERSE_HD inline Extreme pick_max(Extreme a, Extreme b) {
    if (b.idx == ~0ull) return a;
    if (a.idx == ~0ull) return b;
    if (b.v > a.v || (b.v == a.v && b.idx < a.idx)) return b;
    return a;
}
TERSE_HD inline Extreme pick_min(Extreme a, Extreme b) {
    if (b.idx == ~0ull) return a;
    if (a.idx == ~0ull) return b;
    if (b.v < a.v || (b.v == a.v && b.idx < a.idx)) return b;
    return a;
}
TERSE_HD inline Extreme no_extreme() { return Extreme{0.0, ~0ull}; }

struct StatsPartial {
    unsigned long long absmax_bits;
    Extreme vmax, vmin;
};

TERSE_HD inline StatsPartial empty_partial() { return StatsPartial{0ull, no_extreme(), no_extreme()}; }

TERSE_HD inline StatsPartial merge_partial(StatsPartial a, const StatsPartial &b) {
    a.absmax_bits = b.absmax_bits > a.absmax_bits ? b.absmax_bits : a.absmax_bits;
    a.vmax = pick_max(a.vmax, b.vmax);
    a.vmin = pick_min(a.vmin, b.vmin);
    return a;
}

// Element i into a thread's partial (range: values too).
template <typename T>
TERSE_HD inline void stats_element(const T *x, size_t i, bool range, StatsPartial *s) {
    const unsigned long long a = Elem<T>::abs_bits(x + i);
    s->absmax_bits = a > s->absmax_bits ? a : s->absmax_bits;
    if (!range) return;
    const double v = Elem<T>::load(x + i);
    if (v == v) {  // NaN never enters (the CPU's comparisons skip it)
        s->vmax = pick_max(s->vmax, Extreme{v, i});
        s->vmin = pick_min(s->vmin, Extreme{v, i});
    }
}

// Lane k (0..7) of the CPU's eight-lane sum of squares.
template <typename T>
TERSE_HD inline double sumsq_lane(const T *x, size_t n, int k) {
    double s = 0;
    for (size_t i = static_cast<size_t>(k); i < n; i += 8) {
        const double v = Elem<T>::load(x + i);
        s += v * v;
    }
    return s;
}

// What stats() writes, from the merged partial (and the norm's lanes).
template <typename T>
TERSE_HD inline void stats_out(Mode mode, const StatsPartial &s, const double *lanes8, double *out) {
    const double maxabs = Elem<T>::from_abs_bits(static_cast<typename Elem<T>::Bits>(s.absmax_bits));
    const bool bad = !finite64(maxabs);
    switch (mode) {
    case kAbs: out[0] = maxabs; break;
    case kRel:
        out[0] = bad ? INFINITY : (s.vmax.idx == ~0ull ? -INFINITY : s.vmax.v);
        out[1] = bad ? INFINITY : -(s.vmin.idx == ~0ull ? INFINITY : s.vmin.v);
        break;
    case kNorm:
        out[0] = maxabs;
        out[1] = bad ? INFINITY : sqrt(sum_lanes8(lanes8));
        break;
    }
}

// Blocks of the stats grid for count elements (each of kStatsThreads).
TERSE_HD inline size_t stats_blocks(size_t count) {
    const size_t b = (count + kStatsThreads - 1) / kStatsThreads;
    return b == 0 ? 1 : (b < kStatsBlocks ? b : kStatsBlocks);
}

// One thread: the partials of the grid's blocks merged in block order, and
// the outputs.
template <typename T>
TERSE_HD inline void task_stats_final(Mode mode, const StatsPartial *partials, size_t nblocks,
                                      const double *lanes8, double *out) {
    StatsPartial s = empty_partial();
    for (size_t b = 0; b < nblocks; b++) s = merge_partial(s, partials[b]);
    stats_out<T>(mode, s, lanes8, out);
}

// ---------------------------------------------------------------- results

struct DevResult {
    int verdict;         // encode / combine: the call's status so far (TERSE_CODEC_*)
    uint32_t enc_bad;    // encode: a value NaN or beyond M
    uint32_t nonfinite;  // encode: the chunk holds a NaN or Inf
    uint32_t a_bad;      // decode / combine: payload a refused (its status)
    uint32_t b_bad;      // combine: payload b refused
    uint32_t code_bad;   // decode / combine: a code out of range or non-zero padding
    double M, inv, q;    // encode: the plan
    uint32_t kmax;
    uint32_t nib;                 // encode / combine: the output's widths are nibbles
    Header ha, hb;                // the checked headers
    unsigned long long total[3];  // data bytes of a, b and the output (the scans' totals)
    unsigned long long out_len;
    double local[2];  // encode without agreed stats: the chunk's own
};
static_assert(sizeof(DevResult) <= kResultBytes, "DevResult outgrew its slot");

TERSE_HD inline void reset_result(DevResult *r) {
    r->verdict = TERSE_CODEC_OK;
    r->enc_bad = r->nonfinite = r->a_bad = r->b_bad = r->code_bad = 0;
    r->M = r->inv = r->q = 0;
    r->kmax = r->nib = 0;
    r->ha = Header{};
    r->hb = Header{};
    r->total[0] = r->total[1] = r->total[2] = 0;
    r->out_len = 0;
}

TERSE_HD inline void flag_set(uint32_t *f) {
#if defined(__CUDA_ARCH__)
    atomicOr(f, 1u);
#else
    *f = 1u;
#endif
}

// A payload's refusal: the status (negative), kept if one is already set.
TERSE_HD inline void refuse(uint32_t *bad, int status) {
#if defined(__CUDA_ARCH__)
    atomicCAS(bad, 0u, static_cast<uint32_t>(status));
#else
    if (!*bad) *bad = static_cast<uint32_t>(status);
#endif
}

// ---------------------------------------------------------------- workspace

// Where things lie in the workspace of an instance for chunks of up to
// max_count elements: the result, the stats partials, then for each of
// three streams (a, b, output) its blocks' sizes, offsets and tile sums.
struct Layout {
    size_t nb;
    size_t partials;  // StatsPartial[kStatsBlocks]
    size_t sizes[3], offs[3], tiles[3];
    size_t bytes;
};

TERSE_HD inline size_t align8(size_t v) { return (v + 7) & ~size_t{7}; }

TERSE_HD inline Layout layout_for(size_t max_count) {
    Layout l;
    l.nb = block_count(max_count);
    size_t at = kResultBytes;
    l.partials = at;
    at += align8(kStatsBlocks * sizeof(StatsPartial)) + 8 * sizeof(double);  // and the norm's lanes
    for (int s = 0; s < 3; s++) {
        l.sizes[s] = at;
        at += align8(l.nb * 4);
        l.offs[s] = at;
        at += l.nb * 8;
        l.tiles[s] = at;
        at += (terse_codec::scan_tiles(l.nb) + 1) * 8;
    }
    l.bytes = at;
    return l;
}

// The workspace of one call, seen through its layout.
struct Work {
    uint8_t *base;
    Layout l;
    DevResult *result() const { return reinterpret_cast<DevResult *>(base); }
    StatsPartial *partials() const { return reinterpret_cast<StatsPartial *>(base + l.partials); }
    double *lanes8() const {
        return reinterpret_cast<double *>(base + l.partials + align8(kStatsBlocks * sizeof(StatsPartial)));
    }
    uint32_t *sizes(int s) const { return reinterpret_cast<uint32_t *>(base + l.sizes[s]); }
    uint64_t *offs(int s) const { return reinterpret_cast<uint64_t *>(base + l.offs[s]); }
    uint64_t *tiles(int s) const { return reinterpret_cast<uint64_t *>(base + l.tiles[s]); }
};

// ---------------------------------------------------------------- encode

// One thread: the step from the agreed stats (device memory), as encode().
TERSE_HD inline void task_plan(const Params &p, int nranks, terse_dtype_t dt, size_t elem_bytes,
                               const double *agreed, size_t count, size_t dst_cap, DevResult *r) {
    const int ns = p.mode == kAbs ? 1 : 2;
    for (int i = 0; i < ns; i++)
        if (!finite64(agreed[i])) {
            r->verdict = TERSE_CODEC_RAW;
            return;
        }
    double B;
    switch (p.mode) {
    case kAbs: B = p.bound; break;
    case kRel: B = p.bound * (agreed[0] + agreed[1]); break;
    default: B = count ? p.bound * agreed[1] / sqrt(static_cast<double>(count)) : 0; break;
    }
    if (!(B >= 0) || !finite64(B)) {
        r->verdict = TERSE_CODEC_RAW;
        return;
    }
    const double M = p.mode == kRel ? (agreed[0] > agreed[1] ? agreed[0] : agreed[1]) : agreed[0];
    const Step st = plan_step(B, M, nranks, dt);
    if (st.raw) {
        r->verdict = TERSE_CODEC_RAW;
        return;
    }
    const size_t worst = stream_worst(count, 1, st.kmax);
    if (kHeaderBytes + worst >= count * elem_bytes) {
        r->verdict = TERSE_CODEC_RAW;
        return;
    }
    if (dst_cap <= kHeaderBytes) {
        r->verdict = TERSE_CODEC_ERR_NOSPACE;
        return;
    }
    r->M = M;
    r->q = st.q;
    r->inv = 1.0 / st.q;
    r->kmax = st.kmax;
    r->nib = nibble_widths(1, st.kmax) ? 1u : 0u;
}

// Lane `lane` of block b: its zigzag code (0 past count); *ok false when
// the value is NaN or beyond M, *nonfinite when it is NaN or Inf.
template <typename T>
TERSE_HD inline uint32_t encode_lane(const T *x, size_t count, const DevResult *r, size_t b, int lane, bool *ok,
                                     bool *nonfinite) {
    const size_t i = b * kBlock + static_cast<size_t>(lane);
    *ok = true;
    *nonfinite = false;
    if (i >= count) return 0;
    const double v = Elem<T>::load(x + i);
    *ok = fabs(v) <= r->M;
    *nonfinite = Elem<T>::abs_bits(x + i) >= Elem<T>::kInfBits;
    return zigzag(quantize_one(v, r->inv));
}

// The data bytes of a block whose codes OR to `all`.
TERSE_HD inline uint32_t block_bytes(uint32_t all) {
    return 4u * static_cast<uint32_t>(terse_codec::bit_length(all));
}

// One thread: after the width pass and its scan, the outcome and the header.
TERSE_HD inline void task_encode_header(uint8_t *dst, size_t dst_cap, size_t count, DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK) return;
    if (r->enc_bad) {
        r->verdict = r->nonfinite ? TERSE_CODEC_RAW : TERSE_CODEC_ERR_PARAM;
        return;
    }
    const size_t wbytes = widths_bytes(block_count(count), r->nib != 0);
    const size_t stream = wbytes + static_cast<size_t>(r->total[2]);
    if (stream > dst_cap - kHeaderBytes) {
        r->verdict = TERSE_CODEC_ERR_NOSPACE;
        return;
    }
    Header h;
    h.contributors = 1;
    h.count = count;
    h.q = r->q;
    h.kmax = r->kmax;
    h.stream_bytes = stream;
    write_header(dst, h);
    r->out_len = kHeaderBytes + stream;
}

// One thread per widths byte i of an output stream (nibbles: blocks 2i, 2i + 1).
TERSE_HD inline void task_widths_byte(uint8_t *widths, const uint32_t *sizes, size_t nb, bool nib, size_t i) {
    if (!nib) {
        widths[i] = static_cast<uint8_t>(sizes[i] / 4);
        return;
    }
    const uint32_t lo = sizes[2 * i] / 4, hi = 2 * i + 1 < nb ? sizes[2 * i + 1] / 4 : 0;
    widths[i] = static_cast<uint8_t>(lo | (hi << 4));
}

// ---------------------------------------------------------------- payload checks

// One thread: the header checks of parse_payload; where the stream starts.
// Sets *bad (a status) on refusal.
TERSE_HD inline void task_check_header(const uint8_t *p, size_t len, size_t count, Header *out, uint32_t *bad) {
    if (len < kHeaderBytes) {
        refuse(bad, TERSE_CODEC_ERR_CORRUPT);
        return;
    }
    const Header h = read_header(p);
    if (h.version != kVersion || (h.flags & ~kFlagZstd) || h.log2_block != kLog2Block || !reserved_zero(p) ||
        h.count != count || h.contributors == 0 || !(h.q >= DBL_MIN) || !(h.q <= DBL_MAX) || h.kmax == 0 ||
        static_cast<uint64_t>(h.contributors) * h.kmax >= kMaxSum || count > SIZE_MAX / 256) {
        refuse(bad, TERSE_CODEC_ERR_CORRUPT);
        return;
    }
    const size_t nb = block_count(count);
    const bool nib = nibble_widths(h.contributors, h.kmax);
    const size_t wbytes = widths_bytes(nb, nib);
    if (h.stream_bytes < wbytes || h.stream_bytes > stream_worst(count, h.contributors, h.kmax)) {
        refuse(bad, TERSE_CODEC_ERR_CORRUPT);
        return;
    }
    if (h.flags & kFlagZstd) {  // the device has no zstd stage (terse_codec_errbound(7))
        refuse(bad, TERSE_CODEC_ERR_UNSUPPORTED);
        return;
    }
    if (len - kHeaderBytes != h.stream_bytes) {
        refuse(bad, TERSE_CODEC_ERR_CORRUPT);
        return;
    }
    const uint8_t *stream = p + kHeaderBytes;
    if (nib && (nb & 1) && (stream[wbytes - 1] >> 4)) {  // unused nibble
        refuse(bad, TERSE_CODEC_ERR_CORRUPT);
        return;
    }
    *out = h;
}

// Per block b of a checked header: its width within bounds; its data bytes.
TERSE_HD inline void task_check_width(const uint8_t *p, const Header &h, size_t b, uint32_t *sizes,
                                      uint32_t *bad) {
    const bool nib = nibble_widths(h.contributors, h.kmax);
    const int w = get_width(p + kHeaderBytes, b, nib);
    if (w > width_max(h.contributors, h.kmax)) refuse(bad, TERSE_CODEC_ERR_CORRUPT);
    sizes[b] = 4u * static_cast<uint32_t>(w);
}

// One thread: the widths describe exactly the stream.
TERSE_HD inline void task_check_total(const Header &h, size_t count, unsigned long long total, uint32_t *bad) {
    if (*bad) return;
    const size_t wbytes = widths_bytes(block_count(count), nibble_widths(h.contributors, h.kmax));
    if (wbytes + total != h.stream_bytes) refuse(bad, TERSE_CODEC_ERR_CORRUPT);
}

TERSE_HD inline const uint8_t *data_of(const uint8_t *p, const Header &h, size_t count) {
    return p + kHeaderBytes + widths_bytes(block_count(count), nibble_widths(h.contributors, h.kmax));
}

// A block's bit planes: where they lie, and how many.
struct Planes {
    const uint8_t *q;
    int w;
};

TERSE_HD inline Planes planes_of(const uint8_t *p, const Header &h, size_t count, const uint32_t *sizes,
                                 const uint64_t *offs, size_t b) {
    return Planes{data_of(p, h, count) + offs[b], static_cast<int>(sizes[b] / 4)};
}

// Plane j (< w): on the device, lane j loads it and the warp shares it.
TERSE_HD inline uint32_t plane_word(const Planes &pl, int j) { return terse_codec::get_u32(pl.q + 4 * j); }

// Lane `lane`'s code: bit `lane` of every plane (the emulation's gather).
TERSE_HD inline uint32_t lane_code(const Planes &pl, int lane) {
    uint32_t z = 0;
    for (int j = 0; j < pl.w; j++) z |= ((plane_word(pl, j) >> lane) & 1u) << j;
    return z;
}

// ---------------------------------------------------------------- decode

// Lane `lane` of block b, whose code is z: decodes (or checks the padding
// of) its element; false: a code beyond zmax or non-zero padding.
template <typename T>
TERSE_HD inline bool decode_code(const Header &h, size_t count, size_t b, int lane, uint32_t z, T *dst,
                                 bool acc) {
    const size_t i = b * kBlock + static_cast<size_t>(lane);
    if (i >= count) return z == 0;
    const double v = static_cast<double>(unzigzag(z)) * h.q;
    if (acc) Elem<T>::accumulate(dst + i, v);
    else Elem<T>::store(dst + i, v);
    return z <= static_cast<uint32_t>(zigzag_max(h.contributors, h.kmax));
}

// ---------------------------------------------------------------- combine

// One thread: the checks between two checked payloads, and the output's plan.
TERSE_HD inline void task_combine_header(int a_contributors, int b_contributors, size_t out_cap, DevResult *r) {
    if (r->a_bad || r->b_bad) return;
    const Header &ha = r->ha, &hb = r->hb;
    if (a_contributors < 1 || b_contributors < 1 || ha.contributors != static_cast<uint32_t>(a_contributors) ||
        hb.contributors != static_cast<uint32_t>(b_contributors) ||
        terse_codec::f64_bits(ha.q) != terse_codec::f64_bits(hb.q) || ha.kmax != hb.kmax) {
        r->verdict = TERSE_CODEC_ERR_CORRUPT;
        return;
    }
    const uint64_t c = static_cast<uint64_t>(ha.contributors) + hb.contributors;
    if (c * ha.kmax >= kMaxSum) {
        r->verdict = TERSE_CODEC_ERR_UNSUPPORTED;
        return;
    }
    if (out_cap <= kHeaderBytes) {
        r->verdict = TERSE_CODEC_ERR_NOSPACE;
        return;
    }
    r->nib = nibble_widths(c, ha.kmax) ? 1u : 0u;
}

TERSE_HD inline bool combine_runs(const DevResult *r) {
    return !r->a_bad && !r->b_bad && r->verdict == TERSE_CODEC_OK;
}

struct CombineSide {
    const uint8_t *p;
    const uint32_t *sizes;
    const uint64_t *offs;
};

TERSE_HD inline Planes side_planes(const CombineSide &s, const Header &h, size_t count, size_t blk) {
    return planes_of(s.p, h, count, s.sizes, s.offs, blk);
}

// Lane `lane` of block blk, whose codes are za and zb: the summed code; *ok
// false for a code beyond its payload's zmax or non-zero padding.
TERSE_HD inline uint32_t combine_codes(const DevResult *r, size_t count, size_t blk, int lane, uint32_t za,
                                       uint32_t zb, bool *ok) {
    const size_t i = blk * kBlock + static_cast<size_t>(lane);
    if (i < count)
        *ok = za <= static_cast<uint32_t>(zigzag_max(r->ha.contributors, r->ha.kmax)) &&
              zb <= static_cast<uint32_t>(zigzag_max(r->hb.contributors, r->hb.kmax));
    else *ok = za == 0 && zb == 0;
    return zigzag(unzigzag(za) + unzigzag(zb));
}

// One thread: after the width pass and its scan, the outcome and the header.
TERSE_HD inline void task_combine_finish(uint8_t *out, size_t out_cap, size_t count, DevResult *r) {
    if (!combine_runs(r)) return;
    if (r->code_bad) {
        r->verdict = TERSE_CODEC_ERR_CORRUPT;
        return;
    }
    const size_t stream = widths_bytes(block_count(count), r->nib != 0) + static_cast<size_t>(r->total[2]);
    if (stream > out_cap - kHeaderBytes) {
        r->verdict = TERSE_CODEC_ERR_NOSPACE;
        return;
    }
    Header h = r->ha;
    h.flags = 0;
    h.contributors = r->ha.contributors + r->hb.contributors;
    h.stream_bytes = stream;
    write_header(out, h);
    r->out_len = kHeaderBytes + stream;
}

}  // namespace dev
}  // namespace terse_errbound
