// topk on a device: the per-element, per-item and one-thread work of every
// kernel, as TERSE_HD functions.  topk_device.cu runs them from thin
// __global__ launchers; topk_device_emulation.h runs the very same
// functions in host loops, so that the selection, the compaction and the
// index coding are tested against the CPU codec on a machine without a GPU
// (tests/test_topk_device_body.cc).
//
// Encode: the same set as the CPU's (the k largest keys |x|, ties to the
// lower index), found by radix selection over the key bits, 12 bits a
// pass from the top: a histogram of the digit among the elements whose
// higher bits equal the prefix chosen so far, then the digit where the
// running count from the top reaches the rank still wanted.  Only the
// first pass reads the whole chunk: the elements at or above its chosen
// bin (the candidates: every kept one is among them) are compacted in
// index order, and the later passes read them alone.  After the last pass
// the prefix is the k-th largest key t, and the rank the number of
// elements equal to t to keep (the first ones, in index order).  A
// compaction is deterministic and in index order: each tile counts what
// its rule keeps; the counts are scanned (scan_layout.h); for the final
// one, an element's place is (keys above t before it) + min(keys equal to
// t before it, ties).  So an encode reads the chunk three times (pass 0,
// the candidates' counts, their places), whatever the element type.  The index coding: every gap's varint length and
// every group's packed length, scanned into offsets; one thread picks the
// smaller coding (bit-packed on a tie) and writes the header; then the
// values are gathered and the gaps written in place.
//
// Decode: one thread checks the header; varint gaps are found in parallel
// (a byte without the high bit ends a gap; their scan numbers them) and
// bit-packed ones after one thread walks the group headers (each group's
// length depends on its width byte); the gaps' scan gives the indices,
// checked against count; then dst is zeroed (decode) and the values
// scattered, or added (decode-accumulate).
#pragma once

#include "topk_float_bits.h"
#include "topk_format.h"
#include "topk_index_coding.h"
#include "topk_params.h"

#include "../common/scan_layout.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse_topk {
namespace dev {

constexpr size_t kResultBytes = 256;
constexpr int kDigitBits = 12;
constexpr size_t kBins = size_t{1} << kDigitBits;
// Elements of a compaction tile: a thread block's 256 threads, 16 rounds.
constexpr size_t kTileThreads = 256;
constexpr size_t kTileRounds = 16;
constexpr size_t kTile = kTileThreads * kTileRounds;

TERSE_HD inline size_t tiles_of(size_t n) { return (n + kTile - 1) / kTile; }
TERSE_HD inline size_t groups_of(size_t k) { return (k + kGroup - 1) / kGroup; }

// Bits of a key (|x| as an unsigned integer: the sign bit cleared).
template <typename U>
TERSE_HD constexpr int key_bits() {
    return static_cast<int>(sizeof(U) * 8 - 1);
}
template <typename U>
TERSE_HD constexpr int select_passes() {
    return (key_bits<U>() + kDigitBits - 1) / kDigitBits;
}

// Pass p's digit: `bits` bits at `shift`; the bits above it are the prefix.
struct Digit {
    int shift, bits;
};
template <typename U>
TERSE_HD inline Digit digit_of(int pass) {
    const int top = key_bits<U>() - kDigitBits * pass;
    const int bits = top < kDigitBits ? top : kDigitBits;
    return Digit{top - bits, bits};
}

template <typename U>
TERSE_HD inline U key_of(const U *x, size_t i) {
    return static_cast<U>(x[i] & abs_mask<U>());
}

template <typename U>
TERSE_HD inline uint64_t inf_key_of(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return 0x7f800000u;
    case TERSE_DTYPE_FLOAT64: return 0x7ff0000000000000ull;
    case TERSE_DTYPE_FLOAT16: return 0x7c00u;
    default: return 0x7f80u;
    }
}

// ---------------------------------------------------------------- results

struct DevResult {
    int verdict;                  // the call's status so far (TERSE_CODEC_*)
    uint32_t nonfinite;           // encode: a key >= the Inf key
    unsigned long long prefix;    // selection: the key bits chosen so far
    unsigned long long rank;      // selection: the rank still wanted among keys with that prefix
    unsigned long long total[5];  // the scans' totals
    unsigned long long out_len;
    Header h;          // decode: the checked header
    uint32_t coding;   // encode: the chosen index coding
    uint32_t gap_bad;  // decode: a malformed gap
};
static_assert(sizeof(DevResult) <= kResultBytes, "DevResult outgrew its slot");

