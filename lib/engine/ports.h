// What an engine operation needs from the outside world, as two small
// interfaces: Link (tagged point-to-point messages between ranks of the
// communicator, which also carry the small agreements on codec statistics
// and outcomes: link_agreement.h) and Control (the MPI library's own
// non-blocking collectives on the communicator: the exact allreduce of
// TERSE_VERIFY and of the error guard, the guard's verdict, the two-level
// schedule's agreement, and the reduce-scatter and allgather it runs inside
// a node).
// Operations run on the UCX transport and PMPI in production
// (runtime/engine_ports.h); unit tests run every algorithm for many
// simulated ranks inside one process with an in-memory Link
// (tests/engine_sim.h).
//
// The engine owns the request objects (inline in its own structures, no
// allocation per message) but not what is in them: each holds opaque,
// aligned storage in which the implementation that started the request
// constructs its own request type (PortStorage::emplace checks its size and
// alignment at compile time).  Nothing here names a UCX or MPI type.
#pragma once

#include "util/status.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace terse {

// Inline storage for one implementation-defined request object.
template <size_t Bytes>
struct PortStorage {
    static constexpr size_t kBytes = Bytes;
    static constexpr size_t kAlign = alignof(std::max_align_t);

    template <class T, class... A>
    T *emplace(A &&...a) {
        static_assert(sizeof(T) <= kBytes, "the port's request type does not fit its storage");
        static_assert(alignof(T) <= kAlign, "the port's request type needs stronger alignment");
        return ::new (static_cast<void *>(bytes)) T(std::forward<A>(a)...);
    }
    template <class T>
    T *get() {
        return std::launder(reinterpret_cast<T *>(bytes));
    }

    alignas(kAlign) unsigned char bytes[kBytes];
};

// One pending message.  The Link that starts it constructs its request in
// `storage` and sets `release` to the one function that ends that request
// (cancelling it if still pending): the link's cancel() calls it, and so
// does this destructor if the request was never released.  Must not move
// while it holds a request.
struct LinkRequest {
    LinkRequest() = default;
    ~LinkRequest() {
        if (release) release(this);
    }
    LinkRequest(const LinkRequest &) = delete;
    LinkRequest &operator=(const LinkRequest &) = delete;

    PortStorage<64> storage;
    void (*release)(LinkRequest *) = nullptr;  // set while storage holds a request
};

class Link {
public:
    virtual ~Link() = default;
    // peer is a rank of the communicator.
    virtual Status isend(int peer, uint64_t tag, const void *buf, size_t len, LinkRequest *r) = 0;
    virtual Status irecv(int peer, uint64_t tag, void *buf, size_t capacity, LinkRequest *r) = 0;
    // True once complete; *status is the outcome and *length the received
    // length (receives).  Does not progress.
    virtual bool test(LinkRequest *r, Status *status, size_t *length) = 0;
    // Release a request that will not be waited for (error paths).
    virtual void cancel(LinkRequest *r) = 0;
    virtual unsigned progress() = 0;
};

// One control allreduce.  The Control that starts it keeps its request in
// `storage` (a trivially destructible type: a started request ends in
// test() or wait(), never by destruction) and keeps `active` true from the
// start until test() saw it complete or wait() returned.  A Control may
// also finish a collective before the call that starts it returns (the
// two-level schedule's node stages do: runtime/engine_ports.h); it then
// leaves `active` false, and test() reports it complete.
struct ControlRequest {
    ControlRequest() = default;
    ControlRequest(const ControlRequest &) = delete;
    ControlRequest &operator=(const ControlRequest &) = delete;

    PortStorage<16> storage;
    bool active = false;
};

class Control {
public:
    virtual ~Control() = default;
    // out[i] = op over ranks of in[i]; in == out allowed.  dtype is one of
    // float32/float64/int32/int64.
    virtual Status iallreduce(const void *in, void *out, size_t count, terse_dtype_t dtype, terse_op_t op,
                              ControlRequest *r) = 0;
    // Reduce-scatter: op over ranks of in (the sum of counts elements), of
    // which rank q gets its counts[q] elements at out.  in == out: in
    // place, the input read from out and this rank's part written at its
    // start.  counts (one per rank) must stay valid until the request
    // completes.  dtype as for iallreduce.
    virtual Status ireduce_scatter(const void *in, void *out, const int *counts, terse_dtype_t dtype,
                                   terse_op_t op, ControlRequest *r) = 0;
    // Allgather in place: rank q's counts[q] elements at buf + displs[q]
    // (in elements) reach that place on every rank.  counts and displs must
    // stay valid until the request completes.
    virtual Status iallgatherv(void *buf, const int *counts, const int *displs, terse_dtype_t dtype,
                               ControlRequest *r) = 0;
    virtual bool test(ControlRequest *r, Status *status) = 0;
    // Complete a request on an error path (collectives cannot be cancelled).
    virtual void wait(ControlRequest *r) = 0;
};

}  // namespace terse
