#include "runtime/pass_through.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

namespace terse {

namespace pass_detail {

__attribute__((visibility("hidden"))) std::atomic<size_t> g_gate{SIZE_MAX};
__attribute__((visibility("hidden"))) size_t g_floor = SIZE_MAX;
__attribute__((visibility("hidden"), tls_model("initial-exec"))) thread_local constinit Counter t_straight;

namespace {

// Counters of live threads, and the sum of those of ended threads.
struct Counters {
    std::mutex mu;
    std::vector<Counter *> live;
    uint64_t ended = 0;
};
Counters &counters() {
    static Counters *c = new Counters;  // never destroyed: threads may end after static destruction
    return *c;
}

// Takes the thread's count into the ended sum when the thread ends.
struct Unlister {
    bool armed = false;
    ~Unlister() {
        if (!armed) return;
        Counters &c = counters();
        std::lock_guard<std::mutex> lk(c.mu);
        c.live.erase(std::remove(c.live.begin(), c.live.end(), &t_straight), c.live.end());
        c.ended += t_straight.n.load(std::memory_order_relaxed);
    }
};
thread_local Unlister t_unlister;

}  // namespace

void list_counter() {
    Counters &c = counters();
    std::lock_guard<std::mutex> lk(c.mu);
    c.live.push_back(&t_straight);
    t_straight.listed = true;
    t_unlister.armed = true;
}

}  // namespace pass_detail

uint64_t straight_passes() {
    auto &c = pass_detail::counters();
    std::lock_guard<std::mutex> lk(c.mu);
    uint64_t sum = c.ended;
    for (const pass_detail::Counter *k : c.live) sum += k->n.load(std::memory_order_relaxed);
    return sum;
}

void pass_open(size_t floor) {
    pass_detail::g_floor = floor;
    pass_detail::g_gate.store(floor, std::memory_order_release);
}

void pass_set_gate(size_t gate) { pass_detail::g_gate.store(gate, std::memory_order_release); }

void pass_close() {
    pass_detail::g_gate.store(SIZE_MAX, std::memory_order_release);
    pass_detail::g_floor = SIZE_MAX;
}

}  // namespace terse
