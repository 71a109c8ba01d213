#include "engine_sim.h"

#include <algorithm>
#include <numeric>

namespace sim {

int g_failing_rank_decode = -1;

namespace {

// ---------------------------------------------------------------- shared callbacks

int parse_none(const terse_codec_kv_t *, size_t nkv, void **params, char *err, size_t errlen) {
    *params = nullptr;
    if (nkv) {
        snprintf(err, errlen, "no parameters");
        return TERSE_CODEC_ERR_PARAM;
    }
    return TERSE_CODEC_OK;
}
void free_none(void *) {}
size_t params_none(const void *, char *buf, size_t len) {
    if (len) buf[0] = 0;
    return 0;
}

struct Inst {
    terse_dtype_t dtype;
    size_t esize;
    int index;  // creation order = simulated rank
};
int g_next_index = 0;

int create_any(const void *, const terse_codec_setup_t *setup, void **instance, char *, size_t) {
    *instance = new Inst{setup->dtype, dtype_size(setup->dtype), g_next_index++};
    return TERSE_CODEC_OK;
}
void destroy_any(void *i) { delete static_cast<Inst *>(i); }

bool all_finite(terse_dtype_t dt, const void *src, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(element_as_double(dt, src, i))) return false;
    return true;
}

void store_elem(terse_dtype_t dt, void *dst, size_t i, double v, bool accumulate) {
    if (dt == TERSE_DTYPE_FLOAT32) {
        float *d = static_cast<float *>(dst);
        d[i] = accumulate ? d[i] + float(v) : float(v);
    } else {
        double *d = static_cast<double *>(dst);
        d[i] = accumulate ? d[i] + v : v;
    }
}

// ---------------------------------------------------------------- identity

size_t id_max(void *i, size_t n) { return n * static_cast<Inst *>(i)->esize; }
int id_encode(void *i, const void *src, size_t n, void *dst, size_t cap, size_t *len,
              const terse_codec_call_t *) {
    size_t b = n * static_cast<Inst *>(i)->esize;
    if (b > cap) return TERSE_CODEC_ERR_NOSPACE;
    std::memcpy(dst, src, b);
    *len = b;
    return TERSE_CODEC_OK;
}
int id_decode(void *i, const void *src, size_t len, void *dst, size_t n, int acc, terse_op_t op,
              const terse_codec_call_t *) {
    auto *in = static_cast<Inst *>(i);
    if (len != n * in->esize) return TERSE_CODEC_ERR_CORRUPT;
    if (acc) reduce_inplace(in->dtype, op, dst, src, n);
    else std::memmove(dst, src, len);
    return TERSE_CODEC_OK;
}

const terse_codec_descriptor_t kIdentity = {
    TERSE_CODEC_ABI_VERSION,
    sizeof(terse_codec_descriptor_t),
    "none",
    "identity",
    "",
    TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64) |
        TERSE_DTYPE_BIT(TERSE_DTYPE_INT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_INT64) |
        TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT16) | TERSE_DTYPE_BIT(TERSE_DTYPE_BFLOAT16),
    TERSE_MEM_HOST,
    TERSE_CODEC_FLAG_LOSSLESS | TERSE_CODEC_FLAG_IDENTITY,
    TERSE_REDUCE_RECOMPRESS,
    parse_none,
    free_none,
    params_none,
    create_any,
    destroy_any,
    id_max,
    nullptr,
    nullptr,
    id_encode,
    id_decode,
    nullptr,
    nullptr,
    {}};

// ---------------------------------------------------------------- trunc (recompress)

