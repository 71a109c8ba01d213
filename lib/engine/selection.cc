#include "engine/selection.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace terse {

namespace {

double ring_cost(const CostInputs &in, const CodecCost &c, CollKind kind, double bytes) {
    return cost_ring_kind(in, c, kind, bytes);
}
bool ring_serves(CollKind kind, const CodecModel &c) { return kind != CollKind::Allreduce || !c.gather_only; }

double rd_cost(const CostInputs &in, const CodecCost &c, CollKind, double bytes) {
    return cost_recursive_doubling(in, c, bytes);
}
bool rd_serves(CollKind kind, const CodecModel &c) { return kind == CollKind::Allreduce && !c.gather_only; }

double gather_cost(const CostInputs &in, const CodecCost &c, CollKind, double bytes) {
    return cost_gather(in, c, bytes);
}
bool gather_serves(CollKind kind, const CodecModel &c) { return kind == CollKind::Allreduce && c.gather_only; }

double two_level_cost(const CostInputs &in, const CodecCost &c, CollKind, double bytes) {
    return cost_two_level_schedule(in, c, bytes);
}
bool two_level_serves(CollKind kind, const CodecModel &c) {
    return kind == CollKind::Allreduce && !c.gather_only;
}

bool ring_other_kinds(CollKind kind, const CodecModel &) { return kind != CollKind::Allreduce; }
bool gather_all(CollKind kind, const CodecModel &) { return kind == CollKind::Allreduce; }

double blend(double old, double sample, bool first) {
    return first ? sample : (1.0 - Selector::kWeight) * old + Selector::kWeight * sample;
}

// Corrections stay within sane bounds, so that one pathological sample
// (a preempted rank) cannot rule an option out, or in, for good.
double clamp_correction(double c) { return std::clamp(c, 0.25, 64.0); }

int bucket_of(size_t bytes) { return bytes ? int(std::bit_width(bytes)) - 1 : 0; }

std::string size_text(double b) {
    static const char *units[] = {"B", "K", "M", "G", "T"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        ++u;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%g%s", b, units[u]);
    return buf;
}

std::string time_text(double s) {
    char buf[32];
    if (s < 1e-3) snprintf(buf, sizeof buf, "%.1fus", s * 1e6);
    else if (s < 1) snprintf(buf, sizeof buf, "%.3fms", s * 1e3);
    else snprintf(buf, sizeof buf, "%.3fs", s);
    return buf;
}

}  // namespace

CodecCost CodecModel::estimate(Schedule s) const {
    if (identity) return CodecCost{};
    if (s == Schedule::TwoLevel) s = Schedule::Ring;
    const size_t own = size_t(s);
    if (own < on.size() && on[own].samples && !on[own].calibrated_only) return on[own].measured;
    // Calibration runs 64 KiB first, where an operation's fixed costs per
    // chunk inflate the cost per byte: on 4 ranks at 10 Gbit/s a ring held
    // at its own 64 KiB figure lost 4-16 MiB to recursive doubling, which
    // had run calls of those sizes, at half the ring's speed.  Until its
    // own calls measure it, a schedule takes the least of its calibration
    // and what the others measured.
    CodecCost least{INFINITY, INFINITY};
    for (const CodecSamples &m : on)
        if (m.samples) {
            least.seconds_per_byte = std::min(least.seconds_per_byte, m.measured.seconds_per_byte);
            least.ratio = std::min(least.ratio, m.measured.ratio);
        }
    if (std::isfinite(least.seconds_per_byte)) return least;
    return CodecCost{0.0, prior_ratio};
}

uint64_t CodecModel::samples() const {
    uint64_t n = 0;
    for (const CodecSamples &m : on) n += m.samples;
    return n;
}

std::vector<ScheduleModel> default_schedules() {
    return {{Schedule::Ring, ring_cost, ring_serves},
            {Schedule::RecursiveDoubling, rd_cost, rd_serves},
            {Schedule::Gather, gather_cost, gather_serves}};
}

std::vector<ScheduleModel> schedules_for(Algorithm a, bool two_level) {
    switch (a) {
    case Algorithm::Auto: {
        std::vector<ScheduleModel> s = default_schedules();
        if (two_level) s.push_back({Schedule::TwoLevel, two_level_cost, two_level_serves});
        return s;
    }
    case Algorithm::Ring:
        return {{Schedule::Ring, ring_cost, ring_serves}, {Schedule::Gather, gather_cost, gather_serves}};
    case Algorithm::RecursiveDoubling:
        return {{Schedule::RecursiveDoubling, rd_cost, rd_serves},
                {Schedule::Gather, gather_cost, gather_serves},
                {Schedule::Ring, ring_cost, ring_other_kinds}};
    case Algorithm::Gather:
        return {{Schedule::Gather, gather_cost, gather_all}, {Schedule::Ring, ring_cost, ring_other_kinds}};
    case Algorithm::TwoLevel:
        // Not the model's to plan: the runtime makes no Selector for it
        // (terse(7), PLANNER); the flat schedules, should one be asked.
        return default_schedules();
    }
    return default_schedules();
}

Selector::Selector(const CostInputs &in, std::vector<CodecModel> codecs, std::vector<ScheduleModel> schedules)
    : in_(in), codecs_(std::move(codecs)), schedules_(std::move(schedules)) {
    all_.push_back(Option{});
    for (int c = 0; c < int(codecs_.size()); ++c)
        for (const ScheduleModel &s : schedules_) all_.push_back(Option{true, c, s.schedule});
    correction_.assign(all_.size(), 1.0);
    calibrated_bytes_.assign(all_.size(), 0.0);
}

int Selector::option_index(const Option &o) const {
    if (!o.engine) return 0;
    for (size_t i = 1; i < all_.size(); ++i)
        if (all_[i] == o) return int(i);
    return -1;
}

std::string Selector::option_name(const Option &o) const {
    if (!o.engine) return "pmpi";
    const std::string codec = o.codec >= 0 && o.codec < int(codecs_.size()) ? codecs_[o.codec].name : "?";
    return codec + "/" + schedule_name(o.schedule);
}

const Selector::Class *Selector::find_class(CollKind kind, size_t bytes, uint32_t eligible) const {
    const int b = bucket_of(bytes);
    auto same = [&](const Class &c) { return c.kind == kind && c.bucket == b && c.eligible == eligible; };
    if (last_ < classes_.size() && same(classes_[last_])) return &classes_[last_];
    for (const Class &c : classes_)
        if (same(c)) return &c;
    return nullptr;
}

Selector::Class &Selector::class_of(CollKind kind, size_t bytes, uint32_t eligible) {
    if (const Class *c = find_class(kind, bytes, eligible)) {
        last_ = size_t(c - classes_.data());
        return classes_[last_];
    }
    Class c;
    c.kind = kind;
    c.bucket = bucket_of(bytes);
    c.eligible = eligible;
    c.measured.assign(all_.size(), Measured{});
    // Sorted, so that the summary lists classes in order whatever the
    // order of the calls.
    auto pos = std::find_if(classes_.begin(), classes_.end(), [&](const Class &o) {
        return std::tie(o.kind, o.bucket, o.eligible) > std::tie(c.kind, c.bucket, c.eligible);
    });
    const auto at = classes_.insert(pos, std::move(c));  // may reallocate: begin() after it
    last_ = size_t(at - classes_.begin());
    return classes_[last_];
}

double Selector::model(const Option &o, CollKind kind, size_t bytes) const {
    if (!o.engine) return cost_pmpi(in_, kind, double(bytes));
    const CodecModel &c = codecs_[o.codec];
    CostInputs in = in_;
    in.fixed = in_.fixed * c.agreements;
    for (const ScheduleModel &s : schedules_)
        if (s.schedule == o.schedule) return s.cost(in, c.estimate(o.schedule), kind, double(bytes));
    return cost_ring_kind(in, c.estimate(o.schedule), kind, double(bytes));
}

// The MPI library's measured times come from a loop's calls, which find a
// shaped link's burst spent: carried to another size along the set-up's
// curve as it came, a 64 KiB time at 1 Gbit/s on 2 ranks (1049 us against
// the burst's 75, 14 times) put 128 KiB at 4.6 ms where Open MPI takes
// 1.9, and the class took the lossless ring (2.0 ms) instead.
double Selector::shape(const Option &o, CollKind kind, size_t bytes) const {
    return o.engine ? model(o, kind, bytes) : cost_pmpi_loop(in_, kind, double(bytes));
}

double Selector::scaled(const Measured &m, const Option &o, CollKind kind, double bytes,
                        double model_here) const {
    if (m.bytes == bytes) return m.seconds;
    const double there = shape(o, kind, size_t(m.bytes));
    return there > 0 && model_here > 0 ? m.seconds * model_here / there : m.seconds;
}

// A class no call of this option has run yet.  The option's correction
// alone (one ratio to the model for every size) carried the ratio measured
// at 64-256 KiB, where an operation's fixed costs dominate, to 64 MiB: on
// 4 ranks at 25 Gbit/s it predicted the codec at twice what it takes
// there, so the class never ran it.  The neighbours that did measure it
// say more:
//  - between two measured sizes, the ratio to the model interpolated in
//    log(bytes);
//  - above the largest, its time plus the marginal ratio of the two
//    largest times to the model's (their slope) over the model's growth,
//    held between a quarter of and the largest's own ratio (a slope from
//    two noisy points must not predict a call for nothing, nor worse than
//    the plain ratio would);
//  - above the only one, its time plus the model's own growth (a slope of
//    1, held the same way): the excess of one small size is taken for a
//    fixed cost.  Carried as a ratio, a 64 KiB calibration at 2.4 times
//    the model (4 ranks sharing 2 cores at 10 Gbit/s, where calibration
//    stops after 64 KiB) predicted the codec at 130 ms for 16 MiB, which
//    takes 32 ms, against the MPI library's 84 ms: the class never ran it.
//    A prediction too low costs a few calls before the class measures its
//    way out; one too high is never corrected, since nothing runs it;
//  - below the smallest, that neighbour's ratio.
double Selector::measured_near(int i, CollKind kind, double bytes, double model_here) const {
    const Measured *below = nullptr, *below2 = nullptr, *above = nullptr;
    auto each = [&](auto &&f) {
        for (const Class &c : classes_)
            if (c.kind == kind && c.measured[i].seconds >= 0) f(c.measured[i]);
    };
    each([&](const Measured &m) {
        if (m.bytes <= bytes) {
            if (!below || m.bytes > below->bytes) below = &m;
        } else if (!above || m.bytes < above->bytes) {
            above = &m;
        }
    });
    if (below)
        each([&](const Measured &m) {
            if (m.bytes < below->bytes && (!below2 || m.bytes > below2->bytes)) below2 = &m;
        });
    if (!below && !above) return -1;
    const Option &o = all_[i];
    auto ratio = [&](const Measured *m) {
        const double mm = shape(o, kind, size_t(m->bytes));
        return mm > 0 ? m->seconds / mm : 1.0;
    };
    if (below && above) {
        const double lo = std::log(below->bytes), hi = std::log(above->bytes);
        const double t = hi > lo ? (std::log(bytes) - lo) / (hi - lo) : 0.0;
        return model_here * (ratio(below) + t * (ratio(above) - ratio(below)));
    }
    if (!below) return model_here * ratio(above);
    const double r = ratio(below);
    const double m1 = shape(o, kind, size_t(below->bytes));
    double marginal = 1.0;  // one size measured: its excess over the model is a fixed cost
    if (below2) {
        const double m0 = shape(o, kind, size_t(below2->bytes));
        marginal = m1 > m0 ? (below->seconds - below2->seconds) / (m1 - m0) : r;
        if (!std::isfinite(marginal)) marginal = r;
    }
    marginal = std::min(r, std::max(marginal, 0.25 * r));
    return below->seconds + marginal * std::max(0.0, model_here - m1);
}

double Selector::predict_in(const Class *c, const Option &o, CollKind kind, size_t bytes) const {
    const int i = option_index(o);
    const double m = model(o, kind, bytes);
    if (i < 0) return m;
    const double along = i == 0 ? shape(o, kind, bytes) : m;
    if (c && c->measured[i].seconds >= 0) {
        const double own = scaled(c->measured[i], o, kind, double(bytes), along);
        // The choice's estimate counts the faster of a held pair, which
        // keeps it low where calls spread widely: on 4 ranks sharing 2
        // cores at 25 Gbit/s a 4 MiB class's quantize:bits=8 calls took
        // 9.2-13.7 ms (mean 11.3), its estimate stayed at 10.4 below the
        // MPI library's 11.6, and the class kept a codec slower than the
        // MPI library (9.5-11.1 ms in the baseline's runs).  So it is
        // never below what its last calls took on average, the slowest
        // left out (one preempted call moves nothing).
        const double r = c->decided && o == c->choice ? recent_ratio(*c) : -1;
        return r > 0 ? std::max(own, r * m) : own;
    }
    const double near = measured_near(i, kind, double(bytes), along);
    // The MPI library at a size the set-up timed: the lower of that time
    // and the neighbours' extrapolated.  Seen on 2 ranks over TCP on the
    // loopback: the 64 and 128 KiB classes' probes read Open MPI at 1.6-1.8
    // times the set-up's curve, which carried to 256 KiB put it at 289-312
    // us where the set-up had timed 147-187 and a loop's calls take 178;
    // the class started on quantize:bits=8, which took 250-330, and ran a
    // 22-call loop at 0.72 of Open MPI's speed.  An estimate too low costs
    // the class two calls of the MPI library (its early probe corrects it),
    // one too high an engine option's warm-up and held pair, and the MPI
    // library's first touches again on the way back.
    if (near >= 0 && i == 0 && kind == CollKind::Allreduce && set_up_timed(bytes)) return std::min(near, m);
    if (near >= 0) return near;
    // The calibration does not run the two-level schedule (its first calls
    // pay the MPI library's first touches on the node communicators), and
    // its model, like the flat schedules', assumes a core for every rank.
    // Until a two-level call is measured, it carries what its codec's flat
    // ring is predicted over that ring's model at this size: the same codec
    // work and transport on the same cores.  Seen on 2 emulated nodes x 2
    // ranks (4 ranks on 2 cores) at 10 Gbit/s: the ring with
    // quantize:bits=8 measured 2.3 times its model at 1 MiB, and
    // two-level, predicted on its model alone at 0.86-1.2 ms against Open
    // MPI's 1.4-2.2, took 1.9-4, so that every class of 1-4 MiB tried it
    // and left it in its first calls.  At 1 Gbit/s the ring measured 0.87
    // times its model, and two-level, 2 times faster than the ring there,
    // is chosen from 1 MiB.  The ring's prediction grows from its
    // calibrated sizes as a fixed cost plus the model's growth
    // (measured_near), so the share carried shrinks with the size.  (Here
    // no class has measured two-level, which serves allreduce only; a ring
    // nothing measured carries its correction, 1.)
    if (o.engine && o.schedule == Schedule::TwoLevel) {
        const Option ring{true, o.codec, Schedule::Ring};
        const double mr = option_index(ring) > 0 ? model(ring, kind, bytes) : 0;
        if (mr > 0) return m * predict_in(c, ring, kind, bytes) / mr;
    }
    return m * correction_[i];
}

double Selector::predict(const Option &o, CollKind kind, size_t bytes, uint32_t eligible) const {
    return predict_in(find_class(kind, bytes, eligible), o, kind, bytes);
}

bool Selector::allows(const Option &o, CollKind kind, uint32_t eligible) const {
    if (!o.engine) return true;
    if (!(eligible >> o.codec & 1u)) return false;
    if (o.schedule == Schedule::TwoLevel && !(eligible & kEligibleTwoLevel)) return false;
    for (const ScheduleModel &s : schedules_)
        if (s.schedule == o.schedule) return s.serves(kind, codecs_[o.codec]);
    return false;
}

std::vector<Option> Selector::engine_options(CollKind kind, uint32_t eligible) const {
    std::vector<Option> out;
    for (size_t i = 1; i < all_.size(); ++i)
        if (allows(all_[i], kind, eligible)) out.push_back(all_[i]);
    return out;
}

Option Selector::choose(CollKind kind, size_t bytes, uint32_t eligible, bool *changed, std::string *why,
                        bool *probe_mpi, bool timed) {
    Class &c = class_of(kind, bytes, eligible);
    c.calls++;
    if (changed) *changed = false;
    if (probe_mpi) *probe_mpi = false;
    if (c.pinned) return c.choice;
    // A call that probes the MPI library does not explore; an exploration
    // due waits for the next call.
    bool probe = false, check = false;
    Option explored;
    const auto finish = [&](bool moved, double speedup) {
        next_probe(c, moved, &probe, speedup);
        probe = probe || check;
        if (probe_mpi) *probe_mpi = probe;
        if (probe_mpi && probe && c.choice.engine) c.probes++;
        const Option o = !moved && !probe && timed && explore(c, bytes, &explored, why) ? explored : c.choice;
        if (!o.engine || (probe_mpi && probe)) c.mpi_runs++;
        return o;
    };
    // Nothing the predictions read has changed since this class last
    // decided a call of this size: the same inputs give the same choice
    // (the rules below leave a choice they made where it is), so only the
    // probe schedule moves.  The full evaluation costs about a microsecond
    // (every option's model, twice), which a 64 KiB call on shared memory
    // (17 us) shows as 5%.  A move deferred to a later call
    // (calls_before_trying()) is evaluated again once that call comes.
    if (c.decided && c.seen_generation == generation_ && c.seen_bytes == bytes &&
        !(c.try_from && c.calls >= c.try_from))
        return finish(false, 1);
    const uint64_t deferred_to = c.try_from;
    c.try_from = 0;
    c.seen_generation = generation_;
    c.seen_bytes = bytes;
    auto allowed = [&](const Option &o) { return allows(o, kind, eligible); };
    // The MPI library, then the fastest engine option (ties to the earlier).
    double mpi_t = predict_in(&c, all_[0], kind, bytes);
    int best = 0;
    double best_t = INFINITY;
    bool current_allowed = c.decided && !c.choice.engine;
    for (size_t i = 1; i < all_.size(); ++i) {
        if (!allowed(all_[i])) continue;
        if (c.decided && all_[i] == c.choice) current_allowed = true;
        const double t = predict_in(&c, all_[i], kind, bytes);
        if (t < best_t) {
            best_t = t;
            best = int(i);
        }
    }
    if (!c.decided && best > 0 && adopt_drained(c, best_t, mpi_t)) mpi_t = predict_in(&c, all_[0], kind, bytes);
    // Never slower than the MPI library: the engine is taken only when it
    // is predicted kSwitchMargin faster, and left as soon as the MPI
    // library is predicted no slower than the option running.  The margin
    // is asymmetric on purpose: a prediction within noise of the MPI
    // library's goes to the MPI library, and the gap between the two
    // thresholds keeps a class from alternating.
    const bool engine_pays = best > 0 && best_t < (1.0 - kSwitchMargin) * mpi_t;
    // A decided class's move to engine option best, predicted against
    // now_t, that waits for its gain to cover a try (calls_before_trying):
    // the call it waits for, else 0.
    auto bet_waits_for = [&](double now_t) -> uint64_t {
        const uint64_t from = calls_before_trying(c, best, best_t, now_t, bytes);
        return c.calls < from ? from : 0;
    };
    auto defer = [&](uint64_t from, double now_t) {
        c.try_from = from;
        if (why && from != deferred_to)
            *why = option_name(c.choice) + " kept: " + option_name(all_[best]) + " predicted " +
                   time_text(best_t) + " against " + time_text(now_t) +
                   ", not tried in this class, is from call " + std::to_string(from) + " should that hold";
    };
    bool move = !c.decided || !current_allowed;
    if (move) {
        if (!engine_pays) best = 0;
    } else if (!c.choice.engine) {
        move = engine_pays;
        if (move) {
            if (const uint64_t from = bet_waits_for(mpi_t)) {
                move = false;
                defer(from, mpi_t);
            }
        }
    } else {
        const double current_t = predict_in(&c, c.choice, kind, bytes);
        // Where the move to best waits, the fastest option the class has
        // measured, should it pay against now_t; else -1.
        auto tried_instead = [&](double now_t) {
            double tried_t = INFINITY;
            const int tried = fastest_measured(c, bytes, &tried_t);
            return tried > 0 && tried_t < (1.0 - kSwitchMargin) * now_t ? tried : -1;
        };
        if (mpi_t <= current_t) {  // to the MPI library, or to an engine option that pays
            if (!engine_pays) best = 0;
            if (best > 0 && bet_waits_for(mpi_t)) best = std::max(0, tried_instead(mpi_t));
            move = true;
            if (best == 0 && probe_mpi && timed && checks_mpi_first(c)) {
                move = false;
                check = true;
                if (why)
                    *why = option_name(c.choice) + " kept: the MPI library, predicted " + time_text(mpi_t) +
                           " against " + time_text(current_t) +
                           ", has no time of its own here; this call runs it";
            }
        } else {
            move = !(all_[best] == c.choice) && best_t < (1.0 - kSwitchMargin) * current_t;
            if (move) {
                if (const uint64_t from = bet_waits_for(current_t)) {
                    const int tried = tried_instead(current_t);
                    if (tried > 0) {
                        best = tried;
                    } else {  // the choice stays until the bet is covered
                        move = false;
                        defer(from, current_t);
                    }
                }
            }
        }
    }
    if (move) {
        const bool was = c.decided;
        if (was) c.changes++;
        if (changed) *changed = true;
        if (why) {
            *why = (was ? option_name(c.choice) + " -> " : std::string()) + option_name(all_[best]) +
                   " (predicted";
            for (size_t i = 0; i < all_.size(); ++i)
                if (allowed(all_[i]))
                    *why += " " + option_name(all_[i]) + " " + time_text(predict_in(&c, all_[i], kind, bytes));
            *why += ")";
        }
        // The option left keeps what its last calls bound its estimate
        // to: back at its held-pair estimate, it would be predicted faster
        // than what just made the class leave it, and the class would come
        // back to it and leave it again.
        if (was && c.choice.engine) {
            const int left = option_index(c.choice);
            if (left > 0 && c.measured[left].seconds >= 0)
                c.measured[left] = Measured{predict_in(&c, c.choice, kind, bytes), double(bytes)};
        }
        c.choice = all_[best];
        c.decided = true;
        c.recent_n = c.recent_next = 0;
    }
    c.predicted = predict_in(&c, c.choice, kind, bytes);
    if (c.choice.engine && !c.engine_ran) c.warm_up = c.engine_ran = true;
    // The MPI library's time is measured once, at set-up, and may have been
    // taken under a load that is gone (or came), or too short to see the
    // link's real rate (a shaper's burst): every kProbeEvery-th call of the
    // class measures it again.  With the engine chosen that call runs the
    // MPI library instead, so that a wrong estimate cannot keep a slower
    // engine; with the MPI library chosen the call it runs anyway is timed,
    // so that a wrong estimate cannot keep out a faster engine.  Each probe
    // that leaves the choice as it was doubles the gap to the next (up to
    // kProbeMax), so a settled class pays for probing less and less: with
    // the engine k times faster a probe costs k - 1 engine calls, so a
    // class that moves to the engine starts at a gap that keeps that under
    // kProbeShare of its calls (measured: with k = 2.4 on 4 ranks at
    // 10 Gbit/s, probes at calls 8 and 16 cost a 22-call benchmark 10%).
    double speedup = 1;
    if (move && c.choice.engine) speedup = mpi_t / std::max(predict_in(&c, c.choice, kind, bytes), 1e-12);
    // The runner-up, so that TERSE_STATS says why.
    c.next_predicted = -1;
    for (const Option &o : all_) {
        if (o == c.choice || !allowed(o)) continue;
        const double t = predict_in(&c, o, kind, bytes);
        if (c.next_predicted < 0 || t < c.next_predicted) {
            c.next_predicted = t;
            c.next = o;
        }
    }
    // A first decision between two engine options predicted within
    // kTieWithin, both timed by the calibration at this class's size or
    // both calibrated elsewhere and neither timed here: a tie
    // (explore_tie()).  Above the calibrated sizes both predictions are
    // calibrations carried up along two models, and their order is as
    // uncertain.  Seen on 4 ranks at 10 Gbit/s: the codec's ring read
    // 5.2-5.5 ms at 1 MiB in a calibration (a loop's calls take 4.0-4.8),
    // recursive doubling 4.7-5.0, and the 4-16 MiB classes ran recursive
    // doubling, predicted 5% below the ring, for good: 67 ms a call at
    // 16 MiB where the ring takes 52.
    if (move && c.changes == 0 && c.choice.engine && c.next.engine && c.next_predicted >= 0) {
        const int r = option_index(c.next), k = option_index(c.choice);
        auto timed_here = [&](int i) { return c.measured[size_t(i)].calibration; };
        auto carried_up = [&](int i) {
            return c.measured[size_t(i)].seconds < 0 && calibrated_bytes_[size_t(i)] > 0;
        };
        if (r > 0 && k > 0 && ((timed_here(r) && timed_here(k)) || (carried_up(r) && carried_up(k))) &&
            c.next_predicted - c.predicted <= kTieWithin * c.predicted)
            c.tie = r;
    }
    return finish(move, speedup);
}

// Two engine options that the calibration ran at the class's size and that
// it timed within kTieWithin of each other are a tie the model cannot
// break: which one the class runs is the order ties are broken in.  Seen
// at 1 Gbit/s on 2 ranks, 64 KiB, quantize:bits=8: the ring calibrated at
// 265 us and recursive doubling at 264; in a loop the ring takes 190-230
// and recursive doubling 170, and the class ran the ring for good
// (explorations start after kExploreAfter calls, a benchmark makes 22).
// The window is wider than the switching margin because a calibration's
// three repeats on a shaped link can be that far off a loop's calls: on
// the same fabric the ring later calibrated at 244 us and recursive
// doubling at 272 (11% apart), and in a loop took 250 and 234.
// So the first decision notes such a runner-up (choose()), and once the
// choice has a measured call of its own the class runs the runner-up once
// (twice should it be fast enough to move the class, the slower counting,
// as any exploration).  Its warm-up is behind it where the calibration ran
// a call as large; a try that loses costs at most kTieWithin of a call,
// since the runner-up was timed here under the choice's conditions.  A
// class above the calibrated sizes, where neither option has a time of its
// own, is the same tie (choose()), and its try costs the runner-up's
// warm-up too: a call at what the runner-up really takes, about the
// choice's where the prediction holds.
bool Selector::explore_tie(Class &c, size_t bytes, Option *o, std::string *why) {
    if (c.tie < 0 || !c.choice.engine || c.recent_n < 1) return false;
    const int r = c.tie;
    c.tie = -1;
    if (all_[r] == c.choice || !allows(all_[r], c.kind, c.eligible)) return false;
    const double current = predict_in(&c, c.choice, c.kind, bytes);
    const double runner_up = predict_in(&c, all_[r], c.kind, bytes);
    const bool warm = c.measured[size_t(r)].bytes < double(bytes);
    *o = start_exploration(c, r, warm);
    if (why)
        *why = "explores " + option_name(*o) + " (predicted " + time_text(runner_up) + ", " +
               option_name(c.choice) + " " + time_text(current) +
               (c.measured[size_t(r)].calibration ? ": a tie at the calibration" : ": a tie in prediction") +
               (warm ? "; its warm-up call)" : ")");
    return true;
}

Option Selector::start_exploration(Class &c, int i, bool warm_up) {
    c.explore = i;
    c.explore_warm = warm_up;
    c.explore_calls = warm_up ? 1 : 0;  // the measured call after the warm-up
    c.explorations++;
    return all_[i];
}

// An exploration costs two calls of the option (a warm-up and a measured
// one) instead of the choice's.  Should the option really take kConfirmAbove
// times its estimate, that is 2 (kConfirmAbove t - t_choice) more; the
// class explores once it has run that many times over 1 / kExploreShare
// calls since its last exploration (never before kExploreAfter), and each
// exploration doubles the next one's gap (up to kExploreBackoff times), so
// that a class whose options are all known pays less and less.  Measured
// on 4 ranks sharing 2 cores at 10 Gbit/s: the set-up probe read the ring
// at 197-3280 MB/s from run to run and the codec at 0.4-2 ns/byte, so in
// some runs classes from 1 MiB up predicted the codec at twice what it
// takes, within the MPI library's margin, and ran the MPI library for
// good where the codec is 1.2-2.3 times faster.  Explorations on every
// call of a short run (the trials of 20a7950, reverted) cost a benchmark
// on shared memory 14-17%: here a benchmark's 20-110 calls per size
// never explore.  One option is explored at a time, only where predicted
// within kExploreWithin of the choice (below: which).  The MPI library is
// re-measured by the probes (next_probe()), not here.
bool Selector::explore(Class &c, size_t bytes, Option *o, std::string *why) {
    if (c.explore >= 0) {
        // Its measured call; it is over should the class have moved to
        // the option meanwhile, or the warm-up's observation not have come
        // (a call that failed).
        if (c.explore_calls > 0 && !(all_[c.explore] == c.choice)) {
            c.explore_calls--;
            *o = all_[c.explore];
            if (why) *why = "explores " + option_name(*o) + " (a measured call)";
            return true;
        }
        if (c.held_option == c.explore) c.held_option = -1;
        c.explore = -1;
        c.explore_warm = false;
    }
    if (explore_tie(c, bytes, o, why)) return true;
    if (c.calls < c.explore_next) return false;
    const double current = predict_in(&c, c.choice, c.kind, bytes);
    // The fastest option the class has no time of its own for comes first,
    // then the fastest of all: on 4 ranks at 10 Gbit/s a class that had
    // measured the codec on recursive doubling at the MPI library's time
    // explored it again and again, while the ring, predicted 5% slower
    // from a noisy 64 KiB calibration and twice as fast, never ran.
    int best = -1;
    double best_t = INFINITY;
    bool best_unmeasured = false;
    for (size_t i = 1; i < all_.size(); ++i) {
        if (all_[i] == c.choice || !allows(all_[i], c.kind, c.eligible)) continue;
        const double t = predict_in(&c, all_[i], c.kind, bytes);
        if (!(t <= kExploreWithin * current)) continue;
        const bool unmeasured = c.measured[i].seconds < 0;
        if (best < 0 || (unmeasured && !best_unmeasured) || (unmeasured == best_unmeasured && t < best_t)) {
            best_t = t;
            best = int(i);
            best_unmeasured = unmeasured;
        }
    }
    // Looked at again later: the predictions move with every measurement.
    c.explore_next = c.calls + kExploreAfter;
    if (best < 0 || !(current > 0)) return false;
    const double cost = 2.0 * std::max(0.0, kConfirmAbove * best_t - current);
    const double gap = std::max(double(kExploreAfter), std::ceil(cost / (kExploreShare * current))) *
                       double(c.explore_scale);
    if (double(c.calls - c.explore_from) < gap) {
        c.explore_next = c.explore_from + uint64_t(std::min(gap, 1e15));
        return false;
    }
    *o = start_exploration(c, best, true);
    c.engine_ran = true;  // the class's memory is touched: a later move to the engine needs no warm-up
    c.explore_from = c.calls;
    c.explore_scale = std::min(2 * c.explore_scale, kExploreBackoff);
    if (why)
        *why = "explores " + option_name(*o) + " (predicted " + time_text(best_t) + ", " + option_name(c.choice) +
               " " + time_text(current) + "; its warm-up call)";
    return true;
}

void Selector::next_probe(Class &c, bool moved, bool *probe_mpi, double speedup) {
    if (moved) {
        // A probe costs the MPI library's call less the engine's; on the
        // MPI library's first call at a size, first_call_cost() of its
        // calls (and it only bounds its time, observe_mpi()).
        const double mpi_calls = c.choice.engine && first_calls_next(c) ? first_call_cost() : 1.0;
        const double share = std::ceil((mpi_calls * speedup - 1) / kProbeShare);
        c.probe_gap = std::clamp<uint64_t>(share > 0 ? uint64_t(std::min(share, 1e9)) : 0, kProbeEvery,
                                           kProbeMax);
        c.next_probe = c.calls + c.probe_gap - 1;  // this call is the new choice's 1st
        // A class that starts on the MPI library has only the set-up
        // estimate, interpolated between the sizes measured, and on a
        // shaped link taken inside the shaper's burst: at 1 Gbit/s the
        // class would run the MPI library 3.7 times slower than the codec
        // until its 8th call.  Its 2nd call (the 1st pays first touches)
        // is timed anyway, and agreeing its time costs little
        // (runtime/collective.h: the agreement stays in flight).  Its 3rd:
        // Open MPI's first two calls at a size are slow (observe_mpi()'s
        // first_calls), and the 2nd's time sent a 16 MiB class at
        // 10 Gbit/s to the lossless ring, 12% slower.
        //
        // A class that starts on an engine option has the same set-up
        // estimate to weigh it against, and a set-up disturbed on a busy
        // host (seen on 4 ranks sharing 2 cores at 10 Gbit/s: a 64 KiB
        // MPI_Allreduce read at 565 us where it takes 260-300) moves it to
        // an engine option that is slower, until its kProbeEvery-th call.
        // So while no class of its kind has measured the MPI library, and
        // the option is predicted less than kEarlyProbeBelow times faster
        // (a probe then costs less than one of its calls), the call after
        // the option's warm-up and first measured call runs the MPI library.
        // Its time bounds the MPI library's from above only (first_calls),
        // which is what a disturbed set-up needs: an estimate too high.
        // Only where the set-up ran the MPI library at this size: a first
        // call elsewhere costs several of its later ones (first_call_cost:
        // 7-13 on this project's host), more than the error.
        //
        // Where the set-up read the MPI library at this size inside a
        // shaper's burst (drained_at_setup()), a class that starts on it
        // probes its 1st call: the set-up ran the size, so that call pays
        // no first touches, and its time with the drained figure is the
        // second witness observe_mpi() waits for.  Seen at 1 Gbit/s on 2
        // ranks: 64 KiB read 75 us as it came and 1048 drained, a loop's
        // calls take 965, the codec 270; probed on its 3rd call and held
        // for a second, the class averaged 410 us a call over a 22-call
        // loop, probed on its 1st 285.
        //
        // Where the set-up did not run the MPI library at the size, a class
        // that starts on it probes its 2nd call as well as its 3rd: a time
        // more than kConfirmAbove times the estimate there is held for the
        // 3rd's to confirm, the faster of the two counting (observe_mpi()),
        // and anything else bounds it from above, as before.  Seen on 2
        // ranks over shared memory at 32 MiB: Open MPI took 75-83 ms a call
        // where the set-up's curve said 3.7-4.8, and the class ran it 6
        // times before the engine (9 ms); held from the 2nd call, the 3rd's
        // time moves the class 2 calls sooner.
        c.early_probe = 0;
        c.early_engine = c.choice.engine;
        if (c.calls == 1 && !c.choice.engine && drained_at_setup(c) > 0) c.early_probe = 1;
        else if (c.calls == 1 && !c.choice.engine && !mpi_warm_at_setup(c)) c.early_probe = kMpiFirstCalls;
        else if (c.calls == 1 && (!c.choice.engine ||
                                  (speedup < kEarlyProbeBelow && !mpi_measured(c.kind) && mpi_warm_at_setup(c))))
            c.early_probe = kEarlyProbe;
    }
    if (c.early_probe && c.calls >= c.early_probe) {
        static_assert(kMpiFirstCalls < kEarlyProbe, "the 2nd call's probe is confirmed by a later one");
        c.early_probe = c.early_probe == kMpiFirstCalls && !c.early_engine ? kEarlyProbe : 0;
        if (c.choice.engine != c.early_engine) {  // moved meanwhile: to the engine, or to the MPI library
            c.early_probe = 0;
            return;
        }
        if (probe_mpi) *probe_mpi = true;
        return;
    }
    if (c.calls >= c.next_probe) {
        if (probe_mpi) *probe_mpi = true;
        c.next_probe = c.calls + c.probe_gap;
        c.probe_gap = std::min(2 * c.probe_gap, kProbeMax);
    }
}

void Selector::observe(CollKind kind, size_t bytes, uint32_t eligible, const Option &o, const Observation &ob) {
    record(kind, bytes, eligible, o, ob, false);
}

void Selector::calibrate(CollKind kind, size_t bytes, uint32_t eligible, const Option &o, const Observation &ob) {
    record(kind, bytes, eligible, o, ob, true);
}

void Selector::record(CollKind kind, size_t bytes, uint32_t eligible, const Option &o, const Observation &ob,
                      bool calibrating) {
    const int i = option_index(o);
    if (i <= 0 || !(ob.seconds > 0)) return;
    engine_largest_ = std::max(engine_largest_, bytes);
    // A class's first engine call pays for first touches: the engine's
    // own (a new residual and input copy with error feedback; measured:
    // 4 MiB on 4 ranks at 25 Gbit/s, 15.5 ms against 8 ms after with the
    // codec) and, on the class's 1st call, the MPI library's (17.8 ms
    // against 9 ms).  The MPI library is never timed on its first call
    // (its probes come later), so neither is the engine: measured there, a
    // codec that pays would be given up at once and never run again in
    // that class.  So the class runs the option a second time and that
    // call is measured; should it be slow too, the exploration cost one
    // call more.
    double seconds = ob.seconds;
    if (!calibrating) {
        Class &c = class_of(kind, bytes, eligible);
        if (c.explore != i && !c.warm_up && c.decided && c.choice == o) note_recent(c, o, bytes, seconds);
        if (c.explore == i) {
            // An exploration's warm-up is not measured either.  A measured
            // call fast enough to move the class takes a second one, and
            // the slower of the two counts, as a slow call of the choice
            // waits for a second (below): no single call moves a class.
            // Seen on 4 ranks at 10 Gbit/s: a 1 MiB class on the codec's
            // ring explored recursive doubling, measured one call below the
            // ring's time, moved, and spent calls at twice the ring's time
            // before its estimate caught up.
            if (c.explore_warm) {
                c.explore_warm = false;
                return;
            }
            if (c.held_option == i) {
                seconds = std::max(seconds, c.held_seconds);
                c.held_option = -1;
            } else if (seconds < (1.0 - kSwitchMargin) * predict_in(&c, c.choice, kind, bytes)) {
                c.held_option = i;
                c.held_seconds = seconds;
                c.explore_calls = 1;
                return;
            }
            c.explore = -1;
        } else if (c.warm_up) {
            c.warm_up = false;
            return;
        } else if (c.held_option == i) {
            // A call of the class's choice slower than its estimate, and
            // slow enough to move the class off it, waits for a second, as
            // such an MPI probe does (observe_mpi), and the faster of the
            // two counts: a class leaves an engine option on no single
            // call.  Its estimate would otherwise keep the one slow time.
            // Seen on 2 emulated nodes x 2 ranks at 1 Gbit/s: Open MPI's
            // node reduce-scatter took 170-230 ms on its first two calls
            // (plain MPI_Reduce_scatter does the same; first touches of its
            // scratch memory) and 5-10 ms after, so the class's 2nd
            // two-level call, after the warm-up, measured 292 ms against
            // 66 predicted and 70 real, and the class gave up a codec that
            // ran 3.1 times faster than the MPI library for the lossless
            // two-level schedule.  Not only much slower calls: on the same
            // fabric at 10 Gbit/s an 8 MiB class's 2nd two-level call with
            // quantize:bits=8 measured 22.6 ms against 11.9 predicted (15.5
            // real, 1.9 times) and left the codec for the MPI library
            // (16-17 ms); the 16 MiB class above, which took the 8 MiB time
            // for its own, ran the MPI library at 34-39 ms where the codec
            // takes 27.
            seconds = std::min(seconds, c.held_seconds);
            c.held_option = -1;
        } else {
            c.held_option = -1;
            if (c.decided && c.choice == o && seconds > predict_in(&c, o, kind, bytes) &&
                moves_off_engine(c, i, bytes, seconds)) {
                c.held_option = i;
                c.held_seconds = seconds;
                return;
            }
        }
    }
    ++generation_;
    // A calibration sample below a size the option was already calibrated
    // at sets only its class's estimate (engine_calibration.cc runs 1 MiB
    // before 256 KiB): the largest one sets the codec's cost per byte and
    // the option's correction, as the least dominated by fixed costs.
    const bool largest = !calibrating || double(bytes) >= calibrated_bytes_[size_t(i)];
    if (calibrating && largest) calibrated_bytes_[size_t(i)] = double(bytes);
    CodecModel &cm = codecs_[o.codec];
    // A two-level operation's codec worked on a rail's shard only: its time
    // says nothing of the codec's cost per byte of a flat call.
    static_assert(size_t(Schedule::TwoLevel) >= kMeasuredSchedules, "two-level times are not codec samples");
    if (largest && !cm.identity && bytes > 0 && size_t(o.schedule) < cm.on.size()) {
        CodecSamples &on = cm.on[size_t(o.schedule)];
        // Calibration ran on data of its own: the first call's data replaces it.
        const bool first = on.samples == 0 || on.calibrated_only;
        on.calibrated_only = calibrating && first;
        on.measured.seconds_per_byte = blend(on.measured.seconds_per_byte, ob.codec_seconds / double(bytes),
                                             first);
        on.measured.ratio = blend(on.measured.ratio, std::clamp(ob.ratio, 0.0, 4.0), first);
        on.samples++;
    }
    const double m = model(o, kind, bytes);
    if (!(m > 0)) return;
    const double sample = clamp_correction(seconds / m);
    blend_into(class_of(kind, bytes, eligible), i, sample * m, double(bytes), calibrating, calibrating);
    // A calibration sample replaces the default 1 outright; the largest one
    // measured sets the correction of kinds no class has measured.
    if (largest) correction_[i] = clamp_correction(blend(correction_[i], sample, calibrating));
}

void Selector::note_recent(Class &c, const Option &o, size_t bytes, double seconds) {
    const double m = model(o, c.kind, bytes);
    if (!(m > 0)) return;
    ++generation_;
    c.recent[size_t(c.recent_next)] = seconds / m;
    c.recent_next = (c.recent_next + 1) % kRecent;
    c.recent_n = std::min(c.recent_n + 1, kRecent);
}

double Selector::recent_ratio(const Class &c) {
    if (c.recent_n < kRecent) return -1;
    double sum = 0, top = 0;
    for (double r : c.recent) {
        sum += r;
        top = std::max(top, r);
    }
    return (sum - top) / (kRecent - 1);
}

// The calibration ran each option on data of its own before the first
// call (runtime/engine_calibration.h), so the class's first call of the
// option replaces its time, as an operation's first codec sample replaces
// the calibration's (record()).  Blended with it, a loop's calls came
// through too slowly to break a tie: at 1 Gbit/s on 2 ranks, 64 KiB,
// recursive doubling calibrated at 264 us and took 170 in a loop, and two
// such calls moved its estimate only to 240, above the ring's.
void Selector::blend_into(Class &c, int i, double seconds, double bytes, bool replace, bool calibrating) {
    Measured &m = c.measured[i];
    if (m.seconds < 0 || replace || m.calibration) {
        m = Measured{seconds, bytes, calibrating};
        return;
    }
    const Option &o = all_[i];
    const double old = scaled(m, o, c.kind, bytes, shape(o, c.kind, size_t(bytes)));
    m = Measured{blend(old, seconds, false), bytes};
}

void Selector::observe_mpi(CollKind kind, size_t bytes, uint32_t eligible, double seconds, bool first_calls) {
    const double m = cost_pmpi(in_, kind, double(bytes));
    if (!(m > 0) || !(seconds > 0)) return;
    double sample = clamp_correction(seconds / m) * m;
    Class &c = class_of(kind, bytes, eligible);
    const double prior = predict_in(&c, all_[0], kind, bytes);
    if (first_calls && sample >= prior) {
        // An upper bound above the estimate says nothing alone.  Far above
        // it, on a class that runs the MPI library, it is held for a later
        // call's probe to confirm (next_probe(): a class that starts on the
        // MPI library where the set-up did not run it probes its 2nd and
        // 3rd calls); the faster of the two counts, so a 2nd call slowed
        // by first touches costs nothing.
        if (c.held_mpi < 0 && c.decided && !c.choice.engine && sample > kConfirmAbove * prior) {
            c.held_mpi = sample;
            c.held_mpi_fast = false;
            c.next_probe = c.calls + 1;
        }
        return;
    }
    ++generation_;
    bool replace = false;
    if (c.held_mpi < 0) {
        const bool slow = sample > kConfirmAbove * prior || (sample > prior && moves_off_mpi(c, bytes, sample));
        // A slow probe the set-up's drained time stands behind replaces
        // the estimate at once: the set-up saw the MPI library this slow,
        // and its faster reading was the burst (drained_at_setup()).
        const double drained = slow ? drained_at_setup(c) : -1;
        if (drained > 0 && sample <= kConfirmAbove * drained) {
            replace = true;
        } else if (slow || returns_to_mpi(c, bytes, sample)) {
            c.held_mpi = sample;
            c.held_mpi_fast = !slow;
            c.next_probe = c.calls + 1;
            return;
        }
    } else if (c.held_mpi_fast) {
        // Two probes in a row found the MPI library faster than the
        // class's engine choice, which its estimate says it is not: the
        // estimate is out of date, and the slower of the two replaces it.
        // Blended, as one probe is, it would take several probes (at gaps
        // doubling from kProbeEvery) to come down.  Seen on 2 ranks over
        // shared memory: an 8 MiB class whose Open MPI calls read slow for
        // a while moved to the lossless ring (4.3 ms), and its probes then
        // read Open MPI at 2.8 ms against an estimate near 5; blended, the
        // class kept the ring for the rest of its 22 calls.
        replace = returns_to_mpi(c, bytes, sample);
        sample = std::max(sample, c.held_mpi);
        c.held_mpi = -1;
    } else {
        sample = std::min(sample, c.held_mpi);
        c.held_mpi = -1;
    }
    blend_into(c, 0, sample, double(bytes), replace);
    correction_[0] = clamp_correction(blend(correction_[0], sample / m, false));
}

bool Selector::probe_runs_first_calls(CollKind kind, size_t bytes, uint32_t eligible) const {
    const Class *c = find_class(kind, bytes, eligible);
    return c && among_first_calls(*c, c->mpi_runs);  // choose() counted the probe's call
}

bool Selector::first_calls_next(const Class &c) const { return among_first_calls(c, c.mpi_runs + 1); }

bool Selector::among_first_calls(const Class &c, uint64_t nth) const {
    return nth <= kMpiFirstCalls && !mpi_warm_at_setup(c);
}

double Selector::first_call_cost() const {
    return std::isfinite(in_.pmpi_first) ? std::clamp(in_.pmpi_first, 1.0, kFirstCallCostMax) : 1.0;
}

bool Selector::mpi_warm_at_setup(const Class &c) const {
    return c.kind == CollKind::Allreduce && set_up_timed(size_t(1) << c.bucket);
}

double Selector::drained_at_setup(const Class &c, double *bytes) const {
    if (c.kind != CollKind::Allreduce || !drained_matches(in_)) return -1;
    const PmpiCurve &came = in_.pmpi, &drained = in_.pmpi_drained;
    for (int i = 0; i < came.points; ++i)
        if (bucket_of(size_t(came.bytes[i])) == c.bucket &&
            drained.seconds[i] > kConfirmAbove * came.seconds[i]) {
            if (bytes) *bytes = drained.bytes[i];
            return drained.seconds[i];
        }
    return -1;
}

// Which of the set-up's two readings a class's first decision believes,
// where they differ by a shaper's burst: the one whose being wrong costs
// less.  Believing the burst where the drained time holds costs the calls
// of the MPI library before its 1st call's probe is applied (kProbeLag);
// believing the drained time where the burst holds costs an engine
// option's try (kTryCalls calls) at what it takes over the MPI library.
// Seen at 1 Gbit/s on 2 ranks, 64 KiB: 75 us as it came, 1048 drained, the
// codec 270 (the drained time holds): 2 x 778 against 3 x 195, the codec.
// At 10 Gbit/s, 64 KiB: 40-43 us as it came, 83-103 drained, a loop's calls
// 80-85, the lossless ring calibrated at 64-90 and 110 in a loop: 2 x 16
// against 3 x 35, the MPI library.  Believed, the drained time is the
// class's own MPI measurement until a probe replaces it.
bool Selector::adopt_drained(Class &c, double best_t, double mpi_t) {
    double at = 0;
    const double drained = drained_at_setup(c, &at);
    if (!(drained > 0) || c.measured[0].seconds >= 0 || !(best_t < (1.0 - kSwitchMargin) * drained)) return false;
    const double believing_burst = double(kProbeLag) * (drained - best_t);
    const double believing_drained = kTryCalls * std::max(0.0, best_t - mpi_t);
    if (!(believing_drained < believing_burst)) return false;
    c.measured[0] = Measured{drained, at};
    ++generation_;
    return true;
}

bool Selector::set_up_timed(size_t bytes) const {
    for (int i = 0; i < in_.pmpi.points; ++i)
        if (bucket_of(size_t(in_.pmpi.bytes[i])) == bucket_of(bytes)) return true;
    return false;
}

// A class on an engine option whose own estimate of the MPI library says
// it is slower than that option, which a probe of mpi_seconds says it is
// not.  A class with no MPI time of its own takes its first probe's time
// outright (blend_into), so that a start on the set-up's figure alone is
// corrected on one call, as before.
bool Selector::returns_to_mpi(const Class &c, size_t bytes, double mpi_seconds) const {
    if (!c.decided || !c.choice.engine || c.pinned || c.measured[0].seconds < 0) return false;
    const double current = predict_in(&c, c.choice, c.kind, bytes);
    return mpi_seconds <= current && predict_in(&c, all_[0], c.kind, bytes) > current;
}

// A class on an engine option with no MPI time of its own weighs it on
// the set-up's curve carried to its size, or on a neighbour's time carried
// along it, and either can be far off a large size's: on 4 ranks at 10
// Gbit/s a 16 MiB class on the codec's ring predicted Open MPI at 52 ms
// where it takes 86, left the ring (1.7 times faster) on slow calls of it,
// and ran Open MPI for the rest of a 22-call loop: only its next probe,
// kProbeEvery calls later, could have undone the move.  So before it
// leaves, the class runs the MPI library as a probe and stays, until the
// MPI library has a time of its own here; the probe costs what the move
// would have (the MPI library's call), and a time that says it is slower
// keeps the class where it is.  At most kCheckCalls such calls (the first
// calls at a size only bound the MPI library's time, and a probe's time
// comes kProbeLag decisions later), then the class moves as before; only
// calls that report their time can probe (choose() asks for no others).
bool Selector::checks_mpi_first(Class &c) {
    if (c.measured[0].seconds >= 0) return false;
    // A probe held for its second (observe_mpi()) is waited for past the cap.
    if (c.checks >= kCheckCalls && c.held_mpi < 0) return false;
    c.checks++;
    // The next call decides again: this one's probe changes nothing it reads yet.
    c.seen_generation = UINT64_MAX;
    return true;
}

bool Selector::mpi_measured(CollKind kind) const {
    for (const Class &c : classes_)
        if (c.kind == kind && c.measured[0].seconds >= 0) return true;
    return false;
}

// Whether class c, on engine option i, would leave it (choose()) were a
// call of it to take `seconds`.
bool Selector::moves_off_engine(const Class &c, int i, size_t bytes, double seconds) const {
    if (c.pinned) return false;
    if (predict_in(&c, all_[0], c.kind, bytes) <= seconds) return true;
    for (size_t j = 1; j < all_.size(); ++j)
        if (int(j) != i && allows(all_[j], c.kind, c.eligible) &&
            predict_in(&c, all_[j], c.kind, bytes) < (1.0 - kSwitchMargin) * seconds)
            return true;
    return false;
}

// A class on the MPI library that moves to an engine option it has not
// run bets on the model, and pays the option's first touches.  Seen on 2
// ranks over shared memory at 16 MiB with quantize:bits=8: the lossless
// ring, extrapolated from the calibration's sizes (whose buffers fit in
// the cache), was predicted at 3.6 ms against the MPI library's 4.3; its
// warm-up took 43 ms, its two measured calls (the held pair) 10.5-11, and
// the MPI library's first call back 45 (its buffers had been given back
// meanwhile): in 2 runs of 3 a 22-call loop took 9 ms a call against
// 4.3.  So such a move is taken once the gain it promises, on as many
// calls as the class has had (a class called n times is likely to be
// called about as many more), covers what a try that loses would cost:
//  - the warm-up's first touches (first_touch_seconds()), where the class
//    has run no engine option and no engine call on the communicator was
//    as large (the engine keeps its buffers, engine/op_memory.h, so at the
//    calibration's sizes they are behind it);
//  - kTryCalls calls at kConfirmAbove times the estimate, where the class
//    has no time of its own for the option.
// As in ski rental, a bet that loses then costs about the gain given up
// before it.  Without either term the class moves at once: an option it
// has measured, or one predicted at half the MPI library's time or less
// at a size whose first touches are behind the engine.
//
// A move from one engine option to another the class has not run is the
// same bet, now_t the time of the option it runs.  Seen on 2 ranks over
// shared memory at 32 MiB with quantize:bits=8 (Open MPI 83 ms a call):
// the class moved to the codec's ring and measured it at 9.4 ms; then each
// untried option, extrapolated from the calibration's 1 MiB at 8.1-9.0,
// passed the 10% margin against the option running, and the class toured
// all four.  Each first call cost 18-37 ms more than its later ones, each
// measured call 14-18 ms, and the tour 136 ms over 24 calls.  Where such a
// move waits, a class that must leave its option takes the fastest one it
// has measured, should that pay (fastest_measured()).
uint64_t Selector::calls_before_trying(const Class &c, int i, double option_t, double now_t, size_t bytes) const {
    const double gain = now_t - option_t;
    if (!(gain > 0)) return 0;
    double loss = 0;
    if (!c.engine_ran && bytes > engine_largest_) loss += first_touch_seconds(double(bytes));
    if (c.measured[size_t(i)].seconds < 0) loss += kTryCalls * std::max(0.0, kConfirmAbove * option_t - now_t);
    if (!(loss > 0)) return 0;
    return uint64_t(std::min(std::ceil(loss / gain), 1e15));
}

int Selector::fastest_measured(const Class &c, size_t bytes, double *t_out) const {
    int best = -1;
    for (size_t i = 1; i < all_.size(); ++i) {
        if (all_[i] == c.choice || c.measured[i].seconds < 0 || !allows(all_[i], c.kind, c.eligible)) continue;
        const double t = predict_in(&c, all_[i], c.kind, bytes);
        if (t < *t_out) {
            *t_out = t;
            best = int(i);
        }
    }
    return best;
}

// One touch of fresh memory per byte of the call, at the set-up's rate
// (CostInputs::touch).  Seen on 2 ranks over shared memory at 16 MiB: the
// lossless ring's warm-up took 43 ms more than its later calls, 2.6 ns a
// byte where a page's first touch took 3.5 (14.5 us a 4 KiB page).  Not
// read off the set-up's first MPI call: at 64 KiB (where a slow link's
// set-up stops) its excess is mostly fixed costs, 7 times a call on 4
// ranks at 10 Gbit/s where 16 pages take 0.2 ms of 1.5, and carried per
// byte to 512 KiB it made a class wait 82 calls rather than 23 before it
// tried a codec that took 1.3 ms where Open MPI took 2.2.
double Selector::first_touch_seconds(double bytes) const { return std::max(0.0, in_.touch) * bytes; }

// A class on the MPI library that one slower probe would move to the
// engine.  Seen on 2 ranks over shared memory: a 16 MiB class's 2nd call
// timed the MPI library at 9 ms against its usual 4.5; the class moved to
// the lossless ring, which takes 7.3 ms, and kept it (faster than that
// estimate) until its next probe, 20 calls later.  So such a probe waits
// for a second one, as a much slower one does, and the faster counts: a
// class on the MPI library leaves it on no single probe.
bool Selector::moves_off_mpi(const Class &c, size_t bytes, double mpi_seconds) const {
    if (!c.decided || c.choice.engine || c.pinned) return false;
    for (size_t i = 1; i < all_.size(); ++i)
        if (allows(all_[i], c.kind, c.eligible) &&
            predict_in(&c, all_[i], c.kind, bytes) < (1.0 - kSwitchMargin) * mpi_seconds)
            return true;
    return false;
}

void Selector::note_local_time(CollKind kind, size_t bytes, uint32_t eligible, double seconds) {
    class_of(kind, bytes, eligible).local_seconds += seconds;
}

void Selector::pin_option(CollKind kind, size_t bytes, uint32_t eligible, const Option &o) {
    ++generation_;
    Class &c = class_of(kind, bytes, eligible);
    c.pinned = true;
    c.decided = true;
    c.choice = o;
}

std::string Selector::summary(const char *indent) const {
    std::string out;
    for (const Class &c : classes_) {
        if (!c.calls && !c.pinned) continue;  // measured by the calibration only
        char head[160];
        const double lo = double(size_t(1) << c.bucket);
        snprintf(head, sizeof head, "%s%s %s..%s: ", indent, coll_kind_name(c.kind),
                 size_text(c.bucket ? lo : 0).c_str(), size_text(2 * lo).c_str());
        out += head;
        out += option_name(c.choice);
        out += c.pinned ? " (pinned)" : "";
        char tail[200];
        snprintf(tail, sizeof tail, " calls=%" PRIu64 " predicted=%s measured=%s changes=%" PRIu64, c.calls,
                 time_text(c.predicted).c_str(),
                 c.calls ? time_text(c.local_seconds / double(c.calls)).c_str() : "-", c.changes);
        out += tail;
        if (c.next_predicted >= 0) out += " next=" + option_name(c.next) + ":" + time_text(c.next_predicted);
        if (c.probes) out += " probed=" + std::to_string(c.probes);
        if (c.explorations) out += " explored=" + std::to_string(c.explorations);
        if (c.try_from > c.calls) out += " waits=" + std::to_string(c.try_from);
        out += "\n";
    }
    return out;
}

}  // namespace terse
