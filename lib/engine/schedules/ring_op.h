// The pipelined ring.  Reduce-scatter and allgather are two phases of one
// message stream per direction; an allreduce is their composition (the
// reduce-scatter's last hop produces the allgather's first frames), a
// reduce-scatter or an allgather is one phase alone.
//
// Rank r, n ranks, blocks b = 0..n-1 (chunk_plan.h), steps s = 0..n-2:
//   reduce-scatter: send block r-s-1 to r+1, receive block r-s-2 from r-1
//                   and reduce it with the own block; after step n-2 rank r
//                   holds block r reduced over all ranks.
//   allgather:      send block r-s, receive block r-s-1; each rank encodes
//                   its own block once and every other rank forwards those
//                   bytes unchanged.  The owner decodes its own frames too,
//                   so every rank ends with the same bits even for lossy
//                   codecs.
// Reduction modes at a reduce-scatter hop:
//   recompress: acc = own + decode(in), encode(acc) for the next hop;
//   summable:   combine(in, encode(own)) in the code domain;
//   raw frames (incompressible or non-finite chunks) are reduced as
//   elements and stay raw.
// On device buffers (EngineEnv::device, engine/device_port.h: summable
// codecs, every kind) this rank's own frames are encoded on the device ahead
// of need, in the order the ring sends them, and reach the host through
// the port's pinned slots; a frame whose copy has not landed yet holds its
// send or hop back (stream_*_ready) while the stream goes on with what
// can move.  Results are decoded on the device (ring_device.cc).
#pragma once

#include "engine/chunk_plan.h"
#include "engine/op_base.h"
#include "engine/schedules/message_stream.h"

#include <vector>

namespace terse {

class RingOp final : public OpBase, public StreamHandler {
public:
    RingOp(const EngineEnv &env, const CollArgs &args, const Plan &plan, std::pmr::memory_resource *mem);

protected:
    Status begin() override;
    Status body(bool *done) override;
    void stat_chunks(OpVector<ChunkRef> *chunks, size_t *total) const override;

    void stream_primary(size_t j, OutFrame *out) override;
    void stream_received(size_t i, uint8_t *buf, size_t len, OutFrame *out) override;
    bool stream_primary_ready(size_t j) override;
    bool stream_received_ready(size_t i) override;

private:
    struct Msg {
        bool ag;        // allgather phase (else reduce-scatter)
        bool last;      // step n-2
        uint32_t step;  // 0..n-2 within the phase
        uint32_t block;
        size_t chunk;
    };

    // ring_reduce_scatter.cc
    void rs_primary(size_t k, OutFrame *out);
    void rs_received(const Msg &m, uint8_t *buf, size_t len, OutFrame *out);
    void rs_recompress(const Msg &m, const FrameInfo &fi, uint8_t *buf, OutFrame *out);
    void rs_summable(const Msg &m, const FrameInfo &fi, uint8_t *buf, OutFrame *out);
    // The reduced block r chunk k in frame f: decode it where the result goes.
    void rs_deliver(size_t k, const uint8_t *frame, size_t len, const void *acc);
    // ring_allgather.cc
    void ag_primary(size_t k, OutFrame *out);
    void ag_received(const Msg &m, uint8_t *buf, size_t len, OutFrame *out);

    // ring_device.cc: own frames on device buffers.  A chunk's frame goes
    // Idle -> Copying (encoded, its payload on the way to a slot) -> Ready
    // -> Taken (sealed into a frame of the host's).
    enum : uint8_t { kDevIdle, kDevCopying, kDevReady, kDevTaken };
    struct DevChunk {
        uint8_t state = kDevIdle;
        bool raw = false;
        uint32_t slot = 0;
        size_t len = 0;
    };
    struct BlockChunk {
        uint32_t block;
        size_t chunk;
    };
    Status dev_begin();
    // Starts encodes ahead of need while slots are free (keeping two for
    // the frames asked for now).
    void dev_pump();
    bool dev_launch(size_t b, size_t k);
    // The block this rank's primaries come from: r-1 with a reduce-scatter
    // phase, else its own.
    size_t primary_block() const { return size_t(mod(has_rs_ ? r_ - 1 : r_)); }
    // Whether own chunk (b, k) can be taken now (also when poisoned: the
    // taker then sends poison); starts it when idle.
    bool dev_poll(size_t b, size_t k);
    // Own chunk (b, k) sealed into frame (capacity frame_cap_); its length.
    size_t dev_take(size_t b, size_t k, uint8_t *frame);
    // The chunk a frame holds, written to dst (device).
    bool dev_decode(const FrameInfo &fi, size_t g, void *dst, size_t n);

    void poison_out(uint8_t *buf, size_t n, OutFrame *out);
    const uint8_t *own(size_t b, size_t k) const;  // own contribution of chunk (b, k)
    uint8_t *result(size_t b, size_t k) const;     // where the result of chunk (b, k) goes

    bool has_rs_ = false, has_ag_ = false;
    ChunkPlan plan_chunks_;
    OpVector<Msg> recvs_;
    uint8_t *rs_dst_ = nullptr;       // reduce-scatter result (block r)
    OpVector<DevChunk> dev_chunks_;   // by global chunk index
    OpVector<BlockChunk> dev_order_;  // own chunks in the order the ring sends them
    OpVector<uint8_t> dev_slot_used_;
    size_t dev_next_ = 0, dev_free_ = 0;
    MessageStream stream_;
};

}  // namespace terse
