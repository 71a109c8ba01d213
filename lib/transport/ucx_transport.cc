// UCX implementation of ucx_transport.h.
//
// Requests are polled rather than completed through callbacks: test() asks
// UCX for the request's status (ucp_request_check_status /
// ucp_tag_recv_request_test), so nothing in UCX ever holds a pointer to a
// Request object and moving a pending Request is a plain pointer move.
//
// Waiting (wait_for_events) follows UCX's wakeup protocol: progress until
// it returns 0, ucp_worker_arm (UCS_ERR_BUSY: events are pending, progress
// again), then poll the worker's event fd.  Verified with UCX 1.13.1 on
// this machine: with UCP_FEATURE_WAKEUP the endpoints between local ranks
// still use sysv/posix shared memory with cma zero-copy (the lanes are the
// same as without it), and the shared-memory and TCP transports both wake
// a sleeping worker.
#include "transport/ucx_transport.h"

#include "util/log.h"

#include <ucp/api/ucp.h>

#include <poll.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace terse {

namespace {

// How long releasing a pending request, or closing endpoints, may wait for
// a peer before terse gives up on it.  A cancelled receive completes at
// once; only a send the peer never receives (rendezvous protocol) or an
// unresponsive peer waits this long.  Bounded so that an abandoned
// operation cannot hang the process.
constexpr auto kReleaseWait = std::chrono::seconds(5);
constexpr auto kCloseWait = std::chrono::seconds(30);

// Peers are identified by tag only when receiving (UCX matches on the
// worker), so every receive compares the whole tag.
constexpr ucp_tag_t kFullTagMask = ~ucp_tag_t(0);

// Set by init from TransportParams: how error messages show a tag.
void (*g_describe_tag)(uint64_t, char *, size_t) = nullptr;

struct TagText {
    char text[96];
    explicit TagText(uint64_t tag) {
        if (g_describe_tag) g_describe_tag(tag, text, sizeof text);
        else std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(tag));
    }
};

Status message_error(const char *op, int peer, uint64_t tag, ucs_status_t st, size_t capacity) {
    TagText t(tag);
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
        return set_error(TERSE_ERR_TRANSPORT,
                         "terse transport: %s from world rank %d (tag: %s) failed: %s: the message is "
                         "longer than the receive buffer of %zu bytes",
                         op, peer, t.text, ucs_status_string(st), capacity);
    return set_error(TERSE_ERR_TRANSPORT, "terse transport: %s %s world rank %d (tag: %s) failed: %s", op,
                     std::strcmp(op, "send") == 0 ? "to" : "from", peer, t.text, ucs_status_string(st));
}

// The longest a waiter sleeps without an event fd to wake it: short enough
// that a message that arrives meanwhile waits little, long enough that the
// scheduler runs the peers that share this core.
constexpr unsigned kNapUs = 100;

// Consecutive UCS_ERR_BUSY answers of ucp_worker_arm on this thread.
thread_local unsigned t_busy_streak = 0;

void nap_us(unsigned us) {
    timespec ts{time_t(us / 1000000u), long(us % 1000000u) * 1000L};
    nanosleep(&ts, nullptr);
}

// What a UCX print function writes to a FILE, as a string ("" when it
// cannot be captured; callers then keep UCX's defaults).
template <class Print>
std::string capture_print(Print &&print) {
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return {};
    print(f);
    std::fclose(f);
    std::string text;
    try {
        if (buf) text.assign(buf, len);
    } catch (const std::bad_alloc &) {
        text.clear();
    }
    std::free(buf);
    return text;
}

// Whether the user left UCX's rendezvous threshold at its default: neither
// variable set, and the resolved configuration (environment and UCX's
// configuration files) says "auto".  Anything unclear counts as set, so
// terse never overrides a choice it cannot see.
bool rndv_thresh_is_default(const ucp_config_t *config) {
    if (std::getenv("TERSE_UCX_RNDV_THRESH") || std::getenv("UCX_RNDV_THRESH")) return false;
    std::string text = capture_print(
        [&](FILE *f) { ucp_config_print(config, f, "terse", UCS_CONFIG_PRINT_CONFIG); });
    static const char kKey[] = "UCX_RNDV_THRESH=";
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        size_t key = text.find(kKey, pos);
        if (key < end && (key == pos || text[key - 1] == '_'))
            return text.compare(key + sizeof kKey - 1, end - (key + sizeof kKey - 1), "auto") == 0;
        pos = end + 1;
    }
    return false;
}

