// Typed element buffers and the reference arithmetic the lossy codec tests
// check results against (exact double sums, ulps of the output type), and
// instances of the linked-in kernel-table codecs (quantize, errbound) on a
// chosen code path.
#pragma once

#include "../plugins/common/elem.h"
#include "../plugins/common/half.h"
#include "../plugins/common/isa.h"

#include <terse/codec.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace codec_test {

// count elements of a floating dtype, stored as the raw bytes a codec sees.
struct Buf {
    terse_dtype_t dt = TERSE_DTYPE_FLOAT32;
    size_t n = 0;
    std::vector<uint8_t> bytes;

    Buf() = default;
    Buf(terse_dtype_t d, size_t count) : dt(d), n(count), bytes(count * terse_codec::dtype_bytes(d) + 64, 0) {}

    // Data start: offset by `misalign` bytes from the vector's start to test unaligned access.
    size_t misalign = 0;
    void *data() { return bytes.data() + misalign; }
    const void *data() const { return bytes.data() + misalign; }

    double get(size_t i) const {
        const uint8_t *p = static_cast<const uint8_t *>(data()) + i * terse_codec::dtype_bytes(dt);
        switch (dt) {
        case TERSE_DTYPE_FLOAT32: {
            float f;
            std::memcpy(&f, p, 4);
            return f;
        }
        case TERSE_DTYPE_FLOAT64: {
            double d;
            std::memcpy(&d, p, 8);
            return d;
        }
        case TERSE_DTYPE_FLOAT16: {
            uint16_t h;
            std::memcpy(&h, p, 2);
            return terse_codec::f16_to_f32(h);
        }
        case TERSE_DTYPE_BFLOAT16: {
            uint16_t h;
            std::memcpy(&h, p, 2);
            return terse_codec::bf16_to_f32(h);
        }
        default: return NAN;
        }
    }
    void set(size_t i, double v) {
        uint8_t *p = static_cast<uint8_t *>(data()) + i * terse_codec::dtype_bytes(dt);
        switch (dt) {
        case TERSE_DTYPE_FLOAT32: {
            const float f = static_cast<float>(v);
            std::memcpy(p, &f, 4);
            break;
        }
        case TERSE_DTYPE_FLOAT64: std::memcpy(p, &v, 8); break;
        case TERSE_DTYPE_FLOAT16: {
            const uint16_t h = terse_codec::f32_to_f16(static_cast<float>(v));
            std::memcpy(p, &h, 2);
            break;
        }
        case TERSE_DTYPE_BFLOAT16: {
            const uint16_t h = terse_codec::f32_to_bf16(static_cast<float>(v));
            std::memcpy(p, &h, 2);
            break;
        }
        default: break;
        }
    }
    // Bytes of the elements only (for bit-identity comparisons).
    std::vector<uint8_t> raw() const {
        const uint8_t *p = static_cast<const uint8_t *>(data());
        return std::vector<uint8_t>(p, p + n * terse_codec::dtype_bytes(dt));
    }
};

inline Buf make_buf(terse_dtype_t dt, const std::vector<double> &v, size_t misalign_elems = 0) {
    Buf b(dt, v.size());
    b.misalign = misalign_elems * terse_codec::dtype_bytes(dt);
    for (size_t i = 0; i < v.size(); i++) b.set(i, v[i]);
    return b;
}

inline const char *dtype_str(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return "float32";
    case TERSE_DTYPE_FLOAT64: return "float64";
    case TERSE_DTYPE_FLOAT16: return "float16";
    case TERSE_DTYPE_BFLOAT16: return "bfloat16";
    default: return "?";
    }
}

constexpr terse_dtype_t kFloatTypes[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16,
                                         TERSE_DTYPE_BFLOAT16};

inline double max_finite(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return FLT_MAX;
    case TERSE_DTYPE_FLOAT64: return DBL_MAX;
    case TERSE_DTYPE_FLOAT16: return terse_codec::kF16Max;
    default: return terse_codec::kBF16Max;
    }
}

