// The ring's device codec path (engine/schedules/ring_device.cc) on
// simulated ranks, allreduce and its two halves, without CUDA: a DevicePort whose "device" is host
// memory and whose copies land only after being polled a few times, so
// the engine's holds on frames in flight run on every interleaving.  A
// rank on the port must end with the bits of a rank on host buffers, ranks
// of both kinds interoperate, and a failure on the port reaches every rank.
#include "engine_sim.h"

#include "engine/device_port.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace sim;
using namespace terse;

// The codec's host instance behind the port: its payloads are what a
// device instance must write (codec.h revision 3).
class SimDevicePort final : public DevicePort {
public:
    SimDevicePort(const terse_codec_descriptor_t *desc, terse_dtype_t dt, int nranks, size_t max_chunk,
                  unsigned polls)
        : d_(desc), polls_(polls), esize_(dtype_size(dt)) {
        terse_codec_setup_t setup{};
        setup.struct_size = sizeof setup;
        setup.dtype = dt;
        setup.mem_kind = TERSE_MEM_HOST;
        setup.nranks = nranks;
        setup.max_chunk_count = max_chunk;
        char err[128];
        d_->parse(nullptr, 0, &params_, err, sizeof err);
        d_->create(params_, &setup, &inst_, err, sizeof err);
        cap_ = std::max(d_->max_encoded_size(inst_, max_chunk), max_chunk * esize_);
        for (auto &s : slots_) s.data.resize(cap_);
    }
    ~SimDevicePort() override {
        d_->destroy(inst_);
        d_->free_params(params_);
    }

    size_t slots() const override { return kSlots; }
    Status stats(const void *src, size_t n, double *out, size_t nout, uint64_t seed) override {
        terse_codec_call_t c = call(seed);
        c.agreed_stats = nullptr;
        if (nout != d_->stats_count(inst_, n)) return set_error(TERSE_ERR_INVALID, "sim port: %zu stats", nout);
        return d_->stats(inst_, src, n, out, &c) == TERSE_CODEC_OK ? TERSE_OK
                                                                   : set_error(TERSE_ERR_PLUGIN, "sim stats");
    }
    Status put_agreed(const double *agreed, size_t count) override {
        agreed_.assign(agreed, agreed + count);
        return TERSE_OK;
    }
    Status encode(size_t slot, const void *src, size_t n, size_t at, uint64_t seed, size_t cap, size_t *len,
                  bool *raw) override {
        if (slot >= kSlots) return set_error(TERSE_ERR_INVALID, "sim port: slot %zu", slot);
        Slot &s = slots_[slot];
        if (s.polls_left > 0) return set_error(TERSE_ERR_INVALID, "sim port: slot %zu reused in flight", slot);
        if (++encodes_ == fail_encode)
            return set_error(TERSE_ERR_NO_MEMORY, "sim port: encode %u fails (injected)", encodes_);
        terse_codec_call_t c = call(seed);
        c.agreed_stats = agreed_.data() + at;
        const int rc = d_->encode(inst_, src, n, s.data.data(), std::min(cap, cap_), len, &c);
        *raw = rc == TERSE_CODEC_RAW;
        if (*raw) {
            *len = n * esize_;
            std::memcpy(s.data.data(), src, *len);
        } else if (rc != TERSE_CODEC_OK) {
            return set_error(TERSE_ERR_PLUGIN, "sim encode %d", rc);
        }
        s.polls_left = polls_;
        return TERSE_OK;
    }
    int ready(size_t slot) override {
        Slot &s = slots_[slot];
        if (s.polls_left == 0) return 1;
        --s.polls_left;
        ++not_ready_;
        return 0;
    }
    const uint8_t *slot_data(size_t slot) const override { return slots_[slot].data.data(); }
    Status decode(const uint8_t *payload, size_t len, bool raw, void *dst, size_t n, size_t at,
                  uint64_t seed) override {
        ++decodes_;
        if (raw) {
            if (len != n * esize_) return set_error(TERSE_ERR_CORRUPT, "sim port: raw %zu", len);
            std::memcpy(dst, payload, len);
            return TERSE_OK;
        }
        terse_codec_call_t c = call(seed);
        c.agreed_stats = agreed_.data() + at;
        return d_->decode(inst_, payload, len, dst, n, 0, TERSE_OP_SUM, &c) == TERSE_CODEC_OK
                   ? TERSE_OK
                   : set_error(TERSE_ERR_CORRUPT, "sim decode");
    }