// Whether every resource of the context, "self" aside, is TCP.  Read from
// ucp_context_print_info, whose resource lines end in "flags -- <tl>/<dev>"
// (UCX has no query for them); if none is found the answer is false.
bool context_is_tcp_only(ucp_context_h context) {
    std::string text = capture_print([&](FILE *f) { ucp_context_print_info(context, f); });
    static const char kMark[] = "flags --";
    bool tcp = false;
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        size_t res = text.find("resource", pos);
        size_t mark = text.find(kMark, pos);
        if (res < end && mark < end) {
            size_t b = text.find_first_not_of(' ', mark + sizeof kMark - 1);
            size_t e = b < end ? text.find('/', b) : std::string::npos;
            if (e == std::string::npos || e > end) return false;  // a format we do not know
            std::string tl = text.substr(b, e - b);
            if (tl == "tcp") tcp = true;
            else if (tl != "self") return false;
        }
        pos = end + 1;
    }
    return tcp;
}

// One out-of-band allgather, run to completion.  While it is pending the
// worker is progressed when given (finalize: peers may need this rank's
// answers to close their endpoints), else the CPU is yielded.
Status oob_allgather(OutOfBand &oob, const void *send, void *recv, size_t len, ucp_worker_h worker) {
    void *req = nullptr;
    Status s = oob.allgather(send, recv, len, &req);
    if (s != TERSE_OK) return s;
    Status done = TERSE_OK;
    while (!oob.test(req, &done)) {
        // Ranks sharing cores finish sooner if the idle ones nap.
        if (!worker) sched_yield();
        else if (ucp_worker_progress(worker) == 0) nap_us(kNapUs / 4);
    }
    oob.free(req);
    return done;
}

// The out-of-band collective's failure s (its message is the last error),
// named as the gather of `what`.
Status oob_error(Status s, const char *what) {
    const std::string why = last_error();
    return set_error(s, "terse transport: gathering %s failed: %s", what, why.c_str());
}

}  // namespace

struct Transport::Impl {
    OutOfBand *oob = nullptr;
    int rank = -1;
    int size = 0;
    bool multi = false;
    // A SERIALIZED worker shared with a helper thread (share_worker()):
    // every UCX call on it then holds worker_mu.
    std::atomic<bool> shared{false};
    std::mutex worker_mu;
    ucp_context_h context = nullptr;
    ucp_worker_h worker = nullptr;

    // The worker's event fd (UCP_FEATURE_WAKEUP), or -1.  `wakeup` turns
    // off for good if arming ever fails; `sleeping` admits one thread at a
    // time to the fd (two threads arming and polling one worker would steal
    // each other's events).
    int efd = -1;
    std::atomic<bool> wakeup{false};
    std::atomic<int> sleeping{0};
    bool eager_only = false;  // terse set RNDV_THRESH=inf
    bool oversubscribed = false;
    bool reads_cuda = false;  // the context lists UCS_MEMORY_TYPE_CUDA

    // Every rank's worker address, gathered once at init: rank r's at
    // addresses[r * address_stride].
    std::vector<unsigned char> addresses;
    size_t address_stride = 0;

    // One endpoint per world peer, created on first use and shared by all
    // communicators.  Read without a lock on the hot path; created under
    // ep_mutex so two threads cannot both connect to one peer.
    std::unique_ptr<std::atomic<ucp_ep_h>[]> eps;
    std::atomic<size_t> ep_count{0};
    std::mutex ep_mutex;

    Impl() = default;
    Impl(const Impl &) = delete;
    Impl &operator=(const Impl &) = delete;
    ~Impl() {
        close_endpoints(false);
        if (worker) ucp_worker_destroy(worker);
        if (context) ucp_cleanup(context);
    }

    Status open(bool thread_multiple);
    Status exchange_addresses(Status local);
    Status connect(int peer, ucp_ep_h *ep);
    void close_endpoints(bool collective);
    void release_request(void *req, bool is_recv, int peer, uint64_t tag);

    ucp_ep_h endpoint(int peer, Status *st) {
        ucp_ep_h ep = eps[peer].load(std::memory_order_acquire);
        if (__builtin_expect(ep != nullptr, 1)) return ep;
        *st = connect(peer, &ep);
        return ep;
    }
};