// One unit in the last place of the output type at |r| (the spacing of the
// type's values there; for subnormal r the smallest subnormal).
inline double ulp_of(terse_dtype_t dt, double r) {
    const double a = std::fabs(r);
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: {
        if (a < FLT_MIN) return 0x1p-149;
        int e;
        std::frexp(a, &e);
        return std::ldexp(1.0, e - 24);
    }
    case TERSE_DTYPE_FLOAT64: {
        if (a < DBL_MIN) return 0x1p-1074;
        int e;
        std::frexp(a, &e);
        return std::ldexp(1.0, e - 53);
    }
    case TERSE_DTYPE_FLOAT16: {
        if (a < 0x1p-14) return 0x1p-24;
        int e;
        std::frexp(a, &e);
        return std::ldexp(1.0, e - 11);
    }
    default: {
        if (a < 0x1p-126) return 0x1p-133;
        int e;
        std::frexp(a, &e);
        return std::ldexp(1.0, e - 8);
    }
    }
}

// The codec's create_instance / destroy_instance are found by
// argument-dependent lookup in the namespace of its Params / Instance.
// Header-only and without gtest, so the libFuzzer targets use it too.
struct InstanceDeleter {
    template <typename Instance>
    void operator()(Instance *i) const {
        destroy_instance(i);
    }
};
template <typename Instance>
using InstancePtr = std::unique_ptr<Instance, InstanceDeleter>;

// Creates a host-memory instance for nranks ranks and chunks of up to
// max_chunk_count elements on code path isa; the codec's status, its
// message in err.
template <typename Instance, typename Params>
int create_host_instance(const Params &p, terse_dtype_t dt, int nranks, size_t max_chunk_count,
                         terse_codec::Isa isa, Instance **out, char *err, size_t errlen) {
    terse_codec_setup_t s{};
    s.struct_size = sizeof s;
    s.dtype = dt;
    s.mem_kind = TERSE_MEM_HOST;
    s.nranks = nranks;
    s.max_chunk_count = max_chunk_count;
    return create_instance(p, &s, isa, out, err, errlen);
}

// Every code path this CPU runs, scalar first.
inline std::vector<terse_codec::Isa> isas() {
    using terse_codec::Isa;
    std::vector<Isa> v{Isa::Scalar};
    if (terse_codec::isa_available(Isa::Avx2)) v.push_back(Isa::Avx2);
    if (terse_codec::isa_available(Isa::Avx512)) v.push_back(Isa::Avx512);
    return v;
}

// For the libFuzzer targets: the code path byte b asks for, scalar where
// this CPU lacks it.
inline terse_codec::Isa fuzz_isa(uint8_t b) {
    using terse_codec::Isa;
    const Isa want = b % 3 == 0 ? Isa::Scalar : b % 3 == 1 ? Isa::Avx2 : Isa::Avx512;
    return terse_codec::isa_available(want) ? want : Isa::Scalar;
}

// For the libFuzzer targets: a decoded sum is always finite (saturated), so
// anything else is a finding.
inline void abort_unless_finite(const std::vector<uint8_t> &out, terse_dtype_t dt, size_t count) {
    for (size_t i = 0; i < count; i++) {
        double v;
        if (dt == TERSE_DTYPE_FLOAT32) {
            float f;
            std::memcpy(&f, out.data() + 4 * i, 4);
            v = f;
        } else if (dt == TERSE_DTYPE_FLOAT64) {
            std::memcpy(&v, out.data() + 8 * i, 8);
        } else {
            uint16_t h;
            std::memcpy(&h, out.data() + 2 * i, 2);
            v = dt == TERSE_DTYPE_FLOAT16 ? terse_codec::f16_to_f32(h) : terse_codec::bf16_to_f32(h);
        }
        if (!std::isfinite(v)) abort();
    }
}

}  // namespace codec_test
