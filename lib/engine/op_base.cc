// OpBase: the parts every engine operation shares.
#include "engine/op_base.h"

#include "codec/codec_seed.h"
#include "codec/codec_status.h"

#include "engine/error_feedback.h"
#include "util/log.h"
#include "engine/reduce_kernels.h"
#include "engine/verify.h"

#include <cmath>
#include <cstring>
#include <new>

namespace terse {

OpBase::OpBase(const EngineEnv &env, const CollArgs &args, const Plan &plan, std::pmr::memory_resource *mem)
    : mem_(mem), env_(env), args_(args), plan_(plan), n_(env.size), r_(env.rank), esize_(dtype_size(args.dtype)),
      pool_(mem), agreed_(mem), agreed_in_(mem), agreed_off_(mem) {
    if (env_.codec) {
        desc_ = env_.codec->desc();
        inst_ = env_.codec->get();
        codec_id_ = env_.codec->plugin()->id;
        lossless_ = desc_->flags & TERSE_CODEC_FLAG_LOSSLESS;
        mode_ = desc_->mode;
        // A codec whose payload is the elements themselves: the engine
        // sends raw frames and reduces straight from receive buffers.
        identity_ = codec_is_identity(desc_);
    } else {
        identity_ = true;
    }
    input_ = args_.sendbuf;
    dev_ = env_.device;
    t_start_ = now_seconds();
}

OpBase::~OpBase() {
    if (!accounted_) account();
    if (residual_held_) env_.residuals->release(residual_key_);
}

size_t OpBase::input_count() const {
    if (args_.kind == CollKind::ReduceScatterBlock) return args_.count * size_t(n_);
    if (args_.kind == CollKind::Allgatherv) return args_.counts[r_];
    return args_.count;
}

size_t OpBase::frame_capacity(size_t n) const {
    size_t raw = n * esize_;
    size_t enc = (identity_ || !desc_) ? raw : desc_->max_encoded_size(inst_, n);
    return kFrameHeaderSize + (enc > raw ? enc : raw);
}

Status OpBase::start() {
    inject_ = engine_take_injection();

    // From here on a local failure poisons: the ranks that did not fail are
    // already on their way into the schedule and wait for this one's
    // messages, so it must run the schedule too (with poison frames, which
    // need only the frame pool) and tell them.
    if (__builtin_expect(inject_.where == Injection::Start, 0)) {
        inject_.where = Injection::None;
        fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory starting an operation (injected by the test hook)");
    }
    frame_cap_ = frame_capacity(plan_.chunk_elems);
    pool_.init(frame_cap_);
    Status s = scratch_a_.reserve(plan_.chunk_elems * esize_);
    if (s == TERSE_OK) s = scratch_b_.reserve(plan_.chunk_elems * esize_);
    if (s == TERSE_OK) s = scratch_frame_.reserve(frame_cap_);
    if (s != TERSE_OK) fail_local(s, last_error());
    if (!poisoned_) setup_feedback();

    const bool guarded = guard_due();
    if ((env_.verify || guarded) && args_.kind == CollKind::Allreduce && args_.count > 0 && env_.control) {
        // Every rank must post the verifier's control allreduce, failed or not.
        verifier_.emplace(env_.control);
        s = verifier_->start(args_.sendbuf, args_.count, args_.dtype, args_.op, args_.recvbuf);
        if (s != TERSE_OK && !verifier_->posted()) return s;
        if (s != TERSE_OK) fail_local(s, last_error());
    }
    if (guarded) {
        s = start_guard();
        if (s != TERSE_OK) return s;
    }

    if (mode_ == TERSE_REDUCE_SUMMABLE && !identity_ && plan_.schedule != Schedule::Trivial) {
        s = start_stats_agreement();
        if (s != TERSE_OK) return s;
        stage_ = Stage::Agree;
        return TERSE_OK;
    }
    stage_ = Stage::Body;
    return run_begin();
}

Status OpBase::run_begin() {
    Status s = begin();
    if (s != TERSE_OK) return s;
    if (__builtin_expect(inject_.where == Injection::Begin, 0)) {
        inject_.where = Injection::None;
        fail_local(TERSE_ERR_NO_MEMORY,
                   "terse: out of memory setting up the schedule (injected by the test hook)");
    }
    return TERSE_OK;
}

bool OpBase::take_injected_hop(bool allgather_phase, size_t hop, size_t nhops, size_t all_hop, size_t all_hops) {
    size_t want_of = nhops, at = hop;
    if (inject_.where == Injection::AnyHop) {
        want_of = all_hops;
        at = all_hop;
    } else if ((inject_.where == Injection::AgHop) != allgather_phase) {
        return false;
    }
    if (want_of == 0) return false;
    size_t want = inject_.which == Injection::First  ? 0
                  : inject_.which == Injection::Last ? want_of - 1
                                                     : (want_of - 1) / 2;
    if (at != want) return false;
    inject_.where = Injection::None;
    TERSE_LOG_DEBUG("test hook: spoiling the frame received at hop %zu of %zu", at, want_of);
    return true;
}

// A failure here poisons the operation (the caller's fail_local).
Status OpBase::setup_feedback() {
    if (!env_.feedback || !env_.residuals || lossless_ || identity_ || !dtype_is_float(args_.dtype) ||
        plan_.schedule == Schedule::Trivial)
        return TERSE_OK;
    FeedbackKey key = env_.feedback_key;
    if (!key.keyed) return TERSE_OK;  // tag mode, no tag set for this call
    if (key.mode == FeedbackKeyMode::Address)
        key.id = reinterpret_cast<uintptr_t>(args_.in_place ? args_.recvbuf : args_.sendbuf);
    const size_t cnt = input_count();
    void *res = env_.residuals->acquire(key, cnt, args_.dtype);
    if (!res) return TERSE_OK;  // over the store's budget (logged there)
    residual_key_ = key;
    residual_held_ = true;
    Status s = adjusted_.reserve(cnt * esize_);
    if (s != TERSE_OK) {
        // The residual cannot be applied: dropped with the failed operation.
        fail_local(s, last_error());
        return s;
    }
    // The user's buffer stays untouched: the adjusted input is a copy.
    add_out(args_.dtype, adjusted_.data(), args_.sendbuf, res, cnt);
    std::memset(res, 0, cnt * esize_);
    residual_ = res;
    input_ = adjusted_.data();
    return TERSE_OK;
}

Status OpBase::start_stats_agreement() {
    OpVector<ChunkRef> chunks(mem_);
    size_t total = 0;
    try {
        stat_chunks(&chunks, &total);
        agreed_off_.assign(total + 1, 0);
        OpVector<size_t> counts(total, 0, mem_);
        for (const ChunkRef &c : chunks) counts[c.g] = c.n;
        for (size_t g = 0; g < total; ++g)
            agreed_off_[g + 1] = agreed_off_[g] + (desc_->stats_count ? desc_->stats_count(inst_, counts[g]) : 0);
        agreed_.assign(agreed_off_[total] + 1, -HUGE_VAL);
        if (agreed_.size() > LinkMax::kInline) agreed_in_.assign(agreed_.size(), 0.0);
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory for codec statistics");
    }
    if (!desc_->stats || !desc_->stats_count) {
        fail_local(TERSE_ERR_PLUGIN, "codec declares summable mode but has no stats()/stats_count()");
    } else {
        double t0 = now_seconds();
        for (const ChunkRef &c : chunks) {
            if (!c.mine || poisoned_) continue;
            if (dev_) {
                // The device instance, on the device buffer; the doubles
                // come back to the host for the agreement.
                const size_t nout = agreed_off_[c.g + 1] - agreed_off_[c.g];
                Status ds = dev_->stats(elem(input_, c.off), c.n, &agreed_[agreed_off_[c.g]], nout,
                                        codec_stats_seed(env_.seq, c.g));
                if (ds != TERSE_OK) fail_local(ds, last_error());
                continue;
            }
            terse_codec_call_t call{};
            call.struct_size = sizeof call;
            call.seed = codec_stats_seed(env_.seq, c.g);
            int rc = desc_->stats(inst_, elem(input_, c.off), c.n, &agreed_[agreed_off_[c.g]], &call);
            if (rc != TERSE_CODEC_OK) {
                char msg[256];
                snprintf(msg, sizeof msg, "codec '%s' failed computing statistics of a %zu-element chunk: %s",
                         desc_->name, c.n, codec_status_text(rc));
                fail_local(codec_status(rc), msg);
            }
        }
        t_encode_ += now_seconds() - t0;
    }
    // Last slot: 0, or 1 + the rank that failed (MAX keeps one of them).
    agreed_.back() = poisoned_ ? double(r_) + 1.0 : 0.0;
    return agree_link_.start(env_, LinkMax::kCodecStats, agreed_.data(), agreed_.size(), agreed_in_.data());
}

void OpBase::apply_agreement() {
    double flag = agreed_.back();
    if (flag > 0 && !poisoned_) fail_remote(uint32_t(flag) - 1);
    if (dev_ && !poisoned_) {
        Status s = dev_->put_agreed(agreed_.data(), agreed_.size());
        if (s != TERSE_OK) fail_local(s, last_error());
    }
}

Status OpBase::progress(bool *done) {
    const Stage before = stage_;
    Status s = progress_stages(done);
    if (stage_ != before) note_activity();
    return s;
}

Status OpBase::progress_stages(bool *done) {
    *done = false;
    if (stage_ == Stage::Done) {
        *done = true;
        return final_status();
    }
    if (stage_ == Stage::Agree) {
        Status s = TERSE_OK;
        bool moved = false;
        const bool agreed = agree_link_.test(&s, &moved);
        if (moved) note_activity();
        if (!agreed) return TERSE_OK;
        if (s != TERSE_OK) return finish_fatal(s);
        apply_agreement();
        stage_ = Stage::Body;
        s = run_begin();
        if (s != TERSE_OK) return finish_fatal(s);
    }
    if (stage_ == Stage::Body) {
        if (verifier_) {  // move the exact allreduce along beside the schedule (verify.h)
            Status ignored;
            (void)verifier_->test(&ignored);
        }
        bool body_done = false;
        Status s = body(&body_done);
        if (s != TERSE_OK) return finish_fatal(s);
        if (!body_done) return TERSE_OK;
        stage_ = guard_check_ ? Stage::Check : Stage::Finish;
        if (!guard_check_) {
            Status s = post_close();
            if (s != TERSE_OK) return finish_fatal(s);
        }
    }
    if (stage_ == Stage::Check) {
        // The guard's verdict needs the exact result and the agreed input
        // statistics; both were started with the operation.
        Status s = TERSE_OK;
        if (!verifier_->test(&s)) return TERSE_OK;
        if (s != TERSE_OK) return finish_fatal(s);
        if (!guard_check_->test(&s)) return TERSE_OK;
        if (s != TERSE_OK) return finish_fatal(s);
        guard_judge();
        stage_ = Stage::Finish;
        s = post_close();
        if (s != TERSE_OK) return finish_fatal(s);
    }
    if (stage_ == Stage::Close) {
        Status s = TERSE_OK;
        bool moved = false;
        const bool closed = close_link_.test(&s, &moved);
        if (moved) note_activity();
        if (!closed) return TERSE_OK;
        if (s != TERSE_OK) return finish_fatal(s);
        if (close_[0] > 0 && !poisoned_) fail_remote(uint32_t(close_[0]) - 1);
        if (close_[1] > 0 && !poisoned_) guard_trip();
        if (env_.observed && !poisoned_) *env_.observed = Observation{close_[2], close_[3], close_[4]};
        stage_ = Stage::Finish;
    }
    if (stage_ == Stage::Finish) {
        if (verifier_) {
            Status s = TERSE_OK;
            if (!verifier_->test(&s)) return TERSE_OK;
            if (s != TERSE_OK) return finish_fatal(s);
            // A guarded call recorded its error before the guard's verdict,
            // which may have replaced the result.
            if (!poisoned_ && env_.verify && !guard_check_) verifier_->record(args_.recvbuf, env_.stats);
        }
        *done = true;
        return finish_ok();
    }
    *done = true;
    return final_status();
}

// A rank can fail on a message it does not forward (the last hop of a ring
// phase or an exchange, a folded rank's result, gather's final decode),
// where poison frames can no longer reach the others: a corrupt frame
// there, a codec's decode, feedback's bookkeeping.  So the ranks agree on
// the outcome, on every path, lossless included, with a MAX over the link
// (link_agreement.h).  A guarded call adds its verdict (all ranks know the
// call is guarded, so all agree on the same count), and the planner's
// measurements ride on it (the slowest rank's time and codec time, the
// worst ratio), so that every rank acts on the same numbers.
Status OpBase::post_close() {
    if (n_ <= 1) return TERSE_OK;
    close_[0] = (poisoned_ && local_failure_) ? double(r_) + 1.0 : 0.0;
    close_[2] = now_seconds() - t_start_;
    close_[3] = t_encode_ + t_decode_;
    close_[4] = wire_raw_ ? double(wire_) / double(wire_raw_) : 1.0;
    const size_t count = env_.observed ? 5 : guard_check_ ? 2 : 1;
    Status s = close_link_.start(env_, LinkMax::kClose, close_, count);
    if (s != TERSE_OK) return s;
    stage_ = Stage::Close;
    return TERSE_OK;
}

// ---------------------------------------------------------------- error guard

bool OpBase::guard_due() {
    GuardState *g = env_.guard;
    if (!g || g->every == 0 || g->tripped || lossless_ || !desc_) return false;
    if (args_.kind != CollKind::Allreduce || args_.count == 0 || n_ <= 1 || !env_.control) return false;
    // Counted on every rank in the same order (MPI orders collectives on a
    // communicator), so every rank checks the same calls.
    guard_call_ = ++g->lossy_calls;
    return guard_call_ % g->every == 0;
}

Status OpBase::start_guard() {
    guard_check_.emplace(env_.control);
    Status s = guard_check_->start(args_.sendbuf, args_.count, args_.dtype);
    // Not posted: nothing to wait for, and the peers' posts fail with theirs.
    if (s != TERSE_OK) guard_check_.reset();
    return s;
}

void OpBase::guard_judge() {
    close_[1] = 0;
    if (poisoned_) return;  // the verifier failed too, or the result is void anyway
    double abs_err = 0, rel_err = 0;
    verifier_->measure(args_.recvbuf, &abs_err, &rel_err);
    if (env_.stats) {
        env_.stats->count_guard_check();
        if (env_.verify) env_.stats->add_error(abs_err, rel_err);
    }
    if (guard_check_->exceeded(*env_.guard, n_, abs_err, rel_err, &guard_measured_, &guard_allowed_))
        close_[1] = 1;
    TERSE_LOG_DEBUG("guard on '%s': call %llu, error %.3g (allowed %.3g)", env_.comm_name,
                    (unsigned long long)guard_call_, guard_measured_, guard_allowed_);
}

void OpBase::guard_trip() {
    GuardState &g = *env_.guard;
    g.tripped = true;
    // This call's result goes out exact too, on every rank alike.
    verifier_->copy_exact(args_.recvbuf);
    if (env_.stats) env_.stats->note_guard_trip(guard_call_);
    if (r_ != 0) return;
    const bool rel = g.budget.kind == ErrorBudget::Rel;
    TERSE_LOG_WARN(
        "error guard: communicator '%s' switches from codec '%s' to lossless after its lossy allreduce "
        "%llu: measured %s error %.6g exceeds the allowed %.6g (%s); that call's result was replaced by "
        "the exact one",
        env_.comm_name, desc_->name, (unsigned long long)guard_call_, rel ? "relative" : "absolute",
        guard_measured_, guard_allowed_,
        g.budget.kind == ErrorBudget::None ? "the codec's stated bound" : "guard_budget");
}

Status OpBase::finish_ok() {
    account();
    if (poisoned_ && residual_held_) {
        env_.residuals->drop(residual_key_);
        residual_ = nullptr;
        residual_held_ = false;
    }
    stage_ = Stage::Done;
    return final_status();
}

Status OpBase::finish_fatal(Status s) {
    std::string msg = last_error();
    account();
    if (residual_held_) {
        env_.residuals->drop(residual_key_);
        residual_ = nullptr;
        residual_held_ = false;
    }
    // A fatal error outranks a poisoned state: report it as this rank's own.
    poisoned_ = true;
    local_failure_ = true;
    fail_status_ = s;
    fail_msg_ = msg;
    stage_ = Stage::Done;
    return final_status();
}

Status OpBase::final_status() {
    if (!poisoned_) return TERSE_OK;
    if (local_failure_) return set_error(fail_status_, "%s", fail_msg_.c_str());
    return set_error(TERSE_ERR_REMOTE,
                     "terse %s on communicator '%s' failed on rank %u (see that rank's error message); "
                     "this rank's result is undefined",
                     coll_kind_name(args_.kind), env_.comm_name, fail_origin_);
}

void OpBase::account() {
    if (accounted_ || !env_.stats) return;
    accounted_ = true;
    OpAccount a;
    a.kind = env_.stats_kind;
    a.wire = wire_;
    a.wire_raw = wire_raw_;
    a.raw_chunks = raw_chunks_;
    a.seconds_total = now_seconds() - t_start_;
    a.seconds_encode = t_encode_;
    a.seconds_decode = t_decode_;
    env_.stats->add_operation(a);
}

void OpBase::note_send(const uint8_t *frame, size_t len) {
    const FrameInfo fi = frame_info(frame, len);
    wire_ += len;
    wire_raw_ += kFrameHeaderSize + fi.count * esize_;
    if ((fi.flags & FRAME_RAW) && !identity_) ++raw_chunks_;
}

// ---------------------------------------------------------------- frames

terse_codec_call_t OpBase::call_for(size_t g) const {
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    if (mode_ == TERSE_REDUCE_SUMMABLE && g + 1 < agreed_off_.size())
        call.agreed_stats = &agreed_[agreed_off_[g]];
    call.seed = codec_call_seed(env_.ctx_id, env_.seq, g, n_, r_);
    return call;
}

size_t OpBase::seal_raw(const void *src, size_t n, uint8_t *frame, uint32_t contributors) {
    uint8_t *payload = frame + kFrameHeaderSize;
    if (src != payload && n) std::memcpy(payload, src, n * esize_);
    return frame_seal(frame, args_.dtype, FRAME_RAW, 0, contributors, n, n * esize_);
}

size_t OpBase::seal_poison(uint8_t *frame, size_t n) {
    return frame_seal(frame, args_.dtype, FRAME_POISON, 0, fail_origin_, n, 0);
}

uint8_t *OpBase::emergency_header() {
    static thread_local uint8_t header[kFrameHeaderSize];
    return header;
}

void OpBase::emergency_poison_out(size_t n, OutFrame *out) {
    fail_local(TERSE_ERR_NO_MEMORY, "terse: out of memory for a send buffer");
    uint8_t *h = emergency_header();
    out->len = seal_poison(h, n);
    out->data = h;
    out->owned = nullptr;
}

bool OpBase::combine_frames(const FrameInfo &a, const FrameInfo &b, size_t g, size_t n, uint8_t *dst, size_t *len,
                            bool *failed) {
    *failed = false;
    double t0 = now_seconds();
    size_t plen = 0;
    terse_codec_call_t call = call_for(g);
    int rc = desc_->combine(inst_, a.payload, a.payload_len, int(a.contributors), b.payload, b.payload_len,
                            int(b.contributors), n, dst + kFrameHeaderSize, frame_cap_ - kFrameHeaderSize, &plen,
                            &call);
    t_decode_ += now_seconds() - t0;
    if (rc == TERSE_CODEC_OK) {
        *len = frame_seal(dst, args_.dtype, 0, codec_id_, a.contributors + b.contributors, n, plen);
        return true;
    }
    if (rc != TERSE_CODEC_RAW) {
        char msg[256];
        snprintf(msg, sizeof msg, "codec '%s' failed to combine two frames of %zu elements: %s", desc_->name, n,
                 codec_status_text(rc));
        fail_local(codec_status(rc), msg);
        *failed = true;
    }
    return false;
}

size_t OpBase::encode_frame(const void *src, size_t n, size_t g, uint8_t *frame, uint32_t contributors) {
    if (poisoned_) return seal_poison(frame, n);
    if (identity_) return seal_raw(src, n, frame, contributors);
    double t0 = now_seconds();
    size_t len = 0;
    terse_codec_call_t call = call_for(g);
    int rc = desc_->encode(inst_, src, n, frame + kFrameHeaderSize, frame_cap_ - kFrameHeaderSize, &len, &call);
    t_encode_ += now_seconds() - t0;
    if (rc == TERSE_CODEC_RAW) return seal_raw(src, n, frame, contributors);
    if (rc != TERSE_CODEC_OK || len > frame_cap_ - kFrameHeaderSize) {
        char msg[256];
        snprintf(msg, sizeof msg, "codec '%s' failed to encode a chunk of %zu %s elements: %s", desc_->name, n,
                 dtype_name(args_.dtype),
                 rc == TERSE_CODEC_OK ? "payload larger than its buffer" : codec_status_text(rc));
        fail_local(rc == TERSE_CODEC_OK ? TERSE_ERR_PLUGIN : codec_status(rc), msg);
        return seal_poison(frame, n);
    }
    return frame_seal(frame, args_.dtype, 0, codec_id_, contributors, n, len);
}

bool OpBase::open_frame(const uint8_t *buf, size_t len, size_t n, int peer, FrameInfo *fi) {
    if (poisoned_) return false;
    Status s = frame_open(buf, len, args_.dtype, codec_id_, n, peer, fi);
    if (s != TERSE_OK) {
        fail_local(s, last_error());
        return false;
    }
    if (fi->flags & FRAME_POISON) {
        fail_remote(fi->contributors);
        return false;
    }
    return true;
}

bool OpBase::decode_frame(const FrameInfo &fi, size_t g, void *dst, size_t n, bool accumulate) {
    if (poisoned_) return false;
    double t0 = now_seconds();
    bool ok = true;
    if (fi.flags & FRAME_RAW) {
        if (accumulate) reduce_inplace(args_.dtype, args_.op, dst, fi.payload, n);
        else if (dst != fi.payload && n) std::memmove(dst, fi.payload, n * esize_);
    } else {
        terse_codec_call_t call = call_for(g);
        int rc = desc_->decode(inst_, fi.payload, fi.payload_len, dst, n, accumulate ? 1 : 0, args_.op, &call);
        if (rc != TERSE_CODEC_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "codec '%s' failed to decode a %llu-byte payload of %zu elements: %s",
                     desc_->name, (unsigned long long)fi.payload_len, n, codec_status_text(rc));
            fail_local(codec_status(rc), msg);
            ok = false;
        }
    }
    t_decode_ += now_seconds() - t0;
    return ok;
}

