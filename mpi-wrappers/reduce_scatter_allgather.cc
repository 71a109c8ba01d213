// The decoupled halves of an allreduce: MPI_Reduce_scatter_block and
// MPI_Allgather run on the same ring phases as terse's allreduce (as
// sharded data-parallel training uses them: reduce-scatter gradients,
// allgather parameters).
#include "datatype_map.h"
#include "dispatch.h"
#include "reentry_guard.h"

#include "util/dtype.h"

#include <cstdint>

using namespace terse;

extern "C" int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                        MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    auto pass = [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm); };
    CollArgs a;
    // The size compared with the floor is the whole input, recvcount per
    // rank (MPI_COMM_NULL: PMPI reports the error).
    int size = 0;
    const bool takes = recvcount >= 0 && map_datatype(dt, &a.dtype) && map_op(op, &a.op) &&
                       comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &size) == MPI_SUCCESS;
    const size_t bytes = takes ? static_cast<size_t>(recvcount) * size_t(size) * dtype_size(a.dtype) : 0;
    if (pass_at_once(takes, bytes)) return pass();
    ReentryGuard guard;
    a.kind = CollKind::ReduceScatterBlock;
    // In place, recvbuf holds the whole input and receives the first block.
    a.in_place = sendbuf == MPI_IN_PLACE;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = static_cast<size_t>(recvcount);
    return run_collective(comm, a, bytes, "MPI_Reduce_scatter_block", pass);
}

extern "C" int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    auto pass = [&] {
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    };
    CollArgs a;
    a.in_place = sendbuf == MPI_IN_PLACE;
    // Eligible only when both sides describe the same predefined type and
    // count (in place, the send side is the rank's block of recvbuf).  The
    // size compared with the floor is one rank's block.
    const bool takes = recvcount >= 0 && map_datatype(recvtype, &a.dtype) &&
                       (a.in_place || (sendtype == recvtype && sendcount == recvcount));
    const size_t bytes = takes ? static_cast<size_t>(recvcount) * dtype_size(a.dtype) : 0;
    if (pass_at_once(takes, bytes)) return pass();
    ReentryGuard guard;
    a.kind = CollKind::Allgather;
    a.op = TERSE_OP_SUM;  // unused by allgather
    a.recvbuf = recvbuf;
    a.count = static_cast<size_t>(recvcount);
    if (a.in_place) {
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        a.sendbuf = static_cast<const uint8_t *>(recvbuf) + size_t(rank) * a.count * dtype_size(a.dtype);
    } else {
        a.sendbuf = sendbuf;
    }
    return run_collective(comm, a, bytes, "MPI_Allgather", pass);
}
