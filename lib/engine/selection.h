// The planner's choice per call (TERSE_PLANNER=model): the fastest of the
// MPI library, the lossless engine and each codec on each schedule, per
// size class, from the cost model (cost_model.h) corrected by what the
// engine's operations measured.
//
// Every input is agreed across the communicator's ranks: the measured
// CostInputs (MAX over ranks at context creation), the call's arguments
// (which MPI requires to match) and each operation's Observation (MAX over
// ranks, carried by the operation's closing agreement).  Everything here is
// a deterministic function of those, so every rank holds the same Selector
// and makes the same choice, call after call.  Local clocks feed only what
// TERSE_STATS prints (note_local_time).
//
// Never slower, with hysteresis: the engine is chosen over the MPI library
// only when predicted at least kSwitchMargin faster, and given up as soon
// as the MPI library is predicted no slower than the option running; among
// engine options a class keeps its choice until another is predicted
// kSwitchMargin faster.  So noise in the measurements cannot make a class
// flap between two options on alternate calls, and an engine option close
// to the MPI library's time is not kept on a bet.
//
// Exploration: an estimate too low is corrected by the calls that run
// the option, one too high by nothing, since nothing runs it.  So a class
// that has run long enough now and then gives one timed call (and a
// warm-up before it) to another engine option (the fastest it has not
// measured, else the fastest), at a gap that
// keeps the cost of an exploration gone wrong under kExploreShare of the
// class's time; a short run (a benchmark's 20-110 calls per size) never
// explores.
//
// Extension points: the options are the product of codecs() and
// schedules(): a new schedule is one ScheduleModel row (its cost and the
// calls it serves), a new codec one CodecModel; a tuning source can
// pin_option() a size class before the model decides.
#pragma once

#include "engine/coll_args.h"
#include "engine/cost_model.h"
#include "engine/planner.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace terse {

// What the operations of one schedule measured of a codec.
struct CodecSamples {
    CodecCost measured;  // moving estimate from the operations' observations
    uint64_t samples = 0;
    bool calibrated_only = false;  // measured holds calibration samples only (Selector::calibrate)
};

// The flat schedules a codec is measured on, apart (CodecModel::on).
constexpr size_t kMeasuredSchedules = size_t(Schedule::Gather) + 1;

// A codec the selection can choose, as the model sees it.
struct CodecModel {
    std::string name;          // canonical spec, for messages
    bool identity = false;     // the lossless identity: no codec work, ratio 1
    bool gather_only = false;  // payloads cannot be summed (TERSE_REDUCE_GATHER)
    int agreements = 1;        // small allreduces per operation (summable codecs agree on statistics first)
    double prior_ratio = 1;    // worst-case wire/raw (max_encoded_size), until measured
    // Per flat schedule: its codec work per byte of the call is its own
    // (recursive doubling on 4 ranks at 10 Gbit/s: 1.66 times the ring's
    // encode + decode time for the same calls, and a wire ratio of 3.71
    // against 3.32).  Shared, the ring's estimate followed the recursive
    // doubling calls of a class up to twice what the ring takes, and no
    // class ran the ring again.
    std::array<CodecSamples, kMeasuredSchedules> on;
    // The estimate for schedule s: what its calls measured; before any,
    // the least of its own calibration and what any other flat schedule
    // measured (a prediction too low is corrected by the first call that
    // runs it, one too high by nothing); before any sample, (0 s/byte,
    // prior_ratio).  The two-level schedule reads the ring's: its cost
    // takes a flat ring's codec work.
    CodecCost estimate(Schedule s) const;
    uint64_t samples() const;  // over every schedule
};

// A schedule the selection can weigh.
struct ScheduleModel {
    Schedule schedule;
    // Predicted seconds for a call of `bytes` of `kind` through codec.
    double (*cost)(const CostInputs &in, const CodecCost &codec, CollKind kind, double bytes);
    // Whether it runs calls of kind through a codec of this model.
    bool (*serves)(CollKind kind, const CodecModel &codec);
};

// The flat schedules the engine has, in the order ties are broken.
std::vector<ScheduleModel> default_schedules();
// Those a configured algorithm allows: the same schedules
// plan_collective() would run (ring for reduce-scatter and allgather,
// gather for codecs that need it); with algorithm=auto on a communicator
// with a two-level layout (two_level), the two-level schedule too.
std::vector<ScheduleModel> schedules_for(Algorithm a, bool two_level = false);

