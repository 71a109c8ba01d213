// UCX transport: one ucp context and one worker per process, worker
// addresses exchanged once over the out-of-band collective it is handed
// (transport/oob.h), tagged non-blocking send/receive and explicit
// progress.  Knows nothing of MPI, codecs or communicators: peers are the
// out-of-band ranks (the runtime hands it MPI_COMM_WORLD's, so they are
// called world ranks here), messages are bytes and tags are opaque 64-bit
// values matched whole.  UCX configuration is read under terse's own prefix
// (ucp_config_read("TERSE", ...)), so TERSE_UCX_TLS=tcp tunes terse apart
// from the MPI library's own UCX use.  Verified with UCX 1.13: the variables
// are named TERSE_UCX_<NAME> (e.g. TERSE_UCX_TLS); UCX_TERSE_* is ignored.
// UCX applies plain UCX_<NAME> first and TERSE_UCX_<NAME> on top, so a
// UCX_TLS meant for the MPI library also applies to terse unless
// TERSE_UCX_TLS overrides it.
//
// Rendezvous over TCP: UCX 1.13 has one eager/rendezvous threshold per
// context (RNDV_THRESH, "auto"), not one per transport, and "auto" puts it
// at 8 KiB over TCP, so every chunk pays a request/reply round trip queued
// behind the data on the same socket, for no saving (TCP copies the data
// either way).  Rule: when neither TERSE_UCX_RNDV_THRESH nor UCX_RNDV_THRESH
// is set (nor a UCX configuration file changes it from "auto"), and the
// context's resources are TCP only (apart from "self"), terse sets
// RNDV_THRESH=inf and UCX sends every message eagerly.  With any other
// transport in the context (shared memory: sysv/posix with cma/knem/xpmem
// zero-copy rendezvous; RDMA) the threshold stays "auto", since those gain
// from rendezvous; a mixed job (shared memory within a node, TCP between
// nodes) therefore keeps rendezvous on its TCP peers too.
//
// Waiting: the context is created with UCP_FEATURE_WAKEUP where UCX allows
// it, and wait_for_events() sleeps on the worker's event file descriptor, so
// ranks that share cores give the core to the peer they wait for instead of
// spinning.  Every sleep is bounded, so work UCX does not signal (such as
// an MPI request the caller progresses) still advances.
#pragma once

#include "transport/oob.h"
#include "util/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace terse {

// A pending send or receive.  Owned by the caller; destroying a request that
// is still pending cancels it and waits for UCX to release it.
class Request {
public:
    Request() = default;
    ~Request();
    Request(const Request &) = delete;
    Request &operator=(const Request &) = delete;
    Request(Request &&o) noexcept;
    Request &operator=(Request &&o) noexcept;

    bool active() const { return req_ != nullptr || state_ != State::Idle; }
    // Non-blocking check; does not progress the worker.  Returns true when
    // complete (an idle request counts as complete); *status is TERSE_OK or
    // the failure (message names the peer; a message longer than the
    // receive buffer fails with "Message truncated").
    bool test(Status *status);
    size_t received_length() const { return length_; }
    void release();  // cancel if pending, then free

    // Internal state, written by the transport's completion callbacks.
    enum class State { Idle, Pending, Done, Failed };
    void *req_ = nullptr;
    State state_ = State::Idle;
    int status_code_ = 0;  // ucs_status_t
    size_t length_ = 0;
    int peer_ = -1;  // world rank, for messages
    bool is_recv_ = false;
    uint64_t tag_ = 0;     // for messages
    size_t capacity_ = 0;  // receive buffer size, for the truncation message
};

// What the transport is told when it starts: everything it needs from
// the world outside UCX, as plain values and callbacks.
struct TransportParams {
    // Reaches every process before endpoints exist: init gathers the worker
    // addresses over it, finalize waits on it for every rank to have closed
    // its endpoints.  Must stay valid until finalize().
    OutOfBand *oob = nullptr;
    // UCS_THREAD_MODE_MULTI for the worker (else SERIALIZED).
    bool thread_multiple = false;
    // Whether this node runs more ranks than the CPUs they may use, found by
    // whoever starts the transport; cores_oversubscribed() reports it.
    bool cores_oversubscribed = false;
    // Writes a tag's fields as text for error messages: the layout belongs
    // to whoever builds tags.  nullptr: the tag is printed in hexadecimal.
    void (*describe_tag)(uint64_t tag, char *buf, size_t len) = nullptr;
};

class Transport {
public:
    // Collective over the out-of-band ranks (the runtime calls it from
    // MPI_Init / MPI_Init_thread).  Calling it again while running is
    // accepted only with the same thread_multiple.
    static Status init(const TransportParams &params);
    // Releases endpoints, worker and context (collectively, waiting on the
    // out-of-band barrier when it can).  The runtime calls it from
    // MPI_Finalize before PMPI_Finalize.  Safe to call when init failed or
    // never ran.
    static void finalize();
    // nullptr before init / after finalize.
    static Transport *get();

    int world_rank() const;
    int world_size() const;

    // A request that is still active is released (cancelled) first.  The
    // receive matches on the full tag only (UCX matches per worker, not per
    // peer), so the tag must name the sender; world_peer is for messages.
    Status isend(int world_peer, uint64_t tag, const void *buf, size_t len, Request *req);
    Status irecv(int world_peer, uint64_t tag, void *buf, size_t capacity, Request *req);
    // Drive UCX; returns nonzero if any progress was made.
    unsigned progress();
    // Sleep until UCX has something for progress() or timeout_us passes,
    // whichever comes first; returns at once when events are already
    // pending.  Call after progress() returned 0 (a missed event then costs
    // at most the timeout, never a hang).  Only one thread at a time sleeps
    // on the worker's event fd, and progress() on another thread wakes it
    // when it moves anything; another thread that waits meanwhile, or any
    // thread when UCX gives no event fd, naps for min(timeout_us, 100 us).
    void wait_for_events(unsigned timeout_us);
    // Whether wait_for_events() can be woken by UCX (false: it naps).
    bool wakeup_enabled() const;
    // Whether terse set RNDV_THRESH=inf (TCP-only context, user left the
    // threshold alone; see the header comment).
    bool eager_only() const;
    // Whether this node runs more ranks than the CPUs they may use (as
    // TransportParams said).  Waiters then sleep at once rather than spin
    // first.
    bool cores_oversubscribed() const;
    // Whether this UCX sends and receives CUDA device memory itself (its
    // context lists UCS_MEMORY_TYPE_CUDA among its memory types).
    bool reads_device_memory() const;

    // Whether any thread may drive the worker at any time: a MULTI worker,
    // or a SERIALIZED one after share_worker().
    bool thread_safe() const;
    // From now on a helper thread (the runtime's progress thread) drives
    // the worker too: a SERIALIZED worker's every call then takes a lock of
    // the transport's own (one uncontended lock per call; a MULTI worker
    // locks itself).  Call from the one thread that uses the transport,
    // before the helper starts; not undone.
    void share_worker();

    // Number of endpoints currently open (tests check it stays flat).
    size_t endpoint_count() const;

    struct Impl;
private:
    explicit Transport(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
public:
    ~Transport();
};

}  // namespace terse
