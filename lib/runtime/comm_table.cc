#include "runtime/comm_table.h"

namespace terse {

void CommTable::begin_write() {
    seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
}

void CommTable::end_write() { seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

void CommTable::insert(MPI_Comm comm, CommState *st) {
    const uintptr_t key = key_of(comm);
    if (key == kEmpty || !st) return;
    std::lock_guard<std::mutex> lk(mu_);
    size_t free_slot = kSlots;
    for (size_t i = home(key), n = 0; n < kMaxProbe; ++n, i = (i + 1) & kMask) {
        const uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
        if (k == key) {
            begin_write();
            slots_[i].state.store(st, std::memory_order_relaxed);
            end_write();
            return;
        }
        if (k == kEmpty) {
            free_slot = i;
            break;
        }
    }
    // Full, or no room near home: lookups of comm use the attribute.
    if (free_slot == kSlots || used_ >= kSlots / 2) return;
    begin_write();
    slots_[free_slot].state.store(st, std::memory_order_relaxed);
    slots_[free_slot].key.store(key, std::memory_order_relaxed);
    end_write();
    ++used_;
}

void CommTable::erase_at(size_t i) {
    // Backward-shift deletion: later entries of the probe run move up so
    // that no tombstone lengthens future probes.  An entry stays where it is
    // when its home lies cyclically in (i, j].
    size_t j = i;
    for (;;) {
        slots_[i].key.store(kEmpty, std::memory_order_relaxed);
        slots_[i].state.store(nullptr, std::memory_order_relaxed);
        for (;;) {
            j = (j + 1) & kMask;
            const uintptr_t k = slots_[j].key.load(std::memory_order_relaxed);
            if (k == kEmpty) return;
            const size_t h = home(k);
            const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
            if (!stays) break;
        }
        slots_[i].state.store(slots_[j].state.load(std::memory_order_relaxed), std::memory_order_relaxed);
        slots_[i].key.store(slots_[j].key.load(std::memory_order_relaxed), std::memory_order_relaxed);
        i = j;
    }
}

void CommTable::erase(MPI_Comm comm, const CommState *st) {
    const uintptr_t key = key_of(comm);
    if (key == kEmpty) return;
    std::lock_guard<std::mutex> lk(mu_);
    for (size_t i = home(key), n = 0; n < kMaxProbe; ++n, i = (i + 1) & kMask) {
        const uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
        if (k == kEmpty) return;
        if (k != key) continue;
        if (slots_[i].state.load(std::memory_order_relaxed) != st) return;
        begin_write();
        erase_at(i);
        end_write();
        --used_;
        return;
    }
}

void CommTable::clear() {
    std::lock_guard<std::mutex> lk(mu_);
    if (used_ == 0) return;
    begin_write();
    for (Slot &s : slots_) {
        s.key.store(kEmpty, std::memory_order_relaxed);
        s.state.store(nullptr, std::memory_order_relaxed);
    }
    end_write();
    used_ = 0;
}

size_t CommTable::size() const {
    std::lock_guard<std::mutex> lk(mu_);
    return used_;
}

}  // namespace terse