    Status copy(void *dst, const void *src, size_t bytes) override {
        ++copies_;
        std::memmove(dst, src, bytes);
        return TERSE_OK;
    }

    unsigned fail_encode = 0;  // the encode (1-based) that fails; 0 none
    unsigned encodes_ = 0, decodes_ = 0, not_ready_ = 0, copies_ = 0;

private:
    static constexpr size_t kSlots = 5;
    struct Slot {
        std::vector<uint8_t> data;
        unsigned polls_left = 0;
    };
    terse_codec_call_t call(uint64_t seed) const {
        terse_codec_call_t c{};
        c.struct_size = sizeof c;
        c.seed = seed;
        return c;
    }
    const terse_codec_descriptor_t *d_;
    unsigned polls_;
    size_t esize_, cap_ = 0;
    void *params_ = nullptr, *inst_ = nullptr;
    Slot slots_[kSlots];
    std::vector<double> agreed_;
};

RunSpec ring_spec(terse_dtype_t dt, size_t count, int n, bool in_place) {
    RunSpec s;
    s.codec = fixq_codec();
    s.dtype = dt;
    s.count = count;
    s.n = n;
    s.algorithm = Algorithm::Ring;
    s.in_place = in_place;
    s.chunk_bytes = 256;  // many chunks per block: more encodes ahead than slots
    s.depth = 2;
    return s;
}

constexpr size_t kMaxChunk = 1 << 16;

// Runs s on host buffers, then again with rank r on a port when on_port(r)
// (its copies landing after 1 + r % polls polls), and checks that every
// rank ends with the host run's bits and that each port encoded and
// decoded.  *ports: the ports (null for host ranks), for the caller's
// further checks.
void expect_host_bits(RunSpec s, const std::vector<std::vector<uint8_t>> &in, bool (*on_port)(int r),
                      unsigned polls, std::vector<std::unique_ptr<SimDevicePort>> *ports) {
    bool hung = false;
    World host_world(fixq_codec(), s.n, s.dtype, kMaxChunk);
    auto host = host_world.run(s, in, &hung);
    ASSERT_FALSE(hung);
    ports->clear();
    for (int r = 0; r < s.n; ++r) {
        ports->push_back(on_port(r) ? std::make_unique<SimDevicePort>(fixq_codec(), s.dtype, s.n, kMaxChunk,
                                                                      1 + unsigned(r) % polls)
                                    : nullptr);
        s.device.push_back(ports->back().get());
    }
    World dev_world(fixq_codec(), s.n, s.dtype, kMaxChunk);
    auto dev = dev_world.run(s, in, &hung);
    ASSERT_FALSE(hung);
    for (int r = 0; r < s.n; ++r) {
        ASSERT_EQ(host[r].status, TERSE_OK) << host[r].message;
        ASSERT_EQ(dev[r].status, TERSE_OK) << "rank " << r << ": " << dev[r].message;
        ASSERT_EQ(dev[r].out, host[r].out) << "rank " << r;
        if (!(*ports)[r]) continue;
        // Every own chunk encoded once, every block decoded on the port.
        EXPECT_GT((*ports)[r]->encodes_, 0u);
        EXPECT_GT((*ports)[r]->decodes_, 0u);
    }
}

bool every_rank(int) { return true; }
bool even_ranks(int r) { return r % 2 == 0; }
bool odd_ranks(int r) { return r % 2 == 1; }

TEST(RingDevice, DeviceRanksEndWithTheHostRanksBits) {
    for (int n : {2, 3, 5})
        for (size_t count : {size_t(7), size_t(1000), size_t(5003)})
            for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64})
                for (int mix : {0, 1}) {  // 0: every rank on the port; 1: every other one
                    SCOPED_TRACE("n=" + std::to_string(n) + " count=" + std::to_string(count) + " " +
                                 dtype_name(dt) + (mix ? " mixed" : " all device"));
                    const bool in_place = count % 2 == 1;
                    auto in = make_inputs(dt, count, n, 31);
                    if (count > 100) {
                        // Non-finite values: their chunks go raw.
                        const double inf = INFINITY;
                        if (dt == TERSE_DTYPE_FLOAT32) {
                            const float f = float(inf);
                            std::memcpy(in[0].data() + 50 * 4, &f, 4);
                        } else {
                            std::memcpy(in[n - 1].data() + (count - 1) * 8, &inf, 8);
                        }
                    }
                    std::vector<std::unique_ptr<SimDevicePort>> ports;
                    expect_host_bits(ring_spec(dt, count, n, in_place), in, mix ? even_ranks : every_rank, 3,
                                     &ports);
                    if (HasFatalFailure()) return;
                    if (count < 1000) continue;
                    // Some copies met in flight.
                    for (int r = 0; r < n; ++r)
                        if (ports[r]) EXPECT_GT(ports[r]->not_ready_, 0u);
                }
}