size_t tr_max(void *i, size_t n) { return n * (static_cast<Inst *>(i)->esize / 2); }
int tr_encode(void *i, const void *src, size_t n, void *dst, size_t cap, size_t *len,
              const terse_codec_call_t *) {
    auto *in = static_cast<Inst *>(i);
    if (!all_finite(in->dtype, src, n)) return TERSE_CODEC_RAW;
    if (n * in->esize / 2 > cap) return TERSE_CODEC_ERR_NOSPACE;
    if (in->dtype == TERSE_DTYPE_FLOAT32) {
        auto *d = static_cast<uint16_t *>(dst);
        for (size_t k = 0; k < n; ++k) d[k] = float_to_bf16(static_cast<const float *>(src)[k]);
    } else {
        auto *d = static_cast<float *>(dst);
        for (size_t k = 0; k < n; ++k) d[k] = float(static_cast<const double *>(src)[k]);
    }
    *len = n * in->esize / 2;
    return TERSE_CODEC_OK;
}
int tr_decode(void *i, const void *src, size_t len, void *dst, size_t n, int acc, terse_op_t,
              const terse_codec_call_t *) {
    auto *in = static_cast<Inst *>(i);
    if (len != n * in->esize / 2) return TERSE_CODEC_ERR_CORRUPT;
    if (g_failing_rank_decode == in->index) return TERSE_CODEC_ERR_CORRUPT;
    for (size_t k = 0; k < n; ++k) {
        double v = in->dtype == TERSE_DTYPE_FLOAT32 ? double(bf16_to_float(static_cast<const uint16_t *>(src)[k]))
                                                    : double(static_cast<const float *>(src)[k]);
        store_elem(in->dtype, dst, k, v, acc);
    }
    return TERSE_CODEC_OK;
}

const terse_codec_descriptor_t kTrunc = {
    TERSE_CODEC_ABI_VERSION,
    sizeof(terse_codec_descriptor_t),
    "trunc",
    "float to bfloat16",
    "",
    TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64),
    TERSE_MEM_HOST,
    0,
    TERSE_REDUCE_RECOMPRESS,
    parse_none,
    free_none,
    params_none,
    create_any,
    destroy_any,
    tr_max,
    nullptr,
    nullptr,
    tr_encode,
    tr_decode,
    nullptr,
    nullptr,
    {}};

// ---------------------------------------------------------------- fixq (summable)

constexpr double kLevels = 1 << 20;

double scale_of(const terse_codec_call_t *call) {
    double m = call && call->agreed_stats ? call->agreed_stats[0] : -1;
    return m > 0 ? m / kLevels : 1.0;
}
size_t fq_max(void *, size_t n) { return 4 * n; }
size_t fq_stats_count(void *, size_t) { return 1; }
int fq_stats(void *i, const void *src, size_t n, double *out, const terse_codec_call_t *) {
    auto *in = static_cast<Inst *>(i);
    double m = 0;
    for (size_t k = 0; k < n; ++k) {
        double v = std::fabs(element_as_double(in->dtype, src, k));
        if (std::isfinite(v) && v > m) m = v;
    }
    out[0] = m;
    return TERSE_CODEC_OK;
}
int fq_encode(void *i, const void *src, size_t n, void *dst, size_t cap, size_t *len,
              const terse_codec_call_t *call) {
    auto *in = static_cast<Inst *>(i);
    if (!call || !call->agreed_stats) return TERSE_CODEC_ERR_PARAM;
    if (!all_finite(in->dtype, src, n)) return TERSE_CODEC_RAW;
    if (4 * n > cap) return TERSE_CODEC_ERR_NOSPACE;
    double s = scale_of(call);
    auto *q = static_cast<int32_t *>(dst);
    for (size_t k = 0; k < n; ++k) q[k] = int32_t(std::llround(element_as_double(in->dtype, src, k) / s));
    *len = 4 * n;
    return TERSE_CODEC_OK;
}
int fq_decode(void *i, const void *src, size_t len, void *dst, size_t n, int acc, terse_op_t,
              const terse_codec_call_t *call) {
    auto *in = static_cast<Inst *>(i);
    if (len != 4 * n || !call || !call->agreed_stats) return TERSE_CODEC_ERR_CORRUPT;
    double s = scale_of(call);
    const auto *q = static_cast<const int32_t *>(src);
    for (size_t k = 0; k < n; ++k) store_elem(in->dtype, dst, k, double(q[k]) * s, acc);
    return TERSE_CODEC_OK;
}
int fq_combine(void *, const void *a, size_t al, int, const void *b, size_t bl, int, size_t n, void *out,
               size_t cap, size_t *olen, const terse_codec_call_t *) {
    if (al != 4 * n || bl != 4 * n || cap < 4 * n) return TERSE_CODEC_ERR_CORRUPT;
    const auto *x = static_cast<const int32_t *>(a);
    const auto *y = static_cast<const int32_t *>(b);
    auto *o = static_cast<int32_t *>(out);
    for (size_t k = 0; k < n; ++k) o[k] = x[k] + y[k];
    *olen = 4 * n;
    return TERSE_CODEC_OK;
}

