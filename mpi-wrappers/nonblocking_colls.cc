// The non-blocking collectives: MPI_Iallreduce, MPI_Ireduce_scatter_block,
// MPI_Ireduce_scatter, MPI_Iallgather and MPI_Iallgatherv.  The same
// decision as their blocking forms (dispatch.h); an eligible call returns
// a generalized request that terse completes (runtime/nonblocking.h), an
// ineligible one goes to PMPI untouched.  Each takes the priority
// terse_set_next_priority set for it, whichever serves it.
#include "coll_map.h"
#include "dispatch.h"
#include "reentry_guard.h"

using namespace terse;

extern "C" int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request) {
    const int prio = nb_take_priority(comm);
    if (pass_small(count)) return PMPI_Iallreduce(sendbuf, recvbuf, count, dt, op, comm, request);
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) { return PMPI_Iallreduce(s, r, count, dt, op, comm, request); },
        [&] { return stage_allreduce(sendbuf, recvbuf, count, dt); }, request);
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_allreduce(sendbuf, recvbuf, count, dt, op, &a, &bytes);
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass_now(comm, "MPI_Iallreduce", a, m);
    ReentryGuard guard;
    return start_collective(comm, a, bytes, "MPI_Iallreduce", prio, m);
}

extern "C" int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt,
                                         MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    const int prio = nb_take_priority(comm);
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) {
            return PMPI_Ireduce_scatter_block(s, r, recvcount, dt, op, comm, request);
        },
        [&] { return stage_reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, comm); }, request);
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_reduce_scatter_block(sendbuf, recvbuf, recvcount, dt, op, comm, &a, &bytes);
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a))
        return pass_now(comm, "MPI_Ireduce_scatter_block", a, m);
    ReentryGuard guard;
    return start_collective(comm, a, bytes, "MPI_Ireduce_scatter_block", prio, m);
}

extern "C" int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype dt,
                                   MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    const int prio = nb_take_priority(comm);
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) { return PMPI_Ireduce_scatter(s, r, recvcounts, dt, op, comm, request); },
        [&] { return stage_reduce_scatter(sendbuf, recvbuf, recvcounts, dt, comm); }, request);
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm, &a, &bytes,
                                          &thread_vcounts());
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass_now(comm, "MPI_Ireduce_scatter", a, m);
    ReentryGuard guard;
    return start_collective(comm, a, bytes, "MPI_Ireduce_scatter", prio, m);
}

extern "C" int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    const int prio = nb_take_priority(comm);
    if (pass_small(recvcount))
        return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) {
            return PMPI_Iallgather(s, sendcount, sendtype, r, recvcount, recvtype, comm, request);
        },
        [&] { return stage_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
        request);
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &a,
                                     &bytes);
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass_now(comm, "MPI_Iallgather", a, m);
    ReentryGuard guard;
    return start_collective(comm, a, bytes, "MPI_Iallgather", prio, m);
}

extern "C" int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Request *request) {
    const int prio = nb_take_priority(comm);
    const auto m = mpi_call(
        sendbuf, recvbuf,
        [&](const void *s, void *r) {
            return PMPI_Iallgatherv(s, sendcount, sendtype, r, recvcounts, displs, recvtype, comm, request);
        },
        [&] {
            return stage_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
        },
        request);
    CollArgs a;
    size_t bytes = 0;
    const bool takes = map_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                      &a, &bytes, &thread_vcounts());
    if (pass_at_once(takes, bytes, sendbuf, recvbuf, &a)) return pass_now(comm, "MPI_Iallgatherv", a, m);
    ReentryGuard guard;
    return start_collective(comm, a, bytes, "MPI_Iallgatherv", prio, m);
}