namespace {

// Owned here; created by init, deleted by finalize.  A plain pointer, not a
// static unique_ptr: tearing UCX down from a static destructor at exit,
// after UCX itself may be gone, would be worse than leaving it to the OS.
Transport *g_transport = nullptr;
Transport::Impl *g_impl = nullptr;

namespace {
// How deep the calling thread is in WorkerLocks (a release inside a send
// takes the lock once).
thread_local int t_worker_depth __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace

// Holds the worker's lock for one call when the worker is shared
// (Impl::shared); nothing else when it is not, or is MULTI.
class WorkerLock {
public:
    explicit WorkerLock(Transport::Impl *im)
        : im_(im && t_worker_depth == 0 && im->shared.load(std::memory_order_acquire) ? im : nullptr) {
        if (im_) im_->worker_mu.lock();
        ++t_worker_depth;
    }
    ~WorkerLock() {
        --t_worker_depth;
        if (im_) im_->worker_mu.unlock();
    }
    WorkerLock(const WorkerLock &) = delete;
    WorkerLock &operator=(const WorkerLock &) = delete;

private:
    Transport::Impl *im_;
};

}  // namespace

// ---------------------------------------------------------------- setup

Status Transport::Impl::open(bool thread_multiple) {
    multi = thread_multiple;

    ucp_config_t *config = nullptr;
    ucs_status_t st = ucp_config_read("TERSE", nullptr, &config);
    if (st != UCS_OK)
        return set_error(TERSE_ERR_TRANSPORT,
                         "terse transport: reading UCX configuration (TERSE_UCX_*) failed: %s",
                         ucs_status_string(st));

    ucp_params_t params = {};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 0;
    params.estimated_num_eps = size_t(size);
    params.name = "terse";
    st = ucp_init(&params, config, &context);
    if (st != UCS_OK) {
        // Transports without event support may make UCX refuse wakeup;
        // terse then waits by napping.
        TERSE_LOG_DEBUG("transport: ucp_init with UCP_FEATURE_WAKEUP failed (%s); retrying without it",
                        ucs_status_string(st));
        context = nullptr;
        params.features = UCP_FEATURE_TAG;
        st = ucp_init(&params, config, &context);
    }
    if (st == UCS_OK && rndv_thresh_is_default(config) && context_is_tcp_only(context)) {
        // The threshold is a context setting, and the resources are only
        // known once a context exists: make the context again with it.
        if (ucp_config_modify(config, "RNDV_THRESH", "inf") == UCS_OK) {
            ucp_cleanup(context);
            context = nullptr;
            st = ucp_init(&params, config, &context);
            eager_only = st == UCS_OK;
            TERSE_LOG_DEBUG("transport: TCP-only UCX context: rendezvous off (RNDV_THRESH=inf)");
        }
    }
    ucp_config_release(config);
    if (st != UCS_OK) {
        context = nullptr;
        return set_error(TERSE_ERR_TRANSPORT,
                         "terse transport: ucp_init failed: %s (check TERSE_UCX_* and UCX_* variables, e.g. "
                         "TERSE_UCX_TLS)",
                         ucs_status_string(st));
    }

    // Whether this UCX moves CUDA device memory itself (built with CUDA
    // support: UCS_MEMORY_TYPE_CUDA among the context's memory types).
    // Debian's is not.
    ucp_context_attr_t cattr = {};
    cattr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(context, &cattr) == UCS_OK)
        reads_cuda = cattr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    TERSE_LOG_DEBUG("transport: this UCX %s CUDA device memory (UCS_MEMORY_TYPE_CUDA)",
                    reads_cuda ? "reads" : "does not read");

    ucp_worker_params_t wparams = {};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // SERIALIZED rather than SINGLE: an MPI_THREAD_SERIALIZED application may
    // call collectives from different threads, one at a time; UCX takes no
    // locks in either mode.
    wparams.thread_mode = multi ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(context, &wparams, &worker);
    if (st != UCS_OK) {
        worker = nullptr;
        return set_error(TERSE_ERR_TRANSPORT, "terse transport: ucp_worker_create failed: %s",
                         ucs_status_string(st));
    }
    if (multi) {
        ucp_worker_attr_t attr = {};
        attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
        st = ucp_worker_query(worker, &attr);
        if (st != UCS_OK || attr.thread_mode != UCS_THREAD_MODE_MULTI)
            return set_error(TERSE_ERR_UNSUPPORTED,
                             "terse transport: MPI_THREAD_MULTIPLE requested but this UCX library does not "
                             "provide a multi-threaded worker (built without thread support?)");
    }
    if (params.features & UCP_FEATURE_WAKEUP) {
        int fd = -1;
        st = ucp_worker_get_efd(worker, &fd);
        if (st == UCS_OK && fd >= 0) {
            efd = fd;
            wakeup.store(true, std::memory_order_relaxed);
        } else {
            TERSE_LOG_DEBUG("transport: no UCX event fd (%s); waits nap instead", ucs_status_string(st));
        }
    }
    return TERSE_OK;
}

