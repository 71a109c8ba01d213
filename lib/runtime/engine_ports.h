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

}  // namespace terse
