#include "runtime/engine_calibration.h"

#include "engine/engine.h"
#include "engine/planner.h"
#include "engine/selection.h"
#include "runtime/collective.h"
#include "runtime/probe_ring.h"
#include "util/log.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

namespace terse {

namespace {

// 1 MiB before 256 KiB: where the budget takes two sizes only (a slow
// link), the second decides the classes above it, and the larger it is the
// less of it is fixed costs.  Above the largest size measured, a class
// reads the two largest sizes' slope (Selector::measured_near): from 64 and
// 256 KiB on 4 ranks sharing 2 cores at 10 Gbit/s that put the codec's
// ring at 61-103 ms at 16 MiB, where it takes 52, and the lossless ring at
// 61-66 where it takes 80; 1 MiB then went unmeasured (the codec's ring
// predicted at 5.5-5.8 ms, 4 repeats past kSizeBudget), and in 7 runs of
// 18 the 8-16 MiB classes ran Open MPI or the lossless ring, 1.4-1.7 times
// slower than the codec.  Measured at 64 KiB and 1 MiB, the codec's ring
// was calibrated at 1 MiB in 18 runs of 18, and 2-3 runs of 18 kept those
// classes off it (where its 1 MiB repeats read 5.5-6.1 ms against a loop's
// 4-4.8).  The classes between read the interpolation.
constexpr size_t kSizes[] = {64 * 1024, 1024 * 1024, 256 * 1024};
constexpr int kReps = 3;  // timed repeats of an option at a size; the median counts
// The budgets are per repeat, so that a third repeat (for the median) does
// not shrink what is measured: at 12 ms for a size's repeats, as with two,
// the lossless ring at 1 MiB on 4 ranks at 10 Gbit/s (about 4.8 ms) went
// unmeasured, its prediction from 64 KiB read 17.9 ms at 4 MiB where it
// takes 21-22, and classes of 4-16 MiB left Open MPI (19 ms) for it.
// Predicted seconds of a size's warm-up and repeats above which an option
// stops.
constexpr double kSizeBudget = 6e-3 * kReps;
// Above the smallest size, an option is measured only where predicted
// within this factor of the MPI library: there a class's choice turns on it.
constexpr double kContestedWithin = 1.5;
// All operations of a communicator's calibration together (agreed times).
constexpr double kTotalBudget = 15e-3 * kReps;
// The drains' probe messages take slots from here up, apart from the set-up
// probe's (runtime/cost_probe.cc), which has finished.
constexpr int kDrainSlotBase = 0x4000;

// Gradient-like values: zero-mean, bell-shaped (a sum of four uniforms),
// different on every rank, the same on every run.
void fill_gradient_like(std::vector<float> *v, int rank) {
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t(rank) + 1) * 0xD1B54A32D192ED03ull;
    auto next = [&x] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return double(x >> 11) * 0x1.0p-53;
    };
    for (float &f : *v) f = float(1e-3 * (next() + next() + next() + next() - 2.0));
}

// One engine allreduce of args with codec slot `slot` on `schedule`; its
// agreed observation in *ob.
Status run_one(CommState *st, size_t slot, Schedule schedule, const CollArgs &args, Observation *ob) {
    CodecInstance *ci = nullptr;
    Status s = comm_state_codec(st, slot, args.dtype, &ci);
    if (s != TERSE_OK) return s;
    EngineEnv env;
    collective_env(st, ci, nullptr, &env);
    env.observed = ob;
    const Plan plan = plan_schedule(st->config, st->selector->inputs().link, st->size, args,
                                    ci->setup().max_chunk_count, schedule);
    OpHandle op;
    s = engine_start_plan(env, args, plan, Priority::Normal, &op);
    if (s != TERSE_OK) return s;
    return engine_wait(op.get());
}

}  // namespace