// In choose()'s `eligible`, above the codec bits: the call may run the
// two-level schedule (a blocking allreduce on a communicator with a
// layout; non-blocking calls run flat schedules only, terse(7)).  Such
// calls form size classes of their own.
constexpr uint32_t kEligibleTwoLevel = 1u << 31;
// Codec slots whose bits fit the mask below it (bit i: slot i).
constexpr size_t kMaxCodecSlots = 31;
static_assert(kEligibleTwoLevel == 1u << kMaxCodecSlots, "codec bits sit below the two-level bit");

// One option: the MPI library, or the engine with codec c on schedule s.
struct Option {
    bool engine = false;
    int codec = -1;  // index into Selector::codecs() (engine only)
    Schedule schedule = Schedule::Trivial;
    bool operator==(const Option &) const = default;
};

class Selector {
public:
    static constexpr double kSwitchMargin = 0.10;    // 10% predicted gain to take the engine or switch in it
    static constexpr double kTieWithin = 0.20;       // engine options calibrated this close are a tie
    static constexpr uint64_t kProbeEvery = 8;       // a class re-measures MPI 8 calls after a change,
    static constexpr uint64_t kProbeMax = 256;       // then at gaps doubling up to 256 calls
    static constexpr double kProbeShare = 0.03;      // the most a probe may add to an engine class's calls
    static constexpr double kWeight = 0.25;          // of a new sample in the moving estimates
    static constexpr double kConfirmAbove = 2.0;     // an MPI probe this much slower waits for a second
    static constexpr uint64_t kEarlyProbe = 3;       // a class that starts on MPI also probes this call, and
    static constexpr double kEarlyProbeBelow = 2.0;  // one that starts on an engine option predicted less
                                                     // than this much faster, while no class of its kind
                                                     // has measured the MPI library
    static constexpr uint64_t kMpiFirstCalls = 2;    // a class's first calls of MPI bound its time from above
    static constexpr double kFirstCallCostMax = 16;  // the most CostInputs::pmpi_first is taken at
    static constexpr double kExploreShare = 0.01;    // the most an exploration may add to a class's calls
    static constexpr uint64_t kExploreAfter = 128;   // no class explores before this many calls
    static constexpr double kExploreWithin = 3.0;    // nor an option predicted this much slower than its choice
    static constexpr uint64_t kExploreBackoff = 64;  // each exploration doubles the next one's gap, up to this
    static constexpr int kRecent = 8;         // the choice's last calls whose trimmed mean bounds its estimate
    static constexpr double kTryCalls = 3;    // calls a try of an option runs before a slow one is left
    static constexpr uint64_t kProbeLag = 2;  // decisions after a probe's call that apply its agreed time
    // The most calls a class on an engine option runs the MPI library for
    // before it leaves that option for it with no MPI time of its own
    // (checks_mpi_first()): the first calls, whose times only bound it, and
    // the probe's lag.
    static constexpr uint64_t kCheckCalls = kMpiFirstCalls + kProbeLag;

    Selector() = default;
    Selector(const CostInputs &in, std::vector<CodecModel> codecs,
             std::vector<ScheduleModel> schedules = default_schedules());

    const CostInputs &inputs() const { return in_; }
    const std::vector<CodecModel> &codecs() const { return codecs_; }

    // The option for a call of `kind` and `bytes`; eligible: bit c set when
    // codec c may run this call (engine_eligible for that codec).  Updates
    // the class's choice (with hysteresis) and *changed tells whether it
    // moved (for TERSE_LOG=debug); *why, when given, gets a line naming the
    // options' predictions.
    // probe_mpi (optional): set on the calls of a class (kProbeEvery after
    // its choice changed, or later where the engine chosen is k times
    // faster: (k - 1) / kProbeShare calls; then at gaps doubling up to
    // kProbeMax; and a class whose first choice is the MPI library at its
    // call kEarlyProbe too (and at its kMpiFirstCalls-th, where the set-up
    // did not run the MPI library at its size), or at its 1st where the set-up read that size
    // inside a shaper's burst (drained_at_setup()), as does one whose first is an engine option
    // less than kEarlyProbeBelow times faster while no class of its kind
    // has measured the MPI library; and, on a class with no MPI time of its
    // own about to leave its engine option for the MPI library, up to
    // kCheckCalls calls instead of that move: checks_mpi_first()) on which a
    // blocking caller runs the MPI library (instead of the engine, when the
    // engine is chosen) and reports its agreed time through observe_mpi(),
    // so that the MPI library's estimate follows what it really takes.
    // timed: the caller reports this call's time (observe(), observe_mpi()),
    // as blocking calls do; only such a call may explore.  An exploration
    // call returns an engine option other than the class's choice (and
    // *why, when given, says so); the choice stays.
    Option choose(CollKind kind, size_t bytes, uint32_t eligible, bool *changed = nullptr,
                  std::string *why = nullptr, bool *probe_mpi = nullptr, bool timed = true);

