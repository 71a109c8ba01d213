// Communicator hooks that change terse's per-communicator configuration:
// MPI_Comm_set_info and MPI_Comm_dup_with_info (terse_* hints) and
// MPI_Comm_set_name (config file sections match the name).
#include "dispatch.h"
#include "reentry_guard.h"

#include "runtime/comm_settings.h"
#include "runtime/comm_state.h"

using namespace terse;

extern "C" int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
    if (ReentryGuard::active() || !runtime_active()) return PMPI_Comm_set_info(comm, info);
    ReentryGuard guard;
    ConfigOverrides keys;
    Status s = comm_hints_read(info, &keys);
    if (s != TERSE_OK) return report_error(comm, s, "MPI_Comm_set_info");
    int rc = PMPI_Comm_set_info(comm, info);
    if (rc != MPI_SUCCESS) return rc;
    CommState *st = comm_state_get(comm, &s);
    if (!st) return report_error(comm, s, "MPI_Comm_set_info");
    comm_hints_merge(st, keys);
    return MPI_SUCCESS;
}

extern "C" int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
    if (ReentryGuard::active() || !runtime_active()) return PMPI_Comm_dup_with_info(comm, info, newcomm);
    ReentryGuard guard;
    ConfigOverrides keys;
    Status s = comm_hints_read(info, &keys);
    if (s != TERSE_OK) return report_error(comm, s, "MPI_Comm_dup_with_info");
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    if (rc != MPI_SUCCESS) return rc;
    CommState *st = comm_state_get(*newcomm, &s);
    if (!st) return report_error(*newcomm, s, "MPI_Comm_dup_with_info");
    comm_hints_replace(st, std::move(keys));
    return MPI_SUCCESS;
}

extern "C" int MPI_Comm_set_name(MPI_Comm comm, const char *name) {
    int rc = PMPI_Comm_set_name(comm, name);
    if (rc != MPI_SUCCESS || ReentryGuard::active() || !runtime_active()) return rc;
    ReentryGuard guard;
    CommState *st = comm_state_find(comm);
    if (!st || !st->bound()) return rc;  // read at first use
    comm_renamed(st, name);
    return rc;
}
