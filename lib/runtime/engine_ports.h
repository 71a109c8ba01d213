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