TERSE_HD inline void reset_result(DevResult *r) {
    r->verdict = TERSE_CODEC_OK;
    r->nonfinite = 0;
    r->prefix = 0;
    r->rank = 0;
    for (int s = 0; s < 5; s++) r->total[s] = 0;
    r->out_len = 0;
    r->h = Header{};
    r->coding = 0;
    r->gap_bad = 0;
}

TERSE_HD inline void flag_set(uint32_t *f) {
#if defined(__CUDA_ARCH__)
    atomicOr(f, 1u);
#else
    *f = 1u;
#endif
}

// Scan slots (DevResult::total).
constexpr int kScanAbove = 0, kScanEqual = 1, kScanVarint = 2, kScanGroups = 3, kScanCands = 4;  // encode
constexpr int kScanTerms = 0, kScanGaps = 1;                                                     // decode

// ---------------------------------------------------------------- workspace

// Where things lie in the workspace of an instance for chunks of up to
// max_count elements keeping at most kmax: the result, the histogram, the
// kept indices, the tiles' counts and offsets, the coding's sizes and
// offsets (decode: the index section's bytes, up to 5 per gap), and the
// scans' tile sums.
struct Layout {
    size_t kmax, tiles, groups, section;
    size_t hist, sel, cand, cnt[2], cnt_off[2], a32, a64, b32, c32, c64, g32, g64, scan_tiles;
    size_t bytes;
};

TERSE_HD inline size_t align8(size_t v) { return (v + 7) & ~size_t{7}; }

TERSE_HD inline Layout layout_for(size_t max_count, size_t kmax) {
    Layout l;
    l.kmax = kmax;
    l.tiles = tiles_of(max_count);
    l.groups = groups_of(kmax);
    l.section = 5 * kmax;  // a varint gap takes at most 5 bytes
    size_t at = kResultBytes;
    auto take = [&](size_t bytes) {
        const size_t p = at;
        at += align8(bytes);
        return p;
    };
    l.hist = take(kBins * 4);
    l.sel = take(kmax * 4);
    l.cand = take(max_count * 4);
    for (int s = 0; s < 2; s++) {
        l.cnt[s] = take(l.tiles * 4);
        l.cnt_off[s] = take(l.tiles * 8);
    }
    l.a32 = take(l.section * 4);
    l.a64 = take(l.section * 8);
    l.b32 = take(kmax * 4);
    l.c32 = take(kmax * 4);
    l.c64 = take(kmax * 8);
    l.g32 = take(l.groups * 4);
    l.g64 = take(l.groups * 8);
    size_t most = l.section > l.tiles ? l.section : l.tiles;
    l.scan_tiles = take((terse_codec::scan_tiles(most) + 1) * 8);
    l.bytes = at;
    return l;
}

struct Work {
    uint8_t *base;
    Layout l;
    DevResult *result() const { return reinterpret_cast<DevResult *>(base); }
    uint32_t *hist() const { return at32(l.hist); }
    uint32_t *sel() const { return at32(l.sel); }
    uint32_t *cand() const { return at32(l.cand); }
    uint32_t *cnt(int s) const { return at32(l.cnt[s]); }
    uint64_t *cnt_off(int s) const { return at64(l.cnt_off[s]); }
    uint32_t *a32() const { return at32(l.a32); }
    uint64_t *a64() const { return at64(l.a64); }
    uint32_t *b32() const { return at32(l.b32); }
    uint32_t *c32() const { return at32(l.c32); }
    uint64_t *c64() const { return at64(l.c64); }
    uint32_t *g32() const { return at32(l.g32); }
    uint64_t *g64() const { return at64(l.g64); }
    uint64_t *scan_tiles() const { return at64(l.scan_tiles); }
    uint32_t *at32(size_t o) const { return reinterpret_cast<uint32_t *>(base + o); }
    uint64_t *at64(size_t o) const { return reinterpret_cast<uint64_t *>(base + o); }
};

