// The message machinery shared by every schedule: one ordered stream of
// frames to a "right" peer and one from a "left" peer (the same peer for a
// pairwise exchange), each with at most `depth` messages in flight.
//
// Send j of the stream is either a primary (j < primaries: produced from
// local data when its turn comes) or derived from receive i = j - primaries
// (produced when that receive is processed).  Receives are processed in
// order as soon as they arrive and never wait for a send slot: a derived
// frame that cannot go out yet waits in a queue, holding its pool buffer.
// So no rank ever stops draining its left neighbour, and since every
// dependency chain starts at a primary, the ring cannot deadlock even when
// every message needs the receiver to have posted its receive
// (rendezvous).  Receive i is terminal (produces nothing) when
// primaries + i >= nsend.
//
// Message j carries slot j in its tag; both ends derive j from the schedule.
#pragma once

#include "engine/op_base.h"
#include "engine/op_memory.h"
#include "engine/ports.h"
#include "util/scratch.h"
#include "util/status.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace terse {

class StreamHandler {
public:
    virtual ~StreamHandler() = default;
    // Produce primary frame j.  Must always produce a frame (poison on failure).
    virtual void stream_primary(size_t j, OutFrame *out) = 0;
    // Process receive i, which arrived in buf (a pool buffer, now owned by
    // the handler) with len bytes.  out is where the derived frame goes, or
    // nullptr when the receive is terminal.  The handler gives buf back to
    // the pool unless it hands it on through out->owned.
    virtual void stream_received(size_t i, uint8_t *buf, size_t len, OutFrame *out) = 0;
    // Whether primary j, or arrived receive i, can be produced or processed
    // now.  A handler whose frames come from work still in flight elsewhere
    // (a device codec's payload on its way to the host) says no; the stream
    // then goes on with whatever else can move and asks again at its next
    // progress.  An arrived receive waits in its buffer meanwhile; later
    // ones wait behind it (receives are processed in order).
    virtual bool stream_primary_ready(size_t) { return true; }
    virtual bool stream_received_ready(size_t) { return true; }
};

class MessageStream {
public:
    struct Params {
        int left = 0, right = 0;  // comm ranks
        size_t nsend = 0, nrecv = 0, primaries = 0;
        int depth = 1;
        size_t slot_base = 0;  // added to message positions in tags
    };
    // mem: the operation's memory (every structure of the stream lives there).
    explicit MessageStream(std::pmr::memory_resource *mem) : mem_(mem), rbufs_(mem), queue_(mem), ready_(mem) {}
    ~MessageStream();
    MessageStream(const MessageStream &) = delete;
    MessageStream &operator=(const MessageStream &) = delete;

    Status init(OpBase *op, StreamHandler *handler, const Params &p);
    // Advance without blocking; *done when every message completed.
    Status progress(bool *done);
    bool done() const { return processed_ == p_.nrecv && sent_ == p_.nsend && inflight_ == 0; }

private:
    struct SendSlot {
        LinkRequest req;
        uint8_t *owned = nullptr;
        bool busy = false;
    };
    void cancel_all();

    std::pmr::memory_resource *mem_;
    OpBase *op_ = nullptr;
    StreamHandler *h_ = nullptr;
    Params p_;
    OpArray<SendSlot> sslots_;
    OpArray<LinkRequest> rreqs_;
    OpVector<uint8_t *> rbufs_;
    OpVector<OutFrame> queue_;  // derived frames, by j - primaries
    OpVector<uint8_t> ready_;
    size_t posted_ = 0, processed_ = 0, sent_ = 0, inflight_ = 0;
    // The receive at processed_ completed (held_len_ bytes) but its handler
    // was not ready for it yet.
    bool held_ = false;
    size_t held_len_ = 0;
};

}  // namespace terse
