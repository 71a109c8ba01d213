// Map MPI datatypes and ops onto the engine's types.  Only predefined
// types and ops map; derived types and user ops are never eligible.
#pragma once

#include <mpi.h>
#include <terse/codec.h>

namespace terse {

bool map_datatype(MPI_Datatype dt, terse_dtype_t *out);
bool map_op(MPI_Op op, terse_op_t *out);

}  // namespace terse
