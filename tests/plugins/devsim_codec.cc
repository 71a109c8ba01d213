// A summable lossy codec that offers TERSE_MEM_CUDA without a GPU, for the
// tests of the engine's device codec path (tests/test_device_engine.sh).
// Its device instance emulates kernels through the CUDA driver's
// synchronous copies (dlopen'ed libcuda.so.1: the fake driver of
// tests/fake_cuda under make check, whose device memory no host code may
// touch, or a real one): it waits for call->stream, copies its device
// inputs to host scratch made at create, runs the host code and copies its
// outputs back.  So its device payloads are the host instance's bytes, as
// the ABI asks of device codecs, and a test passing under the fake driver
// shows that the engine handed it device memory only where the ABI says.
//
// The code: one statistic per chunk, max |x| over its finite elements
// (agreed with MAX across ranks: m); each element becomes round(x / m *
// 127), a signed byte.  A payload is one byte w (the code width: 1, 2 or
// 4 bytes) and count codes of w bytes; combine adds codes, widening them
// as the contributors need (127 per rank).  A chunk holding a non-finite
// value is sent raw.  float32 and float64.  No parameters.
#include <terse/codec.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

namespace {

using cu_result = int;
using cu_ptr = unsigned long long;

struct Driver {
    cu_result (*htod)(cu_ptr, const void *, size_t) = nullptr;
    cu_result (*dtoh)(void *, cu_ptr, size_t) = nullptr;
    cu_result (*sync)(void *) = nullptr;
    bool ok = false;
};

const Driver &driver() {
    static const Driver d = [] {
        Driver r;
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return r;
        r.htod = reinterpret_cast<decltype(r.htod)>(dlsym(lib, "cuMemcpyHtoD_v2"));
        r.dtoh = reinterpret_cast<decltype(r.dtoh)>(dlsym(lib, "cuMemcpyDtoH_v2"));
        r.sync = reinterpret_cast<decltype(r.sync)>(dlsym(lib, "cuStreamSynchronize"));
        r.ok = r.htod && r.dtoh && r.sync;
        return r;
    }();
    return d;
}

struct Instance {
    terse_dtype_t dtype;
    bool device;
    size_t max_count;
    // Device instances: host copies of a call's inputs and outputs.
    std::vector<uint8_t> in_a, in_b, out;
};

size_t esize(terse_dtype_t dt) { return dt == TERSE_DTYPE_FLOAT64 ? 8 : 4; }
size_t payload_size(size_t n, unsigned w) { return 1 + n * w; }
unsigned width_for(long long contributors) { return contributors <= 1 ? 1 : contributors <= 258 ? 2 : 4; }

long long code_at(const uint8_t *p, unsigned w, size_t i) {
    if (w == 1) return int8_t(p[i]);
    if (w == 2) {
        int16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        return v;
    }
    int32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
}
void put_code(uint8_t *p, unsigned w, size_t i, long long v) {
    if (w == 1) p[i] = uint8_t(int8_t(v));
    else if (w == 2) {
        const int16_t s = int16_t(v);
        std::memcpy(p + 2 * i, &s, 2);
    } else {
        const int32_t s = int32_t(v);
        std::memcpy(p + 4 * i, &s, 4);
    }
}

template <class T>
double max_abs(const void *src, size_t n) {
    const T *x = static_cast<const T *>(src);
    double m = 0;
    for (size_t i = 0; i < n; ++i)
        if (std::isfinite(double(x[i])) && std::fabs(double(x[i])) > m) m = std::fabs(double(x[i]));
    return m;
}

template <class T>
int encode_as(const void *src, size_t n, double m, uint8_t *dst, size_t cap, size_t *len) {
    const T *x = static_cast<const T *>(src);
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(double(x[i]))) return TERSE_CODEC_RAW;
    if (payload_size(n, 1) > cap) return TERSE_CODEC_ERR_NOSPACE;
    dst[0] = 1;
    for (size_t i = 0; i < n; ++i) {
        long long q = m > 0 ? std::llround(double(x[i]) / m * 127.0) : 0;
        if (q > 127) q = 127;
        if (q < -127) q = -127;
        put_code(dst + 1, 1, i, q);
    }
    *len = payload_size(n, 1);
    return TERSE_CODEC_OK;
}

template <class T>
void decode_as(const uint8_t *p, unsigned w, size_t n, double m, void *dst, int accumulate) {
    T *y = static_cast<T *>(dst);
    for (size_t i = 0; i < n; ++i) {
        const T v = T(double(code_at(p, w, i)) * m / 127.0);
        y[i] = accumulate ? T(y[i] + v) : v;
    }
}

