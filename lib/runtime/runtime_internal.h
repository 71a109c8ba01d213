// Process-wide runtime state shared by comm_state.cc and public_api.cc; not for
// the wrappers (they use comm_state.h).
#pragma once

#include "config/config.h"

#include <cstddef>
#include <cstdint>

namespace terse {

// Per-communicator defaults from the environment (TERSE_CODEC, ...).
const CommConfig &runtime_env_defaults();
// The TERSE_CONFIG file, or nullptr when none is set.
const ConfigFile *runtime_config_file();
// Context ids tag every message of a communicator's collectives, so two
// live contexts that share a process must never hold the same id.  Ids are
// agreed like MPI context ids: the members OR together their masks of ids
// in use, take the lowest id free everywhere, and claim it locally; since
// another thread may have claimed it meanwhile, they confirm the claim
// collectively and retry if any member lost the race.
constexpr uint32_t kCtxIdCount = 8192;  // live contexts per process
constexpr size_t kCtxMaskWords = kCtxIdCount / 64;
// Copy this process's mask of ids in use (bit set = used; id 0 is reserved).
void runtime_ctx_used(uint64_t mask[kCtxMaskWords]);
// Claim id locally; false if it is in use (another thread won it).
bool runtime_ctx_claim(uint32_t id);
// Release a claimed id (communicator freed, or a lost race).
void runtime_ctx_release(uint32_t id);

class CommState;
// The agreed min_bytes st lends the pass-through gate (pass_through.h):
// its agreed min_bytes once ready and enabled, SIZE_MAX otherwise.
void runtime_gate_note(CommState *st, size_t agreed_min_bytes);

}  // namespace terse
