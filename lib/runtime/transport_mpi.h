// What the transport learns from MPI, given to it by the runtime at start
// (transport/ucx_transport.h knows nothing of MPI): its out-of-band
// collective over PMPI, and whether the node's cores are oversubscribed.
#pragma once

#include "transport/oob.h"
#include "util/status.h"

#include <mpi.h>

#include <cstddef>

namespace terse {

// The transport's out-of-band collective over comm (MPI_COMM_WORLD in
// production), on PMPI_Iallgather.  Construct after MPI_Init; it must
// outlive the transport.  Fails with TERSE_ERR_NOT_INITIALIZED once MPI is
// finalized (or before it is initialized).
class MpiOob final : public OutOfBand {
public:
    explicit MpiOob(MPI_Comm comm);
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    Status allgather(const void *send, void *recv, size_t len, void **req) override;
    bool test(void *req, Status *status) override;
    void free(void *req) override;

private:
    MPI_Comm comm_;
    int rank_ = 0, size_ = 1;
};

// Whether this node runs more ranks than it has CPUs for them: the union
// of the local ranks' CPU affinity masks (a cpuset or binding counts) is
// smaller than the number of local ranks.  Collective over MPI_COMM_WORLD;
// on any MPI failure the answer is false.
bool node_cores_oversubscribed();

}  // namespace terse
