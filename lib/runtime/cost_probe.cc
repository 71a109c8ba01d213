#include "runtime/cost_probe.h"

#include "engine/reduce_kernels.h"
#include "engine/stats.h"
#include "runtime/node_layout.h"
#include "runtime/probe_ring.h"
#include "util/log.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace terse {

namespace {

constexpr int kRingSmallReps = 8;
// 256 KiB: where 1 MiB does not fit the budget, the sizes above the
// largest measured are extrapolated along the last segment, and from 8 B
// to 64 KiB that is latency, not bandwidth.  On 2 emulated nodes x 2 ranks
// at 10 Gbit/s it predicted Open MPI at 3.04 ms at 1 MiB where it takes
// 1.5-1.9, and the 1-8 MiB classes started on engine options that were
// slower.
constexpr size_t kPmpiSizes[] = {8, 64 * 1024, 256 * 1024, 1024 * 1024, 8 * 1024 * 1024};
// A size is measured only if its repeats are predicted to fit this time.
constexpr double kSizeBudget = 4e-3;
constexpr size_t kAlwaysMeasured = 64 * 1024;
constexpr int kPmpiReps = 3;

// A rail's probe messages take slots from here up, apart from the
// communicator ring's (which start at 0 and stay far below).
constexpr int kRailSlotBase = 0x8000;

// The fastest of kPmpiReps MPI_Allreduce calls of `count` floats, after a
// warm-up, on this rank; *first (optional) gets the warm-up's time.
Status fastest_pmpi(CommState *st, float *a, float *b, int count, double *best, double *first = nullptr) {
    *best = std::numeric_limits<double>::infinity();
    for (int i = 0; i <= kPmpiReps; ++i) {
        const double t0 = now_seconds();
        if (PMPI_Allreduce(a, b, count, MPI_FLOAT, MPI_SUM, st->comm) != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "terse: measuring communicator %s failed in PMPI_Allreduce",
                             st->describe().c_str());
        const double t = now_seconds() - t0;
        if (i) *best = std::min(*best, t);
        if (!i && first) *first = t;
    }
    return TERSE_OK;
}

// Seconds per byte of the first touch of fresh memory: one write a page
// of a new anonymous mapping (a page fault each; 14.5 us a 4 KiB page on
// this project's VM host, well under 1 on bare metal), the faster of two
// mappings of kTouchBytes.  What an engine option's first call at a size
// larger than any it ran pays (Selector::first_touch_seconds); 0 where
// the mapping fails.
constexpr size_t kTouchBytes = 256 * 1024;
double first_touch_per_byte() {
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return 0;
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < 2; ++i) {
        void *p = mmap(nullptr, kTouchBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 0;
        volatile char *c = static_cast<volatile char *>(p);
        const double t0 = now_seconds();
        for (size_t off = 0; off < kTouchBytes; off += size_t(page)) c[off] = 1;
        best = std::min(best, now_seconds() - t0);
        munmap(p, kTouchBytes);
    }
    return best / double(kTouchBytes);
}

double agreed_max(const CommState *st, double v) {
    double out = v;
    PMPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, st->comm);
    return out;
}

// Fastest of reps node stages (after a warm-up): the reduce-scatter and
// the allgather the two-level schedule runs on the node communicator, with
// `count` floats for each of the node's L ranks, in place in buf.
double fastest_node_stages(Control *node, float *buf, int L, int count, int reps, Status *s) {
    std::vector<int> counts, displs;
    try {
        counts.assign(size_t(L), count);
        displs.assign(size_t(L), 0);
    } catch (const std::bad_alloc &) {
        *s = set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory measuring a node's collectives");
        return -1;
    }
    for (int q = 0; q < L; ++q) displs[size_t(q)] = q * count;
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i <= reps; ++i) {
        ControlRequest rs, ag;
        const double t0 = now_seconds();
        *s = node->ireduce_scatter(buf, buf, counts.data(), TERSE_DTYPE_FLOAT32, TERSE_OP_SUM, &rs);
        if (*s != TERSE_OK) return -1;
        while (!node->test(&rs, s)) {}
        if (*s != TERSE_OK) return -1;
        *s = node->iallgatherv(buf, counts.data(), displs.data(), TERSE_DTYPE_FLOAT32, &ag);
        if (*s != TERSE_OK) return -1;
        while (!node->test(&ag, s)) {}
        if (*s != TERSE_OK) return -1;
        if (i) best = std::min(best, now_seconds() - t0);
    }
    return best;
}

