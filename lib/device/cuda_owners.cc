#include "device/cuda_owners.h"

#ifdef TERSE_HAVE_CUDA
#include "util/log.h"

namespace terse::device {

Status cuda_error(const CudaDriver &d, CUresult rc, const char *what) {
    // No status of terse's names a failing device: the buffer's memory
    // kind is then one terse cannot serve.
    const Status s = rc == CUDA_ERROR_OUT_OF_MEMORY ? TERSE_ERR_NO_MEMORY : TERSE_ERR_UNSUPPORTED;
    return set_error(s, "terse: %s: %s (CUresult %d)", what, cuda_result_string(d, rc), int(rc));
}

Status buffer_context(const CudaDriver &d, const void *p, CUcontext *ctx) {
    CUpointer_attribute attr[] = {CU_POINTER_ATTRIBUTE_CONTEXT};
    CUcontext c = nullptr;
    void *data[] = {&c};
    const CUresult rc = d.pointer_get_attributes(1, attr, data, CUdeviceptr(p));
    if (rc != CUDA_SUCCESS) return cuda_error(d, rc, "asking the CUDA context of a device buffer");
    if (!c)
        return set_error(TERSE_ERR_UNSUPPORTED,
                         "terse: device buffer %p has no CUDA context (a buffer of several devices?): terse "
                         "stages only buffers of one context",
                         p);
    *ctx = c;
    return TERSE_OK;
}

namespace {

// A release inside ctx; false when ctx cannot be made current (destroyed
// by the application before terse released what it held in it).
template <class Release>
void release_in(const CudaDriver &d, CUcontext ctx, const char *what, Release &&release) {
    ContextScope scope(d, ctx);
    if (scope.status() != TERSE_OK) {
        TERSE_LOG_DEBUG("CUDA: %s not released: %s", what, last_error());
        return;
    }
    const CUresult rc = release();
    if (rc != CUDA_SUCCESS) TERSE_LOG_DEBUG("CUDA: releasing %s: %s", what, cuda_result_string(d, rc));
}

}  // namespace

ContextScope::ContextScope(const CudaDriver &d, CUcontext ctx) : d_(d) {
    const CUresult rc = d_.ctx_push(ctx);
    if (rc != CUDA_SUCCESS) status_ = cuda_error(d_, rc, "making the buffer's CUDA context current");
}

ContextScope::~ContextScope() {
    if (status_ != TERSE_OK) return;
    CUcontext popped = nullptr;
    d_.ctx_pop(&popped);
}

PinnedHostBuffer &PinnedHostBuffer::operator=(PinnedHostBuffer &&o) noexcept {
    if (this != &o) {
        reset();
        std::swap(d_, o.d_);
        std::swap(ctx_, o.ctx_);
        std::swap(p_, o.p_);
        std::swap(size_, o.size_);
    }
    return *this;
}

Status PinnedHostBuffer::allocate(const CudaDriver &d, CUcontext ctx, size_t bytes) {
    reset();
    ContextScope scope(d, ctx);
    if (scope.status() != TERSE_OK) return scope.status();
    void *p = nullptr;
    const CUresult rc = d.mem_host_alloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (rc != CUDA_SUCCESS) return cuda_error(d, rc, "allocating pinned host memory for staging");
    d_ = &d, ctx_ = ctx, p_ = p, size_ = bytes;
    return TERSE_OK;
}

void PinnedHostBuffer::reset() {
    if (!p_) return;
    release_in(*d_, ctx_, "pinned host memory", [&] { return d_->mem_free_host(p_); });
    p_ = nullptr;
    size_ = 0;
}

Status DeviceBuffer::allocate(const CudaDriver &d, CUcontext ctx, size_t bytes) {
    reset();
    ContextScope scope(d, ctx);
    if (scope.status() != TERSE_OK) return scope.status();
    CUdeviceptr p = 0;
    const CUresult rc = d.mem_alloc(&p, bytes);
    if (rc != CUDA_SUCCESS) return cuda_error(d, rc, "allocating device scratch for a device codec");
    d_ = &d, ctx_ = ctx, p_ = p, size_ = bytes;
    return TERSE_OK;
}

void DeviceBuffer::reset() {
    if (!p_) return;
    release_in(*d_, ctx_, "device memory", [&] { return d_->mem_free(p_); });
    p_ = 0;
    size_ = 0;
}

Status CudaStream::create(const CudaDriver &d, CUcontext ctx) {
    reset();
    ContextScope scope(d, ctx);
    if (scope.status() != TERSE_OK) return scope.status();
    // A blocking stream (flags 0), not CU_STREAM_NON_BLOCKING: the
    // application filled its buffer on the legacy default stream, and a
    // cuMemcpyHtoD from pageable memory returns before its DMA has landed
    // (seen on an H200: staged inputs read stale bytes).  A blocking stream
    // waits for the legacy stream's work, as the application expects of a
    // call that reads its buffer; work on its own streams it must finish
    // first, as with any CUDA-aware MPI.
    const CUresult rc = d.stream_create(&s_, 0);
    if (rc != CUDA_SUCCESS) {
        s_ = nullptr;
        return cuda_error(d, rc, "creating a CUDA stream for staging");
    }
    d_ = &d, ctx_ = ctx;
    return TERSE_OK;
}

void CudaStream::reset() {
    if (!s_) return;
    release_in(*d_, ctx_, "a CUDA stream", [&] { return d_->stream_destroy(s_); });
    s_ = nullptr;
}

Status CudaEvent::create(const CudaDriver &d, CUcontext ctx) {
    reset();
    ContextScope scope(d, ctx);
    if (scope.status() != TERSE_OK) return scope.status();
    const CUresult rc = d.event_create(&e_, CU_EVENT_DISABLE_TIMING);
    if (rc != CUDA_SUCCESS) {
        e_ = nullptr;
        return cuda_error(d, rc, "creating a CUDA event for staging");
    }
    d_ = &d, ctx_ = ctx;
    return TERSE_OK;
}

void CudaEvent::reset() {
    if (!e_) return;
    release_in(*d_, ctx_, "a CUDA event", [&] { return d_->event_destroy(e_); });
    e_ = nullptr;
}

}  // namespace terse::device
#endif
