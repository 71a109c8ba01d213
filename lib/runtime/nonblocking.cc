// Non-blocking collectives: generalized requests, per-communicator queues
// and the progress thread (the design: nonblocking.h).
#include "runtime/nonblocking.h"

#include "runtime/collective.h"
#include "runtime/engine_ports.h"
#include "transport/ucx_transport.h"
#include "util/log.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <new>
#include <sched.h>
#include <string>
#include <thread>
#include <vector>

namespace terse {

// One non-blocking call, from its start to the release of its request.
// Owned by its generalized request: MPI calls free_fn (which deletes it)
// once the request is both completed by terse and freed by the
// application (a completion call, or MPI_Request_free).
struct NbCall {
    CommState *st = nullptr;
    NbQueue *q = nullptr;  // null once its operation is gone (st may be freed)
    CollArgs args;
    CollectiveChoice choice;  // the planner's, made at issue (in call order on every rank)
    const char *call = "";
    std::vector<size_t> counts, displs;
    OpHandle op;
    bool started = false;                 // under q->mu
    std::atomic<bool> finished{false};    // its operation ended (status final)
    std::atomic<bool> completing{false};  // taken by the thread that completes the request
    Status status = TERSE_OK;
    std::string msg;
    int error_code = MPI_SUCCESS;  // what the request reports
    MPI_Request greq = MPI_REQUEST_NULL;
};

namespace {

struct Nb {
    bool thread_mpi = false;  // the progress thread may call MPI (MPI_THREAD_MULTIPLE)
    bool use_thread = false;
    int (*error_code)(Status) = nullptr;

    // Held for a pass over the queues, and to add or remove a queue, so a
    // pass never meets a queue being destroyed.
    std::mutex pass_mu;
    std::vector<NbQueue *> queues;

