// From an intercepted collective's MPI arguments to the engine's CollArgs,
// shared by the blocking and the non-blocking wrappers (and, through them,
// the Fortran bindings).  Each map_* returns whether terse can take the
// call at all (predefined datatype and operation, counts >= 0, send and
// receive sides alike) and then sets *bytes, the size that pass_at_once()
// and the engine compare with the floor.  Everything it reads is an
// argument MPI requires to match on every rank, so the answer is the same
// everywhere.  MPI_COMM_NULL (and any other bad communicator) is not taken:
// PMPI reports the error.
//
// The v calls' counts become size_t arrays in VCounts, which the caller
// keeps alive for as long as the CollArgs are used (a blocking call: the
// thread's own; a non-blocking one copies them, runtime/nonblocking.h).
#pragma once

#include "datatype_map.h"

#include "engine/coll_args.h"
#include "util/dtype.h"

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace terse {

struct VCounts {
    std::vector<size_t> counts, displs;
};

// The blocking calls' VCounts: one per thread, grown once and reused.
inline VCounts &thread_vcounts() {
    static thread_local VCounts v;
    return v;
}

inline bool map_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, CollArgs *a,
                          size_t *bytes) {
    if (count < 0 || !map_datatype(dt, &a->dtype) || !map_op(op, &a->op)) return false;
    a->kind = CollKind::Allreduce;
    a->in_place = sendbuf == MPI_IN_PLACE;
    a->sendbuf = a->in_place ? recvbuf : sendbuf;
    a->recvbuf = recvbuf;
    a->count = static_cast<size_t>(count);
    *bytes = a->count * dtype_size(a->dtype);
    return true;
}

// The size compared with the floor is the whole input, recvcount per rank.
// In place, recvbuf holds the whole input and receives the first block.
inline bool map_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt,
                                     MPI_Op op, MPI_Comm comm, CollArgs *a, size_t *bytes) {
    int size = 0;
    if (recvcount < 0 || !map_datatype(dt, &a->dtype) || !map_op(op, &a->op) || comm == MPI_COMM_NULL ||
        PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return false;
    a->kind = CollKind::ReduceScatterBlock;
    a->in_place = sendbuf == MPI_IN_PLACE;
    a->sendbuf = a->in_place ? recvbuf : sendbuf;
    a->recvbuf = recvbuf;
    a->count = static_cast<size_t>(recvcount);
    *bytes = a->count * size_t(size) * dtype_size(a->dtype);
    return true;
}

// Unequal (and zero) recvcounts; the size compared with the floor is the
// whole input, their sum.  In place, recvbuf holds the input and receives
// the rank's block at its start.
inline bool map_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm, CollArgs *a, size_t *bytes, VCounts *v) {
    int size = 0;
    if (!recvcounts || !map_datatype(dt, &a->dtype) || !map_op(op, &a->op) || comm == MPI_COMM_NULL ||
        PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return false;
    size_t total = 0;
    v->counts.resize(size_t(size));
    for (int i = 0; i < size; ++i) {
        if (recvcounts[i] < 0) return false;
        v->counts[i] = size_t(recvcounts[i]);
        total += v->counts[i];
    }
    a->kind = CollKind::ReduceScatter;
    a->in_place = sendbuf == MPI_IN_PLACE;
    a->sendbuf = a->in_place ? recvbuf : sendbuf;
    a->recvbuf = recvbuf;
    a->count = total;
    a->counts = v->counts.data();
    *bytes = total * dtype_size(a->dtype);
    return true;
}

// Eligible only when both sides describe the same predefined type and
// count (in place, the send side is the rank's block of recvbuf).  The size
// compared with the floor is one rank's block.
inline bool map_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm, CollArgs *a, size_t *bytes) {
    a->in_place = sendbuf == MPI_IN_PLACE;
    int rank = 0;
    if (recvcount < 0 || !map_datatype(recvtype, &a->dtype) ||
        !(a->in_place || (sendtype == recvtype && sendcount == recvcount)) || comm == MPI_COMM_NULL ||
        PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return false;
    a->kind = CollKind::Allgather;
    a->op = TERSE_OP_SUM;  // unused by allgather
    a->recvbuf = recvbuf;
    a->count = static_cast<size_t>(recvcount);
    a->sendbuf = a->in_place
                     ? static_cast<const uint8_t *>(recvbuf) + size_t(rank) * a->count * dtype_size(a->dtype)
                     : sendbuf;
    *bytes = a->count * dtype_size(a->dtype);
    return true;
}

// Unequal (and zero) recvcounts, blocks anywhere in recvbuf (displs are
// this rank's layout: negative ones are taken relative to the lowest).  The
// size compared with the floor is the whole result, the counts' sum.
inline bool map_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                           CollArgs *a, size_t *bytes, VCounts *v) {
    a->in_place = sendbuf == MPI_IN_PLACE;
    int rank = 0, size = 0;
    if (!recvcounts || !displs || !map_datatype(recvtype, &a->dtype) || comm == MPI_COMM_NULL ||
        PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return false;
    if (!a->in_place && !(sendtype == recvtype && sendcount == recvcounts[rank])) return false;
    size_t total = 0;
    int lowest = 0;
    v->counts.resize(size_t(size));
    v->displs.resize(size_t(size));
    for (int i = 0; i < size; ++i) {
        if (recvcounts[i] < 0) return false;
        v->counts[i] = size_t(recvcounts[i]);
        total += v->counts[i];
        if (displs[i] < lowest) lowest = displs[i];
    }
    const size_t esize = dtype_size(a->dtype);
    uint8_t *base = static_cast<uint8_t *>(recvbuf) + std::ptrdiff_t(lowest) * std::ptrdiff_t(esize);
    for (int i = 0; i < size; ++i) v->displs[i] = size_t(displs[i] - lowest);
    a->kind = CollKind::Allgatherv;
    a->op = TERSE_OP_SUM;  // unused by allgather
    a->recvbuf = base;
    a->count = total;
    a->counts = v->counts.data();
    a->displs = v->displs.data();
    a->sendbuf = a->in_place ? base + v->displs[rank] * esize : sendbuf;
    *bytes = total * esize;
    return true;
}

}  // namespace terse
