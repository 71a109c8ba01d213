// quantize: instance, sizes, statistics, encode, decode and combine.  The
// element loops live in the kernels; this file checks every length and
// value the kernels rely on.
#include "quantize_codec.h"

#include "../common/kernel_instance.h"
#include "../common/params.h"

#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

namespace terse_quantize {

using terse_codec::Isa;
using terse_codec::set_message;

namespace {

int scale_bytes_for(terse_dtype_t dt) { return dt == TERSE_DTYPE_FLOAT64 ? 8 : 4; }

// The checks a payload must pass before any kernel touches it.
int check_payload(const Instance &in, const uint8_t *p, size_t len, size_t count, Header *out) {
    if (len < kHeaderBytes) return TERSE_CODEC_ERR_CORRUPT;
    const Header h = read_header(p);
    if (h.version != kVersion || !valid_bits(h.bits) || h.log2_block < kMinLog2Block ||
        h.log2_block > kMaxLog2Block || h.scale_bytes != scale_bytes_for(in.dtype) || h.rounding > kStochastic ||
        !reserved_zero(p) || h.contributors == 0 || h.width != width_for(h.bits, h.contributors) ||
        h.count != count)
        return TERSE_CODEC_ERR_CORRUPT;
    if (count > SIZE_MAX / 64) return TERSE_CODEC_ERR_CORRUPT;
    if (len != payload_bytes(count, h.log2_block, h.scale_bytes, h.width, h.contributors))
        return TERSE_CODEC_ERR_CORRUPT;
    const size_t nb = block_count(count, h.log2_block);
    const uint8_t *scales = p + kHeaderBytes;
    for (size_t b = 0; b < nb; b++) {
        const double m = get_scale(scales, b, h.scale_bytes);
        if (!(m >= 0) || std::signbit(m) || !std::isfinite(m)) return TERSE_CODEC_ERR_CORRUPT;
        if (m > 0 && !(step_of(m, h.bits, h.rounding) >= DBL_MIN)) return TERSE_CODEC_ERR_CORRUPT;
    }
    const size_t bits = count * h.width;
    if (!planes_layout(h.contributors) && bits % 8) {
        const uint8_t last = p[len - 1];
        if (last >> (bits % 8)) return TERSE_CODEC_ERR_CORRUPT;  // padding must be zero
    }
    *out = h;
    return TERSE_CODEC_OK;
}

bool chunk_has_nonfinite(const Instance &in, const void *src, size_t count) {
    std::vector<double> dummy;  // not reached on the hot path: only after a failed encode
    const size_t lb = kMaxLog2Block;
    dummy.resize(block_count(count, static_cast<int>(lb)));
    in.k->stats[in.dindex](src, count, static_cast<int>(lb), false, dummy.data());
    for (double m : dummy)
        if (std::isinf(m)) return true;
    return false;
}

// Planes of the groups [g0, g0 + n) of a payload's codes into buf (n * w words,
// plus slack): copied from a planes payload, converted from a single-rank one.
void group_planes(const Instance &in, const uint8_t *codes, const Header &h, size_t count, size_t g0, size_t n,
                  uint32_t *buf) {
    const int w = h.width;
    if (planes_layout(h.contributors)) {
        for (size_t g = 0; g < n; g++)
            terse_codec::load_planes(codes + 4 * static_cast<size_t>(w) * (g0 + g), w,
                                     buf + static_cast<size_t>(w) * g);
        return;
    }
    const size_t full = count / 32;
    const size_t nfull = g0 + n <= full ? n : (g0 < full ? full - g0 : 0);
    if (nfull) in.k->to_planes(codes + 4 * static_cast<size_t>(w) * g0, w, nfull, buf);
    for (size_t g = nfull; g < n; g++) {  // the last, partial group
        uint32_t s[32];
        const size_t first = (g0 + g) * 32;
        terse_codec::unpack_group(terse_codec::unpack32_table()[w], w, codes, count, first, count - first, s);
        terse_codec::planes_pack(s, w, buf + static_cast<size_t>(w) * g);
    }
}

// One batch of n groups' range checks and sums, with the output width a
// compile-time constant: the plane loops unroll and a group's planes stay
// in registers.  The runtime-width loops of bitplanes.h ran the combine at
// a fifth to a third of encode's speed (perf/README.md, "The summable hop").
// Needs wa, wb <= WO (a sum is never narrower than its terms); the planes
// above a term's width are zero, which changes neither its range check
// (amax < 2^wa) nor the sum.
template <int WO>
uint32_t combine_batch(const uint32_t *bufa, int wa, uint32_t amax, const uint32_t *bufb, int wb, uint32_t bmax,
                       size_t n, uint8_t *co) {
    uint32_t bad = 0;
    for (size_t g = 0; g < n; g++) {
        const uint32_t *a = bufa + static_cast<size_t>(wa) * g;
        const uint32_t *b = bufb + static_cast<size_t>(wb) * g;
        uint32_t x[WO], y[WO];
#pragma GCC unroll 32
        for (int j = 0; j < WO; j++) {
            x[j] = j < wa ? a[j] : 0u;
            y[j] = j < wb ? b[j] : 0u;
        }
        uint32_t xgt = 0, ygt = 0, xeq = 0xffffffffu, yeq = 0xffffffffu;
#pragma GCC unroll 32
        for (int j = WO - 1; j >= 0; j--) {
            const uint32_t ak = ((amax >> j) & 1u) ? 0xffffffffu : 0u;
            const uint32_t bk = ((bmax >> j) & 1u) ? 0xffffffffu : 0u;
            xgt |= xeq & x[j] & ~ak;
            xeq &= ~(x[j] ^ ak);
            ygt |= yeq & y[j] & ~bk;
            yeq &= ~(y[j] ^ bk);
        }
        uint32_t carry = 0;
        uint8_t *out = co + 4 * static_cast<size_t>(WO) * g;
#pragma GCC unroll 32
        for (int j = 0; j < WO; j++) {
            const uint32_t h = x[j] ^ y[j];
            terse_codec::put_u32(out + 4 * j, h ^ carry);
            carry = (x[j] & y[j]) | (carry & h);
        }
        bad |= xgt | ygt | carry;
    }
    return bad;
}

using CombineBatchFn = uint32_t (*)(const uint32_t *, int, uint32_t, const uint32_t *, int, uint32_t, size_t,
                                    uint8_t *);

template <int... W>
constexpr std::array<CombineBatchFn, sizeof...(W) + 1> combine_batch_table(std::integer_sequence<int, W...>) {
    return {nullptr, &combine_batch<W + 1>...};
}
// Indexed by the output width, 1..32.
constexpr auto kCombineBatch = combine_batch_table(std::make_integer_sequence<int, 32>{});

// Codes of b added to codes of a, plane by plane, into out (planes, width wo).
// false: a code out of its range, or non-zero padding.
bool combine_codes(const Instance &in, const uint8_t *ca, const Header &ha, const uint8_t *cb, const Header &hb,
                   size_t count, uint8_t *co, int wo) {
    constexpr size_t kBatch = 64;                             // groups per batch: 2048 codes
    uint32_t bufa[kBatch * 32 + 16], bufb[kBatch * 32 + 16];  // + slack for to_planes
    const uint32_t amax = ha.contributors * code_max(ha.bits);
    const uint32_t bmax = hb.contributors * code_max(hb.bits);
    if (wo < 1 || wo > 32 || ha.width > wo || hb.width > wo) return false;  // headers checked: unreachable
    const CombineBatchFn batch = kCombineBatch[static_cast<size_t>(wo)];
    const size_t groups = (count + 31) / 32;
    uint32_t bad = 0;
    size_t first = 0;  // the groups before it are done
    if (!planes_layout(ha.contributors) && !planes_layout(hb.contributors) && ha.bits == hb.bits &&
        wo == ha.bits + 1) {
        const AddCodesFn add = ha.bits == 8   ? in.k->add_bytes_to_planes
                               : ha.bits == 4 ? in.k->add_nibbles_to_planes
                                              : nullptr;
        if (add) {
            first = count / 32;  // the full groups; a partial last one takes the path below
            bad |= add(ca, cb, amax, first, co);
        }
    }
    for (size_t g0 = first; g0 < groups; g0 += kBatch) {
        const size_t n = groups - g0 < kBatch ? groups - g0 : kBatch;
        group_planes(in, ca, ha, count, g0, n, bufa);
        group_planes(in, cb, hb, count, g0, n, bufb);
        if (g0 + n == groups && count % 32) {  // padding codes must be zero
            const uint32_t pad = ~((1u << (count % 32)) - 1u);
            const uint32_t *a = bufa + static_cast<size_t>(ha.width) * (n - 1);
            const uint32_t *b = bufb + static_cast<size_t>(hb.width) * (n - 1);
            for (int j = 0; j < ha.width; j++) bad |= a[j] & pad;
            for (int j = 0; j < hb.width; j++) bad |= b[j] & pad;
        }
        bad |= batch(bufa, ha.width, amax, bufb, hb.width, bmax, n, co + 4 * static_cast<size_t>(wo) * g0);
    }
    return bad == 0;
}

}  // namespace

int create_instance(const Params &p, const terse_codec_setup_t *setup, Isa isa, Instance **out, char *err,
                    size_t errlen) {
    *out = nullptr;
    int di = -1;
    const int rc = terse_codec::check_setup(setup, mem_kinds(), &di, err, errlen);
    if (rc != TERSE_CODEC_OK) return rc;
    if (setup->nranks < 1) {
        set_message(err, errlen, "nranks=%d is not accepted (accepted: 1 or more)", setup->nranks);
        return TERSE_CODEC_ERR_PARAM;
    }
    if (width_for(p.bits, static_cast<uint64_t>(setup->nranks)) == 0) {
        set_message(err, errlen, "bits=%d sums at most %u ranks in 32-bit codes; this communicator has %d",
                    p.bits, static_cast<unsigned>(0xffffffffu / code_max(p.bits)), setup->nranks);
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    const int made = terse_codec::new_kernel_instance(p, setup, di, isa, kernels_for, out, err, errlen);
    if (made == TERSE_CODEC_OK) {
        (*out)->mem = setup->mem_kind;
        (*out)->max_chunk_count = setup->max_chunk_count;
    }
    return made;
}

uint32_t mem_kinds() {
#if defined(TERSE_QUANTIZE_CUDA)
    return TERSE_MEM_HOST | TERSE_MEM_CUDA;
#else
    return TERSE_MEM_HOST;
#endif
}

void destroy_instance(Instance *inst) { delete inst; }

size_t max_encoded_size(const Instance &in, size_t count) {
    // Combined payloads of all ranks are the widest the engine will hold.
    const uint64_t c = static_cast<uint64_t>(in.nranks);
    return payload_bytes(count, in.p.log2_block, scale_bytes_for(in.dtype), width_for(in.p.bits, c), c);
}

size_t stats_count(const Instance &in, size_t count) { return block_count(count, in.p.log2_block); }

int stats(const Instance &in, const void *src, size_t count, double *out) {
    if (count == 0) return TERSE_CODEC_OK;
    if (!src || !out) return TERSE_CODEC_ERR_PARAM;
    in.k->stats[in.dindex](src, count, in.p.log2_block, scale_is_mean(in.p.bits, in.p.rounding), out);
    return TERSE_CODEC_OK;
}

int encode(const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
           const terse_codec_call_t *call) {
    const int sb = scale_bytes_for(in.dtype);
    if (count == 0 || count > SIZE_MAX / 16) return TERSE_CODEC_RAW;
    const size_t need = payload_bytes(count, in.p.log2_block, sb, in.p.bits, 1);
    if (need >= count * in.elem_bytes) return TERSE_CODEC_RAW;  // would not shrink (same on every rank)
    if (need > dst_cap) return TERSE_CODEC_ERR_NOSPACE;
    if (!src || !dst || !dst_len) return TERSE_CODEC_ERR_PARAM;

    const size_t nb = block_count(count, in.p.log2_block);
    const double *agreed = call ? call->agreed_stats : nullptr;
    std::vector<double> local;  // only without agreed stats (a single rank, tools)
    if (!agreed) {
        try {
            local.resize(nb);
        } catch (const std::bad_alloc &) {
            return TERSE_CODEC_ERR_NOMEM;
        }
        in.k->stats[in.dindex](src, count, in.p.log2_block, scale_is_mean(in.p.bits, in.p.rounding),
                               local.data());
        agreed = local.data();
    }
    for (size_t b = 0; b < nb; b++) {
        const double m = agreed[b];
        if (std::isnan(m) || std::isinf(m)) return TERSE_CODEC_RAW;  // a NaN or Inf somewhere
        if (m < 0) return TERSE_CODEC_ERR_PARAM;
        if (sb == 4 && m > FLT_MAX) return TERSE_CODEC_RAW;
        if (sb == 8 && m > 0 && !(step_of(m, in.p.bits, in.p.rounding) >= DBL_MIN))
            return TERSE_CODEC_RAW;  // steps would be subnormal: no bound worth the name
    }

    uint8_t *p = static_cast<uint8_t *>(dst);
    const Header h = single_rank_header(in.p, sb, count);
    write_header(p, h);

    EncodeJob j;
    j.src = src;
    j.count = count;
    j.log2_block = in.p.log2_block;
    j.bits = in.p.bits;
    j.rounding = in.p.rounding;
    j.seed = call ? call->seed : 0;
    j.agreed = agreed;
    j.scales = p + kHeaderBytes;
    j.codes = p + kHeaderBytes + nb * static_cast<size_t>(sb);
    if (!in.k->encode[in.dindex][bits_index(in.p.bits)][in.p.rounding](j)) {
        // A value outside its agreed max: a NaN/Inf (sent raw), or stats that
        // do not cover this data (the caller's error).
        return chunk_has_nonfinite(in, src, count) ? TERSE_CODEC_RAW : TERSE_CODEC_ERR_PARAM;
    }
    *dst_len = need;
    return TERSE_CODEC_OK;
}

int decode(const Instance &in, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
           terse_op_t op) {
    if (op != TERSE_OP_SUM) return TERSE_CODEC_ERR_UNSUPPORTED;
    if (!src || (!dst && count)) return TERSE_CODEC_ERR_PARAM;
    Header h;
    if (int rc = check_payload(in, static_cast<const uint8_t *>(src), src_len, count, &h); rc != TERSE_CODEC_OK)
        return rc;
    const size_t nb = block_count(count, h.log2_block);
    DecodeJob j;
    j.scales = static_cast<const uint8_t *>(src) + kHeaderBytes;
    j.codes = j.scales + nb * h.scale_bytes;
    j.count = count;
    j.log2_block = h.log2_block;
    j.bits = h.bits;
    j.width = h.width;
    j.rounding = static_cast<Rounding>(h.rounding);
    j.contributors = h.contributors;
    j.dst = dst;
    return in.k->decode[in.dindex](j, accumulate != 0) ? TERSE_CODEC_OK : TERSE_CODEC_ERR_CORRUPT;
}

int combine(const Instance &in, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
            int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len) {
    if (!a || !b || !out || !out_len) return TERSE_CODEC_ERR_PARAM;
    const uint8_t *pa = static_cast<const uint8_t *>(a);
    const uint8_t *pb = static_cast<const uint8_t *>(b);
    Header ha, hb;
    if (int rc = check_payload(in, pa, a_len, count, &ha); rc != TERSE_CODEC_OK) return rc;
    if (int rc = check_payload(in, pb, b_len, count, &hb); rc != TERSE_CODEC_OK) return rc;
    if (a_contributors < 1 || b_contributors < 1 || ha.contributors != static_cast<uint32_t>(a_contributors) ||
        hb.contributors != static_cast<uint32_t>(b_contributors))
        return TERSE_CODEC_ERR_CORRUPT;
    if (ha.bits != hb.bits || ha.log2_block != hb.log2_block || ha.rounding != hb.rounding)
        return TERSE_CODEC_ERR_CORRUPT;
    const size_t nb = block_count(count, ha.log2_block);
    const size_t scale_len = nb * ha.scale_bytes;
    if (std::memcmp(pa + kHeaderBytes, pb + kHeaderBytes, scale_len) != 0)
        return TERSE_CODEC_ERR_CORRUPT;  // encoded with different agreed stats

    const uint64_t c = static_cast<uint64_t>(ha.contributors) + hb.contributors;
    const int wo = width_for(ha.bits, c);
    if (wo == 0) return TERSE_CODEC_ERR_UNSUPPORTED;  // more contributors than 32-bit sums hold
    const size_t need = payload_bytes(count, ha.log2_block, ha.scale_bytes, wo, c);
    if (need > out_cap) return TERSE_CODEC_ERR_NOSPACE;

    uint8_t *po = static_cast<uint8_t *>(out);
    Header ho = ha;
    ho.width = static_cast<uint8_t>(wo);
    ho.contributors = static_cast<uint32_t>(c);
    write_header(po, ho);
    std::memcpy(po + kHeaderBytes, pa + kHeaderBytes, scale_len);
    const uint8_t *ca = pa + kHeaderBytes + scale_len;
    const uint8_t *cb = pb + kHeaderBytes + scale_len;
    uint8_t *co = po + kHeaderBytes + scale_len;
    return combine_codes(in, ca, ha, cb, hb, count, co, wo) ? (*out_len = need, TERSE_CODEC_OK)
                                                            : TERSE_CODEC_ERR_CORRUPT;
}

}  // namespace terse_quantize
