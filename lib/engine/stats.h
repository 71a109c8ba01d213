// Per-communicator counters.  Updated only by the thread running a
// collective on that communicator (MPI requires collectives on one
// communicator to be serialised), so plain fields suffice.
#pragma once

#include <terse/terse.h>

#include <chrono>
#include <string>

namespace terse {

struct Stats {
    terse_comm_stats_t c{};

    void add_error(double abs_err, double rel_err) {
        if (abs_err > c.max_abs_error) c.max_abs_error = abs_err;
        if (rel_err > c.max_rel_error) c.max_rel_error = rel_err;
    }
    // One line: "calls=.. passed=.. in=.. wire=.. ratio=.. encode=..s ..."
    std::string format() const;
};

// Monotonic seconds, for the encode/decode/wait timers.
inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace terse
