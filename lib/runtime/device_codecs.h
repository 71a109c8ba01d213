// Device codecs: collectives on CUDA device buffers run with the codec's
// device instance, so that only encoded payloads cross to the host.
//
// The engine takes a call in device memory either way; this decides how
// its buffers reach it.  An MPI_Allreduce, reduce-scatter (block or v) or
// allgather (or v), blocking or not, whose send (or in-place) and receive
// buffers are device memory of one context, planned on the ring schedule
// with a summable codec that offers TERSE_MEM_CUDA, without verification,
// the error guard, error feedback or capture, runs on the device buffers
// themselves (engine/device_port.h): the codec's device instance encodes
// and decodes there, and the communicator's lane (device/device_lane.h)
// carries the payloads through pinned host memory.  The exceptions: an
// in-place reduce-scatter whose own block overlaps the start of its buffer
// (where its result goes: uneven counts only), and a non-blocking call
// issued while another one holds the communicator's lane (DeviceLease,
// below).  Every other call the engine takes on device buffers is staged
// whole through pinned host memory as before (device/staged_call.h), and
// the statistics say why.  TERSE_DEVICE_CODECS=0 stages every call whole.
//
// The decision reads only this rank's buffers and state, and never
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
#include <memory>
#include <string>

namespace terse {

class CommState;
class DevicePort;
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

// A non-blocking call on the device path holds its communicator's lane
// from its start until its operation ends: the lane's slots and scratch
// are one operation's, so one such call per communicator runs at a time.
// Blocking calls finish the communicator's non-blocking ones first.
class DeviceLease {
public:
    explicit DeviceLease(DeviceCodecs *d) : d_(d) {}
    // release(), its status dropped (only after a failed start).
    ~DeviceLease();
    DeviceLease(const DeviceLease &) = delete;
    DeviceLease &operator=(const DeviceLease &) = delete;

    // What the operation runs its device work through.
    DevicePort *port() const;
    // Waits for the lane's work (the result is then in place) and frees
    // the lane for the communicator's next call.  Once; later calls
    // return TERSE_OK.
    Status release();

private:
    DeviceCodecs *d_;
};

// The lease for a non-blocking call on device buffers that the engine
// takes, if the device path serves it (as device_codecs_run decides, and
// the lane is free): *lease then, its lane prepared for the call.  Else
// *lease is null, and the caller stages the call whole (counted here with
// the reason).
void device_codecs_lease(CommState *st, const CollArgs &a, const CollectiveChoice &choice,
                         std::unique_ptr<DeviceLease> *lease);

// The TERSE_STATS process line's part: " device_encoded=... " and the
// reasons calls were staged whole ("" without a CUDA build).
std::string device_codecs_stats();

}  // namespace terse
