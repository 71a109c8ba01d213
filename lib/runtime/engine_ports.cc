// Link over the UCX transport, Control over PMPI non-blocking collectives.
#include "runtime/engine_ports.h"

#include "transport/ucx_transport.h"

#include <limits>

namespace terse {

namespace {

class TransportLink final : public Link {
public:
    explicit TransportLink(const std::vector<int> *world) : world_(world) {}

    Status isend(int peer, uint64_t tag, const void *buf, size_t len, LinkRequest *r) override {
        Transport *t = Transport::get();
        if (!t) return set_error(TERSE_ERR_NOT_INITIALIZED, "terse transport is not running");
        r->pending = true;
        return t->isend((*world_)[peer], tag, buf, len, &r->ucx);
    }
    Status irecv(int peer, uint64_t tag, void *buf, size_t capacity, LinkRequest *r) override {
        Transport *t = Transport::get();
        if (!t) return set_error(TERSE_ERR_NOT_INITIALIZED, "terse transport is not running");
        r->pending = true;
        return t->irecv((*world_)[peer], tag, buf, capacity, &r->ucx);
    }
    bool test(LinkRequest *r, Status *status, size_t *length) override {
        if (!r->ucx.test(status)) return false;
        if (length) *length = r->ucx.received_length();
        r->pending = false;
        return true;
    }
    void cancel(LinkRequest *r) override {
        if (r->ucx.active()) r->ucx.release();
        r->pending = false;
    }
    unsigned progress() override {
        Transport *t = Transport::get();
        return t ? t->progress() : 0;
    }

private:
    const std::vector<int> *world_;
};

MPI_Datatype mpi_type(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return MPI_FLOAT;
    case TERSE_DTYPE_FLOAT64: return MPI_DOUBLE;
    case TERSE_DTYPE_INT32: return MPI_INT32_T;
    case TERSE_DTYPE_INT64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

MPI_Op mpi_op(terse_op_t op) {
    switch (op) {
    case TERSE_OP_SUM: return MPI_SUM;
    case TERSE_OP_MAX: return MPI_MAX;
    case TERSE_OP_MIN: return MPI_MIN;
    }
    return MPI_OP_NULL;
}

class MpiControl final : public Control {
public:
    explicit MpiControl(MPI_Comm comm) : comm_(comm) {}

    Status iallreduce(const void *in, void *out, size_t count, terse_dtype_t dtype, terse_op_t op,
                      ControlRequest *r) override {
        MPI_Datatype t = mpi_type(dtype);
        if (t == MPI_DATATYPE_NULL || count > size_t(std::numeric_limits<int>::max()))
            return set_error(TERSE_ERR_UNSUPPORTED,
                             "terse control allreduce: %zu elements of dtype %d not supported", count,
                             int(dtype));
        int rc = PMPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out, int(count), t, mpi_op(op), comm_,
                                 &r->mpi);
        if (rc != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "terse control allreduce: PMPI_Iallreduce failed (code %d)", rc);
        r->active = true;
        return TERSE_OK;
    }
    bool test(ControlRequest *r, Status *status) override {
        if (!r->active) {
            *status = TERSE_OK;
            return true;
        }
        int flag = 0;
        int rc = PMPI_Test(&r->mpi, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            r->active = false;
            *status = set_error(TERSE_ERR_MPI, "terse control allreduce: PMPI_Test failed (code %d)", rc);
            return true;
        }
        if (!flag) return false;
        r->active = false;
        *status = TERSE_OK;
        return true;
    }
    void wait(ControlRequest *r) override {
        if (!r->active) return;
        PMPI_Wait(&r->mpi, MPI_STATUS_IGNORE);
        r->active = false;
    }

private:
    MPI_Comm comm_;
};

}  // namespace

std::unique_ptr<Link> make_transport_link(const std::vector<int> *world_rank_of) {
    return std::make_unique<TransportLink>(world_rank_of);
}

std::unique_ptr<Control> make_mpi_control(MPI_Comm comm) { return std::make_unique<MpiControl>(comm); }

}  // namespace terse
