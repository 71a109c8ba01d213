// LinkMax (engine/link_agreement.h) on simulated ranks of one process: the
// MAX over ranks in one round up to kDirectRanks ranks, by dissemination
// above and for more values than it holds, whatever order the ranks test
// in; its messages match nothing of another agreement.
#include "engine/link_agreement.h"

#include "engine_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace terse {
namespace {

double value_of(int rank, size_t i) { return double((rank * 7919 + int(i) * 104729) % 1000) - 500.0; }

using sim::Fabric;
using sim::SimLink;

struct Ranks {
    Ranks(int n, bool eager) : fabric(n, eager), env(static_cast<size_t>(n)) {
        for (int r = 0; r < n; ++r) {
            links.push_back(std::make_unique<SimLink>(&fabric, r));
            env[size_t(r)].rank = r;
            env[size_t(r)].size = n;
            env[size_t(r)].ctx_id = 5;
            env[size_t(r)].seq = 9;
            env[size_t(r)].link = links.back().get();
        }
    }
    Fabric fabric;
    std::vector<std::unique_ptr<SimLink>> links;
    std::vector<EngineEnv> env;
};

// Starts one agreement per rank and tests them round-robin, starting at
// rank `first`, until all end; every rank must end with the MAX.
void agree_and_check(int n, size_t count, bool eager, int first) {
    Ranks ranks(n, eager);
    const size_t ranks_n = static_cast<size_t>(n);
    std::vector<std::vector<double>> values(ranks_n), scratch(ranks_n);
    std::vector<LinkMax> agreements(ranks_n);
    std::vector<double> want(count, -1e300);
    for (int r = 0; r < n; ++r) {
        values[size_t(r)].resize(count);
        scratch[size_t(r)].resize(count);
        for (size_t i = 0; i < count; ++i) {
            values[size_t(r)][i] = value_of(r, i);
            want[i] = std::max(want[i], values[size_t(r)][i]);
        }
        ASSERT_EQ(agreements[size_t(r)].start(ranks.env[size_t(r)], LinkMax::kClose, values[size_t(r)].data(),
                                              count, scratch[size_t(r)].data()),
                  TERSE_OK)
            << last_error();
    }
    std::vector<bool> done(ranks_n, false);
    for (int turn = 0, ended = 0; ended < n; ++turn) {
        ASSERT_LT(turn, 1000 * n) << "the agreement did not end (n=" << n << ", count=" << count << ")";
        const int r = (first + turn) % n;
        if (done[size_t(r)]) continue;
        Status s = TERSE_ERR_INVALID;
        bool moved = false;
        if (!agreements[size_t(r)].test(&s, &moved)) continue;
        ASSERT_EQ(s, TERSE_OK) << last_error();
        done[size_t(r)] = true;
        ++ended;
    }
    for (int r = 0; r < n; ++r) EXPECT_EQ(values[size_t(r)], want) << "rank " << r << " of " << n;
}

TEST(LinkMax, EveryRankEndsWithTheMaxInBothModes) {
    for (bool eager : {false, true})
        for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16})
            for (size_t count : {size_t(1), size_t(5), LinkMax::kInline, size_t(20)})
                for (int first : {0, n - 1}) {
                    SCOPED_TRACE(testing::Message()
                                 << "n=" << n << " count=" << count << " eager=" << eager << " first=" << first);
                    agree_and_check(n, count, eager, first);
                }
}

// Up to kDirectRanks ranks, every message is posted at start(): a rank
// ends without any other rank testing again.  (The planner's probe relies
// on it: runtime/collective.cc settles it at a later call.)
TEST(LinkMax, OneRoundUpToTheDirectRanks) {
    for (int n : {2, 3, 4, LinkMax::kDirectRanks}) {
        Ranks ranks(n, false);
        std::vector<double> values(static_cast<size_t>(n));
        std::vector<LinkMax> agreements(static_cast<size_t>(n));
        for (int r = 0; r < n; ++r) {
            values[size_t(r)] = double(r);
            ASSERT_EQ(agreements[size_t(r)].start(ranks.env[size_t(r)], LinkMax::kProbe, &values[size_t(r)], 1),
                      TERSE_OK);
        }
        for (int r = 0; r < n; ++r) {
            Status s = TERSE_ERR_INVALID;
            bool moved = false;
            ASSERT_TRUE(agreements[size_t(r)].test(&s, &moved)) << "rank " << r << " of " << n;
            EXPECT_EQ(s, TERSE_OK);
            EXPECT_EQ(values[size_t(r)], double(n - 1));
        }
    }
}

// Two agreements of one operation (same sequence number) in flight at
// once, started in opposite orders on the two halves of the ranks: their
// tag slots keep them apart.
TEST(LinkMax, AnOperationsTwoAgreementsDoNotMatchEachOther) {
    for (int n : {2, 4, 12}) {
        Ranks ranks(n, true);
        std::vector<double> stats(static_cast<size_t>(n)), close(static_cast<size_t>(n));
        std::vector<LinkMax> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
        for (int r = 0; r < n; ++r) {
            stats[size_t(r)] = double(r);
            close[size_t(r)] = 100.0 - r;
            auto &env = ranks.env[size_t(r)];
            if (r % 2) {
                ASSERT_EQ(b[size_t(r)].start(env, LinkMax::kClose, &close[size_t(r)], 1), TERSE_OK);
                ASSERT_EQ(a[size_t(r)].start(env, LinkMax::kCodecStats, &stats[size_t(r)], 1), TERSE_OK);
            } else {
                ASSERT_EQ(a[size_t(r)].start(env, LinkMax::kCodecStats, &stats[size_t(r)], 1), TERSE_OK);
                ASSERT_EQ(b[size_t(r)].start(env, LinkMax::kClose, &close[size_t(r)], 1), TERSE_OK);
            }
        }
        for (int turn = 0; turn < 100; ++turn)
            for (int r = 0; r < n; ++r) {
                Status s;
                bool moved;
                (void)a[size_t(r)].test(&s, &moved);
                (void)b[size_t(r)].test(&s, &moved);
            }
        for (int r = 0; r < n; ++r) {
            EXPECT_FALSE(a[size_t(r)].active() || b[size_t(r)].active()) << "rank " << r << " of " << n;
            EXPECT_EQ(stats[size_t(r)], double(n - 1)) << "rank " << r << " of " << n;
            EXPECT_EQ(close[size_t(r)], 100.0) << "rank " << r << " of " << n;
        }
    }
}

TEST(LinkMax, MoreValuesThanItHoldsNeedScratch) {
    Ranks ranks(2, false);
    std::vector<double> values(LinkMax::kInline + 1, 0.0);
    LinkMax m;
    EXPECT_EQ(m.start(ranks.env[0], LinkMax::kCodecStats, values.data(), values.size()), TERSE_ERR_INVALID);
    EXPECT_NE(std::string(last_error()).find("codec statistics agreement of 9 values needs scratch"),
              std::string::npos)
        << last_error();
    EXPECT_FALSE(m.active());
}

}  // namespace
}  // namespace terse
