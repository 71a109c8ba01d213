// The tuning file (TERSE_TUNE_FILE, terse(7) "TUNING FILE"; written by
// terse-tune(1)): per collective, communicator size and message size range,
// the schedule, codec, chunk and depth that override the planner's choice.
// One entry per line, fields separated by ':' as in UCC's UCC_TL_UCP_TUNE
// strings:
//
//   allreduce:64K-1M:@ring:codec=none:chunk=256K:depth=4:ranks=4
//   allreduce:1M-inf:@recursive_doubling
//   allreduce:0-64K:@mpi
//
// collective (allreduce, reduce_scatter, allgather), a byte range lo-hi of
// the call's data (lo included, hi excluded, K/M/G suffixes, hi "inf"), the
// schedule (@ring, @recursive_doubling, @gather, or @mpi: pass the call to
// the MPI library), then optional key=value fields: codec=configured|none,
// chunk=<size>, depth=1..64, ranks=<communicator size>.  '#' starts a
// comment line.  Pure: parsing and lookup, no I/O but load().
#pragma once

#include "util/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace terse {

enum class TuneColl { Allreduce, ReduceScatter, Allgather };
enum class TuneSchedule { Ring, RecursiveDoubling, Gather, Mpi };
enum class TuneCodec { Configured, None };

const char *tune_coll_name(TuneColl c);
const char *tune_schedule_name(TuneSchedule s);

struct TuneEntry {
    TuneColl coll = TuneColl::Allreduce;
    size_t lo = 0, hi = SIZE_MAX;  // bytes of the call, [lo, hi); SIZE_MAX: unbounded
    int ranks = 0;                 // communicator size it applies to; 0: any
    TuneSchedule schedule = TuneSchedule::Ring;
    TuneCodec codec = TuneCodec::Configured;
    size_t chunk_bytes = 0;    // 0: the planner's
    int depth = 0;             // 0: the planner's
    int line = 0;              // where it was read
    std::string text() const;  // canonical line
};

class TuneTable {
public:
    // Errors name origin:line:column, what was found and what is accepted.
    Status parse(std::string_view text, const std::string &origin);
    Status load(const std::string &path);

    // The entry for a call of `bytes` bytes on nranks ranks, or nullptr: an
    // entry for exactly nranks before one for any size.
    const TuneEntry *lookup(TuneColl coll, int nranks, size_t bytes) const;

    const std::vector<TuneEntry> &entries() const { return entries_; }
    const std::string &origin() const { return origin_; }
    bool empty() const { return entries_.empty(); }
    // One canonical line per entry, and its FNV-1a hash (agreed across ranks).
    std::string canonical() const;
    uint64_t hash() const;

private:
    std::string origin_;
    std::vector<TuneEntry> entries_;
};

}  // namespace terse
