// The two-level schedule (algorithm=two_level), for a communicator whose
// ranks sit on nodes that share memory inside and a slower network between
// them (the layout: TwoLevelEnv, engine.h, made by runtime/node_layout.h):
//   1. reduce-scatter inside each node with the MPI library's own
//      collective (shared memory, uncompressed): local rank l < shards ends
//      with shard l of the node's sum, ranks at or above `shards` with none;
//   2. each rail (the ranks of every node with local index l) runs the
//      engine's flat allreduce of shard l between the nodes, compressed with
//      the communicator's codec and planned for the rail as algorithm=auto
//      would plan it; the rails of a node run at once, so every rank's
//      codec work and every rail of the network is busy;
//   3. allgather inside each node (the MPI library again), in place.
// Uneven nodes: every node cuts the data into the same `shards` shards (the
// smallest node's rank count), so every rail spans every node; the extra
// ranks of larger nodes take part in the node collectives only.
//
// Identical bits: the rail's flat schedule gives every rail rank the same
// bits for its shard, and the node allgather copies them unchanged.
//
// Failures: a local failure at the start, or anything the rail's operation
// reports (which already reaches every rank of that rail), is agreed on by
// the whole communicator with one small allreduce before the allgather, so
// every rank ends with an error and none waits; the allgather is then left
// out on every rank.  The test hook's injection (engine.h) goes to the
// rail's operation; a rank on no rail takes "start" and "begin" itself and
// has no hops to spoil.
#include "engine/engine.h"
#include "engine/op_base.h"
#include "engine/verify.h"
#include "util/dtype.h"
#include "util/log.h"

#include <climits>
#include <cstring>
#include <optional>
#include <string>

namespace terse {

namespace {

class TwoLevelOp final : public Operation {
public:
    TwoLevelOp(const EngineEnv &env, const CollArgs &args, std::pmr::memory_resource *mem)
        : env_(env), tl_(*env.two_level), args_(args), esize_(dtype_size(args.dtype)), counts_(mem),
          displs_(mem) {
        t_start_ = now_seconds();
    }
    ~TwoLevelOp() override {
        if (node_req_.active) tl_.node->wait(&node_req_);
        if (agree_req_.active) env_.control->wait(&agree_req_);
        sub_.reset();
        account();
    }

    Status start();
    Status progress(bool *done) override;
    bool waits_on_control() const override {
        if (stage_ == Stage::Rail) return sub_ && sub_->waits_on_control();
        return stage_ != Stage::Done;
    }

private:
    enum class Stage { NodeReduce, Rail, Agree, NodeGather, Verify, Done };

    bool on_rail() const { return tl_.rail_rank >= 0; }
    uint8_t *shard() const {
        return static_cast<uint8_t *>(args_.recvbuf) + size_t(displs_[tl_.node_rank]) * esize_;
    }
    size_t shard_count() const { return size_t(counts_[tl_.node_rank]); }
    Status start_rail();
    void finish_rail(Status s);
    void fail_local(Status s, const char *msg);
    Status fatal(Status s);
    Status outcome();
    void account();

    EngineEnv env_;
    const TwoLevelEnv &tl_;
    CollArgs args_;
    size_t esize_;
    OpVector<int> counts_, displs_;  // per node rank, in elements
    Stage stage_ = Stage::NodeReduce;
    Injection inject_;

    ControlRequest node_req_, agree_req_;
    OpHandle sub_;
    Stats rail_stats_;  // what the rail's operation sent, added to the communicator's once

    // The agreement: [0] 0, or 1 + the comm rank of a failure; with
    // env_.observed (the model planner) also this rank's time so far, its
    // rail's codec seconds and wire ratio, so that every rank learns the
    // slowest of each (the node allgather that follows is not in the time).
    double agree_[4] = {};
    bool failed_ = false, local_failure_ = false, fatal_ = false;
    Status fail_status_ = TERSE_OK;
    std::string fail_msg_;
    uint32_t fail_origin_ = 0;

