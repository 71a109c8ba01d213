// Per-communicator state: creation, configuration resolution, collective
// agreement and codec instantiation.  See comm_state.h for the life cycle.
#include "runtime/comm_state.h"

#include "engine/error_feedback.h"
#include "engine/selection.h"
#include "runtime/collective.h"
#include "runtime/cost_probe.h"
#include "runtime/engine_calibration.h"
#include "runtime/engine_ports.h"
#include "runtime/node_layout.h"
#include "runtime/nonblocking.h"
#include "runtime/runtime_internal.h"
#include "util/dtype.h"
#include "util/log.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>

namespace terse {

CommState::CommState(MPI_Comm c) { bind(c); }

CommState::CommState(const CommState &parent, inherit_tag)
    : info_overrides(parent.info_overrides), api_overrides(parent.api_overrides) {}

CommState::~CommState() {
    // A communicator freed with operations in flight: MPI lets them finish.
    if (nb) nb_drain(this);
    (void)collective_settle_probe(this, false);
    runtime_ctx_release(ctx_id);
}

void CommState::bind(MPI_Comm c) {
    comm = c;
    PMPI_Comm_rank(c, &rank);
    PMPI_Comm_size(c, &size);
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    is_inter = inter != 0;
    world_rank_of.assign(size, -1);
    if (!is_inter) {
        // Translate every comm rank to its MPI_COMM_WORLD rank once, so the
        // engine addresses transport endpoints without MPI calls.
        MPI_Group g, wg;
        PMPI_Comm_group(c, &g);
        PMPI_Comm_group(MPI_COMM_WORLD, &wg);
        std::vector<int> ranks(size);
        for (int i = 0; i < size; ++i) ranks[i] = i;
        PMPI_Group_translate_ranks(g, size, ranks.data(), wg, world_rank_of.data());
        PMPI_Group_free(&g);
        PMPI_Group_free(&wg);
    }
    char buf[MPI_MAX_OBJECT_NAME] = {0};
    int len = 0;
    PMPI_Comm_get_name(c, buf, &len);
    name.assign(buf, len);
    reresolve();
}

std::string CommState::describe() const {
    return (name.empty() ? std::string("(unnamed)") : "'" + name + "'") + " of size " + std::to_string(size);
}

void CommState::reresolve() {
    // Operations issued before the change run as they were issued.
    if (nb) nb_drain(this);
    ready = false;
    runtime_gate_note(this, SIZE_MAX);
    config_status = TERSE_OK;
    config_error.clear();
    CommConfig cfg = runtime_env_defaults();
    Status s = TERSE_OK;
    if (const ConfigFile *file = runtime_config_file()) s = file->apply(name, &cfg);
    if (s == TERSE_OK) s = config_apply_hint_overrides(info_overrides, &cfg);
    if (s == TERSE_OK) s = config_apply_overrides(api_overrides, &cfg);
    if (s != TERSE_OK) {
        // Reported at the next collective on this communicator, on every
        // rank, through the agreement step: a local error must not make
        // this rank take a different path than the others.
        config_status = s;
        config_error = last_error();
    }
    config = cfg;
}

namespace {

std::string bound_text(terse_bound_kind_t kind, double v) {
    char buf[48];
    snprintf(buf, sizeof buf, "%s:%g", kind == TERSE_BOUND_ABS ? "abs" : "rel", v);
    return buf;
}

// One codec slot: the parsed parameters and an instance for every datatype
// the codec supports.
Status add_slot(CommState *st, std::unique_ptr<CodecParams> params) {
    Registry &reg = Registry::instance();
    CodecSlot slot;
    slot.params = std::move(params);
    const terse_codec_descriptor_t *d = slot.desc();
    for (int dt = 1; dt < TERSE_DTYPE_MAX_; ++dt) {
        if (!(d->dtypes & TERSE_DTYPE_BIT(dt))) continue;
        size_t esize = dtype_size(static_cast<terse_dtype_t>(dt));
        terse_codec_setup_t setup{};
        setup.struct_size = sizeof setup;
        setup.dtype = static_cast<terse_dtype_t>(dt);
        setup.mem_kind = TERSE_MEM_HOST;
        setup.nranks = st->size;
        setup.max_chunk_count = (st->config.chunk_bytes + esize - 1) / esize;
        Status s = reg.create(*slot.params, setup, &slot.inst[dt]);
        if (s != TERSE_OK) return s;
    }
    if (d->flags & TERSE_CODEC_FLAG_LOSSLESS) slot.feedback = false;
    else if (st->config.feedback >= 0) slot.feedback = st->config.feedback == 1;
    else slot.feedback = slot.params->feedback_default();
    st->codecs.push_back(std::move(slot));
    return TERSE_OK;
}

// The lossless slot ("none") st may switch to or be told to run, added
// once for all who need it: the model planner, the error guard, a tuning
// file's codec=none; `who` names the one asking (in messages).
Status prepare_lossless(CommState *st, const char *who) {
    if (st->lossless_slot != CommState::kNoSlot) return TERSE_OK;
    CodecSpec none;
    none.name = "none";
    std::unique_ptr<CodecParams> params;
    Status s = Registry::instance().parse_params(none, &params);
    if (s == TERSE_OK) s = add_slot(st, std::move(params));
    if (s != TERSE_OK) {
        const std::string why = last_error();
        return set_error(s, "communicator %s: %s needs the lossless codec 'none': %s", st->describe().c_str(),
                         who, why.c_str());
    }
    st->lossless_slot = st->codecs.size() - 1;
    return TERSE_OK;
}

// The error guard of a lossy codec: it needs something to hold each lossy
// slot to, and the lossless slot to switch to, ready before the first call.
// The codec checked (guard.desc, guard.params) is set per call to the slot
// that runs it (runtime/collective.cc).
Status prepare_guard(CommState *st) {
    if (st->config.guard == 0) return TERSE_OK;
    bool lossy = false;
    for (const CodecSlot &c : st->codecs) {
        const terse_codec_descriptor_t *d = c.desc();
        if (d->flags & TERSE_CODEC_FLAG_LOSSLESS) continue;
        lossy = true;
        if (!GuardState::decidable(st->config.guard_budget, d, c.params->get(), st->size))
            return set_error(
                TERSE_ERR_INVALID,
                "communicator %s: guard=%u with codec '%s', which states no error bound, needs "
                "guard_budget (accepted: abs:<bound> or rel:<fraction>, e.g. TERSE_GUARD_BUDGET=rel:1e-3)",
                st->describe().c_str(), st->config.guard, d->name);
    }
    if (!lossy) return TERSE_OK;
    Status s = prepare_lossless(st, "the error guard");
    if (s != TERSE_OK) return s;
    st->guard.every = st->config.guard;
    st->guard.budget = st->config.guard_budget;
    st->guard.desc = st->codecs[0].desc();
    st->guard.params = st->codecs[0].params->get();
    return TERSE_OK;
}

// The tuning file: loaded, and checked against the codec it will run (an
// entry without codec=none runs slot 0, the configured codec).
Status prepare_tuning(CommState *st) {
    if (st->config.tune_file.empty()) return TERSE_OK;
    auto table = std::make_unique<TuneTable>();
    Status s = table->load(st->config.tune_file);
    if (s != TERSE_OK) return s;
    const terse_codec_descriptor_t *d = st->codecs[0].desc();
    for (const TuneEntry &e : table->entries()) {
        const bool flat = e.schedule == TuneSchedule::Ring || e.schedule == TuneSchedule::RecursiveDoubling;
        if (flat && e.codec == TuneCodec::Configured && e.coll == TuneColl::Allreduce &&
            d->mode == TERSE_REDUCE_GATHER)
            return set_error(TERSE_ERR_INVALID,
                             "tuning file %s:%d: @%s cannot run codec '%s', whose payloads cannot be summed "
                             "(accepted for it: @gather, @mpi, or codec=none)",
                             table->origin().c_str(), e.line, tune_schedule_name(e.schedule), d->name);
        if (e.codec == TuneCodec::None && (s = prepare_lossless(st, "the tuning file")) != TERSE_OK) return s;
    }
    st->tune = std::move(table);
    return TERSE_OK;
}

// Local half of comm_state_ready: parse the codecs the engine may run
// (the configured one, or auto's candidates that meet its budget, and the
// lossless slot for the model planner, the guard and the tuning file),
// create their instances, and load the tuning file.  Anything that can
// fail locally fails here, before the agreement, so that all ranks learn
// of it together.
Status prepare_codec(CommState *st) {
    // The device instances are made for these codecs' parameters: they go
    // with them (and the lane, made again at the next device call).
    st->device.reset();
    st->codecs.clear();
    st->lossless_slot = CommState::kNoSlot;
    st->guard = GuardState{};
    st->tune.reset();
    if (!st->config.enable) return TERSE_OK;
    Registry &reg = Registry::instance();
    const bool is_auto = codec_is_auto(st->config.codec);
    const AutoCodec au = is_auto ? auto_codec_of(st->config.codec) : AutoCodec{};
    const bool model = st->config.planner == PlannerMode::Model;
    std::vector<std::unique_ptr<CodecParams>> parsed;
    if (Status s = reg.parse_codecs(st->config.codec, &parsed); s != TERSE_OK) return s;
    for (std::unique_ptr<CodecParams> &params : parsed) {
        const bool lossless = params->plugin()->lossless();
        if (au.budget != AutoCodec::Budget::None && !lossless) {
            // Candidates whose bound on this many ranks exceeds the budget
            // are left out (auto's own grammar is checked by parse_codecs).
            double v = 0;
            const terse_bound_kind_t kind = params->stated_bound(st->size, &v);
            const terse_bound_kind_t want = au.budget == AutoCodec::Budget::Abs ? TERSE_BOUND_ABS
                                                                                : TERSE_BOUND_REL;
            if (kind != want || v > au.budget_value) {
                TERSE_LOG_INFO("codec=auto on communicator %s: candidate '%s' left out: its bound %s does "
                               "not meet budget %s",
                               st->describe().c_str(), params->canonical().c_str(), bound_text(kind, v).c_str(),
                               bound_text(want, au.budget_value).c_str());
                continue;
            }
        }
        if (Status s = add_slot(st, std::move(params)); s != TERSE_OK) return s;
        if (lossless && st->lossless_slot == CommState::kNoSlot) st->lossless_slot = st->codecs.size() - 1;
    }
    Status s = TERSE_OK;
    if (model || st->codecs.empty()) s = prepare_lossless(st, model ? "the model planner" : "codec=auto");
    if (s == TERSE_OK) s = prepare_guard(st);
    if (s == TERSE_OK) s = prepare_tuning(st);
    if (s != TERSE_OK) return s;
    bool feedback = false;
    for (const CodecSlot &c : st->codecs) feedback = feedback || c.feedback;
    if (feedback && !st->residuals) st->residuals = std::make_unique<FeedbackStore>();
    if (!feedback) st->residuals.reset();
    return TERSE_OK;
}

// The model's view of st's codecs.
std::vector<CodecModel> codec_models(const CommState *st) {
    std::vector<CodecModel> out;
    for (const CodecSlot &c : st->codecs) {
        const terse_codec_descriptor_t *d = c.desc();
        CodecModel m;
        m.name = c.params->canonical();
        m.identity = codec_is_identity(d);
        m.gather_only = d->mode == TERSE_REDUCE_GATHER;
        m.agreements = d->mode == TERSE_REDUCE_SUMMABLE ? 2 : 1;
        // Worst case until measured: what the codec may send for a large chunk.
        for (int dt = 1; dt < TERSE_DTYPE_MAX_ && !m.identity; ++dt) {
            const CodecInstance *ci = c.inst[dt].get();
            if (!ci) continue;
            const size_t n = std::min<size_t>(ci->setup().max_chunk_count, 1u << 16);
            const size_t raw = n * dtype_size(static_cast<terse_dtype_t>(dt));
            if (n && raw) m.prior_ratio = std::min(1.0, double(d->max_encoded_size(ci->get(), n)) / double(raw));
            break;
        }
        out.push_back(std::move(m));
    }
    return out;
}

// TERSE_PLANNER=model: measure st (collectively) and make its selector.
Status prepare_selector(CommState *st) {
    // The old selector's probe completes (every rank posted it), unused.
    if (Status s = collective_settle_probe(st, false); s != TERSE_OK) return s;
    st->selector.reset();
    st->model_calls = 0;
    if (!st->config.enable || st->config.planner != PlannerMode::Model || st->codecs.empty()) return TERSE_OK;
    // algorithm=two_level fixes the schedule (the MPI library inside each
    // node, terse between nodes); the model, which knows flat schedules
    // only, is not consulted for it (terse(7)).
    if (st->config.algorithm == Algorithm::TwoLevel) return TERSE_OK;
    CostInputs in;
    in.nranks = st->size;
    if (st->size > 1) {
        Status s = comm_state_ports(st);
        if (s == TERSE_OK) s = probe_costs(st, &in);
        if (s != TERSE_OK) return s;
    }
    try {
        st->selector = std::make_unique<Selector>(
            in, codec_models(st), schedules_for(st->config.algorithm, st->node_layout != nullptr));
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory for the planner of %s",
                         st->describe().c_str());
    }
    return TERSE_OK;
}

// Names the first setting that differs between rank 0 and the first rank
// whose configuration differs from it, the same text on every rank, so the
// error says what to fix.  Collective; runs only on the error path.
std::string describe_mismatch(CommState *st) {
    std::vector<uint64_t> hashes(st->size);
    uint64_t h = st->config.hash();
    PMPI_Allgather(&h, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, st->comm);
    int other = 1;
    while (other < st->size && hashes[other] == hashes[0]) ++other;
    if (other == st->size) return "configuration hashes differ";  // not reached: some rank differs
    auto bcast_text = [st](int root) {
        std::string text = st->config.canonical();
        int len = static_cast<int>(text.size());
        PMPI_Bcast(&len, 1, MPI_INT, root, st->comm);
        text.resize(len);
        PMPI_Bcast(text.data(), len, MPI_CHAR, root, st->comm);
        return text;
    };
    std::string a = bcast_text(0), b = bcast_text(other);
    // Compare word by word ("key=value" separated by spaces).
    size_t pa = 0, pb = 0;
    while (pa < a.size() || pb < b.size()) {
        size_t ea = a.find(' ', pa), eb = b.find(' ', pb);
        std::string wa = a.substr(pa, ea == std::string::npos ? std::string::npos : ea - pa);
        std::string wb = b.substr(pb, eb == std::string::npos ? std::string::npos : eb - pb);
        if (wa != wb) return "rank 0 has '" + wa + "' but rank " + std::to_string(other) + " has '" + wb + "'";
        if (ea == std::string::npos || eb == std::string::npos) break;
        pa = ea + 1;
        pb = eb + 1;
    }
    return "rank 0 has '" + a + "' but rank " + std::to_string(other) + " has '" + b + "'";
}

// Pick the lowest id free on every member (used = OR of the members' masks),
// claim it, and confirm collectively; retry with fresh masks if a concurrent
// context creation on some member took the id first.
Status agree_ctx_id(CommState *st, const uint64_t *used) {
    std::vector<uint64_t> mask(used, used + kCtxMaskWords);
    for (;;) {
        uint32_t id = 0;
        for (size_t w = 0; w < kCtxMaskWords && id == 0; ++w)
            if (~mask[w]) id = static_cast<uint32_t>(w * 64 + __builtin_ctzll(~mask[w]));
        if (id == 0)
            return set_error(TERSE_ERR_NO_MEMORY,
                             "communicator %s: all %u terse context ids are in use on some rank "
                             "(free communicators that are no longer needed)",
                             st->describe().c_str(), kCtxIdCount);
        int lost = runtime_ctx_claim(id) ? 0 : 1, any_lost = 0;
        if (PMPI_Allreduce(&lost, &any_lost, 1, MPI_INT, MPI_MAX, st->comm) != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "context id agreement on %s failed", st->describe().c_str());
        if (!any_lost) {
            st->ctx_id = id;
            return TERSE_OK;
        }
        if (!lost) runtime_ctx_release(id);
        runtime_ctx_used(mask.data());
        if (PMPI_Allreduce(MPI_IN_PLACE, mask.data(), static_cast<int>(kCtxMaskWords), MPI_UINT64_T, MPI_BOR,
                           st->comm) != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "context id agreement on %s failed", st->describe().c_str());
    }
}

}  // namespace

