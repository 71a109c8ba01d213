// The engine's entry points: building operations, waiting,
// and the background progress list.
#include "engine/engine.h"

#include "engine/op_base.h"
#include "engine/op_memory.h"
#include "engine/error_feedback.h"
#include "engine/ports.h"
#include "engine/planner.h"
#include "engine/tune_plan.h"
#include "engine/reduce_kernels.h"
#include "transport/ucx_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <sched.h>
#include <string>
#include <new>
#include <vector>

namespace terse {

// ---------------------------------------------------------------- Operation

Status Operation::advance(bool *done) {
    if (finished_.load(std::memory_order_acquire)) {
        *done = true;
        return final_ == TERSE_OK ? TERSE_OK : set_error(final_, "%s", final_msg_.c_str());
    }
    if (busy_.exchange(true, std::memory_order_acquire)) {
        *done = false;
        return TERSE_OK;
    }
    Status s = progress(done);
    if (*done) {
        final_ = s;
        if (s != TERSE_OK) final_msg_ = last_error();
        finished_.store(true, std::memory_order_release);
    }
    busy_.store(false, std::memory_order_release);
    return s;
}

// ---------------------------------------------------------------- test hook

namespace {
std::atomic<int> g_corrupt{0};
}  // namespace

void g_corrupt_store(int count) { g_corrupt.store(count, std::memory_order_relaxed); }

bool engine_take_corruption() {
    if (__builtin_expect(g_corrupt.load(std::memory_order_relaxed) <= 0, 1)) return false;
    return g_corrupt.fetch_sub(1, std::memory_order_relaxed) > 0;
}

namespace {
// where | which << 8, 0 when nothing is armed.
std::atomic<unsigned> g_inject{0};
}  // namespace

Injection engine_take_injection() {
    Injection in;
    if (__builtin_expect(g_inject.load(std::memory_order_relaxed) == 0, 1)) return in;
    unsigned v = g_inject.exchange(0, std::memory_order_relaxed);
    in.where = static_cast<Injection::Where>(v & 0xFFu);
    in.which = static_cast<Injection::Which>(v >> 8);
    return in;
}

void engine_put_injection(const Injection &in) {
    const unsigned v = in.where == Injection::None ? 0u : unsigned(in.where) | unsigned(in.which) << 8;
    g_inject.store(v, std::memory_order_relaxed);
}

namespace {
int arm_injection(const char *spec) {
    if (!spec || !*spec) {
        g_inject.store(0, std::memory_order_relaxed);
        return 0;
    }
    const std::string s = spec;
    const size_t colon = s.find(':');
    const std::string where = s.substr(0, colon), which = colon == std::string::npos ? "" : s.substr(colon + 1);
    Injection in;
    if (where == "start") in.where = Injection::Start;
    else if (where == "begin") in.where = Injection::Begin;
    else if (where == "rs") in.where = Injection::RsHop;
    else if (where == "ag") in.where = Injection::AgHop;
    else if (where == "hop") in.where = Injection::AnyHop;
    else return -1;
    const bool hop = in.where >= Injection::RsHop;
    if (!hop && !which.empty()) return -1;
    if (hop) {
        if (which == "first") in.which = Injection::First;
        else if (which == "middle") in.which = Injection::Middle;
        else if (which == "last") in.which = Injection::Last;
        else return -1;
    }
    g_inject.store(unsigned(in.where) | unsigned(in.which) << 8, std::memory_order_relaxed);
    return 0;
}
}  // namespace

// ---------------------------------------------------------------- trivial

namespace {

// Nothing to exchange: count 0, or a communicator of one rank (the result
// is the input, at the rank's displacement for Allgatherv; in place there
// is nothing to do).
class TrivialOp final : public OpBase {
public:
    using OpBase::OpBase;

protected:
    Status body(bool *done) override {
        size_t bytes = args_.count * esize_;
        void *dst = args_.kind == CollKind::Allgatherv ? elem(args_.recvbuf, args_.displs[r_]) : args_.recvbuf;
        if (bytes && args_.sendbuf != dst) std::memcpy(dst, args_.sendbuf, bytes);
        *done = true;
        return TERSE_OK;
    }
};

}  // namespace

OpBase *make_trivial_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                        const Plan &plan) {
    return op_new<TrivialOp>(mem, env, args, plan);
}

// ---------------------------------------------------------------- entry points