// ---------------------------------------------------------------- selection

// The elements a selection step reads: all of the chunk, or the
// candidates (indices, in index order) the first pass left.
template <typename U>
struct AllSource {
    const U *x;
    size_t n;
    TERSE_HD size_t size(const DevResult *) const { return n; }
    TERSE_HD uint64_t key(size_t c) const { return key_of(x, c); }
    TERSE_HD uint32_t index(size_t c) const { return static_cast<uint32_t>(c); }
};
template <typename U>
struct CandSource {
    const U *x;
    const uint32_t *cand;
    TERSE_HD size_t size(const DevResult *r) const {
        return r->nonfinite ? 0 : static_cast<size_t>(r->total[kScanCands]);
    }
    TERSE_HD uint64_t key(size_t c) const { return key_of(x, cand[c]); }
    TERSE_HD uint32_t index(size_t c) const { return cand[c]; }
};

// A key's histogram bin in pass p, or -1 when its higher bits are not the
// prefix chosen so far.
template <typename U>
TERSE_HD inline int bin_of(uint64_t key, int pass, unsigned long long prefix) {
    const Digit d = digit_of<U>(pass);
    const int above = d.shift + d.bits;
    if (above < 64 && (key >> above) != prefix) return -1;
    return static_cast<int>((key >> d.shift) & ((uint64_t{1} << d.bits) - 1));
}

// One thread (the emulation) or the CUDA pick kernel's crossing thread: the
// digit where the count from the top bin reaches r->rank.  `above`: the
// elements in the bins above `digit`.
TERSE_HD inline void take_digit(DevResult *r, int bits, uint32_t digit, unsigned long long above) {
    r->rank -= above;
    r->prefix = (r->prefix << bits) | digit;
}

// Whether bin d (with h elements, `above` in the bins above it) holds the
// element of rank `rank` counted from the top.
TERSE_HD inline bool crossing(unsigned long long above, uint32_t h, unsigned long long rank) {
    return above < rank && above + h >= rank;
}

// The rules of the two compactions (both in index order, by per-tile
// counts and their scans): what an element adds to its tile's counts, as
// a packed pair (first count in the high 32 bits: a tile's counts fit 32
// bits each), and its place, or -1 when it is left out.
//
// Candidates: after the first pass, the keys at or above the chosen top
// bin's smallest key: the ones above it (all kept) and the bin's own.
struct CandRule {
    unsigned long long lo;
    template <typename U>
    TERSE_HD static CandRule of(const DevResult *r) {
        return CandRule{r->prefix << digit_of<U>(0).shift};
    }
    TERSE_HD unsigned long long pair(uint64_t key) const { return key >= lo ? (1ull << 32) : 0ull; }
    TERSE_HD long long place(uint64_t key, unsigned long long above, unsigned long long) const {
        return key >= lo ? static_cast<long long>(above) : -1;
    }
};

// Kept: the keys above t, and the first `ties` keys equal to t.
struct KeepRule {
    unsigned long long t, ties;
    template <typename U>
    TERSE_HD static KeepRule of(const DevResult *r) {
        return KeepRule{r->prefix, r->rank};
    }
    TERSE_HD unsigned long long pair(uint64_t key) const {
        return key > t ? (1ull << 32) : (key == t ? 1ull : 0ull);
    }
    TERSE_HD long long place(uint64_t key, unsigned long long above, unsigned long long equal) const {
        if (key > t) return static_cast<long long>(above + (equal < ties ? equal : ties));
        if (key == t && equal < ties) return static_cast<long long>(above + equal);
        return -1;
    }
};

// ---------------------------------------------------------------- index coding

TERSE_HD inline uint32_t gap_at(const uint32_t *sel, size_t j) {
    return j == 0 ? sel[0] : sel[j] - sel[j - 1] - 1;
}

TERSE_HD inline uint32_t varint_len(uint32_t gap) {
    return 1u + (gap >= (1u << 7)) + (gap >= (1u << 14)) + (gap >= (1u << 21)) + (gap >= (1u << 28));
}

