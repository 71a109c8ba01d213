// The cost model behind the planner: predicted seconds of one collective
// on each path (the MPI library, or the engine with a codec on a schedule)
// from numbers measured on the communicator.  Pure functions of plain
// values: every rank holds the same agreed inputs (runtime/cost_probe.h
// measures them), so every rank predicts the same bits.
//
// Units: seconds, bytes.  A call's `bytes` are one rank's input of an
// allreduce (reduce-scatter: the whole input; allgather: one rank's block).
#pragma once

#include "engine/coll_args.h"

#include <array>
#include <cstddef>

namespace terse {

// A link between ring neighbours over terse's transport: alpha seconds per
// message, beta seconds per byte (1 / bandwidth).
struct LinkCost {
    double alpha = 0;
    double beta = 0;
};

// The MPI library's own MPI_Allreduce time at a few sizes, increasing.
// at() interpolates linearly in log-log between points, extrapolates the
// last segment's bandwidth above the largest point, and holds the smallest
// point's time below it.
struct PmpiCurve {
    static constexpr int kMaxPoints = 12;
    std::array<double, kMaxPoints> bytes{};
    std::array<double, kMaxPoints> seconds{};
    int points = 0;

    bool empty() const { return points == 0; }
    void add(double b, double s);  // b above the last point's; ignored when full
    double at(double b) const;
};

// A codec as the model sees it: seconds of encoding and decoding per byte of
// the call's input (everything the codec does in one operation, divided by
// the operation's input bytes), and wire bytes over raw bytes.
struct CodecCost {
    double seconds_per_byte = 0;
    double ratio = 1;
};

// What one engine operation measured, agreed (MAX over ranks, carried by
// its closing agreement): its time, its codec's encode + decode time, and
// wire bytes over raw bytes.
struct Observation {
    double seconds = 0;
    double codec_seconds = 0;
    double ratio = 1;
};

// What n (>= 1) repeats of one operation count as: the median time (the
// upper of the middle two when n is even) with its wire ratio, and the
// least codec time of any.  On a shaped link a loop's calls alternate
// fast and slow, so the fastest reads below their average; a codec's work
// on a core is only ever lengthened, by preemption, so its least is its
// cost.  The repeats are sorted by time in place.
Observation median_observation(Observation *reps, int n);

// A communicator whose ranks sit on several nodes (a two-level layout,
// runtime/node_layout.h): its shape and its two kinds of link, measured
// apart.  nodes == 1: no layout, the two-level schedule is not weighed.
struct HierarchyCost {
    int nodes = 1;
    int ranks_per_node = 1;  // of the largest node
    int shards = 1;          // rails: the smallest node's rank count
    LinkCost intra;          // inside a node: the MPI library's allreduce, as ring terms
    LinkCost inter;          // between nodes: a ring step on a rail over terse's transport
};

// Everything measured on a communicator, identical on every rank.
struct CostInputs {
    int nranks = 1;
    HierarchyCost hier;
    LinkCost link;
    double gamma = 0;  // seconds per byte of a local reduction (a + b)
    double touch = 0;  // seconds per byte of fresh memory's first touch (a page fault a page)
    double fixed = 0;  // seconds an engine operation spends agreeing (one small allreduce)
    PmpiCurve pmpi;    // MPI_Allreduce
    // The same sizes timed right after a drain (runtime/probe_ring.h), as
    // a loop's calls find a shaped link: what the engine's calibration
    // weighs its options against (runtime/cost_probe.cc says why the
    // estimates read pmpi).
    PmpiCurve pmpi_drained;
    // The MPI library's first call at a size it has not run, over its
    // later calls there (set-up, the largest size timed; MAX over ranks of
    // each).  What probing it at such a size costs (Selector).
    double pmpi_first = 1;
};

// The engine's schedules, for an allreduce of `bytes` on n ranks through a
// codec (ratio 1 and seconds_per_byte 0 for the lossless identity).  The
// codec's time is added, not overlapped: its measured seconds_per_byte
// already holds what pipelining did not hide.
double cost_ring(const CostInputs &in, const CodecCost &codec, double bytes);
double cost_recursive_doubling(const CostInputs &in, const CodecCost &codec, double bytes);
// Recursive halving reduce-scatter + recursive doubling allgather: a cost
// only (the engine has no such schedule yet), for comparison and tools.
double cost_rabenseifner(const CostInputs &in, const CodecCost &codec, double bytes);
// The two-level schedule (engine/cost_two_level.h) on in.hier, the codec's
// work scaled to a rail's shard.  Allreduce only.
double cost_two_level_schedule(const CostInputs &in, const CodecCost &codec, double bytes);
// Allgather of every rank's encoded input, decoded and summed locally
// (codecs whose payloads cannot be summed).
double cost_gather(const CostInputs &in, const CodecCost &codec, double bytes);

// The MPI library: the measured curve, and above its largest size that
// size's time plus the larger growth of the two curves (pmpi, and
// pmpi_drained where it has the same sizes): a message larger than any the
// set-up sent outlasts a shaper's burst.  Reduce-scatter and allgather are
// taken as half an allreduce of the same total (an allreduce is one of
// each in the ring decomposition), so an allgather's block counts n times.
double cost_pmpi(const CostInputs &in, CollKind kind, double bytes);
// Whether the set-up timed pmpi_drained at pmpi's sizes (it does, unless
// it was cut short or the inputs were made by hand).
bool drained_matches(const CostInputs &in);
// The MPI library as a loop's calls find a shaped link: the drained curve
// (CostInputs::pmpi_drained) where the set-up timed the same sizes after a
// drain, cost_pmpi otherwise.  The shape a measured time of the MPI
// library, which comes from such calls, is carried to other sizes by
// (Selector).
double cost_pmpi_loop(const CostInputs &in, CollKind kind, double bytes);

// The part of a schedule's cost that a reduce-scatter or allgather alone
// pays: half a ring allreduce of the same total.
double cost_ring_kind(const CostInputs &in, const CodecCost &codec, CollKind kind, double bytes);

// Pipeline shape from the model: chunks large enough that a message's
// latency costs at most about a tenth of its transfer (alpha <= beta *
// chunk / 10), and that a ring block of block_bytes is cut into no more
// than max_depth of them (up to max_chunk): a chunk costs the engine more
// than the link's latency (a codec call, a message, its completion; on 4
// ranks at 25 Gbit/s, 64 KiB chunks made a 64 MiB allreduce with
// quantize:bits=8 1.19 times as long as 1 MiB chunks).  At least two per
// block, so that reducing one overlaps sending the next; depth the number
// of chunks that keep the link busy for one round trip (2 alpha / (beta *
// chunk), at least 2), capped by max_depth.
struct PipelineShape {
    size_t chunk_bytes = 0;
    int depth = 1;
};
PipelineShape pipeline_shape(const LinkCost &link, size_t block_bytes, size_t min_chunk, size_t max_chunk,
                             int max_depth);

}  // namespace terse