void EngineEnv::set_comm_name(std::string_view name) {
    const size_t n = std::min(name.size(), sizeof comm_name - 1);
    std::memcpy(comm_name, name.data(), n);
    comm_name[n] = '\0';
}

void OpDeleter::operator()(Operation *op) const {
    if (op) op->~Operation();
    if (pool) pool->release(memory);
    else delete memory;
}

Plan engine_untuned_plan(const EngineEnv &env, const CommConfig &cfg, const CollArgs &args) {
    const terse_codec_descriptor_t *desc = env.codec ? env.codec->desc() : nullptr;
    size_t max_chunk = env.codec ? env.codec->setup().max_chunk_count : 0;
    Plan plan = plan_collective(cfg, env.size, args, desc, max_chunk);
    if (plan.schedule == Schedule::TwoLevel && !env.two_level) {
        // No node layout for this operation (see EngineEnv::two_level): the
        // flat schedule algorithm=auto would choose.
        CommConfig flat = cfg;
        flat.algorithm = Algorithm::Auto;
        plan = plan_collective(flat, env.size, args, desc, max_chunk);
    }
    return plan;
}

Plan engine_tuned_plan(const EngineEnv &env, const CollArgs &args, const Plan &chosen) {
    // A tuning file's entry overrides whatever chose the plan (terse(7)).
    Plan plan = chosen;
    if (env.tuned)
        plan_apply_tuning(*env.tuned, env, args, env.codec ? env.codec->setup().max_chunk_count : 0, &plan);
    return plan;
}

Status engine_start(const EngineEnv &env, const CommConfig &cfg, const CollArgs &args, Priority prio,
                    OpHandle *out) {
    return engine_start_plan(env, args, engine_untuned_plan(env, cfg, args), prio, out);
}

Status engine_start_plan(const EngineEnv &env, const CollArgs &args, const Plan &chosen, Priority prio,
                         OpHandle *out) {
    const Plan plan = engine_tuned_plan(env, args, chosen);
    if (env.device && plan.schedule != Schedule::Ring)
        return set_error(TERSE_ERR_INVALID,
                         "terse: a device codec call was planned on the %s schedule, which runs on host memory",
                         schedule_name(plan.schedule));
    OpMemory *mem = env.memory ? env.memory->acquire() : new (std::nothrow) OpMemory();
    if (!mem) return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory creating an operation");
    if (plan.schedule == Schedule::TwoLevel) {
        Operation *two = nullptr;
        Status s = TERSE_OK;
        try {
            s = make_two_level_op(mem, env, args, &two);
        } catch (const std::bad_alloc &) {
            s = set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory creating an operation");
        }
        OpHandle op(two, OpDeleter{env.memory, mem});
        if (s != TERSE_OK) return s;
        op->priority = prio;
        *out = std::move(op);
        return TERSE_OK;
    }
    OpBase *built = nullptr;
    try {
        switch (plan.schedule) {
        case Schedule::Trivial: built = make_trivial_op(mem, env, args, plan); break;
        case Schedule::Ring: built = make_ring_op(mem, env, args, plan); break;
        case Schedule::RecursiveDoubling: built = make_recursive_doubling_op(mem, env, args, plan); break;
        case Schedule::Gather: built = make_gather_op(mem, env, args, plan); break;
        case Schedule::TwoLevel: break;  // built above
        }
    } catch (const std::bad_alloc &) {
        OpDeleter{env.memory, mem}(nullptr);
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory creating an operation");
    }
    OpHandle op(built, OpDeleter{env.memory, mem});
    Status s = built->start();
    if (s != TERSE_OK) return s;
    op->priority = prio;
    *out = std::move(op);
    return TERSE_OK;
}

