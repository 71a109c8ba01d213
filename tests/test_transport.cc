// Multi-rank tests of the UCX transport (lib/transport/ucx_transport.cc), run under
// mpirun by test_transport.sh.  Every test is symmetric: each rank sends to
// its right neighbour and receives from its left, so a failure on one rank
// never leaves another waiting on a message that is not coming, and every
// wait has a deadline so a lost message fails the test instead of hanging.
//
// `test_transport --multi` initializes MPI and the transport for
// MPI_THREAD_MULTIPLE and adds tests where threads share the worker (and
// sleep on it).
// `test_transport --pingpong` instead prints a 1 MiB ping-pong measurement
// between ranks 0 and 1 (for information; no test asserts on time).
#include "engine/message_tag.h"
#include "runtime/transport_mpi.h"
#include "transport/ucx_transport.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <dlfcn.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using terse::make_tag;
using terse::Request;
using terse::Status;
using terse::Transport;

namespace {

int g_rank = 0, g_size = 1;
bool g_multi = false;

int right() { return (g_rank + 1) % g_size; }
int left() { return (g_rank + g_size - 1) % g_size; }

Transport *tp() { return Transport::get(); }

// Progress until the request completes or the deadline passes.  Returns
// false on timeout; *st gets the request's status.
bool wait(Request &r, Status *st, double seconds = 30.0) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!r.test(st)) {
        // Yield when idle: the ranks (and threads) share 2 cores under
        // oversubscription, and a spinning waiter starves the sender.
        if (tp()->progress() == 0) std::this_thread::yield();
        if (std::chrono::steady_clock::now() > deadline) return false;
    }
    return true;
}

// As wait(), but sleeping in Transport::wait_for_events(timeout_us) while
// nothing moves, as the engine does.
bool wait_sleeping(Request &r, Status *st, unsigned timeout_us, double seconds = 60.0) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!r.test(st)) {
        if (tp()->progress() == 0) tp()->wait_for_events(timeout_us);
        if (std::chrono::steady_clock::now() > deadline) return false;
    }
    return true;
}

unsigned char pattern(int rank, size_t i, size_t salt) {
    return static_cast<unsigned char>((i * 131u + size_t(rank) * 17u + salt * 7u) ^ (i >> 9));
}

std::vector<unsigned char> make_buffer(int rank, size_t n, size_t salt) {
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = pattern(rank, i, salt);
    return v;
}

size_t count_mismatches(const std::vector<unsigned char> &v, size_t n, int rank, size_t salt) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += v[i] != pattern(rank, i, salt);
    return bad;
}

// Runs at the end of each test so that no test's messages overlap the next.
class TransportTest : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_NE(tp(), nullptr) << "transport not initialized"; }
    void TearDown() override { MPI_Barrier(MPI_COMM_WORLD); }
};

// First, so that the threads also race to create the endpoints.
TEST_F(TransportTest, ThreadsShareTheWorker) {
    if (!g_multi) GTEST_SKIP() << "needs --multi (MPI_THREAD_MULTIPLE)";
    constexpr int kThreads = 2, kRounds = 100;
    std::vector<int> errors(kThreads, 0);
    auto body = [&](int t) {
        for (int round = 0; round < kRounds; ++round) {
            size_t n = round % 2 ? size_t(256) << 10 : 64;
            size_t salt = size_t(t * 1000 + round);
            auto out = make_buffer(g_rank, n, salt);
            std::vector<unsigned char> in(n, 0);
            Request rr, sr;
            uint32_t ctx = 20 + uint32_t(t);
            if (tp()->irecv(left(), make_tag(ctx, left(), uint32_t(round), 0), in.data(), n, &rr) != TERSE_OK ||
                tp()->isend(right(), make_tag(ctx, g_rank, uint32_t(round), 0), out.data(), n, &sr) != TERSE_OK) {
                ++errors[t];
                return;
            }
            Status st1 = TERSE_ERR_INVALID, st2 = TERSE_ERR_INVALID;
            if (!wait(rr, &st1) || !wait(sr, &st2) || st1 != TERSE_OK || st2 != TERSE_OK ||
                rr.received_length() != n || count_mismatches(in, n, left(), salt) != 0) {
                ++errors[t];
                return;
            }
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], 0) << "thread " << t;
    EXPECT_LE(tp()->endpoint_count(), size_t(g_size - 1));
}

