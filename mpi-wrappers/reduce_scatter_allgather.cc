// The decoupled halves of an allreduce: MPI_Reduce_scatter_block,
// MPI_Reduce_scatter (unequal counts), MPI_Allgather and MPI_Allgatherv run
// on the same ring phases as terse's allreduce (as sharded data-parallel
// training uses them: reduce-scatter gradients, allgather parameters).
#include "coll_map.h"
#include "dispatch.h"
#include "reentry_guard.h"

using namespace terse;

extern "C" int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt,
                                        MPI_Op op, MPI_Comm comm) {
    auto pass = [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm); };
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm, &a, &bytes);
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass();
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Reduce_scatter_block", pass);
}

extern "C" int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype dt,
                                  MPI_Op op, MPI_Comm comm) {
    auto pass = [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm); };
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm, &a, &bytes,
                                          &thread_vcounts());
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass();
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Reduce_scatter", pass);
}

extern "C" int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    auto pass = [&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); };
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &a,
                                     &bytes);
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass();
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Allgather", pass);
}

extern "C" int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    auto pass = [&] {
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    };
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                      &a, &bytes, &thread_vcounts());
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass();
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Allgatherv", pass);
}