// Collective over the out-of-band ranks even when this rank failed to open
// UCX: a failed rank contributes length -1, and every rank then fails
// together rather than leaving the others waiting in a later collective.
// The lengths go first, then every address in a block of the longest
// length (the out-of-band allgather moves equal-size blocks).
Status Transport::Impl::exchange_addresses(Status local) {
    ucp_address_t *my_address = nullptr;
    size_t my_length = 0;
    if (local == TERSE_OK) {
        ucs_status_t st = ucp_worker_get_address(worker, &my_address, &my_length);
        if (st != UCS_OK)
            local = set_error(TERSE_ERR_TRANSPORT, "terse transport: ucp_worker_get_address failed: %s",
                              ucs_status_string(st));
        else if (my_length > size_t(INT_MAX))
            local = set_error(TERSE_ERR_TRANSPORT, "terse transport: UCX worker address of %zu bytes is too long",
                              my_length);
    }
    struct AddressGuard {
        ucp_worker_h w;
        ucp_address_t *a;
        ~AddressGuard() {
            if (a) ucp_worker_release_address(w, a);
        }
    } guard{worker, my_address};

    int32_t mine = local == TERSE_OK ? int32_t(my_length) : -1;
    std::vector<int32_t> lengths(size_t(size), 0);
    Status s = oob_allgather(*oob, &mine, lengths.data(), sizeof mine, nullptr);
    if (s != TERSE_OK) return oob_error(s, "the UCX address lengths");

    int failed_rank = -1;
    size_t longest = 0;
    for (int r = 0; r < size; ++r) {
        if (lengths[r] < 0) {
            if (failed_rank < 0) failed_rank = r;
            continue;
        }
        longest = std::max(longest, size_t(lengths[r]));
    }
    if (local != TERSE_OK) return local;
    if (failed_rank >= 0)
        return set_error(TERSE_ERR_REMOTE, "terse transport: UCX initialization failed on world rank %d",
                         failed_rank);
    // Every rank sees the same lengths, so every rank stops here or none.
    if (longest * size_t(size) > size_t(INT_MAX))
        return set_error(TERSE_ERR_TRANSPORT, "terse transport: UCX worker addresses total more than %d bytes",
                         INT_MAX);

    std::vector<unsigned char> block(longest, 0);
    std::memcpy(block.data(), my_address, my_length);
    address_stride = longest;
    addresses.assign(longest * size_t(size), 0);
    s = oob_allgather(*oob, block.data(), addresses.data(), longest, nullptr);
    if (s != TERSE_OK) return oob_error(s, "the UCX worker addresses");
    return TERSE_OK;
}

Status Transport::Impl::connect(int peer, ucp_ep_h *out) {
    std::lock_guard<std::mutex> lock(ep_mutex);
    ucp_ep_h ep = eps[peer].load(std::memory_order_relaxed);
    if (ep) {
        *out = ep;
        return TERSE_OK;
    }
    ucp_ep_params_t params = {};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t *>(addresses.data() + size_t(peer) * address_stride);
    // NONE keeps every transport (shared-memory zero copy included) usable;
    // a dead peer is MPI's to report, as it aborts the job.
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucs_status_t st = ucp_ep_create(worker, &params, &ep);
    if (st != UCS_OK) {
        *out = nullptr;
        return set_error(TERSE_ERR_TRANSPORT,
                         "terse transport: cannot connect to world rank %d: %s (do all ranks use the same "
                         "TERSE_UCX_TLS / UCX_TLS?)",
                         peer, ucs_status_string(st));
    }
    eps[peer].store(ep, std::memory_order_release);
    ep_count.fetch_add(1, std::memory_order_relaxed);
    TERSE_LOG_DEBUG("transport: connected to world rank %d", peer);
    *out = ep;
    return TERSE_OK;
}