TERSE_HD inline int group_width(const uint32_t *sel, size_t k, size_t g) {
    uint32_t all = 0;
    const size_t first = g * kGroup, n = k - first < kGroup ? k - first : kGroup;
    for (size_t j = 0; j < n; j++) all |= gap_at(sel, first + j);
    int w = 0;
    while (all) {
        w++;
        all >>= 1;
    }
    return w;
}

TERSE_HD inline uint32_t group_len(size_t k, size_t g, int w) {
    const size_t first = g * kGroup, n = k - first < kGroup ? k - first : kGroup;
    return static_cast<uint32_t>(1 + (n * static_cast<size_t>(w) + 7) / 8);
}

// One thread: the coding, the sizes, the outcome and the header.
TERSE_HD inline void task_encode_header(uint8_t *dst, size_t cap, size_t n, size_t k, size_t vs, terse_dtype_t dt,
                                        DevResult *r) {
    if (r->nonfinite) {
        r->verdict = TERSE_CODEC_RAW;  // Inf or NaN: the engine sends the chunk as it is
        return;
    }
    const size_t vsz = static_cast<size_t>(r->total[kScanVarint]),
                 bsz = static_cast<size_t>(r->total[kScanGroups]);
    const IndexCoding coding = bsz <= vsz ? kBitpacked : kVarint;
    const size_t isz = coding == kBitpacked ? bsz : vsz;
    const size_t total = kHeaderSize + k * vs + isz;
    if (total >= n * vs) {
        r->verdict = TERSE_CODEC_RAW;
        return;
    }
    if (total > cap) {
        r->verdict = TERSE_CODEC_ERR_NOSPACE;
        return;
    }
    write_header(dst, Header{kFormatVersion, static_cast<uint8_t>(dt), coding, 0, static_cast<uint32_t>(k),
                             static_cast<uint32_t>(n), static_cast<uint32_t>(isz)});
    r->coding = coding;
    r->out_len = total;
}

// Gap j as a varint at its offset.
TERSE_HD inline void task_write_varint(const uint32_t *sel, const uint64_t *off, size_t j, uint8_t *idx) {
    uint32_t gap = gap_at(sel, j);
    uint8_t *p = idx + off[j];
    while (gap >= 0x80u) {
        *p++ = static_cast<uint8_t>(gap | 0x80u);
        gap >>= 7;
    }
    *p = static_cast<uint8_t>(gap);
}

// Group g, bit-packed at its offset.
TERSE_HD inline void task_write_group(const uint32_t *sel, size_t k, const uint64_t *off, size_t g,
                                      uint8_t *idx) {
    const int w = group_width(sel, k, g);
    uint8_t *p = idx + off[g];
    *p++ = static_cast<uint8_t>(w);
    const size_t first = g * kGroup, n = k - first < kGroup ? k - first : kGroup;
    uint64_t buf = 0;
    int have = 0;
    for (size_t j = 0; j < n; j++) {
        buf |= static_cast<uint64_t>(gap_at(sel, first + j)) << have;
        have += w;
        while (have >= 8) {
            *p++ = static_cast<uint8_t>(buf);
            buf >>= 8;
            have -= 8;
        }
    }
    if (have) *p = static_cast<uint8_t>(buf);
}

// Kept value j (index sel[j]) into the payload.
template <typename U>
TERSE_HD inline void task_gather(const U *x, const uint32_t *sel, size_t j, uint8_t *vals) {
    const U v = x[sel[j]];
    for (size_t b = 0; b < sizeof(U); b++) vals[j * sizeof(U) + b] = static_cast<uint8_t>(v >> (8 * b));
}

// ---------------------------------------------------------------- decode