namespace {
// Adaptive waiting.  An operation does all the work it can in each advance,
// so when the transport is quiet it waits for the network or for the PMPI
// control allreduce.  Then, in turn:
//  1. spin for kSpin (skipped where the node runs more ranks than CPUs):
//     the cheapest way to catch a reply that is microseconds away;
//  2. yield, for up to kYieldFor in all: a peer rank that shares this CPU
//     runs at once and nothing is lost if none does, whereas waking a
//     sleeping rank costs tens of microseconds here;
//  3. sleep on the transport's events, which wake the rank as soon as UCX
//     has something.  Each sleep is bounded, starting at kFirstSleepUs and
//     doubling to kMaxSleepUs while nothing arrives, because the control
//     allreduce moves only when PMPI_Test is called.
// A yield that comes back after kSlowYield or more means another process
// held the CPU for a time slice (a millisecond or more; a peer rank
// usually gives the CPU back sooner).  Then every wait
// of the process skips step 2 for kSleepOnlyFor: a rank that keeps
// yielding stays runnable and keeps using up its fair share, while one that
// wakes from sleep gets the CPU promptly.  Against spinning (and yielding
// after a number of idle polls) this costs little on an idle node and wins
// by far when other processes want the CPUs: perf/README.md, "Waiting when
// ranks share cores", has the figures and the command.
constexpr auto kSpin = std::chrono::microseconds(20);
constexpr auto kYieldFor = std::chrono::milliseconds(5);
constexpr auto kSlowYield = std::chrono::milliseconds(1);
constexpr auto kSleepOnlyFor = std::chrono::milliseconds(100);
constexpr unsigned kFirstSleepUs = 50;
constexpr unsigned kMaxSleepUs = 1000;

// Until when (steady_clock ticks) waits skip yielding.  Shared by all
// threads; a stale value only changes the waiting strategy for a while.
std::atomic<long long> g_sleep_only_until{0};
}  // namespace

Status engine_wait(Operation *op) {
    using Clock = std::chrono::steady_clock;
    // Null only in unit tests that simulate ranks in one process, where the
    // peers are this thread's own work.
    Transport *t = Transport::get();
    const auto spin = t && t->cores_oversubscribed() ? Clock::duration::zero() : Clock::duration(kSpin);
    Clock::time_point idle_since{};
    bool idle = false;
    unsigned sleep_us = kFirstSleepUs;
    for (;;) {
        bool done = false;
        Status s = op->advance(&done);
        if (done) return s;
        if (engine_progress_all() != 0) {
            idle = false;
            sleep_us = kFirstSleepUs;
            continue;
        }
        Clock::time_point now = Clock::now();
        if (!idle) {
            idle = true;
            idle_since = now;
            continue;
        }
        if (now - idle_since < spin) continue;
        // A wait on the MPI library yields instead of sleeping: its progress
        // wakes nothing terse can sleep on, so a sleep would last its whole
        // timeout on every such wait (the closing agreement of every call).
        if (!t || op->waits_on_control() ||
            (now - idle_since < kYieldFor &&
             now.time_since_epoch().count() >= g_sleep_only_until.load(std::memory_order_relaxed))) {
            sched_yield();
            Clock::time_point back = Clock::now();
            if (back - now >= kSlowYield)
                g_sleep_only_until.store((back + kSleepOnlyFor).time_since_epoch().count(),
                                         std::memory_order_relaxed);
            continue;
        }
        t->wait_for_events(sleep_us);
        sleep_us = std::min(2 * sleep_us, kMaxSleepUs);
    }
}

// ---------------------------------------------------------------- progress list

namespace {
std::mutex g_list_mu;
std::vector<Operation *> g_list;  // highest priority first, then registration order
std::atomic<int> g_list_size{0};
}  // namespace

void engine_progress_register(Operation *op) {
    std::lock_guard<std::mutex> lk(g_list_mu);
    auto pos = std::find_if(g_list.begin(), g_list.end(),
                            [&](const Operation *o) { return int(o->priority) < int(op->priority); });
    g_list.insert(pos, op);
    g_list_size.store(int(g_list.size()), std::memory_order_release);
}

void engine_progress_unregister(Operation *op) {
    std::lock_guard<std::mutex> lk(g_list_mu);
    g_list.erase(std::remove(g_list.begin(), g_list.end(), op), g_list.end());
    g_list_size.store(int(g_list.size()), std::memory_order_release);
}

unsigned engine_progress_all() {
    unsigned moved = 0;
    if (g_list_size.load(std::memory_order_acquire) > 0) {
        std::unique_lock<std::mutex> lk(g_list_mu, std::try_to_lock);
        if (lk.owns_lock()) {
            // Only completions count as movement: an operation that is
            // still running has done all it could and now waits on events.
            for (Operation *op : g_list) {
                if (op->finished()) continue;
                bool done = false;
                op->advance(&done);
                if (done) ++moved;
            }
        }
    }
    if (Transport *t = Transport::get()) moved += t->progress();
    return moved;
}

}  // namespace terse

extern "C" void terse_engine_test_corrupt_next_sends(int count) { terse::g_corrupt_store(count); }

extern "C" int terse_engine_test_fail_next(const char *where) { return terse::arm_injection(where); }
