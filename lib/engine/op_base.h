// Internal to the engine: what every operation (ring, gather, recursive
// doubling, trivial) shares — the codec seen as "frames", the poisoned mode
// that keeps a failed operation's schedule going, error feedback, agreement
// on codec statistics (summable codecs), verification and statistics.
#pragma once

#include "engine/chunk_plan.h"
#include "config/config.h"
#include "engine/device_port.h"
#include "engine/engine.h"
#include "codec/frame.h"
#include "engine/link_agreement.h"
#include "engine/message_tag.h"
#include "engine/ports.h"
#include "engine/planner.h"
#include "codec/registry.h"
#include "util/scratch.h"
#include "engine/stats.h"
#include "engine/op_memory.h"
#include "engine/verify.h"
#include "engine/guard.h"
#include "util/status.h"

#include <terse/codec.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <vector>

namespace terse {

// The operation of each schedule (their own files), built in mem (the
// operation's OpMemory, which also holds all of its bookkeeping).
class OpBase;
OpBase *make_ring_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                     const Plan &plan);
OpBase *make_gather_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                       const Plan &plan);
OpBase *make_recursive_doubling_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                                   const Plan &plan);
OpBase *make_trivial_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                        const Plan &plan);
// The two-level schedule (schedules/two_level.cc) is no OpBase: it runs the
// MPI library's collectives and a flat operation on its rail.  Built and
// started in mem; *out is set whenever it was constructed, also when the
// start failed.
Status make_two_level_op(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args,
                         Operation **out);

// Construct an operation of type T in mem; OpDeleter destroys it.
template <class T>
OpBase *op_new(std::pmr::memory_resource *mem, const EngineEnv &env, const CollArgs &args, const Plan &plan) {
    void *p = mem->allocate(sizeof(T), alignof(T));
    return ::new (p) T(env, args, plan, mem);
}

// Test hook (see engine.h): corrupt the next sends.
bool engine_take_corruption();
void g_corrupt_store(int count);

// Test hook (see engine.h): a local failure armed for the next operation
// this process starts.  Where: at its start, right after begin(), or on a
// hop of a phase; which: the first, middle or last hop of that phase.
struct Injection {
    enum Where : uint8_t { None, Start, Begin, RsHop, AgHop, AnyHop } where = None;
    enum Which : uint8_t { First, Middle, Last } which = First;
};
Injection engine_take_injection();
// Arm `in` again for the next operation this process starts (an operation
// that runs another hands its injection on).
void engine_put_injection(const Injection &in);

// A frame about to be sent, or received and handed on.
struct OutFrame {
    const uint8_t *data = nullptr;
    size_t len = 0;
    uint8_t *owned = nullptr;  // pool buffer to give back once sent (or nullptr)
};

class OpBase : public Operation {
public:
    // mem: the operation's OpMemory; every container of the operation
    // (and of its schedule) allocates from it.
    OpBase(const EngineEnv &env, const CollArgs &args, const Plan &plan, std::pmr::memory_resource *mem);
    ~OpBase() override;
    std::pmr::memory_resource *memory() const { return mem_; }

    Status progress(bool *done) final;
    // A device codec's copy in flight wakes nothing terse can sleep on
    // either (device_wait_: the body found none of its pending work ready).
    // The agreements travel over the link (link_agreement.h); only the
    // guard's check waits on the MPI library.
    bool waits_on_control() const final {
        return stage_ == Stage::Check || (stage_ == Stage::Body && device_wait_);
    }

    // Send accounting (the ring stream calls it for every frame it sends).
    void note_send(const uint8_t *frame, size_t len);
    Link *link() const { return env_.link; }
    const EngineEnv &env() const { return env_; }
    FramePool &pool() { return pool_; }

    // Set up everything that can fail before the first message; called once
    // by engine_start.  A local failure here poisons the operation (it
    // still runs its schedule, so that every rank learns of it) rather than
    // returning; an error return means the schedule cannot run at all.
    Status start();

