// Stats: the one owner of a communicator's counters (engine/stats.h).
#include "engine/stats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

using terse::OpAccount;
using terse::Stats;

TEST(Stats, CountsCallsAndInputBytes) {
    Stats s;
    EXPECT_FALSE(s.any_calls());
    s.count_intercepted(4096);
    s.count_intercepted(100);
    s.count_passed();
    EXPECT_TRUE(s.any_calls());
    EXPECT_EQ(s.counters().calls_intercepted, 2u);
    EXPECT_EQ(s.counters().calls_passed, 1u);
    EXPECT_EQ(s.counters().bytes_in, 4196u);
}

TEST(Stats, PassedAloneCountsAsACall) {
    Stats s;
    s.count_passed();
    EXPECT_TRUE(s.any_calls());
    EXPECT_EQ(s.counters().calls_intercepted, 0u);
}

TEST(Stats, OperationsAddUpAndWaitIsTheRest) {
    Stats s;
    OpAccount a;
    a.wire = 1000;
    a.wire_raw = 4000;
    a.raw_chunks = 1;
    a.seconds_total = 1.0;
    a.seconds_encode = 0.25;
    a.seconds_decode = 0.25;
    s.add_operation(a);
    s.add_operation(a);
    const terse_comm_stats_t &c = s.counters();
    EXPECT_EQ(c.bytes_wire, 2000u);
    EXPECT_EQ(c.bytes_wire_raw, 8000u);
    EXPECT_EQ(c.chunks_raw, 2u);
    EXPECT_DOUBLE_EQ(c.seconds_total, 2.0);
    EXPECT_DOUBLE_EQ(c.seconds_encode, 0.5);
    EXPECT_DOUBLE_EQ(c.seconds_decode, 0.5);
    EXPECT_DOUBLE_EQ(c.seconds_wait, 1.0);
}

TEST(Stats, WaitNeverNegative) {
    // Timer granularity can make encode + decode exceed the total.
    Stats s;
    OpAccount a;
    a.seconds_total = 0.1;
    a.seconds_encode = 0.08;
    a.seconds_decode = 0.05;
    s.add_operation(a);
    EXPECT_DOUBLE_EQ(s.counters().seconds_wait, 0.0);
}

TEST(Stats, ErrorsKeepTheMaximum) {
    Stats s;
    s.add_error(0.5, 1e-3);
    s.add_error(0.25, 2e-3);
    EXPECT_DOUBLE_EQ(s.counters().max_abs_error, 0.5);
    EXPECT_DOUBLE_EQ(s.counters().max_rel_error, 2e-3);
    EXPECT_NE(s.format().find("max_abs_err=0.5"), std::string::npos);
}

TEST(Stats, ResetClearsEverything) {
    Stats s;
    s.count_intercepted(8);
    s.add_error(1, 1);
    OpAccount a;
    a.wire = 3;
    s.add_operation(a);
    s.reset();
    terse_comm_stats_t zero{};
    const terse_comm_stats_t c = s.counters();
    EXPECT_EQ(std::memcmp(&c, &zero, sizeof zero), 0);
    EXPECT_FALSE(s.any_calls());
}

TEST(Stats, CountsEachKindApart) {
    Stats s;
    s.count_intercepted(100, TERSE_KIND_IALLREDUCE);
    s.count_intercepted(40, TERSE_KIND_REDUCE_SCATTER);
    s.count_intercepted(60, TERSE_KIND_IALLREDUCE);
    OpAccount a;
    a.kind = TERSE_KIND_IALLREDUCE;
    a.wire = 30;
    s.add_operation(a);
    a.kind = TERSE_KIND_REDUCE_SCATTER;
    a.wire = 7;
    s.add_operation(a);
    const terse_comm_stats_t c = s.counters();
    EXPECT_EQ(c.calls_intercepted, 3u);
    EXPECT_EQ(c.bytes_in, 200u);
    EXPECT_EQ(c.bytes_wire, 37u);
    EXPECT_EQ(c.per_kind[TERSE_KIND_IALLREDUCE].calls, 2u);
    EXPECT_EQ(c.per_kind[TERSE_KIND_IALLREDUCE].bytes_in, 160u);
    EXPECT_EQ(c.per_kind[TERSE_KIND_IALLREDUCE].bytes_wire, 30u);
    EXPECT_EQ(c.per_kind[TERSE_KIND_REDUCE_SCATTER].calls, 1u);
    EXPECT_EQ(c.per_kind[TERSE_KIND_REDUCE_SCATTER].bytes_wire, 7u);
    EXPECT_EQ(c.per_kind[TERSE_KIND_ALLREDUCE].calls, 0u);
    // Only the kinds that ran are printed, as calls/bytes_in/wire.
    const std::string line = s.format();
    EXPECT_NE(line.find(" iallreduce=2/160/30"), std::string::npos) << line;
    EXPECT_NE(line.find(" reduce_scatter=1/40/7"), std::string::npos) << line;
    EXPECT_EQ(line.find(" allgather="), std::string::npos) << line;
    // A copy (kept for a freed communicator's line) has the same counters.
    Stats copy = s;
    EXPECT_EQ(copy.format(), line);
}

TEST(Stats, FormatNamesTheCounters) {
    Stats s;
    s.count_intercepted(64);
    OpAccount a;
    a.wire = 16;
    a.wire_raw = 64;
    s.add_operation(a);
    std::string line = s.format();
    EXPECT_NE(line.find("intercepted=1 "), std::string::npos) << line;
    EXPECT_NE(line.find("bytes_in=64 "), std::string::npos) << line;
    EXPECT_NE(line.find("ratio=4.00"), std::string::npos) << line;
    EXPECT_EQ(line.find("max_abs_err"), std::string::npos) << line;
}
