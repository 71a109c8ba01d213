// The engine's ports in production (engine/ports.h): Link over the UCX
// transport, Control over PMPI non-blocking collectives.
#pragma once

#include "engine/ports.h"

#include <mpi.h>

#include <memory>
#include <vector>

namespace terse {

// world_rank_of maps comm ranks to the transport's world ranks and must
// outlive the link.
std::unique_ptr<Link> make_transport_link(const std::vector<int> *world_rank_of);
std::unique_ptr<Control> make_mpi_control(MPI_Comm comm);

// The MPI datatype of a dtype the control plane carries (float32, float64,
// int32, int64), else MPI_DATATYPE_NULL; the MPI op of an op.
MPI_Datatype mpi_type(terse_dtype_t dt);
MPI_Op mpi_op(terse_op_t op);
// TERSE_ERR_UNSUPPORTED with a message naming `what` (e.g. "node
// reduce-scatter"), dt, and the dtypes mpi_type() maps.
Status dtype_not_carried(const char *what, terse_dtype_t dt);
// One turn of the MPI library's progress engine (an MPI_Iprobe on comm,
// which matches nothing), for a wait on terse's own messages that a peer
// may only answer once an earlier MPI call of its own completes.
void mpi_progress(MPI_Comm comm);

// The node stages of the two-level schedule (runtime/node_layout.h): like
// make_mpi_control, but ireduce_scatter and iallgatherv block and return
// with the request complete: the reduce-scatter a pairwise exchange of
// PMPI messages (runtime/node_reduce_scatter.h says why), the allgather
// the MPI library's MPI_Allgatherv.
// Not the MPI library's non-blocking collectives: Open MPI 4.1's (libnbc)
// move only inside MPI calls and take another algorithm: on 2 ranks over
// shared memory, 16 MiB of floats took 72-82 ms in MPI_Ireduce_scatter +
// MPI_Wait against 3.2-3.6 ms in MPI_Reduce_scatter.  Only for
// communicators whose collectives run on the application thread inside a
// blocking call (the two-level schedule runs
// no other: terse(7), TWO-LEVEL SCHEDULE); the requests' other users see a
// request that completed at once, which the Control contract allows.
std::unique_ptr<Control> make_node_mpi_control(MPI_Comm comm);

// The control plane of non-blocking operations (runtime/nonblocking.h):
// like make_mpi_control, but on a thread marked by
// control_thread_without_mpi() (terse's progress thread below
// MPI_THREAD_MULTIPLE) it calls no MPI: a post is queued and test() says
// "not yet"; the next call on another thread posts the queued ones first,
// in their order, so every rank still posts the same sequence.
std::unique_ptr<Control> make_deferring_mpi_control(MPI_Comm comm);
// Marks the calling thread as one that must not call MPI.
void control_thread_without_mpi();

}  // namespace terse
