// Capture: TERSE_CAPTURE=<prefix> writes the inputs of intercepted
// allreduces to HDF5 so that codecs can be evaluated offline on real data
// (terse-eval(1)).  One file per process, "<prefix>.rank<R>.h5" (R = rank in
// MPI_COMM_WORLD), one dataset per recorded call; the layout is described in
// capture_format.h and terse(7).
//
// The runtime calls capture_record() for every intercepted allreduce before
// the engine touches the buffers; it records every TERSE_CAPTURE_INTERVAL-th
// call of each communicator (call_index % interval == 0).  Capture only reads
// the user's buffer, so results never change.  When capture is off the only
// cost is capture_active(): one load of a plain global flag.
//
// Built without HDF5, capture_open() with a prefix set is an error (the
// user asked for files that would never appear).
#pragma once

#include "config/config.h"
#include "util/status.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace terse {

class CaptureWriter;  // owns the open file; defined in capture.cc

// The communicator of a recorded call, as plain values (the runtime fills
// them in from its communicator state).
struct CaptureSite {
    std::string_view comm_name;
    int rank = 0;  // in the communicator
    int size = 1;
    std::span<const int> world_ranks;    // comm rank -> MPI_COMM_WORLD rank
    const CommConfig *config = nullptr;  // its agreed configuration
    uint32_t ctx_id = 0;                 // the engine operation's context id
    uint32_t seq = 0;                    // and sequence number
};

namespace capture_detail {
// Written only by capture_open()/capture_close() (MPI_Init / MPI_Finalize,
// when no collective can run), read on every intercepted call.
extern bool g_active;
}  // namespace capture_detail

// Whether intercepted calls should be offered to capture_record().
inline bool capture_active() { return capture_detail::g_active; }

// Whether capture_record() would write this call (sampling by interval).
// Lets the caller skip work such as resolving MPI_IN_PLACE for calls that
// are not sampled.
bool capture_wanted(uint64_t call_index);

// From runtime_init, after the environment was read.  Does nothing when
// global.capture_prefix is empty.  Creates (truncates) the rank's file,
// recording world_rank and world_size in it.  Errors: TERSE_ERR_UNSUPPORTED
// (no HDF5 in this build), TERSE_ERR_INVALID (interval 0), TERSE_ERR_IO
// (file cannot be created; names the path).
Status capture_open(const GlobalConfig &global, int world_rank, int world_size);

// Record the input of one intercepted call on the communicator `site` if
// call_index is sampled.  buf holds count elements of dtype in host memory
// (for MPI_IN_PLACE, the receive buffer before the operation).  The runtime
// calls it before the engine starts the call, with the context id and
// sequence number the engine's operation uses (terse-eval reproduces its
// codec seeds from them).  Thread safe (a mutex is taken only while capture
// is active).  On failure returns TERSE_ERR_IO with a message; the caller
// should report it and go on: the collective itself is unaffected.
Status capture_record(const CaptureSite &site, const void *buf, size_t count, terse_dtype_t dtype,
                      uint64_t call_index, terse_op_t op = TERSE_OP_SUM);

// From runtime_finalize: flushes and closes the file; safe to call when
// capture was never opened, and more than once.
void capture_close();

// Path of the open capture file ("" when inactive), for messages.
const char *capture_path();

}  // namespace terse
