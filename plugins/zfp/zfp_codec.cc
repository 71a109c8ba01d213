// zfp: wraps libzfp's 1-D fixed-rate, fixed-accuracy and fixed-precision
// modes.  Reduction mode recompress (decode, add, re-encode at every hop, as
// MVAPICH-Plus does), so error grows with the number of hops; see
// terse_codec_zfp(7) for the contract.
//
// Payload (inside the engine's checked frame), little-endian:
//   offset size field
//        0    1 format version (1)
//        1    1 dtype (terse_dtype_t; must match the instance)
//        2    1 mode (0 rate, 1 accuracy, 2 precision; must match)
//        3    1 reserved (0)
//        4    4 length of the zfp stream in bytes (whole libzfp stream words)
//        8    8 mode parameter: bits per block (rate), tolerance as IEEE
//               double bits (accuracy) or bit planes (precision); must match
//       16    8 element count (must match the decode call)
//       24      the zfp stream (no zfp header)
//
// libzfp never bounds-checks its bit stream, so the decoder does: in
// fixed-rate mode the stream length is known exactly and checked; in the
// variable modes the stream is copied into a zero-padded buffer that holds
// the most a decoder can read (every block reads at most maxbits, which is
// set to zfp's own per-block worst case on both sides), and a stream that
// claims to need more than it holds is rejected.
//
// An instance is used by one thread at a time.
#include "zfp_params.h"

#include "../common/c_abi.h"

#include <terse/codec.h>

#include <zfp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace terse_zfp {
namespace {

constexpr size_t kHeaderSize = 24;
constexpr uint8_t kFormatVersion = 1;

struct Instance {
    Params params;
    terse_dtype_t dtype;
    zfp_type type;
    size_t vsize;
    size_t max_count;
    uint64_t mode_param = 0;  // as stored in the header
    zfp_stream *zs = nullptr;
    zfp_field *field = nullptr;
    std::vector<unsigned char> scratch;      // decoded values for accumulate
    std::vector<unsigned char> stream_copy;  // zero-padded stream, variable modes

    ~Instance() {
        if (field) zfp_field_free(field);
        if (zs) zfp_stream_close(zs);
    }
};

// RAII for the per-call bit stream (zfp 1.0 cannot re-target one).
struct BitStream {
    bitstream *bs;
    BitStream(void *p, size_t n) : bs(stream_open(p, n)) {}
    ~BitStream() {
        if (bs) stream_close(bs);
    }
};

void message(char *err, size_t errlen, const char *text) {
    if (err && errlen) snprintf(err, errlen, "%s", text);
}

void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i));
}
void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = uint8_t(v >> (8 * i));
}
uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= uint32_t(p[i]) << (8 * i);
    return v;
}
uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= uint64_t(p[i]) << (8 * i);
    return v;
}

size_t zfp_max_bytes(Instance *in, size_t count) {
    zfp_field_set_size_1d(in->field, count);
    return zfp_stream_maximum_size(in->zs, in->field);
}

// libzfp's bit stream word (8 bits in Debian's build, 64 upstream's
// default): streams are flushed to whole words.
uint64_t word_bytes() { return stream_word_bits / 8; }

// Exact stream length in fixed-rate mode: every block takes maxbits bits.
uint64_t fixed_rate_bytes(const Instance *in, uint64_t count) {
    const uint64_t blocks = (count + 3) / 4;
    const uint64_t wbits = stream_word_bits;
    return (blocks * in->zs->maxbits + wbits - 1) / wbits * word_bytes();
}

// Largest |x| of the chunk as a double, or a negative value if the chunk
// holds Inf or NaN.
template <typename T, typename U>
double max_abs(const void *src, size_t n) {
    const U *x = static_cast<const U *>(src);
    constexpr U mask = U(~U(0)) >> 1;
    constexpr U inf = sizeof(U) == 4 ? U(0x7f800000u) : U(0x7ff0000000000000ull);
    U m = 0;
    for (size_t i = 0; i < n; i++) {  // integer max: vectorises, no float traps
        const U a = x[i] & mask;
        m = a > m ? a : m;
    }
    if (m >= inf) return -1.0;
    T f;
    std::memcpy(&f, &m, sizeof f);
    return double(f);
}

