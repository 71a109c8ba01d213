// From a communicator's state to the engine's plain inputs.
#include "runtime/collective.h"

#include "capture/capture.h"
#include "engine/error_feedback.h"
#include "engine/planner.h"
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

bool collective_eligible(const CommState *st, const CollArgs &a) {
    if (!st) return false;
    const CodecParams *params = comm_state_active_params(st);
    const terse_codec_descriptor_t *desc = params ? params->plugin()->desc : nullptr;
    const auto &instances = st->guard.tripped ? st->lossless : st->codec;
    const bool instance = a.dtype > 0 && a.dtype < TERSE_DTYPE_MAX_ && instances[a.dtype];
    if (!engine_eligible(st->config, st->size, desc, instance, a)) return false;
    // A tuning file entry @mpi gives the call to the MPI library.
    const TuneEntry *tuned = comm_state_tuned(st, a.kind, call_bytes(st, a));
    return !(tuned && tuned->schedule == TuneSchedule::Mpi);
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

Status collective_start(CommState *st, const CollArgs &args, Priority prio, OpHandle *op, bool nonblocking,
                        Control *control) {
    st->call_index++;
    capture_input(st, args);
    if (!st->ready)
        return set_error(TERSE_ERR_INVALID, "terse: communicator '%s' is not ready for the engine", st->name.c_str());
    const TuneEntry *tuned = comm_state_tuned(st, args.kind, call_bytes(st, args));
    const bool lossless = tuned && tuned->codec == TuneCodec::None;
    CodecInstance *ci = nullptr;
    Status s = comm_state_codec(st, args.dtype, lossless, &ci);
    if (s != TERSE_OK) return s;
    EngineEnv env;
    env.rank = st->rank;
    env.size = st->size;
    env.ctx_id = st->ctx_id;
    env.seq = st->seq++;
    env.verify = st->config.verify;
    env.codec = ci;
    env.tuned = tuned;
    // A lossless call has no error to feed back.
    const bool feedback = st->feedback && !st->guard.tripped && !lossless;
    env.feedback = feedback;
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
    if (!st->op_memory) {
        // The first intercepted collective on st: its ports and memory pool
        // live as long as st.
        try {
            st->link = make_transport_link(&st->world_rank_of);
            st->control = make_mpi_control(st->comm);
            st->op_memory = std::make_unique<OpMemoryPool>();
        } catch (const std::bad_alloc &) {
            st->link.reset();
            st->control.reset();
            return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory starting a collective");
        }
    }
    env.link = st->link.get();
    env.control = control ? control : st->control.get();
    env.memory = st->op_memory.get();
    // A non-blocking call runs the flat schedules: the two-level node stages
    // post MPI collectives on the node communicators, which the progress
    // thread may not do (terse(7), NON-BLOCKING CALLS).
    env.two_level = st->node_layout && !nonblocking ? st->node_layout->env() : nullptr;
    env.stats = &st->stats;
    env.stats_kind = collective_stats_kind(args.kind, nonblocking);
    env.set_comm_name(st->name);
    st->stats.count_intercepted(call_bytes(st, args), env.stats_kind);
    return engine_start(env, st->config, args, prio, op);
}

Status collective_run(CommState *st, const CollArgs &args) {
    OpHandle op;
    Status s = collective_start(st, args, Priority::Normal, &op);
    if (s != TERSE_OK) return s;
    return engine_wait(op.get());
}

}  // namespace terse
