// Process-wide runtime: configuration read once at MPI_Init, the transport,
// the attribute keyval that owns every CommState, the lock-free table that
// finds it again, the pass-through floor, and statistics output at
// MPI_Finalize.  Nothing here runs on the hot path except the table lookup
// in comm_state_find().
#include "runtime/comm_state.h"
#include "capture/capture.h"
#include "device/mem_kind.h"
#include "device/staged_call.h"
#include "engine/message_tag.h"
#include "util/log.h"
#include "util/scratch.h"
#include "runtime/comm_table.h"
#include "runtime/nonblocking.h"
#include "runtime/pass_through.h"
#include "runtime/runtime_internal.h"
#include "runtime/transport_mpi.h"
#include "transport/ucx_transport.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace terse {

namespace {

struct RetiredStats {
    std::string name;
    int rank = 0, size = 0;
    Stats stats;
    std::string planner;  // comm_state_planner_summary
};

struct Runtime {
    std::atomic<bool> active{false};
    GlobalConfig global;
    CommConfig env_defaults;
    ConfigFile file;
    bool has_file = false;
    int keyval = MPI_KEYVAL_INVALID;
    std::optional<MpiOob> oob;               // the transport's, over MPI_COMM_WORLD; outlives it
    std::mutex ctx_mu;                       // guards ctx_used; taken at context creation only
    uint64_t ctx_used[kCtxMaskWords] = {1};  // id 0 reserved

    std::mutex mu;  // guards the lists below and every CommState::gate_bytes;
                    // taken at comm create/free and agreement only
    std::vector<CommState *> live;
    std::vector<RetiredStats> retired;

    CommTable table;  // handle -> bound state, read without a lock
};

Runtime g_rt;

void track(CommState *st) {
    std::lock_guard<std::mutex> lk(g_rt.mu);
    g_rt.live.push_back(st);
}

// The pass-through gate (pass_through.h): the floor, or the lowest agreed
// min_bytes of a live ready state below it.  Under g_rt.mu.
void update_gate_locked() {
    size_t gate = pass_floor();
    for (const CommState *st : g_rt.live) gate = std::min(gate, st->gate_bytes);
    pass_set_gate(gate);
}

// Whether TERSE_STATS prints the line of this rank of a communicator.
bool prints_stats_line(int rank) {
    int which = g_rt.global.stats;
    return which != 0 && (which != 1 || rank == 0);
}

void retire(CommState *st) {
    std::lock_guard<std::mutex> lk(g_rt.mu);
    g_rt.live.erase(std::remove(g_rt.live.begin(), g_rt.live.end(), st), g_rt.live.end());
    // Only lines that will be printed are kept: a program that creates and
    // frees communicators in a loop holds memory flat unless it asked for
    // their statistics.
    if (st->bound() && st->stats.any_calls() && prints_stats_line(st->rank))
        g_rt.retired.push_back(
            {st->name, st->rank, st->size, st->stats, comm_state_planner_summary(st, "  planner: ")});
    if (st->gate_bytes != SIZE_MAX && runtime_active()) update_gate_locked();
}

// MPI_Comm_dup copies the settings a user gave the parent (MPI copies info
// hints on dup); the copy is bound lazily in comm_state_get().
int copy_attr(MPI_Comm, int, void *, void *in, void *out, int *flag) {
    auto *parent = static_cast<CommState *>(in);
    CommState *child = new (std::nothrow) CommState(*parent, CommState::inherit_tag{});
    if (!child) {
        *flag = 0;
        return MPI_ERR_NO_MEM;
    }
    track(child);
    *static_cast<void **>(out) = child;
    *flag = 1;
    return MPI_SUCCESS;
}

int delete_attr(MPI_Comm comm, int, void *val, void *) {
    auto *st = static_cast<CommState *>(val);
    // Before the handle can be reused by a new communicator.
    g_rt.table.erase(comm, st);
    retire(st);
    delete st;
    // Scratch memory cached for this communicator's collectives on this
    // thread goes back to the system with it.
    scratch_release_cache();
    return MPI_SUCCESS;
}

// planner: the model planner's lines, one per size class (may be empty).
void print_stats_line(const std::string &name, int rank, int size, const Stats &s, const std::string &planner) {
    if (!prints_stats_line(rank)) return;
    fprintf(stderr, "terse stats: comm=%s size=%d rank=%d %s\n%s", name.empty() ? "(unnamed)" : name.c_str(),
            size, rank, s.format().c_str(), planner.c_str());
}

// Calls that never reached a communicator's statistics (pass_through.h),
// and, in a process with a CUDA driver, the calls in device memory that
// went to the MPI library as they were (device/mem_kind.h) and those
// staged through host memory, with the bytes copied (device/staged_call.h).
void print_process_line(int world_rank, size_t floor) {
    if (!prints_stats_line(world_rank)) return;
    char device[128] = "";
    if (device::driver_loaded())
        snprintf(device, sizeof device, " device_passed=%llu device_staged=%llu device_staged_bytes=%llu",
                 static_cast<unsigned long long>(device::device_calls_passed()),
                 static_cast<unsigned long long>(device::device_calls_staged()),
                 static_cast<unsigned long long>(device::device_bytes_staged()));
    const std::string codecs = device::driver_loaded() ? device_codecs_stats() : std::string();
    fprintf(stderr, "terse stats: process rank=%d floor=%zu passed_straight=%llu%s%s\n", world_rank, floor,
            static_cast<unsigned long long>(straight_passes()), device, codecs.c_str());
}

// The smallest min_bytes any communicator can get from the environment and
// the config file on this rank: every section is tried on top of the
// environment's defaults (a section without min_bytes keeps that value).
size_t local_floor() {
    size_t floor = g_rt.env_defaults.min_bytes;
    if (!g_rt.has_file) return floor;
    for (size_t i = 0; i < g_rt.file.section_count(); ++i) {
        CommConfig cfg = g_rt.env_defaults;
        // The file was checked when it was read; a section that fails now
        // anyway must not raise the floor.
        if (g_rt.file.apply_section(i, &cfg) != TERSE_OK) return 0;
        floor = std::min(floor, cfg.min_bytes);
    }
    return floor;
}

LogLevel parse_level(const std::string &s) {
    if (s == "error") return LogLevel::Error;
    if (s == "info") return LogLevel::Info;
    if (s == "debug") return LogLevel::Debug;
    return LogLevel::Warn;
}

}  // namespace