namespace {
// Bytes per block of the one-pass hops: the CRC's fastest stride (three
// interleaved 8 KiB streams, crc32c.cc), and two such blocks fit in L2.
constexpr size_t kHopBlock = 24 * 1024;
}  // namespace

bool OpBase::reduce_raw_hop(uint8_t *buf, size_t len, size_t n, int peer, const void *mine) {
    if (poisoned_) return false;
    FrameInfo fi;
    uint32_t in_check = 0;
    Status s = frame_open_header(buf, len, args_.dtype, codec_id_, n, peer, &fi, &in_check);
    if (s != TERSE_OK) {
        fail_local(s, last_error());
        return false;
    }
    if (fi.flags & FRAME_POISON) {
        // Header-only: nothing to check beyond the header's own part.
        if ((s = frame_open_check(buf, in_check, peer)) != TERSE_OK) fail_local(s, last_error());
        else fail_remote(fi.contributors);
        return false;
    }
    if (!(fi.flags & FRAME_RAW)) {
        // Not what this path is for: check it whole, then reduce.
        in_check = crc32c(in_check, fi.payload, fi.payload_len);
        if ((s = frame_open_check(buf, in_check, peer)) != TERSE_OK) {
            fail_local(s, last_error());
            return false;
        }
        if (!decode_frame(fi, 0, scratch_a(), n, false)) return false;
        timed_reduce_out(buf + kFrameHeaderSize, mine, scratch_a(), n);
    } else {
        // The next frame's header goes into buf only once the incoming one
        // has been checked, so it is built aside.
        uint8_t next[kFrameHeaderSize];
        uint32_t out_check = frame_seal_header(next, args_.dtype, FRAME_RAW, 0, fi.contributors + 1, n,
                                               n * esize_);
        double t0 = now_seconds();
        uint8_t *payload = buf + kFrameHeaderSize;
        const uint8_t *own = static_cast<const uint8_t *>(mine);
        const size_t bytes = n * esize_, step = kHopBlock - kHopBlock % esize_;
        for (size_t off = 0; off < bytes; off += step) {
            const size_t b = bytes - off < step ? bytes - off : step;
            in_check = crc32c(in_check, payload + off, b);
            reduce_out(args_.dtype, args_.op, payload + off, own + off, payload + off, b / esize_);
            out_check = crc32c(out_check, payload + off, b);
        }
        t_decode_ += now_seconds() - t0;
        if ((s = frame_open_check(buf, in_check, peer)) != TERSE_OK) {
            fail_local(s, last_error());
            return false;
        }
        std::memcpy(buf, next, kFrameHeaderSize);
        frame_seal_check(buf, out_check);
        return true;
    }
    frame_seal(buf, args_.dtype, FRAME_RAW, 0, fi.contributors + 1, n, n * esize_);
    return true;
}

