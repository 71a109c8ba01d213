// The communicator -> CommState lookup of the hot path, without a lock.
//
// The attribute on the communicator owns its CommState (comm_state.h), but
// reading it back (PMPI_Comm_get_attr) takes a lock that Open MPI shares
// between all communicators of the process, so threads running collectives
// on different communicators would serialise on it.  This table caches
// handle -> state for bound states; a lookup reads it under a sequence
// counter and never waits: when a writer ran meanwhile, or the handle is
// not there, it answers "not found" and the caller asks the attribute.  So
// the table may forget or miss an entry at any time without harm; what it
// must never do is give the state of another communicator:
//  - an entry is added when a state is bound to its communicator and
//    removed in the attribute's delete callback, which MPI runs when the
//    communicator is freed, before its handle can be reused;
//  - MPI forbids freeing a communicator while another thread uses it, so
//    the entry of the communicator a lookup asks for cannot change under
//    it; the sequence counter covers the entries of other communicators
//    that move while it probes past them.
// Writers (communicator creation and free, rare) serialise on a mutex.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>

namespace terse {

class CommState;

class CommTable {
public:
    // Handles are pointers in Open MPI and integers in MPICH.
    template <class Handle>
    static uintptr_t key_of(Handle h) {
        if constexpr (std::is_pointer_v<Handle>) return reinterpret_cast<uintptr_t>(h);
        else return static_cast<uintptr_t>(h);
    }

    // The state cached for comm, or nullptr (not cached, or a writer was
    // busy): then ask the attribute.
    CommState *find(MPI_Comm comm) const {
        const uintptr_t key = key_of(comm);
        const uint64_t v1 = seq_.load(std::memory_order_acquire);
        if (v1 & 1) return nullptr;
        CommState *found = nullptr;
        for (size_t i = home(key), n = 0; n < kMaxProbe; ++n, i = (i + 1) & kMask) {
            const uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
            if (k == kEmpty) break;
            if (k == key) {
                found = slots_[i].state.load(std::memory_order_relaxed);
                break;
            }
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        return seq_.load(std::memory_order_relaxed) == v1 ? found : nullptr;
    }

    // Cache comm -> st (replacing an entry for comm).  Without room within
    // kMaxProbe slots of its home the entry is not cached.
    void insert(MPI_Comm comm, CommState *st);
    // Forget comm's entry if it holds st.
    void erase(MPI_Comm comm, const CommState *st);
    void clear();
    size_t size() const;  // entries, for tests

    // Slots (a power of two) and the longest probe sequence: at most half
    // the slots are used, so a probe rarely passes more than a few.
    static constexpr size_t kSlots = 4096;
    static constexpr size_t kMaxProbe = 32;
    // The slot a key's probe starts at (public for tests).
    static size_t home(uintptr_t key) {
        // Fibonacci hashing; handles are aligned pointers or sequential ints.
        return size_t((uint64_t(key) * 0x9E3779B97F4A7C15ull) >> 52) & kMask;
    }

private:
    static constexpr size_t kMask = kSlots - 1;
    static constexpr uintptr_t kEmpty = 0;  // no valid handle is 0 (Open MPI: a pointer; MPICH: tagged)
    static_assert(kSlots == size_t(1) << 12, "home() keeps the top 12 bits of the product");
    // Writer side, under the mutex and inside a seq_ write section.
    void erase_at(size_t i);
    void begin_write();
    void end_write();

    struct Slot {
        std::atomic<uintptr_t> key{kEmpty};
        std::atomic<CommState *> state{nullptr};
    };
    alignas(64) std::atomic<uint64_t> seq_{0};  // odd while a writer changes slots
    mutable std::mutex mu_;                     // serialises writers
    size_t used_ = 0;                           // under mu_
    Slot slots_[kSlots];
};

}  // namespace terse
