// What an operation on device buffers asks of the device: the codec's
// device instance and the communicator's lane (streams, device scratch,
// pinned slots), seen without CUDA types, as ports.h shows messages
// without UCX's.  The runtime implements it (runtime/device_codecs.cc over
// device/device_lane.h); the engine has no edge to device/.
//
// Only the pipelined ring with a summable codec runs on device buffers:
// an allreduce, a reduce-scatter or an allgather (runtime/device_codecs.h
// decides, identically on every rank as far as the schedule goes; the
// memory kind is each rank's own, and the frames are the host codec's
// bytes, so a device rank and a host rank interoperate).  The operation
// encodes its own chunks on the device, each payload copied to a pinned
// slot while the next one encodes and the previous one is on the wire; the
// code-domain sums run on the host on those payloads (small); the reduced
// (or gathered) payloads go back to the device and are decoded there into
// the result.  Element buffers never cross.
//
// Every call reports failures as a Status with the message set.
#pragma once

#include "util/status.h"

#include <cstddef>
#include <cstdint>

namespace terse {

class DevicePort {
public:
    virtual ~DevicePort() = default;

    // Slots an operation may have payloads in flight to the host in.
    virtual size_t slots() const = 0;
    // The summable codec's statistics of n elements at src (device) into
    // out (host, nout doubles).
    virtual Status stats(const void *src, size_t n, double *out, size_t nout, uint64_t seed) = 0;
    // The agreed statistics (host, count doubles: every chunk's, at the
    // operation's offsets), for the encodes and decodes that follow.
    virtual Status put_agreed(const double *agreed, size_t count) = 0;
    // Encodes n elements at src (device) with the agreed statistics from
    // index agreed_at, and queues the payload's copy into slot `slot`;
    // *raw when the codec asked for raw elements (then they are what is
    // copied), *len the bytes that will be in the slot (at most cap).
    virtual Status encode(size_t slot, const void *src, size_t n, size_t agreed_at, uint64_t seed, size_t cap,
                          size_t *len, bool *raw) = 0;
    // Whether slot's copy has landed: 1 yes, 0 not yet, -1 it failed
    // (the message is set).  Never blocks.
    virtual int ready(size_t slot) = 0;
    virtual const uint8_t *slot_data(size_t slot) const = 0;
    // Writes the n elements a payload of len bytes (host) stands for to
    // dst (device): decoded with the agreed statistics from agreed_at, or
    // copied when raw.
    virtual Status decode(const uint8_t *payload, size_t len, bool raw, void *dst, size_t n, size_t agreed_at,
                          uint64_t seed) = 0;
    // Queues the copy of bytes from src to dst (device, ranges apart) after
    // the decodes queued: an in-place reduce-scatter's result, built in its
    // own block's place, moved to the buffer's start.
    virtual Status copy(void *dst, const void *src, size_t bytes) = 0;
};

}  // namespace terse
