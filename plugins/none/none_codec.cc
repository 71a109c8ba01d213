// The lossless reference codec: the payload is the chunk's elements as they
// are (little-endian, the host order).  It is what terse runs when no codec
// is configured, the baseline every other codec is measured against, and the
// only codec offered MAX/MIN and integer reductions.
//
// MAX and MIN use the plain comparisons
//     max(acc, in) = acc > in ? acc : in      min(acc, in) = acc < in ? acc : in
// for every dtype, so a NaN arriving in `in` always replaces the accumulator
// and a NaN already in the accumulator is replaced by any incoming value.
// MPI does not specify NaN behaviour for MPI_MAX/MPI_MIN; this choice is
// deterministic, matches x86 maxps/minps (so it vectorises) and, because the
// engine reduces each chunk once and forwards the result, every rank still
// receives the same bits.
#include <terse/codec.h>

#if defined(TERSE_NONE_CUDA)
#include "none_device.h"
#endif

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <type_traits>

namespace {

struct NoneInstance {
    terse_dtype_t dtype;
    size_t elem_size;
    terse_mem_kind_t mem;  // TERSE_MEM_CUDA: none_device.h does the work
};

// Device memory too in a build with the device part (none_device.cu).
#if defined(TERSE_NONE_CUDA)
constexpr uint32_t kMemKinds = TERSE_MEM_HOST | TERSE_MEM_CUDA;
#else
constexpr uint32_t kMemKinds = TERSE_MEM_HOST;
#endif

constexpr uint32_t kDtypes = TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64) |
                             TERSE_DTYPE_BIT(TERSE_DTYPE_INT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_INT64);

size_t elem_size(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32:
    case TERSE_DTYPE_INT32: return 4;
    case TERSE_DTYPE_FLOAT64:
    case TERSE_DTYPE_INT64: return 8;
    default: return 0;
    }
}

void message(char *err, size_t errlen, const char *fmt, const char *arg) {
    if (err && errlen) snprintf(err, errlen, fmt, arg);
}

// ---------------------------------------------------------------- kernels
// Separate restrict-qualified loops per (type, op) so that the compiler
// vectorises each one.  The body runs over fixed-size blocks because GCC's
// -O2 cost model only vectorises loops that need no scalar epilogue; the
// remainder is a short scalar loop.  Integer sums wrap (computed in the
// unsigned type, where overflow is defined), as MPI libraries do in practice.

constexpr size_t kBlockBytes = 64;

template <typename T, typename F>
inline void blocked(T *__restrict dst, const T *__restrict src, size_t n, F f) {
    constexpr size_t kBlock = kBlockBytes / sizeof(T);
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
        T *__restrict d = dst + i;
        const T *__restrict s = src + i;
        for (size_t j = 0; j < kBlock; j++) d[j] = f(d[j], s[j]);
    }
    for (; i < n; i++) dst[i] = f(dst[i], src[i]);
}

template <typename T>
void add(T *__restrict dst, const T *__restrict src, size_t n) {
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        blocked(dst, src, n, [](T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); });
    } else {
        blocked(dst, src, n, [](T a, T b) { return a + b; });
    }
}

template <typename T>
void max(T *__restrict dst, const T *__restrict src, size_t n) {
    blocked(dst, src, n, [](T a, T b) { return a > b ? a : b; });
}

template <typename T>
void min(T *__restrict dst, const T *__restrict src, size_t n) {
    blocked(dst, src, n, [](T a, T b) { return a < b ? a : b; });
}

template <typename T>
int accumulate(void *dst, const void *src, size_t n, terse_op_t op) {
    T *d = static_cast<T *>(dst);
    const T *s = static_cast<const T *>(src);
    switch (op) {
    case TERSE_OP_SUM: add(d, s, n); return TERSE_CODEC_OK;
    case TERSE_OP_MAX: max(d, s, n); return TERSE_CODEC_OK;
    case TERSE_OP_MIN: min(d, s, n); return TERSE_CODEC_OK;
    }
    return TERSE_CODEC_ERR_UNSUPPORTED;
}

// ---------------------------------------------------------------- callbacks