Status comm_state_ready(CommState *st) {
    Status local = st->config_status;
    std::string local_msg = st->config_error;
    if (local == TERSE_OK) {
        local = prepare_codec(st);
        if (local != TERSE_OK) local_msg = last_error();
    }
    // One small collective decides for everyone.  With MPI_BOR over
    // {h, ~h}: all hashes are equal iff the two ORs share no bit.  The same
    // call carries the local error flag and, for a new context, the masks of
    // context ids in use.
    // The tuning file's entries agree the same way: the same path may hold
    // different files on different nodes.
    uint64_t h = st->config.hash();
    const uint64_t th = st->tune ? st->tune->hash() : 0;
    std::vector<uint64_t> in(5 + kCtxMaskWords, 0), out(in.size());
    in[0] = h;
    in[1] = ~h;
    in[2] = local != TERSE_OK ? 1u : 0u;
    in[3] = th;
    in[4] = ~th;
    bool need_id = st->ctx_id == 0;
    if (need_id) runtime_ctx_used(&in[5]);
    int n = need_id ? static_cast<int>(in.size()) : 5;
    if (PMPI_Allreduce(in.data(), out.data(), n, MPI_UINT64_T, MPI_BOR, st->comm) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "agreement on communicator %s failed in PMPI_Allreduce",
                         st->describe().c_str());
    if (out[2] != 0) {
        if (local != TERSE_OK) return set_error(local, "%s", local_msg.c_str());
        return set_error(TERSE_ERR_REMOTE,
                         "communicator %s: another rank has an invalid terse configuration "
                         "(see its message)",
                         st->describe().c_str());
    }
    if ((out[0] & out[1]) != 0) {
        std::string why = describe_mismatch(st);
        return set_error(TERSE_ERR_MISMATCH, "ranks of communicator %s disagree on its terse configuration: %s",
                         st->describe().c_str(), why.c_str());
    }
    if ((out[3] & out[4]) != 0)
        return set_error(TERSE_ERR_MISMATCH,
                         "ranks of communicator %s disagree on the tuning file %s: its entries differ between "
                         "ranks (give every rank the same file)",
                         st->describe().c_str(), st->config.tune_file.c_str());
    if (need_id) {
        Status s = agree_ctx_id(st, &out[5]);
        if (s != TERSE_OK) return s;
    }
    // The configuration is agreed, so every rank takes this branch alike.
    // A layout for algorithm=two_level, and for the model planner to weigh
    // the two-level schedule against the flat ones (algorithm=auto), where
    // it can pay: several nodes with several ranks each.
    const bool fixed_two_level = st->config.algorithm == Algorithm::TwoLevel;
    const bool weighed = st->config.algorithm == Algorithm::Auto && st->config.planner == PlannerMode::Model &&
                         st->size > 2 && !st->codecs.empty();
    if (st->config.enable && (fixed_two_level || weighed)) {
        if (!st->node_layout) {
            Status s = NodeLayout::make(st->comm, runtime_global().node_key, st->describe(), !fixed_two_level,
                                        &st->node_layout);
            if (s != TERSE_OK) return s;
            if (st->node_layout)
                TERSE_LOG_DEBUG("communicator '%s': %s", st->name.c_str(), st->node_layout->describe().c_str());
            else
                TERSE_LOG_DEBUG("communicator '%s': one node, or nodes of one rank: no two-level layout",
                                st->name.c_str());
        }
        // Every rank takes the same branch (the layout's answers are agreed).
        const TwoLevelEnv *tl = st->node_layout ? st->node_layout->env() : nullptr;
        if (tl && !fixed_two_level && (tl->nodes < 2 || tl->shards < 2)) st->node_layout.reset();
        else if (tl) st->node_layout->set_config(st->config);
    } else {
        st->node_layout.reset();
    }
    if (Status s = prepare_selector(st); s != TERSE_OK) return s;
    st->seq = 0;
    if (Status s = calibrate_engine(st); s != TERSE_OK) return s;
    st->ready = true;
    runtime_gate_note(st, st->config.enable ? st->config.min_bytes : SIZE_MAX);
    TERSE_LOG_DEBUG("communicator '%s' (size %d) ready: ctx %" PRIu32 ", %s", st->name.c_str(), st->size,
                    st->ctx_id, st->config.canonical().c_str());
    return TERSE_OK;
}

