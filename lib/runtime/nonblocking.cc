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
    int priority = 0;
    uint64_t ticket = 0;                  // its place in issue order
    uint64_t seen_activity = 0;           // op->activity() when it last moved (under q->mu)
    double moved_at = 0;                  // when it last moved (under q->mu)
    std::atomic<bool> finished{false};    // its operation ended (status final)
    std::atomic<bool> completing{false};  // taken by the thread that completes the request
    Status status = TERSE_OK;
    std::string msg;
    int error_code = MPI_SUCCESS;  // what the request reports
    MPI_Request greq = MPI_REQUEST_NULL;
    // Its device buffers' host copies: the result goes back before the
    // request completes (nb_start, nb_track_staged).
    std::unique_ptr<device::StagedCall> staged;
    // Its device buffers on the device codec path: the communicator's lane,
    // held until the operation ends (runtime/device_codecs.h).
    std::unique_ptr<DeviceLease> device;
    // A call the MPI library serves on staged buffers: its request, tested
    // until it completes (no queue, no operation).
    MPI_Request inner = MPI_REQUEST_NULL;
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
    std::atomic<int> inner{0};    // staged calls the MPI library serves, their request not yet complete
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

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Starts c, the oldest waiting call of q.  Under q->mu.
void start_call(NbQueue *q, NbCall *c) {
    Status s = collective_start(c->st, c->args, c->choice, Priority::Normal, &c->op, nullptr, true,
                                q->control.get(), c->device ? c->device->port() : nullptr);
    if (s != TERSE_OK) {
        c->status = s;
        c->msg = last_error();
        c->op.reset();
    }
    c->moved_at = now();
}

void note_finished(NbQueue *q, NbCall *c) {
    if (c->device) {
        // The result in place before the request can complete, and the
        // lane free for the communicator's next call.
        const Status s = c->device->release();
        if (s != TERSE_OK && c->status == TERSE_OK) {
            c->status = s;
            c->msg = last_error();
        }
        c->device.reset();
    }
    ++q->finished;
    TERSE_LOG_DEBUG("non-blocking: %s #%llu (priority %d) on %s finished %llu-th", c->call,
                    (unsigned long long)c->ticket, c->priority, c->st->describe().c_str(),
                    (unsigned long long)q->finished);
    c->finished.store(true, std::memory_order_release);
    g.running.fetch_sub(1, std::memory_order_acq_rel);
}

// Whether a serves before b under the priority policy.
bool serves_before(const NbCall *a, const NbCall *b) {
    return a->priority != b->priority ? a->priority > b->priority : a->ticket < b->ticket;
}

// Starts q's waiting calls in issue order while fewer than q->inflight run.
// Under q->mu.  Returns how many of them finished at once (failed starts).
unsigned start_waiting(NbQueue *q) {
    unsigned n = 0;
    while (!q->waiting.empty() && q->active.size() < q->inflight) {
        NbCall *c = q->waiting.front();
        q->waiting.pop_front();
        start_call(q, c);
        if (!c->op) {
            note_finished(q, c);
            ++n;
            continue;
        }
        q->active.push_back(c);  // tickets grow: active stays in issue order
    }
    return n;
}

// Starts what q may start and advances its started calls once, as the
// policy says (nonblocking.h); with control_only just those waiting on the
// MPI control plane (an application thread issuing a call: it does the MPI
// steps only it may do, and leaves the data to the progress thread, so
// that issuing stays cheap).  Under q->mu.  Returns how many finished;
// *waits_on_mpi says whether every running one now waits only for the MPI
// control plane.
unsigned advance_queue(NbQueue *q, bool *waits_on_mpi, bool control_only = false) {
    unsigned n = start_waiting(q);
    *waits_on_mpi = false;
    if (q->active.empty()) return n;
    // The queue's own scratch, whose capacity stays, and an insertion sort
    // (stable, at most nb_inflight entries; std::stable_sort takes a
    // buffer): a pass allocates nothing.
    std::vector<NbCall *> &order = q->order;
    order.assign(q->active.begin(), q->active.end());
    if (q->policy == NbPolicy::Priority)
        for (size_t i = 1; i < order.size(); ++i)
            for (size_t k = i; k > 0 && serves_before(order[k], order[k - 1]); --k)
                std::swap(order[k], order[k - 1]);
    const double t = now();
    bool all_on_mpi = true, held = false;
    for (NbCall *c : order) {
        if (held || (control_only && !c->op->waits_on_control())) {
            // Preempted: it stays at its chunk boundary while one above moves.
            all_on_mpi = false;
            continue;
        }
        bool done = false;
        Status s = c->op->advance(&done);
        if (done) {
            c->status = s;
            if (s != TERSE_OK) c->msg = last_error();
            q->active.erase(std::find(q->active.begin(), q->active.end(), c));
            note_finished(q, c);
            ++n;
            continue;
        }
        const bool on_mpi = c->op->waits_on_control();
        if (!on_mpi) all_on_mpi = false;
        if (c->op->activity() != c->seen_activity) {
            c->seen_activity = c->op->activity();
            c->moved_at = t;
        }
        // Work-conserving: the ones below advance while this one waits on
        // the control plane or on a peer.
        if (q->policy == NbPolicy::Priority && !on_mpi && t - c->moved_at < q->hold_s) held = true;
    }
    *waits_on_mpi = all_on_mpi && !q->active.empty();
    if (n) n += start_waiting(q);
    return n;
}