// Configure the stream for the parameters, then cap maxbits at zfp's own
// per-block worst case (what zfp_stream_maximum_size assumes), so encoder
// and decoder agree on a bound that also limits a decoder's reads.
bool configure(Instance *in, char *err, size_t errlen) {
    const Params &p = in->params;
    switch (p.mode) {
    case Mode::Rate:
        zfp_stream_set_rate(in->zs, p.rate, in->type, 1, zfp_false);
        in->mode_param = in->zs->maxbits;
        return true;
    case Mode::Accuracy: {
        zfp_stream_set_accuracy(in->zs, p.accuracy);
        uint64_t bits;
        std::memcpy(&bits, &p.accuracy, 8);
        in->mode_param = bits;
        break;
    }
    case Mode::Precision:
        zfp_stream_set_precision(in->zs, p.precision);
        in->mode_param = p.precision;
        break;
    }
    // 64 and 128 blocks: the header slack and the rounding to stream words
    // (at most 64 bits) are the same for both and cancel.
    const size_t a = zfp_max_bytes(in, 256), b = zfp_max_bytes(in, 512);
    const unsigned block_bits = unsigned((b - a) * 8 / 64);
    if (block_bits == 0 || block_bits > in->zs->maxbits) {
        message(err, errlen, "libzfp reported an unexpected per-block bound");
        return false;
    }
    zfp_stream_set_params(in->zs, in->zs->minbits, block_bits, in->zs->maxprec, in->zs->minexp);
    return true;
}

template <typename T, typename U>
int encode_t(Instance *in, const void *src, size_t n, uint8_t *dst, size_t cap, size_t *len) {
    const size_t raw = n * sizeof(T);
    if (n == 0) return TERSE_CODEC_RAW;
    const size_t zmax = zfp_max_bytes(in, n);
    if (in->params.mode == Mode::Rate && kHeaderSize + fixed_rate_bytes(in, n) >= raw) return TERSE_CODEC_RAW;
    const double m = max_abs<T, U>(src, n);
    if (m < 0) return TERSE_CODEC_RAW;  // Inf or NaN: sent as they are
    // zfp works with ~mantissa-width integers relative to each block's
    // largest exponent; below that resolution it cannot honour a tolerance,
    // and only a raw chunk keeps the promise.
    if (in->params.mode == Mode::Accuracy && m > in->params.accuracy * (sizeof(T) == 4 ? 0x1.0p23 : 0x1.0p52))
        return TERSE_CODEC_RAW;
    if (cap < kHeaderSize + zmax) return TERSE_CODEC_ERR_NOSPACE;

    zfp_field_set_pointer(in->field, const_cast<void *>(src));
    BitStream bs(dst + kHeaderSize, cap - kHeaderSize);
    if (!bs.bs) return TERSE_CODEC_ERR_NOMEM;
    zfp_stream_set_bit_stream(in->zs, bs.bs);
    zfp_stream_rewind(in->zs);
    const size_t zlen = zfp_compress(in->zs, in->field);
    zfp_stream_set_bit_stream(in->zs, nullptr);
    if (zlen == 0 || zlen > zmax) return TERSE_CODEC_ERR_INTERNAL;
    if (kHeaderSize + zlen >= raw) return TERSE_CODEC_RAW;

    dst[0] = kFormatVersion;
    dst[1] = uint8_t(in->dtype);
    dst[2] = uint8_t(in->params.mode);
    dst[3] = 0;
    put_u32(dst + 4, uint32_t(zlen));
    put_u64(dst + 8, in->mode_param);
    put_u64(dst + 16, uint64_t(n));
    *len = kHeaderSize + zlen;
    return TERSE_CODEC_OK;
}

