// Runs engine operations for n simulated ranks inside one process: an
// in-memory Link (rendezvous or eager matching by source and tag, FIFO per
// tag like UCX), an in-memory Control (allreduce across the simulated
// ranks), and small codecs of each reduction mode.  Every rank's operation
// is progressed in a random order each round, so many interleavings run.
#pragma once

#include "engine/op_base.h"
#include "engine/error_feedback.h"
#include "engine/reduce_kernels.h"
#include "codec/registry.h"

#include <terse/codec.h>

#include <cmath>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace sim {

using namespace terse;

// ---------------------------------------------------------------- fabric

// What the simulated link keeps in a LinkRequest's storage.
struct SimRequest {
    bool pending = true;
    bool complete = false;
    Status status = TERSE_OK;
    size_t length = 0;
};

inline void release_sim_request(LinkRequest *r) {
    r->storage.get<SimRequest>()->~SimRequest();
    r->release = nullptr;
}

// A fresh SimRequest for a message started on r.
inline SimRequest *start_sim_request(LinkRequest *r) {
    if (r->release) r->release(r);
    SimRequest *q = r->storage.emplace<SimRequest>();
    r->release = release_sim_request;
    return q;
}

class Fabric {
public:
    explicit Fabric(int n, bool eager) : eager_(eager), unexpected_(n), posted_(n) {}

    Status send(int src, int dst, uint64_t tag, const void *buf, size_t len, LinkRequest *r) {
        start_sim_request(r);
        for (auto it = posted_[dst].begin(); it != posted_[dst].end(); ++it)
            if (it->src == src && it->tag == tag) {
                deliver(buf, len, r, *it);
                posted_[dst].erase(it);
                return TERSE_OK;
            }
        Msg m{src, tag, buf, len, r, {}};
        if (eager_) {
            m.copy.assign(static_cast<const uint8_t *>(buf), static_cast<const uint8_t *>(buf) + len);
            m.data = m.copy.data();
            m.req = nullptr;
            done(r, TERSE_OK, len);
        }
        unexpected_[dst].push_back(std::move(m));
        if (eager_) unexpected_[dst].back().data = unexpected_[dst].back().copy.data();
        return TERSE_OK;
    }

    Status recv(int dst, int src, uint64_t tag, void *buf, size_t cap, LinkRequest *r) {
        start_sim_request(r);
        Recv rv{src, tag, buf, cap, r};
        for (auto it = unexpected_[dst].begin(); it != unexpected_[dst].end(); ++it)
            if (it->src == src && it->tag == tag) {
                deliver(it->data, it->len, it->req, rv);
                unexpected_[dst].erase(it);
                return TERSE_OK;
            }
        posted_[dst].push_back(rv);
        return TERSE_OK;
    }

    void cancel(LinkRequest *r) {
        for (auto &l : unexpected_) l.remove_if([&](const Msg &m) { return m.req == r; });
        for (auto &l : posted_) l.remove_if([&](const Recv &v) { return v.req == r; });
    }

    size_t in_flight() const {
        size_t n = 0;
        for (auto &l : unexpected_) n += l.size();
        for (auto &l : posted_) n += l.size();
        return n;
    }

private:
    struct Msg {
        int src;
        uint64_t tag;
        const void *data;
        size_t len;
        LinkRequest *req;  // nullptr once an eager send completed
        std::vector<uint8_t> copy;
    };
    struct Recv {
        int src;
        uint64_t tag;
        void *buf;
        size_t cap;
        LinkRequest *req;
    };
    static void done(LinkRequest *r, Status s, size_t len) {
        SimRequest *q = r->storage.get<SimRequest>();
        q->complete = true;
        q->status = s;
        q->length = len;
    }
    void deliver(const void *data, size_t len, LinkRequest *sreq, const Recv &rv) {
        if (len > rv.cap) {
            done(rv.req, TERSE_ERR_TRANSPORT, 0);
            if (sreq) done(sreq, TERSE_ERR_TRANSPORT, 0);
            return;
        }
        std::memcpy(rv.buf, data, len);
        done(rv.req, TERSE_OK, len);
        if (sreq) done(sreq, TERSE_OK, len);
    }

    bool eager_;
    std::vector<std::list<Msg>> unexpected_;
    std::vector<std::list<Recv>> posted_;
};