// Flush-close every endpoint.  With err_mode NONE a forced close is not
// allowed, and a flush may need the peer's worker to answer, so when all
// ranks close together (finalize) each keeps progressing until every rank
// has closed its endpoints (a non-blocking barrier).
void Transport::Impl::close_endpoints(bool collective) {
    if (!worker || !eps) return;
    std::vector<void *> pending;
    for (int r = 0; r < size; ++r) {
        ucp_ep_h ep = eps[r].exchange(nullptr, std::memory_order_acq_rel);
        if (!ep) continue;
        ep_count.fetch_sub(1, std::memory_order_relaxed);
        ucp_request_param_t p = {};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = 0;  // flush
        ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &p);
        if (UCS_PTR_IS_PTR(req)) pending.push_back(req);
        else if (UCS_PTR_STATUS(req) != UCS_OK)
            TERSE_LOG_WARN("transport: closing the endpoint to world rank %d failed: %s", r,
                           ucs_status_string(UCS_PTR_STATUS(req)));
    }
    auto deadline = std::chrono::steady_clock::now() + kCloseWait;
    for (void *req : pending) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
            if (std::chrono::steady_clock::now() > deadline) {
                TERSE_LOG_WARN("transport: endpoint close did not complete within %d s; continuing",
                               int(kCloseWait.count()));
                break;
            }
        }
        ucp_request_free(req);
    }
    if (collective && oob) {
        // A barrier: one byte from every rank.
        const unsigned char out = 0;
        std::vector<unsigned char> in(static_cast<size_t>(size));
        if (oob_allgather(*oob, &out, in.data(), 1, worker) != TERSE_OK)
            TERSE_LOG_DEBUG("transport: no closing barrier (%s)", last_error());
    }
}

// Cancel (receives; UCX cannot cancel a send) and wait for UCX to finish
// with the request before freeing it, so the caller may reuse the buffer.
void Transport::Impl::release_request(void *req, bool is_recv, int peer, uint64_t tag) {
    if (ucp_request_check_status(req) == UCS_INPROGRESS) {
        ucp_request_cancel(worker, req);
        auto deadline = std::chrono::steady_clock::now() + kReleaseWait;
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
            if (std::chrono::steady_clock::now() > deadline) {
                TagText t(tag);
                TERSE_LOG_WARN("transport: abandoning a pending %s %s world rank %d (tag: %s) after %d s; UCX "
                               "may still access its buffer",
                               is_recv ? "receive" : "send", is_recv ? "from" : "to", peer, t.text,
                               int(kReleaseWait.count()));
                break;
            }
        }
    }
    ucp_request_free(req);
}

// ---------------------------------------------------------------- Request

Request::~Request() { release(); }

Request::Request(Request &&o) noexcept
    : req_(o.req_), state_(o.state_), status_code_(o.status_code_), length_(o.length_), peer_(o.peer_),
      is_recv_(o.is_recv_), tag_(o.tag_), capacity_(o.capacity_) {
    o.req_ = nullptr;
    o.state_ = State::Idle;
}

Request &Request::operator=(Request &&o) noexcept {
    if (this != &o) {
        release();
        req_ = o.req_;
        state_ = o.state_;
        status_code_ = o.status_code_;
        length_ = o.length_;
        peer_ = o.peer_;
        is_recv_ = o.is_recv_;
        tag_ = o.tag_;
        capacity_ = o.capacity_;
        o.req_ = nullptr;
        o.state_ = State::Idle;
    }
    return *this;
}

void Request::release() {
    if (req_) {
        // After finalize the worker, and every request with it, is gone.
        WorkerLock lock(g_impl);
        if (g_impl) g_impl->release_request(req_, is_recv_, peer_, tag_);
        req_ = nullptr;
    }
    state_ = State::Idle;
    status_code_ = 0;
    length_ = 0;
}

