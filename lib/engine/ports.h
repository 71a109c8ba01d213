// What an engine operation needs from the outside world, as two small
// interfaces: Link (tagged point-to-point messages between ranks of the
// communicator) and Control (a small non-blocking allreduce on the
// communicator, for agreeing on codec statistics and for TERSE_VERIFY).
// Operations run on the UCX transport and PMPI in production
// (runtime/engine_ports.h); unit tests run every algorithm
// for many simulated ranks inside one process with an in-memory Link.
#pragma once

#include "util/status.h"
#include "transport/ucx_transport.h"

#include <mpi.h>
#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace terse {

// One pending message.  The UCX link uses `ucx`; other links use the
// generic fields.  Must not move while pending.
struct LinkRequest {
    Request ucx;
    bool pending = false;
    int state = 0;
    Status status = TERSE_OK;
    size_t length = 0;
    void *handle = nullptr;
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

struct ControlRequest {
    MPI_Request mpi = MPI_REQUEST_NULL;
    int id = -1;
    bool active = false;
};

class Control {
public:
    virtual ~Control() = default;
    // out[i] = op over ranks of in[i]; in == out allowed.  dtype is one of
    // float32/float64/int32/int64.
    virtual Status iallreduce(const void *in, void *out, size_t count, terse_dtype_t dtype,
                              terse_op_t op, ControlRequest *r) = 0;
    virtual bool test(ControlRequest *r, Status *status) = 0;
    // Complete a request on an error path (collectives cannot be cancelled).
    virtual void wait(ControlRequest *r) = 0;
};

}  // namespace terse