bool OpBase::copy_raw_hop(const uint8_t *buf, size_t len, size_t n, size_t g, int peer, void *dst) {
    if (poisoned_) return false;
    FrameInfo fi;
    uint32_t check = 0;
    Status s = frame_open_header(buf, len, args_.dtype, codec_id_, n, peer, &fi, &check);
    if (s != TERSE_OK) {
        fail_local(s, last_error());
        return false;
    }
    const bool raw = fi.flags & FRAME_RAW;
    double t0 = now_seconds();
    if (raw) {
        // A corrupt payload lands in dst too; the operation then fails.
        for (size_t off = 0; off < fi.payload_len; off += kHopBlock) {
            const size_t b = fi.payload_len - off < kHopBlock ? fi.payload_len - off : kHopBlock;
            check = crc32c(check, fi.payload + off, b);
            std::memcpy(static_cast<uint8_t *>(dst) + off, fi.payload + off, b);
        }
    } else {
        check = crc32c(check, fi.payload, fi.payload_len);
    }
    t_decode_ += now_seconds() - t0;
    if ((s = frame_open_check(buf, check, peer)) != TERSE_OK) {
        fail_local(s, last_error());
        return false;
    }
    if (fi.flags & FRAME_POISON) {
        fail_remote(fi.contributors);
        return false;
    }
    return raw || decode_frame(fi, g, dst, n, false);
}

