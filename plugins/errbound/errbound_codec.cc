// errbound: instance, sizes, statistics, encode, decode and combine.  The
// block loops live in the kernels; this file derives the step from the
// agreed stats, runs the optional zstd stage, and checks every length and
// value the kernels rely on.
#include "errbound_codec.h"
#include "errbound_zstd.h"

#include "../common/kernel_instance.h"
#include "../common/params.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <new>

namespace terse_errbound {

using terse_codec::Isa;
using terse_codec::set_message;

namespace {

// A payload header that passed every check, and where its stream is.
struct Parsed {
    Header h;
    bool nibbles;
    size_t nblocks;
    const uint8_t *stream;  // widths, then block data (decompressed if zstd)
};

// Checks the header, decompresses into scratch `slot` if needed, and checks
// that the widths describe exactly the stream.
int parse_payload(const uint8_t *p, size_t len, size_t count, int slot, Parsed *out) {
    if (len < kHeaderBytes) return TERSE_CODEC_ERR_CORRUPT;
    const Header h = read_header(p);
    if (h.version != kVersion || (h.flags & ~kFlagZstd) || h.log2_block != kLog2Block || !reserved_zero(p) ||
        h.count != count || h.contributors == 0 || !(h.q >= DBL_MIN) || !(h.q <= DBL_MAX) || h.kmax == 0 ||
        static_cast<uint64_t>(h.contributors) * h.kmax >= kMaxSum)
        return TERSE_CODEC_ERR_CORRUPT;
    if (count > SIZE_MAX / 256) return TERSE_CODEC_ERR_CORRUPT;
    const size_t nb = block_count(count);
    const bool nib = nibble_widths(h.contributors, h.kmax);
    const size_t wbytes = widths_bytes(nb, nib);
    if (h.stream_bytes < wbytes || h.stream_bytes > stream_worst(count, h.contributors, h.kmax))
        return TERSE_CODEC_ERR_CORRUPT;
    const uint8_t *stream = p + kHeaderBytes;
    if (h.flags & kFlagZstd) {
        uint8_t *buf = thread_scratch(slot, h.stream_bytes);
        if (!buf) return TERSE_CODEC_ERR_NOMEM;
        if (!zstd_decompress(stream, len - kHeaderBytes, buf, h.stream_bytes)) return TERSE_CODEC_ERR_CORRUPT;
        stream = buf;
    } else if (len - kHeaderBytes != h.stream_bytes) {
        return TERSE_CODEC_ERR_CORRUPT;
    }
    const int wmax = width_max(h.contributors, h.kmax);
    size_t data = 0;
    for (size_t b = 0; b < nb; b++) {
        const int w = get_width(stream, b, nib);
        if (w > wmax) return TERSE_CODEC_ERR_CORRUPT;
        data += 4 * static_cast<size_t>(w);
    }
    if (nib && (nb & 1) && (stream[wbytes - 1] >> 4)) return TERSE_CODEC_ERR_CORRUPT;  // unused nibble
    if (wbytes + data != h.stream_bytes) return TERSE_CODEC_ERR_CORRUPT;
    out->h = h;
    out->nibbles = nib;
    out->nblocks = nb;
    out->stream = stream;
    return TERSE_CODEC_OK;
}

// Writes the header and places the stream: it is already at p + kHeaderBytes,
// or it is in scratch (`plain`) and gets compressed (zstd=on, when that is
// smaller) or copied.  Returns the payload length; 0 if it does not fit.
size_t finish_payload(const Instance &in, Header h, const uint8_t *plain, uint8_t *p, size_t cap) {
    if (plain != p + kHeaderBytes) {
        h.flags = 0;
        const size_t room = cap - kHeaderBytes;
        const size_t z = in.p.zstd ? zstd_compress(plain, h.stream_bytes, p + kHeaderBytes, room, in.p.zstd_level)
                                   : 0;
        if (in.p.zstd && z && z < h.stream_bytes) {
            h.flags = kFlagZstd;
            write_header(p, h);
            return kHeaderBytes + z;
        }
        if (h.stream_bytes > room) return 0;
        std::memcpy(p + kHeaderBytes, plain, h.stream_bytes);  // zstd did not help: store plain
    }
    write_header(p, h);
    return kHeaderBytes + h.stream_bytes;
}

double abs_from_bits(terse_dtype_t dt, uint64_t b) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return Elem<float>::from_abs_bits(static_cast<uint32_t>(b));
    case TERSE_DTYPE_FLOAT64: return Elem<double>::from_abs_bits(b);
    case TERSE_DTYPE_FLOAT16: return Elem<F16>::from_abs_bits(static_cast<uint16_t>(b));
    default: return Elem<BF16>::from_abs_bits(static_cast<uint16_t>(b));
    }
}

