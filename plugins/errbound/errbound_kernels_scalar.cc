// The scalar code path: the reference every SIMD path must match, and the
// fallback on CPUs without AVX2.
#include "errbound_kernels.h"

namespace terse_errbound {
namespace {

struct ScalarBody {
    template <typename T>
    static bool encode_blocks(const T *x, size_t nblocks, double M, double inv, bool nibbles, uint8_t *widths,
                              size_t first_block, uint8_t **data) {
        bool ok = true;
        for (size_t b = 0; b < nblocks; b++) {
            int w;
            ok &= encode_block_ref<T>(x + kBlock * b, kBlock, M, inv, *data, &w);
            put_width(widths, first_block + b, nibbles, w);
            *data += 4 * static_cast<size_t>(w);
        }
        return ok;
    }

    template <typename T>
    static bool decode_blocks(const uint8_t *widths, bool nibbles, size_t first_block, size_t nblocks,
                              const uint8_t **data, double q, uint32_t zmax, T *dst, bool acc) {
        bool ok = true;
        for (size_t b = 0; b < nblocks; b++) {
            const int w = get_width(widths, first_block + b, nibbles);
            ok &= decode_block_ref<T>(*data, w, kBlock, q, zmax, dst + kBlock * b, acc);
            *data += 4 * static_cast<size_t>(w);
        }
        return ok;
    }

    static bool combine_blocks(CombineJob &j, size_t nblocks, const uint8_t **a, const uint8_t **b, uint8_t **o) {
        return combine_blocks_ref(j, nblocks, a, b, o);
    }

    template <typename T>
    static void stats(const T *, size_t, int, ChunkStats *, double *, size_t *done) {
        *done = 0;  // stats_ref does it all
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

}  // namespace terse_errbound
