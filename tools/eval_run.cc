#include "eval_run.h"

#include "codec/codec_seed.h"

#include "engine/chunk_plan.h"
#include "engine/coll_args.h"
#include "eval_common.h"
#include "codec/frame.h"
#include "engine/planner.h"
#include "engine/reduce_kernels.h"
#include "engine/stats.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace terse::eval {

namespace {

const unsigned char *at(const Dataset &ds, size_t elem) { return ds.data.data() + elem * dtype_size(ds.dtype); }

// One call's codec as the engine drives it: frames (payload or raw), seeds,
// agreed statistics, and the element-wise kernels for raw frames.
class Emulator {
public:
    Emulator(Codec &codec, terse_dtype_t dt, terse_op_t op, int nranks, const CallSetup &setup, SizeStats *size)
        : codec_(codec), dt_(dt), op_(op), n_(nranks), setup_(setup), esize_(dtype_size(dt)), size_(size) {
        const size_t max_chunk = (setup.cfg.chunk_bytes + esize_ - 1) / esize_;  // as comm_state.cc
        ci_ = &codec.instance(dt, nranks, max_chunk);
        const terse_codec_descriptor_t *d = codec.desc();
        identity_ = codec_is_identity(d);
        summable_ = d->mode == TERSE_REDUCE_SUMMABLE && !identity_;
    }

    // Payload capacity of the engine's frame buffers (OpBase::frame_capacity).
    void set_chunk(size_t chunk_elems) {
        size_t raw = chunk_elems * esize_;
        size_t enc = identity_ ? raw : codec_.desc()->max_encoded_size(ci_->get(), chunk_elems);
        cap_ = std::max(enc, raw);
    }

    Plan plan(size_t count) const {
        CollArgs a;
        a.kind = CollKind::Allreduce;
        a.count = count;
        a.dtype = dt_;
        a.op = op_;
        return plan_collective(setup_.cfg, n_, a, codec_.desc(), ci_->setup().max_chunk_count);
    }

    bool summable() const { return summable_; }
    bool identity() const { return identity_; }
    size_t esize() const { return esize_; }

    uint64_t seed(size_t g, int r) const { return codec_call_seed(setup_.ctx_id, setup_.seq, g, n_, r); }

    // Agreed statistics of global chunk g: element-wise MAX over the given
    // inputs' statistics (what the engine's MAX-allreduce produces).
    void agree(size_t g, const std::vector<const void *> &srcs, size_t n) {
        if (!summable_) return;
        if (agreed_.size() <= g) agreed_.resize(g + 1);
        std::vector<double> &a = agreed_[g];
        a.clear();
        const uint64_t s = codec_stats_seed(setup_.seq, g);
        for (const void *src : srcs) {
            std::vector<double> v = chunk_stats(*ci_, src, n, s);
            if (a.empty()) a = v;
            else
                for (size_t i = 0; i < a.size() && i < v.size(); ++i) a[i] = std::max(a[i], v[i]);
        }
    }
    const double *agreed(size_t g) const {
        return summable_ && g < agreed_.size() && !agreed_[g].empty() ? agreed_[g].data() : nullptr;
    }

    Payload raw(const void *src, size_t n, int contributors = 1) const {
        Payload p;
        p.raw = true;
        p.contributors = contributors;
        p.bytes.assign(static_cast<const unsigned char *>(src),
                       static_cast<const unsigned char *>(src) + n * esize_);
        return p;
    }

    Payload encode(const void *src, size_t n, size_t g, int r, int contributors = 1) {
        if (identity_) return raw(src, n, contributors);
        Payload p = encode_chunk(*ci_, src, n, agreed(g), seed(g, r), nullptr, cap_);
        p.contributors = contributors;
        return p;
    }

    void decode(const Payload &p, void *dst, size_t n, bool accumulate, size_t g, int r) {
        if (p.raw) {
            if (accumulate) reduce_inplace(dt_, op_, dst, p.bytes.data(), n);
            else std::memcpy(dst, p.bytes.data(), n * esize_);
            return;
        }
        decode_chunk(*ci_, p, dst, n, accumulate, op_, agreed(g), seed(g, r));
    }

