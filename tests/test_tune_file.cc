// The tuning file: what it accepts, every error (with line, column, what
// was found and what is accepted), and which entry a call gets.
#include "config/tune_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace terse;

namespace {

std::string err() { return last_error(); }

TuneTable parsed(const char *text) {
    TuneTable t;
    EXPECT_EQ(t.parse(text, "t"), TERSE_OK) << err();
    return t;
}

// text fails to parse with a message holding every part.
void expect_bad(const char *text, std::initializer_list<const char *> parts) {
    TuneTable t;
    ASSERT_EQ(t.parse(text, "t"), TERSE_ERR_INVALID) << text;
    for (const char *p : parts) EXPECT_NE(err().find(p), std::string::npos) << "'" << p << "' not in: " << err();
}

}  // namespace

TEST(TuneFile, ParsesEntriesCommentsAndBlanks) {
    TuneTable t = parsed("# written by terse-tune\n"
                         "\n"
                         "allreduce:0-64K:@mpi\n"
                         "  allreduce:64K-1M:@ring:codec=none:chunk=256K:depth=4:ranks=2\r\n"
                         "allreduce:1M-inf:@recursive_doubling\n"
                         "reduce_scatter:1K-2K:@ring\n");
    ASSERT_EQ(t.entries().size(), 4u);
    const TuneEntry &e = t.entries()[1];
    EXPECT_EQ(e.coll, TuneColl::Allreduce);
    EXPECT_EQ(e.lo, 65536u);
    EXPECT_EQ(e.hi, 1u << 20);
    EXPECT_EQ(e.schedule, TuneSchedule::Ring);
    EXPECT_EQ(e.codec, TuneCodec::None);
    EXPECT_EQ(e.chunk_bytes, 256u * 1024);
    EXPECT_EQ(e.depth, 4);
    EXPECT_EQ(e.ranks, 2);
    EXPECT_EQ(e.line, 4);
    EXPECT_EQ(t.entries()[2].hi, SIZE_MAX);
    EXPECT_EQ(t.canonical(), "allreduce:0-64K:@mpi\n"
                             "allreduce:64K-1M:@ring:codec=none:chunk=256K:depth=4:ranks=2\n"
                             "allreduce:1M-inf:@recursive_doubling\n"
                             "reduce_scatter:1K-2K:@ring\n");
    // The canonical text reads back to the same table.
    EXPECT_EQ(parsed(t.canonical().c_str()).hash(), t.hash());
}

TEST(TuneFile, EmptyFileIsAnEmptyTable) {
    EXPECT_TRUE(parsed("").empty());
    EXPECT_TRUE(parsed("# nothing\n\n").empty());
}

TEST(TuneFile, Lookup) {
    TuneTable t = parsed("allreduce:64K-1M:@ring:ranks=4\n"
                         "allreduce:0-1M:@recursive_doubling\n"
                         "allgather:0-inf:@mpi\n");
    EXPECT_EQ(t.lookup(TuneColl::Allreduce, 4, 65536)->line, 1);    // exact ranks first
    EXPECT_EQ(t.lookup(TuneColl::Allreduce, 2, 65536)->line, 2);    // any size
    EXPECT_EQ(t.lookup(TuneColl::Allreduce, 4, 65535)->line, 2);    // below the ranks=4 range
    EXPECT_EQ(t.lookup(TuneColl::Allreduce, 4, 1 << 20), nullptr);  // hi excluded
    EXPECT_EQ(t.lookup(TuneColl::ReduceScatter, 2, 100), nullptr);
    EXPECT_EQ(t.lookup(TuneColl::Allgather, 3, SIZE_MAX - 1)->schedule, TuneSchedule::Mpi);
}

TEST(TuneFile, HashFollowsContent) {
    EXPECT_EQ(parsed("allreduce:0-1M:@ring\n").hash(), parsed("# x\nallreduce:0-1024K:@ring").hash());
    EXPECT_NE(parsed("allreduce:0-1M:@ring\n").hash(), parsed("allreduce:0-1M:@ring:depth=2\n").hash());
}