const terse_codec_descriptor_t kFixq = {
    TERSE_CODEC_ABI_VERSION,
    sizeof(terse_codec_descriptor_t),
    "fixq",
    "fixed point",
    "",
    TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64),
    TERSE_MEM_HOST,
    TERSE_CODEC_FLAG_ERROR_BOUND,
    TERSE_REDUCE_SUMMABLE,
    parse_none,
    free_none,
    params_none,
    create_any,
    destroy_any,
    fq_max,
    fq_stats_count,
    fq_stats,
    fq_encode,
    fq_decode,
    fq_combine,
    nullptr,
    {}};

// ---------------------------------------------------------------- sparse (gather)

size_t sp_keep(size_t n) { return (n + 3) / 4; }
size_t sp_max(void *, size_t n) { return 4 + 8 * sp_keep(n); }
int sp_encode(void *, const void *src, size_t n, void *dst, size_t cap, size_t *len, const terse_codec_call_t *) {
    const float *x = static_cast<const float *>(src);
    if (!all_finite(TERSE_DTYPE_FLOAT32, src, n)) return TERSE_CODEC_RAW;
    size_t k = sp_keep(n);
    if (4 + 8 * k >= 4 * n) return TERSE_CODEC_RAW;
    if (4 + 8 * k > cap) return TERSE_CODEC_ERR_NOSPACE;
    std::vector<uint32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0u);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](uint32_t a, uint32_t b) {
        float fa = std::fabs(x[a]), fb = std::fabs(x[b]);
        return fa != fb ? fa > fb : a < b;
    });
    std::sort(idx.begin(), idx.begin() + k);
    uint8_t *p = static_cast<uint8_t *>(dst);
    uint32_t kk = uint32_t(k);
    std::memcpy(p, &kk, 4);
    for (size_t j = 0; j < k; ++j) {
        std::memcpy(p + 4 + 8 * j, &idx[j], 4);
        std::memcpy(p + 8 + 8 * j, &x[idx[j]], 4);
    }
    *len = 4 + 8 * k;
    return TERSE_CODEC_OK;
}
int sp_decode(void *, const void *src, size_t len, void *dst, size_t n, int acc, terse_op_t,
              const terse_codec_call_t *) {
    const uint8_t *p = static_cast<const uint8_t *>(src);
    if (len < 4) return TERSE_CODEC_ERR_CORRUPT;
    uint32_t k;
    std::memcpy(&k, p, 4);
    if (len != 4 + 8 * size_t(k)) return TERSE_CODEC_ERR_CORRUPT;
    float *d = static_cast<float *>(dst);
    if (!acc) std::fill(d, d + n, 0.0f);
    for (size_t j = 0; j < k; ++j) {
        uint32_t i;
        float v;
        std::memcpy(&i, p + 4 + 8 * j, 4);
        std::memcpy(&v, p + 8 + 8 * j, 4);
        if (i >= n) return TERSE_CODEC_ERR_CORRUPT;
        d[i] = acc ? d[i] + v : v;
    }
    return TERSE_CODEC_OK;
}

const terse_codec_descriptor_t kSparse = {TERSE_CODEC_ABI_VERSION,
                                          sizeof(terse_codec_descriptor_t),
                                          "sparse",
                                          "top quarter",
                                          "",
                                          TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32),
                                          TERSE_MEM_HOST,
                                          0,
                                          TERSE_REDUCE_GATHER,
                                          parse_none,
                                          free_none,
                                          params_none,
                                          create_any,
                                          destroy_any,
                                          sp_max,
                                          nullptr,
                                          nullptr,
                                          sp_encode,
                                          sp_decode,
                                          nullptr,
                                          nullptr,
                                          {}};