template <typename T>
int decode_t(Instance *in, const uint8_t *src, size_t src_len, void *dst, size_t count, int accumulate,
             terse_op_t op) {
    if (src_len < kHeaderSize || count == 0 || count > in->max_count) return TERSE_CODEC_ERR_CORRUPT;
    const uint64_t zlen = get_u32(src + 4);
    if (src[0] != kFormatVersion || src[1] != uint8_t(in->dtype) || src[2] != uint8_t(in->params.mode) ||
        src[3] != 0 || get_u64(src + 8) != in->mode_param || get_u64(src + 16) != uint64_t(count) ||
        zlen + kHeaderSize != src_len || zlen % word_bytes() != 0)
        return TERSE_CODEC_ERR_CORRUPT;
    if (accumulate && op != TERSE_OP_SUM) return TERSE_CODEC_ERR_UNSUPPORTED;

    const size_t zmax = zfp_max_bytes(in, count);
    if (zlen > zmax) return TERSE_CODEC_ERR_CORRUPT;
    const bool fixed_rate = in->params.mode == Mode::Rate;
    void *stream = const_cast<uint8_t *>(src + kHeaderSize);
    size_t stream_cap = size_t(zlen);
    if (fixed_rate) {
        if (zlen != fixed_rate_bytes(in, count)) return TERSE_CODEC_ERR_CORRUPT;
    } else {
        std::memcpy(in->stream_copy.data(), stream, zlen);
        std::memset(in->stream_copy.data() + zlen, 0, zmax + 8 - zlen);
        stream = in->stream_copy.data();
        stream_cap = zmax + 8;
    }

    void *out = accumulate ? static_cast<void *>(in->scratch.data()) : dst;
    zfp_field_set_pointer(in->field, out);
    zfp_field_set_size_1d(in->field, count);
    BitStream bs(stream, stream_cap);
    if (!bs.bs) return TERSE_CODEC_ERR_NOMEM;
    zfp_stream_set_bit_stream(in->zs, bs.bs);
    zfp_stream_rewind(in->zs);
    const size_t used = zfp_decompress(in->zs, in->field);
    const uint64_t read_bits = stream_rtell(bs.bs);
    zfp_stream_set_bit_stream(in->zs, nullptr);
#ifdef TERSE_ZFP_FUZZ_ORACLE
    if (read_bits > uint64_t(stream_cap) * 8) abort();  // libzfp read past the buffer it was given
#endif
    if (used == 0 || read_bits > zlen * 8) return TERSE_CODEC_ERR_CORRUPT;

    if (accumulate) {
        T *__restrict d = static_cast<T *>(dst);
        const T *__restrict s = reinterpret_cast<const T *>(in->scratch.data());
        for (size_t i = 0; i < count; i++) d[i] += s[i];
    }
    return TERSE_CODEC_OK;
}

// ---------------------------------------------------------------- callbacks

