// The engine: runs collective schedules over the transport, compressing
// chunks with the communicator's codec.  This header is what the runtime
// uses to run a call: it describes the communicator as an EngineEnv (plain
// values; the runtime builds it from its CommState, runtime/collective.cc)
// and knows no runtime type.  Inside (lib/engine/):
//   coll_args.h            the call: kind, buffers, count, dtype, op
//   planner.h/.cc          whether the engine runs a call at all
//                          (engine_eligible), and which schedule, chunk size,
//                          depth (a pure function of the call's matching
//                          arguments and agreed config)
//   cost_model.h/.cc       alpha-beta-gamma costs of the schedules and the
//                          MPI library, from measured inputs; pipeline shape
//   selection.h/.cc        TERSE_PLANNER=model: per size class the fastest
//                          of the MPI library and each codec on each schedule
//   op_base.h/.cc          OpBase, what every operation shares: frames, poisoned
//                          mode, error feedback, summable statistics, verification
//   schedules/             the algorithms, each an OpBase:
//     message_stream.h/.cc windowed, deadlock-free message streams (every schedule)
//     ring_op.h, ring_allreduce.cc, ring_reduce_scatter.cc, ring_allgather.cc
//                          the pipelined ring (allreduce = reduce-scatter + allgather)
//     recursive_doubling.cc short messages
//     gather_allreduce.cc  codecs whose payloads cannot be summed
//     two_level.cc         the MPI library inside a node, a flat schedule
//                          between nodes (algorithm=two_level)
//   cost_two_level.h/.cc   the two-level schedule's alpha-beta-gamma cost
//   reduce_kernels.h/.cc   element-wise reductions (lossless fast path, raw frames)
//   error_feedback.h/.cc   residuals carried between calls
//   feedback_key.h/.cc     what names a residual (feedback_key=), decided at issue
//   verify.h/.cc           TERSE_VERIFY
//   tune_plan.h/.cc        a tuning file entry applied to the planner's plan
//   guard.h/.cc            the error guard (guard=): verify every K-th lossy
//                          call, switch to lossless beyond the allowed error
//   stats.h/.cc            per-communicator counters
//   ports.h                messages and the MPI control plane seen as two small
//                          interfaces without UCX or MPI types (implemented in
//                          lib/runtime/engine_ports.cc)
//   message_tag.h          the tag layout (op_tag in op_base.h builds tags)
// Besides the ports, the engine drives the transport only to progress it
// and to sleep while waiting (engine_wait, engine_progress_all).
//
// Failures: a rank that fails locally (no memory at the start or in the
// schedule's set-up, a corrupt frame, a codec error) keeps its schedule
// going with header-only poison frames, so every rank's operation ends with
// an error (TERSE_ERR_REMOTE naming the failing rank on the others) and none
// waits forever.  The ranks also agree on the outcome at the end (one small
// allreduce), because a rank can fail on a message it does not forward any
// more.  Transport failures, and a rank that cannot allocate even the
// operation's bookkeeping, end the operation at once (the MPI error handler
// then decides).
//
// Every collective is an Operation: a state machine that progress() moves
// forward without blocking, so the same code serves blocking calls (start,
// then wait), non-blocking calls, and background progress.  Operations with
// a higher priority are progressed first by engine_progress_all().
#pragma once

#include "config/config.h"
#include "engine/coll_args.h"
#include "engine/cost_model.h"
#include "engine/feedback_key.h"
#include "engine/planner.h"
#include "engine/ports.h"
#include "util/status.h"

#include <terse/codec.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace terse {

class CodecInstance;  // codec/registry.h
class DevicePort;     // engine/device_port.h
class FeedbackStore;  // engine/error_feedback.h
struct GuardState;    // engine/guard.h
struct TuneEntry;     // config/tune_file.h
class OpMemory;       // engine/op_memory.h
class OpMemoryPool;   // engine/op_memory.h
struct Stats;         // engine/stats.h

// The two-level layout of a communicator (algorithm=two_level), made once
// per communicator context by the runtime (runtime/node_layout.h): this
// rank's node, its rail (the ranks of every node with its local index) and
// the ports of both sub-communicators.  Node q's ranks hold shards
// 0..shards-1 of the data, one each, for local indices below `shards`
// (the smallest node's size); ranks at or above it hold none and are on no
// rail.
struct TwoLevelEnv {
    int node_rank = 0, node_size = 1;
    int nodes = 1;
    int shards = 1;
    Control *node = nullptr;            // the node's collectives (the MPI library)
    int rail_rank = -1, rail_size = 0;  // -1: no rail (node_rank >= shards)
    Link *rail_link = nullptr;          // peers are rail ranks
    Control *rail_control = nullptr;
    // What the rail's flat schedule is planned with: the communicator's
    // configuration with algorithm=auto.
    const CommConfig *rail_config = nullptr;
};

