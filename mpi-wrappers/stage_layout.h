// Which bytes of a call's buffers staging copies (device/staged_call.h),
// from the call's MPI arguments: any datatype (a call the engine does not
// take is staged as well as one it takes: a derived type spans from its
// true lower bound over its extents) and MPI_IN_PLACE.  Computed only for
// calls in device memory.
//
// The receive buffer is copied in when the library reads it (in place: it
// holds the input) or when the call does not write every byte of its span
// (holes in a datatype, gaps between Allgatherv blocks), so that copying
// the span back leaves those bytes as they were.
#pragma once

#include "device/staged_call.h"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace terse {

struct StageLayout {
    device::StageRegion send, recv;
};

namespace stage_detail {

// The bytes that elements [first, first + count) of dt touch from buf, as
// [lo, hi) offsets; widened into *lo, *hi.  Returns the bytes they carry.
inline size_t widen(MPI_Datatype dt, MPI_Aint first, MPI_Aint count, MPI_Aint *lo, MPI_Aint *hi) {
    if (count <= 0) return 0;
    MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    int size = 0;
    PMPI_Type_size(dt, &size);
    const MPI_Aint a = first * extent + tlb, b = (first + count - 1) * extent + tlb + textent;
    *lo = std::min(*lo, a);
    *hi = std::max(*hi, b);
    return size_t(size) * size_t(count);
}

// A region from [lo, hi) of buf; copy_in when read, or when written
// bytes do not fill it.
inline device::StageRegion region(const void *buf, MPI_Aint lo, MPI_Aint hi, size_t written, bool read) {
    device::StageRegion r;
    if (hi <= lo) return r;
    r.buf = buf;
    r.lb = lo;
    r.bytes = size_t(hi - lo);
    r.copy_in = read || written != r.bytes;
    return r;
}

inline device::StageRegion input(const void *buf, MPI_Aint count, MPI_Datatype dt) {
    if (buf == MPI_IN_PLACE) return {};
    MPI_Aint lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    const size_t n = widen(dt, 0, count, &lo, &hi);
    return region(buf, lo, hi, n, true);
}

inline int comm_size(MPI_Comm comm) {
    int n = 1;
    PMPI_Comm_size(comm, &n);
    return n;
}

inline int comm_rank(MPI_Comm comm) {
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

}  // namespace stage_detail

inline StageLayout stage_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt) {
    using namespace stage_detail;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    MPI_Aint lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    const size_t n = widen(dt, 0, count, &lo, &hi);
    return {input(sendbuf, count, dt), region(recvbuf, lo, hi, n, in_place)};
}

// In place, the receive buffer holds the whole input (size blocks) and the
// result goes to its first block.
inline StageLayout stage_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt,
                                              MPI_Comm comm) {
    using namespace stage_detail;
    const MPI_Aint total = MPI_Aint(recvcount) * comm_size(comm);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    MPI_Aint lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    const size_t n = widen(dt, 0, in_place ? total : recvcount, &lo, &hi);
    return {input(sendbuf, total, dt), region(recvbuf, lo, hi, n, in_place)};
}

inline StageLayout stage_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                        MPI_Datatype dt, MPI_Comm comm) {
    using namespace stage_detail;
    const int size = comm_size(comm);
    MPI_Aint total = 0;
    for (int i = 0; i < size; ++i) total += recvcounts[i];
    const bool in_place = sendbuf == MPI_IN_PLACE;
    MPI_Aint lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    const size_t n = widen(dt, 0, in_place ? total : recvcounts[comm_rank(comm)], &lo, &hi);
    return {input(sendbuf, total, dt), region(recvbuf, lo, hi, n, in_place)};
}

inline StageLayout stage_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    using namespace stage_detail;
    MPI_Aint lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    const size_t n = widen(recvtype, 0, MPI_Aint(recvcount) * comm_size(comm), &lo, &hi);
    return {input(sendbuf, sendcount, sendtype), region(recvbuf, lo, hi, n, sendbuf == MPI_IN_PLACE)};
}

inline StageLayout stage_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                    MPI_Comm comm) {
    using namespace stage_detail;
    const int size = comm_size(comm);
    MPI_Aint lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    size_t n = 0;
    for (int i = 0; i < size; ++i) n += widen(recvtype, displs[i], recvcounts[i], &lo, &hi);
    return {input(sendbuf, sendcount, sendtype), region(recvbuf, lo, hi, n, sendbuf == MPI_IN_PLACE)};
}

}  // namespace terse