// The decoupled halves: a reduce-scatter alone (in place: the result built
// in block r's place is moved to the start with the port's copy) and an
// allgather alone (the owner's block decoded on the port from the bytes it
// sends).
TEST(RingDevice, HalvesOnThePortEndWithTheHostRanksBits) {
    for (CollKind kind : {CollKind::ReduceScatterBlock, CollKind::Allgather})
        for (int n : {2, 3, 5})
            for (size_t count : {size_t(7), size_t(1000)})
                for (bool in_place : {false, true})
                    for (int mix : {0, 1}) {
                        SCOPED_TRACE(std::string(coll_kind_name(kind)) + " n=" + std::to_string(n) +
                                     " count=" + std::to_string(count) + (in_place ? " in place" : "") +
                                     (mix ? " mixed" : " all device"));
                        const size_t elems = kind == CollKind::Allgather ? count : count * size_t(n);
                        auto in = make_inputs(TERSE_DTYPE_FLOAT32, elems, n, 17);
                        RunSpec s = ring_spec(TERSE_DTYPE_FLOAT32, count, n, in_place);
                        s.kind = kind;
                        std::vector<std::unique_ptr<SimDevicePort>> ports;
                        expect_host_bits(s, in, mix ? odd_ranks : every_rank, 2, &ports);
                        if (HasFatalFailure()) return;
                        for (int r = 0; r < n; ++r) {
                            if (!ports[r]) continue;
                            // Only an in-place reduce-scatter off block 0 moves its result.
                            const bool moves = kind == CollKind::ReduceScatterBlock && in_place && r > 0;
                            EXPECT_EQ(ports[r]->copies_, moves ? 1u : 0u) << "rank " << r;
                        }
                    }
}

TEST(RingDevice, PortFailureReachesEveryRank) {
    for (int failing : {0, 2}) {
        const int n = 3;
        std::vector<std::unique_ptr<SimDevicePort>> ports;
        RunSpec s = ring_spec(TERSE_DTYPE_FLOAT32, 3000, n, false);
        for (int r = 0; r < n; ++r) {
            ports.push_back(std::make_unique<SimDevicePort>(fixq_codec(), TERSE_DTYPE_FLOAT32, n, kMaxChunk, 2));
            s.device.push_back(ports.back().get());
        }
        ports[size_t(failing)]->fail_encode = 3;
        World w(fixq_codec(), n, TERSE_DTYPE_FLOAT32, kMaxChunk);
        bool hung = false;
        auto res = w.run(s, make_inputs(TERSE_DTYPE_FLOAT32, 3000, n, 9), &hung);
        ASSERT_FALSE(hung);
        for (int r = 0; r < n; ++r) {
            EXPECT_NE(res[r].status, TERSE_OK) << "rank " << r;
            if (r == failing) EXPECT_NE(res[r].message.find("injected"), std::string::npos) << res[r].message;
            else EXPECT_EQ(res[r].status, TERSE_ERR_REMOTE) << res[r].message;
        }
    }
}

TEST(RingDevice, OnlyTheRingTakesAPort) {
    const int n = 2;
    SimDevicePort port(fixq_codec(), TERSE_DTYPE_FLOAT32, n, kMaxChunk, 1);
    RunSpec s = ring_spec(TERSE_DTYPE_FLOAT32, 1000, n, false);
    s.algorithm = Algorithm::RecursiveDoubling;
    s.device = {&port, &port};
    World w(fixq_codec(), n, TERSE_DTYPE_FLOAT32, kMaxChunk);
    bool hung = false;
    auto res = w.run(s, make_inputs(TERSE_DTYPE_FLOAT32, 1000, n, 3), &hung);
    for (int r = 0; r < n; ++r) {
        EXPECT_EQ(res[r].status, TERSE_ERR_INVALID);
        EXPECT_NE(res[r].message.find("device codec call was planned on the"), std::string::npos)
            << res[r].message;
    }
}

}  // namespace