const CommConfig &runtime_env_defaults() { return g_rt.env_defaults; }
const ConfigFile *runtime_config_file() { return g_rt.has_file ? &g_rt.file : nullptr; }
void runtime_ctx_used(uint64_t mask[kCtxMaskWords]) {
    std::lock_guard<std::mutex> lk(g_rt.ctx_mu);
    std::copy(std::begin(g_rt.ctx_used), std::end(g_rt.ctx_used), mask);
}

bool runtime_ctx_claim(uint32_t id) {
    std::lock_guard<std::mutex> lk(g_rt.ctx_mu);
    uint64_t bit = uint64_t(1) << (id % 64);
    if (id == 0 || id >= kCtxIdCount || (g_rt.ctx_used[id / 64] & bit)) return false;
    g_rt.ctx_used[id / 64] |= bit;
    return true;
}

void runtime_ctx_release(uint32_t id) {
    if (id == 0 || id >= kCtxIdCount) return;
    std::lock_guard<std::mutex> lk(g_rt.ctx_mu);
    g_rt.ctx_used[id / 64] &= ~(uint64_t(1) << (id % 64));
}

void runtime_gate_note(CommState *st, size_t agreed_min_bytes) {
    // Written only by the thread that owns the communicator's collectives,
    // so this unlocked read sees its own last write.
    if (st->gate_bytes == agreed_min_bytes) return;
    std::lock_guard<std::mutex> lk(g_rt.mu);
    st->gate_bytes = agreed_min_bytes;
    if (runtime_active()) update_gate_locked();
}

bool runtime_active() { return g_rt.active.load(std::memory_order_acquire); }
const GlobalConfig &runtime_global() { return g_rt.global; }

