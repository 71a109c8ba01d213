// MPI_Info hints into the configuration: reads an MPI_Info's terse_* keys
// and applies them through config_apply_hints() (config/, plain pairs).
#pragma once

#include "config/config.h"
#include "util/status.h"

#include <mpi.h>

namespace terse {

// The hints of info (MPI_INFO_NULL: none) applied to *cfg, all or nothing;
// on success *taken (if given) holds the terse keys without their prefix.
Status config_apply_info(MPI_Info info, CommConfig *cfg, ConfigOverrides *taken = nullptr);

}  // namespace terse
