// The optional zstd stage of errbound, and per-thread scratch buffers.
// Contexts and buffers are per thread (an instance may encode and decode on
// several threads at once) and are reused, so steady state allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace terse_errbound {

// Scratch buffer `slot` (0..2) of this thread, at least n bytes; nullptr if
// out of memory.
uint8_t *thread_scratch(int slot, size_t n);

// Compress src into dst; returns the length, or 0 if it does not fit in cap
// (or zstd is not built in).
size_t zstd_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, int level);

// Decompress a whole frame that must hold exactly `expect` bytes.
bool zstd_decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t expect);

}  // namespace terse_errbound