void OpBase::timed_reduce_out(void *dst, const void *a, const void *b, size_t n) {
    double t0 = now_seconds();
    reduce_out(args_.dtype, args_.op, dst, a, b, n);
    t_decode_ += now_seconds() - t0;
}

// ---------------------------------------------------------------- failures

void OpBase::fail_local(Status s, const char *msg) {
    if (poisoned_) return;
    poisoned_ = true;
    local_failure_ = true;
    fail_status_ = s;
    fail_msg_ = msg;
    fail_origin_ = uint32_t(r_);
    TERSE_LOG_DEBUG("%s on '%s' poisoned locally: %s", coll_kind_name(args_.kind), env_.comm_name, msg);
}

void OpBase::fail_remote(uint32_t origin) {
    if (poisoned_) return;
    poisoned_ = true;
    fail_origin_ = origin;
}

// ---------------------------------------------------------------- feedback

void OpBase::record_error(size_t off, const void *intended, const void *represented, size_t n) {
    if (!residual_ || poisoned_) return;
    accumulate_difference(args_.dtype, elem(residual_, off), intended, represented, n);
}

void OpBase::record_error_frame(size_t off, const void *intended, const uint8_t *frame, size_t len, size_t g,
                                size_t n) {
    if (!residual_ || poisoned_) return;
    FrameInfo fi = trusted_info(frame, len);
    if (fi.flags & FRAME_POISON) return;
    if (fi.flags & FRAME_RAW) return;  // raw is exact: no error
    if (decode_frame(fi, g, scratch_b_.data(), n, false)) record_error(off, intended, scratch_b_.data(), n);
}

}  // namespace terse