uint32_t name_id(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; ++s) h = (h ^ uint8_t(*s)) * 16777619u;
    return h;
}

}  // namespace

const terse_codec_descriptor_t *identity_codec() { return &kIdentity; }
const terse_codec_descriptor_t *trunc_codec() { return &kTrunc; }
const terse_codec_descriptor_t *fixq_codec() { return &kFixq; }
const terse_codec_descriptor_t *sparse_codec() { return &kSparse; }
const terse_codec_descriptor_t *failing_codec() { return &kTrunc; }

// ---------------------------------------------------------------- world

World::World(const terse_codec_descriptor_t *codec, int n, terse_dtype_t dtype, size_t max_chunk) : n_(n) {
    plugin_.desc = codec;
    plugin_.path = "(test)";
    plugin_.id = name_id(codec->name);
    g_next_index = 0;
    for (int r = 0; r < n; ++r) {
        terse_codec_setup_t setup{};
        setup.struct_size = sizeof setup;
        setup.dtype = dtype;
        setup.mem_kind = TERSE_MEM_HOST;
        setup.nranks = n;
        setup.max_chunk_count = max_chunk;
        void *inst = nullptr;
        char err[128];
        codec->create(nullptr, &setup, &inst, err, sizeof err);
        inst_.push_back(std::make_unique<CodecInstance>(&plugin_, inst, setup));
        fb_.push_back(std::make_unique<FeedbackStore>());
    }
}

World::~World() = default;

std::vector<RankResult> World::run(const RunSpec &spec, const std::vector<std::vector<uint8_t>> &inputs,
                                   bool *hung) {
    const int n = n_;
    const size_t es = dtype_size(spec.dtype);
    Fabric fabric(n, spec.eager);
    Collectives coll(n);
    std::vector<std::unique_ptr<SimLink>> links;
    std::vector<std::unique_ptr<SimControl>> controls;
    std::vector<RankResult> res(n);
    sendbufs_.resize(n);
    recvbufs_.resize(n);
    auto &sendbufs = sendbufs_;
    auto &recvbufs = recvbufs_;
    std::vector<OpHandle> ops(n);
    std::vector<bool> done(n, false);
    CommConfig cfg;
    cfg.algorithm = spec.algorithm;
    cfg.chunk_bytes = spec.chunk_bytes;
    cfg.pipeline_depth = spec.depth;
    const uint32_t seq = seq_++;

    for (int r = 0; r < n; ++r) {
        links.push_back(std::make_unique<SimLink>(&fabric, r));
        controls.push_back(std::make_unique<SimControl>(&coll, r));
        CollArgs a;
        a.kind = spec.kind;
        a.count = spec.count;
        a.dtype = spec.dtype;
        a.op = spec.op;
        a.in_place = spec.in_place;
        const size_t cnt = spec.count;
        // Guard bytes after every buffer catch writes past the end.
        const size_t guard = 64;
        switch (spec.kind) {
        case CollKind::Allreduce:
            recvbufs[r].assign(cnt * es + guard, 0xEE);
            if (spec.in_place) {
                std::memcpy(recvbufs[r].data(), inputs[r].data(), cnt * es);
                a.sendbuf = recvbufs[r].data();
            } else {
                sendbufs[r].assign(inputs[r].begin(), inputs[r].end());
                a.sendbuf = sendbufs[r].data();
            }
            break;
        case CollKind::ReduceScatterBlock:
            if (spec.in_place) {
                recvbufs[r].assign(cnt * n * es + guard, 0xEE);
                std::memcpy(recvbufs[r].data(), inputs[r].data(), cnt * n * es);
                a.sendbuf = recvbufs[r].data();
            } else {
                recvbufs[r].assign(cnt * es + guard, 0xEE);
                sendbufs[r].assign(inputs[r].begin(), inputs[r].end());
                a.sendbuf = sendbufs[r].data();
            }
            break;
        case CollKind::Allgather:
            recvbufs[r].assign(cnt * n * es + guard, 0xEE);
            if (spec.in_place) {
                std::memcpy(recvbufs[r].data() + size_t(r) * cnt * es, inputs[r].data(), cnt * es);
                a.sendbuf = recvbufs[r].data() + size_t(r) * cnt * es;
            } else {
                sendbufs[r].assign(inputs[r].begin(), inputs[r].end());
                a.sendbuf = sendbufs[r].data();
            }
            break;
        }
        a.recvbuf = recvbufs[r].data();
        EngineEnv env;
        env.rank = r;
        env.size = n;
        env.ctx_id = 7;
        env.seq = seq;
        env.codec = inst_[r].get();
        env.feedback = spec.feedback;
        env.residuals = spec.feedback ? fb_[r].get() : nullptr;
        env.stats = &res[r].stats;
        env.link = links[r].get();
        env.control = controls[r].get();
        env.set_comm_name("sim");
        env.device = size_t(r) < spec.device.size() ? spec.device[size_t(r)] : nullptr;
        if (r == spec.inject_rank && terse_engine_test_fail_next(spec.inject) != 0) {
            res[r].status = TERSE_ERR_INVALID;
            res[r].message = std::string("unknown injection ") + spec.inject;
        }
        Status s = engine_start(env, cfg, a, Priority::Normal, &ops[r]);
        if (s != TERSE_OK) {
            res[r].status = s;
            res[r].message = last_error();
            done[r] = true;
        }
    }
    std::mt19937 rng(spec.seed);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    *hung = false;
    for (long round = 0;; ++round) {
        if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
        if (round > 2000000) {
            *hung = true;
            break;
        }
        std::shuffle(order.begin(), order.end(), rng);
        for (int r : order) {
            if (done[r]) continue;
            bool d = false;
            Status s = ops[r]->progress(&d);
            if (d) {
                done[r] = true;
                res[r].status = s;
                res[r].message = s == TERSE_OK ? "" : last_error();
            }
        }
    }
    ops.clear();  // cancels whatever a hung run left
    for (int r = 0; r < n; ++r) {
        size_t out_elems = spec.kind == CollKind::Allgather ? spec.count * n : spec.count;
        res[r].out.assign(recvbufs[r].begin(), recvbufs[r].begin() + out_elems * es);
        size_t total = recvbufs[r].size();
        for (size_t g = total - 64; g < total; ++g)
            if (recvbufs[r][g] != 0xEE) {
                res[r].status = TERSE_ERR_INVALID;
                res[r].message = "write past the end of recvbuf";
            }
    }
    return res;
}

