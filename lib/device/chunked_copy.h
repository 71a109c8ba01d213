// Copies between a device buffer and a staging slot's pinned memory, in
// pieces on the slot's stream, double-buffered: piece j+1 is enqueued
// before piece j is waited for, so whatever uses piece j (on_piece) runs
// while piece j+1 crosses the bus.  The two events of the slot mark the
// two pieces in flight.
//
// The copies run in the slot's context, pushed on the calling thread for
// the duration (any thread may copy: an application thread, the progress
// thread completing a non-blocking call).
#pragma once

#include "terse_build_config.h"

#ifdef TERSE_HAVE_CUDA
#include "device/staging_pool.h"

#include <cstddef>
#include <functional>

namespace terse::device {

// The pieces staging copies in: large enough that a piece's fixed cost
// (a call, an event) is small next to its transfer, small enough that the
// first piece is usable early.
constexpr size_t kStagingPieceBytes = size_t(4) << 20;

enum class CopyDirection { ToHost, ToDevice };

// Called with each piece (its offset and length) once it has arrived on
// the other side, in order; a status other than TERSE_OK stops the copy.
using PieceDone = std::function<Status(size_t offset, size_t len)>;

// bytes from the device buffer dev to slot.host (ToHost), or from
// slot.host to dev (ToDevice), starting at offset 0 of both; returns once
// every piece arrived (or the first failure).  bytes <= slot.host.size().
Status chunked_copy(const CudaDriver &d, StagingSlot &slot, CopyDirection dir, CUdeviceptr dev, size_t bytes,
                    size_t piece_bytes = kStagingPieceBytes, const PieceDone &on_piece = nullptr);

}  // namespace terse::device
#endif