    // Predicted seconds of one option for this call: what this class
    // measured for it (scaled by the model to this call's size), else what
    // the nearest classes of the same kind measured for it (measured_near),
    // else the model with the option's correction.
    double predict(const Option &o, CollKind kind, size_t bytes, uint32_t eligible) const;

    // An engine operation of this class finished with agreed observation ob.
    // A call of the class's choice slower than its estimate, and slow
    // enough to move the class, is held back until the option's next call,
    // and the faster of the two counts (as observe_mpi() does for the MPI
    // library).
    void observe(CollKind kind, size_t bytes, uint32_t eligible, const Option &o, const Observation &ob);

    // The engine options a call of kind may run (choose()'s candidates
    // other than the MPI library), in the order ties are broken.
    std::vector<Option> engine_options(CollKind kind, uint32_t eligible) const;

    // A measurement of option o taken before the communicator's first call
    // (runtime/engine_calibration.h): like observe(), but it replaces the
    // class's estimate and the option's correction instead of blending
    // into them, so that the first real call is decided on what the engine
    // really takes here and not on the model's guess.  Agreed like observe().
    // Sizes may come in any order: the option's correction and its codec's
    // cost per byte follow the largest size given.
    void calibrate(CollKind kind, size_t bytes, uint32_t eligible, const Option &o, const Observation &ob);

    // A call's time on this rank's clock, for statistics only.
    void note_local_time(CollKind kind, size_t bytes, uint32_t eligible, double seconds);
    // The MPI library's time for a probed call (choose()'s probe_mpi), MAX
    // over ranks, so every rank updates the same estimate.  A probe more
    // than kConfirmAbove times slower than the estimate, or slower and
    // enough to move a class off the MPI library, is held back and the
    // class's next call probes again; the faster of the two counts.  A
    // probe that finds the MPI library faster than a class's engine choice,
    // against the class's own estimate, is held back the same way; should
    // the second agree, the slower of the two replaces the estimate.
    // One preempted call (seen: a 32 us allreduce timed at 103 us) must
    // not move a class off the MPI library, while a slowdown that lasts
    // still moves it one call later.
    //
    // first_calls: the probe ran one of the class's first kMpiFirstCalls
    // calls of the MPI library, at a size the set-up did not run it at
    // (probe_runs_first_calls()).  Open MPI's first calls at a size are
    // slow: they touch its temporary buffers' pages for the first time
    // (over TCP at 10 Gbit/s on 2 and 4 ranks, 256 KiB to 16 MiB: the 1st
    // 2.6-5.6 times a later call, the 2nd 1.2-2.3 times, on a VM whose
    // first touch of a page takes 14.5 us), so such a time only bounds
    // the MPI library's from above: it lowers an estimate above it (a
    // disturbed set-up, which the early probe of an engine class is for)
    // and is dropped otherwise, unless more than kConfirmAbove times the
    // estimate on a class running the MPI library: then it is held for a
    // later probe to confirm, the faster counting.  Counted, it sent
    // classes to an engine option slower than Open MPI, and through
    // measured_near their neighbours too.
    void observe_mpi(CollKind kind, size_t bytes, uint32_t eligible, double seconds, bool first_calls = false);
    // Whether the call choose() last gave this class the MPI library on
    // was one of its first kMpiFirstCalls (observe_mpi()'s first_calls).
    bool probe_runs_first_calls(CollKind kind, size_t bytes, uint32_t eligible) const;

    // A size class whose choice is fixed (a tuning source): the model is
    // not asked for it.
    void pin_option(CollKind kind, size_t bytes, uint32_t eligible, const Option &o);

    // Per size class: the choice, predicted and measured times, calls.
    std::string summary(const char *indent) const;