// Everything q holds, finished, on an application thread.  Under q->mu.
void drain_locked(NbQueue *q) {
    NbBackoff backoff;
    while (!q->waiting.empty() || !q->active.empty()) {
        bool on_mpi = false;
        unsigned moved = advance_queue(q, &on_mpi);
        if (Transport *t = Transport::get()) moved += t->progress();
        if (moved) {
            backoff.reset();
            continue;
        }
        // The MPI library progresses the control plane only when called,
        // and never signals the transport's events.
        if (on_mpi) sched_yield();
        else backoff.idle();
    }
}

// A pass over every queue.  Returns how many calls finished; *blocked says
// whether every running call waits for the MPI control plane.  wait: take
// the pass lock even when another thread holds it (else skip the pass: an
// MPI_Test must not wait for the progress thread's encoding).
unsigned advance_all(bool *blocked, bool wait = true, bool control_only = false) {
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
        n += advance_queue(q, &w, control_only);
        if ((!q->active.empty() || !q->waiting.empty()) && !w) all_wait = false;
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
    if (c->staged) {
        // The result back in device memory before MPI learns the request
        // is complete; on whichever thread completes it (finish() makes
        // the buffer's context current for the copy).
        if (c->status == TERSE_OK) {
            c->status = c->staged->finish();
            if (c->status != TERSE_OK) c->msg = last_error();
        }
        c->staged.reset();
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

// The staged calls the MPI library serves whose request completed
// (block: waits for each).  On a thread that may call MPI.
void test_inner_requests(bool block = false) {
    // Most polls have none: no lock for them.
    if (g.inner.load(std::memory_order_acquire) == 0) return;
    // One tester at a time: MPI forbids two threads completing one request.
    static std::mutex testing;
    std::unique_lock<std::mutex> one(testing, std::defer_lock);
    if (block) one.lock();
    else if (!one.try_lock()) return;
    std::vector<NbCall *> inner;
    {
        std::lock_guard<std::mutex> lk(g.mu);
        for (NbCall *c : g.calls)
            if (c->inner != MPI_REQUEST_NULL && !c->finished.load(std::memory_order_acquire)) inner.push_back(c);
    }
    for (NbCall *c : inner) {
        int done = 0;
        MPI_Status status;
        const int rc = block ? PMPI_Wait(&c->inner, &status) : PMPI_Test(&c->inner, &done, &status);
        if (rc != MPI_SUCCESS) {
            c->status = set_error(TERSE_ERR_MPI, "terse: %s on staged host copies failed in the MPI library (%d)",
                                  c->call, rc);
            c->msg = last_error();
            done = 1;
        }
        if (block || done) {
            c->inner = MPI_REQUEST_NULL;
            g.inner.fetch_sub(1, std::memory_order_acq_rel);
            c->finished.store(true, std::memory_order_release);
        }
    }
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

Status nb_track_staged(std::unique_ptr<device::StagedCall> &&staged, const char *call, MPI_Request *request) {
    NbCall *c = new (std::nothrow) NbCall;
    if (!c) return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory starting %s", call);
    c->call = call;
    c->inner = *request;
    if (PMPI_Grequest_start(query_fn, free_fn, cancel_fn, c, &c->greq) != MPI_SUCCESS) {
        // The library's request is the application's again.
        c->inner = MPI_REQUEST_NULL;
        delete c;
        return set_error(TERSE_ERR_MPI, "terse: %s: MPI_Grequest_start failed", call);
    }
    c->staged = std::move(staged);
    {
        std::lock_guard<std::mutex> lk(g.mu);
        g.calls.push_back(c);
        g.pending.store(int(g.calls.size()), std::memory_order_release);
        g.inner.fetch_add(1, std::memory_order_acq_rel);
    }
    *request = c->greq;
    return TERSE_OK;
}

Status nb_start(CommState *st, const CollArgs &args, const CollectiveChoice &choice, int prio, const char *call,
                MPI_Request *request, std::unique_ptr<device::StagedCall> &&staged,
                std::unique_ptr<DeviceLease> &&device) {
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
    c->priority = prio;
    if (PMPI_Grequest_start(query_fn, free_fn, cancel_fn, c, &c->greq) != MPI_SUCCESS) {
        delete c;
        return set_error(TERSE_ERR_MPI, "terse: %s: MPI_Grequest_start failed", call);
    }
    c->staged = std::move(staged);
    c->device = std::move(device);
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
        // Started at once when there is room, so the MPI steps of its
        // start run here, on the application's thread.
        std::lock_guard<std::mutex> lk(q->mu);
        q->policy = st->config.nb_policy;
        q->inflight = size_t(std::max(1, st->config.nb_inflight));
        q->hold_s = 1e-6 * st->config.nb_hold_us;
        c->ticket = q->issued++;
        q->waiting.push_back(c);
        start_waiting(q);
    }
    *request = c->greq;
    kick();
    return TERSE_OK;
}

bool nb_pending() { return g.pending.load(std::memory_order_acquire) > 0; }

void nb_poll(bool issuing) {
    if (!nb_pending()) return;
    bool blocked = false;
    advance_all(&blocked, false, issuing);
    test_inner_requests();
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
    test_inner_requests(true);
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

namespace {

// The priority terse_set_next_priority set for this thread's next
// non-blocking call, and on which communicator.
struct NextPriority {
    MPI_Comm comm = MPI_COMM_NULL;
    int prio = 0;
};
thread_local NextPriority t_next;

}  // namespace

void nb_set_next_priority(MPI_Comm comm, int prio) { t_next = NextPriority{comm, prio}; }

int nb_take_priority(MPI_Comm comm) {
    if (__builtin_expect(t_next.comm == MPI_COMM_NULL, 1) || t_next.comm != comm) return 0;
    const int p = t_next.prio;
    t_next = NextPriority{};
    return p;
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