    // The frame of lo + hi (summable): in the code domain when both are
    // codes, else as elements, raw from then on.
    Payload combine(const Payload &lo, const Payload &hi, size_t n, size_t g, int r) {
        if (!lo.raw && !hi.raw) {
            Payload c;
            if (combine_chunks(*ci_, lo, hi, n, agreed(g), seed(g, r), &c, cap_)) return c;
            // TERSE_CODEC_RAW from combine: the sum is taken as elements.
        }
        std::vector<unsigned char> a(n * esize_), b(n * esize_);
        decode(lo, a.data(), n, false, g, r);
        decode(hi, b.data(), n, false, g, r);
        reduce_out(dt_, op_, b.data(), a.data(), b.data(), n);
        return raw(b.data(), n, lo.contributors + hi.contributors);
    }

    // dst = a op b with the engine's kernels (dst may be a or b).
    void reduce(void *dst, const void *a, const void *b, size_t n) const { reduce_out(dt_, op_, dst, a, b, n); }

    // The engine would send p `times` times.
    void sent(const Payload &p, size_t n, int times = 1) {
        for (int i = 0; i < times; ++i) {
            size_->raw_bytes += n * esize_;
            size_->wire_bytes += p.bytes.size() + kFrameHeaderSize;
            size_->chunks += 1;
            size_->raw_chunks += p.raw ? 1 : 0;
        }
    }

private:
    Codec &codec_;
    CodecInstance *ci_ = nullptr;
    terse_dtype_t dt_;
    terse_op_t op_;
    int n_;
    CallSetup setup_;
    size_t esize_;
    SizeStats *size_;
    bool identity_ = false, summable_ = false;
    size_t cap_ = 0;
    std::vector<std::vector<double>> agreed_;
};

// Pipelined ring (lib/ring_op.h): block b starts at rank b+1, every next
// rank adds its contribution, rank b owns the result; its frame is decoded
// by every rank (the owner too) in the allgather.
void ring(Emulator &em, const std::vector<const Dataset *> &x, const ChunkPlan &cp, size_t b, size_t k,
          void *out) {
    const int n = int(x.size());
    const size_t len = cp.chunk_len(b, k), off = cp.chunk_off(b, k), g = cp.global(b, k);
    const size_t bytes = len * em.esize();
    const int first = int((b + 1) % size_t(n));
    Payload p = em.encode(at(*x[size_t(first)], off), len, g, first);
    std::vector<unsigned char> acc(bytes);
    for (int step = 1; step < n; ++step) {
        em.sent(p, len);
        const int q = (first + step) % n;
        const void *mine = at(*x[size_t(q)], off);
        if (em.summable()) {
            Payload own = em.encode(mine, len, g, q);
            p = em.combine(p, own, len, g, q);
        } else {
            // acc = own + decode(incoming), encoded again for the next hop
            // (the owner's encoding is the allgather's frame).
            std::memcpy(acc.data(), mine, bytes);
            em.decode(p, acc.data(), len, true, g, q);
            p = em.encode(acc.data(), len, g, q, step + 1);
        }
    }
    em.sent(p, len, n - 1);  // the allgather forwards the owner's frame
    em.decode(p, out, len, false, g, int(b));
}

// Recursive doubling (lib/recursive_doubling.cc), one chunk: MPICH-style
// folding of the first 2*rem ranks, then log2 exchanges in which both
// partners compute f(low, high) from what the two frames decode to.
void recursive_doubling(Emulator &em, const std::vector<const Dataset *> &x, size_t off, size_t len, size_t g,
                        void *out) {
    const int n = int(x.size());
    const size_t bytes = len * em.esize();
    int pof2 = 1;
    while (pof2 * 2 <= n) pof2 *= 2;
    const int rem = n - pof2;
    auto real = [&](int ni) { return ni < rem ? 2 * ni + 1 : ni + rem; };

    if (em.summable()) {
        std::vector<Payload> f(static_cast<size_t>(pof2));
        for (int ni = 0; ni < pof2; ++ni) {
            const int r = real(ni);
            Payload own = em.encode(at(*x[size_t(r)], off), len, g, r);
            if (ni < rem) {
                Payload folded = em.encode(at(*x[size_t(r - 1)], off), len, g, r - 1);
                em.sent(folded, len);
                own = em.combine(folded, own, len, g, r);
            }
            f[size_t(ni)] = std::move(own);
        }
        for (int mask = 1; mask < pof2; mask <<= 1)
            for (int ni = 0; ni < pof2; ++ni) {
                const int pni = ni ^ mask;
                if (pni < ni) continue;
                em.sent(f[size_t(ni)], len);
                em.sent(f[size_t(pni)], len);
                Payload c = em.combine(f[size_t(ni)], f[size_t(pni)], len, g, real(ni));
                f[size_t(pni)] = c;
                f[size_t(ni)] = std::move(c);
            }
        for (int i = 0; i < rem; ++i) em.sent(f[0], len);  // handed back to folded ranks
        em.decode(f[0], out, len, false, g, real(0));
        return;
    }

    std::vector<std::vector<unsigned char>> acc(static_cast<size_t>(pof2), std::vector<unsigned char>(bytes));
    std::vector<unsigned char> tmp(bytes);
    for (int ni = 0; ni < pof2; ++ni) {
        const int r = real(ni);
        std::memcpy(acc[size_t(ni)].data(), at(*x[size_t(r)], off), bytes);
        if (ni < rem) {
            Payload folded = em.encode(at(*x[size_t(r - 1)], off), len, g, r - 1);
            em.sent(folded, len);
            em.decode(folded, tmp.data(), len, false, g, r);
            em.reduce(acc[size_t(ni)].data(), tmp.data(), acc[size_t(ni)].data(), len);
        }
    }
    for (int mask = 1; mask < pof2; mask <<= 1)
        for (int ni = 0; ni < pof2; ++ni) {
            const int pni = ni ^ mask;
            if (pni < ni) continue;
            // Each partner encodes its running result and keeps what its
            // frame decodes to; then both compute low + high.
            Payload lo = em.encode(acc[size_t(ni)].data(), len, g, real(ni), mask);
            Payload hi = em.encode(acc[size_t(pni)].data(), len, g, real(pni), mask);
            em.sent(lo, len);
            em.sent(hi, len);
            std::vector<unsigned char> dl(bytes), dh(bytes);
            em.decode(lo, dl.data(), len, false, g, real(ni));
            em.decode(hi, dh.data(), len, false, g, real(pni));
            em.reduce(acc[size_t(ni)].data(), dl.data(), dh.data(), len);
            acc[size_t(pni)] = acc[size_t(ni)];
        }
    for (int i = 0; i < rem; ++i) em.sent(em.raw(acc[0].data(), len), len, em.identity() ? 1 : 2);
    std::memcpy(out, acc[0].data(), bytes);
}

void exact_result(const std::vector<const Dataset *> &ranks, terse_op_t op, size_t off, size_t n,
                  std::vector<double> *out, std::vector<double> *scratch) {
    out->assign(n, 0.0);
    scratch->resize(n);
    bool first = true;
    for (const Dataset *ds : ranks) {
        to_double(ds->dtype, at(*ds, off), n, scratch->data());
        for (size_t i = 0; i < n; ++i) {
            double x = (*scratch)[i];
            double &r = (*out)[i];
            if (first) r = x;
            else if (op == TERSE_OP_SUM) r += x;
            else if (op == TERSE_OP_MAX) r = r > x ? r : x;
            else r = r < x ? r : x;
        }
        first = false;
    }
}

}  // namespace

