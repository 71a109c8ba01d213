// Per-communicator state, kept as an MPI attribute on the communicator so
// that MPI_Comm_free and MPI_Finalize release it (one owner: the attribute;
// one release path: its delete callback).
//
// Life cycle:
//  - A call below the job's pass-through floor, or of a datatype, operation
//    or count terse never takes, goes to PMPI without any look at its
//    communicator (runtime/pass_through.h): no state is made for it.
//  - comm_state_get() returns the state, creating the light part on first
//    use (local: rank, size, world ranks, name, locally resolved config);
//    comm_state_find() looks it up without a lock (runtime/comm_table.h).
//  - comm_state_ready() is collective and runs in the first intercepted
//    collective on the communicator at or above the floor, on every rank
//    (the floor is agreed at MPI_Init, so every rank makes the same
//    choice; that first call agrees whatever its own configuration says, so
//    that a rank whose configuration differs gets an error instead of taking
//    a different path): the ranks check that their configurations hash
//    equal, agree on a context id, and instantiate the codec.  It runs again
//    after MPI_Comm_set_info or terse_comm_configure() invalidated the
//    state.  Until a communicator is ready, its calls below the floor pass
//    whatever its own min_bytes: a min_bytes below the floor (from a hint or
//    terse_comm_configure()) applies from its first agreement on.
#pragma once

#include "config/config.h"
#include "config/tune_file.h"
#include "codec/registry.h"
#include "engine/coll_args.h"
#include "engine/feedback_key.h"
#include "engine/guard.h"
#include "engine/link_agreement.h"
#include "engine/op_memory.h"
#include "engine/ports.h"
#include "engine/stats.h"
#include "runtime/device_codecs.h"
#include "util/status.h"

#include <mpi.h>
#include <terse/codec.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace terse {

class FeedbackStore;  // error_feedback.h
class Selector;       // engine/selection.h
class NodeLayout;     // node_layout.h
struct NbQueue;       // runtime/nonblocking.h

// One codec the engine may run on a communicator: its parameters and an
// instance for each datatype it supports (created at agreement, the same
// on every rank), and whether error feedback is on for it.
struct CodecSlot {
    std::unique_ptr<CodecParams> params;
    std::array<std::unique_ptr<CodecInstance>, TERSE_DTYPE_MAX_> inst;
    bool feedback = false;
    const terse_codec_descriptor_t *desc() const { return params ? params->plugin()->desc : nullptr; }
};

// Cache-line aligned: the counters of two communicators used by two
// threads must not share a line.
class alignas(64) CommState {
public:
    explicit CommState(MPI_Comm comm);
    // An unbound copy for MPI_Comm_dup's attribute copy callback: inherits
    // the info and terse_comm_configure() settings; bound to the new
    // communicator on first lookup (the callback is not told its handle).
    struct inherit_tag {};
    CommState(const CommState &parent, inherit_tag);
    ~CommState();
    CommState(const CommState &) = delete;
    CommState &operator=(const CommState &) = delete;

    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
    std::vector<int> world_rank_of;  // comm rank -> MPI_COMM_WORLD rank
    std::string name;                // MPI_Comm_get_name at creation / set_name
    bool is_inter = false;           // intercommunicators always pass through

    ConfigOverrides info_overrides;   // terse_* keys from MPI_Comm_set_info / dup_with_info
    ConfigOverrides api_overrides;    // terse_comm_configure()
    CommConfig config;                // resolved locally from all sources
    Status config_status = TERSE_OK;  // a local config error is reported at the next collective
    std::string config_error;