// The two links of a two-level layout, measured apart (cost_model.h,
// HierarchyCost): on each node communicator the MPI library's
// reduce-scatter and allgather, the node stages of the two-level schedule,
// of one float a rank and of 512 KiB in all, read as ring terms; and on
// each rail over terse's transport a ring step of 8 B and a stream of
// kStreamMsgs x 128 KiB, all rails at once.  Collective over st; a and b
// hold at least kStreamBytes.
Status probe_hierarchy(CommState *st, uint8_t *a, uint8_t *b, HierarchyCost *out) {
    const TwoLevelEnv &tl = *st->node_layout->env();
    HierarchyCost h;
    h.nodes = tl.nodes;
    h.ranks_per_node = st->node_layout->ranks_per_node_max();
    h.shards = tl.shards;
    // [0] intra alpha, [1] intra beta, [2] rail step 8 B, [3] rail stream; MAX over ranks.
    double local[4] = {};
    const int L = tl.node_size;
    Status s = TERSE_OK;
    if (L > 1) {
        // The stages themselves, not an allreduce: Open MPI 4.1's
        // MPI_Iallreduce (libnbc), which this measured before, read a node
        // of 2 ranks over shared memory at 504-2517 MB/s from run to run,
        // and the model put two-level quantize:bits=8 on 2 emulated nodes
        // at 1 Gbit/s at 4.3 ms for 1 MiB, most of it inside the node,
        // where the call takes 2.3 and the flat ring the planner kept 4.9.
        float *fb = reinterpret_cast<float *>(b);
        const int large = int(kStreamBytes / sizeof(float)) / L;
        const double t_small = fastest_node_stages(tl.node, fb, L, 1, kPmpiReps, &s);
        const double t_large = t_small < 0 ? -1 : fastest_node_stages(tl.node, fb, L, large, 4, &s);
        if (t_large < 0) return s;
        // Two ring phases of L ranks: 2(L-1) steps of alpha, 2(L-1)/L of the bytes.
        const double bytes = double(large) * L * sizeof(float);
        local[0] = t_small / (2.0 * (L - 1));
        local[1] = std::max(0.0, (t_large - t_small) / (2.0 * (L - 1) / L * bytes));
    }
    const bool on_rail = tl.rail_rank >= 0 && tl.rail_size > 1;
    ProbeRing rail{tl.rail_link, st->ctx_id, tl.rail_rank, tl.rail_size, kRailSlotBase};
    if (on_rail) {
        if (ring_step(&rail, a, b, 8) < 0) return set_error(TERSE_ERR_TRANSPORT, "%s", last_error());
        local[2] = fastest_ring_step(&rail, a, b, 8, kRingSmallReps);
        if (local[2] < 0) return set_error(TERSE_ERR_TRANSPORT, "%s", last_error());
    }
    // A node's rails share its link, as the two-level schedule's do
    // (cost_two_level's beta_inter is the node's link): they stream at
    // once, from a barrier, and the link carried all of their bytes.  Each
    // rail on its own read a share that depended on how much its stream
    // overlapped the others': on 2 emulated nodes x 2 ranks at 1 Gbit/s
    // 91 MB/s, where the node's link carries about 118, and the model put
    // two-level quantize:bits=8 at 4.3 ms for 1 MiB where it takes 2.3.
    if (PMPI_Barrier(st->comm) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "terse: measuring the nodes of communicator %s failed in PMPI_Barrier",
                         st->describe().c_str());
    if (on_rail) {
        local[3] = ring_stream(&rail, a, b);
        if (local[3] < 0) return set_error(TERSE_ERR_TRANSPORT, "%s", last_error());
    }
    double agreed[4];
    if (PMPI_Allreduce(local, agreed, 4, MPI_DOUBLE, MPI_MAX, st->comm) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "terse: measuring the nodes of communicator %s failed in PMPI_Allreduce",
                         st->describe().c_str());
    h.intra.alpha = agreed[0];
    h.intra.beta = agreed[1];
    h.inter.alpha = agreed[2];
    h.inter.beta = std::max(0.0, (agreed[3] - agreed[2]) / (double(kStreamBytes) * std::max(1, h.shards)));
    *out = h;
    TERSE_LOG_DEBUG(
        "planner: communicator %s: %d nodes of up to %d ranks, %d rails; inside a node alpha %.2f us, "
        "%.0f MB/s; between nodes alpha %.2f us, %.0f MB/s a node (its rails at once)",
        st->describe().c_str(), h.nodes, h.ranks_per_node, h.shards, h.intra.alpha * 1e6,
        h.intra.beta > 0 ? 1e-6 / h.intra.beta : 0.0, h.inter.alpha * 1e6,
        h.inter.beta > 0 ? 1e-6 / h.inter.beta : 0.0);
    return TERSE_OK;
}

}  // namespace