Measured round_trip(Codec &codec, const Dataset &ds, int nranks, const CallSetup &setup, int repeat) {
    Measured m;
    SizeStats ignored;
    Emulator em(codec, ds.dtype, TERSE_OP_SUM, nranks, setup, &ignored);
    const size_t esize = em.esize();
    const int rank = ds.rank >= 0 && ds.rank < nranks ? ds.rank : 0;
    ChunkPlan cp;
    cp.build_fixed(ds.count, 1, em.plan(ds.count).chunk_elems);
    em.set_chunk(cp.chunk);
    std::vector<unsigned char> decoded(cp.chunk * esize);
    std::vector<double> ref(cp.chunk), got(cp.chunk);
    for (size_t k = 0; k < cp.total_chunks; ++k) {
        const size_t n = cp.chunk_len(0, k);
        const unsigned char *src = at(ds, cp.chunk_off(0, k));
        double best_enc = std::numeric_limits<double>::infinity(), best_dec = best_enc;
        Payload p;
        for (int rep = 0; rep < std::max(1, repeat); ++rep) {
            double t0 = now_seconds();
            em.agree(k, {src}, n);
            p = em.encode(src, n, k, rank);
            double t1 = now_seconds();
            em.decode(p, decoded.data(), n, false, k, rank);
            double t2 = now_seconds();
            best_enc = std::min(best_enc, t1 - t0);
            best_dec = std::min(best_dec, t2 - t1);
        }
        m.size.raw_bytes += n * esize;
        m.size.wire_bytes += p.bytes.size() + kFrameHeaderSize;
        m.size.chunks += 1;
        m.size.raw_chunks += p.raw ? 1 : 0;
        m.size.encode_seconds += best_enc;
        m.size.decode_seconds += best_dec;
        to_double(ds.dtype, src, n, ref.data());
        to_double(ds.dtype, decoded.data(), n, got.data());
        m.err.add(ref.data(), got.data(), n);
    }
    return m;
}