// Threads that sleep while waiting: one at a time sleeps on the worker's
// event fd, the others nap; nobody may hang or lose a message.
TEST_F(TransportTest, ThreadsSleepWhileWaiting) {
    if (!g_multi) GTEST_SKIP() << "needs --multi (MPI_THREAD_MULTIPLE)";
    constexpr int kThreads = 2, kRounds = 60;
    std::vector<int> errors(kThreads, 0);
    auto body = [&](int t) {
        for (int round = 0; round < kRounds; ++round) {
            size_t n = round % 3 == 2 ? size_t(1) << 20 : round % 3 ? size_t(16) << 10 : 8;
            size_t salt = size_t(t * 1000 + round + 7);
            auto out = make_buffer(g_rank, n, salt);
            std::vector<unsigned char> in(n, 0);
            Request rr, sr;
            uint32_t ctx = 30 + uint32_t(t);
            if (tp()->irecv(left(), make_tag(ctx, left(), uint32_t(round), 0), in.data(), n, &rr) != TERSE_OK ||
                tp()->isend(right(), make_tag(ctx, g_rank, uint32_t(round), 0), out.data(), n, &sr) != TERSE_OK) {
                ++errors[t];
                return;
            }
            Status st1 = TERSE_ERR_INVALID, st2 = TERSE_ERR_INVALID;
            if (!wait_sleeping(rr, &st1, 1000) || !wait_sleeping(sr, &st2, 1000) || st1 != TERSE_OK ||
                st2 != TERSE_OK || rr.received_length() != n || count_mismatches(in, n, left(), salt) != 0) {
                ++errors[t];
                return;
            }
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
    for (auto &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], 0) << "thread " << t;
}

// The rendezvous rule of ucx_transport.h: TCP alone, threshold left alone ->
// eager only; UCX's default transports (shared memory here) -> UCX decides.
TEST_F(TransportTest, RendezvousRuleFollowsTheTransports) {
    const char *tls = std::getenv("TERSE_UCX_TLS");
    if (!tls) tls = std::getenv("UCX_TLS");
    const bool thresh_set = std::getenv("TERSE_UCX_RNDV_THRESH") || std::getenv("UCX_RNDV_THRESH");
    if (!tls) {
        EXPECT_FALSE(tp()->eager_only()) << "shared memory is available: rendezvous must stay with UCX";
    } else if (std::strcmp(tls, "tcp") == 0) {
        EXPECT_EQ(tp()->eager_only(), !thresh_set)
            << "TLS=tcp, RNDV_THRESH " << (thresh_set ? "set by the user" : "not set");
    } else {
        GTEST_SKIP() << "no expectation for TLS=" << tls;
    }
}

// A sleeping waiter is woken by the message it waits for: every wait here
// may sleep 30 s, so a wakeup that never comes fails the 60 s deadline
// rather than passing slowly.  Each rank sends only after a pause, so the
// receivers are asleep when the data comes.  The 1 MiB message needs the
// sender woken too (rendezvous over shared memory: the receiver's reply;
// eager TCP: room in the socket).
TEST_F(TransportTest, WaitForEventsWakesOnArrival) {
    if (!tp()->wakeup_enabled()) GTEST_SKIP() << "UCX gave no event fd here; waits nap";
    if (g_multi) GTEST_SKIP() << "with threads a sleeper may miss an event another thread took";
    const size_t sizes[] = {8, size_t(64) << 10, size_t(1) << 20, size_t(8) << 20};
    uint32_t seq = 0;
    for (size_t n : sizes) {
        SCOPED_TRACE("size " + std::to_string(n));
        auto out = make_buffer(g_rank, n, n + 3);
        std::vector<unsigned char> in(n, 0);
        Request rr, sr;
        ASSERT_EQ(tp()->irecv(left(), make_tag(40, left(), seq, 0), in.data(), n, &rr), TERSE_OK)
            << terse::last_error();
        MPI_Barrier(MPI_COMM_WORLD);
        std::this_thread::sleep_for(std::chrono::milliseconds(20 + 10 * g_rank));
        ASSERT_EQ(tp()->isend(right(), make_tag(40, g_rank, seq, 0), out.data(), n, &sr), TERSE_OK)
            << terse::last_error();
        Status st = TERSE_ERR_INVALID;
        constexpr unsigned kLong = 30u * 1000u * 1000u;
        ASSERT_TRUE(wait_sleeping(rr, &st, kLong)) << "receive: no wakeup";
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        ASSERT_TRUE(wait_sleeping(sr, &st, kLong)) << "send: no wakeup";
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        EXPECT_EQ(rr.received_length(), n);
        EXPECT_EQ(count_mismatches(in, n, left(), n + 3), 0u);
        ++seq;
    }
}

// Nothing to wait for: the sleep ends by itself (bounded), and so does a
// nap-length one.
TEST_F(TransportTest, WaitForEventsIsBounded) {
    tp()->progress();
    tp()->wait_for_events(2000);
    tp()->wait_for_events(0);
    SUCCEED();
}

TEST_F(TransportTest, WorldRankAndSize) {
    EXPECT_EQ(tp()->world_rank(), g_rank);
    EXPECT_EQ(tp()->world_size(), g_size);
}

TEST_F(TransportTest, RingExchangeOfManySizes) {
    const size_t sizes[] = {0, 1, 8192, size_t(1) << 20, size_t(16) << 20};
    uint32_t seq = 0;
    for (size_t n : sizes) {
        SCOPED_TRACE("size " + std::to_string(n));
        auto out = make_buffer(g_rank, n, n);
        std::vector<unsigned char> in(n + 1, 0xEE);
        Request rr, sr;
        ASSERT_EQ(tp()->irecv(left(), make_tag(1, left(), seq, 0), in.data(), n, &rr), TERSE_OK)
            << terse::last_error();
        ASSERT_EQ(tp()->isend(right(), make_tag(1, g_rank, seq, 0), out.data(), n, &sr), TERSE_OK)
            << terse::last_error();
        Status st = TERSE_ERR_INVALID;
        ASSERT_TRUE(wait(rr, &st)) << "receive timed out";
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        ASSERT_TRUE(wait(sr, &st)) << "send timed out";
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        EXPECT_EQ(rr.received_length(), n);
        EXPECT_EQ(count_mismatches(in, n, left(), n), 0u);
        EXPECT_EQ(in[n], 0xEE) << "wrote past the message";
        ++seq;
    }
}

TEST_F(TransportTest, ManySmallMessagesWithDistinctTags) {
    constexpr int kCount = 256;
    constexpr size_t kLen = 64;
    std::vector<std::vector<unsigned char>> in(kCount, std::vector<unsigned char>(kLen, 0));
    std::vector<std::vector<unsigned char>> out(kCount);
    std::vector<Request> rr(kCount), sr(kCount);
    // Receives posted in reverse order: matching is by tag, not by order.
    for (int i = kCount - 1; i >= 0; --i)
        ASSERT_EQ(tp()->irecv(left(), make_tag(2, left(), 0, uint32_t(i)), in[i].data(), kLen, &rr[i]), TERSE_OK)
            << terse::last_error();
    for (int i = 0; i < kCount; ++i) {
        out[i] = make_buffer(g_rank, kLen, size_t(i));
        ASSERT_EQ(tp()->isend(right(), make_tag(2, g_rank, 0, uint32_t(i)), out[i].data(), kLen, &sr[i]),
                  TERSE_OK)
            << terse::last_error();
    }
    for (int i = 0; i < kCount; ++i) {
        Status st = TERSE_ERR_INVALID;
        ASSERT_TRUE(wait(rr[i], &st)) << "receive " << i << " timed out";
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        EXPECT_EQ(rr[i].received_length(), kLen);
        EXPECT_EQ(count_mismatches(in[i], kLen, left(), size_t(i)), 0u) << "message " << i;
    }
    for (int i = 0; i < kCount; ++i) {
        Status st = TERSE_ERR_INVALID;
        ASSERT_TRUE(wait(sr[i], &st)) << "send " << i << " timed out";
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
    }
}

// The engine relies on messages with equal tags from one sender matching in
// posting order (slot numbers wrap).
TEST_F(TransportTest, EqualTagsMatchInPostingOrder) {
    constexpr int kCount = 64;
    std::vector<uint32_t> in(kCount, 0xFFFFFFFFu), out(kCount);
    std::vector<Request> rr(kCount), sr(kCount);
    uint64_t rtag = make_tag(3, left(), 0, 7), stag = make_tag(3, g_rank, 0, 7);
    for (int i = 0; i < kCount; ++i) {
        out[i] = uint32_t(i);
        ASSERT_EQ(tp()->isend(right(), stag, &out[i], sizeof out[i], &sr[i]), TERSE_OK) << terse::last_error();
    }
    for (int i = 0; i < kCount; ++i)
        ASSERT_EQ(tp()->irecv(left(), rtag, &in[i], sizeof in[i], &rr[i]), TERSE_OK) << terse::last_error();
    for (int i = 0; i < kCount; ++i) {
        Status st = TERSE_ERR_INVALID;
        ASSERT_TRUE(wait(rr[i], &st));
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        EXPECT_EQ(in[i], uint32_t(i)) << "receive " << i << " matched out of order";
        ASSERT_TRUE(wait(sr[i], &st));
    }
}

TEST_F(TransportTest, ReceiveIntoLargerBufferReportsLength) {
    const size_t lens[] = {100, size_t(1) << 20};  // eager and rendezvous
    uint32_t seq = 0;
    for (size_t n : lens) {
        SCOPED_TRACE("length " + std::to_string(n));
        auto out = make_buffer(g_rank, n, 3);
        std::vector<unsigned char> in(2 * n + 4096, 0);
        Request rr, sr;
        ASSERT_EQ(tp()->irecv(left(), make_tag(4, left(), seq, 0), in.data(), in.size(), &rr), TERSE_OK);
        ASSERT_EQ(tp()->isend(right(), make_tag(4, g_rank, seq, 0), out.data(), n, &sr), TERSE_OK);
        Status st = TERSE_ERR_INVALID;
        ASSERT_TRUE(wait(rr, &st));
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        EXPECT_EQ(rr.received_length(), n);
        EXPECT_EQ(count_mismatches(in, n, left(), 3), 0u);
        ASSERT_TRUE(wait(sr, &st));
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        ++seq;
    }
}

TEST_F(TransportTest, TruncationIsAnErrorNamingThePeer) {
    const size_t lens[] = {1000, size_t(1) << 20};  // eager and rendezvous
    uint32_t seq = 0;
    for (size_t n : lens) {
        SCOPED_TRACE("length " + std::to_string(n));
        auto out = make_buffer(g_rank, n, 5);
        std::vector<unsigned char> in(n / 2, 0);
        Request rr, sr;
        ASSERT_EQ(tp()->isend(right(), make_tag(5, g_rank, seq, 1), out.data(), n, &sr), TERSE_OK);
        // Make sure the message has arrived before the receive is posted, as
        // well as the usual case of a receive waiting for its message.
        if (seq == 0) MPI_Barrier(MPI_COMM_WORLD);
        Status st = tp()->irecv(left(), make_tag(5, left(), seq, 1), in.data(), in.size(), &rr);
        std::string msg = terse::last_error();
        if (st == TERSE_OK) {
            ASSERT_TRUE(wait(rr, &st)) << "truncated receive never completed";
            msg = terse::last_error();
        }
        EXPECT_EQ(st, TERSE_ERR_TRANSPORT);
        EXPECT_NE(msg.find("world rank " + std::to_string(left())), std::string::npos) << msg;
        EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
        EXPECT_NE(msg.find(std::to_string(in.size()) + " bytes"), std::string::npos) << msg;
        // The tag's fields, as the describer handed to init writes them.
        const std::string tag = "(tag: context 5, source rank " + std::to_string(left()) + ", op seq " +
                                std::to_string(seq) + ", slot 1)";
        EXPECT_NE(msg.find(tag), std::string::npos) << msg;
        Status sst = TERSE_ERR_INVALID;
        EXPECT_TRUE(wait(sr, &sst)) << "send of a truncated message never completed";
        ++seq;
    }
}

TEST_F(TransportTest, PendingRequestsCanBeDestroyed) {
    unsigned char byte = 0;
    // A receive for a message that is never sent: destroying it cancels it.
    {
        Request rr;
        ASSERT_EQ(tp()->irecv(left(), make_tag(6, left(), 0, 0), &byte, 1, &rr), TERSE_OK);
        Status st;
        EXPECT_FALSE(rr.test(&st));
        EXPECT_TRUE(rr.active());
    }
    {
        Request rr;
        ASSERT_EQ(tp()->irecv(left(), make_tag(6, left(), 0, 1), &byte, 1, &rr), TERSE_OK);
        rr.release();
        EXPECT_FALSE(rr.active());
    }
    // The cancelled receive of tag slot 0 must not swallow a later message
    // with that tag: a fresh receive gets it.
    MPI_Barrier(MPI_COMM_WORLD);
    unsigned char out = static_cast<unsigned char>(g_rank + 1), in = 0;
    Request sr, rr;
    ASSERT_EQ(tp()->isend(right(), make_tag(6, g_rank, 0, 0), &out, 1, &sr), TERSE_OK);
    ASSERT_EQ(tp()->irecv(left(), make_tag(6, left(), 0, 0), &in, 1, &rr), TERSE_OK);
    Status st = TERSE_ERR_INVALID;
    ASSERT_TRUE(wait(rr, &st));
    EXPECT_EQ(st, TERSE_OK) << terse::last_error();
    EXPECT_EQ(in, static_cast<unsigned char>(left() + 1));
    ASSERT_TRUE(wait(sr, &st));

    // A large send destroyed right after its peer's receive completes (the
    // send may still be finishing): the destructor waits for it.
    const size_t n = size_t(4) << 20;
    auto big = make_buffer(g_rank, n, 6);
    std::vector<unsigned char> bigin(n, 0);
    Request brr;
    ASSERT_EQ(tp()->irecv(left(), make_tag(6, left(), 1, 0), bigin.data(), n, &brr), TERSE_OK);
    {
        Request bsr;
        ASSERT_EQ(tp()->isend(right(), make_tag(6, g_rank, 1, 0), big.data(), n, &bsr), TERSE_OK);
        ASSERT_TRUE(wait(brr, &st));
    }
    EXPECT_EQ(st, TERSE_OK) << terse::last_error();
    EXPECT_EQ(count_mismatches(bigin, n, left(), 6), 0u);
}

TEST_F(TransportTest, PendingRequestsCanBeMoved) {
    const size_t n = size_t(256) << 10;
    std::vector<unsigned char> in(n, 0);
    auto out = make_buffer(g_rank, n, 8);
    Request a;
    ASSERT_EQ(tp()->irecv(left(), make_tag(7, left(), 0, 0), in.data(), n, &a), TERSE_OK);
    Request b(std::move(a));
    EXPECT_FALSE(a.active());
    std::vector<Request> slots(1);
    slots[0] = std::move(b);
    EXPECT_FALSE(b.active());
    slots.resize(16);  // reallocation moves the pending request again
    MPI_Barrier(MPI_COMM_WORLD);
    Request sr;
    ASSERT_EQ(tp()->isend(right(), make_tag(7, g_rank, 0, 0), out.data(), n, &sr), TERSE_OK);
    Status st = TERSE_ERR_INVALID;
    ASSERT_TRUE(wait(slots[0], &st));
    EXPECT_EQ(st, TERSE_OK) << terse::last_error();
    EXPECT_EQ(slots[0].received_length(), n);
    EXPECT_EQ(count_mismatches(in, n, left(), 8), 0u);
    ASSERT_TRUE(wait(sr, &st));
}

TEST_F(TransportTest, BadPeerIsRejected) {
    unsigned char b = 0;
    Request r;
    EXPECT_EQ(tp()->isend(g_size, 0, &b, 1, &r), TERSE_ERR_INVALID);
    EXPECT_NE(std::string(terse::last_error()).find(std::to_string(g_size)), std::string::npos);
    EXPECT_EQ(tp()->irecv(-1, 0, &b, 1, &r), TERSE_ERR_INVALID);
    EXPECT_FALSE(r.active());
}

// Every "communicator" (context id) reuses the per-peer endpoints.
TEST_F(TransportTest, EndpointsStayFlatAcrossCommunicators) {
    for (uint32_t ctx = 100; ctx < 300; ++ctx) {
        uint64_t out = ctx * 1000u + uint64_t(g_rank), in = 0;
        const size_t np = static_cast<size_t>(g_size);
        std::vector<Request> sr(np), rr(np);
        std::vector<uint64_t> ins(np, 0);
        for (int p = 0; p < g_size; ++p) {
            if (p == g_rank) continue;
            ASSERT_EQ(tp()->irecv(p, make_tag(ctx, uint32_t(p), 0, 0), &ins[p], sizeof in, &rr[p]), TERSE_OK);
            ASSERT_EQ(tp()->isend(p, make_tag(ctx, uint32_t(g_rank), 0, 0), &out, sizeof out, &sr[p]), TERSE_OK);
        }
        for (int p = 0; p < g_size; ++p) {
            if (p == g_rank) continue;
            Status st = TERSE_ERR_INVALID;
            ASSERT_TRUE(wait(rr[p], &st));
            EXPECT_EQ(ins[p], ctx * 1000u + uint64_t(p));
            ASSERT_TRUE(wait(sr[p], &st));
        }
        ASSERT_LE(tp()->endpoint_count(), size_t(g_size - 1)) << "after context " << ctx;
    }
    EXPECT_EQ(tp()->endpoint_count(), size_t(g_size - 1));
}

// Runs after the endpoint count check: it adds an endpoint to this rank.
TEST_F(TransportTest, SendToSelf) {
    const size_t lens[] = {0, 100, size_t(1) << 20};
    uint32_t seq = 0;
    for (size_t n : lens) {
        SCOPED_TRACE("length " + std::to_string(n));
        auto out = make_buffer(g_rank, n, 9);
        std::vector<unsigned char> in(n, 0);
        Request rr, sr;
        ASSERT_EQ(tp()->isend(g_rank, make_tag(8, g_rank, seq, 0), out.data(), n, &sr), TERSE_OK)
            << terse::last_error();
        ASSERT_EQ(tp()->irecv(g_rank, make_tag(8, g_rank, seq, 0), in.data(), n, &rr), TERSE_OK)
            << terse::last_error();
        Status st = TERSE_ERR_INVALID;
        ASSERT_TRUE(wait(rr, &st));
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        EXPECT_EQ(rr.received_length(), n);
        EXPECT_EQ(count_mismatches(in, n, g_rank, 9), 0u);
        ASSERT_TRUE(wait(sr, &st));
        EXPECT_EQ(st, TERSE_OK) << terse::last_error();
        ++seq;
    }
    EXPECT_LE(tp()->endpoint_count(), size_t(g_size));
}

// Last: tears the transport down.
TEST_F(TransportTest, FinalizeTwice) {
    Transport::finalize();
    EXPECT_EQ(Transport::get(), nullptr);
    Transport::finalize();
    EXPECT_EQ(Transport::get(), nullptr);
}

// ------------------------------------------ what the transport learns from MPI

// PMPI_Iallgather, counted: this executable's definition interposes on the
// MPI library's for the calls of terse's code linked into it.
int g_iallgathers = 0;
}  // namespace

