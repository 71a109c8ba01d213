// The lock-free communicator -> state table (lib/runtime/comm_table.h):
// entries found, replaced and forgotten; probe runs kept whole when an
// entry in their middle goes; a full table or a crowded home declines to
// cache instead of failing; and under concurrent writers a lookup may miss
// but never returns another communicator's state.  Handles and states are
// fake (the table never dereferences them).
#include "runtime/comm_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <chrono>
#include <thread>
#include <type_traits>
#include <vector>

using terse::CommState;
using terse::CommTable;

namespace {

// Handles are pointers in Open MPI and integers in MPICH.
template <class Handle = MPI_Comm>
Handle handle(uintptr_t v) {
    if constexpr (std::is_pointer_v<Handle>) return reinterpret_cast<Handle>(v);
    else return static_cast<Handle>(v);
}

// Handles look like heap pointers: 16-byte aligned, near each other.
MPI_Comm comm(size_t i) { return handle(0x7f0000001000u + 16 * i); }
CommState *state(size_t i) { return reinterpret_cast<CommState *>(0x5500000000u + 64 * (i + 1)); }

// n handles whose probes start at slot home (found by trying).
std::vector<size_t> homed_at(size_t home, size_t n, size_t from = 0) {
    std::vector<size_t> out;
    for (size_t i = from; out.size() < n; ++i)
        if (CommTable::home(CommTable::key_of(comm(i))) == home) out.push_back(i);
    return out;
}
std::vector<size_t> colliding(size_t n) { return homed_at(CommTable::home(CommTable::key_of(comm(0))), n); }

}  // namespace

TEST(CommTable, FindsReplacesAndForgets) {
    auto t = std::make_unique<CommTable>();
    for (size_t i = 0; i < 1000; ++i) t->insert(comm(i), state(i));
    EXPECT_EQ(t->size(), 1000u);
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(t->find(comm(i)), state(i)) << i;
    EXPECT_EQ(t->find(comm(5000)), nullptr);
    for (size_t i = 0; i < 1000; i += 2) t->erase(comm(i), state(i));
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(t->find(comm(i)), i % 2 ? state(i) : nullptr) << i;
    // A handle freed and reused by a new communicator: the new state only.
    t->insert(comm(4), state(9999));
    EXPECT_EQ(t->find(comm(4)), state(9999));
    // Replacing in place, and erasing with a state that is not the entry's.
    t->insert(comm(3), state(7777));
    EXPECT_EQ(t->find(comm(3)), state(7777));
    t->erase(comm(3), state(3));
    EXPECT_EQ(t->find(comm(3)), state(7777));
    t->clear();
    EXPECT_EQ(t->size(), 0u);
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(t->find(comm(i)), nullptr);
}

TEST(CommTable, ErasingInsideAProbeRunKeepsTheRest) {
    auto t = std::make_unique<CommTable>();
    const std::vector<size_t> keys = colliding(CommTable::kMaxProbe + 4);
    for (size_t k : keys) t->insert(comm(k), state(k));
    // Only kMaxProbe of them fit near their common home; the others are
    // not cached (lookups fall back to the attribute).
    size_t cached = 0;
    for (size_t k : keys) {
        CommState *s = t->find(comm(k));
        ASSERT_TRUE(s == nullptr || s == state(k));
        cached += s != nullptr;
    }
    EXPECT_EQ(cached, CommTable::kMaxProbe);
    // Remove every third from the run: all others stay reachable.
    for (size_t j = 0; j < CommTable::kMaxProbe; j += 3) t->erase(comm(keys[j]), state(keys[j]));
    for (size_t j = 0; j < CommTable::kMaxProbe; ++j)
        ASSERT_EQ(t->find(comm(keys[j])), j % 3 ? state(keys[j]) : nullptr) << j;
}

TEST(CommTable, FullTableDeclinesInsteadOfFailing) {
    auto t = std::make_unique<CommTable>();
    for (size_t i = 0; i < CommTable::kSlots; ++i) t->insert(comm(i), state(i));
    EXPECT_LE(t->size(), CommTable::kSlots / 2);
    size_t found = 0;
    for (size_t i = 0; i < CommTable::kSlots; ++i) {
        CommState *s = t->find(comm(i));
        ASSERT_TRUE(s == nullptr || s == state(i)) << i;
        found += s != nullptr;
    }
    EXPECT_EQ(found, t->size());
}

// Readers look up their own communicators while a writer creates and frees
// others in front of them in the same probe run, so that every erasure
// shifts the readers' entries: a lookup may miss (the caller then asks the
// attribute and enters the state again), never return another's state.
TEST(CommTable, ConcurrentLookupsNeverSeeAnotherState) {
    auto t = std::make_unique<CommTable>();
    const size_t h0 = CommTable::home(CommTable::key_of(comm(0)));
    const size_t readers = 3, own = 4;
    const std::vector<size_t> wkeys = homed_at(h0, 8);  // the writer's, first in the run
    const std::vector<size_t> rkeys = homed_at((h0 + 1) % CommTable::kSlots, readers * own);
    for (size_t k : wkeys) t->insert(comm(k), state(k));
    for (size_t k : rkeys) t->insert(comm(k), state(k));
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> wrong{0}, misses{0}, hits{0};
    std::vector<std::thread> th;
    for (size_t r = 0; r < readers; ++r)
        th.emplace_back([&, r] {
            while (!stop.load(std::memory_order_relaxed))
                for (size_t j = r * own; j < (r + 1) * own; ++j) {
                    CommState *s = t->find(comm(rkeys[j]));
                    if (!s) {
                        misses++;
                        // What comm_state_find() does on a miss.
                        t->insert(comm(rkeys[j]), state(rkeys[j]));
                    } else if (s != state(rkeys[j])) {
                        wrong++;
                    } else {
                        hits++;
                    }
                }
        });
    // Each round frees the writer's entry at the head of the run (every
    // entry behind it moves up one slot) and creates it anew at the tail,
    // with another state as a new communicator on a reused handle has.
    std::vector<CommState *> current;
    for (size_t k : wkeys) current.push_back(state(k));
    // At least 50000 rounds, and on a loaded machine until the readers have
    // looked up many times while the writer ran (a test that never
    // overlapped them would prove nothing): at most 20 s.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto overlapped = [&] { return hits.load() + misses.load() >= 1000 * readers; };
    for (size_t round = 0; round < 50000 || (!overlapped() && std::chrono::steady_clock::now() < give_up);
         ++round) {
        const size_t w = round % wkeys.size();
        t->erase(comm(wkeys[w]), current[w]);
        ASSERT_EQ(t->find(comm(wkeys[w])), nullptr);
        current[w] = state(wkeys[w] + round + 1);
        t->insert(comm(wkeys[w]), current[w]);
        if (round % 1000 == 0) std::this_thread::yield();
    }
    stop = true;
    for (auto &x : th) x.join();
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_TRUE(overlapped()) << "the readers barely ran while the writer did";
    EXPECT_GT(hits.load(), 0u);
    for (size_t k : rkeys) EXPECT_EQ(t->find(comm(k)), state(k));
    printf("lookups: %llu found, %llu missed (writer busy), %llu wrong\n", (unsigned long long)hits.load(),
           (unsigned long long)misses.load(), (unsigned long long)wrong.load());
}