    std::mutex mu;  // guards calls and the thread's sleep
    std::condition_variable cv;
    std::vector<NbCall *> calls;  // requests not yet completed for MPI
    std::atomic<int> pending{0};  // calls.size()
    std::atomic<int> running{0};  // issued, not finished
    std::atomic<unsigned> kicks{0};
    bool stop = false;
    std::thread thread;
};

Nb g;

int query_fn(void *extra, MPI_Status *status) {
    auto *c = static_cast<NbCall *>(extra);
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = c->error_code;
    return c->error_code;
}

int free_fn(void *extra) {
    delete static_cast<NbCall *>(extra);
    return MPI_SUCCESS;
}

// A collective cannot be cancelled once the peers may be in it.
int cancel_fn(void *, int) { return MPI_SUCCESS; }

void kick() {
    g.kicks.fetch_add(1, std::memory_order_release);
    g.cv.notify_one();
}

// Starts the front call of q.  Under q->mu.
void start_call(NbQueue *q, NbCall *c) {
    c->started = true;
    Status s = collective_start(c->st, c->args, c->choice, Priority::Normal, &c->op, nullptr, true,
                                q->control.get());
    if (s != TERSE_OK) {
        c->status = s;
        c->msg = last_error();
        c->op.reset();
    }
}

void note_finished(NbCall *c) {
    c->finished.store(true, std::memory_order_release);
    g.running.fetch_sub(1, std::memory_order_acq_rel);
}

// Starts and advances q's calls in order, as far as they go without
// waiting.  Under q->mu.  Returns how many finished; *waits_on_mpi says
// whether the front one now waits only for the MPI control plane.
unsigned advance_queue(NbQueue *q, bool *waits_on_mpi) {
    unsigned n = 0;
    *waits_on_mpi = false;
    while (!q->calls.empty()) {
        NbCall *c = q->calls.front();
        if (!c->started) start_call(q, c);
        if (c->op) {
            bool done = false;
            Status s = c->op->advance(&done);
            if (!done) {
                *waits_on_mpi = c->op->waits_on_control();
                break;
            }
            c->status = s;
            if (s != TERSE_OK) c->msg = last_error();
        }
        q->calls.pop_front();
        note_finished(c);
        ++n;
    }
    return n;
}

// Everything q holds, finished, on an application thread.  Under q->mu.
void drain_locked(NbQueue *q) {
    while (!q->calls.empty()) {
        NbCall *c = q->calls.front();
        if (!c->started) start_call(q, c);
        if (c->op) {
            Status s = engine_wait(c->op.get());
            c->status = s;
            if (s != TERSE_OK) c->msg = last_error();
        }
        q->calls.pop_front();
        note_finished(c);
    }
}

// A pass over every queue.  Returns how many calls finished; *blocked says
// whether every running call waits for the MPI control plane.  wait: take
// the pass lock even when another thread holds it (else skip the pass: an
// MPI_Test must not wait for the progress thread's encoding).
unsigned advance_all(bool *blocked, bool wait = true) {
    std::unique_lock<std::mutex> pass(g.pass_mu, std::defer_lock);
    if (wait) pass.lock();
    else if (!pass.try_lock()) {
        *blocked = false;
        return 0;
    }
    unsigned n = 0;
    bool all_wait = true;
    for (NbQueue *q : g.queues) {
        std::unique_lock<std::mutex> lk(q->mu, std::try_to_lock);
        if (!lk.owns_lock()) {
            all_wait = false;
            continue;
        }
        bool w = false;
        n += advance_queue(q, &w);
        if (!q->calls.empty() && !w) all_wait = false;
    }
    *blocked = all_wait;
    return n;
}

// Completes the request of a finished call: its operation goes (under its
// queue's lock: the pool it returns to is shared with the next call), the
// error is reported, and MPI learns the request is complete.  On a thread
// that may call MPI.
void complete_call(NbCall *c) {
    if (c->q) {
        std::lock_guard<std::mutex> lk(c->q->mu);
        c->op.reset();
        c->q = nullptr;
    }
    if (c->status != TERSE_OK) {
        TERSE_LOG_ERROR("%s failed: %s (%s)", c->call, c->msg.c_str(), terse_status_string(c->status));
        c->error_code = g.error_code ? g.error_code(c->status) : MPI_ERR_OTHER;
    }
    {
        std::lock_guard<std::mutex> lk(g.mu);
        g.calls.erase(std::remove(g.calls.begin(), g.calls.end(), c), g.calls.end());
        g.pending.store(int(g.calls.size()), std::memory_order_release);
    }
    // Last: once complete, a request the application freed is gone (free_fn).
    PMPI_Grequest_complete(c->greq);
}

// The finished calls whose request nobody completes yet; of queue q only
// when q is given.
std::vector<NbCall *> take_finished(const NbQueue *q = nullptr) {
    std::vector<NbCall *> out;
    std::lock_guard<std::mutex> lk(g.mu);
    for (NbCall *c : g.calls) {
        if (q && c->q != q) continue;
        if (c->finished.load(std::memory_order_acquire) && !c->completing.exchange(true)) out.push_back(c);
    }
    return out;
}

void complete_finished(const NbQueue *q = nullptr) {
    for (NbCall *c : take_finished(q)) complete_call(c);
}

void progress_thread() {
    if (!g.thread_mpi) control_thread_without_mpi();
    unsigned sleep_us = 50;
    for (;;) {
        {
            std::unique_lock<std::mutex> lk(g.mu);
            g.cv.wait(lk, [] { return g.stop || g.running.load(std::memory_order_acquire) > 0; });
            if (g.stop) return;
        }
        bool blocked = false;
        unsigned moved = advance_all(&blocked);
        if (g.thread_mpi) complete_finished();
        Transport *t = Transport::get();
        if (t) moved += t->progress();
        if (moved) {
            sleep_us = 50;
            continue;
        }
        if (blocked && !g.thread_mpi) {
            // Only the application can move them now (nonblocking.h): sleep
            // until it issues, polls or finishes something.
            const unsigned seen = g.kicks.load(std::memory_order_acquire);
            std::unique_lock<std::mutex> lk(g.mu);
            g.cv.wait_for(lk, std::chrono::milliseconds(50),
                          [&] { return g.stop || g.kicks.load(std::memory_order_acquire) != seen; });
            continue;
        }
        if (t) t->wait_for_events(sleep_us);
        else std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        sleep_us = std::min(2 * sleep_us, 1000u);
    }
}

NbQueue *queue_of(CommState *st, Status *s) {
    if (st->nb) return st->nb.get();
    auto q = std::make_unique<NbQueue>();
    // Collective: every rank makes its first non-blocking call on st at the
    // same point of its sequence of collectives.
    if (PMPI_Comm_dup(st->comm, &q->ctl_comm) != MPI_SUCCESS) {
        *s = set_error(TERSE_ERR_MPI, "terse: duplicating communicator %s for non-blocking calls failed",
                       st->describe().c_str());
        return nullptr;
    }
    q->control = make_deferring_mpi_control(q->ctl_comm);
    {
        std::lock_guard<std::mutex> pass(g.pass_mu);
        g.queues.push_back(q.get());
    }
    st->nb = std::move(q);
    return st->nb.get();
}

}  // namespace

NbQueue::~NbQueue() {
    {
        std::lock_guard<std::mutex> pass(g.pass_mu);
        g.queues.erase(std::remove(g.queues.begin(), g.queues.end(), this), g.queues.end());
    }
    // Whatever is left of its calls (a request not completed for MPI yet)
    // no longer reaches the queue.
    {
        std::lock_guard<std::mutex> lk(g.mu);
        for (NbCall *c : g.calls)
            if (c->q == this) c->q = nullptr;
    }
    if (ctl_comm != MPI_COMM_NULL) PMPI_Comm_free(&ctl_comm);
}

void nb_init(int provided, int (*error_code)(Status)) {
    g.thread_mpi = provided == MPI_THREAD_MULTIPLE;
    g.error_code = error_code;
    g.use_thread = Transport::get() != nullptr;
    g.stop = false;
}

Status nb_start(CommState *st, const CollArgs &args, const CollectiveChoice &choice, const char *call,
                MPI_Request *request) {
    Status s = TERSE_OK;
    NbQueue *q = queue_of(st, &s);
    if (!q) return s;
    NbCall *c = new (std::nothrow) NbCall;
    if (!c) return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory starting %s", call);
    try {
        c->args = args;
        c->choice = choice;
        if (coll_is_v(args.kind)) {
            c->counts.assign(args.counts, args.counts + st->size);
            c->args.counts = c->counts.data();
            if (args.displs) {
                c->displs.assign(args.displs, args.displs + st->size);
                c->args.displs = c->displs.data();
            }
        }
    } catch (const std::bad_alloc &) {
        delete c;
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory starting %s", call);
    }
    c->st = st;
    c->q = q;
    c->call = call;
    if (PMPI_Grequest_start(query_fn, free_fn, cancel_fn, c, &c->greq) != MPI_SUCCESS) {
        delete c;
        return set_error(TERSE_ERR_MPI, "terse: %s: MPI_Grequest_start failed", call);
    }
    g.running.fetch_add(1, std::memory_order_acq_rel);
    {
        std::lock_guard<std::mutex> lk(g.mu);
        g.calls.push_back(c);
        g.pending.store(int(g.calls.size()), std::memory_order_release);
        if (g.use_thread && !g.thread.joinable()) {
            // The first non-blocking call: from now on two threads drive
            // the transport (blocking-only programs never pay its lock).
            Transport::get()->share_worker();
            g.thread = std::thread(progress_thread);
        }
    }
    {
        // Started at once when it is the front call, so the MPI steps of
        // its start run here, on the application's thread.
        std::lock_guard<std::mutex> lk(q->mu);
        q->calls.push_back(c);
        bool w = false;
        advance_queue(q, &w);
    }
    *request = c->greq;
    kick();
    return TERSE_OK;
}

bool nb_pending() { return g.pending.load(std::memory_order_acquire) > 0; }

void nb_poll() {
    if (!nb_pending()) return;
    bool blocked = false;
    advance_all(&blocked, false);
    complete_finished();
    if (g.running.load(std::memory_order_acquire) > 0) kick();
}

void nb_drain(CommState *st) {
    NbQueue *q = st->nb.get();
    if (!q) return;
    {
        std::lock_guard<std::mutex> lk(q->mu);
        drain_locked(q);
    }
    complete_finished(q);
}

Status nb_run_blocking(CommState *st, const CollArgs &args, const CollectiveChoice &choice) {
    NbQueue *q = st->nb.get();
    if (!q) return collective_run(st, args, choice);
    Status s;
    {
        std::lock_guard<std::mutex> lk(q->mu);
        drain_locked(q);
        s = collective_run(st, args, choice);
    }
    complete_finished(q);
    return s;
}

void nb_finalize() {
    {
        std::lock_guard<std::mutex> pass(g.pass_mu);
        for (NbQueue *q : g.queues) {
            std::lock_guard<std::mutex> lk(q->mu);
            drain_locked(q);
        }
    }
    complete_finished();
    {
        std::lock_guard<std::mutex> lk(g.mu);
        g.stop = true;
    }
    g.cv.notify_all();
    if (g.thread.joinable()) g.thread.join();
    // The private duplicates go now, before the runtime frees the states:
    // freeing one frees its own (inherited) state.
    std::vector<NbQueue *> queues;
    {
        std::lock_guard<std::mutex> pass(g.pass_mu);
        queues = g.queues;
    }
    for (NbQueue *q : queues)
        if (q->ctl_comm != MPI_COMM_NULL) PMPI_Comm_free(&q->ctl_comm);
}

void NbBackoff::idle() {
    // About 20 us of polls, then yields for about 5 ms, then sleeps of 1 ms
    // on the transport's events (the engine's waiting, engine.cc).
    ++idle_polls_;
    if (idle_polls_ < 64) return;
    if (idle_polls_ < 4096) {
        sched_yield();
        return;
    }
    if (Transport *t = Transport::get()) t->wait_for_events(1000);
    else std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace terse
