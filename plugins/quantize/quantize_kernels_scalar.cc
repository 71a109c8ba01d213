// The scalar code path: the reference every SIMD path must match, and the
// fallback on CPUs without AVX2.
#include "quantize_kernels.h"

namespace terse_quantize {
namespace {

struct ScalarBody {
    template <typename T, int BITS, int ROUND>
    static bool encode_groups(const T *x, size_t groups, double m, double inv, uint32_t key, uint32_t lo,
                              uint8_t *out) {
        const auto pack = terse_codec::pack32_table()[BITS];
        bool ok = true;
        for (size_t g = 0; g < groups; g++) {
            uint32_t codes[32];
            ok &= encode_tail<T, BITS, ROUND>(x + 32 * g, 32, m, inv, key, lo + static_cast<uint32_t>(32 * g),
                                              codes);
            pack(codes, out + 4 * BITS * g);
        }
        return ok;
    }

    template <typename T>
    static bool decode_groups(const uint8_t *in, size_t groups, int width, uint32_t mul, uint32_t zoff,
                              uint32_t smax, double u, T *dst, bool acc) {
        const auto unpack = terse_codec::unpack32_table()[width];
        bool ok = true;
        for (size_t g = 0; g < groups; g++) {
            uint32_t s[32];
            unpack(in + 4 * static_cast<size_t>(width) * g, s);
            for (int i = 0; i < 32; i++) ok &= s[i] <= smax;
            dequantize_run<T>(s, 32, mul, zoff, u, dst + 32 * g, acc);
        }
        return ok;
    }

    template <typename T>
    static bool decode_plane_groups(const uint8_t *in, size_t groups, int width, uint32_t mul, uint32_t zoff,
                                    uint32_t smax, double u, T *dst, bool acc) {
        return decode_plane_groups_ref<T>(in, groups, width, mul, zoff, smax, u, dst, acc);
    }

    static void to_planes(const uint8_t *codes, int bits, size_t groups, uint32_t *out) {
        to_planes_ref(codes, bits, groups, out);
    }

    template <typename T>
    static uint64_t block_max_bits(const T *x, size_t n) {
        return max_abs_bits_ref<T>(x, n);
    }

    template <typename T>
    static size_t abs_sum_lanes(const T *, size_t, double *) {
        return 0;  // abs_sum_ref does it all
    }
};

}  // namespace

const Kernels &kernels_scalar() {
    static const Kernels k = make_kernels<ScalarBody>();
    return k;
}

const Kernels &kernels_for(terse_codec::Isa isa) {
    switch (isa) {
    case terse_codec::Isa::Avx512: return kernels_avx512();
    case terse_codec::Isa::Avx2: return kernels_avx2();
    default: return kernels_scalar();
    }
}

}  // namespace terse_quantize
