#include "engine/op_memory.h"

#include <cstdint>
#include <cstdlib>
#include <new>

namespace terse {

namespace {
constexpr size_t kHeader = alignof(std::max_align_t) > 16 ? alignof(std::max_align_t) : 16;

size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }
}  // namespace

OpMemory::~OpMemory() {
    rewind();
    std::free(block_);
}

void *OpMemory::do_allocate(size_t bytes, size_t align) {
    if (align < alignof(std::max_align_t)) align = alignof(std::max_align_t);
    demand_ += bytes + align;
    if (block_) {
        const uintptr_t base = reinterpret_cast<uintptr_t>(block_);
        const size_t at = align_up(base + used_, align) - base;
        if (at + bytes <= cap_) {
            used_ = at + bytes;
            return block_ + at;
        }
    }
    // Does not fit this time: a block of its own, freed at rewind().
    const size_t head = align > kHeader ? align : kHeader;
    void *raw = std::aligned_alloc(head, align_up(head + bytes, head));
    if (!raw) throw std::bad_alloc();
    auto *o = static_cast<Overflow *>(raw);
    o->next = overflow_;
    overflow_ = o;
    return static_cast<unsigned char *>(raw) + head;
}

void OpMemory::rewind() {
    const bool overflowed = overflow_ != nullptr;
    while (overflow_) {
        Overflow *next = overflow_->next;
        std::free(overflow_);
        overflow_ = next;
    }
    if (overflowed && demand_ > cap_) {
        const size_t want = align_up(demand_ + demand_ / 4, 4096);
        std::free(block_);
        block_ = nullptr;
        cap_ = 0;
        if (want <= kMaxRetained) {
            // A failure here only means the next operation overflows again.
            block_ = static_cast<unsigned char *>(std::aligned_alloc(4096, want));
            if (block_) cap_ = want;
        }
    }
    used_ = 0;
    demand_ = 0;
}

OpMemoryPool::~OpMemoryPool() {
    // Every operation has ended (the communicator is being freed).
    for (OpMemory *m : free_) delete m;
}

OpMemory *OpMemoryPool::acquire() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (!free_.empty()) {
            OpMemory *m = free_.back();
            free_.pop_back();
            return m;
        }
    }
    OpMemory *m = new (std::nothrow) OpMemory();
    if (!m) return nullptr;
    std::lock_guard<std::mutex> lk(mu_);
    // Room to take every OpMemory back without allocating in release().
    try {
        free_.reserve(++total_);
    } catch (const std::bad_alloc &) {
        --total_;
        delete m;
        return nullptr;
    }
    return m;
}

void OpMemoryPool::release(OpMemory *m) {
    if (!m) return;
    m->rewind();
    std::lock_guard<std::mutex> lk(mu_);
    free_.push_back(m);
}

}  // namespace terse
