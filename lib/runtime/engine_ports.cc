// Link over the UCX transport, Control over PMPI collectives.
#include "runtime/engine_ports.h"

#include "runtime/node_reduce_scatter.h"
#include "transport/ucx_transport.h"
#include "util/dtype.h"

#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace terse {

namespace {

// The transport's Request lives in the LinkRequest's storage from the
// first message started on it until released; a completed Request stays
// there, idle, and is reused by the next message.
static_assert(sizeof(Request) <= decltype(LinkRequest::storage)::kBytes,
              "LinkRequest's storage must hold the transport's Request");

// The one release path of a Request in a LinkRequest: its destructor
// cancels it if still pending and waits until UCX is done with the buffer.
void release_request(LinkRequest *r) {
    r->storage.get<Request>()->~Request();
    r->release = nullptr;
}

Request *request_of(LinkRequest *r) {
    if (__builtin_expect(r->release != nullptr, 1)) return r->storage.get<Request>();
    Request *q = r->storage.emplace<Request>();
    r->release = release_request;
    return q;
}

class TransportLink final : public Link {
public:
    explicit TransportLink(const std::vector<int> *world) : world_(world) {}

    Status isend(int peer, uint64_t tag, const void *buf, size_t len, LinkRequest *r) override {
        Transport *t = Transport::get();
        if (!t) return set_error(TERSE_ERR_NOT_INITIALIZED, "terse transport is not running");
        return t->isend((*world_)[peer], tag, buf, len, request_of(r));
    }
    Status irecv(int peer, uint64_t tag, void *buf, size_t capacity, LinkRequest *r) override {
        Transport *t = Transport::get();
        if (!t) return set_error(TERSE_ERR_NOT_INITIALIZED, "terse transport is not running");
        return t->irecv((*world_)[peer], tag, buf, capacity, request_of(r));
    }
    bool test(LinkRequest *r, Status *status, size_t *length) override {
        if (!r->release) {  // never started: nothing to wait for
            *status = TERSE_OK;
            if (length) *length = 0;
            return true;
        }
        Request *q = r->storage.get<Request>();
        if (!q->test(status)) return false;
        if (length) *length = q->received_length();
        return true;
    }
    void cancel(LinkRequest *r) override {
        if (r->release) r->release(r);
    }
    unsigned progress() override {
        Transport *t = Transport::get();
        return t ? t->progress() : 0;
    }

private:
    const std::vector<int> *world_;
};

// An MPI_Request needs no release of its own: a started one ends in
// PMPI_Test or PMPI_Wait.
static_assert(sizeof(MPI_Request) <= decltype(ControlRequest::storage)::kBytes,
              "ControlRequest's storage must hold an MPI_Request");
static_assert(std::is_trivially_destructible_v<MPI_Request>);

thread_local bool t_without_mpi = false;

class MpiControl final : public Control {
public:
    MpiControl(MPI_Comm comm, bool deferring, bool blocking_node = false)
        : comm_(comm), deferring_(deferring), blocking_node_(blocking_node) {
        if (blocking_node_) node_rs_ = std::make_unique<NodeReduceScatter>();
    }

    Status iallreduce(const void *in, void *out, size_t count, terse_dtype_t dtype, terse_op_t op,
                      ControlRequest *r) override {
        MPI_Datatype t = mpi_type(dtype);
        if (t == MPI_DATATYPE_NULL) return dtype_not_carried("control allreduce", dtype);
        if (count > size_t(std::numeric_limits<int>::max()))
            return set_error(TERSE_ERR_UNSUPPORTED,
                             "terse control allreduce: %zu elements, more than an int counts", count);
        r->storage.emplace<MPI_Request>(MPI_REQUEST_NULL);
        const Post p{r, in == out ? MPI_IN_PLACE : in, out, int(count), t, mpi_op(op)};
        if (deferring_) {
            std::lock_guard<std::mutex> lk(mu_);
            if (t_without_mpi) {
                deferred_.push_back(p);
                r->active = true;
                return TERSE_OK;
            }
            Status s = post_deferred_locked();
            if (s != TERSE_OK) return s;
        }
        Status s = post(p);
        if (s == TERSE_OK) r->active = true;
        return s;
    }
    Status ireduce_scatter(const void *in, void *out, const int *counts, terse_dtype_t dtype, terse_op_t op,
                           ControlRequest *r) override {
        MPI_Datatype t = mpi_type(dtype);
        if (t == MPI_DATATYPE_NULL) return dtype_not_carried("node reduce-scatter", dtype);
        MPI_Request *req = r->storage.emplace<MPI_Request>(MPI_REQUEST_NULL);
        // Complete before returning: test() finds the request inactive.
        if (blocking_node_) return node_rs_->run(comm_, in, out, counts, dtype, op);
        int rc = PMPI_Ireduce_scatter(in == out ? MPI_IN_PLACE : in, out, counts, t, mpi_op(op), comm_, req);
        if (rc != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "terse node reduce-scatter: PMPI_Ireduce_scatter failed (code %d)",
                             rc);
        r->active = true;
        return TERSE_OK;
    }
    Status iallgatherv(void *buf, const int *counts, const int *displs, terse_dtype_t dtype,
                       ControlRequest *r) override {
        MPI_Datatype t = mpi_type(dtype);
        if (t == MPI_DATATYPE_NULL) return dtype_not_carried("node allgather", dtype);
        MPI_Request *req = r->storage.emplace<MPI_Request>(MPI_REQUEST_NULL);
        if (blocking_node_) {
            int rc = PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, t, comm_);
            if (rc != MPI_SUCCESS)
                return set_error(TERSE_ERR_MPI, "terse node allgather: PMPI_Allgatherv failed (code %d)", rc);
            return TERSE_OK;
        }
        int rc = PMPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, t, comm_, req);
        if (rc != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "terse node allgather: PMPI_Iallgatherv failed (code %d)", rc);
        r->active = true;
        return TERSE_OK;
    }
    bool test(ControlRequest *r, Status *status) override {
        if (!r->active) {
            *status = TERSE_OK;
            return true;
        }
        if (deferring_) {
            std::lock_guard<std::mutex> lk(mu_);
            if (t_without_mpi) return false;
            Status s = post_deferred_locked();
            if (s != TERSE_OK) {
                r->active = false;
                *status = s;
                return true;
            }
        }
        int flag = 0;
        int rc = PMPI_Test(r->storage.get<MPI_Request>(), &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            r->active = false;
            *status = set_error(TERSE_ERR_MPI, "terse control collective: PMPI_Test failed (code %d)", rc);
            return true;
        }
        if (!flag) return false;
        r->active = false;
        *status = TERSE_OK;
        return true;
    }
    // Only on application threads (operations are destroyed there).
    void wait(ControlRequest *r) override {
        if (!r->active) return;
        if (deferring_) {
            std::lock_guard<std::mutex> lk(mu_);
            post_deferred_locked();
        }
        PMPI_Wait(r->storage.get<MPI_Request>(), MPI_STATUS_IGNORE);
        r->active = false;
    }

