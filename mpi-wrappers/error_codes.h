// terse's errors as MPI error codes: one error class per terse status,
// registered with the MPI library at MPI_Init (MPI_Add_error_class/_code/
// _string), so that MPI_Error_string on a code terse returns says what went
// wrong and MPI_Error_class tells the kinds of failure apart.
#pragma once

#include "util/status.h"

#include <mpi.h>

namespace terse {

// Once, after PMPI_Init.  Where the MPI library refuses (it need not support
// dynamic error classes), the codes fall back to MPI's own.
void register_error_codes();

// The MPI error code for a failed status: its registered code, else
// MPI_ERR_INTERN for transport failures and MPI_ERR_OTHER for the rest.
int mpi_error_code(Status status);

}  // namespace terse
