// Non-blocking collectives (MPI_Iallreduce and relatives) on terse's
// engine.  The design, also in terse(7):
//
//  - Requests.  Each call returns a generalized request
//    (PMPI_Grequest_start): a real MPI_Request, so that the application
//    can complete it with any completion call, mixed with the MPI
//    library's own requests, free it while active (MPI_Request_free) or
//    ask its status.  terse completes it (PMPI_Grequest_complete) once its
//    operation finished; its query function reports the outcome.
//  - Order.  Operations of one communicator run one at a time, in the
//    order they were issued (MPI's order of collectives on a communicator,
//    the same on every rank), so the engine's sequence numbers and tags
//    stay correct however blocking and non-blocking calls interleave: a
//    blocking call on a communicator first finishes its queued operations.
//    Their control plane (the agreements of OpBase) runs on a private
//    duplicate of the communicator, made at the first non-blocking call
//    on it, so that it can never match the application's own collectives.
//  - Progress.  A progress thread moves the operations while the
//    application computes; it sleeps on a condition variable when nothing
//    is in flight and on the transport's events while something is, so it
//    keeps no core busy.  It calls MPI only when the application asked for
//    MPI_THREAD_MULTIPLE; below that, the few MPI steps of an operation
//    (agreements, completing the request) are left to the application's
//    next MPI call that terse intercepts: the completion calls, any terse
//    collective, MPI_Finalize.  The transport is shared with the progress
//    thread from the first non-blocking call on (Transport::share_worker).
//  - MPI_Finalize completes every operation still in flight first.
#pragma once

#include "engine/coll_args.h"
#include "runtime/collective.h"
#include "runtime/comm_state.h"
#include "util/status.h"

#include <mpi.h>

#include <deque>
#include <memory>
#include <mutex>

namespace terse {

struct NbCall;  // nonblocking.cc

// A communicator's non-blocking operations (CommState::nb): issued and not
// yet finished, the front one running.
struct NbQueue {
    NbQueue() = default;
    ~NbQueue();
    NbQueue(const NbQueue &) = delete;
    NbQueue &operator=(const NbQueue &) = delete;

    std::mutex mu;  // held while its operations are started or advanced
    std::deque<NbCall *> calls;
    MPI_Comm ctl_comm = MPI_COMM_NULL;  // the private duplicate for the control plane
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
// eligible); call names it in messages.  args' counts and displs are copied.
Status nb_start(CommState *st, const CollArgs &args, const CollectiveChoice &choice, const char *call,
                MPI_Request *request);

// Whether any request is not yet completed for MPI (cheap: one load).
bool nb_pending();
// From an application thread inside an MPI call: advance operations, start
// queued ones, complete the requests of finished ones.
void nb_poll();
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
