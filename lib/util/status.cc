#include "util/status.h"

#include <cstdio>

namespace terse {

namespace {
// One message per thread: a failing call on one thread never clobbers the
// message another thread is about to read.
thread_local char t_message[1024];
}  // namespace

Status set_error(Status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_message, sizeof t_message, fmt, ap);
    va_end(ap);
    return status;
}

const char *last_error() { return t_message; }

void clear_error() { t_message[0] = '\0'; }

}  // namespace terse

extern "C" const char *terse_status_string(terse_status_t status) {
    switch (status) {
    case TERSE_OK: return "success";
    case TERSE_ERR_INVALID: return "invalid argument or configuration";
    case TERSE_ERR_NO_MEMORY: return "out of memory";
    case TERSE_ERR_UNSUPPORTED: return "unsupported";
    case TERSE_ERR_PLUGIN: return "codec plugin error";
    case TERSE_ERR_TRANSPORT: return "transport (UCX) error";
    case TERSE_ERR_MISMATCH: return "ranks disagree on configuration";
    case TERSE_ERR_CORRUPT: return "corrupt frame";
    case TERSE_ERR_MPI: return "MPI error";
    case TERSE_ERR_NOT_INITIALIZED: return "not initialized";
    case TERSE_ERR_IO: return "I/O error";
    case TERSE_ERR_REMOTE: return "failure on another rank";
    }
    return "unknown status";
}

extern "C" const char *terse_last_error(void) { return terse::last_error(); }
