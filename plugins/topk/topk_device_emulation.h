// topk's device kernels emulated on the host: EmuExec runs every kernel
// task of topk_device_body.h in loops over the same indices the CUDA grid
// covers, and does the collective steps (the histograms' atomic counts,
// the search for the crossing bin, the block scans of a tile's counts, the
// scans of sizes) with plain loops.  The emu_* calls are the device calls
// of topk_device.h on host memory; tests compare them with the CPU codec.
// Header only: tests include it; the plugin does not.
#pragma once

#include "topk_device_ops.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace terse_topk {
namespace dev {

class EmuExec {
public:
    // workspace: workspace_size(s) bytes, 8-byte aligned.
    EmuExec(void *workspace, const Setup &s) : w_{static_cast<uint8_t *>(workspace), layout_of(s)} {}

    const Work &work() const { return w_; }
    void begin() {
        reset_result(r());
        for (size_t b = 0; b < kBins; b++) w_.hist()[b] = 0;
    }
    bool finish(DevResult *out) {
        *out = *r();
        return true;
    }

    // Pass 0 over the chunk; the candidates (keys at or above the chosen
    // bin) compacted in index order; the later passes and the final
    // compaction over the candidates only.
    template <typename U>
    void select(const U *x, size_t n, size_t k, terse_dtype_t dt) {
        const uint64_t inf = inf_key_of<U>(dt);
        r()->rank = k;
        const AllSource<U> all{x, n};
        for (size_t i = 0; i < n; i++)
            if (all.key(i) >= inf) flag_set(&r()->nonfinite);
        histogram_pass(all, 0);
        if (r()->nonfinite) return;  // raw: the kernels stop alike
        compact(all, CandRule::of<U>(r()), w_.cand(), kScanCands);
        const CandSource<U> cands{x, w_.cand()};
        for (int pass = 1; pass < select_passes<U>(); pass++) histogram_pass(cands, pass);
        compact(cands, KeepRule::of<U>(r()), w_.sel(), kScanAbove);
    }

    void code_sizes(size_t k) {
        if (r()->nonfinite) return;
        const uint32_t *sel = w_.sel();
        for (size_t j = 0; j < k; j++) w_.a32()[j] = varint_len(gap_at(sel, j));
        const size_t groups = groups_of(k);
        for (size_t g = 0; g < groups; g++) w_.g32()[g] = group_len(k, g, group_width(sel, k, g));
        r()->total[kScanVarint] = terse_codec::scan_sizes_host(w_.a32(), k, w_.a64());
        r()->total[kScanGroups] = terse_codec::scan_sizes_host(w_.g32(), groups, w_.g64());
    }

    void encode_header(uint8_t *dst, size_t cap, size_t n, size_t k, size_t vs, terse_dtype_t dt) {
        task_encode_header(dst, cap, n, k, vs, dt, r());
    }

    template <typename U>
    void encode_write(const U *x, size_t k, uint8_t *dst) {
        if (r()->verdict != TERSE_CODEC_OK) return;
        uint8_t *vals = dst + kHeaderSize, *idx = vals + k * sizeof(U);
        for (size_t j = 0; j < k; j++) task_gather(x, w_.sel(), j, vals);
        if (r()->coding == kBitpacked) {
            for (size_t g = 0; g < groups_of(k); g++) task_write_group(w_.sel(), k, w_.g64(), g, idx);
        } else {
            for (size_t j = 0; j < k; j++) task_write_varint(w_.sel(), w_.a64(), j, idx);
        }
    }

    void check_payload(const uint8_t *p, size_t len, size_t count, terse_dtype_t dt, size_t vs, int acc,
                       terse_op_t op, size_t kmax) {
        task_check_header(p, len, count, dt, vs, acc, op, kmax, r());
        if (r()->verdict != TERSE_CODEC_OK) return;  // the kernels return early alike
        const Header h = r()->h;
        const uint8_t *s = section_of(p, h, vs);
        const size_t sb = section_bound(len, w_.l), kb = k_bound(len, vs, w_.l);
        if (h.coding == kVarint) {
            for (size_t b = 0; b < sb; b++) task_term_flag(s, h, b, w_.a32());
            r()->total[kScanTerms] = terse_codec::scan_sizes_host(w_.a32(), sb, w_.a64());
            for (size_t b = 0; b < h.index_bytes; b++) task_varint_gap(s, b, w_.a64(), h.k, w_.b32(), r());
            task_varint_check(s, h, r());
        } else {
            task_walk_groups(s, h, w_.g64(), w_.g32(), r());
            if (!r()->gap_bad)
                for (size_t j = 0; j < h.k; j++) task_packed_gap(s, w_.g64(), w_.g32(), j, w_.b32(), r());
        }
        if (!r()->gap_bad) {
            for (size_t j = 0; j < kb; j++) task_step(w_.b32(), h, j, w_.c32());
            r()->total[kScanGaps] = terse_codec::scan_sizes_host(w_.c32(), kb, w_.c64());
        }
        task_check_indices(count, r());
    }

