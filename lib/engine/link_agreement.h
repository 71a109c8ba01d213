// An agreement (MAX over the ranks of some doubles) carried by terse's own
// tagged messages instead of the MPI library's non-blocking collectives.
// Every small agreement of the engine travels this way: an operation's
// codec statistics and its closing agreement (op_base.h), and the
// planner's probe of the MPI library (runtime/collective.h).  Two reasons:
//  - Open MPI polls its non-blocking-collective component in every
//    progress loop, for the life of the communicator, once one non-blocking
//    collective was started on it: a control allreduce on the application's
//    communicator taxed every later call of the job, those terse passes to
//    the MPI library included (perf/README.md, "the control plane over
//    terse's own messages");
//  - non-blocking operations end in any order, and MPI matches the
//    collectives of a communicator in the order they are posted; these
//    messages carry their operation's sequence number in their tags and
//    match nothing else, whatever order the ranks finish in
//    (runtime/nonblocking.h).
//
// Up to kDirectRanks ranks and kInline values, one round: every rank sends
// its values to every other, so all messages are posted at start() and an
// agreement left in flight (the planner's probe) ends without a round
// trip at the rank that waits for it.  Beyond that, dissemination: in
// round k, rank r sends what it holds to r + 2^k and takes the MAX with
// what r - 2^k sent; after ceil(log2 n) rounds every rank holds the MAX
// over all (MAX is idempotent, so ranks counted twice do no harm).  Rounds
// after the first are posted from test(), so a rank that starts an
// agreement must test it until it ends.
#pragma once

#include "engine/engine.h"
#include "engine/ports.h"
#include "util/status.h"

#include <cstddef>
#include <cstdint>

namespace terse {

class LinkMax {
public:
    // What is agreed, which also places its rounds' tag slots (slot + k):
    // above what a schedule reaches before it wraps, and matched in
    // posting order even if it does (every schedule message of a peer is
    // sent before its first round).  Apart, so that an operation's two
    // agreements (same sequence number) never share a tag; ceil(log2 n) <=
    // 20 rounds for the transport's 20-bit ranks.
    enum Purpose : uint32_t {
        kCodecStats = 0xFF00,  // a summable codec's statistics, before the schedule
        kClose = 0xFF40,       // an operation's outcome and measurements, after it
        kProbe = 0xFF80,       // the planner's timing of an MPI library call
    };
    // Values that fit the agreement itself; more need the caller's scratch.
    static constexpr size_t kInline = 8;
    // The most ranks that agree in one round (n - 1 messages each way).
    static constexpr int kDirectRanks = 8;

    LinkMax() = default;
    LinkMax(const LinkMax &) = delete;
    LinkMax &operator=(const LinkMax &) = delete;

    // values[0..count) become their MAX over the ranks of env (its link,
    // rank, size, context and sequence number).  values, env and, where
    // count > kInline, scratch (count doubles: what a round receives) must
    // stay valid until test() returns true.  Each round sends values
    // itself, which the caller must not touch meanwhile.
    Status start(const EngineEnv &env, Purpose purpose, double *values, size_t count, double *scratch = nullptr);
    // Advances; true once finished (with *status its outcome).  *moved is
    // set when a round completed.
    bool test(Status *status, bool *moved);
    bool active() const { return active_; }

private:
    Status post_direct();
    Status post_round();
    // Whether requests [0, n) are all complete; on a failure, *status.
    bool tested(int n, Status *status);
    bool finish();
    const char *name() const;

    const EngineEnv *env_ = nullptr;
    Purpose purpose_ = kClose;
    double *values_ = nullptr;
    double *in_ = nullptr;  // dissemination: what a round receives
    size_t count_ = 0;
    unsigned round_ = 0;
    bool direct_ = false;
    bool active_ = false;
    // Direct: peer k's values at k * kInline; dissemination: the first kInline.
    double inline_in_[kInline * (kDirectRanks - 1)] = {};
    LinkRequest send_[kDirectRanks - 1], recv_[kDirectRanks - 1];
};

}  // namespace terse