private:
    struct Post {
        ControlRequest *r;
        const void *in;
        void *out;
        int count;
        MPI_Datatype type;
        MPI_Op op;
    };
    Status post(const Post &p) {
        int rc = PMPI_Iallreduce(p.in, p.out, p.count, p.type, p.op, comm_, p.r->storage.get<MPI_Request>());
        if (rc != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "terse control allreduce: PMPI_Iallreduce failed (code %d)", rc);
        return TERSE_OK;
    }
    // The queued posts, in their order; a failed one ends its request
    // (its test() then reports the failure as PMPI_Test would).
    Status post_deferred_locked() {
        Status first = TERSE_OK;
        for (const Post &p : deferred_) {
            Status s = post(p);
            if (s != TERSE_OK && first == TERSE_OK) first = s;
        }
        deferred_.clear();
        return first;
    }

    MPI_Comm comm_;
    bool deferring_;
    bool blocking_node_;                          // ireduce_scatter and iallgatherv run the blocking collectives
    std::unique_ptr<NodeReduceScatter> node_rs_;  // blocking_node_'s reduce-scatter
    std::mutex mu_;
    std::vector<Post> deferred_;
};

}  // namespace

MPI_Datatype mpi_type(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return MPI_FLOAT;
    case TERSE_DTYPE_FLOAT64: return MPI_DOUBLE;
    case TERSE_DTYPE_INT32: return MPI_INT32_T;
    case TERSE_DTYPE_INT64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

void mpi_progress(MPI_Comm comm) {
    int flag = 0;
    (void)PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
}

Status dtype_not_carried(const char *what, terse_dtype_t dt) {
    std::vector<const char *> names;  // the dtypes mpi_type() maps
    for (unsigned t = 0; t < TERSE_DTYPE_MAX_; ++t)
        if (mpi_type(terse_dtype_t(t)) != MPI_DATATYPE_NULL) names.push_back(dtype_name(t));
    std::string carried;
    for (size_t k = 0; k < names.size(); ++k)
        carried += std::string(k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + names[k];
    return set_error(TERSE_ERR_UNSUPPORTED, "terse %s: dtype %s not supported (%s are)", what,
                     dtype_name(unsigned(dt)), carried.c_str());
}

MPI_Op mpi_op(terse_op_t op) {
    switch (op) {
    case TERSE_OP_SUM: return MPI_SUM;
    case TERSE_OP_MAX: return MPI_MAX;
    case TERSE_OP_MIN: return MPI_MIN;
    }
    return MPI_OP_NULL;
}

std::unique_ptr<Link> make_transport_link(const std::vector<int> *world_rank_of) {
    return std::make_unique<TransportLink>(world_rank_of);
}

std::unique_ptr<Control> make_mpi_control(MPI_Comm comm) { return std::make_unique<MpiControl>(comm, false); }

std::unique_ptr<Control> make_node_mpi_control(MPI_Comm comm) {
    return std::make_unique<MpiControl>(comm, false, true);
}

std::unique_ptr<Control> make_deferring_mpi_control(MPI_Comm comm) {
    return std::make_unique<MpiControl>(comm, true);
}

void control_thread_without_mpi() { t_without_mpi = true; }

}  // namespace terse