    bool ready = false;            // agreed and instantiated
    size_t gate_bytes = SIZE_MAX;  // agreed min_bytes lent to the pass-through gate (runtime's lock)
    uint32_t ctx_id = 0;           // agreed, unique among live contexts
    uint32_t seq = 0;              // per-operation sequence (tag field)
    // The codecs the engine may run: [0] the configured codec (auto: its
    // first candidate that meets the budget), then auto's other candidates,
    // then the lossless identity when the model planner, the error guard or
    // a tuning file's codec=none may need it and none of those is lossless.
    // Fixed planner: [0] runs, or the lossless slot where the guard tripped
    // or a tuning entry says codec=none.
    std::vector<CodecSlot> codecs;
    static constexpr size_t kNoSlot = SIZE_MAX;
    size_t lossless_slot = kNoSlot;            // index of a lossless slot in codecs, or kNoSlot
    std::unique_ptr<FeedbackStore> residuals;  // shared by the lossy slots
    FeedbackKeyer feedback_keys;               // each call's residual key (feedback_key=)
    // TERSE_PLANNER=model: the measured model and each size class's choice
    // (engine/selection.h), made at agreement; null with the fixed planner
    // and with algorithm=two_level (whose schedule is fixed).
    std::unique_ptr<Selector> selector;
    uint64_t model_calls = 0;  // calls the selector decided (collective_choose)
    // The planner's last probe of the MPI library (collective_probed): its
    // time agreed over the link (engine/link_agreement.h), left in flight,
    // moved on by the decisions between, and given to the selector at the
    // model's second decision after it, so that its rounds overlap the
    // calls between instead of a call waiting for them (collective.cc).
    // Settled before the selector goes.
    struct PendingProbe {
        bool pending = false;       // from the probe until it is settled
        EngineEnv env;              // the agreement's link, ranks and sequence number
        LinkMax agree;              // active while its rounds are in flight
        Status outcome = TERSE_OK;  // the agreement's, once it ended
        double seconds = 0;
        CollKind kind = CollKind::Allreduce;
        size_t bytes = 0;
        uint32_t eligible = 0;
        bool first_calls = false;  // Selector::observe_mpi()'s
        uint64_t due = 0;          // the model_calls count that applies it
    } probe;
    GuardState guard;                 // guard=: reset at each agreement
    std::unique_ptr<TuneTable> tune;  // tune_file's entries, loaded at agreement (null: none)

    Stats stats;
    // Intercepted + passed, for capture sampling; atomic because a queued
    // non-blocking call starts (and counts) on the progress thread.
    std::atomic<uint64_t> call_index{0};

    // What the engine's operations on this communicator use, made at the
    // first intercepted collective and kept (runtime/collective.cc): the
    // ports to the transport and to PMPI, and the operations' memory.
    std::unique_ptr<Link> link;
    std::unique_ptr<Control> control;
    std::unique_ptr<OpMemoryPool> op_memory;
    // algorithm=two_level: the nodes and the node and rail communicators,
    // made by comm_state_ready() (collective) and kept while the agreed
    // configuration asks for it.
    std::unique_ptr<NodeLayout> node_layout;
    // Its non-blocking operations, made at the first one
    // (runtime/nonblocking.h); drained before the state goes.
    std::unique_ptr<NbQueue> nb;
    // Its lane and device instances for calls on device buffers, made at
    // the first one the device codec path serves (runtime/device_codecs.h).
    std::unique_ptr<DeviceCodecs, DeviceCodecsDeleter> device;

    // Attach to comm: ranks, world ranks, name, then reresolve().
    void bind(MPI_Comm comm);
    bool bound() const { return comm != MPI_COMM_NULL; }
    // "'name' of size N" (or "(unnamed) of size N") for messages.
    std::string describe() const;
    // Re-resolve config from the process defaults, file, info and api layers;
    // marks the state not ready.
    void reresolve();
};

// Process-wide initialisation from MPI_Init/MPI_Init_thread (after PMPI_Init).
Status runtime_init(int provided_thread_level);
// From MPI_Finalize (before PMPI_Finalize): prints statistics, frees states
// of MPI_COMM_WORLD/SELF, closes the transport.
void runtime_finalize();
bool runtime_active();
const GlobalConfig &runtime_global();

// Lookup-or-create; nullptr with status on failure.  Not collective.
CommState *comm_state_get(MPI_Comm comm, Status *status);
// Lookup only; nullptr if none (possibly an unbound copy: see bound()).
// Takes no lock once the state is bound and cached.
CommState *comm_state_find(MPI_Comm comm);
// Collective agreement + instantiation (see above).  On disagreement every
// rank gets TERSE_ERR_MISMATCH with a message naming the differing setting.
Status comm_state_ready(CommState *st);
// The instance for dtype (made at agreement) of codec slot `slot`; an
// error if it has none.
Status comm_state_codec(CommState *st, size_t slot, terse_dtype_t dtype, CodecInstance **out);
// The engine's ports and operation memory (link, control, op_memory),
// made once and kept as long as st.
Status comm_state_ports(CommState *st);
// The planner's summary of st for TERSE_STATS (empty without one).
std::string comm_state_planner_summary(const CommState *st, const char *indent);
// The tuning file's entry for this call on st, or nullptr.
const TuneEntry *comm_state_tuned(const CommState *st, CollKind kind, size_t bytes);
// The codec st's calls run with now: the configured one (slot 0), or the
// lossless slot's once the error guard switched st (the same on every rank).
const CodecParams *comm_state_active_params(const CommState *st);

}  // namespace terse