bool chunk_has_nonfinite(const Instance &in, const void *src, size_t count) {
    ChunkStats s;
    in.k->stats[in.dindex](src, count, kStatsAbs, &s);
    return std::isinf(abs_from_bits(in.dtype, s.absmax_bits));
}

// Agreed max |x| of the chunk.
double agreed_max_abs(const Instance &in, const double *a) {
    if (in.p.mode == kRel) return a[0] > a[1] ? a[0] : a[1];
    return a[0];
}

}  // namespace

int create_instance(const Params &p, const terse_codec_setup_t *setup, Isa isa, Instance **out, char *err,
                    size_t errlen) {
    *out = nullptr;
    int di = -1;
    const int rc = terse_codec::check_setup(setup, mem_kinds(), &di, err, errlen);
    if (rc != TERSE_CODEC_OK) return rc;
    if (setup->mem_kind == TERSE_MEM_CUDA && p.zstd) {
        // The zstd stage runs on the host only; a device instance would
        // have to stage every payload through host memory to keep it.
        set_message(err, errlen,
                    "zstd=on is not supported on device memory (the zstd stage has no device kernel); "
                    "use zstd=off for device buffers");
        return TERSE_CODEC_ERR_UNSUPPORTED;
    }
    if (setup->nranks < 1 || static_cast<uint64_t>(setup->nranks) >= kMaxSum / 2) {
        set_message(err, errlen, "nranks=%d is not accepted (accepted: 1 to %llu)", setup->nranks,
                    static_cast<unsigned long long>(kMaxSum / 2 - 1));
        return TERSE_CODEC_ERR_PARAM;
    }
    const int made = terse_codec::new_kernel_instance(p, setup, di, isa, kernels_for, out, err, errlen);
    if (made == TERSE_CODEC_OK) {
        (*out)->mem = setup->mem_kind;
        (*out)->max_chunk_count = setup->max_chunk_count;
    }
    return made;
}

uint32_t mem_kinds() {
#if defined(TERSE_ERRBOUND_CUDA)
    return TERSE_MEM_HOST | TERSE_MEM_CUDA;
#else
    return TERSE_MEM_HOST;
#endif
}

void destroy_instance(Instance *inst) { delete inst; }

size_t max_encoded_size(const Instance &, size_t count) {
    // Whatever the stats: widths as bytes and 31-bit codes (c * kmax < 2^30).
    const size_t nb = block_count(count);
    return kHeaderBytes + nb + nb * 4 * 31;
}

size_t stats_count(const Instance &in, size_t) { return in.p.mode == kAbs ? 1 : 2; }

int stats(const Instance &in, const void *src, size_t count, double *out) {
    if (!out || (!src && count)) return TERSE_CODEC_ERR_PARAM;
    const int mode = in.p.mode == kAbs ? kStatsAbs : in.p.mode == kRel ? kStatsRange : kStatsNorm;
    ChunkStats s;
    if (count) in.k->stats[in.dindex](src, count, mode, &s);
    const double maxabs = abs_from_bits(in.dtype, s.absmax_bits);
    const bool bad = std::isinf(maxabs);
    switch (in.p.mode) {
    case kAbs: out[0] = maxabs; break;
    case kRel:
        out[0] = bad ? INFINITY : s.vmax;
        out[1] = bad ? INFINITY : -s.vmin;
        break;
    case kNorm:
        out[0] = maxabs;
        out[1] = bad ? INFINITY : std::sqrt(s.sumsq);
        break;
    }
    return TERSE_CODEC_OK;
}