Status runtime_init(int provided) {
    int wrank = 0, wsize = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    PMPI_Comm_size(MPI_COMM_WORLD, &wsize);
    log_set_rank(wrank);
    Status s = config_read_environment(&g_rt.global, &g_rt.env_defaults);
    if (s != TERSE_OK) return s;
    log_set_level(parse_level(g_rt.global.log_level));
    if (!g_rt.global.config_file.empty()) {
        s = g_rt.file.load(g_rt.global.config_file);
        if (s != TERSE_OK) return s;
        g_rt.has_file = true;
    }
    Registry::instance().set_search_path(g_rt.global.plugin_path);
    // Check the default codec now so a typo fails at start-up with its
    // message, not at the first large allreduce.
    if (g_rt.env_defaults.enable) {
        std::vector<std::unique_ptr<CodecParams>> p;
        s = Registry::instance().parse_codecs(g_rt.env_defaults.codec, &p);
        if (s != TERSE_OK) return s;
    }
    s = capture_open(g_rt.global, wrank, wsize);
    if (s != TERSE_OK) return s;
    g_rt.oob.emplace(MPI_COMM_WORLD);
    TransportParams tp;
    tp.oob = &*g_rt.oob;
    tp.thread_multiple = provided == MPI_THREAD_MULTIPLE;
    s = node_cores_oversubscribed(&tp.cores_oversubscribed);
    if (s != TERSE_OK) return s;
    tp.describe_tag = describe_tag;
    s = Transport::init(tp);
    if (s != TERSE_OK) return s;
    if (PMPI_Comm_create_keyval(copy_attr, delete_attr, &g_rt.keyval, nullptr) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "MPI_Comm_create_keyval failed");
    // The pass-through floor, the same on every rank (pass_through.h).
    uint64_t floor = local_floor();
    if (PMPI_Allreduce(MPI_IN_PLACE, &floor, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "agreement on the pass-through floor failed in PMPI_Allreduce");
    g_rt.active.store(true, std::memory_order_release);
    pass_open(static_cast<size_t>(floor));
    TERSE_LOG_INFO("initialised: defaults %s", g_rt.env_defaults.canonical().c_str());
    return TERSE_OK;
}

void runtime_finalize() {
    if (!runtime_active()) return;
    // Operations still in flight complete first (they need the states and
    // the transport).
    nb_finalize();
    // Pinned memory goes while the application's CUDA contexts still exist.
    device::staging_release_idle();
    if (!g_rt.active.exchange(false)) return;
    const size_t floor = pass_floor();
    pass_close();
    // Free the states of communicators still alive (the user need not free
    // them; MPI_COMM_WORLD and MPI_COMM_SELF never are): deleting the
    // attribute runs the one release path, delete_attr().
    std::vector<std::pair<MPI_Comm, bool>> comms;
    {
        std::lock_guard<std::mutex> lk(g_rt.mu);
        for (CommState *st : g_rt.live) comms.push_back({st->comm, st->bound()});
    }
    for (auto &[c, bound] : comms)
        if (bound) PMPI_Comm_delete_attr(c, g_rt.keyval);
    {
        // Unbound copies belong to communicators never used by terse.
        std::lock_guard<std::mutex> lk(g_rt.mu);
        for (CommState *st : g_rt.live) delete st;
        g_rt.live.clear();
    }
    g_rt.table.clear();
    for (const auto &r : g_rt.retired) print_stats_line(r.name, r.rank, r.size, r.stats, r.planner);
    g_rt.retired.clear();
    int wrank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    print_process_line(wrank, floor);
    PMPI_Comm_free_keyval(&g_rt.keyval);
    capture_close();
    if (g_rt.oob) g_rt.oob->progress_while_waiting();
    Transport::finalize();
    g_rt.oob.reset();
}

CommState *comm_state_find(MPI_Comm comm) {
    if (!runtime_active() || comm == MPI_COMM_NULL) return nullptr;
    if (CommState *st = g_rt.table.find(comm)) return st;
    void *val = nullptr;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, g_rt.keyval, &val, &flag) != MPI_SUCCESS || !flag) return nullptr;
    auto *st = static_cast<CommState *>(val);
    // Unbound copies are entered once comm_state_get() binds them.
    if (st->bound()) g_rt.table.insert(comm, st);
    return st;
}

CommState *comm_state_get(MPI_Comm comm, Status *status) {
    if (!runtime_active()) {
        *status = set_error(TERSE_ERR_NOT_INITIALIZED, "terse is not initialised (MPI_Init not intercepted)");
        return nullptr;
    }
    if (comm == MPI_COMM_NULL) {
        *status = set_error(TERSE_ERR_INVALID, "MPI_COMM_NULL given");
        return nullptr;
    }
    CommState *st = comm_state_find(comm);
    if (st) {
        if (!st->bound()) {
            st->bind(comm);
            g_rt.table.insert(comm, st);
        }
        *status = TERSE_OK;
        return st;
    }
    st = new (std::nothrow) CommState(comm);
    if (!st) {
        *status = set_error(TERSE_ERR_NO_MEMORY, "out of memory creating communicator state");
        return nullptr;
    }
    if (PMPI_Comm_set_attr(comm, g_rt.keyval, st) != MPI_SUCCESS) {
        delete st;
        *status = set_error(TERSE_ERR_MPI, "MPI_Comm_set_attr failed");
        return nullptr;
    }
    track(st);
    g_rt.table.insert(comm, st);
    *status = TERSE_OK;
    return st;
}

}  // namespace terse
