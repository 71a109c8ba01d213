// Changes to a communicator's configuration sources after it exists: its
// terse_* MPI_Info hints and its name (config file sections match names).
// The MPI wrappers call these; they never write CommState themselves.
// Each change re-resolves the configuration locally and marks the state
// not ready, so that the next collective agrees on it again.
#pragma once

#include "config/config.h"
#include "runtime/comm_state.h"
#include "util/status.h"

#include <mpi.h>

namespace terse {

// The terse_* keys of info without their prefix, validated against a
// scratch configuration: a bad hint is an error at the call that gave it
// and changes nothing.
Status comm_hints_read(MPI_Info info, ConfigOverrides *keys);

// MPI_Comm_set_info: keys given replace earlier values, keys not given
// keep theirs.
void comm_hints_merge(CommState *st, const ConfigOverrides &keys);

// MPI_Comm_dup_with_info: the new communicator's hints are exactly those
// given (MPI semantics); terse_comm_configure() settings stay inherited.
void comm_hints_replace(CommState *st, ConfigOverrides keys);

// MPI_Comm_set_name.  Before first use the new name selects config file
// sections at once; after it, MPI_Comm_set_name being local, re-agreeing
// could split the ranks onto different paths, so the name takes effect at
// the next collective reconfiguration (and a warning says so).
void comm_renamed(CommState *st, const char *name);

}  // namespace terse
