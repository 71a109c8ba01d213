// One call's buffers in CUDA device memory, staged through pinned host
// memory for a library that cannot read device memory: terse's engine
// (host codecs) or an MPI library that is not CUDA-aware.  begin() copies
// the inputs device -> host, the library runs on the host copies, finish()
// copies the result host -> device.  Managed and pinned host memory are
// readable by the CPU and are used where they are.
//
// The copies are chunked and double-buffered on the slot's stream
// (device/chunked_copy.h); slots come from the process pool
// (device/staging_pool.h) and go back to it when the StagedCall goes.
#pragma once

#include "terse_build_config.h"
#include "util/status.h"

#include <cstddef>
#include <memory>

namespace terse::device {

// A buffer as the library touches it: [buf + lb, buf + lb + bytes), buf
// being the pointer the call was given (lb: its datatype's true lower
// bound, which may be negative).
struct StageRegion {
    const void *buf = nullptr;  // nullptr: no such buffer (the send buffer of MPI_IN_PLACE)
    ptrdiff_t lb = 0;
    size_t bytes = 0;
    bool copy_in = true;  // the library reads it (else it only writes it: nothing to copy in)
};

struct StagedBuffer;  // staged_call.cc

class StagedCall {
public:
    StagedCall();
    ~StagedCall();
    StagedCall(const StagedCall &) = delete;
    StagedCall &operator=(const StagedCall &) = delete;

    // Stages whichever of send and recv is in device memory: a slot of the
    // pool, the data copied in when copy_in.  Counted in the statistics
    // when anything was staged.
    Status begin(const StageRegion &send, const StageRegion &recv);
    // The pointers to hand to the library: the host copy (at the offset
    // the call's pointer had from its region), or the buffer itself when
    // it was not staged.  send() is nullptr for a region with buf nullptr.
    const void *send() const;
    void *recv() const;
    // Whether begin() staged either buffer.
    bool any() const;
    // Copies the staged receive buffer back to device memory (once; later
    // calls do nothing) and gives the slots back.
    Status finish();

private:
    std::unique_ptr<StagedBuffer> send_, recv_;
    const void *send_ptr_ = nullptr;
    void *recv_ptr_ = nullptr;
};

// Device-memory calls staged through host memory, and the bytes copied
// (both directions), for the TERSE_STATS process line.
uint64_t device_calls_staged();
uint64_t device_bytes_staged();

// Frees the idle pinned memory of the process pool (MPI_Finalize).
void staging_release_idle();

// Whether the MPI library reads device memory itself (CUDA-aware: Open
// MPI's MPIX_Query_cuda_support() at MPI_Init); then calls it serves get
// device buffers as they are, else their host copies.  Set once, at
// MPI_Init, before any collective.
void set_mpi_reads_device_memory(bool yes);
bool mpi_reads_device_memory();

}  // namespace terse::device