class SimLink final : public Link {
public:
    SimLink(Fabric *f, int me) : f_(f), me_(me) {}
    Status isend(int peer, uint64_t tag, const void *buf, size_t len, LinkRequest *r) override {
        return f_->send(me_, peer, tag, buf, len, r);
    }
    Status irecv(int peer, uint64_t tag, void *buf, size_t cap, LinkRequest *r) override {
        return f_->recv(me_, peer, tag, buf, cap, r);
    }
    bool test(LinkRequest *r, Status *status, size_t *length) override {
        if (!r->release) {  // never started
            *status = TERSE_OK;
            if (length) *length = 0;
            return true;
        }
        SimRequest *q = r->storage.get<SimRequest>();
        if (!q->complete) return false;
        *status = q->status;
        if (*status != TERSE_OK) set_error(*status, "simulated transport failure (truncated?)");
        if (length) *length = q->length;
        q->pending = false;
        return true;
    }
    void cancel(LinkRequest *r) override {
        if (!r->release) return;
        SimRequest *q = r->storage.get<SimRequest>();
        if (q->pending && !q->complete) f_->cancel(r);
        r->release(r);
    }
    unsigned progress() override { return 0; }

private:
    Fabric *f_;
    int me_;
};

// ---------------------------------------------------------------- control

class Collectives {
public:
    explicit Collectives(int n) : n_(n), counter_(n, 0) {}
    // Allreduce: out = op over ranks of in (count elements).
    void join(int rank, const void *in, void *out, size_t count, terse_dtype_t dt, terse_op_t op,
              ControlRequest *r) {
        std::vector<size_t> counts(static_cast<size_t>(n_), count), displs(static_cast<size_t>(n_), 0);
        enter(rank, Kind::Allreduce, in, out, counts.data(), displs.data(), count, dt, op, r);
    }
    // Reduce-scatter: rank q gets its counts[q] elements of the sum at out.
    void join_reduce_scatter(int rank, const void *in, void *out, const int *counts, terse_dtype_t dt,
                             terse_op_t op, ControlRequest *r) {
        std::vector<size_t> c(static_cast<size_t>(n_)), d(static_cast<size_t>(n_), 0);
        size_t total = 0;
        for (int q = 0; q < n_; ++q) {
            c[size_t(q)] = size_t(counts[q]);
            d[size_t(q)] = total;
            total += c[size_t(q)];
        }
        enter(rank, Kind::ReduceScatter, in, out, c.data(), d.data(), total, dt, op, r);
    }
    // Allgather in place: rank q's counts[q] elements at buf + displs[q].
    void join_allgatherv(int rank, void *buf, const int *counts, const int *displs, terse_dtype_t dt,
                         ControlRequest *r) {
        std::vector<size_t> c(static_cast<size_t>(n_)), d(static_cast<size_t>(n_));
        for (int q = 0; q < n_; ++q) {
            c[size_t(q)] = size_t(counts[q]);
            d[size_t(q)] = size_t(displs[q]);
        }
        enter(rank, Kind::Allgather, buf, buf, c.data(), d.data(), 0, dt, TERSE_OP_SUM, r);
    }
    bool complete(int idx) { return calls_[idx].complete; }

private:
    enum class Kind { Allreduce, ReduceScatter, Allgather };
    struct Call {
        std::vector<std::vector<uint8_t>> contrib;
        std::vector<void *> outs;
        int joined = 0;
        bool complete = false;
    };

    void enter(int rank, Kind kind, const void *in, void *out, const size_t *counts, const size_t *displs,
               size_t total, terse_dtype_t dt, terse_op_t op, ControlRequest *r) {
        int idx = counter_[rank]++;
        Call &c = calls_[idx];
        if (c.contrib.empty()) {
            c.contrib.resize(n_);
            c.outs.resize(n_);
        }
        const size_t es = dtype_size(dt);
        const uint8_t *from = static_cast<const uint8_t *>(in);
        size_t bytes = total * es;
        if (kind == Kind::Allgather) {
            from += displs[rank] * es;
            bytes = counts[rank] * es;
        }
        c.contrib[rank].assign(from, from + bytes);
        c.outs[rank] = out;
        r->storage.emplace<int>(idx);
        r->active = true;
        if (++c.joined < n_) return;
        if (kind == Kind::Allgather) {
            for (int q = 0; q < n_; ++q)
                for (int p = 0; p < n_; ++p)
                    std::memcpy(static_cast<uint8_t *>(c.outs[q]) + displs[p] * es, c.contrib[p].data(),
                                c.contrib[p].size());
        } else {
            std::vector<uint8_t> acc = c.contrib[0];
            for (int q = 1; q < n_; ++q) reduce_inplace(dt, op, acc.data(), c.contrib[q].data(), total);
            for (int q = 0; q < n_; ++q) {
                if (kind == Kind::Allreduce) std::memcpy(c.outs[q], acc.data(), bytes);
                else std::memcpy(c.outs[q], acc.data() + displs[q] * es, counts[q] * es);
            }
        }
        c.complete = true;
    }