double bound_for(const Instance &in, const double *a, size_t count) {
    for (size_t i = 0; i < stats_count(in, count); i++)
        if (!std::isfinite(a[i])) return -1;
    switch (in.p.mode) {
    case kAbs: return in.p.bound;
    case kRel: return in.p.bound * (a[0] + a[1]);
    default: return count ? in.p.bound * a[1] / std::sqrt(static_cast<double>(count)) : 0;
    }
}

int encode(const Instance &in, const void *src, size_t count, void *dst, size_t dst_cap, size_t *dst_len,
           const terse_codec_call_t *call) {
    if (count == 0 || count > SIZE_MAX / 256) return TERSE_CODEC_RAW;
    if (!src || !dst || !dst_len) return TERSE_CODEC_ERR_PARAM;
    double local[2];
    const double *agreed = call ? call->agreed_stats : nullptr;
    if (!agreed) {  // a single rank (tools): its own stats
        stats(in, src, count, local);
        agreed = local;
    }
    const double B = bound_for(in, agreed, count);
    if (!(B >= 0) || !std::isfinite(B)) return TERSE_CODEC_RAW;  // NaN/Inf somewhere
    const double M = agreed_max_abs(in, agreed);
    const Step st = plan_step(B, M, in.nranks, in.dtype);
    if (st.raw) return TERSE_CODEC_RAW;
    // Would not shrink even in the worst case the stats allow: raw on every rank.
    const size_t worst = stream_worst(count, 1, st.kmax);
    if (kHeaderBytes + worst >= count * in.elem_bytes) return TERSE_CODEC_RAW;
    if (dst_cap <= kHeaderBytes) return TERSE_CODEC_ERR_NOSPACE;

    // Pack straight into dst when it has room for the worst case, else into
    // scratch (zstd, or a tight buffer) and let finish_payload copy.
    uint8_t *p = static_cast<uint8_t *>(dst);
    uint8_t *stream = p + kHeaderBytes;
    const bool direct = !in.p.zstd && dst_cap - kHeaderBytes >= worst + kPackSlack;
    if (!direct && !(stream = thread_scratch(0, worst + kPackSlack))) return TERSE_CODEC_ERR_NOMEM;
    const size_t nb = block_count(count);
    const bool nib = nibble_widths(1, st.kmax);
    EncodeJob j;
    j.src = src;
    j.count = count;
    j.M = M;
    j.inv = 1.0 / st.q;
    j.nibbles = nib;
    j.widths = stream;
    j.data = stream + widths_bytes(nb, nib);
    j.data_len = 0;
    if (!in.k->encode[in.dindex](j))
        return chunk_has_nonfinite(in, src, count) ? TERSE_CODEC_RAW : TERSE_CODEC_ERR_PARAM;

    Header h;
    h.contributors = 1;
    h.count = count;
    h.q = st.q;
    h.kmax = st.kmax;
    h.stream_bytes = widths_bytes(nb, nib) + j.data_len;
    const size_t len = finish_payload(in, h, stream, p, dst_cap);
    if (!len) return TERSE_CODEC_ERR_NOSPACE;
    *dst_len = len;
    return TERSE_CODEC_OK;
}

