#include "device/staged_call.h"

#include "device/mem_kind.h"

#ifdef TERSE_HAVE_CUDA
#include "device/chunked_copy.h"
#include "device/cuda_driver.h"
#include "device/staging_pool.h"
#endif

#include <atomic>

namespace terse::device {

namespace {
std::atomic<uint64_t> g_calls_staged{0}, g_bytes_staged{0};
std::atomic<bool> g_mpi_reads_device{false};
}  // namespace

uint64_t device_calls_staged() { return g_calls_staged.load(std::memory_order_relaxed); }
uint64_t device_bytes_staged() { return g_bytes_staged.load(std::memory_order_relaxed); }
void set_mpi_reads_device_memory(bool yes) { g_mpi_reads_device.store(yes, std::memory_order_relaxed); }
bool mpi_reads_device_memory() { return g_mpi_reads_device.load(std::memory_order_relaxed); }

#ifdef TERSE_HAVE_CUDA
struct StagedBuffer {
    StagingPool *pool = nullptr;
    std::unique_ptr<StagingSlot> slot;
    CUdeviceptr dev = 0;  // the region's start
    size_t bytes = 0;

    ~StagedBuffer() {
        if (pool) pool->release(std::move(slot));
    }
};

namespace {

// Stages r when it is in device memory: *out holds its host copy (and
// *ptr the pointer the library gets), else both are left alone.
Status stage(const StageRegion &r, std::unique_ptr<StagedBuffer> *out, const void **ptr) {
    *ptr = r.buf;
    if (!r.buf || r.bytes == 0) return TERSE_OK;
    const char *start = static_cast<const char *>(r.buf) + r.lb;
    if (buffer_mem_kind(start, r.bytes) != TERSE_MEM_CUDA) return TERSE_OK;
    StagingPool *pool = staging_pool();
    if (!pool) return set_error(TERSE_ERR_UNSUPPORTED, "terse: a device buffer without a CUDA driver");
    const CudaDriver &d = pool->driver();
    CUcontext ctx = nullptr;
    Status s = buffer_context(d, start, &ctx);
    if (s != TERSE_OK) return s;
    auto b = std::make_unique<StagedBuffer>();
    s = pool->acquire(ctx, r.bytes, &b->slot);
    if (s != TERSE_OK) return s;
    b->pool = pool;
    b->dev = CUdeviceptr(start);
    b->bytes = r.bytes;
    if (r.copy_in) {
        s = chunked_copy(d, *b->slot, CopyDirection::ToHost, b->dev, r.bytes);
        if (s != TERSE_OK) return s;
        g_bytes_staged.fetch_add(r.bytes, std::memory_order_relaxed);
    }
    *ptr = static_cast<char *>(b->slot->host.data()) - r.lb;
    *out = std::move(b);
    return TERSE_OK;
}

}  // namespace

StagedCall::StagedCall() = default;
StagedCall::~StagedCall() = default;

Status StagedCall::begin(const StageRegion &send, const StageRegion &recv) {
    Status s = stage(send, &send_, &send_ptr_);
    const void *recv_ptr = nullptr;
    if (s == TERSE_OK) s = stage(recv, &recv_, &recv_ptr);
    recv_ptr_ = const_cast<void *>(recv_ptr);
    if (s == TERSE_OK && any()) g_calls_staged.fetch_add(1, std::memory_order_relaxed);
    return s;
}

bool StagedCall::any() const { return send_ || recv_; }

Status StagedCall::finish() {
    send_.reset();
    if (!recv_) return TERSE_OK;
    std::unique_ptr<StagedBuffer> b = std::move(recv_);
    const Status s = chunked_copy(b->pool->driver(), *b->slot, CopyDirection::ToDevice, b->dev, b->bytes);
    if (s == TERSE_OK) g_bytes_staged.fetch_add(b->bytes, std::memory_order_relaxed);
    return s;
}

void staging_release_idle() {
    if (driver_loaded())
        if (StagingPool *pool = staging_pool()) pool->clear();
}
#else
void staging_release_idle() {}

// Without CUDA no buffer is in device memory (device/mem_kind.h): begin()
// leaves every buffer where it is.
struct StagedBuffer {};

StagedCall::StagedCall() = default;
StagedCall::~StagedCall() = default;

Status StagedCall::begin(const StageRegion &send, const StageRegion &recv) {
    send_ptr_ = send.buf;
    recv_ptr_ = const_cast<void *>(recv.buf);
    return TERSE_OK;
}
bool StagedCall::any() const { return false; }
Status StagedCall::finish() { return TERSE_OK; }
#endif

const void *StagedCall::send() const { return send_ptr_; }
void *StagedCall::recv() const { return recv_ptr_; }

}  // namespace terse::device