// Everything an operation needs from its communicator, as plain values, so
// that operations run the same on a real communicator (the runtime fills
// this from its state) and on simulated ranks in unit tests.
struct EngineEnv {
    int rank = 0;
    int size = 1;
    uint32_t ctx_id = 0;
    uint32_t seq = 0;
    bool verify = false;             // TERSE_VERIFY
    CodecInstance *codec = nullptr;  // for the call's dtype
    bool feedback = false;
    FeedbackStore *residuals = nullptr;  // non-null when feedback is on
    // The call's residual (feedback_key.h), decided when it was issued; an
    // address key's address is the operation's input.
    FeedbackKey feedback_key;
    Stats *stats = nullptr;
    // Where the operation's statistics count (per kind: blocking or not).
    terse_coll_kind_t stats_kind = TERSE_KIND_ALLREDUCE;
    // The communicator's error guard (guard=); null or every == 0: off.
    GuardState *guard = nullptr;
    // The tuning file's entry for this call (tune_file=), or null.
    const TuneEntry *tuned = nullptr;
    Link *link = nullptr;
    Control *control = nullptr;
    // Where operations live (op_memory.h): the communicator's pool, so that
    // steady-state calls allocate nothing; null gives each operation memory
    // of its own (unit tests).
    OpMemoryPool *memory = nullptr;
    // Set where the communicator's configuration asks for two_level and the
    // operation may run it (not a non-blocking call); null: flat schedules.
    const TwoLevelEnv *two_level = nullptr;
    // Set for an allreduce on device buffers that the runtime gives the
    // device codec path (runtime/device_codecs.h): the ring schedule with a
    // summable codec, encoding and decoding on the device through this
    // port.  Null: the buffers are host memory.
    DevicePort *device = nullptr;
    // When set, a finished operation writes here what it measured, agreed
    // across ranks (its closing agreement carries it): the planner's input.
    Observation *observed = nullptr;
    // The communicator's name, for messages: a copy (no allocation per
    // call, and the name may change while an operation runs), truncated.
    char comm_name[128] = "";
    void set_comm_name(std::string_view name);
};

class Operation {
public:
    virtual ~Operation() = default;
    // Advance without blocking.  Sets *done when finished (successfully or
    // not); the returned status is final once *done.
    virtual Status progress(bool *done) = 0;
    // Whether the operation is now waiting only for the MPI control plane
    // (a Control request that the MPI library progresses).  Such a wait
    // must not sleep on the transport's event fd, which the MPI library
    // never signals.
    virtual bool waits_on_control() const { return false; }
    Priority priority = Priority::Normal;

    // What engine_wait and engine_progress_all call: progress() serialised
    // across threads (a call that finds another thread inside returns at
    // once with *done false) and the final status remembered, with its
    // message re-raised on the calling thread.
    Status advance(bool *done);
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    // Grows whenever the operation moved (a message posted or completed, a
    // stage passed): a scheduler tells "waits on a peer" from "moving" by
    // it (runtime/nonblocking.h).  On the thread advancing it.
    uint64_t activity() const { return activity_; }
    void note_activity() { ++activity_; }

private:
    std::atomic<bool> busy_{false};
    std::atomic<bool> finished_{false};
    uint64_t activity_ = 0;
    Status final_ = TERSE_OK;
    std::string final_msg_;
};

// Destroys an operation and gives its memory back (to the communicator's
// OpMemoryPool, or frees it when the operation had memory of its own).
struct OpDeleter {
    OpMemoryPool *pool = nullptr;
    OpMemory *memory = nullptr;
    void operator()(Operation *op) const;
};
using OpHandle = std::unique_ptr<Operation, OpDeleter>;

// Plan and build the operation for args on env (whose link and control
// must be set), with the communicator's agreed configuration cfg.  The
// caller decided with engine_eligible() (planner.h) that the engine runs
// this call.
Status engine_start(const EngineEnv &env, const CommConfig &cfg, const CollArgs &args, Priority prio,
                    OpHandle *op);
// The plan engine_start() chooses for args (plan_collective, flat where
// the operation has no two-level layout), before a tuning file's entry.
Plan engine_untuned_plan(const EngineEnv &env, const CommConfig &cfg, const CollArgs &args);
// A plan with the tuning file's entry (env.tuned) applied, as
// engine_start_plan() runs it.
Plan engine_tuned_plan(const EngineEnv &env, const CollArgs &args, const Plan &chosen);
// The same with a plan the caller made (the model planner, planner.h).
Status engine_start_plan(const EngineEnv &env, const CollArgs &args, const Plan &plan, Priority prio,
                         OpHandle *op);
// Progress op (and the transport) until done.
Status engine_wait(Operation *op);

// Background progress by priority: registered operations are advanced,
// highest priority first, by engine_progress_all(), which engine_wait also
// calls.  (The runtime's non-blocking calls keep their own per-communicator
// queues in issue order, runtime/nonblocking.h; this list is where
// operations served by priority across communicators belong.)  One thread
// at a time progresses the list (others return at once); register and
// unregister take a lock, so they belong in start/completion, not in loops.
void engine_progress_register(Operation *op);
void engine_progress_unregister(Operation *op);
// Advances registered operations and the transport; returns nonzero if
// anything moved.
unsigned engine_progress_all();

}  // namespace terse

// Test hook, reachable only by calling it: the next `count` frames this
// process sends get a flipped check value, so their receivers detect a
// corrupt frame (tests of the poisoned mode: every rank must fail, none hang).
extern "C" void terse_engine_test_corrupt_next_sends(int count);

// Test hook, reachable only by calling it: the next operation this process
// starts fails locally at `where`: "start" (as if out of memory while
// starting), "begin" (the same, right after the schedule is set up), or a
// hop, where the frame received at that hop is spoiled as a corrupt transfer
// would be: "rs:W", "ag:W" (reduce-scatter / allgather phase of the ring;
// recursive doubling's fold and exchanges are "rs", its returned result
// "ag"; gather's steps are "ag") or "hop:W" (counting every hop of the
// schedule), W one of first, middle, last.  NULL or "" disarms.  Returns -1
// for a spec it does not know.  Tests of "no rank left waiting".
extern "C" int terse_engine_test_fail_next(const char *where);