std::vector<std::vector<uint8_t>> make_inputs(terse_dtype_t dt, size_t elems, int n, uint32_t seed) {
    std::vector<std::vector<uint8_t>> in(n);
    const size_t es = dtype_size(dt);
    for (int r = 0; r < n; ++r) {
        std::mt19937 g(seed * 7919u + uint32_t(r));
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        in[r].resize(elems * es);
        for (size_t i = 0; i < elems; ++i) {
            double v = u(g) * (r + 1);
            uint8_t *p = in[r].data() + i * es;
            switch (dt) {
            case TERSE_DTYPE_FLOAT32: {
                float f = float(v);
                std::memcpy(p, &f, 4);
                break;
            }
            case TERSE_DTYPE_FLOAT64: std::memcpy(p, &v, 8); break;
            case TERSE_DTYPE_INT32: {
                int32_t x = int32_t(g() % 2001) - 1000;
                std::memcpy(p, &x, 4);
                break;
            }
            case TERSE_DTYPE_INT64: {
                int64_t x = (int64_t(g()) << 20) - (int64_t(1) << 40);
                std::memcpy(p, &x, 8);
                break;
            }
            case TERSE_DTYPE_FLOAT16: {
                uint16_t h = float_to_half(float(v));
                std::memcpy(p, &h, 2);
                break;
            }
            case TERSE_DTYPE_BFLOAT16: {
                uint16_t h = float_to_bf16(float(v));
                std::memcpy(p, &h, 2);
                break;
            }
            default: break;
            }
        }
    }
    return in;
}

}  // namespace sim