Status calibrate_engine(CommState *st) {
    Selector *sel = st->selector.get();
    if (!sel || st->size < 2) return TERSE_OK;
    const double t_begin = now_seconds();
    constexpr size_t kMaxBytes = std::ranges::max(kSizes);
    static_assert(kMaxBytes >= kStreamBytes, "a drain sends and receives through the calibration's buffers");
    std::vector<float> in, out;
    try {
        in.resize(kMaxBytes / sizeof(float));
        out.resize(in.size());
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory calibrating the engine on %s",
                         st->describe().c_str());
    }
    fill_gradient_like(&in, st->rank);

    CollArgs args;
    args.kind = CollKind::Allreduce;
    args.dtype = TERSE_DTYPE_FLOAT32;
    args.op = TERSE_OP_SUM;
    args.sendbuf = in.data();
    args.recvbuf = out.data();

    struct Track {
        Option option;
        bool stopped = false;
    };
    // An option measured at one size: its warm-up and timed repeats.
    struct Run {
        size_t track;
        double predicted, warm_up = 0;
        Observation reps[kReps];
    };
    std::vector<Track> tracks;
    ProbeRing ring{st->link.get(), st->ctx_id, st->rank, st->size, kDrainSlotBase};
    std::string report;
    int runs = 0;
    double spent = 0;  // agreed seconds of the operations run, so the same on every rank
    for (size_t bytes : kSizes) {
        args.count = bytes / sizeof(float);
        uint32_t eligible = collective_eligible(st, args);
        if (!eligible) continue;
        if (collective_two_level_weighed(st, args, false)) eligible |= kEligibleTwoLevel;
        // What decides which options to measure is the MPI library as a
        // loop's calls find it, the drained curve (runtime/cost_probe.cc).
        const double mpi = std::max(sel->predict(Option{}, args.kind, bytes, eligible),
                                    sel->inputs().pmpi_drained.at(double(bytes)));
        const bool first_size = tracks.empty();
        std::vector<Run> here;
        double reserved = 0;  // predicted seconds of this size's runs
        for (const Option &o : sel->engine_options(args.kind, eligible)) {
            // The two-level schedule runs MPI collectives on the node
            // communicators and a rail's shard: its cost is its own model's.
            if (o.schedule == Schedule::TwoLevel) continue;
            auto t = std::find_if(tracks.begin(), tracks.end(), [&](const Track &k) { return k.option == o; });
            if (t == tracks.end()) t = tracks.insert(tracks.end(), Track{o});
            if (t->stopped) continue;
            const double predicted = sel->predict(o, args.kind, bytes, eligible);
            const double cost = predicted * (kReps + 1);  // a warm-up and the repeats
            // Where the option is close to the MPI library, this size's
            // time decides the classes around it, and extrapolated from the
            // sizes below it can be far off: on 4 ranks at 10 Gbit/s the
            // codec's ring measured 1.36 ms at 64 KiB and 2.27 at 256 KiB,
            // which predicted 5.9 ms at 1 MiB where it takes 2.5-3, behind
            // the MPI library's 4.3, and the class never ran it.  Such a
            // size was skipped for its cost (4 ms of repeats at most) while
            // lossless options twice the MPI library's time were measured
            // at 256 KiB.  Far slower than the MPI library, an option is
            // left to its prediction: no class would choose it.
            if (!first_size && !(predicted < kContestedWithin * mpi)) continue;
            if (!(cost <= kSizeBudget) || !(spent + reserved + cost <= kTotalBudget)) {
                t->stopped = true;
                continue;
            }
            reserved += cost;
            here.push_back(Run{size_t(t - tracks.begin()), predicted, 0, {}});
        }
        // Warm-ups first, then each repeat of every option in turn, not an
        // option's repeats back to back: a disturbance of a few
        // milliseconds (another process on a rank's core) then slows one
        // repeat of an option, not all of them.  Seen on 4 ranks sharing 2
        // cores at 10 Gbit/s: both repeats of the codec's 64 KiB ring read
        // 3.2 ms where it takes 0.7-1.4, and every class from 1 MiB up ran
        // the MPI library, 1.5-2 times slower than the codec.
        //
        // The median of the repeats counts, not the fastest: on a shaped
        // link the calls of a loop alternate fast and slow (the lossless
        // ring at 256 KiB on 2 ranks at 10 Gbit/s, 8 operations back to
        // back: 287-432 us and one of 809), and the fastest of two read
        // 296-327 us where the loop's calls average 400, so classes moved
        // to a ring no faster than the MPI library and paid its first
        // calls.
        //
        // Every size has its warm-up, not only an option's first: an
        // operation's first calls at a new size are slow even where the
        // option is warm from a smaller one (they touch memory it has not
        // used; a page's first touch took 14.5 us on this project's VM).
        // With the warm-up at the first size only, the codec's ring on 4
        // ranks at 10 Gbit/s read 1.8-2.0 ms at 256 KiB (the median of
        // that size's 1st-3rd operations: 7.0, 2.6, 2.7 ms in a loop
        // whose later calls take 1.2-1.5), which predicted 4.6-6.0 ms at
        // 1 MiB where it takes 2.7-3.4, and in 2 runs of 9 the 1 and 2 MiB
        // classes ran the MPI library, 1.4-1.7 times slower.
        for (int r = 0; r <= kReps; ++r) {
            // The options' repeats follow one another, each finding the
            // shaper's bucket as the last one left it, as a loop's calls do;
            // the first needs a drain (runtime/probe_ring.h).  The drain
            // sends the input and receives into the output.
            if (r == 1 && !here.empty()) {
                Status s = drain_link(&ring, reinterpret_cast<uint8_t *>(in.data()),
                                      reinterpret_cast<uint8_t *>(out.data()));
                if (s != TERSE_OK) return s;
            }
            for (Run &x : here) {
                Track &t = tracks[x.track];
                Observation ob;
                Status s = run_one(st, size_t(t.option.codec), t.option.schedule, args, &ob);
                if (s != TERSE_OK) return s;
                ++runs;
                if (r == 0) {
                    x.warm_up = ob.seconds;
                    continue;
                }
                spent += ob.seconds;
                x.reps[r - 1] = ob;
            }
        }
        for (Run &x : here) {
            Track &t = tracks[x.track];
            // The codec's least time matters most: the model carries it to
            // every size as a cost per byte, so a high one is never
            // corrected where no class runs the codec (on 4 ranks sharing
            // 2 cores at 10 Gbit/s, predicted at 2.6 times its time at
            // 16 MiB, the codec lost every class to the MPI library, 2.5
            // times slower there).
            const Observation median = median_observation(x.reps, kReps);
            // A warm-up counts as one more repeat: what it takes beyond
            // that (first touches, a new peer's connection, TCP growing
            // its window for a larger message: 3-24 ms for a 64 KiB
            // allreduce of 0.3-1.3 ms, 4 ranks at 10 Gbit/s) the option's
            // first call would pay anyway.  Counted in full, one slow
            // warm-up spent the budget, and in 2 runs of 6 the lossless
            // options were not calibrated: classes then tried them on the
            // model's guess, warm-ups included, in their first calls.
            spent += std::min(x.warm_up, median.seconds);
            sel->calibrate(args.kind, bytes, eligible, t.option, collective_call_observation(st, median));
            char line[200];
            snprintf(line, sizeof line, " %s@%zuK %.1fus (%.1f-%.1fus, warm-up %.1fus, predicted %.1fus)",
                     sel->option_name(t.option).c_str(), bytes >> 10, median.seconds * 1e6,
                     x.reps[0].seconds * 1e6, x.reps[kReps - 1].seconds * 1e6, x.warm_up * 1e6,
                     x.predicted * 1e6);
            report += line;
        }
    }
    TERSE_LOG_DEBUG("planner: communicator %s: engine calibrated in %.2f ms, %d operations:%s",
                    st->describe().c_str(), (now_seconds() - t_begin) * 1e3, runs,
                    report.empty() ? " none eligible" : report.c_str());
    return TERSE_OK;
}

}  // namespace terse