const CodecParams *comm_state_active_params(const CommState *st) {
    if (st->codecs.empty()) return nullptr;
    if (st->guard.tripped && st->lossless_slot != CommState::kNoSlot)
        return st->codecs[st->lossless_slot].params.get();
    return st->codecs[0].params.get();
}

const TuneEntry *comm_state_tuned(const CommState *st, CollKind kind, size_t bytes) {
    if (!st->tune) return nullptr;
    const TuneColl c = kind == CollKind::Allreduce ? TuneColl::Allreduce
                       : coll_gathers(kind)        ? TuneColl::Allgather
                                                   : TuneColl::ReduceScatter;
    return st->tune->lookup(c, st->size, bytes);
}

Status comm_state_codec(CommState *st, size_t slot, terse_dtype_t dtype, CodecInstance **out) {
    *out = nullptr;
    if (slot >= st->codecs.size() || dtype <= 0 || dtype >= TERSE_DTYPE_MAX_ || !st->codecs[slot].inst[dtype])
        return set_error(TERSE_ERR_UNSUPPORTED, "codec '%s' has no instance for datatype %d",
                         slot < st->codecs.size() ? st->codecs[slot].params->canonical().c_str()
                                                  : st->config.codec.name.c_str(),
                         static_cast<int>(dtype));
    *out = st->codecs[slot].inst[dtype].get();
    return TERSE_OK;
}

Status comm_state_ports(CommState *st) {
    if (st->op_memory) return TERSE_OK;
    try {
        st->link = make_transport_link(&st->world_rank_of);
        st->control = make_mpi_control(st->comm);
        st->op_memory = std::make_unique<OpMemoryPool>();
    } catch (const std::bad_alloc &) {
        st->link.reset();
        st->control.reset();
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory starting a collective");
    }
    return TERSE_OK;
}

std::string comm_state_planner_summary(const CommState *st, const char *indent) {
    return st->selector ? st->selector->summary(indent) : std::string();
}

}  // namespace terse
