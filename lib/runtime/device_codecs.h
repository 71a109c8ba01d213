// Device codecs: an allreduce on CUDA device buffers run with the codec's
// device instance, so that only encoded payloads cross to the host.
//
// The engine takes a call in device memory either way; this decides how
// its buffers reach it.  A blocking MPI_Allreduce, reduce-scatter (block
// or v) or allgather (or v) whose send (or in-place) and receive buffers
// are device memory of one context, planned on the ring schedule with a
// summable codec that offers TERSE_MEM_CUDA, without verification, the
// error guard, error feedback or capture, runs on the device buffers
// themselves (engine/device_port.h): the codec's device instance encodes
// and decodes there, and the communicator's lane (device/device_lane.h)
// carries the payloads through pinned host memory.  An in-place
// reduce-scatter whose own block overlaps the start of its buffer (where
// its result goes: uneven counts only) is the exception.  Every other call
// the engine takes on device buffers is staged whole through pinned host
// memory as before (device/staged_call.h), and the statistics say why.
// TERSE_DEVICE_CODECS=0 stages every call whole.
//
// The decision reads only this rank's buffers and agreed state, and never
// changes the schedule, the frames or the messages: a rank on the device
// path and a rank staging whole (or on host buffers) run the same
// operation and interoperate.
//
// A CUDA-aware UCX (UCS_MEMORY_TYPE_CUDA among its context's memory
// types, transport/ucx_transport.h) could take the device payloads without
// the pinned copies; it is detected and logged, and the payloads are
// staged all the same (terse(7), DEVICE BUFFERS).
#pragma once

#include "engine/coll_args.h"
#include "util/status.h"

#include <cstdint>
#include <string>

namespace terse {

class CommState;
struct CollectiveChoice;

// The per-communicator part (its lane and the codecs' device instances),
// made at the communicator's first device-path call; CommState owns it.
class DeviceCodecs;
struct DeviceCodecsDeleter {
    void operator()(DeviceCodecs *d) const;
};

// Runs a blocking call that the engine takes on device buffers (a.mem ==
// TERSE_MEM_CUDA) on the device path, if it is one (see above): *served
// then, and the status is the call's.  Else *served is false, nothing was
// started, and the caller stages the call whole (counted here with the
// reason).
Status device_codecs_run(CommState *st, const CollArgs &a, const CollectiveChoice &choice, bool *served);

// A call on device buffers the engine takes that never asks (a
// non-blocking one): counted as staged whole for `reason`.
void device_codecs_note_whole(const char *reason);

// The TERSE_STATS process line's part: " device_encoded=... " and the
// reasons calls were staged whole ("" without a CUDA build).
std::string device_codecs_stats();

}  // namespace terse
