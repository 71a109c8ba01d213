// Diagnostics to stderr, prefixed with "terse[rank]".  The level comes from
// TERSE_LOG (error, warn, info, debug; default warn) and is read once at
// initialisation, never on the hot path.
#pragma once

namespace terse {

enum class LogLevel : int { Error = 0, Warn = 1, Info = 2, Debug = 3 };

void log_set_level(LogLevel level);
void log_set_rank(int world_rank);
bool log_enabled(LogLevel level);
void log(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace terse

#define TERSE_LOG_ERROR(...) ::terse::log(::terse::LogLevel::Error, __VA_ARGS__)
#define TERSE_LOG_WARN(...) ::terse::log(::terse::LogLevel::Warn, __VA_ARGS__)
#define TERSE_LOG_INFO(...)                                                                                    \
    do {                                                                                                       \
        if (::terse::log_enabled(::terse::LogLevel::Info)) ::terse::log(::terse::LogLevel::Info, __VA_ARGS__); \
    } while (0)
#define TERSE_LOG_DEBUG(...)                                                                                     \
    do {                                                                                                         \
        if (::terse::log_enabled(::terse::LogLevel::Debug)) ::terse::log(::terse::LogLevel::Debug, __VA_ARGS__); \
    } while (0)