    // A failure on this rank: the operation is poisoned, keeps its schedule
    // going with poison frames and ends with s and msg here, with
    // TERSE_ERR_REMOTE on the other ranks.
    void fail_local(Status s, const char *msg);

protected:
    // The algorithm: called repeatedly once statistics are agreed.  Sets
    // *done when its last message completed.  A non-OK status is fatal
    // (transport failure) and ends the operation at once.
    virtual Status body(bool *done) = 0;
    // Called once after agreement, before the first body() call.  Local
    // failures that leave the schedule runnable poison (fail_local); an
    // error return is fatal (nothing to run, e.g. no memory for bookkeeping).
    virtual Status begin() { return TERSE_OK; }
    // Every chunk whose statistics summable codecs agree on, in global
    // order: (global index, element offset in the input, count, mine).
    struct ChunkRef {
        size_t g, off, n;
        bool mine;  // this rank's input holds the chunk
    };
    virtual void stat_chunks(OpVector<ChunkRef> *own, size_t *total_chunks) const { *total_chunks = 0; }
    // Elements of the call's input (for feedback and verification).
    size_t input_count() const;

    // ---- frames
    size_t frame_capacity(size_t n) const;  // header + worst-case payload for n elements
    size_t seal_raw(const void *src, size_t n, uint8_t *frame, uint32_t contributors);
    size_t seal_poison(uint8_t *frame, size_t n);
    // Out of memory for a frame buffer: the schedule must still go on, so
    // fail locally and send a header-only poison frame from static storage.
    void emergency_poison_out(size_t n, OutFrame *out);
    // Header-only storage for such frames (never handed to the pool).
    static uint8_t *emergency_header();
    // Summable codecs: combine the payloads of a and b (global chunk g, n
    // elements) in the code domain into frame dst (capacity frame_cap_).
    // Sets *len and returns true when combined; false with *failed clear
    // when the codec asks for raw elements; false with *failed set (and the
    // operation poisoned) when the codec failed.
    bool combine_frames(const FrameInfo &a, const FrameInfo &b, size_t g, size_t n, uint8_t *dst, size_t *len,
                        bool *failed);
    // Encode n elements (global chunk g) into frame (capacity frame_cap_);
    // raw when the codec says so or the codec is the identity; a poison frame
    // when poisoned or when encoding fails (which poisons).
    size_t encode_frame(const void *src, size_t n, size_t g, uint8_t *frame, uint32_t contributors);
    // Validate a received frame.  False when the operation is (or becomes)
    // poisoned: the caller then sends poison instead of data.
    bool open_frame(const uint8_t *buf, size_t len, size_t n, int peer, FrameInfo *fi);
    // Header of a frame this rank built or already validated.
    static FrameInfo trusted_info(const uint8_t *frame, size_t len) { return frame_info(frame, len); }
    // Lossless hops on raw frames, reading the data once: the check values
    // are computed block by block while the block is in cache, in the pass
    // that reduces or copies it.  reduce_raw_hop: buf (len bytes from peer,
    // n elements expected) becomes the frame for the next hop, its payload
    // reduced with mine in place and sealed for `contributors` ranks.
    // copy_raw_hop: buf's payload is copied to dst, buf itself is left as it
    // came.  Both false when the operation is (or becomes) poisoned; with a
    // frame that is not raw they do what open_frame and decode_frame do.
    bool reduce_raw_hop(uint8_t *buf, size_t len, size_t n, int peer, const void *mine);
    bool copy_raw_hop(const uint8_t *buf, size_t len, size_t n, size_t g, int peer, void *dst);
    // dst = decoded (accumulate false) or dst = dst op decoded.
    bool decode_frame(const FrameInfo &fi, size_t g, void *dst, size_t n, bool accumulate);
    bool is_raw(const FrameInfo &fi) const { return fi.flags & FRAME_RAW; }
    terse_codec_call_t call_for(size_t g) const;
    // Where chunk g's agreed statistics start among all of them (summable).
    size_t agreed_at(size_t g) const { return g + 1 < agreed_off_.size() ? agreed_off_[g] : 0; }

    // ---- failures
    void fail_remote(uint32_t origin);
    bool poisoned() const { return poisoned_; }
    // Test hook: true once, when the armed injection names this hop (hop of
    // nhops in its phase, and overall hop of all_hops in the schedule); the
    // caller then spoils the received frame, as a corrupted transfer would.
    bool inject_armed() const { return __builtin_expect(inject_.where >= Injection::RsHop, 0); }
    bool injected_hop(bool allgather_phase, size_t hop, size_t nhops, size_t all_hop, size_t all_hops) {
        if (!inject_armed()) return false;
        return take_injected_hop(allgather_phase, hop, nhops, all_hop, all_hops);
    }

