// From a communicator's state to the engine's plain inputs.
#include "runtime/collective.h"

#include "capture/capture.h"
#include "engine/error_feedback.h"
#include "engine/planner.h"
#include "engine/selection.h"
#include "engine/stats.h"
#include "runtime/engine_ports.h"
#include "runtime/node_layout.h"
#include "util/dtype.h"
#include "util/log.h"

#include <new>

namespace terse {

namespace {

// TERSE_CAPTURE: the input of an intercepted allreduce, before the engine
// touches the buffers (captures hold allreduce inputs only: what terse-eval
// replays).  A failure is reported and the call goes on.
void capture_input(const CommState *st, const CollArgs &a) {
    if (a.kind != CollKind::Allreduce || !capture_active()) return;
    CaptureSite site;
    site.comm_name = st->name;
    site.rank = st->rank;
    site.size = st->size;
    site.world_ranks = st->world_rank_of;
    site.config = &st->config;
    site.ctx_id = st->ctx_id;
    site.seq = st->seq;
    Status cs = capture_record(site, a.sendbuf, a.count, a.dtype, st->call_index, a.op);
    if (cs != TERSE_OK) TERSE_LOG_WARN("capture: %s", last_error());
}

// Bytes of the call's data, as the tuning file's ranges count them.
size_t call_bytes(const CommState *st, const CollArgs &a) {
    const size_t elems = a.kind == CollKind::ReduceScatterBlock ? a.count * size_t(st->size) : a.count;
    return elems * dtype_size(a.dtype);
}

}  // namespace

uint32_t collective_eligible(const CommState *st, const CollArgs &a) {
    uint32_t eligible = 0;
    // Once the error guard tripped, only the lossless slot may run (every
    // rank tripped at the same call, so all restrict alike).
    const bool tripped = st->guard.tripped && st->lossless_slot != CommState::kNoSlot;
    for (size_t i = 0; i < st->codecs.size() && i < kMaxCodecSlots; ++i) {
        if (tripped && i != st->lossless_slot) continue;
        const CodecSlot &slot = st->codecs[i];
        const bool instance = a.dtype > 0 && a.dtype < TERSE_DTYPE_MAX_ && slot.inst[a.dtype];
        if (engine_eligible(st->config, st->size, slot.desc(), instance, a)) eligible |= 1u << i;
    }
    return eligible;
}

bool collective_two_level_weighed(const CommState *st, const CollArgs &a, bool nonblocking) {
    // The two-level schedule runs blocking allreduces on a communicator
    // with a layout, and none with non-blocking operations (whose control
    // plane it would race: terse(7), NON-BLOCKING CALLS).
    return st->node_layout && !nonblocking && !st->nb && a.kind == CollKind::Allreduce;
}

namespace {
// Moves a probe's agreement on by what has arrived: a round that ends
// posts the next one now, not at the settling decision, where on 3 or more
// ranks it would cost a call a round trip (Open MPI over TCP at 10 Gbit/s,
// 4 ranks, 64 KiB: 276 us a call against 238 passed straight).  True once
// the agreement ended (p.outcome holds how).
bool advance_probe(CommState *st) {
    CommState::PendingProbe &p = st->probe;
    if (!p.agree.active()) return true;
    bool moved = false;
    return p.agree.test(&p.outcome, &moved);
}
}  // namespace

CollectiveChoice collective_choose(CommState *st, const CollArgs &a, bool nonblocking) {
    CollectiveChoice c;
    if (!st) return c;
    c.bytes = call_bytes(st, a);
    c.feedback_key = st->feedback_keys.next(st->config.feedback_key, a.kind, a.dtype, a.count);
    c.eligible = collective_eligible(st, a);
    const bool tripped = st->guard.tripped && st->lossless_slot != CommState::kNoSlot;
    const auto runs = [&c](size_t slot) {
        c.slot = slot;
        c.engine = slot < kMaxCodecSlots && (c.eligible >> slot) & 1u;
        return c;
    };
    // A tuning file's entry decides its calls in both planner modes, the
    // model's too: @mpi gives the call to the MPI library, codec=none runs
    // the lossless slot, any other the configured codec (slot 0), planned
    // as the fixed planner plans it and then as the entry says.
    if (const TuneEntry *tuned = comm_state_tuned(st, a.kind, c.bytes)) {
        if (tuned->schedule == TuneSchedule::Mpi) return c;
        return runs(tripped || tuned->codec == TuneCodec::None ? st->lossless_slot : 0);
    }
    // TERSE_PLANNER=fixed (or algorithm=two_level): the configured codec
    // whenever it can, the lossless one once the guard tripped.
    if (!st->selector) return runs(tripped ? st->lossless_slot : 0);
    if (!c.eligible) return c;
    if (collective_two_level_weighed(st, a, nonblocking)) c.eligible |= kEligibleTwoLevel;
    c.model = true;
    // Counted on the calls the selector decides, which every rank makes
    // alike, so that every rank applies a probe before the same decision.
    if (st->probe.pending) {
        if (++st->model_calls >= st->probe.due) c.failed = collective_settle_probe(st, true);
        else advance_probe(st);
    } else {
        ++st->model_calls;
    }
    bool changed = false;
    const bool debug = log_enabled(LogLevel::Debug);
    std::string why;
    // Only a blocking call reports its time (collective_run), so only such
    // a call may explore an option (Selector::choose).
    c.option = st->selector->choose(a.kind, c.bytes, c.eligible, &changed, debug ? &why : nullptr, &c.probe_mpi,
                                    !nonblocking);
    if (c.probe_mpi) c.probe_first_calls = st->selector->probe_runs_first_calls(a.kind, c.bytes, c.eligible);
    if ((changed || !why.empty()) && debug)
        TERSE_LOG_DEBUG("planner: communicator %s, %s of %zu bytes: %s", st->describe().c_str(),
                        coll_kind_name(a.kind), c.bytes, why.c_str());
    c.engine = c.option.engine;
    c.slot = c.engine ? size_t(c.option.codec) : 0;
    return c;
}

void collective_passed(CommState *st) {
    st->call_index++;
    st->stats.count_passed();
}

terse_coll_kind_t collective_stats_kind(CollKind kind, bool nonblocking) {
    int k = TERSE_KIND_ALLREDUCE;
    switch (kind) {
    case CollKind::Allreduce: k = TERSE_KIND_ALLREDUCE; break;
    case CollKind::ReduceScatterBlock: k = TERSE_KIND_REDUCE_SCATTER_BLOCK; break;
    case CollKind::ReduceScatter: k = TERSE_KIND_REDUCE_SCATTER; break;
    case CollKind::Allgather: k = TERSE_KIND_ALLGATHER; break;
    case CollKind::Allgatherv: k = TERSE_KIND_ALLGATHERV; break;
    }
    // The non-blocking kinds follow the blocking ones in the same order.
    return terse_coll_kind_t(nonblocking ? k + TERSE_KIND_IALLREDUCE : k);
}

Observation collective_call_observation(const CommState *st, Observation ob) {
    ob.seconds += st->selector->inputs().fixed;
    return ob;
}

void collective_passed_timed(CommState *st, const CollArgs &args, const CollectiveChoice &c, double seconds) {
    collective_passed(st);
    if (st->selector) st->selector->note_local_time(args.kind, c.bytes, c.eligible, seconds);
}

Status collective_probed(CommState *st, const CollArgs &args, const CollectiveChoice &c, double seconds) {
    collective_passed_timed(st, args, c, seconds);
    Status s = comm_state_ports(st);
    if (s != TERSE_OK) return s;
    // A probe that asks for a second one (Selector::kConfirmAbove) comes
    // on the next call, before this one's is due: this one first.
    if ((s = collective_settle_probe(st, true)) != TERSE_OK) return s;
    // Waiting here would add a round trip to the probed call (measured
    // over TCP: a 64 KiB call's 34 us became 54 us, and its successor
    // 48 us); left in flight, it is applied at the second decision from
    // now.  Over the link, not an MPI_Iallreduce: see link_agreement.h.
    // The probe takes a sequence number of its own, so that its messages
    // match nothing of the operations that run meanwhile; every rank probes
    // the same calls (the selector's choice), so the numbers stay aligned.
    CommState::PendingProbe &p = st->probe;
    p.seconds = seconds;
    p.kind = args.kind;
    p.bytes = c.bytes;
    p.eligible = c.eligible;
    p.first_calls = c.probe_first_calls;
    p.due = st->model_calls + Selector::kProbeLag;
    p.env = EngineEnv{};
    p.env.rank = st->rank;
    p.env.size = st->size;
    p.env.ctx_id = st->ctx_id;
    p.env.seq = st->seq++;
    p.env.link = st->link.get();
    p.outcome = TERSE_OK;
    s = p.agree.start(p.env, LinkMax::kProbe, &p.seconds, 1);
    p.pending = s == TERSE_OK;
    return s;
}

Status collective_settle_probe(CommState *st, bool apply) {
    CommState::PendingProbe &p = st->probe;
    if (!p.pending) return TERSE_OK;
    // Every rank settles at the same decision, before that call reaches
    // the MPI library, so a peer that has not sent its round yet is still
    // in an earlier call.  Progressing MPI meanwhile lets such a peer
    // finish that call should it need a send this rank has queued there.
    while (!advance_probe(st)) mpi_progress(st->comm);
    p.pending = false;
    if (p.outcome != TERSE_OK) return p.outcome;
    if (apply && st->selector) st->selector->observe_mpi(p.kind, p.bytes, p.eligible, p.seconds, p.first_calls);
    return TERSE_OK;
}

void collective_env(CommState *st, CodecInstance *codec, Control *control, EngineEnv *env) {
    env->rank = st->rank;
    env->size = st->size;
    env->ctx_id = st->ctx_id;
    env->seq = st->seq++;
    env->codec = codec;
    env->link = st->link.get();
    env->control = control ? control : st->control.get();
    env->memory = st->op_memory.get();
    env->set_comm_name(st->name);
}

namespace {
// The plan a call runs before a tuning file's entry: the model's schedule
// for the selector's choice, else the fixed planner's.  One place, so that
// the device codec path sizes its lane for the plan the operation runs.
Plan chosen_plan(const CommState *st, const EngineEnv &env, const CollArgs &args,
                 const CollectiveChoice &choice) {
    if (!choice.model) return engine_untuned_plan(env, st->config, args);
    return plan_schedule(st->config, st->selector->inputs().link, st->size, args,
                         env.codec->setup().max_chunk_count, choice.option.schedule);
}
}  // namespace

Status collective_plan(CommState *st, const CollArgs &args, const CollectiveChoice &choice, Plan *plan) {
    CodecInstance *ci = nullptr;
    Status s = comm_state_codec(st, choice.slot, args.dtype, &ci);
    if (s != TERSE_OK) return s;
    // What collective_start() gives a blocking call's plan, without its
    // side effects (sequence number, statistics).
    EngineEnv env;
    env.rank = st->rank;
    env.size = st->size;
    env.codec = ci;
    env.tuned = choice.model ? nullptr : comm_state_tuned(st, args.kind, call_bytes(st, args));
    env.two_level = st->node_layout ? st->node_layout->env() : nullptr;
    *plan = engine_tuned_plan(env, args, chosen_plan(st, env, args, choice));
    return TERSE_OK;
}

Status collective_start(CommState *st, const CollArgs &args, const CollectiveChoice &choice, Priority prio,
                        OpHandle *op, Observation *observed, bool nonblocking, Control *control,
                        DevicePort *device) {
    st->call_index++;
    capture_input(st, args);
    if (!st->ready)
        return set_error(TERSE_ERR_INVALID, "terse: communicator '%s' is not ready for the engine",
                         st->name.c_str());
    // The entry collective_choose() followed, if any; its plan overrides.
    const TuneEntry *tuned = choice.model ? nullptr : comm_state_tuned(st, args.kind, call_bytes(st, args));
    CodecInstance *ci = nullptr;
    Status s = comm_state_codec(st, choice.slot, args.dtype, &ci);
    if (s != TERSE_OK) return s;
    // The first intercepted collective on st (fixed planner) makes its
    // ports and memory pool, which live as long as st.
    s = comm_state_ports(st);
    if (s != TERSE_OK) return s;
    const CodecSlot &slot = st->codecs[choice.slot];
    EngineEnv env;
    collective_env(st, ci, control, &env);
    env.verify = st->config.verify;
    env.tuned = tuned;
    // A lossless slot has no error to feed back, and none runs after a trip.
    const bool feedback = slot.feedback && !st->guard.tripped;
    env.feedback = feedback;
    env.feedback_key = choice.feedback_key;
    // The guard holds each call to the bound of the codec it runs (with
    // codec=auto the planner may run several lossy slots).
    if (st->guard.every && !(slot.desc()->flags & TERSE_CODEC_FLAG_LOSSLESS)) {
        st->guard.desc = slot.desc();
        st->guard.params = slot.params->get();
    }
    env.guard = &st->guard;
    if (feedback) {
        if (!st->residuals) {
            try {
                st->residuals = std::make_unique<FeedbackStore>();
            } catch (const std::bad_alloc &) {
                return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory for error feedback");
            }
        }
        env.residuals = st->residuals.get();
    }
    // A non-blocking call runs the flat schedules: the two-level node stages
    // post MPI collectives on the node communicators, which the progress
    // thread may not do (terse(7), NON-BLOCKING CALLS).
    env.two_level = st->node_layout && !nonblocking ? st->node_layout->env() : nullptr;
    env.stats = &st->stats;
    env.stats_kind = collective_stats_kind(args.kind, nonblocking);
    env.device = device;
    st->stats.count_intercepted(call_bytes(st, args), env.stats_kind);
    if (choice.model) env.observed = observed;
    return engine_start_plan(env, args, chosen_plan(st, env, args, choice), prio, op);
}

Status collective_run(CommState *st, const CollArgs &args, const CollectiveChoice &choice, DevicePort *device) {
    OpHandle op;
    Observation ob;
    const double t0 = choice.model ? now_seconds() : 0;
    Status s = collective_start(st, args, choice, Priority::Normal, &op, choice.model ? &ob : nullptr, false,
                                nullptr, device);
    if (s != TERSE_OK) return s;
    s = engine_wait(op.get());
    if (choice.model && s == TERSE_OK) {
        st->selector->note_local_time(args.kind, choice.bytes, choice.eligible, now_seconds() - t0);
        st->selector->observe(args.kind, choice.bytes, choice.eligible, choice.option,
                              collective_call_observation(st, ob));
    }
    return s;
}

}  // namespace terse
