// A pairwise-exchange reduce-scatter on PMPI point-to-point messages
// (node_reduce_scatter.h).
#include "runtime/node_reduce_scatter.h"

#include "engine/reduce_kernels.h"
#include "runtime/engine_ports.h"
#include "util/dtype.h"

#include <algorithm>
#include <cstring>

namespace terse {

namespace {

// The node communicator is terse's own (runtime/node_layout.h): no other
// point-to-point message travels on it.
constexpr int kTag = 0x7e5;

Status mpi_failed(const char *call, int peer, int rc) {
    return set_error(TERSE_ERR_MPI, "terse node reduce-scatter: %s with node rank %d failed (code %d)", call,
                     peer, rc);
}

}  // namespace

Status NodeReduceScatter::run(MPI_Comm comm, const void *in, void *out, const int *counts, terse_dtype_t dt,
                              terse_op_t op) {
    const MPI_Datatype t = mpi_type(dt);
    if (t == MPI_DATATYPE_NULL) return dtype_not_carried("node reduce-scatter", dt);
    int me = 0, size = 1;
    PMPI_Comm_rank(comm, &me);
    PMPI_Comm_size(comm, &size);
    const size_t esize = dtype_size(dt);
    const size_t piece = kPieceBytes / esize;  // elements
    auto offset = [&](int rank) {              // of rank's shard in the input, in elements
        size_t at = 0;
        for (int q = 0; q < rank; ++q) at += size_t(counts[q]);
        return at;
    };
    const size_t mine_at = offset(me), n = size_t(counts[me]);
    const bool in_place = in == out;
    const uint8_t *src = static_cast<const uint8_t *>(in_place ? out : in);
    // The shard is reduced where it will not be read again: in place, at
    // its own input (no peer needs that part), moved to the start at the
    // end; otherwise at out, where the first step writes own op received
    // (a copy of own first was a tenth of a two-level call's CPU time).
    const uint8_t *own = src + mine_at * esize;
    uint8_t *acc = in_place ? static_cast<uint8_t *>(out) + mine_at * esize : static_cast<uint8_t *>(out);
    if (!in_place && size == 1 && n) std::memcpy(acc, own, n * esize);
    for (int k = 1; k < size; ++k) {
        const int to = (me + k) % size, from = (me - k + size) % size;
        const uint8_t *send = src + offset(to) * esize;
        const size_t send_n = size_t(counts[to]);
        // Both sides cut a message the same way (the counts are the same
        // on every rank), so every piece sent has its receive.
        for (size_t at = 0; at < std::max(send_n, n); at += piece) {
            const int sp = int(at < send_n ? std::min(piece, send_n - at) : 0);
            const int rp = int(at < n ? std::min(piece, n - at) : 0);
            int rc = MPI_SUCCESS;
            if (sp && rp) {
                rc = PMPI_Sendrecv(send + at * esize, sp, t, to, kTag, scratch_.get(), rp, t, from, kTag, comm,
                                   MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) return mpi_failed("PMPI_Sendrecv", to, rc);
            } else if (sp) {
                rc = PMPI_Send(send + at * esize, sp, t, to, kTag, comm);
                if (rc != MPI_SUCCESS) return mpi_failed("PMPI_Send", to, rc);
            } else {
                rc = PMPI_Recv(scratch_.get(), rp, t, from, kTag, comm, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) return mpi_failed("PMPI_Recv", from, rc);
            }
            if (rp && k == 1 && !in_place)
                reduce_out(dt, op, acc + at * esize, own + at * esize, scratch_.get(), size_t(rp));
            else if (rp) reduce_inplace(dt, op, acc + at * esize, scratch_.get(), size_t(rp));
        }
    }
    if (in_place && mine_at && n) std::memmove(out, acc, n * esize);
    return TERSE_OK;
}

}  // namespace terse