    // ---- error feedback
    bool feedback_on() const { return residual_ != nullptr; }
    // residual[off..off+n) += intended - represented
    void record_error(size_t off, const void *intended, const void *represented, size_t n);
    // Same, decoding the frame to find what it represents.
    void record_error_frame(size_t off, const void *intended, const uint8_t *frame, size_t len, size_t g,
                            size_t n);

    // ---- helpers
    uint8_t *elem(const void *base, size_t i) const {
        return static_cast<uint8_t *>(const_cast<void *>(base)) + i * esize_;
    }
    void timed_reduce_out(void *dst, const void *a, const void *b, size_t n);
    uint8_t *scratch_a() { return scratch_a_.data(); }
    uint8_t *scratch_b() { return scratch_b_.data(); }
    uint8_t *scratch_frame() { return scratch_frame_.data(); }
    int mod(int x) const { return ((x % n_) + n_) % n_; }

    std::pmr::memory_resource *mem_;
    EngineEnv env_;
    CollArgs args_;
    Plan plan_;
    int n_ = 1, r_ = 0;
    size_t esize_ = 0;
    const terse_codec_descriptor_t *desc_ = nullptr;
    void *inst_ = nullptr;
    uint32_t codec_id_ = 0;
    bool identity_ = false;  // payload == raw elements: skip the codec
    bool lossless_ = true;
    terse_reduce_mode_t mode_ = TERSE_REDUCE_RECOMPRESS;
    size_t frame_cap_ = 0;         // bytes of every pool buffer
    const void *input_ = nullptr;  // own contribution: sendbuf, or its feedback-adjusted copy
    // Device buffers (EngineEnv::device): the codec runs through this port.
    DevicePort *dev_ = nullptr;
    bool device_wait_ = false;  // the last body() waited for the device

    FramePool pool_;
    ScratchBuffer scratch_a_, scratch_b_, scratch_frame_;

    double t_encode_ = 0, t_decode_ = 0;

private:
    Status progress_stages(bool *done);
    bool take_injected_hop(bool allgather_phase, size_t hop, size_t nhops, size_t all_hop, size_t all_hops);
    Status run_begin();
    Status finish_ok();
    Status finish_fatal(Status s);
    Status final_status();
    void account();
    Status setup_feedback();
    Status start_stats_agreement();
    void apply_agreement();
    bool guard_due();
    Status start_guard();
    Status post_close();
    void guard_judge();
    void guard_trip();

    // Check: a guarded call waits for the exact result before the closing
    // agreement, which then carries its verdict.
    enum class Stage { Agree, Body, Check, Close, Finish, Done } stage_ = Stage::Agree;

    Injection inject_;
    bool poisoned_ = false;
    bool local_failure_ = false;
    Status fail_status_ = TERSE_OK;
    std::string fail_msg_;
    uint32_t fail_origin_ = 0;

    void *residual_ = nullptr;
    FeedbackKey residual_key_;
    bool residual_held_ = false;  // residual_key_ names a residual this operation changes
    ScratchBuffer adjusted_;

    // Summable codecs: per-chunk statistics (MAX over ranks) + failure flag.
    OpVector<double> agreed_;
    OpVector<double> agreed_in_;  // what a round of the agreement receives
    OpVector<size_t> agreed_off_;
    LinkMax agree_link_;
    // Closing agreement on the outcome (see progress()), MAX over ranks:
    // [0] the failed rank + 1 (or 0); [1] on a guarded call, whether the
    // error exceeded its allowance; [2..4], when env_.observed asks, the
    // operation's time, codec time and wire ratio (the planner's input).
    double close_[5] = {0, 0, 0, 0, 0};
    LinkMax close_link_;

    std::optional<Verifier> verifier_;
    // The error guard, on the calls it checks (guard.h).
    std::optional<GuardCheck> guard_check_;
    uint64_t guard_call_ = 0;  // this call's number among the lossy allreduces
    double guard_measured_ = 0, guard_allowed_ = 0;

    double t_start_ = 0;
    uint64_t wire_ = 0, wire_raw_ = 0, raw_chunks_ = 0;
    bool accounted_ = false;
};

// Tag of message `slot` sent by comm rank src in this operation.
inline uint64_t op_tag(const EngineEnv &env, int src, size_t slot) {
    return make_tag(env.ctx_id, uint32_t(src), env.seq, uint32_t(slot & 0xFFFFu));
}

}  // namespace terse
