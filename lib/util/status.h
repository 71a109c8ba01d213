// Internal status handling: every fallible function returns terse_status_t
// and, on failure, records a message for the user with set_error().  The
// message lives in a thread-local buffer read by terse_last_error().
#pragma once

#include <terse/types.h>

#include <cstdarg>
#include <string>

namespace terse {

using Status = terse_status_t;

// Record a formatted message for the calling thread and return status.
Status set_error(Status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The calling thread's last message ("" if none).
const char *last_error();

// Clear the calling thread's message.
void clear_error();

}  // namespace terse
