// How the transport reaches every other process before it has endpoints of
// its own: an out-of-band collective, handed to Transport::init by whoever
// starts the transport (the runtime implements it over PMPI on
// MPI_COMM_WORLD, runtime/transport_mpi.h).  Modelled on UCC's
// ucc_oob_coll: a rank, a size, and a non-blocking allgather of equal-size
// byte blocks with test and free.  The transport uses it twice, at init
// (its worker addresses) and at finalize (as a barrier), never on the path
// of a message.
#pragma once

#include "util/status.h"

#include <cstddef>

namespace terse {

class OutOfBand {
public:
    virtual ~OutOfBand() = default;
    // This process among the `size` the transport connects; the transport's
    // peer numbers are these ranks.
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // Start gathering len bytes from every rank (the same len on every
    // rank): rank r's block lands at recv + r * len.  Collective: every rank
    // calls it, in the same order.  On success *req names the gather until
    // free(); on failure the message says why (set_error).
    virtual Status allgather(const void *send, void *recv, size_t len, void **req) = 0;
    // Non-blocking: true once the gather is over, with *status its outcome.
    virtual bool test(void *req, Status *status) = 0;
    // Release req (after test() returned true).
    virtual void free(void *req) = 0;
};

}  // namespace terse