    std::string option_name(const Option &o) const;

private:
    // What a class measured for one option: seconds of a call of `bytes`
    // (agreed, moving).  Times, not ratios to the model: the codec's
    // measured cost per byte moves the model under every class, and a
    // class's own measurement must not move with it.
    struct Measured {
        double seconds = -1;  // < 0: none
        double bytes = 0;
        bool calibration = false;  // the calibration's alone (blend_into())
    };
    struct Class {
        CollKind kind;
        int bucket;  // floor(log2(bytes))
        uint32_t eligible;
        bool decided = false, pinned = false;
        Option choice;
        double predicted = 0;  // of the choice, at the last call
        Option next;           // the fastest other option at the last call (why: next_predicted)
        double next_predicted = -1;
        uint64_t calls = 0, changes = 0;
        uint64_t next_probe = kProbeEvery, probe_gap = kProbeEvery;  // the MPI library's re-measurement
        uint64_t early_probe = 0;        // the call of its early probe still to come (0: none)
        uint64_t probes = 0;             // calls that ran the MPI library instead of its engine choice
        uint64_t mpi_runs = 0;           // calls choose() gave the MPI library, probes included
        uint64_t checks = 0;             // probes checks_mpi_first() made
        bool early_engine = false;       // whether the class started on the engine
        bool engine_ran = false;         // choose() has given it the engine
        bool warm_up = false;            // its first engine call, not measured (record())
        uint64_t try_from = 0;           // a move to an untried option deferred to this call (0: none)
        double local_seconds = 0;        // sum over calls, this rank's clock
        std::vector<Measured> measured;  // per option index: agreed moving estimate
        double held_mpi = -1;            // seconds of an MPI probe awaiting its second (observe_mpi), < 0 none
        bool held_mpi_fast = false;      // that probe found the MPI library faster than the engine choice
        // An engine option whose call awaits its second (record()), < 0
        // none: a slow call of the choice (the faster of the two counts)
        // or a fast one of an exploration (the slower counts).
        int held_option = -1;
        double held_seconds = 0;  // that call's seconds
        // The choice's last kRecent measured calls, held ones included, as
        // ratios to the model at their size (note_recent()); emptied when
        // the choice moves.
        std::array<double, kRecent> recent{};
        int recent_n = 0, recent_next = 0;
        // Exploration (explore()): the option explored, < 0 none; its
        // calls still to hand out after this one, and whether the next
        // observation of it is the warm-up's; the call the gap to the next
        // exploration counts from, that gap's doubling, the call before
        // which nothing is evaluated, and the explorations so far.
        int explore = -1;
        int explore_calls = 0;
        bool explore_warm = false;
        uint64_t explore_from = 0, explore_scale = 1, explore_next = kExploreAfter, explorations = 0;
        // The runner-up of its first decision where that was a tie between
        // two engine options both calibrated at its size, or neither timed
        // here (explore_tie()), until explored; < 0 none.
        int tie = -1;
        // The selector's generation and the call size of the last full
        // evaluation (choose()'s fast path).
        uint64_t seen_generation = UINT64_MAX;
        size_t seen_bytes = 0;
    };
    Class &class_of(CollKind kind, size_t bytes, uint32_t eligible);
    const Class *find_class(CollKind kind, size_t bytes, uint32_t eligible) const;
    int option_index(const Option &o) const;
    double model(const Option &o, CollKind kind, size_t bytes) const;
    double predict_in(const Class *c, const Option &o, CollKind kind, size_t bytes) const;
    // What a measured time of option o is carried to other sizes along:
    // its model, or for the MPI library cost_pmpi_loop().
    double shape(const Option &o, CollKind kind, size_t bytes) const;
    // A class's own measurement of option i, moved to a call of `bytes` by
    // shape() (model_here: shape() at bytes).
    double scaled(const Measured &m, const Option &o, CollKind kind, double bytes, double model_here) const;
    // Option i at `bytes` from the classes of `kind` that measured it, or
    // < 0 when none has (model_here: shape() at bytes).
    double measured_near(int i, CollKind kind, double bytes, double model_here) const;
    // Whether the MPI library measured at mpi_seconds would move class c,
    // now on the MPI library, to an engine option (observe_mpi()).
    bool moves_off_mpi(const Class &c, size_t bytes, double mpi_seconds) const;
    // Whether the MPI library measured at mpi_seconds would move class c,
    // on an engine option and with an MPI time of its own, back to it.
    bool returns_to_mpi(const Class &c, size_t bytes, double mpi_seconds) const;
    // Whether class c, on an engine option and about to leave it for the
    // MPI library on a call that can probe, probes the MPI library on this
    // call instead and stays (choose()); counts the probe if so.
    bool checks_mpi_first(Class &c);
    // Whether a class of kind has measured the MPI library.
    bool mpi_measured(CollKind kind) const;
    // Whether the set-up ran the MPI library at a size of class c: its
    // first calls there are behind it (observe_mpi()'s first_calls).
    bool mpi_warm_at_setup(const Class &c) const;
    // The set-up's drained time of MPI_Allreduce at a size of class c,
    // where it read more than kConfirmAbove times the time as the call
    // came (CostInputs::pmpi, the estimate: inside a shaper's burst); < 0
    // elsewhere.
    // *bytes (optional): the set-up size it was timed at.
    double drained_at_setup(const Class &c, double *bytes = nullptr) const;
    // At class c's first decision, where drained_at_setup() has a time:
    // whether it takes that time as its MPI measurement (and does), the
    // best engine option predicted at best_t and the MPI library at mpi_t.
    bool adopt_drained(Class &c, double best_t, double mpi_t);
    // Whether the set-up timed MPI_Allreduce at a size of the class of `bytes`.
    bool set_up_timed(size_t bytes) const;
    // Whether the nth call (from 1) of class c to run the MPI library is
    // one of its first kMpiFirstCalls there, at a size the set-up did not
    // run it at; first_calls_next(): its next such call.
    bool among_first_calls(const Class &c, uint64_t nth) const;
    bool first_calls_next(const Class &c) const;
    // Calls of the MPI library a probe on its first call at a size costs:
    // CostInputs::pmpi_first within [1, kFirstCallCostMax].
    double first_call_cost() const;
    // The call from which class c may move to engine option i predicted at
    // option_t, from the option it runs (the MPI library or another engine
    // option) predicted at now_t, for calls of `bytes` (0: at once).
    uint64_t calls_before_trying(const Class &c, int i, double option_t, double now_t, size_t bytes) const;
    // The engine option other than c's choice that c has measured and that
    // is predicted fastest for calls of `bytes`, below *t (set to its
    // prediction); < 0 when none.
    int fastest_measured(const Class &c, size_t bytes, double *t) const;
    // What a call's first touches of `bytes` of fresh memory cost.
    double first_touch_seconds(double bytes) const;
    // Whether class c, on engine option i, would leave it were a call of
    // it to take `seconds` (record()).
    bool moves_off_engine(const Class &c, int i, size_t bytes, double seconds) const;
    // A measured call of class c's choice o, of `bytes`, took `seconds`.
    void note_recent(Class &c, const Option &o, size_t bytes, double seconds);
    // The mean of c's last kRecent calls of its choice without the slowest
    // one, as a ratio to the model; < 0 until there are kRecent.
    static double recent_ratio(const Class &c);
    // Moves a class's estimate of option i towards a new sample (replace:
    // takes it outright; calibrating: a calibration's sample, which the
    // class's first call of the option replaces).
    void blend_into(Class &c, int i, double seconds, double bytes, bool replace, bool calibrating = false);
    bool allows(const Option &o, CollKind kind, uint32_t eligible) const;
    void record(CollKind kind, size_t bytes, uint32_t eligible, const Option &o, const Observation &ob,
                bool calibrating);
    // The MPI library's re-measurement schedule of a class (choose()).
    void next_probe(Class &c, bool moved, bool *probe_mpi, double speedup);
    // Whether this call of class c explores, and then which option (*o).
    bool explore(Class &c, size_t bytes, Option *o, std::string *why);
    // explore()'s early case: a tie at the first decision (Class::tie).
    bool explore_tie(Class &c, size_t bytes, Option *o, std::string *why);
    // Makes option i class c's exploration, from this call (a warm-up
    // first, or the measured call at once); returns the option.
    Option start_exploration(Class &c, int i, bool warm_up);

    CostInputs in_;
    std::vector<CodecModel> codecs_;
    std::vector<ScheduleModel> schedules_;
    std::vector<Option> all_;               // PMPI, then codec-major, schedule-minor
    std::vector<double> correction_;        // per option: measured / model, moving (1 until measured;
                                            // the fallback of a kind no class has measured)
    std::vector<double> calibrated_bytes_;  // per option: the largest size calibrate() was given (record())
    std::vector<Class> classes_;
    uint64_t generation_ = 0;    // bumped by everything that can change a prediction
    size_t engine_largest_ = 0;  // bytes of the largest engine call observed, calibration's included
    size_t last_ = 0;            // index of the last class looked up
};

}  // namespace terse