    int n_;
    std::vector<int> counter_;
    std::map<int, Call> calls_;
};

class SimControl final : public Control {
public:
    SimControl(Collectives *c, int rank) : c_(c), rank_(rank) {}
    Status iallreduce(const void *in, void *out, size_t count, terse_dtype_t dt, terse_op_t op,
                      ControlRequest *r) override {
        c_->join(rank_, in, out, count, dt, op, r);
        return TERSE_OK;
    }
    Status ireduce_scatter(const void *in, void *out, const int *counts, terse_dtype_t dt, terse_op_t op,
                           ControlRequest *r) override {
        c_->join_reduce_scatter(rank_, in, out, counts, dt, op, r);
        return TERSE_OK;
    }
    Status iallgatherv(void *buf, const int *counts, const int *displs, terse_dtype_t dt,
                       ControlRequest *r) override {
        c_->join_allgatherv(rank_, buf, counts, displs, dt, r);
        return TERSE_OK;
    }
    bool test(ControlRequest *r, Status *status) override {
        *status = TERSE_OK;
        if (!r->active) return true;
        if (!c_->complete(*r->storage.get<int>())) return false;
        r->active = false;
        return true;
    }
    void wait(ControlRequest *r) override { r->active = false; }

private:
    Collectives *c_;
    int rank_;
};

// ---------------------------------------------------------------- codecs

const terse_codec_descriptor_t *identity_codec();  // "none": lossless, payload = elements
const terse_codec_descriptor_t *trunc_codec();     // recompress: float -> bfloat16 (f32) / float32 (f64)
const terse_codec_descriptor_t *fixq_codec();      // summable: int32 fixed point, scale from max|x|
const terse_codec_descriptor_t *sparse_codec();    // gather: keeps the largest quarter of |x|
const terse_codec_descriptor_t *failing_codec();   // recompress; decode fails when told to

// failing_codec: decode of a frame encoded by this rank fails (set per rank instance)
extern int g_failing_rank_decode;

// ---------------------------------------------------------------- runner

struct RunSpec {
    const terse_codec_descriptor_t *codec = nullptr;
    CollKind kind = CollKind::Allreduce;
    terse_dtype_t dtype = TERSE_DTYPE_FLOAT32;
    terse_op_t op = TERSE_OP_SUM;
    size_t count = 0;
    int n = 1;
    bool in_place = false;
    Algorithm algorithm = Algorithm::Auto;
    size_t chunk_bytes = 1 << 20;
    int depth = 4;
    bool eager = false;
    bool feedback = false;
    uint32_t seed = 1;
    // terse_engine_test_fail_next(inject) is armed just before rank
    // inject_rank's operation starts (so that rank's takes it).
    int inject_rank = -1;
    const char *inject = nullptr;
    // Per rank, the port of a rank whose buffers are "device" memory
    // (engine/device_port.h; tests/sim_device_port.h), or null.
    std::vector<DevicePort *> device;
};

struct RankResult {
    Status status = TERSE_OK;
    std::string message;
    std::vector<uint8_t> out;  // recvbuf
    Stats stats;
};

// A world of n simulated ranks with persistent codec instances and
// feedback stores (so repeated runs see the residuals of earlier ones).
class World {
public:
    World(const terse_codec_descriptor_t *codec, int n, terse_dtype_t dtype, size_t max_chunk);
    ~World();
    // inputs[rank] = the input of each rank (count * (kind == RS ? n : 1) elements)
    std::vector<RankResult> run(const RunSpec &spec, const std::vector<std::vector<uint8_t>> &inputs, bool *hung);

private:
    CodecPlugin plugin_;
    int n_;
    std::vector<std::unique_ptr<CodecInstance>> inst_;
    std::vector<std::unique_ptr<FeedbackStore>> fb_;
    // Kept across runs so that a buffer keeps its address (feedback keys).
    std::vector<std::vector<uint8_t>> sendbufs_, recvbufs_;
    uint32_t seq_ = 0;
};

// Deterministic inputs: floats in [-1, 1) scaled by (rank + 1); ints in a
// small range so sums never overflow.
std::vector<std::vector<uint8_t>> make_inputs(terse_dtype_t dt, size_t elems, int n, uint32_t seed);

}  // namespace sim