TEST(TuneFile, Errors) {
    expect_bad("allreduse:0-1M:@ring", {"t:1:1:", "unknown collective 'allreduse'", "did you mean 'allreduce'",
                                        "accepted: allreduce, reduce_scatter, allgather"});
    expect_bad("allreduce:0-1M", {"t:1:15:", "collective:range:@schedule"});
    expect_bad("allreduce", {"t:1:10:", "collective:range:@schedule"});
    expect_bad("allreduce:64K:@ring", {"t:1:11:", "'64K' is not a byte range lo-hi"});
    expect_bad("allreduce:x-1M:@ring", {"t:1:11:", "'x' is not a size"});
    expect_bad("allreduce:0-lots:@ring", {"t:1:13:", "'lots' is not a size or inf"});
    expect_bad("allreduce:1M-64K:@ring", {"t:1:11:", "empty range '1M-64K'"});
    expect_bad("allreduce:0-1M:ring",
               {"t:1:16:", "expected @schedule, found 'ring'", "@ring, @recursive_doubling"});
    expect_bad("allreduce:0-1M:@rign", {"t:1:17:", "unknown schedule 'rign'", "did you mean 'ring'",
                                        "accepted: ring, recursive_doubling, gather, mpi"});
    expect_bad("allreduce:0-1M:@recursive_doubing", {"did you mean 'recursive_doubling'"});
    expect_bad("allreduce:0-1M:@ring:dept=2",
               {"t:1:22:", "unknown key 'dept'", "did you mean 'depth'", "accepted: codec, chunk, depth, ranks"});
    expect_bad("allreduce:0-1M:@ring:depth", {"t:1:22:", "key 'depth' has no '=value'"});
    expect_bad("allreduce:0-1M:@ring:depth=2:depth=3", {"t:1:30:", "key 'depth' is given twice"});
    expect_bad("allreduce:0-1M:@ring:depth=0", {"t:1:28:", "depth '0'", "1..64"});
    expect_bad("allreduce:0-1M:@ring:chunk=1K", {"t:1:28:", "chunk '1K'", "4K..1G"});
    expect_bad("allreduce:0-1M:@ring:codec=zfp", {"t:1:28:", "codec 'zfp'", "configured", "none", "@mpi"});
    expect_bad("allreduce:0-1M:@ring:ranks=0", {"t:1:28:", "ranks '0'"});
    expect_bad("allreduce:0-1M:@mpi:depth=2", {"t:1:16:", "@mpi passes the call to the MPI library"});
    expect_bad("allgather:0-1M:@recursive_doubling", {"t:1:16:", "allgather runs only @ring or @mpi"});
    expect_bad("allreduce:0-1M:@ring\n"
               "# comment\n"
               "  allreduce:512K-2M:@mpi\n",
               {"t:3:3:", "range 512K-2M of allreduce overlaps line 1 (allreduce:0-1M:@ring)"});
}

TEST(TuneFile, RangesOfOtherCollectivesOrSizesDoNotOverlap) {
    TuneTable t = parsed("allreduce:0-1M:@ring\n"
                         "allgather:0-1M:@ring\n"
                         "allreduce:0-1M:@mpi:ranks=8\n");
    EXPECT_EQ(t.entries().size(), 3u);
}

TEST(TuneFile, Load) {
    TuneTable t;
    EXPECT_EQ(t.load("/nonexistent/terse.tune"), TERSE_ERR_INVALID);
    EXPECT_NE(err().find("tuning file /nonexistent/terse.tune: cannot be read"), std::string::npos) << err();
    char path[] = "/tmp/terse_tune_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("allreduce:0-inf:@gather\nallreduce:x", f);
    fclose(f);
    EXPECT_EQ(t.load(path), TERSE_ERR_INVALID);
    EXPECT_NE(err().find(std::string("tuning file ") + path + ":2:12: an entry is collective:range:@schedule"),
              std::string::npos)
        << err();
    remove(path);
}
