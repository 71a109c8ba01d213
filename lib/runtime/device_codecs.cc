#include "runtime/device_codecs.h"

#include "terse_build_config.h"

#include "capture/capture.h"
#include "codec/codec_status.h"
#include "codec/registry.h"
#include "engine/device_port.h"
#include "runtime/collective.h"
#include "runtime/comm_state.h"
#include "transport/ucx_transport.h"
#include "util/dtype.h"
#include "util/log.h"

#ifdef TERSE_HAVE_CUDA
#include "device/cuda_driver.h"
#include "device/device_lane.h"
#include "device/mem_kind.h"
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>

namespace terse {

namespace {

// Why a call the engine takes on device buffers was staged whole; the
// order is the TERSE_STATS line's.
enum Reason : int {
    kOff,          // TERSE_DEVICE_CODECS=0
    kNonblocking,  // an MPI_I* call while another one holds the lane
    kSchedule,     // planned on another schedule than the ring
    kCodec,        // not summable, or no CUDA kernels
    kChecks,       // verify, guard, error feedback, capture
    kBuffers,      // a buffer in host memory, or another context
    kUnavailable,  // the lane or the device instance could not be made
    kReasons
};
const char *const kReasonName[kReasons] = {"off",    "nonblocking", "schedule",   "codec",
                                           "checks", "buffers",     "unavailable"};

std::atomic<uint64_t> g_encoded_calls{0}, g_encoded_whole_bytes{0}, g_payload_bytes{0};
std::atomic<uint64_t> g_whole[kReasons];

void note_whole(Reason r, const char *why) {
    g_whole[r].fetch_add(1, std::memory_order_relaxed);
    TERSE_LOG_DEBUG("device codecs: a call on device buffers is staged whole: %s", why);
}

}  // namespace

std::string device_codecs_stats() {
#ifdef TERSE_HAVE_CUDA
    char buf[160];
    snprintf(buf, sizeof buf, " device_encoded=%llu device_encoded_bytes=%llu device_payload_bytes=%llu",
             static_cast<unsigned long long>(g_encoded_calls.load()),
             static_cast<unsigned long long>(g_encoded_whole_bytes.load()),
             static_cast<unsigned long long>(g_payload_bytes.load()));
    std::string out = buf;
    uint64_t total = 0;
    std::string why;
    for (int r = 0; r < kReasons; ++r) {
        const uint64_t n = g_whole[r].load();
        total += n;
        if (n) why += (why.empty() ? "" : ",") + std::string(kReasonName[r]) + ":" + std::to_string(n);
    }
    out += " device_whole=" + std::to_string(total);
    if (!why.empty()) out += " device_whole_why=" + why;
    return out;
#else
    return "";
#endif
}

#ifndef TERSE_HAVE_CUDA

class DeviceCodecs {};
void DeviceCodecsDeleter::operator()(DeviceCodecs *d) const { delete d; }

Status device_codecs_run(CommState *, const CollArgs &, const CollectiveChoice &, bool *served) {
    *served = false;
    return TERSE_OK;
}

void device_codecs_lease(CommState *, const CollArgs &, const CollectiveChoice &,
                         std::unique_ptr<DeviceLease> *lease) {
    lease->reset();
}
DevicePort *DeviceLease::port() const { return nullptr; }
Status DeviceLease::release() { return TERSE_OK; }
DeviceLease::~DeviceLease() = default;

#else

using device::CudaDriver;
using device::DeviceLane;

// The port of one communicator: its lane, the device instances of its
// codecs, and the lane's scratch cut for the call in flight.
class DeviceCodecs final : public DevicePort {
public:
    DeviceCodecs(const CudaDriver &d, CUcontext ctx) : lane_(d, ctx) {}
    // The device instances go inside the lane's context, after its work
    // (the lane drains when it goes, after them).
    ~DeviceCodecs() override {
        device::ContextScope scope(lane_.driver(), lane_.context());
        if (scope.status() == TERSE_OK) lane_.drain();
        insts_.clear();
    }