extern "C" int PMPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    using Fn = int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm, MPI_Request *);
    static const auto next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "PMPI_Iallgather"));
    ++g_iallgathers;
    return next ? next(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request)
                : MPI_ERR_INTERN;
}

namespace {

// The out-of-band gather is blocking until progress_while_waiting(): no
// PMPI_Iallgather (counted by the shim above), and its blocks are in place
// when allgather() returns.  (A non-blocking collective would make Open MPI
// poll libnbc in every progress loop of the job: runtime/transport_mpi.h.)
TEST(TransportMpi, OutOfBandGatherIsBlockingUntilAskedOtherwise) {
    terse::MpiOob oob(MPI_COMM_WORLD);
    for (bool nonblocking : {false, true}) {
        if (nonblocking) oob.progress_while_waiting();
        const int mine = 1000 * (nonblocking ? 2 : 1) + g_rank;
        std::vector<int> all(size_t(g_size), -1);
        void *req = nullptr;
        const int before = g_iallgathers;
        ASSERT_EQ(oob.allgather(&mine, all.data(), sizeof mine, &req), TERSE_OK) << terse::last_error();
        EXPECT_EQ(g_iallgathers - before, nonblocking ? 1 : 0);
        if (!nonblocking) {
            for (int r = 0; r < g_size; ++r) EXPECT_EQ(all[size_t(r)], 1000 + r) << "block of rank " << r;
        }
        Status st = TERSE_ERR_INVALID;
        while (!oob.test(req, &st)) {}
        oob.free(req);
        EXPECT_EQ(st, TERSE_OK);
        for (int r = 0; r < g_size; ++r) EXPECT_EQ(all[size_t(r)], mine - g_rank + r) << "block of rank " << r;
    }
}

// node_cores_oversubscribed() groups ranks by host name, where MPI's
// shared-memory split groups them by what the launcher says: the same
// nodes on one host, and on the emulated nodes of perf/netns-nodes.sh
// (each its own UTS namespace).  The answer is the split's.
TEST(TransportMpi, OversubscriptionAgreesWithTheSharedMemorySplit) {
    MPI_Comm node = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), MPI_SUCCESS);
    int local = 1;
    MPI_Comm_size(node, &local);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
    ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, &cpus, int(sizeof cpus), MPI_BYTE, MPI_BOR, node), MPI_SUCCESS);
    MPI_Comm_free(&node);
    bool oversubscribed = false;
    ASSERT_EQ(terse::node_cores_oversubscribed(&oversubscribed), TERSE_OK) << terse::last_error();
    EXPECT_EQ(oversubscribed, local > CPU_COUNT(&cpus))
        << local << " ranks on this node, " << CPU_COUNT(&cpus) << " CPUs among them";
}

