#include "topk_select.h"

#include "topk_collect.h"
#include "topk_float_bits.h"

#include <algorithm>
#include <cmath>

namespace terse_topk {
namespace {

constexpr unsigned kRadixBits = 12;
constexpr size_t kBuckets = size_t(1) << kRadixBits;
constexpr unsigned kSmallRadixBits = 8;
// The sample is one run of kSampleRun consecutive elements (a cache line of
// float32) from every kSampleStride elements: 1/64 of the chunk, read as
// whole lines so that sampling costs a few hundred cache misses per MiB
// rather than one per sampled element.
constexpr size_t kSampleRun = 16;
constexpr size_t kSampleStride = 1024;
// Below this many elements the sample would be too small to be useful.
constexpr size_t kMinSampledCount = 8192;

template <typename U>
constexpr unsigned key_bits() {
    return unsigned(sizeof(U) * 8 - 1);
}

// Deterministic position of the run inside each stride block (splitmix-
// style mix), so periodic data cannot alias with the sample.
inline size_t sample_offset(size_t block) {
    uint64_t z = uint64_t(block) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z ^= z >> 31;
    return size_t(z % (kSampleStride / kSampleRun)) * kSampleRun;
}

// Emit, in index order, the candidates with key > t, then (same pass) the
// first `ties` with key == t.  Every element above t and every element equal
// to t must be among the candidates.
template <typename U>
void emit(const U *x, const uint32_t *cand, size_t c, U t, size_t ties, uint32_t *out) {
    constexpr U mask = abs_mask<U>();
    size_t o = 0;
    for (size_t j = 0; j < c; j++) {
        const U key = x[cand[j]] & mask;
        if (key > t) {
            out[o++] = cand[j];
        } else if (key == t && ties > 0) {
            out[o++] = cand[j];
            ties--;
        }
    }
}

// Find the r-th largest (1-based) of keys[0..m) by radix over the bits below
// `shift` (all keys share the bits above), digit_bits at a time (8 for small
// sets: the histogram stays in L1).  Returns the key and sets *rank to its
// rank among the keys equal to it (how many of them are taken).  Reorders
// and overwrites keys.
template <typename U>
U radix_refine(uint64_t *keys, size_t m, size_t r, unsigned shift, unsigned digit_bits,
               std::vector<uint32_t> &hist, size_t *rank) {
    while (shift > 0 && m > 1) {
        const unsigned ns = shift > digit_bits ? shift - digit_bits : 0;
        const uint64_t dmask = (uint64_t(1) << (shift - ns)) - 1;
        std::fill(hist.begin(), hist.begin() + dmask + 1, 0u);
        for (size_t j = 0; j < m; j++) hist[(keys[j] >> ns) & dmask]++;
        size_t d = dmask, above = 0;
        for (;; d--) {
            if (above + hist[d] >= r) break;
            above += hist[d];
        }
        r -= above;
        size_t w = 0;
        for (size_t j = 0; j < m; j++)
            if (((keys[j] >> ns) & dmask) == d) keys[w++] = keys[j];
        m = w;
        shift = ns;
    }
    *rank = r;
    return U(keys[0]);
}

template <typename U>
SelectResult select_exact(const U *x, size_t n, size_t k, U inf_key, SelectWork &w, uint32_t *out,
                          SelectStats *stats) {
    constexpr U mask = abs_mask<U>();
    constexpr unsigned shift = key_bits<U>() - kRadixBits;
    uint32_t *h = w.hist.data();
    std::fill(w.hist.begin(), w.hist.end(), 0u);
    // Two interleaved histograms halve the store-to-load chains on runs of
    // equal buckets (smooth data).
    uint32_t h2[kBuckets] = {};
    size_t i = 0;
    for (; i + 2 <= n; i += 2) {
        h[(x[i] & mask) >> shift]++;
        h2[(x[i + 1] & mask) >> shift]++;
    }
    if (i < n) h[(x[i] & mask) >> shift]++;
    for (size_t b = 0; b < kBuckets; b++) h[b] += h2[b];
    // inf_key has no bits below shift, so whole buckets are non-finite.
    for (size_t b = size_t(inf_key >> shift); b < kBuckets; b++)
        if (h[b]) return SelectResult::NonFinite;

    size_t b = kBuckets - 1, above = 0;
    for (;; b--) {
        if (above + h[b] >= k) break;
        above += h[b];
    }
    const U lo = U(U(b) << shift);
    const size_t c = collect(x, n, lo, w.cand.data(), n);
    // c == above + h[b]; the keys of bucket b are refined below shift.
    size_t m = 0;
    for (size_t j = 0; j < c; j++) {
        const U key = x[w.cand[j]] & mask;
        if ((key >> shift) == b) w.keys[m++] = key;
    }
    size_t ties = 0;
    const U t = radix_refine<U>(w.keys.data(), m, k - above, shift, m < 65536 ? kSmallRadixBits : kRadixBits,
                                w.hist, &ties);
    emit(x, w.cand.data(), c, t, ties, out);
    if (stats) stats->candidates = c;
    return SelectResult::Ok;
}

template <typename U>
SelectResult select_sampled(const U *x, size_t n, size_t k, U inf_key, SelectWork &w, uint32_t *out,
                            SelectStats *stats) {
    constexpr U mask = abs_mask<U>();
    const size_t blocks = n / kSampleStride;
    const size_t samples = blocks * kSampleRun;
    uint64_t *s = w.keys.data();
    U any_bad = 0;
    for (size_t b = 0; b < blocks; b++) {
        const U *run = x + b * kSampleStride + sample_offset(b);
        uint64_t *dst = s + b * kSampleRun;
        for (size_t j = 0; j < kSampleRun; j++) {
            const U key = run[j] & mask;
            any_bad |= key >= inf_key;
            dst[j] = key;
        }
    }
    if (any_bad) return SelectResult::NonFinite;
    // Sample rank r such that the true count above the r-th largest sample
    // falls below k only ~4 standard deviations away.
    const double m = double(k) * double(samples) / double(n);
    const size_t r = size_t(std::ceil(m + 4.0 * std::sqrt(m) + 4.0));
    if (r >= samples) return select_exact(x, n, k, inf_key, w, out, stats);
    size_t unused;
    const U lo = radix_refine<U>(s, samples, r, key_bits<U>(), kSmallRadixBits, w.hist, &unused);
    // Expected candidates are ~(r / m) k; many more means ties or a skewed
    // sample, where the exact method is cheaper than sorting candidates.
    const size_t cap = std::min(n, 4 * k + 4096);
    const size_t c = collect(x, n, lo, w.cand.data(), cap);
    if (c < k || c > cap) {
        if (stats) stats->path = Path::SampledFallback;
        return select_exact(x, n, k, inf_key, w, out, stats);
    }
    // Candidates hold every element >= lo, so the k-th largest candidate key
    // is the k-th largest of the chunk.
    for (size_t j = 0; j < c; j++) {
        s[j] = x[w.cand[j]] & mask;
        any_bad |= s[j] >= inf_key;
    }
    if (any_bad) return SelectResult::NonFinite;
    size_t ties = 0;
    const U t = radix_refine<U>(s, c, k, key_bits<U>(), kSmallRadixBits, w.hist, &ties);
    emit(x, w.cand.data(), c, t, ties, out);
    if (stats) {
        stats->path = Path::Sampled;
        stats->candidates = c;
    }
    return SelectResult::Ok;
}

}  // namespace

void SelectWork::reserve(size_t max_count) {
    cand.resize(max_count + kCollectSlack);
    keys.resize(std::max(max_count, size_t(4 * kMinSampledCount)));
    hist.resize(kBuckets);
}

template <typename U>
SelectResult select_topk(const U *x, size_t n, size_t k, U inf_key, Method method, SelectWork &work,
                         uint32_t *out, SelectStats *stats) {
    if (stats) *stats = SelectStats{};
    if (method == Method::Sampled && n >= kMinSampledCount)
        return select_sampled(x, n, k, inf_key, work, out, stats);
    return select_exact(x, n, k, inf_key, work, out, stats);
}

template SelectResult select_topk<uint16_t>(const uint16_t *, size_t, size_t, uint16_t, Method, SelectWork &,
                                            uint32_t *, SelectStats *);
template SelectResult select_topk<uint32_t>(const uint32_t *, size_t, size_t, uint32_t, Method, SelectWork &,
                                            uint32_t *, SelectStats *);
template SelectResult select_topk<uint64_t>(const uint64_t *, size_t, size_t, uint64_t, Method, SelectWork &,
                                            uint32_t *, SelectStats *);

}  // namespace terse_topk