bool Request::test(Status *status) {
    if (req_) {
        WorkerLock lock(g_impl);
        ucs_status_t st;
        if (is_recv_) {
            ucp_tag_recv_info_t info;
            st = ucp_tag_recv_request_test(req_, &info);
            if (st == UCS_OK) length_ = info.length;
        } else {
            st = ucp_request_check_status(req_);
        }
        if (st == UCS_INPROGRESS) {
            if (status) *status = TERSE_OK;
            return false;
        }
        ucp_request_free(req_);
        req_ = nullptr;
        status_code_ = st;
        state_ = st == UCS_OK ? State::Done : State::Failed;
    }
    if (state_ == State::Failed) {
        Status s = message_error(is_recv_ ? "receive" : "send", peer_, tag_, ucs_status_t(status_code_),
                                 capacity_);
        if (status) *status = s;
        return true;
    }
    if (status) *status = TERSE_OK;
    return true;  // Done, or Idle (nothing to wait for)
}

// ---------------------------------------------------------------- Transport

Transport::Transport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Transport::~Transport() = default;

Transport *Transport::get() { return g_transport; }

bool Transport::thread_safe() const { return impl_->multi || impl_->shared.load(std::memory_order_acquire); }

void Transport::share_worker() {
    if (!impl_->multi) impl_->shared.store(true, std::memory_order_release);
}

Status Transport::init(const TransportParams &params) {
    const bool thread_multiple = params.thread_multiple;
    if (g_transport) {
        if (g_transport->impl_->multi == thread_multiple) return TERSE_OK;
        return set_error(TERSE_ERR_INVALID, "terse transport: already initialized with %s thread support",
                         g_transport->impl_->multi ? "multi-threaded" : "serialized");
    }
    if (!params.oob)
        return set_error(TERSE_ERR_INVALID,
                         "terse transport: no out-of-band collective to exchange addresses over");

    std::unique_ptr<Impl> impl;
    Status local = TERSE_OK;
    try {
        impl = std::make_unique<Impl>();
        impl->oob = params.oob;
        impl->rank = params.oob->rank();
        impl->size = params.oob->size();
        impl->eps.reset(new std::atomic<ucp_ep_h>[size_t(impl->size)]);
        for (int r = 0; r < impl->size; ++r) impl->eps[r].store(nullptr, std::memory_order_relaxed);
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse transport: out of memory during initialization");
    }
    impl->oversubscribed = params.cores_oversubscribed;
    g_describe_tag = params.describe_tag;
    local = impl->open(thread_multiple);
    Status st;
    try {
        st = impl->exchange_addresses(local);
    } catch (const std::bad_alloc &) {
        // Out of memory on one rank would leave the others in the address
        // gather; the out-of-band collective's failure handling (MPI aborts
        // by default) then decides.
        st = set_error(TERSE_ERR_NO_MEMORY, "terse transport: out of memory storing UCX worker addresses");
    }
    if (st != TERSE_OK) return st;  // impl's destructor releases what was opened

    TERSE_LOG_DEBUG("transport: UCX ready (%d ranks, %s worker, waits %s, %s, cores %s)", impl->size,
                    thread_multiple ? "multi-threaded" : "serialized",
                    impl->wakeup.load() ? "sleep on the event fd" : "nap",
                    impl->eager_only ? "eager only" : "rendezvous as UCX decides",
                    impl->oversubscribed ? "oversubscribed" : "not oversubscribed");
    Transport *t = new (std::nothrow) Transport(std::move(impl));
    if (!t) return set_error(TERSE_ERR_NO_MEMORY, "terse transport: out of memory during initialization");
    g_transport = t;
    g_impl = t->impl_.get();
    return TERSE_OK;
}

void Transport::finalize() {
    Transport *t = g_transport;
    if (!t) return;
    t->impl_->close_endpoints(true);
    g_transport = nullptr;
    g_impl = nullptr;
    delete t;
}

int Transport::world_rank() const { return impl_->rank; }
int Transport::world_size() const { return impl_->size; }

Status Transport::isend(int peer, uint64_t tag, const void *buf, size_t len, Request *req) {
    WorkerLock lock(impl_.get());
    if (req->active()) req->release();
    Impl &im = *impl_;
    if (__builtin_expect(peer < 0 || peer >= im.size, 0))
        return set_error(TERSE_ERR_INVALID, "terse transport: send to world rank %d, but ranks are 0..%d", peer,
                         im.size - 1);
    Status st = TERSE_OK;
    ucp_ep_h ep = im.endpoint(peer, &st);
    if (!ep) return st;

    ucp_request_param_t p;
    p.op_attr_mask = 0;  // contiguous bytes, no callback: test() polls
    ucs_status_ptr_t r = ucp_tag_send_nbx(ep, buf, len, tag, &p);
    req->peer_ = peer;
    req->tag_ = tag;
    req->is_recv_ = false;
    req->length_ = len;
    req->capacity_ = 0;
    if (r == nullptr) {
        req->state_ = Request::State::Done;
        return TERSE_OK;
    }
    if (UCS_PTR_IS_ERR(r)) return message_error("send", peer, tag, UCS_PTR_STATUS(r), 0);
    req->req_ = r;
    req->state_ = Request::State::Pending;
    return TERSE_OK;
}