int decode(const Instance &in, const void *src, size_t src_len, void *dst, size_t count, int accumulate,
           terse_op_t op) {
    if (op != TERSE_OP_SUM) return TERSE_CODEC_ERR_UNSUPPORTED;
    if (!src || (!dst && count)) return TERSE_CODEC_ERR_PARAM;
    Parsed ps;
    if (int rc = parse_payload(static_cast<const uint8_t *>(src), src_len, count, 0, &ps); rc != TERSE_CODEC_OK)
        return rc;
    DecodeJob j;
    j.widths = ps.stream;
    j.nibbles = ps.nibbles;
    j.data = ps.stream + widths_bytes(ps.nblocks, ps.nibbles);
    j.count = count;
    j.q = ps.h.q;
    j.zmax = static_cast<uint32_t>(zigzag_max(ps.h.contributors, ps.h.kmax));
    j.dst = dst;
    return in.k->decode[in.dindex](j, accumulate != 0) ? TERSE_CODEC_OK : TERSE_CODEC_ERR_CORRUPT;
}

int combine(const Instance &in, const void *a, size_t a_len, int a_contributors, const void *b, size_t b_len,
            int b_contributors, size_t count, void *out, size_t out_cap, size_t *out_len) {
    if (!a || !b || !out || !out_len) return TERSE_CODEC_ERR_PARAM;
    Parsed pa, pb;
    if (int rc = parse_payload(static_cast<const uint8_t *>(a), a_len, count, 0, &pa); rc != TERSE_CODEC_OK)
        return rc;
    if (int rc = parse_payload(static_cast<const uint8_t *>(b), b_len, count, 1, &pb); rc != TERSE_CODEC_OK)
        return rc;
    if (a_contributors < 1 || b_contributors < 1 || pa.h.contributors != static_cast<uint32_t>(a_contributors) ||
        pb.h.contributors != static_cast<uint32_t>(b_contributors))
        return TERSE_CODEC_ERR_CORRUPT;
    if (std::memcmp(&pa.h.q, &pb.h.q, sizeof(double)) != 0 || pa.h.kmax != pb.h.kmax)
        return TERSE_CODEC_ERR_CORRUPT;  // encoded with different agreed stats
    const uint64_t c = static_cast<uint64_t>(pa.h.contributors) + pb.h.contributors;
    if (c * pa.h.kmax >= kMaxSum) return TERSE_CODEC_ERR_UNSUPPORTED;
    const size_t worst = stream_worst(count, c, pa.h.kmax);
    if (out_cap <= kHeaderBytes) return TERSE_CODEC_ERR_NOSPACE;

    uint8_t *po = static_cast<uint8_t *>(out);
    uint8_t *stream = po + kHeaderBytes;
    const bool direct = !in.p.zstd && out_cap - kHeaderBytes >= worst + kPackSlack;
    if (!direct && !(stream = thread_scratch(2, worst + kPackSlack))) return TERSE_CODEC_ERR_NOMEM;
    const size_t nb = block_count(count);
    const bool nib = nibble_widths(c, pa.h.kmax);
    CombineJob j;
    j.count = count;
    j.wa = pa.stream;
    j.da = pa.stream + widths_bytes(nb, pa.nibbles);
    j.na = pa.nibbles;
    j.zmax_a = static_cast<uint32_t>(zigzag_max(pa.h.contributors, pa.h.kmax));
    j.wb = pb.stream;
    j.db = pb.stream + widths_bytes(nb, pb.nibbles);
    j.nb = pb.nibbles;
    j.zmax_b = static_cast<uint32_t>(zigzag_max(pb.h.contributors, pb.h.kmax));
    j.wo = stream;
    j.dout = stream + widths_bytes(nb, nib);
    j.no = nib;
    j.out_len = 0;
    if (!in.k->combine(j)) return TERSE_CODEC_ERR_CORRUPT;

    Header h = pa.h;
    h.flags = 0;
    h.contributors = static_cast<uint32_t>(c);
    h.stream_bytes = widths_bytes(nb, nib) + j.out_len;
    const size_t len = finish_payload(in, h, stream, po, out_cap);
    if (!len) return TERSE_CODEC_ERR_NOSPACE;
    *out_len = len;
    return TERSE_CODEC_OK;
}

}  // namespace terse_errbound