// The host code of each callback, on host pointers.
int host_encode(const Instance &in, const void *src, size_t n, double m, uint8_t *dst, size_t cap, size_t *len) {
    return in.dtype == TERSE_DTYPE_FLOAT64 ? encode_as<double>(src, n, m, dst, cap, len)
                                           : encode_as<float>(src, n, m, dst, cap, len);
}
int host_decode(const Instance &in, const uint8_t *p, size_t len, void *dst, size_t n, double m, int accumulate) {
    if (len < 1) return TERSE_CODEC_ERR_CORRUPT;
    const unsigned w = p[0];
    if ((w != 1 && w != 2 && w != 4) || len != payload_size(n, w)) return TERSE_CODEC_ERR_CORRUPT;
    if (in.dtype == TERSE_DTYPE_FLOAT64) decode_as<double>(p + 1, w, n, m, dst, accumulate);
    else decode_as<float>(p + 1, w, n, m, dst, accumulate);
    return TERSE_CODEC_OK;
}
int host_combine(const uint8_t *a, size_t a_len, int ac, const uint8_t *b, size_t b_len, int bc, size_t n,
                 uint8_t *out, size_t cap, size_t *out_len) {
    if (a_len < 1 || b_len < 1) return TERSE_CODEC_ERR_CORRUPT;
    const unsigned wa = a[0], wb = b[0], w = width_for((long long)ac + bc);
    if ((wa != 1 && wa != 2 && wa != 4) || (wb != 1 && wb != 2 && wb != 4) || a_len != payload_size(n, wa) ||
        b_len != payload_size(n, wb))
        return TERSE_CODEC_ERR_CORRUPT;
    if (payload_size(n, w) > cap) return TERSE_CODEC_ERR_NOSPACE;
    out[0] = uint8_t(w);
    for (size_t i = 0; i < n; ++i) put_code(out + 1, w, i, code_at(a + 1, wa, i) + code_at(b + 1, wb, i));
    *out_len = payload_size(n, w);
    return TERSE_CODEC_OK;
}

// Device instances: the "kernel" runs after the work queued on the stream.
bool dev_ready(const terse_codec_call_t *call) {
    const Driver &d = driver();
    return d.ok && call && call->stream && d.sync(call->stream) == 0;
}
bool to_host(void *h, const void *dev, size_t n) { return n == 0 || driver().dtoh(h, cu_ptr(dev), n) == 0; }
bool to_dev(void *dev, const void *h, size_t n) { return n == 0 || driver().htod(cu_ptr(dev), h, n) == 0; }
double agreed(const Instance &in, const terse_codec_call_t *call, bool *ok) {
    double m = 0;
    *ok = call && call->agreed_stats && (!in.device || to_host(&m, call->agreed_stats, sizeof m));
    if (*ok && !in.device) m = call->agreed_stats[0];
    return m;
}

