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
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) { return PMPI_Reduce_scatter_block(s, r, recvcount, dt, op, comm); },
        [&] { return stage_reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, comm); });
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm, &a, &bytes);
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass_now(comm, "MPI_Reduce_scatter_block", a, m);
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Reduce_scatter_block", m);
}

extern "C" int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype dt,
                                  MPI_Op op, MPI_Comm comm) {
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) { return PMPI_Reduce_scatter(s, r, recvcounts, dt, op, comm); },
        [&] { return stage_reduce_scatter(sendbuf, recvbuf, recvcounts, dt, comm); });
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm, &a, &bytes,
                                          &thread_vcounts());
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass_now(comm, "MPI_Reduce_scatter", a, m);
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Reduce_scatter", m);
}

extern "C" int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    if (pass_small(recvcount))
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) {
            return PMPI_Allgather(s, sendcount, sendtype, r, recvcount, recvtype, comm);
        },
        [&] { return stage_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &a,
                                     &bytes);
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass_now(comm, "MPI_Allgather", a, m);
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Allgather", m);
}

extern "C" int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) {
            return PMPI_Allgatherv(s, sendcount, sendtype, r, recvcounts, displs, recvtype, comm);
        },
        [&] {
            return stage_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
        });
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                      &a, &bytes, &thread_vcounts());
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass_now(comm, "MPI_Allgatherv", a, m);
    ReentryGuard guard;
    return run_collective(comm, a, bytes, "MPI_Allgatherv", m);
}
