#include "device/device_lane.h"

#ifdef TERSE_HAVE_CUDA
#include "util/log.h"

#include <algorithm>
#include <cstring>

namespace terse::device {

Status DeviceLane::init() {
    Status s = compute_.create(d_, ctx_);
    if (s == TERSE_OK) s = copy_.create(d_, ctx_);
    if (s == TERSE_OK) s = encoded_.create(d_, ctx_);
    if (s == TERSE_OK) s = in_done_.create(d_, ctx_);
    for (size_t i = 0; i < kOutSlots && s == TERSE_OK; ++i) s = out_done_[i].create(d_, ctx_);
    return s;
}

DeviceLane::~DeviceLane() {
    ContextScope scope(d_, ctx_);
    if (scope.status() == TERSE_OK && drain() != TERSE_OK)
        TERSE_LOG_DEBUG("device lane: %s (released anyway)", last_error());
}

Status DeviceLane::drain() {
    Status s = sync();
    if (s != TERSE_OK || !copy_.get()) return s;
    const CUresult rc = d_.stream_synchronize(copy_.get());
    return rc == CUDA_SUCCESS ? TERSE_OK : cuda_error(d_, rc, "waiting for a device lane's copies");
}

Status DeviceLane::reserve(size_t slot_bytes, size_t device_bytes) {
    const size_t pinned = slot_bytes * (kOutSlots + 1);
    if (pinned > kLaneCapBytes || device_bytes > kLaneCapBytes)
        return set_error(TERSE_ERR_NO_MEMORY,
                         "terse: a device codec call needs %zu bytes of pinned and %zu of device memory, above "
                         "the lane's cap of %zu bytes each",
                         pinned, device_bytes, kLaneCapBytes);
    if (slot_bytes > slot_bytes_) {
        Status s = drain();
        if (s != TERSE_OK) return s;
        for (size_t i = 0; i < kOutSlots && s == TERSE_OK; ++i) s = out_[i].allocate(d_, ctx_, slot_bytes);
        if (s == TERSE_OK) s = in_.allocate(d_, ctx_, slot_bytes);
        if (s != TERSE_OK) {
            slot_bytes_ = 0;
            return s;
        }
        TERSE_LOG_INFO("device lane: pinned frame cache grown to %zu slots of %zu bytes", kOutSlots + 1,
                       slot_bytes);
        slot_bytes_ = slot_bytes;
    }
    if (device_bytes > scratch_.size()) {
        Status s = drain();
        if (s == TERSE_OK) s = scratch_.allocate(d_, ctx_, device_bytes);
        if (s != TERSE_OK) return s;
        TERSE_LOG_INFO("device lane: device scratch grown to %zu bytes", device_bytes);
    }
    return TERSE_OK;
}

Status DeviceLane::copy_out(size_t i, const void *dev, size_t bytes) {
    if (i >= kOutSlots || bytes > slot_bytes_)
        return set_error(TERSE_ERR_INVALID, "terse: device lane: copy of %zu bytes into slot %zu of %zu bytes",
                         bytes, i, slot_bytes_);
    // The copy stream waits for the kernels that wrote dev, on the device.
    CUresult rc = d_.event_record(encoded_.get(), compute_.get());
    if (rc == CUDA_SUCCESS) rc = d_.stream_wait_event(copy_.get(), encoded_.get(), 0);
    if (rc == CUDA_SUCCESS && bytes)
        rc = d_.memcpy_dtoh_async(out_[i].data(), reinterpret_cast<CUdeviceptr>(dev), bytes, copy_.get());
    if (rc == CUDA_SUCCESS) rc = d_.event_record(out_done_[i].get(), copy_.get());
    if (rc != CUDA_SUCCESS) return cuda_error(d_, rc, "queueing the copy of an encoded payload to the host");
    return TERSE_OK;
}

int DeviceLane::out_ready(size_t i) {
    const CUresult rc = d_.event_query(out_done_[i].get());
    if (rc == CUDA_SUCCESS) return 1;
    if (rc == CUDA_ERROR_NOT_READY) return 0;
    cuda_error(d_, rc, "copying an encoded payload to the host");
    return -1;
}

Status DeviceLane::wait_in() {
    if (!in_pending_) return TERSE_OK;
    in_pending_ = false;
    const CUresult rc = d_.event_synchronize(in_done_.get());
    return rc == CUDA_SUCCESS ? TERSE_OK : cuda_error(d_, rc, "copying a payload to the device");
}

Status DeviceLane::copy_in(void *dev, const void *host, size_t bytes) {
    if (bytes > slot_bytes_)
        return set_error(TERSE_ERR_INVALID, "terse: device lane: %zu bytes for an in slot of %zu", bytes,
                         slot_bytes_);
    // The in slot is reused only once its previous copy has left it.
    Status s = wait_in();
    if (s != TERSE_OK || bytes == 0) return s;
    std::memcpy(in_.data(), host, bytes);
    CUresult rc = d_.memcpy_htod_async(reinterpret_cast<CUdeviceptr>(dev), in_.data(), bytes, compute_.get());
    if (rc == CUDA_SUCCESS) rc = d_.event_record(in_done_.get(), compute_.get());
    if (rc != CUDA_SUCCESS) return cuda_error(d_, rc, "queueing the copy of a payload to the device");
    in_pending_ = true;
    return TERSE_OK;
}

Status DeviceLane::copy_device(void *dst, const void *src, size_t bytes) {
    const auto d = reinterpret_cast<uintptr_t>(dst), f = reinterpret_cast<uintptr_t>(src);
    if (bytes && d < f + bytes && f < d + bytes)
        return set_error(TERSE_ERR_INVALID, "terse: device lane: a copy between overlapping ranges");
    if (bytes == 0) return TERSE_OK;
    const CUresult rc = d_.memcpy_dtod_async(d, f, bytes, compute_.get());
    return rc == CUDA_SUCCESS ? TERSE_OK : cuda_error(d_, rc, "copying on the device");
}

Status DeviceLane::download(void *host, const void *dev, size_t bytes) {
    Status s = wait_in();
    for (size_t off = 0; off < bytes && s == TERSE_OK; off += slot_bytes_) {
        const size_t n = std::min(slot_bytes_, bytes - off);
        const CUresult rc = d_.memcpy_dtoh_async(
            in_.data(), reinterpret_cast<CUdeviceptr>(static_cast<const uint8_t *>(dev) + off), n,
            compute_.get());
        if (rc != CUDA_SUCCESS) return cuda_error(d_, rc, "copying codec statistics to the host");
        if ((s = sync()) == TERSE_OK) std::memcpy(static_cast<uint8_t *>(host) + off, in_.data(), n);
    }
    return s;
}

Status DeviceLane::upload(void *dev, const void *host, size_t bytes) {
    Status s = wait_in();
    for (size_t off = 0; off < bytes && s == TERSE_OK; off += slot_bytes_) {
        const size_t n = std::min(slot_bytes_, bytes - off);
        std::memcpy(in_.data(), static_cast<const uint8_t *>(host) + off, n);
        const CUresult rc = d_.memcpy_htod_async(reinterpret_cast<CUdeviceptr>(static_cast<uint8_t *>(dev) + off),
                                                 in_.data(), n, compute_.get());
        if (rc != CUDA_SUCCESS) return cuda_error(d_, rc, "copying agreed codec statistics to the device");
        s = sync();
    }
    return s;
}

Status DeviceLane::sync() {
    if (!compute_.get()) return TERSE_OK;
    const CUresult rc = d_.stream_synchronize(compute_.get());
    if (rc == CUDA_SUCCESS) in_pending_ = false;
    return rc == CUDA_SUCCESS ? TERSE_OK : cuda_error(d_, rc, "waiting for a device codec's stream");
}

}  // namespace terse::device
#endif
