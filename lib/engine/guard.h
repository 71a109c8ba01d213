// The error guard (guard=K, terse(7)): with a lossy codec, every K-th
// allreduce on a communicator is also computed exactly (by the Verifier, as
// TERSE_VERIFY does), and when terse's result is further from it than the
// codec's stated bound (or the user's guard_budget) the communicator
// switches to lossless from its next call on.
//
// The check is local to each rank, the decision collective: every rank's
// verdict travels in the operation's closing agreement (MAX over ranks), so
// all ranks switch after the same call and never take different paths.  The
// checked call's own result is then replaced by the exact one.
#pragma once

#include "config/config.h"
#include "engine/ports.h"
#include "util/status.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>

namespace terse {

// Per communicator; owned by the runtime (CommState), changed only by the
// operations on that communicator, which MPI serialises.
struct GuardState {
    unsigned every = 0;                              // K; 0: off
    ErrorBudget budget;                              // None: the codec's error_bound()
    const terse_codec_descriptor_t *desc = nullptr;  // the lossy codec checked
    const void *params = nullptr;                    // its parsed parameters
    uint64_t lossy_calls = 0;                        // lossy allreduces started (same count on every rank)
    bool tripped = false;                            // switched to lossless (every rank at the same call)

    // Whether a guard with this configuration can decide: a budget, or a
    // codec that states a bound with these parameters (params) on nranks.
    static bool decidable(const ErrorBudget &budget, const terse_codec_descriptor_t *desc, const void *params,
                          int nranks);
};

// One checked call: agrees on the statistics the codec's bound needs (the
// largest |x| and the value range over every rank's input, one small MAX
// allreduce started with the operation) and judges the measured error.
class GuardCheck {
public:
    explicit GuardCheck(Control *control) : control_(control) {}
    ~GuardCheck();
    GuardCheck(const GuardCheck &) = delete;
    GuardCheck &operator=(const GuardCheck &) = delete;

    // Every rank must call it (it posts a control allreduce).
    Status start(const void *input, size_t count, terse_dtype_t dtype);
    bool test(Status *status);

    // The allowed error for this call and whether measured (abs_err,
    // rel_err as the Verifier measures them) exceeds it.  *allowed is in the
    // unit compared: relative for a rel budget, else absolute.
    bool exceeded(const GuardState &g, int nranks, double abs_err, double rel_err, double *measured,
                  double *allowed) const;

private:
    Control *control_;
    terse_dtype_t dtype_ = TERSE_DTYPE_FLOAT32;
    size_t count_ = 0;
    double agreed_[3] = {0, 0, 0};  // max |x|, max x, -min x
    ControlRequest req_;
};

}  // namespace terse