// One thread: decode_t's header checks (and the op), and that the
// workspace holds the payload's gaps.
TERSE_HD inline void task_check_header(const uint8_t *p, size_t len, size_t count, terse_dtype_t dt, size_t vs,
                                       int accumulate, terse_op_t op, size_t kmax, DevResult *r) {
    if (len < kHeaderSize) {
        r->verdict = TERSE_CODEC_ERR_CORRUPT;
        return;
    }
    const Header h = read_header(p);
    if (h.version != kFormatVersion || h.dtype != static_cast<uint8_t>(dt) || h.reserved != 0 ||
        (h.coding != kVarint && h.coding != kBitpacked) || static_cast<uint64_t>(h.count) != count ||
        h.k > h.count) {
        r->verdict = TERSE_CODEC_ERR_CORRUPT;
        return;
    }
    const uint64_t expect = uint64_t{kHeaderSize} + uint64_t{h.k} * vs + uint64_t{h.index_bytes};
    if (expect != len) {
        r->verdict = TERSE_CODEC_ERR_CORRUPT;
        return;
    }
    if (accumulate && op != TERSE_OP_SUM) {
        r->verdict = TERSE_CODEC_ERR_UNSUPPORTED;
        return;
    }
    // Longer than any valid section of k gaps: the CPU's reader fails on it too.
    const uint64_t longest = h.coding == kVarint ? 5ull * h.k : groups_of(h.k) + 4ull * h.k;
    if (h.index_bytes > longest) {
        r->verdict = TERSE_CODEC_ERR_CORRUPT;
        return;
    }
    if (h.k > kmax) {  // more than this instance's parameters keep: no room in the workspace
        r->verdict = TERSE_CODEC_ERR_UNSUPPORTED;
        return;
    }
    r->h = h;
}

TERSE_HD inline const uint8_t *section_of(const uint8_t *p, const Header &h, size_t vs) {
    return p + kHeaderSize + static_cast<size_t>(h.k) * vs;
}

// Varint: byte b ends a gap.
TERSE_HD inline uint32_t is_terminator(const uint8_t *s, size_t b) { return (s[b] & 0x80u) ? 0u : 1u; }

// The grids of decode are sized on the host, which knows the payload's
// length but not its header: bounds on the section's bytes and on k.
TERSE_HD inline size_t section_bound(size_t len, const Layout &l) {
    const size_t b = len > kHeaderSize ? len - kHeaderSize : 0;
    return b < l.section ? b : l.section;
}
TERSE_HD inline size_t k_bound(size_t len, size_t vs, const Layout &l) {
    const size_t b = len > kHeaderSize ? (len - kHeaderSize) / vs : 0;
    return b < l.kmax ? b : l.kmax;
}

// Varint, item b < section_bound of the terminators' scan (0 past the section).
TERSE_HD inline void task_term_flag(const uint8_t *s, const Header &h, size_t b, uint32_t *flags) {
    flags[b] = b < h.index_bytes ? is_terminator(s, b) : 0u;
}

// Varint: the gap ending at terminator byte b (number j = its scan
// offset): its value, or gap_bad for more than five bytes; gaps past k
// are left alone (the count check refuses them).
TERSE_HD inline void task_varint_gap(const uint8_t *s, size_t b, const uint64_t *term_off, size_t k,
                                     uint32_t *gaps, DevResult *r) {
    if (!is_terminator(s, b)) return;
    const uint64_t j = term_off[b];
    int cont = 0;
    while (cont < 5 && b >= static_cast<size_t>(cont) + 1 && (s[b - 1 - static_cast<size_t>(cont)] & 0x80u))
        cont++;
    if (cont == 5) {  // a sixth byte: the CPU's reader stops at shift 35
        flag_set(&r->gap_bad);
        return;
    }
    uint64_t gap = 0;
    for (int q = 0; q <= cont; q++)
        gap |= static_cast<uint64_t>(s[b - static_cast<size_t>(cont) + q] & 0x7fu) << (7 * q);
    if (gap >= 0xffffffffull) {  // an index beyond any count
        flag_set(&r->gap_bad);
        return;
    }
    if (j < k) gaps[j] = static_cast<uint32_t>(gap);
}

// One thread: the terminators number exactly k and the section ends with one.
TERSE_HD inline void task_varint_check(const uint8_t *s, const Header &h, DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK) return;
    if (r->total[kScanTerms] != h.k || (h.index_bytes && (s[h.index_bytes - 1] & 0x80u))) r->gap_bad = 1;
}

// Bit-packed: group g's header, whose width byte is w, at *pos (< the
// section's length): the checks of bitpacked_read, its start and width into
// the workspace, *pos moved past its bits.  False: malformed.
TERSE_HD inline bool walk_group(const Header &h, size_t g, unsigned w, size_t *pos, uint64_t *start,
                                uint32_t *width) {
    const size_t len = h.index_bytes, k = h.k;
    const size_t n = k - g * kGroup < kGroup ? k - g * kGroup : kGroup;
    const size_t at = *pos + 1;
    if (w > 32) return false;
    const size_t bytes = (n * w + 7) / 8;
    if (bytes > len - at) return false;
    start[g] = at;
    width[g] = w;
    *pos = at + bytes;
    return true;
}

