// Which calls go straight to the MPI library, decided from the arguments
// alone, before (and instead of) any look at the communicator.
//
// The floor: the smallest min_bytes that the environment (TERSE_MIN_BYTES)
// or any section of the config file (TERSE_CONFIG) gives, minimum over the
// ranks of MPI_COMM_WORLD, agreed once at MPI_Init.  Every rank holds the
// same floor, so "this call is below the floor" is the same on every rank
// for every call, whatever each rank's own configuration: a call below it
// on a communicator that has not agreed on its configuration yet passes to
// PMPI on every rank, and the first call at or above it is where the ranks
// agree (comm_state.h).  A misconfigured rank therefore never takes another
// path than its peers: below the floor all pass (the MPI library's exact
// result), at or above it all agree and all get the mismatch error.
//
// The gate: the number the wrappers compare a call's bytes with.  It is the
// floor, lowered to the agreed min_bytes of any ready communicator of this
// process whose min_bytes is below the floor (an MPI_Info hint or
// terse_comm_configure() can give one), and SIZE_MAX while terse is not
// running.  A call below the gate passes without a lookup; any other call
// looks its communicator up and is decided there as before.  The gate is a
// shortcut only: every value from 0 to the true threshold of the call's
// communicator gives the same decisions.
//
// Calls passed without a look at their communicator are counted per thread
// (no shared cache line on the hot path) and summed at MPI_Finalize.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace terse {

// Hidden, so that the wrappers read them directly rather than through the
// GOT; initial-exec TLS, so that the counter is one %fs-relative add (see
// mpi-wrappers/reentry_guard.h).
#define TERSE_PASS_HIDDEN __attribute__((visibility("hidden")))
namespace pass_detail {
extern std::atomic<size_t> g_gate TERSE_PASS_HIDDEN;
extern size_t g_floor TERSE_PASS_HIDDEN;  // written at MPI_Init and MPI_Finalize only
struct Counter {
    std::atomic<uint64_t> n{0};
    bool listed = false;
};
extern thread_local constinit Counter t_straight TERSE_PASS_HIDDEN __attribute__((tls_model("initial-exec")));
void list_counter();
}  // namespace pass_detail
#undef TERSE_PASS_HIDDEN

// Whether a call of `bytes` (as engine_eligible counts them: the whole
// input of a reduce-scatter, one rank's block of an allgather) passes
// without a lookup.
inline bool pass_below_gate(size_t bytes) { return bytes < pass_detail::g_gate.load(std::memory_order_relaxed); }

// The agreed floor (SIZE_MAX before MPI_Init).
inline size_t pass_floor() { return pass_detail::g_floor; }

// Count one call passed without a look at its communicator.
inline void count_straight_pass() {
    pass_detail::Counter &c = pass_detail::t_straight;
    if (__builtin_expect(!c.listed, 0)) pass_detail::list_counter();
    c.n.store(c.n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Calls counted by count_straight_pass() on every thread, ended ones included.
uint64_t straight_passes();

// From the runtime: the floor agreed at MPI_Init opens the gate at floor;
// pass_set_gate() lowers or restores it as communicators agree and go;
// pass_close() passes everything again (MPI_Finalize).
void pass_open(size_t floor);
void pass_set_gate(size_t gate);
void pass_close();

}  // namespace terse