Measured emulate_allreduce(Codec &codec, const std::vector<const Dataset *> &ranks, const CallSetup &setup,
                           std::string *schedule) {
    Measured m;
    if (ranks.empty()) return m;
    const int n = int(ranks.size());
    const Dataset &first = *ranks.front();
    const terse_dtype_t dt = first.dtype;
    const terse_op_t op = first.op;
    const size_t count = first.count;
    Emulator em(codec, dt, op, n, setup, &m.size);
    const size_t esize = em.esize();
    const Plan plan = em.plan(count);
    if (plan.schedule == Schedule::TwoLevel)
        throw EvalError(
            "a call captured with algorithm=two_level cannot be emulated: the capture does not record "
            "which ranks shared a node");
    if (schedule) *schedule = schedule_name(plan.schedule);
    em.set_chunk(plan.chunk_elems);

    std::vector<unsigned char> result(count * esize);
    ChunkPlan cp;
    if (plan.schedule == Schedule::Ring) cp.build_even(count, n, plan.chunk_elems);
    else cp.build_fixed(count, 1, plan.chunk_elems);

    for (size_t b = 0; b < cp.blocks.size(); ++b)
        for (size_t k = 0; k < cp.blocks[b].nchunks; ++k) {
            const size_t off = cp.chunk_off(b, k), len = cp.chunk_len(b, k), g = cp.global(b, k);
            std::vector<const void *> srcs;
            for (const Dataset *d : ranks) srcs.push_back(at(*d, off));
            em.agree(g, srcs, len);
            void *out = result.data() + off * esize;
            switch (plan.schedule) {
            case Schedule::Ring: ring(em, ranks, cp, b, k, out); break;
            case Schedule::RecursiveDoubling: recursive_doubling(em, ranks, off, len, g, out); break;
            case Schedule::Gather:
            case Schedule::TwoLevel:  // refused above
            case Schedule::Trivial: {
                // Every rank's frame reaches every rank; each decodes and
                // sums them in rank order 0..n-1.
                for (int q = 0; q < n; ++q) {
                    Payload p = em.encode(srcs[size_t(q)], len, g, q);
                    em.sent(p, len, n - 1);
                    em.decode(p, out, len, q > 0, g, q);
                }
                break;
            }
            }
        }

    std::vector<double> ref, got(plan.chunk_elems), scratch;
    for (size_t off = 0; off < count; off += plan.chunk_elems) {
        const size_t len = std::min(plan.chunk_elems, count - off);
        exact_result(ranks, op, off, len, &ref, &scratch);
        got.resize(len);
        to_double(dt, result.data() + off * esize, len, got.data());
        m.err.add(ref.data(), got.data(), len);
    }
    return m;
}

}  // namespace terse::eval
