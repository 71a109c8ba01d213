// Map MPI datatypes and ops onto the engine's types.  Only predefined
// types and ops map; derived types and user ops are never eligible.
// Inline: every intercepted call asks, the ones passed straight through
// included.
#pragma once

#include <mpi.h>
#include <terse/codec.h>

namespace terse {

inline bool map_datatype(MPI_Datatype dt, terse_dtype_t *out) {
    // C and Fortran names are distinct handles for the same representation.
    if (dt == MPI_DOUBLE || dt == MPI_DOUBLE_PRECISION || dt == MPI_REAL8) {
        *out = TERSE_DTYPE_FLOAT64;
    } else if (dt == MPI_FLOAT || dt == MPI_REAL || dt == MPI_REAL4) {
        *out = TERSE_DTYPE_FLOAT32;
    } else if (dt == MPI_INT32_T || dt == MPI_INTEGER4 || (dt == MPI_INT && sizeof(int) == 4) ||
               (dt == MPI_INTEGER && sizeof(MPI_Fint) == 4)) {
        *out = TERSE_DTYPE_INT32;
    } else if (dt == MPI_INT64_T || dt == MPI_INTEGER8 || dt == MPI_LONG_LONG || dt == MPI_LONG_LONG_INT ||
               (dt == MPI_LONG && sizeof(long) == 8)) {
        *out = TERSE_DTYPE_INT64;
    } else {
        return false;
    }
    return true;
}

inline bool map_op(MPI_Op op, terse_op_t *out) {
    if (op == MPI_SUM) *out = TERSE_OP_SUM;
    else if (op == MPI_MAX) *out = TERSE_OP_MAX;
    else if (op == MPI_MIN) *out = TERSE_OP_MIN;
    else return false;
    return true;
}

}  // namespace terse
