// Scratch memory for engine operations.  Buffers come from a cache owned by
// the calling thread, so a steady stream of collectives reuses the same
// (already faulted-in) pages instead of calling malloc per operation, and
// no lock is taken: a buffer released on another thread simply joins that
// thread's cache.  The cache holds up to the largest working set this
// thread had in use at once (at least 64 MiB), frees buffers that stay idle,
// and is trimmed back by scratch_release_cache().
#pragma once

#include "util/status.h"

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <vector>

namespace terse {

class ScratchBuffer {
public:
    ScratchBuffer() = default;
    ~ScratchBuffer() { reset(); }
    ScratchBuffer(ScratchBuffer &&o) noexcept : p_(o.p_), cap_(o.cap_) {
        o.p_ = nullptr;
        o.cap_ = 0;
    }
    ScratchBuffer &operator=(ScratchBuffer &&o) noexcept;
    ScratchBuffer(const ScratchBuffer &) = delete;
    ScratchBuffer &operator=(const ScratchBuffer &) = delete;

    // At least bytes bytes (64-byte aligned); keeps the current buffer if it
    // is large enough.  TERSE_ERR_NO_MEMORY with a message on failure.
    Status reserve(size_t bytes);
    void reset();  // give the memory back to the cache
    uint8_t *data() const { return p_; }
    size_t capacity() const { return cap_; }

private:
    uint8_t *p_ = nullptr;
    size_t cap_ = 0;
};

// Fixed-size frame buffers handed out and taken back during one operation.
// Its bookkeeping allocates from mem (the operation's memory).
class FramePool {
public:
    explicit FramePool(std::pmr::memory_resource *mem = std::pmr::get_default_resource())
        : all_(mem), free_(mem) {}
    void init(size_t buffer_bytes) { size_ = buffer_bytes; }
    size_t buffer_bytes() const { return size_; }
    uint8_t *get();  // nullptr when memory ran out
    void put(uint8_t *buf);
    size_t allocated() const { return all_.size(); }

private:
    size_t size_ = 0;
    std::pmr::vector<ScratchBuffer> all_;
    std::pmr::vector<uint8_t *> free_;
};

// Trim the calling thread's cache back to its base size and forget the
// largest working set seen (a communicator was freed: its calls are over).
void scratch_release_cache();
// Bytes cached, free, for the calling thread (tests).
size_t scratch_cached_bytes();

// Append-only storage of variable-size byte strings that never move.
class Arena {
public:
    explicit Arena(size_t block_bytes = size_t(4) << 20,
                   std::pmr::memory_resource *mem = std::pmr::get_default_resource())
        : block_(block_bytes), blocks_(mem) {}
    uint8_t *alloc(size_t bytes);  // nullptr when memory ran out
    void clear();

private:
    size_t block_;
    std::pmr::vector<ScratchBuffer> blocks_;
    size_t used_ = 0;  // in the last block
};

}  // namespace terse
