// Top-k selection by magnitude with ties broken by lower index.  Two methods
// that return the same set for every input:
//  - exact: radix select on the keys (a 4096-bucket histogram pass over the
//    chunk, one collecting pass, then radix refinement over the boundary
//    bucket only): two passes, cost independent of the data.
//  - sampled: pick a threshold from a hashed 1/64 sample, make one collecting
//    pass, then select exactly k among the (few) candidates.  When the sample
//    misjudges (fewer than k candidates, or too many, e.g. massive ties) it
//    falls back to exact, so the result never depends on the method.
// Neither sorts or partitions the whole chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace terse_topk {

enum class Method { Exact, Sampled };

enum class SelectResult { Ok, NonFinite };

// Reusable work space, sized once for the largest chunk.
struct SelectWork {
    std::vector<uint32_t> cand;  // candidate indices, max_count + slack
    std::vector<uint64_t> keys;  // sample keys / boundary keys
    std::vector<uint32_t> hist;  // 4096 buckets
    void reserve(size_t max_count);
};

// Which path the last call took (for tests and benchmarks).
enum class Path { Exact, Sampled, SampledFallback };

struct SelectStats {
    Path path = Path::Exact;
    size_t candidates = 0;
};

// x: n elements as unsigned bit patterns (U = uint16_t/uint32_t/uint64_t),
// 1 <= k <= n, n <= max_count of work.  On Ok writes exactly k indices to
// out[] in ascending order.  NonFinite: some key >= inf_key (Inf or NaN).
template <typename U>
SelectResult select_topk(const U *x, size_t n, size_t k, U inf_key, Method method, SelectWork &work,
                         uint32_t *out, SelectStats *stats = nullptr);

}  // namespace terse_topk
