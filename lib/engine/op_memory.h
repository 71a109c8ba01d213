// Memory of engine operations, so that a steady stream of collectives makes
// no heap allocation: an operation object and all of its bookkeeping (the
// schedule's message lists, stream slots, frame pointers, codec statistics)
// live in one OpMemory, a bump allocator that is rewound when the operation
// ends.  Its block keeps the largest size any operation needed, so after the
// first calls of a given shape every allocation is a pointer increment.
// Frame and scratch buffers are not here: they come from util/scratch.h.
//
// A communicator owns an OpMemoryPool (one OpMemory per operation in flight
// on it; a blocking call uses the same one every time), and the engine's
// operations take their OpMemory from EngineEnv::memory.
#pragma once

#include <cstddef>
#include <memory_resource>
#include <mutex>
#include <new>
#include <vector>

namespace terse {

class OpMemory final : public std::pmr::memory_resource {
public:
    OpMemory() = default;
    ~OpMemory() override;
    OpMemory(const OpMemory &) = delete;
    OpMemory &operator=(const OpMemory &) = delete;

    // Forget every allocation (their objects must be destroyed already).
    // Overflow blocks are freed and the main block grows to hold them all
    // next time, within kMaxRetained.
    void rewind();
    // Bytes of the retained block (tests and statistics).
    size_t retained() const { return cap_; }

    // Above this the block is not kept between operations (an operation
    // with millions of chunks is not worth pinning memory for).
    static constexpr size_t kMaxRetained = size_t(8) << 20;

private:
    void *do_allocate(size_t bytes, size_t align) override;
    void do_deallocate(void *, size_t, size_t) override {}  // freed at rewind()
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override { return this == &o; }

    struct Overflow {
        Overflow *next;
    };
    unsigned char *block_ = nullptr;
    size_t cap_ = 0, used_ = 0;
    size_t demand_ = 0;  // bytes asked for since the last rewind, padding included
    Overflow *overflow_ = nullptr;
};

// The OpMemory objects of one communicator.  acquire/release take a lock of
// this pool only (operations of other communicators never contend).
class OpMemoryPool {
public:
    OpMemoryPool() = default;
    ~OpMemoryPool();
    OpMemoryPool(const OpMemoryPool &) = delete;
    OpMemoryPool &operator=(const OpMemoryPool &) = delete;

    // nullptr when out of memory.
    OpMemory *acquire();
    // Rewinds m and keeps it for the next operation.
    void release(OpMemory *m);

private:
    std::mutex mu_;
    std::vector<OpMemory *> free_;
    size_t total_ = 0;
};

// A vector whose storage comes from an operation's OpMemory.
template <class T>
using OpVector = std::pmr::vector<T>;

// A fixed number of elements that cannot move (requests the transport
// points into), constructed in an operation's OpMemory.
template <class T>
class OpArray {
public:
    OpArray() = default;
    ~OpArray() { clear(); }
    OpArray(const OpArray &) = delete;
    OpArray &operator=(const OpArray &) = delete;

    // n default-constructed elements from mem (throws std::bad_alloc).
    void reset(std::pmr::memory_resource *mem, size_t n) {
        clear();
        if (n == 0) return;
        void *raw = mem->allocate(n * sizeof(T), alignof(T));
        T *p = static_cast<T *>(raw);
        for (size_t i = 0; i < n; ++i) ::new (static_cast<void *>(p + i)) T();
        mem_ = mem;
        p_ = p;
        n_ = n;
    }
    void clear() {
        for (size_t i = n_; i-- > 0;) p_[i].~T();
        if (p_) mem_->deallocate(p_, n_ * sizeof(T), alignof(T));
        p_ = nullptr;
        n_ = 0;
    }
    size_t size() const { return n_; }
    T &operator[](size_t i) { return p_[i]; }
    const T &operator[](size_t i) const { return p_[i]; }
    T *begin() { return p_; }
    T *end() { return p_ + n_; }

private:
    std::pmr::memory_resource *mem_ = nullptr;
    T *p_ = nullptr;
    size_t n_ = 0;
};

}  // namespace terse