// Bit-packed: one thread walks the group headers (each group's length
// depends on its width byte), as bitpacked_read.  (The CUDA kernel does
// the same steps with the section staged through shared memory.)
TERSE_HD inline void task_walk_groups(const uint8_t *s, const Header &h, uint64_t *start, uint32_t *width,
                                      DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK) return;
    size_t pos = 0;
    for (size_t g = 0; g < groups_of(h.k); g++) {
        if (pos >= h.index_bytes || !walk_group(h, g, s[pos], &pos, start, width)) {
            r->gap_bad = 1;
            return;
        }
    }
    if (pos != h.index_bytes) r->gap_bad = 1;
}

// Bit-packed: gap j from its group.
TERSE_HD inline void task_packed_gap(const uint8_t *s, const uint64_t *start, const uint32_t *width, size_t j,
                                     uint32_t *gaps, DevResult *r) {
    const size_t g = j / kGroup;
    const unsigned w = width[g];
    const size_t bit = (j % kGroup) * w;
    const uint8_t *p = s + start[g] + bit / 8;
    uint64_t buf = 0;
    const size_t need = (bit % 8 + w + 7) / 8;
    for (size_t q = 0; q < need; q++) buf |= static_cast<uint64_t>(p[q]) << (8 * q);
    const uint64_t gap = w == 0 ? 0 : (buf >> (bit % 8)) & (~uint64_t{0} >> (64 - w));
    if (gap >= 0xffffffffull) flag_set(&r->gap_bad);
    else gaps[j] = static_cast<uint32_t>(gap);
}

// Item j < k_bound of the indices' scan: gap + 1 (0 past k).
TERSE_HD inline void task_step(const uint32_t *gaps, const Header &h, size_t j, uint32_t *steps) {
    steps[j] = j < h.k ? gaps[j] + 1u : 0u;
}

// One thread: every index below count (the last is the largest).
TERSE_HD inline void task_check_indices(size_t count, DevResult *r) {
    if (r->verdict != TERSE_CODEC_OK) return;
    if (r->gap_bad || r->total[kScanGaps] > count) r->verdict = TERSE_CODEC_ERR_CORRUPT;
}

TERSE_HD inline uint32_t index_at(const uint32_t *gaps, const uint64_t *off, size_t j) {
    return static_cast<uint32_t>(off[j] + gaps[j]);
}

// dst[i] = v or dst[i] += v for kept value j, in the element type (as the CPU's Scatter).
template <typename U>
TERSE_HD inline void task_scatter(const uint8_t *vals, size_t j, uint32_t i, void *dst, bool acc,
                                  terse_dtype_t dt) {
    U v = 0;
    for (size_t b = 0; b < sizeof(U); b++)
        v |= static_cast<U>(static_cast<U>(vals[j * sizeof(U) + b]) << (8 * b));
    U *d = static_cast<U *>(dst) + i;
    if (!acc) {
        *d = v;
        return;
    }
    if constexpr (sizeof(U) == 4) {
        float a, b;
        const uint32_t ab = *d;
        memcpy(&a, &ab, 4);
        memcpy(&b, &v, 4);
        const float s = a + b;
        uint32_t sb;
        memcpy(&sb, &s, 4);
        *d = sb;
    } else if constexpr (sizeof(U) == 8) {
        double a, b;
        const uint64_t ab = *d;
        memcpy(&a, &ab, 8);
        memcpy(&b, &v, 8);
        const double s = a + b;
        uint64_t sb;
        memcpy(&sb, &s, 8);
        *d = sb;
    } else {
        if (dt == TERSE_DTYPE_FLOAT16) *d = float_to_half(half_to_float(*d) + half_to_float(v));
        else *d = float_to_bf16(bf16_to_float(*d) + bf16_to_float(v));
    }
}

}  // namespace dev
}  // namespace terse_topk
