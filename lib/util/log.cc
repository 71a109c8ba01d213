#include "util/log.h"

#include <atomic>
#include <cstdarg>
#include <algorithm>
#include <cstdio>

namespace terse {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Warn)};
std::atomic<int> g_rank{-1};
const char *const kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

void log_set_level(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
void log_set_rank(int world_rank) { g_rank.store(world_rank, std::memory_order_relaxed); }
bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }

void log(LogLevel level, const char *fmt, ...) {
    if (!log_enabled(level)) return;
    // Format into one buffer and write once, so lines of different ranks and
    // threads do not interleave mid-line.
    char line[2048];
    int n = snprintf(line, sizeof line, "terse[%d] %s: ", g_rank.load(std::memory_order_relaxed),
                     kNames[static_cast<int>(level)]);
    if (n < 0) return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    size_t len = m < 0 ? size_t(n) : std::min(sizeof line - 2, size_t(n + m));
    line[len++] = '\n';
    fwrite(line, 1, len, stderr);
}

}  // namespace terse