extern "C" {

static int zfp_create(const void *params, const terse_codec_setup_t *setup, void **instance, char *err,
                      size_t errlen) {
    *instance = nullptr;
    if (!setup || setup->struct_size < sizeof(terse_codec_setup_t)) {
        message(err, errlen, "setup struct is older than this plugin expects");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    if (setup->dtype != TERSE_DTYPE_FLOAT32 && setup->dtype != TERSE_DTYPE_FLOAT64) {
        message(err, errlen, "datatype not supported (accepted: float32, float64)");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    if (setup->mem_kind != TERSE_MEM_HOST) {
        message(err, errlen, "only host memory is supported");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    const Params &p = *static_cast<const Params *>(params);
    // libzfp scales each block by 2^(mantissa bits - exponent) in the input
    // type; for blocks below ~2^-97 (float32) / ~2^-961 (float64) that scale
    // overflows and such blocks come back with errors up to ~2^-95 / ~2^-959.
    // Tolerances below the floors cannot be promised.
    const double floor_tol = setup->dtype == TERSE_DTYPE_FLOAT32 ? 0x1.0p-90 : 0x1.0p-900;
    if (p.mode == Mode::Accuracy && p.accuracy < floor_tol) {
        if (err && errlen)
            snprintf(err, errlen, "accuracy=%g is below what zfp can honour for %s (accepted: accuracy >= %g)",
                     p.accuracy, setup->dtype == TERSE_DTYPE_FLOAT32 ? "float32" : "float64", floor_tol);
        return TERSE_CODEC_ERR_PARAM;
    }
    if (setup->dtype == TERSE_DTYPE_FLOAT32 && p.mode == Mode::Rate && p.rate > 32) {
        if (err && errlen)
            snprintf(err, errlen,
                     "rate=%g is out of range for float32 (accepted: 1 <= rate <= 32, bits per value)", p.rate);
        return TERSE_CODEC_ERR_PARAM;
    }
    try {
        auto *in = new Instance;
        std::unique_ptr<Instance> owner(in);
        in->params = p;
        in->dtype = setup->dtype;
        in->type = setup->dtype == TERSE_DTYPE_FLOAT32 ? zfp_type_float : zfp_type_double;
        in->vsize = setup->dtype == TERSE_DTYPE_FLOAT32 ? 4 : 8;
        in->max_count = setup->max_chunk_count;
        in->zs = zfp_stream_open(nullptr);
        in->field = zfp_field_alloc();
        if (!in->zs || !in->field) throw std::bad_alloc();
        zfp_field_set_type(in->field, in->type);
        if (!zfp_stream_set_execution(in->zs, zfp_exec_serial) || !configure(in, err, errlen))
            return TERSE_CODEC_ERR_INTERNAL;
        in->scratch.resize(in->max_count * in->vsize);
        if (p.mode != Mode::Rate) in->stream_copy.resize(zfp_max_bytes(in, in->max_count) + 8);
        *instance = owner.release();
        return TERSE_CODEC_OK;
    } catch (const std::bad_alloc &) {
        message(err, errlen, "out of memory for the zfp stream and scratch buffers");
        return TERSE_CODEC_ERR_NOMEM;
    } catch (...) {
        message(err, errlen, "internal error while creating an instance");
        return TERSE_CODEC_ERR_INTERNAL;
    }
}

static size_t zfp_max_encoded_size(void *instance, size_t count) {
    return kHeaderSize + zfp_max_bytes(static_cast<Instance *>(instance), count);
}

static int zfp_encode(void *instance, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
                      const terse_codec_call_t *) {
    auto *in = static_cast<Instance *>(instance);
    if (count > in->max_count) return TERSE_CODEC_ERR_INTERNAL;  // the engine promised max_chunk_count
    auto *d = static_cast<uint8_t *>(dst);
    if (in->dtype == TERSE_DTYPE_FLOAT32) return encode_t<float, uint32_t>(in, src, count, d, dst_cap, dst_len);
    return encode_t<double, uint64_t>(in, src, count, d, dst_cap, dst_len);
}

static int zfp_decode(void *instance, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
                      terse_op_t op, const terse_codec_call_t *) {
    auto *in = static_cast<Instance *>(instance);
    const auto *s = static_cast<const uint8_t *>(src);
    if (in->dtype == TERSE_DTYPE_FLOAT32) return decode_t<float>(in, s, src_len, dst, count, accumulate, op);
    return decode_t<double>(in, s, src_len, dst, count, accumulate, op);
}

}  // extern "C"

const terse_codec_descriptor_t kDescriptor = {
    TERSE_CODEC_ABI_VERSION,
    sizeof(terse_codec_descriptor_t),
    "zfp",
    "libzfp 1-D fixed-rate / fixed-accuracy / fixed-precision compression, recompressed at every hop",
    kParamsHelp,
    TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT32) | TERSE_DTYPE_BIT(TERSE_DTYPE_FLOAT64),
    TERSE_MEM_HOST,
    0,
    TERSE_REDUCE_RECOMPRESS,
    terse_codec::parse_callback<Params>,
    terse_codec::free_params_callback<Params>,
    terse_codec::params_string_callback<Params>,
    zfp_create,
    terse_codec::destroy_callback<Instance>,
    zfp_max_encoded_size,
    nullptr,
    nullptr,
    zfp_encode,
    zfp_decode,
    nullptr,
    nullptr,  // error_bound: none stated (terse_codec_zfp(7))
    nullptr,  // error_contract: none stated
    nullptr,  // device_workspace_size: host only
    {},
};

}  // namespace
}  // namespace terse_zfp

extern "C" TERSE_CODEC_EXPORT const terse_codec_descriptor_t *terse_codec_entry_v1(void) {
    return &terse_zfp::kDescriptor;
}
