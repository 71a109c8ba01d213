// Seeds of codec calls (terse_codec_call_t::seed).  A pure function of the
// context id, the operation's sequence number, the global chunk index and
// the encoding rank, so stochastic rounding is deterministic and terse-eval
// can replay a captured call bit for bit.  The engine and the tool both use
// these; change them together with nothing else.
#pragma once

#include <cstddef>
#include <cstdint>

namespace terse {

constexpr uint64_t seed_mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Seed of encode/decode/combine calls for chunk g encoded by rank r of n.
constexpr uint64_t codec_call_seed(uint32_t ctx_id, uint32_t seq, size_t g, int n, int r) {
    return seed_mix64((uint64_t(ctx_id) << 44) ^ (uint64_t(seq) << 32) ^
                      (uint64_t(g) * uint64_t(n) + uint64_t(r)));
}

// Seed of the statistics pass of summable codecs for chunk g.
constexpr uint64_t codec_stats_seed(uint32_t seq, size_t g) { return seed_mix64((uint64_t(seq) << 32) ^ g); }

}  // namespace terse