    Status init() {
        device::ContextScope scope(lane_.driver(), lane_.context());
        if (scope.status() != TERSE_OK) return scope.status();
        return lane_.init();
    }
    CUcontext context() const { return lane_.context(); }

    // The device instance of params for dtype (made at first need) and the
    // lane sized for calls of count elements (over every block) in chunks
    // of chunk_elems.
    Status prepare(const CommState *st, const CodecParams &params, const CodecInstance &host, size_t count,
                   size_t chunk_elems);
    // Whether a non-blocking call holds the lane (DeviceLease).
    bool leased = false;

    // After the operation: its last copies done (the result is in place
    // before the call returns, or its request completes).
    Status finish() {
        device::ContextScope scope(lane_.driver(), lane_.context());
        if (scope.status() != TERSE_OK) return scope.status();
        return lane_.drain();
    }

    size_t slots() const override { return device::kOutSlots; }
    Status stats(const void *src, size_t n, double *out, size_t nout, uint64_t seed) override;
    Status put_agreed(const double *agreed, size_t count) override;
    Status encode(size_t slot, const void *src, size_t n, size_t agreed_at, uint64_t seed, size_t cap,
                  size_t *len, bool *raw) override;
    int ready(size_t slot) override {
        device::ContextScope scope(lane_.driver(), lane_.context());
        if (scope.status() != TERSE_OK) return -1;
        return lane_.out_ready(slot);
    }
    const uint8_t *slot_data(size_t slot) const override { return lane_.out_data(slot); }
    Status decode(const uint8_t *payload, size_t len, bool raw, void *dst, size_t n, size_t agreed_at,
                  uint64_t seed) override;
    Status copy(void *dst, const void *src, size_t bytes) override {
        device::ContextScope scope(lane_.driver(), lane_.context());
        if (scope.status() != TERSE_OK) return scope.status();
        return lane_.copy_device(dst, src, bytes);
    }

private:
    // Keyed by the communicator's parameters object and datatype: the
    // communicator drops its DeviceCodecs whenever it makes new codecs
    // (comm_state.cc, prepare_codec), so a key never outlives its object.
    struct Instance {
        const CodecParams *params;
        terse_dtype_t dtype;
        std::unique_ptr<CodecInstance> inst;  // nullptr: the codec refused a device instance
        std::string refusal;                  // why, said once (then every call stages whole quietly)
    };
    terse_codec_call_t call(size_t agreed_at, uint64_t seed) const;
    Status codec_failed(int rc, const char *what, size_t n) const;