extern "C" {

static int none_parse(const terse_codec_kv_t *kv, size_t nkv, void **params, char *err, size_t errlen) {
    *params = nullptr;
    if (nkv > 0) {
        message(err, errlen, "unknown key '%s' (accepted: none; this codec takes no parameters)",
                kv[0].key ? kv[0].key : "");
        return TERSE_CODEC_ERR_PARAM;
    }
    return TERSE_CODEC_OK;
}

static void none_free_params(void *) {}

static size_t none_params_string(const void *, char *buf, size_t buflen) {
    if (buf && buflen) buf[0] = '\0';
    return 0;
}

static int none_create(const void *, const terse_codec_setup_t *setup, void **instance, char *err,
                       size_t errlen) {
    *instance = nullptr;
    const size_t size = elem_size(setup->dtype);
    if (size == 0) {
        if (err && errlen)
            snprintf(err, errlen, "dtype %d not supported (accepted: float32, float64, int32, int64)",
                     static_cast<int>(setup->dtype));
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    if (setup->mem_kind != TERSE_MEM_HOST &&
        !(setup->mem_kind == TERSE_MEM_CUDA && (kMemKinds & TERSE_MEM_CUDA))) {
        message(err, errlen, "%s",
                (kMemKinds & TERSE_MEM_CUDA) ? "memory kind not supported (accepted: host, cuda)"
                                             : "only host memory is supported");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    auto *inst = new (std::nothrow) NoneInstance{setup->dtype, size, setup->mem_kind};
    if (!inst) return TERSE_CODEC_ERR_NOMEM;
    *instance = inst;
    return TERSE_CODEC_OK;
}

static void none_destroy(void *instance) { delete static_cast<NoneInstance *>(instance); }

static size_t none_max_encoded_size(void *instance, size_t count) {
    return count * static_cast<NoneInstance *>(instance)->elem_size;
}

static int none_encode(void *instance, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                       const terse_codec_call_t *call) {
    const size_t size = static_cast<NoneInstance *>(instance)->elem_size;
    if (count > SIZE_MAX / size || count * size > dst_cap) return TERSE_CODEC_ERR_NOSPACE;
    const size_t n = count * size;
#if defined(TERSE_NONE_CUDA)
    if (static_cast<NoneInstance *>(instance)->mem == TERSE_MEM_CUDA) {
        const int rc = terse_none::cuda_copy(dst, src, n, call ? call->stream : nullptr);
        if (rc == TERSE_CODEC_OK) *dst_len = n;
        return rc;
    }
#else
    (void)call;
#endif
    if (n) std::memcpy(dst, src, n);
    *dst_len = n;
    return TERSE_CODEC_OK;
}

static int none_decode(void *instance, const void *src, size_t src_len, void *dst, size_t count,
                       int accumulate_into, terse_op_t op, const terse_codec_call_t *call) {
    const auto *inst = static_cast<NoneInstance *>(instance);
    if (count > SIZE_MAX / inst->elem_size || src_len != count * inst->elem_size) return TERSE_CODEC_ERR_CORRUPT;
#if defined(TERSE_NONE_CUDA)
    if (inst->mem == TERSE_MEM_CUDA) {
        void *stream = call ? call->stream : nullptr;
        if (!accumulate_into) return terse_none::cuda_copy(dst, src, src_len, stream);
        return terse_none::cuda_reduce(terse_codec::ReduceJob{dst, src, count, inst->dtype, op}, stream);
    }
#else
    (void)call;
#endif
    if (!accumulate_into) {
        if (src_len) std::memmove(dst, src, src_len);
        return TERSE_CODEC_OK;
    }
    switch (inst->dtype) {
    case TERSE_DTYPE_FLOAT32: return accumulate<float>(dst, src, count, op);
    case TERSE_DTYPE_FLOAT64: return accumulate<double>(dst, src, count, op);
    case TERSE_DTYPE_INT32: return accumulate<int32_t>(dst, src, count, op);
    case TERSE_DTYPE_INT64: return accumulate<int64_t>(dst, src, count, op);
    default: return TERSE_CODEC_ERR_UNSUPPORTED;
    }
}

}  // extern "C"

const terse_codec_descriptor_t kNoneDescriptor = {
    TERSE_CODEC_ABI_VERSION,
    sizeof(terse_codec_descriptor_t),
    "none",
    "lossless: sends the data as it is",
    "no parameters",
    kDtypes,
    kMemKinds,
    // The payload is the elements themselves: the engine may skip encode/decode.
    TERSE_CODEC_FLAG_LOSSLESS | TERSE_CODEC_FLAG_IDENTITY,
    TERSE_REDUCE_RECOMPRESS,
    none_parse,
    none_free_params,
    none_params_string,
    none_create,
    none_destroy,
    none_max_encoded_size,
    nullptr,  // stats_count
    nullptr,  // stats
    none_encode,
    none_decode,
    nullptr,  // combine
    nullptr,  // error_bound: lossless
    nullptr,  // error_contract: lossless, so the engine knows its bound (0)
    nullptr,  // device_workspace_size: the copies and the reduction need none
    {},
};

}  // namespace

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) {
    return &kNoneDescriptor;
}
