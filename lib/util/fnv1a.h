// FNV-1a, 64 bits: a short, stable hash of text that every rank computes
// alike (a configuration's and a tuning table's canonical text, a host
// name).  Not for anything an adversary chooses.
#pragma once

#include <cstdint>
#include <string_view>

namespace terse {

constexpr uint64_t fnv1a64(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;  // offset basis
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;  // prime
    }
    return h;
}

static_assert(fnv1a64("") == 0xcbf29ce484222325ull && fnv1a64("a") == 0xaf63dc4c8601ec8cull,
              "FNV-1a 64 reference values");

}  // namespace terse
