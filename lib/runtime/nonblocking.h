// Non-blocking collectives (MPI_Iallreduce and relatives) on terse's
// engine.  The design, also in terse(7):
//
//  - Requests.  Each call returns a generalized request
//    (PMPI_Grequest_start): a real MPI_Request, so that the application
//    can complete it with any completion call, mixed with the MPI
//    library's own requests, free it while active (MPI_Request_free) or
//    ask its status.  terse completes it (PMPI_Grequest_complete) once its
//    operation finished; its query function reports the outcome.
//  - Order and scheduling.  Operations of one communicator are started in
//    issue order (MPI's order of collectives on a communicator, the same
//    on every rank: it gives each its sequence number and message tags)
//    as long as fewer than nb_inflight of them run; later ones queue,
//    holding no pipeline buffers, so memory stays bounded however many are
//    outstanding.  The started ones advance together, chunk by chunk: with
//    nb_policy=fifo every one in issue order on each pass; with
//    nb_policy=priority (the default) the highest priority first
//    (terse_set_next_priority; ties: the earliest issued), and an
//    operation is advanced only while every one above it is waiting: on
//    a peer (it moved nothing for nb_hold_us), or on the MPI library
//    (TERSE_VERIFY's and the guard's exact allreduce).  So a higher
//    priority preempts at a chunk boundary, and the schedule stays
//    work-conserving.  The rule that keeps this
//    deadlock-free however each rank orders its work: (1) every MPI step
//    of an operation (the exact allreduce of TERSE_VERIFY and of the
//    guard) is posted when the operation starts, on the private duplicate
//    `ctl_comm`, and starts follow issue order, so every rank posts the
//    same sequence of MPI collectives there, which MPI completes whatever
//    order they are tested in; (2) an operation's agreements (codec
//    statistics at its start, its outcome at its end) travel over its own
//    tagged messages (engine/link_agreement.h), which match nothing else;
//    (3) every other message is tagged with the operation's sequence
//    number.  No operation then waits for a later-
//    issued one, and a rank holds an operation back only while another
//    one moves, never indefinitely: by induction over issue order, the
//    earliest unfinished operation finishes on every rank, which frees a
//    start for the next.  Preemption is a local choice of which operation
//    this rank advances; it needs no agreement, because no rank's
//    progress depends on the order in which another rank serves its
//    operations.  The control plane's duplicate is made at the first
//    non-blocking call on a communicator, so it can never match the
//    application's own collectives.  A blocking call on a communicator
//    first finishes its non-blocking operations.
//  - Progress.  A progress thread moves the operations while the
//    application computes; it sleeps on a condition variable when nothing
//    is in flight and on the transport's events while something is, so it
//    keeps no core busy.  It calls MPI only when the application asked for
//    MPI_THREAD_MULTIPLE; below that, an operation's MPI steps (completing
//    the request; the exact allreduce of TERSE_VERIFY and the guard) are
//    left to the application's next MPI call that terse intercepts: the
//    completion calls, any terse collective, MPI_Finalize.  The transport is shared with the progress
//    thread from the first non-blocking call on (Transport::share_worker).
//  - MPI_Finalize completes every operation still in flight first.
#pragma once

#include "device/staged_call.h"
#include "engine/coll_args.h"
#include "runtime/collective.h"
#include "config/config.h"
#include "runtime/comm_state.h"
#include "runtime/device_codecs.h"
#include "util/status.h"

#include <mpi.h>

#include <deque>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace terse {

struct NbCall;  // nonblocking.cc

// A communicator's non-blocking operations (CommState::nb): issued and not
// yet finished.
struct NbQueue {
    NbQueue() = default;
    ~NbQueue();
    NbQueue(const NbQueue &) = delete;
    NbQueue &operator=(const NbQueue &) = delete;

    std::mutex mu;                         // held while its operations are started or advanced
    std::deque<NbCall *> waiting;          // issued, not started: they start in this (issue) order
    std::vector<NbCall *> active;          // started, not finished, in issue order
    std::vector<NbCall *> order;           // a pass's serving order (advance_queue's scratch)
    NbPolicy policy = NbPolicy::Priority;  // the communicator's nb_policy at its last call
    size_t inflight = 8;                   // its nb_inflight: the most started at once
    double hold_s = 0.001;                 // its nb_hold_us, in seconds
    uint64_t issued = 0;                   // calls issued (their tickets)
    uint64_t finished = 0;                 // calls finished (their place in completion order)
    MPI_Comm ctl_comm = MPI_COMM_NULL;     // the private duplicate for the control plane
    std::unique_ptr<Control> control;
};

// At MPI_Init, once the runtime is up: the thread level the application
// got and the MPI error code of a status (the wrappers' mpi_error_code).
// The progress thread starts at the first non-blocking call.
void nb_init(int provided, int (*error_code)(Status));
// At MPI_Finalize, before the communicators' states go: completes every
// operation still in flight and stops the progress thread.
void nb_finalize();

// Start a non-blocking collective that the engine runs on st (ready and
// eligible), with priority prio (nb_take_priority); call names it in
// messages.  args' counts and displs are copied.  staged (may be null): the
// call's device buffers staged through host memory (args names the host
// copies); the result is copied back to the device after the operation
// finished and before its request completes.  device (may be null): the
// call runs on its device buffers through the lease's port
// (runtime/device_codecs.h), released when its operation ends.  Taken
// over only on success.
Status nb_start(CommState *st, const CollArgs &args, const CollectiveChoice &choice, int prio, const char *call,
                MPI_Request *request, std::unique_ptr<device::StagedCall> &&staged = nullptr,
                std::unique_ptr<DeviceLease> &&device = nullptr);

// A non-blocking call the MPI library serves on host copies of device
// buffers: *request (the library's request, started on staged's buffers)
// is replaced by a generalized request that completes once the library's
// request completed and the result is back in device memory.  The
// library's request is tested by the completion calls terse intercepts
// (nb_poll); MPI_Finalize waits for it.  Taken over only on success.
Status nb_track_staged(std::unique_ptr<device::StagedCall> &&staged, const char *call, MPI_Request *request);

// terse_set_next_priority: the priority of the calling thread's next
// non-blocking collective on comm.  nb_take_priority, at the start of every
// non-blocking collective (served by terse or not), returns it and forgets
// it, or returns 0 (the default) when none was set for comm.
void nb_set_next_priority(MPI_Comm comm, int prio);
int nb_take_priority(MPI_Comm comm);

// Whether any request is not yet completed for MPI (cheap: one load).
bool nb_pending();
// From an application thread inside an MPI call: advance operations, start
// queued ones, complete the requests of finished ones.  issuing: from a
// call that just issued an operation: only the MPI steps (operations
// waiting on the control plane) and completing requests, not the data.
void nb_poll(bool issuing = false);
// Block until st's queued operations finished (before a blocking call on
// st, a change of its configuration, or its release).  From an application
// thread.
void nb_drain(CommState *st);
// A blocking collective on st that has (or had) non-blocking operations:
// after them, and not while one of them is advanced.
Status nb_run_blocking(CommState *st, const CollArgs &args, const CollectiveChoice &choice);

// Waiting in a completion call: spins briefly, then yields, then sleeps on
// the transport's events, so a rank that shares its core lets the others
// run.  idle() after a poll that found nothing to do; reset() after one
// that did.
class NbBackoff {
public:
    void idle();
    void reset() { idle_polls_ = 0; }

private:
    unsigned idle_polls_ = 0;
};

}  // namespace terse