Status Transport::irecv(int peer, uint64_t tag, void *buf, size_t capacity, Request *req) {
    WorkerLock lock(impl_.get());
    if (req->active()) req->release();
    Impl &im = *impl_;
    if (__builtin_expect(peer < 0 || peer >= im.size, 0))
        return set_error(TERSE_ERR_INVALID, "terse transport: receive from world rank %d, but ranks are 0..%d",
                         peer, im.size - 1);

    // Always get a request back: UCX 1.13 does not fill recv_info when a
    // receive completes immediately (message already arrived), so the
    // received length is only available from the request.
    ucp_request_param_t p;
    p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    ucs_status_ptr_t r = ucp_tag_recv_nbx(im.worker, buf, capacity, tag, kFullTagMask, &p);
    req->peer_ = peer;
    req->tag_ = tag;
    req->is_recv_ = true;
    req->length_ = 0;
    req->capacity_ = capacity;
    if (__builtin_expect(r == nullptr, 0))
        return set_error(TERSE_ERR_TRANSPORT,
                         "terse transport: UCX completed a receive from world rank %d without a request, so its "
                         "length is unknown",
                         peer);
    if (UCS_PTR_IS_ERR(r)) return message_error("receive", peer, tag, UCS_PTR_STATUS(r), capacity);
    req->req_ = r;
    req->state_ = Request::State::Pending;
    return TERSE_OK;
}

unsigned Transport::progress() {
    Impl &im = *impl_;
    WorkerLock lock(&im);
    unsigned n = ucp_worker_progress(im.worker);
    if (n != 0) t_busy_streak = 0;
    // A thread asleep on the event fd cannot see the events this call has
    // taken (what it waits for may be among them): wake it to look.
    if (n != 0 && im.sleeping.load(std::memory_order_relaxed) != 0) ucp_worker_signal(im.worker);
    return n;
}

void Transport::wait_for_events(unsigned timeout_us) {
    Impl &im = *impl_;
    if (im.wakeup.load(std::memory_order_relaxed)) {
        int nobody = 0;
        if (im.sleeping.compare_exchange_strong(nobody, 1, std::memory_order_acquire)) {
            ucs_status_t st;
            {
                WorkerLock lock(&im);
                st = ucp_worker_arm(im.worker);
            }
            if (st == UCS_OK) {
                pollfd p{im.efd, POLLIN, 0};
                timespec ts{time_t(timeout_us / 1000000u), long(timeout_us % 1000000u) * 1000L};
                ppoll(&p, 1, &ts, nullptr);  // woken, timed out or interrupted: the caller progresses
            } else if (st != UCS_ERR_BUSY) {
                im.wakeup.store(false, std::memory_order_relaxed);
                TERSE_LOG_WARN("transport: ucp_worker_arm failed (%s); waiting by napping from now on",
                               ucs_status_string(st));
            }
            im.sleeping.store(0, std::memory_order_release);
            // Busy means events are pending and progress() takes them; if
            // it answers busy again with no progress between (an event
            // that progress does not count, or cannot take yet), nap, so
            // that a wait can never turn into a spin.
            if (st == UCS_ERR_BUSY && ++t_busy_streak >= 2) nap_us(std::min(timeout_us, kNapUs));
            if (st == UCS_OK) t_busy_streak = 0;
            if (st == UCS_OK || st == UCS_ERR_BUSY) return;
        }
    }
    nap_us(std::min(timeout_us, kNapUs));
}

bool Transport::wakeup_enabled() const { return impl_->wakeup.load(std::memory_order_relaxed); }

bool Transport::eager_only() const { return impl_->eager_only; }

bool Transport::cores_oversubscribed() const { return impl_->oversubscribed; }

bool Transport::reads_device_memory() const { return impl_->reads_cuda; }

size_t Transport::endpoint_count() const { return impl_->ep_count.load(std::memory_order_relaxed); }

}  // namespace terse
