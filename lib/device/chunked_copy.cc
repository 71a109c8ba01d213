#include "device/chunked_copy.h"

#ifdef TERSE_HAVE_CUDA
#include <algorithm>

namespace terse::device {

Status chunked_copy(const CudaDriver &d, StagingSlot &slot, CopyDirection dir, CUdeviceptr dev, size_t bytes,
                    size_t piece_bytes, const PieceDone &on_piece) {
    if (bytes > slot.host.size())
        return set_error(TERSE_ERR_INVALID, "terse: staging %zu bytes through a %zu-byte slot", bytes,
                         slot.host.size());
    if (bytes == 0) return TERSE_OK;
    if (piece_bytes == 0) piece_bytes = kStagingPieceBytes;
    ContextScope scope(d, slot.ctx);
    if (scope.status() != TERSE_OK) return scope.status();
    auto *host = static_cast<char *>(slot.host.data());
    const CUstream stream = slot.stream.get();
    const size_t pieces = (bytes + piece_bytes - 1) / piece_bytes;
    auto enqueue = [&](size_t j) -> Status {
        const size_t off = j * piece_bytes, len = std::min(piece_bytes, bytes - off);
        const CUresult rc = dir == CopyDirection::ToHost
                                ? d.memcpy_dtoh_async(host + off, dev + off, len, stream)
                                : d.memcpy_htod_async(dev + off, host + off, len, stream);
        if (rc != CUDA_SUCCESS)
            return cuda_error(d, rc,
                              dir == CopyDirection::ToHost ? "copying a device buffer to pinned host memory"
                                                           : "copying a result back to device memory");
        const CUresult ev = d.event_record(slot.events[j % 2].get(), stream);
        if (ev != CUDA_SUCCESS) return cuda_error(d, ev, "recording a staging copy's event");
        return TERSE_OK;
    };
    Status s = enqueue(0);
    for (size_t j = 0; s == TERSE_OK && j < pieces; ++j) {
        // Piece j+1 is on its way before piece j is waited for; its event
        // is the one piece j-1 used, which was waited for already.
        if (j + 1 < pieces) s = enqueue(j + 1);
        if (s != TERSE_OK) break;
        const CUresult rc = d.event_synchronize(slot.events[j % 2].get());
        if (rc != CUDA_SUCCESS) {
            s = cuda_error(d, rc, "waiting for a staging copy");
            break;
        }
        if (on_piece) {
            const size_t off = j * piece_bytes;
            s = on_piece(off, std::min(piece_bytes, bytes - off));
        }
    }
    // Nothing of this copy may still run once the caller reuses the slot.
    if (s != TERSE_OK) d.stream_synchronize(stream);
    return s;
}

}  // namespace terse::device
#endif
