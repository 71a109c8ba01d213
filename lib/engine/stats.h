// Per-communicator counters, with one owner: the Stats object of the
// communicator's state.  Every change goes through a named method below, so
// each counter has one place that says when it moves:
//   count_intercepted  the runtime, as it starts an operation (collective.cc),
//                      per kind (terse_coll_kind_t)
//   count_passed       the runtime, for a call at or above the floor that
//                      terse did not take (collective_passed)
//   add_operation      the engine, once per finished operation (OpBase), to
//                      its kind's wire bytes too
//   add_error          the engine's verification (TERSE_VERIFY)
//   count_guard_check  the engine, for each call the error guard checks
//   note_guard_trip    the engine, when the guard switches to lossless
//   reset              terse_comm_stats_reset()
// A non-blocking operation may finish on terse's progress thread while the
// application starts the next call on the communicator or reads the
// counters, so every method takes the object's lock (never contended on
// the blocking path, and taken once per call).
#pragma once

#include <terse/types.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace terse {

// What one finished operation adds: wire bytes as sent, the same frames'
// bytes had they gone raw, chunks that did go raw (codec declined), and its
// time split into encode, decode and the rest (waiting).
struct OpAccount {
    terse_coll_kind_t kind = TERSE_KIND_ALLREDUCE;
    uint64_t wire = 0;
    uint64_t wire_raw = 0;
    uint64_t raw_chunks = 0;
    double seconds_total = 0;
    double seconds_encode = 0;
    double seconds_decode = 0;
};

class Stats {
public:
    Stats() = default;
    // Copies (the statistics of a freed communicator kept for TERSE_STATS)
    // take the counters only.
    Stats(const Stats &o) : c_(o.counters()) {}
    Stats &operator=(const Stats &o) {
        if (this != &o) {
            terse_comm_stats_t c = o.counters();
            std::lock_guard<std::mutex> lk(mu_);
            c_ = c;
        }
        return *this;
    }

    void count_intercepted(uint64_t bytes_in, terse_coll_kind_t kind = TERSE_KIND_ALLREDUCE) {
        std::lock_guard<std::mutex> lk(mu_);
        c_.calls_intercepted++;
        c_.bytes_in += bytes_in;
        if (unsigned(kind) < TERSE_KIND_COUNT) {
            c_.per_kind[kind].calls++;
            c_.per_kind[kind].bytes_in += bytes_in;
        }
    }
    void count_passed() {
        std::lock_guard<std::mutex> lk(mu_);
        c_.calls_passed++;
    }
    void add_operation(const OpAccount &a);
    void add_error(double abs_err, double rel_err) {
        std::lock_guard<std::mutex> lk(mu_);
        if (abs_err > c_.max_abs_error) c_.max_abs_error = abs_err;
        if (rel_err > c_.max_rel_error) c_.max_rel_error = rel_err;
    }
    void count_guard_check() {
        std::lock_guard<std::mutex> lk(mu_);
        c_.guard_checks++;
    }
    // call: the lossy allreduce (1-based, counted by the guard) that tripped.
    void note_guard_trip(uint64_t call) {
        std::lock_guard<std::mutex> lk(mu_);
        c_.guard_trips++;
        c_.guard_trip_call = call;
    }
    void reset() {
        std::lock_guard<std::mutex> lk(mu_);
        c_ = terse_comm_stats_t{};
    }

    // A copy of the public struct (terse_comm_stats(3)).
    terse_comm_stats_t counters() const {
        std::lock_guard<std::mutex> lk(mu_);
        return c_;
    }
    // Whether any call was counted, taken or passed.
    bool any_calls() const {
        std::lock_guard<std::mutex> lk(mu_);
        return c_.calls_intercepted || c_.calls_passed;
    }
    // One line: "intercepted=.. passed=.. bytes_in=.. wire=.. ratio=.. ...",
    // then "kind=calls/bytes_in/wire" for every kind terse ran.
    std::string format() const;

private:
    mutable std::mutex mu_;
    terse_comm_stats_t c_{};
};

// The statistics name of a kind as TERSE_STATS prints it ("iallreduce").
const char *stats_kind_name(terse_coll_kind_t kind);

// Monotonic seconds, for the encode/decode/wait timers.
inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace terse
