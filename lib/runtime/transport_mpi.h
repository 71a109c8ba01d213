// What the transport learns from MPI, given to it by the runtime at start
// (transport/ucx_transport.h knows nothing of MPI): its out-of-band
// collective over PMPI, and whether the node's cores are oversubscribed.
#pragma once

#include "transport/oob.h"
#include "util/status.h"

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace terse {

// The transport's out-of-band collective over comm (MPI_COMM_WORLD in
// production).  Construct after MPI_Init; it must outlive the transport.
// Fails with TERSE_ERR_NOT_INITIALIZED once MPI is finalized (or before it
// is initialized).
//
// Blocking (PMPI_Allgather, done when allgather() returns) until
// progress_while_waiting(), non-blocking (PMPI_Iallgather) after.  A
// non-blocking collective on a communicator makes Open MPI poll its libnbc
// component in every progress loop of the job from then on, as long as
// the communicator lives: measured on 2 ranks over shared memory, an 8 B
// MPI_Allreduce of the application took 2-5% longer.  At init the
// transport only waits, so it gathers blocking; at finalize it progresses
// its worker while the gather is pending (peers may need this rank's
// answers to close their endpoints), which needs the non-blocking one.
class MpiOob final : public OutOfBand {
public:
    explicit MpiOob(MPI_Comm comm);
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    Status allgather(const void *send, void *recv, size_t len, void **req) override;
    bool test(void *req, Status *status) override;
    void free(void *req) override;
    // From now on, gathers are non-blocking (see above).
    void progress_while_waiting() { nonblocking_ = true; }

private:
    MPI_Comm comm_;
    bool nonblocking_ = false;
    int rank_ = 0, size_ = 1;
};

// This rank's host name as an FNV-1a hash (the empty name's where
// gethostname fails): what groups ranks into nodes where MPI is not asked
// (here, and the two-level layout's guess: runtime/node_layout.h).
uint64_t host_name_hash();

// Whether this node runs more ranks than it has CPUs for them: the union
// of the local ranks' CPU affinity masks (a cpuset or binding counts) is
// smaller than the number of local ranks.  A node is a host name.
// Collective over MPI_COMM_WORLD (one blocking allgather).  The answer in
// *oversubscribed; false where MPI fails.  TERSE_ERR_NO_MEMORY where this
// rank cannot hold the gather (its peers then wait in it: the caller must
// end the job).
Status node_cores_oversubscribed(bool *oversubscribed);

}  // namespace terse