    template <typename U>
    void scatter(const uint8_t *p, size_t count, void *dst, bool acc, terse_dtype_t dt) {
        if (r()->verdict != TERSE_CODEC_OK) return;
        const Header h = r()->h;
        if (!acc && count) std::memset(dst, 0, count * sizeof(U));
        const uint8_t *vals = p + kHeaderSize;
        for (size_t j = 0; j < h.k; j++) task_scatter<U>(vals, j, index_at(w_.b32(), w_.c64(), j), dst, acc, dt);
    }

private:
    DevResult *r() const { return w_.result(); }

    // One radix pass: the histogram (the kernels' atomic counts), then the
    // crossing bin from the top (the pick kernel's block scan).
    template <typename Src>
    void histogram_pass(const Src &src, int pass) {
        using U = std::remove_const_t<std::remove_pointer_t<decltype(src.x)>>;
        uint32_t *h = w_.hist();
        const size_t m = src.size(r());
        for (size_t c = 0; c < m; c++) {
            const int b = bin_of<U>(src.key(c), pass, r()->prefix);
            if (b >= 0) h[b]++;
        }
        const Digit d = digit_of<U>(pass);
        const unsigned long long rank = r()->rank;  // read before the crossing bin's thread writes it
        unsigned long long above = 0;
        for (size_t b = kBins; b-- > 0;) {
            if (crossing(above, h[b], rank)) take_digit(r(), d.bits, static_cast<uint32_t>(b), above);
            above += h[b];
        }
        for (size_t b = 0; b < kBins; b++) h[b] = 0;
    }

    // A compaction in index order: the tiles' counts, their scans (the
    // first count's total into slot `slot`), each kept element's index at
    // its place.
    template <typename Src, typename Rule>
    void compact(const Src &src, const Rule &rule, uint32_t *out, int slot) {
        const size_t m = src.size(r()), tiles = tiles_of(m);
        for (size_t tile = 0; tile < tiles; tile++) {
            unsigned long long sum = 0;
            for (size_t c = tile * kTile; c < (tile + 1) * kTile && c < m; c++) sum += rule.pair(src.key(c));
            w_.cnt(0)[tile] = static_cast<uint32_t>(sum >> 32);
            w_.cnt(1)[tile] = static_cast<uint32_t>(sum);
        }
        r()->total[slot] = terse_codec::scan_sizes_host(w_.cnt(0), tiles, w_.cnt_off(0));
        r()->total[kScanEqual] = terse_codec::scan_sizes_host(w_.cnt(1), tiles, w_.cnt_off(1));
        for (size_t tile = 0; tile < tiles; tile++) {
            unsigned long long above = w_.cnt_off(0)[tile], equal = w_.cnt_off(1)[tile];
            for (size_t c = tile * kTile; c < (tile + 1) * kTile && c < m; c++) {
                const uint64_t key = src.key(c);
                const long long at = rule.place(key, above, equal);
                if (at >= 0) out[at] = src.index(c);
                const unsigned long long p = rule.pair(key);
                above += p >> 32;
                equal += p & 0xffffffffull;
            }
        }
    }

    Work w_;
};

inline int emu_encode(const Setup &s, void *ws, const void *src, size_t n, void *dst, size_t cap, size_t *len) {
    EmuExec x(ws, s);
    return run_encode(x, s, src, n, dst, cap, len);
}

inline int emu_decode(const Setup &s, void *ws, const void *src, size_t src_len, void *dst, size_t count,
                      int accumulate, terse_op_t op) {
    EmuExec x(ws, s);
    return run_decode(x, s, src, src_len, dst, count, accumulate, op);
}

}  // namespace dev
}  // namespace terse_topk
