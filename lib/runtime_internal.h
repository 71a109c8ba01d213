// Process-wide runtime state shared by comm_state.cc and api.cc; not for
// the wrappers (they use comm_state.h).
#pragma once

#include "config.h"

#include <cstdint>

namespace terse {

// Per-communicator defaults from the environment (TERSE_CODEC, ...).
const CommConfig &runtime_env_defaults();
// The TERSE_CONFIG file, or nullptr when none is set.
const ConfigFile *runtime_config_file();
// This process's next free context id (a proposal for the agreement).
uint64_t runtime_next_ctx_id();
// Record the agreed id (the max of all members' proposals) as taken.
uint32_t runtime_claim_ctx_id(uint64_t agreed);

}  // namespace terse