Status probe_costs(CommState *st, CostInputs *out) {
    CostInputs in;
    in.nranks = st->size;
    const double t_begin = now_seconds();
    std::vector<float> a, b;
    try {
        a.assign(kStreamBytes / sizeof(float), 1.0f);
        b.assign(a.size(), 0.0f);
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory measuring communicator %s",
                         st->describe().c_str());
    }
    uint8_t *pa = reinterpret_cast<uint8_t *>(a.data()), *pb = reinterpret_cast<uint8_t *>(b.data());

    // Ring neighbours over the transport; the first step also connects.
    ProbeRing ring{st->link.get(), st->ctx_id, st->rank, st->size, 0};
    double local[4];
    if (ring_step(&ring, pa, pb, 8) < 0) return set_error(TERSE_ERR_TRANSPORT, "%s", last_error());
    const double t_connected = now_seconds();
    local[0] = fastest_ring_step(&ring, pa, pb, 8, kRingSmallReps);
    local[1] = local[0] < 0 ? -1 : ring_stream(&ring, pa, pb);
    if (local[1] < 0) return set_error(TERSE_ERR_TRANSPORT, "%s", last_error());

    // A local reduction.
    const size_t red = 64 * 1024 / sizeof(float);
    double g = std::numeric_limits<double>::infinity();
    for (int i = 0; i < 3; ++i) {
        const double t0 = now_seconds();
        reduce_inplace(TERSE_DTYPE_FLOAT32, TERSE_OP_SUM, b.data(), a.data(), red);
        g = std::min(g, now_seconds() - t0);
    }
    local[2] = g / double(red * sizeof(float));
    local[3] = first_touch_per_byte();

    double agreed[4];
    if (PMPI_Allreduce(local, agreed, 4, MPI_DOUBLE, MPI_MAX, st->comm) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "terse: measuring communicator %s failed in PMPI_Allreduce",
                         st->describe().c_str());
    in.link.alpha = agreed[0];
    in.link.beta = std::max(0.0, (agreed[1] - agreed[0]) / double(kStreamBytes));
    in.gamma = agreed[2];
    in.touch = agreed[3];

    // The MPI library's allreduce, while each size fits the budget, twice
    // where a drain (runtime/probe_ring.h) sends more than the size's repeats:
    // as it comes, and after a drain.  The faster of the two is the MPI
    // library's estimate (on 4 ranks sharing 2 cores either can be disturbed:
    // 64 KiB at 431 us as it came, 216 drained, and the classes started on the
    // engine, twice as slow there).  Inside a shaper's burst its small sizes
    // read fast (2 ranks at 10 Gbit/s: 64 KiB at 40-43 us, where a loop's
    // calls take 80-85), and a class that starts on the MPI library corrects
    // that with its early probe, three calls in.  The drained figure (there
    // 83-103 us) was above the engine's lossless ring at 64-90, and the 64 KiB
    // class started on the ring, which takes 110 in a loop: an MPI estimate
    // too high costs engine calls, one too low two calls of the MPI library.
    // The engine's calibration reads the drained curve to decide which sizes
    // to measure: from the burst's 64 KiB figure the MPI library looked four
    // times faster than the lossless ring at 1 MiB, so the ring went
    // unmeasured there, its prediction from 64 KiB stayed low, and the 512
    // KiB-4 MiB classes moved to it and back in 4-8 of 9 classes a run, at
    // 0.79-0.88 of the MPI library's speed.
    double prev_t = 0;
    size_t prev_bytes = 0;
    for (size_t bytes : kPmpiSizes) {
        // Predicted from the ring link (an allreduce moves about twice its
        // bytes), or from the previous size scaled by the bytes, whichever
        // is longer: an MPI library slower than the link (seen: 4 ranks on
        // TCP, 4.9 ms for 1 MiB where the link predicted 0.9 ms) must not
        // take the set-up past its budget.  The two smallest sizes are
        // always measured.
        const double by_link = prev_t + 2.0 * double(bytes) * in.link.beta;
        const double by_prev = prev_bytes ? prev_t * double(bytes) / double(prev_bytes) : 0.0;
        const double predicted = (kPmpiReps + 1) * std::max(by_link, by_prev);
        if (bytes > kAlwaysMeasured && predicted > kSizeBudget) break;
        const int count = int(bytes / sizeof(float));
        if (a.size() < size_t(count)) {
            // Short of memory, every rank stops here together.
            double short_of_memory = 0;
            try {
                a.resize(size_t(count), 1.0f);
                b.resize(size_t(count), 0.0f);
            } catch (const std::bad_alloc &) {
                short_of_memory = 1;
            }
            if (agreed_max(st, short_of_memory) > 0) break;
        }
        // [0] as it comes, [1] after a drain, [2] the size's first call;
        // MAX over ranks.
        double best[3];
        Status s = fastest_pmpi(st, a.data(), b.data(), count, &best[0], &best[2]);
        if (s != TERSE_OK) return s;
        best[1] = best[0];
        if (bytes > 8 && bytes < kStreamBytes) {
            s = drain_link(&ring, reinterpret_cast<uint8_t *>(a.data()), reinterpret_cast<uint8_t *>(b.data()));
            if (s == TERSE_OK) s = fastest_pmpi(st, a.data(), b.data(), count, &best[1]);
            if (s != TERSE_OK) return s;
        }
        double t[3];
        if (PMPI_Allreduce(best, t, 3, MPI_DOUBLE, MPI_MAX, st->comm) != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "terse: measuring communicator %s failed in PMPI_Allreduce",
                             st->describe().c_str());
        in.pmpi.add(double(bytes), std::min(t[0], t[1]));
        in.pmpi_drained.add(double(bytes), t[1]);
        // The MPI library's first call at a size pays for memory it has
        // not touched yet (Open MPI's temporary buffers; a page's first
        // touch took 14.5 us on this project's VM host, where bare metal
        // takes well under 1): the largest size's ratio is the planner's
        // cost of probing the MPI library at a size it has not run
        // (Selector::observe_mpi).  Against the drained time, as a loop's
        // calls find the link (inside a shaper's burst the first call may
        // read faster than the later ones).  The 8-byte call also connects.
        if (bytes >= kAlwaysMeasured) in.pmpi_first = t[2] / t[1];
        prev_t = t[1];
        prev_bytes = bytes;
    }
    in.fixed = in.pmpi.empty() ? 0 : in.pmpi.seconds[0];
    if (st->node_layout) {
        // The sizes above may have grown a and b.
        Status s = probe_hierarchy(st, reinterpret_cast<uint8_t *>(a.data()),
                                   reinterpret_cast<uint8_t *>(b.data()), &in.hier);
        if (s != TERSE_OK) return s;
    }
    *out = in;
    TERSE_LOG_DEBUG(
        "planner: communicator %s measured in %.2f ms (%.2f ms of them connecting the ring): ring alpha %.2f "
        "us, %.0f MB/s; reduce %.0f MB/s; a 4 KiB page's first touch %.2f us; MPI_Allreduce %d sizes, 8 B %.2f us, "
        "largest %.0f B %.1f us (%.1f drained, its first call %.1f times that)",
        st->describe().c_str(), (now_seconds() - t_begin) * 1e3, (t_connected - t_begin) * 1e3,
        in.link.alpha * 1e6, in.link.beta > 0 ? 1e-6 / in.link.beta : 0.0, in.gamma > 0 ? 1e-6 / in.gamma : 0.0,
        in.touch * 4096 * 1e6, in.pmpi.points, in.pmpi.seconds[0] * 1e6, in.pmpi.bytes[in.pmpi.points - 1],
        in.pmpi.seconds[in.pmpi.points - 1] * 1e6, in.pmpi_drained.seconds[in.pmpi_drained.points - 1] * 1e6,
        in.pmpi_first);
    return TERSE_OK;
}

}  // namespace terse
