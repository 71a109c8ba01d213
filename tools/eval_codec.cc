#include "eval_codec.h"

#include "config/config.h"
#include "engine/reduce_kernels.h"
#include "eval_common.h"
#include "engine/stats.h"
#include "util/status.h"

#include <cstring>

namespace terse::eval {

namespace {

terse_codec_call_t make_call(const double *agreed, uint64_t seed) {
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    call.agreed_stats = agreed;
    call.seed = seed;
    call.stream = nullptr;
    return call;
}

[[noreturn]] void fail(CodecInstance &ci, const char *what, int rc) {
    throw EvalError(format("codec %s: %s failed: %s (%d)", ci.desc()->name, what, codec_status_name(rc), rc));
}

}  // namespace

const char *codec_status_name(int rc) {
    switch (rc) {
    case TERSE_CODEC_OK: return "ok";
    case TERSE_CODEC_RAW: return "raw";
    case TERSE_CODEC_ERR_PARAM: return "bad parameter";
    case TERSE_CODEC_ERR_UNSUPPORTED: return "unsupported";
    case TERSE_CODEC_ERR_NOSPACE: return "output too small";
    case TERSE_CODEC_ERR_CORRUPT: return "corrupt payload";
    case TERSE_CODEC_ERR_NOMEM: return "out of memory";
    case TERSE_CODEC_ERR_INTERNAL: return "internal error";
    default: return "unknown status";
    }
}

Codec::Codec(const std::string &spec_text) : label_(spec_text) {
    CodecSpec spec;
    if (codec_spec_parse(spec_text, "--codec", &spec) != TERSE_OK) throw EvalError(last_error());
    Registry &reg = Registry::instance();
    if (reg.find(spec.name, &plugin_) != TERSE_OK) throw EvalError(last_error());
    if (reg.parse_params(spec, &params_) != TERSE_OK) throw EvalError(last_error());
}

CodecInstance &Codec::instance(terse_dtype_t dt, int nranks, size_t max_chunk_count) {
    auto key = std::make_tuple(int(dt), nranks, max_chunk_count);
    auto it = instances_.find(key);
    if (it != instances_.end()) return *it->second;
    terse_codec_setup_t setup{};
    setup.struct_size = sizeof setup;
    setup.dtype = dt;
    setup.mem_kind = TERSE_MEM_HOST;
    setup.nranks = nranks;
    setup.max_chunk_count = max_chunk_count;
    std::unique_ptr<CodecInstance> inst;
    if (Registry::instance().create(*params_, setup, &inst) != TERSE_OK)
        throw EvalError(format("codec %s: %s", label_.c_str(), last_error()));
    return *instances_.emplace(key, std::move(inst)).first->second;
}

std::vector<double> chunk_stats(CodecInstance &ci, const void *src, size_t n, uint64_t seed) {
    const terse_codec_descriptor_t *d = ci.desc();
    if (!d->stats_count || !d->stats)
        throw EvalError(format("codec %s is SUMMABLE but has no stats callbacks", d->name));
    std::vector<double> out(d->stats_count(ci.get(), n));
    terse_codec_call_t call = make_call(nullptr, seed);
    int rc = d->stats(ci.get(), src, n, out.data(), &call);
    if (rc != TERSE_CODEC_OK) fail(ci, "stats", rc);
    return out;
}

Payload encode_chunk(CodecInstance &ci, const void *src, size_t n, const double *agreed, uint64_t seed,
                     double *seconds, size_t cap) {
    const terse_codec_descriptor_t *d = ci.desc();
    Payload p;
    p.bytes.resize(cap ? cap : d->max_encoded_size(ci.get(), n));
    terse_codec_call_t call = make_call(agreed, seed);
    size_t len = 0;
    double t0 = now_seconds();
    int rc = d->encode(ci.get(), src, n, p.bytes.data(), p.bytes.size(), &len, &call);
    if (seconds) *seconds += now_seconds() - t0;
    if (rc == TERSE_CODEC_RAW) {
        size_t bytes = n * dtype_size(ci.setup().dtype);
        p.raw = true;
        p.bytes.assign(static_cast<const unsigned char *>(src), static_cast<const unsigned char *>(src) + bytes);
        return p;
    }
    if (rc != TERSE_CODEC_OK) fail(ci, "encode", rc);
    if (len > p.bytes.size())
        throw EvalError(format("codec %s: encode reports %zu bytes, more than the %zu it was given", d->name, len,
                               p.bytes.size()));
    p.bytes.resize(len);
    return p;
}

void decode_chunk(CodecInstance &ci, const Payload &p, void *dst, size_t n, bool accumulate, terse_op_t op,
                  const double *agreed, uint64_t seed, double *seconds) {
    terse_dtype_t dt = ci.setup().dtype;
    double t0 = now_seconds();
    if (p.raw) {
        if (accumulate) reduce_inplace(dt, op, dst, p.bytes.data(), n);
        else memcpy(dst, p.bytes.data(), n * dtype_size(dt));
    } else {
        terse_codec_call_t call = make_call(agreed, seed);
        int rc = ci.desc()->decode(ci.get(), p.bytes.data(), p.bytes.size(), dst, n, accumulate ? 1 : 0, op,
                                   &call);
        if (rc != TERSE_CODEC_OK) fail(ci, "decode", rc);
    }
    if (seconds) *seconds += now_seconds() - t0;
}

bool combine_chunks(CodecInstance &ci, const Payload &a, const Payload &b, size_t n, const double *agreed,
                    uint64_t seed, Payload *result, size_t cap) {
    const terse_codec_descriptor_t *d = ci.desc();
    if (!d->combine) throw EvalError(format("codec %s is SUMMABLE but has no combine", d->name));
    Payload out;
    out.contributors = a.contributors + b.contributors;
    out.bytes.resize(cap ? cap : d->max_encoded_size(ci.get(), n));
    terse_codec_call_t call = make_call(agreed, seed);
    size_t len = 0;
    int rc = d->combine(ci.get(), a.bytes.data(), a.bytes.size(), a.contributors, b.bytes.data(), b.bytes.size(),
                        b.contributors, n, out.bytes.data(), out.bytes.size(), &len, &call);
    if (rc == TERSE_CODEC_RAW) return false;
    if (rc != TERSE_CODEC_OK) fail(ci, "combine", rc);
    out.bytes.resize(len);
    *result = std::move(out);
    return true;
}

}  // namespace terse::eval