// ---------------------------------------------------------------- ping-pong

void pingpong() {
    if (g_size < 2) return;
    const size_t sizes[] = {8, size_t(64) << 10, size_t(1) << 20, size_t(4) << 20};
    for (size_t n : sizes) {
        std::vector<unsigned char> buf(n, 1);
        int iters = n < 4096 ? 2000 : 200;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = -10; i < iters; ++i) {  // 10 warm-up rounds
            if (i == 0) t0 = MPI_Wtime();
            Request r;
            Status st;
            if (g_rank == 0) {
                tp()->isend(1, make_tag(50, 0, 0, 0), buf.data(), n, &r);
                wait(r, &st);
                tp()->irecv(1, make_tag(50, 1, 0, 0), buf.data(), n, &r);
                wait(r, &st);
            } else if (g_rank == 1) {
                tp()->irecv(0, make_tag(50, 0, 0, 0), buf.data(), n, &r);
                wait(r, &st);
                tp()->isend(0, make_tag(50, 1, 0, 0), buf.data(), n, &r);
                wait(r, &st);
            }
        }
        double half_rtt = (MPI_Wtime() - t0) / iters / 2;
        if (g_rank == 0)
            printf("pingpong %8zu bytes: %8.2f us one-way, %8.1f MB/s\n", n, half_rtt * 1e6, n / half_rtt / 1e6);
    }
}

