// Per-communicator counters, with one owner: the Stats object of the
// communicator's state.  Every change goes through a named method below, so
// each counter has one place that says when it moves:
//   count_intercepted  the runtime, as it starts an operation (collective.cc)
//   count_passed       the runtime, for a call at or above the floor that
//                      terse did not take (collective_passed)
//   add_operation      the engine, once per finished operation (OpBase)
//   add_error          the engine's verification (TERSE_VERIFY)
//   count_guard_check  the engine, for each call the error guard checks
//   note_guard_trip    the engine, when the guard switches to lossless
//   reset              terse_comm_stats_reset()
// Updated only by the thread running a collective on that communicator (MPI
// requires collectives on one communicator to be serialised), so plain
// fields suffice.
#pragma once

#include <terse/terse.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace terse {

// What one finished operation adds: wire bytes as sent, the same frames'
// bytes had they gone raw, chunks that did go raw (codec declined), and its
// time split into encode, decode and the rest (waiting).
struct OpAccount {
    uint64_t wire = 0;
    uint64_t wire_raw = 0;
    uint64_t raw_chunks = 0;
    double seconds_total = 0;
    double seconds_encode = 0;
    double seconds_decode = 0;
};

class Stats {
public:
    void count_intercepted(uint64_t bytes_in) {
        c_.calls_intercepted++;
        c_.bytes_in += bytes_in;
    }
    void count_passed() { c_.calls_passed++; }
    void add_operation(const OpAccount &a);
    void add_error(double abs_err, double rel_err) {
        if (abs_err > c_.max_abs_error) c_.max_abs_error = abs_err;
        if (rel_err > c_.max_rel_error) c_.max_rel_error = rel_err;
    }
    void count_guard_check() { c_.guard_checks++; }
    // call: the lossy allreduce (1-based, counted by the guard) that tripped.
    void note_guard_trip(uint64_t call) {
        c_.guard_trips++;
        c_.guard_trip_call = call;
    }
    void reset() { c_ = terse_comm_stats_t{}; }

    // The public struct (terse_comm_stats(3)), read-only.
    const terse_comm_stats_t &counters() const { return c_; }
    // Whether any call was counted, taken or passed.
    bool any_calls() const { return c_.calls_intercepted || c_.calls_passed; }
    // One line: "intercepted=.. passed=.. bytes_in=.. wire=.. ratio=.. ..."
    std::string format() const;

private:
    terse_comm_stats_t c_{};
};

// Monotonic seconds, for the encode/decode/wait timers.
inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace terse