    DeviceLane lane_;
    std::vector<Instance> insts_;
    CodecInstance *cur_ = nullptr;
    size_t esize_ = 0, payload_cap_ = 0, stats_cap_ = 0, agreed_cap_ = 0;
    uint8_t *ws_ = nullptr, *pay_out_ = nullptr, *pay_in_ = nullptr;
    double *stats_ = nullptr, *agreed_ = nullptr;
    size_t ws_bytes_ = 0;
};

void DeviceCodecsDeleter::operator()(DeviceCodecs *d) const { delete d; }

namespace {
size_t align_up(size_t v) { return (v + 255) & ~size_t(255); }
}  // namespace

Status DeviceCodecs::prepare(const CommState *st, const CodecParams &params, const CodecInstance &host,
                             size_t count, size_t chunk_elems) {
    const terse_codec_setup_t &hs = host.setup();
    device::ContextScope scope(lane_.driver(), lane_.context());
    if (scope.status() != TERSE_OK) return scope.status();
    cur_ = nullptr;
    for (Instance &i : insts_)
        if (i.params == &params && i.dtype == hs.dtype) {
            // A refusal (e.g. errbound's zstd=on) holds for the
            // communicator's life: said once, then quietly staged whole.
            if (!i.inst) return set_error(TERSE_ERR_UNSUPPORTED, "%s", i.refusal.c_str());
            cur_ = i.inst.get();
        }
    if (!cur_) {
        // The host instance's setup: same ranks and chunk bound.
        terse_codec_setup_t setup = hs;
        setup.mem_kind = TERSE_MEM_CUDA;
        Instance made{&params, hs.dtype, nullptr, {}};
        Status s = Registry::instance().create(params, setup, &made.inst);
        if (s != TERSE_OK) {
            made.refusal = last_error();
            TERSE_LOG_WARN("device codecs: '%s' on %s: no device instance for %s (%s); those calls on device "
                           "buffers are staged whole and compressed on the host",
                           params.canonical().c_str(), st->describe().c_str(), dtype_name(hs.dtype),
                           made.refusal.c_str());
            insts_.push_back(std::move(made));
            return set_error(TERSE_ERR_UNSUPPORTED, "%s", insts_.back().refusal.c_str());
        }
        TERSE_LOG_INFO("device codecs: '%s' on %s has a device instance of %s for %s", params.canonical().c_str(),
                       st->describe().c_str(), params.plugin()->desc->name, dtype_name(hs.dtype));
        cur_ = made.inst.get();
        insts_.push_back(std::move(made));
    }
    const terse_codec_descriptor_t *d = cur_->desc();
    esize_ = dtype_size(hs.dtype);
    // A frame's payload: the worst the codec writes, or the raw elements.
    payload_cap_ = std::max(d->max_encoded_size(cur_->get(), chunk_elems), chunk_elems * esize_);
    const size_t per_chunk = d->stats_count(cur_->get(), chunk_elems);
    stats_cap_ = per_chunk;
    // Chunks of an allreduce: ceil(count / chunk) plus one partial chunk
    // per block (chunk_plan.h), and the agreement's failure flag.
    agreed_cap_ = ((count + chunk_elems - 1) / chunk_elems + size_t(st->size) + 1) * per_chunk + 1;
    ws_bytes_ = cur_->device_workspace_size();
    const size_t bytes = align_up(ws_bytes_) + align_up(payload_cap_) * (device::kOutSlots + 1) +
                         align_up(stats_cap_ * sizeof(double)) + align_up(agreed_cap_ * sizeof(double));
    Status s = lane_.reserve(payload_cap_, bytes);
    if (s != TERSE_OK) return s;
    uint8_t *p = lane_.device_scratch();
    ws_ = ws_bytes_ ? p : nullptr;
    p += align_up(ws_bytes_);
    pay_out_ = p;
    p += align_up(payload_cap_) * device::kOutSlots;
    pay_in_ = p;
    p += align_up(payload_cap_);
    stats_ = reinterpret_cast<double *>(p);
    p += align_up(stats_cap_ * sizeof(double));
    agreed_ = reinterpret_cast<double *>(p);
    // Encodes of an earlier operation (a failed one leaves some) are done
    // before this one's reuse their slots.
    return lane_.drain();
}

terse_codec_call_t DeviceCodecs::call(size_t agreed_at, uint64_t seed) const {
    terse_codec_call_t c{};
    c.struct_size = sizeof c;
    c.agreed_stats = agreed_ + agreed_at;
    c.seed = seed;
    c.stream = lane_.compute_stream();
    c.workspace = ws_;
    c.workspace_size = ws_bytes_;
    return c;
}

Status DeviceCodecs::codec_failed(int rc, const char *what, size_t n) const {
    return set_error(codec_status(rc), "codec '%s' failed to %s %zu elements on the device: %s",
                     cur_->desc()->name, what, n, codec_status_text(rc));
}

Status DeviceCodecs::stats(const void *src, size_t n, double *out, size_t nout, uint64_t seed) {
    if (nout > stats_cap_)
        return set_error(TERSE_ERR_INVALID, "terse: %zu statistics for a device scratch of %zu", nout,
                         stats_cap_);
    device::ContextScope scope(lane_.driver(), lane_.context());
    if (scope.status() != TERSE_OK) return scope.status();
    terse_codec_call_t c = call(0, seed);
    c.agreed_stats = nullptr;
    const int rc = cur_->desc()->stats(cur_->get(), src, n, stats_, &c);
    if (rc != TERSE_CODEC_OK) return codec_failed(rc, "compute statistics of", n);
    g_payload_bytes.fetch_add(nout * sizeof(double), std::memory_order_relaxed);
    return lane_.download(out, stats_, nout * sizeof(double));
}

Status DeviceCodecs::put_agreed(const double *agreed, size_t count) {
    if (count > agreed_cap_)
        return set_error(TERSE_ERR_INVALID, "terse: %zu agreed statistics for a device scratch of %zu", count,
                         agreed_cap_);
    device::ContextScope scope(lane_.driver(), lane_.context());
    if (scope.status() != TERSE_OK) return scope.status();
    g_payload_bytes.fetch_add(count * sizeof(double), std::memory_order_relaxed);
    return lane_.upload(agreed_, agreed, count * sizeof(double));
}

Status DeviceCodecs::encode(size_t slot, const void *src, size_t n, size_t agreed_at, uint64_t seed, size_t cap,
                            size_t *len, bool *raw) {
    device::ContextScope scope(lane_.driver(), lane_.context());
    if (scope.status() != TERSE_OK) return scope.status();
    cap = std::min(cap, payload_cap_);
    uint8_t *dst = pay_out_ + align_up(payload_cap_) * slot;
    const terse_codec_call_t c = call(agreed_at, seed);
    *len = 0;
    const int rc = cur_->desc()->encode(cur_->get(), src, n, dst, cap, len, &c);
    const void *from = dst;
    *raw = rc == TERSE_CODEC_RAW;
    if (*raw) {
        // Non-finite or incompressible: the elements themselves go.
        from = src;
        *len = n * esize_;
    } else if (rc != TERSE_CODEC_OK) {
        return codec_failed(rc, "encode", n);
    }
    if (*len > cap)
        return set_error(TERSE_ERR_PLUGIN,
                         "codec '%s' wrote a %zu-byte payload for a %zu-byte buffer on the device",
                         cur_->desc()->name, *len, cap);
    g_payload_bytes.fetch_add(*len, std::memory_order_relaxed);
    return lane_.copy_out(slot, from, *len);
}

Status DeviceCodecs::decode(const uint8_t *payload, size_t len, bool raw, void *dst, size_t n, size_t agreed_at,
                            uint64_t seed) {
    device::ContextScope scope(lane_.driver(), lane_.context());
    if (scope.status() != TERSE_OK) return scope.status();
    g_payload_bytes.fetch_add(len, std::memory_order_relaxed);
    if (raw) {
        if (len != n * esize_)
            return set_error(TERSE_ERR_CORRUPT, "terse: a raw frame of %zu bytes for %zu elements", len, n);
        return lane_.copy_in(dst, payload, len);
    }
    if (len > payload_cap_)
        return set_error(TERSE_ERR_CORRUPT, "terse: a %zu-byte payload for a device buffer of %zu", len,
                         payload_cap_);
    Status s = lane_.copy_in(pay_in_, payload, len);
    if (s != TERSE_OK) return s;
    const terse_codec_call_t c = call(agreed_at, seed);
    const int rc = cur_->desc()->decode(cur_->get(), pay_in_, len, dst, n, 0, TERSE_OP_SUM, &c);
    if (rc != TERSE_CODEC_OK) return codec_failed(rc, "decode", n);
    return TERSE_OK;
}

namespace {

// A call's elements: over every block (what the ring chunks), and the
// spans of its send and receive buffers (in place: the receive buffer
// holds the input too).
struct CallSpans {
    size_t total = 0, send = 0, recv = 0;
};
CallSpans call_spans(const CollArgs &a, int rank, int size) {
    CallSpans c;
    const size_t n = size_t(size);
    switch (a.kind) {
    case CollKind::Allreduce: c.total = c.send = c.recv = a.count; break;
    case CollKind::ReduceScatterBlock:
        c.total = c.send = a.count * n;
        c.recv = a.in_place ? c.total : a.count;
        break;
    case CollKind::ReduceScatter:
        c.total = c.send = a.count;
        c.recv = a.in_place ? c.total : a.counts[rank];
        break;
    case CollKind::Allgather:
        c.total = c.recv = a.count * n;
        c.send = a.count;
        break;
    case CollKind::Allgatherv:
        c.total = a.count;
        c.send = a.counts[rank];
        for (size_t b = 0; b < n; ++b) c.recv = std::max(c.recv, a.displs[b] + a.counts[b]);
        break;
    }
    return c;
}

// Whether the call's buffers are device memory of one context; *ctx it.
bool device_buffers(const CollArgs &a, const CallSpans &span, const CudaDriver &d, CUcontext *ctx) {
    const size_t es = dtype_size(a.dtype);
    if (device::buffer_mem_kind(a.recvbuf, span.recv * es) != TERSE_MEM_CUDA) return false;
    if (!a.in_place && device::buffer_mem_kind(a.sendbuf, span.send * es) != TERSE_MEM_CUDA) return false;
    CUcontext rc = nullptr, sc = nullptr;
    if (device::buffer_context(d, a.recvbuf, &rc) != TERSE_OK) return false;
    if (!a.in_place && (device::buffer_context(d, a.sendbuf, &sc) != TERSE_OK || sc != rc)) return false;
    *ctx = rc;
    return true;
}

// An in-place reduce-scatter builds its result in its own block's place
// and moves it to the buffer's start at the end (ring_op.h); on the device
// that is one copy, which must not overlap (device_lane.h).
bool result_move_overlaps(const CollArgs &a, int rank) {
    if (!a.in_place || !coll_reduces(a.kind) || coll_gathers(a.kind)) return false;
    size_t off = 0, len = a.count;
    if (a.kind == CollKind::ReduceScatterBlock) {
        off = size_t(rank) * a.count;
    } else {
        for (int b = 0; b < rank; ++b) off += a.counts[b];
        len = a.counts[rank];
    }
    return off > 0 && off < len;
}

// The reason a call is not served, or kReasons when it is.
Reason refusal(CommState *st, const CollArgs &a, const CollectiveChoice &c, const Plan &plan) {
    if (runtime_global().device_codecs == 0) return kOff;
    const CodecSlot &slot = st->codecs[c.slot];
    const terse_codec_descriptor_t *d = slot.desc();
    if (!d || d->mode != TERSE_REDUCE_SUMMABLE || codec_is_identity(d) || !(d->mem_kinds & TERSE_MEM_CUDA) ||
        !d->stats || !d->stats_count || !d->combine)
        return kCodec;
    // Capture records an allreduce's input from the host.
    if (st->config.verify || st->guard.every || (slot.feedback && !st->guard.tripped) ||
        (a.kind == CollKind::Allreduce && capture_active()))
        return kChecks;
    if (plan.schedule != Schedule::Ring) return kSchedule;
    return kReasons;
}

// The communicator's device codecs made ready for call a, if the device
// path serves it: the lane and the codec's device instance made at first
// need and prepared for the call.  Else nullptr, nothing started, and the
// call counted as staged whole with its reason.
DeviceCodecs *ready_for(CommState *st, const CollArgs &a, const CollectiveChoice &choice, bool nonblocking) {
    Plan plan;
    Status s = collective_plan(st, a, choice, &plan);
    if (s != TERSE_OK) {
        note_whole(kUnavailable, last_error());
        return nullptr;
    }
    const Reason r = refusal(st, a, choice, plan);
    if (r != kReasons) {
        note_whole(r, kReasonName[r]);
        return nullptr;
    }
    const CudaDriver *d = device::cuda_driver();
    const CallSpans span = call_spans(a, st->rank, st->size);
    CUcontext ctx = nullptr;
    if (!d || !device_buffers(a, span, *d, &ctx)) {
        note_whole(kBuffers, "a buffer is not device memory of the other's context");
        return nullptr;
    }
    if (result_move_overlaps(a, st->rank)) {
        note_whole(kBuffers, "an in-place reduce-scatter whose block overlaps the start of its buffer");
        return nullptr;
    }
    if (st->device && st->device->context() != ctx) {
        note_whole(kBuffers, "the buffers are in another CUDA context than the communicator's lane");
        return nullptr;
    }
    if (st->device && st->device->leased) {
        // Blocking calls finish the non-blocking ones first, so only a
        // non-blocking call meets a held lane.
        note_whole(nonblocking ? kNonblocking : kUnavailable,
                   "another non-blocking call on device buffers holds the communicator's lane");
        return nullptr;
    }
    if (!st->device) {
        // A CUDA-aware UCX could take the payloads from device memory
        // without the pinned copies; the engine's frames are built on the
        // host (the code-domain sums run there), so they are staged all
        // the same.  Said once per lane.
        const Transport *t = Transport::get();
        TERSE_LOG_INFO("device codecs: a lane for %s; this UCX %s; payloads go through pinned host memory",
                       st->describe().c_str(),
                       t && t->reads_device_memory() ? "reads CUDA device memory (UCS_MEMORY_TYPE_CUDA)"
                                                     : "does not read CUDA device memory");
        std::unique_ptr<DeviceCodecs, DeviceCodecsDeleter> made(new (std::nothrow) DeviceCodecs(*d, ctx));
        if (!made || (s = made->init()) != TERSE_OK) {
            TERSE_LOG_WARN("device codecs: no lane for %s: %s; its calls on device buffers are staged whole",
                           st->describe().c_str(), made ? last_error() : "out of memory");
            note_whole(kUnavailable, "no lane");
            return nullptr;
        }
        st->device = std::move(made);
    }
    CodecInstance *host = nullptr;
    s = comm_state_codec(st, choice.slot, a.dtype, &host);
    if (s == TERSE_OK)
        s = st->device->prepare(st, *st->codecs[choice.slot].params, *host, span.total, plan.chunk_elems);
    if (s != TERSE_OK) {
        // Local, before anything was started: this rank stages the call
        // whole and runs the same operation as its peers.  A codec's
        // refusal was said when it came (prepare); anything else is said
        // per call.
        if (s != TERSE_ERR_UNSUPPORTED)
            TERSE_LOG_WARN("device codecs: %s; the call is staged whole", last_error());
        note_whole(kUnavailable, "prepare failed");
        return nullptr;
    }
    g_encoded_calls.fetch_add(1, std::memory_order_relaxed);
    // What staging it whole would have copied: the input in, the result out
    // (in place: the buffer both ways).
    const size_t whole = a.in_place ? 2 * span.recv : span.send + span.recv;
    g_encoded_whole_bytes.fetch_add(whole * dtype_size(a.dtype), std::memory_order_relaxed);
    return st->device.get();
}

}  // namespace

Status device_codecs_run(CommState *st, const CollArgs &a, const CollectiveChoice &choice, bool *served) {
    DeviceCodecs *dc = ready_for(st, a, choice, false);
    *served = dc != nullptr;
    if (!dc) return TERSE_OK;
    Status s = collective_run(st, a, choice, dc);
    const std::string msg = s != TERSE_OK ? last_error() : "";
    Status f = dc->finish();
    if (s != TERSE_OK) return set_error(s, "%s", msg.c_str());
    return f;
}

void device_codecs_lease(CommState *st, const CollArgs &a, const CollectiveChoice &choice,
                         std::unique_ptr<DeviceLease> *lease) {
    lease->reset();
    DeviceCodecs *dc = ready_for(st, a, choice, true);
    if (!dc) return;
    lease->reset(new (std::nothrow) DeviceLease(dc));
    if (!*lease) {
        note_whole(kUnavailable, "out of memory");
        return;
    }
    dc->leased = true;
}

DevicePort *DeviceLease::port() const { return d_; }

Status DeviceLease::release() {
    if (!d_) return TERSE_OK;
    DeviceCodecs *d = d_;
    d_ = nullptr;
    Status s = d->finish();
    d->leased = false;
    return s;
}

DeviceLease::~DeviceLease() { (void)release(); }

#endif

}  // namespace terse
