// TERSE_VERIFY: alongside the compressed collective, compute the exact
// result with the MPI library (PMPI, started non-blocking at the beginning
// of the operation on a private copy of the input, so MPI_IN_PLACE and error
// feedback do not disturb it) and record how far terse's result is from it.
//
//   max_abs_error = max_i |result_i - exact_i|
//   max_rel_error = max_abs_error / max_i |exact_i|   (norm-wise: element-wise
//                   ratios explode where the exact sum is near zero)
// A non-finite value where the exact result has a finite one (or the other
// way round) counts as an infinite error; NaN where exact is NaN counts 0.
#pragma once

#include "engine/ports.h"
#include "util/scratch.h"
#include "engine/stats.h"
#include "util/status.h"

#include <terse/codec.h>

#include <cstddef>

namespace terse {

class Verifier {
public:
    Verifier(Control *control) : control_(control) {}
    ~Verifier();
    Verifier(const Verifier &) = delete;
    Verifier &operator=(const Verifier &) = delete;

    // input: count elements of dtype, combined with op over ranks.  Every
    // rank must join the control allreduce, so when the private copy cannot
    // be allocated it is still posted, on spare (count elements of dtype,
    // whose contents it then overwrites), and TERSE_ERR_NO_MEMORY returned:
    // the caller's operation has failed, but its peers are not left waiting.
    Status start(const void *input, size_t count, terse_dtype_t dtype, terse_op_t op, void *spare);
    // Whether start() posted the control allreduce (then every rank did).
    bool posted() const { return req_.active; }
    // Whether the exact result is in, and how it went.  May be called as
    // often as wanted (the outcome is kept once complete): the operation
    // calls it while its own schedule runs, because the MPI library moves a
    // non-blocking collective only inside MPI calls, and would otherwise
    // start the exact allreduce only when terse's result is done.
    bool test(Status *status);
    // Compare result (count elements of dtype) with the exact one.
    void record(const void *result, Stats *stats) const;
    // The same comparison, returned (the error guard, engine/guard.h).
    void measure(const void *result, double *abs_err, double *rel_err) const;
    // Overwrite result (count elements of dtype) with the exact one.
    void copy_exact(void *result) const;

    // The comparison itself (tests): exact is float64/int as produced by start().
    static void compare(terse_dtype_t dtype, const void *result, terse_dtype_t exact_dtype, const void *exact,
                        size_t count, double *abs_err, double *rel_err);

private:
    Control *control_;
    ScratchBuffer buf_;
    terse_dtype_t dtype_ = TERSE_DTYPE_FLOAT32;
    terse_dtype_t wire_dtype_ = TERSE_DTYPE_FLOAT32;
    size_t count_ = 0;
    ControlRequest req_;
    bool complete_ = false;
    Status status_ = TERSE_OK;
};

}  // namespace terse