    std::optional<Verifier> verifier_;
    double t_start_ = 0;
    bool accounted_ = false;

public:
    // Cut count elements into tl_.shards shards (the first count % shards one
    // element longer), one per local rank below shards.  False when a shard
    // does not fit the MPI library's int count.
    bool cut(size_t count) {
        const int L = tl_.node_size, S = tl_.shards;
        counts_.assign(size_t(L), 0);
        displs_.assign(size_t(L), 0);
        const size_t base = count / size_t(S), extra = count % size_t(S);
        if (base + (extra ? 1 : 0) > size_t(INT_MAX) || count > size_t(INT_MAX)) return false;
        size_t off = 0;
        for (int q = 0; q < L; ++q) {
            const size_t n = q < S ? base + (size_t(q) < extra ? 1 : 0) : 0;
            counts_[size_t(q)] = int(n);
            displs_[size_t(q)] = int(off);
            off += n;
        }
        return true;
    }
};

void TwoLevelOp::fail_local(Status s, const char *msg) {
    if (failed_) return;
    failed_ = local_failure_ = true;
    fail_status_ = s;
    fail_msg_ = msg;
    TERSE_LOG_DEBUG("two-level allreduce on '%s' failed locally: %s", env_.comm_name, msg);
}

Status TwoLevelOp::start() {
    inject_ = engine_take_injection();
    if (!on_rail() && (inject_.where == Injection::Start || inject_.where == Injection::Begin)) {
        fail_local(TERSE_ERR_NO_MEMORY,
                   inject_.where == Injection::Start
                       ? "terse: out of memory starting an operation (injected by the test hook)"
                       : "terse: out of memory setting up the schedule (injected by the test hook)");
        inject_ = Injection{};
    }
    if (!on_rail()) inject_ = Injection{};  // no hops here
    if (env_.verify && args_.count > 0) {
        // Every rank must post the verifier's control allreduce, failed or not.
        verifier_.emplace(env_.control);
        Status s = verifier_->start(args_.sendbuf, args_.count, args_.dtype, args_.op, args_.recvbuf);
        if (s != TERSE_OK && !verifier_->posted()) return s;
        if (s != TERSE_OK) fail_local(s, last_error());
    }
    // In place, the node's reduce-scatter reads recvbuf and leaves this
    // rank's shard at its start (moved into place when it completes).
    const bool in_place = args_.sendbuf == args_.recvbuf;
    void *out = in_place ? args_.recvbuf : shard();
    return tl_.node->ireduce_scatter(in_place ? out : args_.sendbuf, out, counts_.data(), args_.dtype, args_.op,
                                     &node_req_);
}

Status TwoLevelOp::start_rail() {
    EngineEnv rail = env_;
    rail.rank = tl_.rail_rank;
    rail.size = tl_.rail_size;
    rail.link = tl_.rail_link;
    rail.control = tl_.rail_control;
    rail.two_level = nullptr;
    rail.verify = false;  // verified here, against the whole communicator
    rail.stats = &rail_stats_;
    CollArgs a = args_;
    a.sendbuf = a.recvbuf = shard();
    a.count = shard_count();
    a.in_place = true;
    // The rail's operation takes this operation's armed failure, if any.
    engine_put_injection(inject_);
    inject_ = Injection{};
    Status s = engine_start(rail, *tl_.rail_config, a, priority, &sub_);
    if (s != TERSE_OK) return s;
    // A failure before the rail's start poisons it, so that the rail still
    // runs and learns of it.
    if (local_failure_) static_cast<OpBase *>(sub_.get())->fail_local(fail_status_, fail_msg_.c_str());
    return TERSE_OK;
}

void TwoLevelOp::finish_rail(Status s) {
    if (s == TERSE_OK || failed_) return;
    if (s == TERSE_ERR_REMOTE) {
        failed_ = true;  // the comm rank that failed is learnt in the agreement
        return;
    }
    std::string msg = last_error();
    fail_local(s, msg.c_str());
}

Status TwoLevelOp::fatal(Status s) {
    std::string msg = last_error();
    failed_ = local_failure_ = fatal_ = true;
    fail_status_ = s;
    fail_msg_ = msg;
    stage_ = Stage::Done;
    return outcome();
}

Status TwoLevelOp::outcome() {
    if (!failed_) return TERSE_OK;
    if (local_failure_) return set_error(fail_status_, "%s", fail_msg_.c_str());
    return set_error(TERSE_ERR_REMOTE,
                     "terse allreduce (two-level) on communicator '%s' failed on rank %u (see that rank's error "
                     "message); this rank's result is undefined",
                     env_.comm_name, fail_origin_);
}

Status TwoLevelOp::progress(bool *done) {
    *done = false;
    Status s = TERSE_OK;
    if (stage_ == Stage::NodeReduce) {
        if (!tl_.node->test(&node_req_, &s)) return TERSE_OK;
        if (s != TERSE_OK) return *done = true, fatal(s);
        const size_t n = shard_count();
        if (args_.sendbuf == args_.recvbuf && n && displs_[tl_.node_rank] != 0)
            std::memmove(shard(), args_.recvbuf, n * esize_);
        stage_ = Stage::Rail;
        if (on_rail()) {
            s = start_rail();
            if (s != TERSE_OK) return *done = true, fatal(s);
        }
    }
    if (stage_ == Stage::Rail) {
        if (sub_) {
            bool sub_done = false;
            s = sub_->advance(&sub_done);
            if (!sub_done) return TERSE_OK;
            finish_rail(s);
            sub_.reset();
        }
        agree_[0] = local_failure_ ? double(env_.rank) + 1.0 : 0.0;
        const size_t n = env_.observed ? 4 : 1;
        if (env_.observed) {
            const terse_comm_stats_t &c = rail_stats_.counters();
            agree_[1] = now_seconds() - t_start_;
            agree_[2] = c.seconds_encode + c.seconds_decode;
            agree_[3] = c.bytes_wire_raw ? double(c.bytes_wire) / double(c.bytes_wire_raw) : 0.0;
        }
        s = env_.control->iallreduce(agree_, agree_, n, TERSE_DTYPE_FLOAT64, TERSE_OP_MAX, &agree_req_);
        if (s != TERSE_OK) return *done = true, fatal(s);
        stage_ = Stage::Agree;
    }
    if (stage_ == Stage::Agree) {
        if (!env_.control->test(&agree_req_, &s)) return TERSE_OK;
        if (s != TERSE_OK) return *done = true, fatal(s);
        if (env_.observed && agree_[0] == 0) *env_.observed = Observation{agree_[1], agree_[2], agree_[3]};
        if (agree_[0] > 0) {
            if (!local_failure_) {
                failed_ = true;
                fail_origin_ = uint32_t(agree_[0]) - 1;
            }
            stage_ = verifier_ ? Stage::Verify : Stage::Done;
        } else {
            s = tl_.node->iallgatherv(args_.recvbuf, counts_.data(), displs_.data(), args_.dtype, &node_req_);
            if (s != TERSE_OK) return *done = true, fatal(s);
            stage_ = Stage::NodeGather;
        }
    }
    if (stage_ == Stage::NodeGather) {
        if (!tl_.node->test(&node_req_, &s)) return TERSE_OK;
        if (s != TERSE_OK) return *done = true, fatal(s);
        stage_ = verifier_ ? Stage::Verify : Stage::Done;
    }
    if (stage_ == Stage::Verify) {
        if (!verifier_->test(&s)) return TERSE_OK;
        if (s != TERSE_OK) return *done = true, fatal(s);
        if (!failed_) verifier_->record(args_.recvbuf, env_.stats);
        stage_ = Stage::Done;
    }
    *done = true;
    account();
    return outcome();
}

void TwoLevelOp::account() {
    if (accounted_ || !env_.stats) return;
    accounted_ = true;
    const terse_comm_stats_t &c = rail_stats_.counters();
    OpAccount a;
    a.wire = c.bytes_wire;
    a.wire_raw = c.bytes_wire_raw;
    a.raw_chunks = c.chunks_raw;
    a.seconds_total = now_seconds() - t_start_;
    a.seconds_encode = c.seconds_encode;
    a.seconds_decode = c.seconds_decode;
    env_.stats->add_operation(a);
}

}  // namespace

Status make_two_level_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                         Operation **out) {
    if (!env.two_level || !env.two_level->node || !env.two_level->rail_config)
        return set_error(TERSE_ERR_INVALID, "terse: communicator '%s' has no two-level layout", env.comm_name);
    void *p = mem->allocate(sizeof(TwoLevelOp), alignof(TwoLevelOp));
    TwoLevelOp *op = ::new (p) TwoLevelOp(env, args, mem);
    *out = op;
    if (!op->cut(args.count))
        return set_error(TERSE_ERR_UNSUPPORTED,
                         "terse: two-level allreduce of %zu elements on communicator '%s': a node's shard of "
                         "more than %d elements does not fit the MPI library's counts",
                         args.count, env.comm_name, INT_MAX);
    return op->start();
}

}  // namespace terse