// Non-root ranks print only failures, prefixed with their rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
    void OnTestPartResult(const ::testing::TestPartResult &r) override {
        if (r.failed())
            fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", g_rank, r.file_name() ? r.file_name() : "?",
                    r.line_number(), r.summary());
    }
};

}  // namespace

int main(int argc, char **argv) {
    bool want_pingpong = false;
    for (int i = 1; i < argc; ++i) {
        want_pingpong |= std::strcmp(argv[i], "--pingpong") == 0;
        g_multi |= std::strcmp(argv[i], "--multi") == 0;
    }
    if (g_multi) {
        int provided = MPI_THREAD_SINGLE;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    ::testing::InitGoogleTest(&argc, argv);
    if (g_rank != 0) {
        auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new RankFailurePrinter);
    }

    terse::MpiOob oob(MPI_COMM_WORLD);
    terse::TransportParams params;
    params.oob = &oob;
    params.thread_multiple = g_multi;
    params.describe_tag = terse::describe_tag;
    Status st = Transport::init(params);
    oob.progress_while_waiting();  // as the runtime does before finalize
    int ok = st == TERSE_OK, all_ok = 0;
    if (!ok) fprintf(stderr, "[rank %d] Transport::init failed: %s\n", g_rank, terse::last_error());
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int failed = 1;
    if (all_ok) {
        if (want_pingpong) {
            pingpong();
            failed = 0;
        } else {
            failed = RUN_ALL_TESTS() != 0;
        }
    }
    Transport::finalize();
    int any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0 && any_failed && !failed) fprintf(stderr, "a test failed on another rank\n");
    MPI_Finalize();
    return any_failed ? 1 : 0;
}