extern "C" {
static int ds_parse(const terse_codec_kv_t *kv, size_t nkv, void **params, char *err, size_t errlen) {
    *params = nullptr;
    if (nkv) {
        snprintf(err, errlen, "%s='%s' not accepted (devsim takes no parameters)", kv[0].key, kv[0].value);
        return TERSE_CODEC_ERR_PARAM;
    }
    *params = new (std::nothrow) int(0);
    return *params ? TERSE_CODEC_OK : TERSE_CODEC_ERR_NOMEM;
}
static void ds_free_params(void *p) { delete static_cast<int *>(p); }
static size_t ds_params_string(const void *, char *buf, size_t n) {
    if (n) buf[0] = '\0';
    return 0;
}
static int ds_create(const void *, const terse_codec_setup_t *setup, void **inst, char *err, size_t errlen) {
    const bool device = setup->mem_kind == TERSE_MEM_CUDA;
    if (device && !driver().ok) {
        snprintf(err, errlen, "devsim: no CUDA driver (libcuda.so.1) to emulate device kernels with");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    Instance *in = new (std::nothrow) Instance{setup->dtype, device, setup->max_chunk_count, {}, {}, {}};
    if (!in) return TERSE_CODEC_ERR_NOMEM;
    if (device) {
        const size_t bytes = payload_size(setup->max_chunk_count, 4) +
                             setup->max_chunk_count * esize(setup->dtype);
        try {
            in->in_a.resize(bytes);
            in->in_b.resize(bytes);
            in->out.resize(bytes);
        } catch (...) {
            delete in;
            return TERSE_CODEC_ERR_NOMEM;
        }
    }
    *inst = in;
    return TERSE_CODEC_OK;
}
static void ds_destroy(void *inst) { delete static_cast<Instance *>(inst); }
static size_t ds_max_encoded_size(void *, size_t count) { return payload_size(count, 4); }
static size_t ds_stats_count(void *, size_t) { return 1; }
static int ds_stats(void *inst, const void *src, size_t n, double *out, const terse_codec_call_t *call) {
    Instance &in = *static_cast<Instance *>(inst);
    const void *x = src;
    if (in.device) {
        if (n > in.max_count || !dev_ready(call) || !to_host(in.in_a.data(), src, n * esize(in.dtype)))
            return TERSE_CODEC_ERR_INTERNAL;
        x = in.in_a.data();
    }
    const double m = in.dtype == TERSE_DTYPE_FLOAT64 ? max_abs<double>(x, n) : max_abs<float>(x, n);
    if (!in.device) {
        *out = m;
        return TERSE_CODEC_OK;
    }
    return to_dev(out, &m, sizeof m) ? TERSE_CODEC_OK : TERSE_CODEC_ERR_INTERNAL;
}
static int ds_encode(void *inst, const void *src, size_t n, void *dst, size_t cap, size_t *len,
                     const terse_codec_call_t *call) {
    Instance &in = *static_cast<Instance *>(inst);
    bool ok = false;
    const double m = agreed(in, call, &ok);
    if (!ok) return TERSE_CODEC_ERR_INTERNAL;
    if (!in.device) return host_encode(in, src, n, m, static_cast<uint8_t *>(dst), cap, len);
    if (n > in.max_count || !dev_ready(call) || !to_host(in.in_a.data(), src, n * esize(in.dtype)))
        return TERSE_CODEC_ERR_INTERNAL;
    const int rc = host_encode(in, in.in_a.data(), n, m, in.out.data(), cap, len);
    if (rc != TERSE_CODEC_OK) return rc;
    return to_dev(dst, in.out.data(), *len) ? TERSE_CODEC_OK : TERSE_CODEC_ERR_INTERNAL;
}
static int ds_decode(void *inst, const void *src, size_t len, void *dst, size_t n, int accumulate, terse_op_t op,
                     const terse_codec_call_t *call) {
    Instance &in = *static_cast<Instance *>(inst);
    if (op != TERSE_OP_SUM) return TERSE_CODEC_ERR_UNSUPPORTED;
    bool ok = false;
    const double m = agreed(in, call, &ok);
    if (!ok) return TERSE_CODEC_ERR_INTERNAL;
    if (!in.device) return host_decode(in, static_cast<const uint8_t *>(src), len, dst, n, m, accumulate);
    const size_t out_bytes = n * esize(in.dtype);
    if (n > in.max_count || len > in.in_a.size() || !dev_ready(call) || !to_host(in.in_a.data(), src, len) ||
        (accumulate && !to_host(in.out.data(), dst, out_bytes)))
        return TERSE_CODEC_ERR_INTERNAL;
    const int rc = host_decode(in, in.in_a.data(), len, in.out.data(), n, m, accumulate);
    if (rc != TERSE_CODEC_OK) return rc;
    return to_dev(dst, in.out.data(), out_bytes) ? TERSE_CODEC_OK : TERSE_CODEC_ERR_INTERNAL;
}
static int ds_combine(void *inst, const void *a, size_t a_len, int ac, const void *b, size_t b_len, int bc,
                      size_t n, void *out, size_t cap, size_t *out_len, const terse_codec_call_t *call) {
    Instance &in = *static_cast<Instance *>(inst);
    if (!in.device)
        return host_combine(static_cast<const uint8_t *>(a), a_len, ac, static_cast<const uint8_t *>(b), b_len,
                            bc, n, static_cast<uint8_t *>(out), cap, out_len);
    if (a_len > in.in_a.size() || b_len > in.in_b.size() || !dev_ready(call) ||
        !to_host(in.in_a.data(), a, a_len) || !to_host(in.in_b.data(), b, b_len))
        return TERSE_CODEC_ERR_INTERNAL;
    const int rc = host_combine(in.in_a.data(), a_len, ac, in.in_b.data(), b_len, bc, n, in.out.data(),
                                std::min(cap, in.out.size()), out_len);
    if (rc != TERSE_CODEC_OK) return rc;
    return to_dev(out, in.out.data(), *out_len) ? TERSE_CODEC_OK : TERSE_CODEC_ERR_INTERNAL;
}
static size_t ds_device_workspace_size(void *) { return 0; }
}  // extern "C"

terse_codec_descriptor_t make() {
    terse_codec_descriptor_t d = {};
    d.abi_version = TERSE_CODEC_ABI_VERSION;
    d.struct_size = sizeof d;
    d.name = "devsim";
    d.description = "8-bit summable codes whose device instance emulates kernels with driver copies (tests)";
    d.params_help = "no parameters";
    d.dtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64);
    d.mem_kinds = TERSE_MEM_HOST | TERSE_MEM_CUDA;
    d.flags = 0;  // lossy
    d.mode = TERSE_REDUCE_SUMMABLE;
    d.parse = ds_parse;
    d.free_params = ds_free_params;
    d.params_string = ds_params_string;
    d.create = ds_create;
    d.destroy = ds_destroy;
    d.max_encoded_size = ds_max_encoded_size;
    d.stats_count = ds_stats_count;
    d.stats = ds_stats;
    d.encode = ds_encode;
    d.decode = ds_decode;
    d.combine = ds_combine;
    d.device_workspace_size = ds_device_workspace_size;
    return d;
}

const terse_codec_descriptor_t kDesc = make();

}  // namespace

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) { return &kDesc; }
