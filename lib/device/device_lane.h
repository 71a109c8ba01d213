// One communicator's lane for device codecs: what an allreduce whose codec
// runs on the GPU needs besides the codec (runtime/device_codecs.h).
//
//  - two streams of the buffers' context, blocking as staging's are (their
//    work waits for the application's on the legacy stream): the codec's kernels
//    run on the compute stream, the copies of their payloads to the host
//    on the copy stream, which waits for the kernels through an event
//    (cuStreamWaitEvent) and never makes the host wait;
//  - device scratch: the codec's workspace, its payloads and statistics;
//  - a pinned frame cache: kOutSlots slots the encoded payloads land in
//    (each with the event that says it has), and one slot payloads from
//    the network go to the device through.
//
// Sized when the communicator's first device call makes it, grown only
// when a call needs more (a larger chunk size after a reconfiguration),
// each growth logged, each resource capped at kLaneCapBytes: a call that
// needs more is refused (its caller stages it whole instead).  Every
// resource has one owner here (device/cuda_owners.h) and is released
// inside the lane's context when the lane goes.
#pragma once

#include "terse_build_config.h"

#ifdef TERSE_HAVE_CUDA
#include "device/cuda_owners.h"
#include "util/status.h"

#include <cstddef>
#include <cstdint>

namespace terse::device {

// Slots of encoded payloads in flight to the host at once: the pipeline's
// depth ahead of the sends.
constexpr size_t kOutSlots = 8;
// The most one lane holds of device scratch, and of pinned memory.
constexpr size_t kLaneCapBytes = size_t(1) << 30;

class DeviceLane {
public:
    DeviceLane(const CudaDriver &d, CUcontext ctx) : d_(d), ctx_(ctx) {}
    // Waits for both streams (in the context) before the owners release
    // the memory their work may still use.
    ~DeviceLane();
    DeviceLane(const DeviceLane &) = delete;
    DeviceLane &operator=(const DeviceLane &) = delete;

    // Streams and events.
    Status init();
    // At least slot_bytes in every pinned slot and device_bytes of device
    // scratch; grows (logged) or refuses beyond kLaneCapBytes.
    Status reserve(size_t slot_bytes, size_t device_bytes);

    const CudaDriver &driver() const { return d_; }
    CUcontext context() const { return ctx_; }
    CUstream compute_stream() const { return compute_.get(); }
    uint8_t *device_scratch() const { return static_cast<uint8_t *>(scratch_.data()); }
    size_t slot_bytes() const { return slot_bytes_; }

    // Callers hold a ContextScope of context() around these.
    // Queues the copy of bytes at dev (written by work already queued on
    // the compute stream) into out slot i; out_ready(i) tells when it is
    // there.
    Status copy_out(size_t i, const void *dev, size_t bytes);
    // 1: the copy into slot i is done; 0: still in flight; -1: it failed
    // (the error is set).
    int out_ready(size_t i);
    const uint8_t *out_data(size_t i) const { return static_cast<const uint8_t *>(out_[i].data()); }
    // Queues the copy of bytes of host memory to dev on the compute stream
    // (through the in slot: host may be reused at once); work queued on the
    // compute stream after it sees them.
    Status copy_in(void *dev, const void *host, size_t bytes);
    // Synchronous copies through the in slot, in pieces of its size
    // (statistics, which may exceed a slot).
    Status download(void *host, const void *dev, size_t bytes);
    Status upload(void *dev, const void *host, size_t bytes);
    // Queues the copy of bytes from src to dst (device memory, ranges
    // apart: the driver does not promise what an overlapping copy leaves)
    // on the compute stream, after the work queued there.
    Status copy_device(void *dst, const void *src, size_t bytes);
    // Waits for the compute stream.
    Status sync();
    // Waits for both streams: nothing the lane holds is in use after it.
    Status drain();

private:
    Status wait_in();

    const CudaDriver &d_;
    CUcontext ctx_;
    CudaStream compute_, copy_;
    CudaEvent encoded_, in_done_;
    CudaEvent out_done_[kOutSlots];
    PinnedHostBuffer out_[kOutSlots], in_;
    DeviceBuffer scratch_;
    size_t slot_bytes_ = 0;
    bool in_pending_ = false;
};

}  // namespace terse::device
#endif
