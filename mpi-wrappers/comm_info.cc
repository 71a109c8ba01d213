// Communicator hooks that change terse's per-communicator configuration:
// MPI_Comm_set_info and MPI_Comm_dup_with_info (terse_* hints) and
// MPI_Comm_set_name (config file sections match the name).
#include "dispatch.h"
#include "reentry_guard.h"

#include "runtime/comm_state.h"
#include "runtime/info_hints.h"
#include "util/log.h"

namespace terse {
namespace {

// Collect the terse_* keys of info (without the prefix), validating them
// against a scratch configuration so that a bad hint is an error at the
// call that gave it and changes nothing.
Status info_terse_keys(MPI_Info info, ConfigOverrides *out) {
    CommConfig scratch;
    return config_apply_info(info, &scratch, out);
}

}  // namespace
}  // namespace terse

using namespace terse;

extern "C" int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
    if (ReentryGuard::active() || !runtime_active()) return PMPI_Comm_set_info(comm, info);
    ReentryGuard guard;
    ConfigOverrides keys;
    Status s = info_terse_keys(info, &keys);
    if (s != TERSE_OK) return report_error(comm, s, "MPI_Comm_set_info");
    int rc = PMPI_Comm_set_info(comm, info);
    if (rc != MPI_SUCCESS) return rc;
    CommState *st = comm_state_get(comm, &s);
    if (!st) return report_error(comm, s, "MPI_Comm_set_info");
    // Keys given here replace earlier values; keys not given keep theirs.
    for (auto &[k, v] : keys) st->info_overrides[k] = v;
    st->reresolve();
    return MPI_SUCCESS;
}

extern "C" int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
    if (ReentryGuard::active() || !runtime_active())
        return PMPI_Comm_dup_with_info(comm, info, newcomm);
    ReentryGuard guard;
    ConfigOverrides keys;
    Status s = info_terse_keys(info, &keys);
    if (s != TERSE_OK) return report_error(comm, s, "MPI_Comm_dup_with_info");
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    if (rc != MPI_SUCCESS) return rc;
    CommState *st = comm_state_get(*newcomm, &s);
    if (!st) return report_error(*newcomm, s, "MPI_Comm_dup_with_info");
    // The new communicator's hints are exactly those given (MPI semantics),
    // while terse_comm_configure() settings of the parent are inherited.
    st->info_overrides = std::move(keys);
    st->reresolve();
    return MPI_SUCCESS;
}

extern "C" int MPI_Comm_set_name(MPI_Comm comm, const char *name) {
    int rc = PMPI_Comm_set_name(comm, name);
    if (rc != MPI_SUCCESS || ReentryGuard::active() || !runtime_active()) return rc;
    ReentryGuard guard;
    CommState *st = comm_state_find(comm);
    if (!st || !st->bound()) return rc;  // read at first use
    if (st->ready) {
        // MPI_Comm_set_name is local, so re-agreeing now could split the
        // ranks onto different paths; the name is applied at the next
        // collective reconfiguration instead.
        TERSE_LOG_WARN("communicator renamed '%s' -> '%s' after first use: config file sections "
                       "for the new name apply after the next MPI_Comm_set_info or "
                       "terse_comm_configure()", st->name.c_str(), name);
        st->name = name;
        return rc;
    }
    st->name = name;
    st->reresolve();
    return rc;
}
