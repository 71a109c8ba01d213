// One owner, one release path, for each CUDA resource staging holds: a
// context made current on this thread for a scope, pinned host memory, a
// stream, an event.  Each is made inside the context it belongs to (the
// device buffer's: CU_POINTER_ATTRIBUTE_CONTEXT) and released inside it
// too, pushed for the release, because the thread releasing it (MPI_Finalize's,
// the progress thread's) may have no context current.
//
// Release failures are logged, not returned: they happen in destructors,
// and the usual one (the application destroyed the context first) leaves
// nothing to free.
#pragma once

#include "terse_build_config.h"

#ifdef TERSE_HAVE_CUDA
#include "device/cuda_driver.h"
#include "util/status.h"

#include <cuda.h>

#include <cstddef>
#include <utility>

namespace terse::device {

// ctx current on this thread from construction to destruction (push/pop:
// whatever the thread had current before is current again after).
class ContextScope {
public:
    ContextScope(const CudaDriver &d, CUcontext ctx);
    ~ContextScope();
    ContextScope(const ContextScope &) = delete;
    ContextScope &operator=(const ContextScope &) = delete;
    // TERSE_OK, or why the push failed (set_error: the message is set).
    Status status() const { return status_; }

private:
    const CudaDriver &d_;
    Status status_ = TERSE_OK;
};

// Page-locked host memory (cuMemHostAlloc, PORTABLE: usable from every
// context), so that copies to and from the device run asynchronously at
// the bus's speed.
class PinnedHostBuffer {
public:
    PinnedHostBuffer() = default;
    ~PinnedHostBuffer() { reset(); }
    PinnedHostBuffer(PinnedHostBuffer &&o) noexcept { *this = std::move(o); }
    PinnedHostBuffer &operator=(PinnedHostBuffer &&o) noexcept;
    PinnedHostBuffer(const PinnedHostBuffer &) = delete;
    PinnedHostBuffer &operator=(const PinnedHostBuffer &) = delete;

    // bytes of pinned memory, allocated inside ctx.
    Status allocate(const CudaDriver &d, CUcontext ctx, size_t bytes);
    void reset();
    void *data() const { return p_; }
    size_t size() const { return size_; }

private:
    const CudaDriver *d_ = nullptr;
    CUcontext ctx_ = nullptr;
    void *p_ = nullptr;
    size_t size_ = 0;
};

// Device memory (cuMemAlloc) of ctx: a lane's scratch.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    ~DeviceBuffer() { reset(); }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;

    Status allocate(const CudaDriver &d, CUcontext ctx, size_t bytes);
    void reset();
    void *data() const { return reinterpret_cast<void *>(p_); }
    size_t size() const { return size_; }

private:
    const CudaDriver *d_ = nullptr;
    CUcontext ctx_ = nullptr;
    CUdeviceptr p_ = 0;
    size_t size_ = 0;
};

class CudaStream {
public:
    CudaStream() = default;
    ~CudaStream() { reset(); }
    CudaStream(const CudaStream &) = delete;
    CudaStream &operator=(const CudaStream &) = delete;

    // A blocking stream of ctx (flags 0): its work waits for the legacy
    // default stream's, where the application filled its buffers (see
    // cuda_owners.cc).
    Status create(const CudaDriver &d, CUcontext ctx);
    void reset();
    CUstream get() const { return s_; }

private:
    const CudaDriver *d_ = nullptr;
    CUcontext ctx_ = nullptr;
    CUstream s_ = nullptr;
};

class CudaEvent {
public:
    CudaEvent() = default;
    ~CudaEvent() { reset(); }
    CudaEvent(const CudaEvent &) = delete;
    CudaEvent &operator=(const CudaEvent &) = delete;

    // Without timing: an event recorded only to be waited for.
    Status create(const CudaDriver &d, CUcontext ctx);
    void reset();
    CUevent get() const { return e_; }

private:
    const CudaDriver *d_ = nullptr;
    CUcontext ctx_ = nullptr;
    CUevent e_ = nullptr;
};

// The context a device buffer belongs to (CU_POINTER_ATTRIBUTE_CONTEXT):
// what staging and device codecs make current to reach it.
Status buffer_context(const CudaDriver &d, const void *p, CUcontext *ctx);

// set_error() for a failed driver call: "terse: <what>: <the driver's
// words>"; TERSE_ERR_NO_MEMORY when the driver ran out of memory, else
// TERSE_ERR_UNSUPPORTED (the buffer is memory terse cannot serve).
Status cuda_error(const CudaDriver &d, CUresult rc, const char *what);

}  // namespace terse::device
#endif
