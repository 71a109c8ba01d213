// The public C API of include/terse/terse.h.  Errors are returned, with a
// message for terse_last_error(); nothing here throws across the boundary.
#include "runtime/nonblocking.h"
#include "runtime/comm_state.h"
#include "config/config.h"

#include <terse/terse.h>

#include <cstring>
#include <new>

using namespace terse;

namespace {

CommState *state_for(MPI_Comm comm, Status *s) {
    clear_error();
    return comm_state_get(comm, s);
}

}  // namespace

extern "C" void terse_version(int *major, int *minor, int *patch) {
    if (major) *major = TERSE_VERSION_MAJOR;
    if (minor) *minor = TERSE_VERSION_MINOR;
    if (patch) *patch = TERSE_VERSION_PATCH;
}

extern "C" terse_status_t terse_comm_configure(MPI_Comm comm, const char *key, const char *value) {
    if (!key) return set_error(TERSE_ERR_INVALID, "terse_comm_configure: key is NULL");
    try {
        Status s;
        CommState *st = state_for(comm, &s);
        if (!st) return s;
        ConfigOverrides next = st->api_overrides;
        if (value) {
            // Validate against a scratch copy: a bad value changes nothing.
            CommConfig scratch = st->config;
            s = config_apply_overrides({{key, value}}, &scratch);
            if (s != TERSE_OK) return s;
            next[key] = value;
        } else {
            next.erase(key);
        }
        st->api_overrides = std::move(next);
        st->reresolve();
        return TERSE_OK;
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse_comm_configure: out of memory");
    }
}

extern "C" terse_status_t terse_set_next_priority(MPI_Comm comm, int priority) {
    if (comm == MPI_COMM_NULL) return set_error(TERSE_ERR_INVALID, "terse_set_next_priority: MPI_COMM_NULL");
    nb_set_next_priority(comm, priority);
    return TERSE_OK;
}

extern "C" terse_status_t terse_comm_get_config(MPI_Comm comm, char *buf, size_t buflen) {
    if (!buf || buflen == 0) return set_error(TERSE_ERR_INVALID, "terse_comm_get_config: empty buffer");
    Status s;
    CommState *st = state_for(comm, &s);
    if (!st) return s;
    std::string c = st->config.canonical();
    if (c.size() + 1 > buflen)
        return set_error(TERSE_ERR_INVALID, "terse_comm_get_config: buffer of %zu bytes, need %zu", buflen,
                         c.size() + 1);
    memcpy(buf, c.c_str(), c.size() + 1);
    return TERSE_OK;
}

extern "C" terse_status_t terse_comm_stats(MPI_Comm comm, terse_comm_stats_t *stats, size_t size) {
    if (!stats) return set_error(TERSE_ERR_INVALID, "terse_comm_stats: stats is NULL");
    if (size == 0 || size > sizeof(terse_comm_stats_t))
        return set_error(TERSE_ERR_INVALID, "terse_comm_stats: size %zu (this library: %zu)", size,
                         sizeof(terse_comm_stats_t));
    Status s;
    CommState *st = state_for(comm, &s);
    if (!st) return s;
    // A caller built against an older, smaller struct gets its prefix.
    const terse_comm_stats_t c = st->stats.counters();
    memcpy(stats, &c, size);
    return TERSE_OK;
}

extern "C" terse_status_t terse_comm_stats_reset(MPI_Comm comm) {
    Status s;
    CommState *st = state_for(comm, &s);
    if (!st) return s;
    st->stats.reset();
    return TERSE_OK;
}
