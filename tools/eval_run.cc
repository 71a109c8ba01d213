#include "eval_run.h"

#include "eval_common.h"
#include "frame.h"
#include "stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace terse::eval {

namespace {

struct Range {
    size_t begin, count;
};

// Chunks of at most chunk_elems elements covering [begin, begin + count).
std::vector<Range> chunks_of(Range r, size_t chunk_elems) {
    std::vector<Range> out;
    for (size_t off = 0; off < r.count; off += chunk_elems)
        out.push_back({r.begin + off, std::min(chunk_elems, r.count - off)});
    return out;
}

size_t chunk_elems_for(terse_dtype_t dt, size_t chunk_bytes) {
    return std::max<size_t>(1, chunk_bytes / dtype_size(dt));
}

const unsigned char *at(const Dataset &ds, size_t elem) {
    return ds.data.data() + elem * dtype_size(ds.dtype);
}

void count_payload(SizeStats *s, const Payload &p, size_t elems, size_t esize) {
    s->raw_bytes += elems * esize;
    s->wire_bytes += p.bytes.size() + kFrameHeaderSize;
    s->chunks += 1;
    s->raw_chunks += p.raw ? 1 : 0;
}

// Element-wise max of the statistics of every rank: what the engine's
// small MAX-allreduce agrees on before a SUMMABLE encode.
std::vector<double> agreed_stats(CodecInstance &ci, const std::vector<const Dataset *> &ranks,
                                 Range c, uint64_t seed) {
    std::vector<double> agreed;
    for (const Dataset *ds : ranks) {
        std::vector<double> s = chunk_stats(ci, at(*ds, c.begin), c.count, seed);
        if (agreed.empty()) agreed = s;
        else
            for (size_t i = 0; i < s.size() && i < agreed.size(); ++i) agreed[i] = std::max(agreed[i], s[i]);
    }
    return agreed;
}

// Ring order of block b among p ranks: the block starts at rank b and each
// following rank adds its own contribution; the last one owns the result.
int ring_rank(int b, int k, int p) { return (b + k) % p; }

// Blocks of a ring reduce-scatter: count split into p nearly equal parts.
Range ring_block(size_t count, int p, int b) {
    size_t base = count / size_t(p), extra = count % size_t(p);
    size_t begin = size_t(b) * base + std::min<size_t>(size_t(b), extra);
    return {begin, base + (size_t(b) < extra ? 1 : 0)};
}

void exact_result(const std::vector<const Dataset *> &ranks, terse_op_t op, Range c,
                  std::vector<double> *out, std::vector<double> *scratch) {
    out->assign(c.count, 0.0);
    scratch->resize(c.count);
    bool first = true;
    for (const Dataset *ds : ranks) {
        to_double(ds->dtype, at(*ds, c.begin), c.count, scratch->data());
        for (size_t i = 0; i < c.count; ++i) {
            double x = (*scratch)[i];
            double &r = (*out)[i];
            if (first) r = x;
            else if (op == TERSE_OP_SUM) r += x;
            else if (op == TERSE_OP_MAX) r = r > x ? r : x;
            else r = r < x ? r : x;
        }
        first = false;
    }
}

}  // namespace

Measured round_trip(Codec &codec, const Dataset &ds, int nranks, size_t chunk_bytes, int repeat) {
    Measured m;
    const size_t esize = dtype_size(ds.dtype);
    const size_t chunk_elems = chunk_elems_for(ds.dtype, chunk_bytes);
    CodecInstance &ci = codec.instance(ds.dtype, nranks, chunk_elems);
    const bool summable = codec.mode() == TERSE_REDUCE_SUMMABLE;
    std::vector<unsigned char> decoded(chunk_elems * esize);
    std::vector<double> ref(chunk_elems), got(chunk_elems);
    for (const Range &c : chunks_of({0, ds.count}, chunk_elems)) {
        const unsigned char *src = at(ds, c.begin);
        double best_enc = std::numeric_limits<double>::infinity(), best_dec = best_enc;
        Payload p;
        std::vector<double> agreed;
        for (int rep = 0; rep < std::max(1, repeat); ++rep) {
            double enc = 0, dec = 0;
            double t0 = now_seconds();
            if (summable) agreed = chunk_stats(ci, src, c.count, 0);
            enc += now_seconds() - t0;
            p = encode_chunk(ci, src, c.count, summable ? agreed.data() : nullptr, 0, &enc);
            decode_chunk(ci, p, decoded.data(), c.count, false, TERSE_OP_SUM,
                         summable ? agreed.data() : nullptr, 0, &dec);
            best_enc = std::min(best_enc, enc);
            best_dec = std::min(best_dec, dec);
        }
        count_payload(&m.size, p, c.count, esize);
        m.size.encode_seconds += best_enc;
        m.size.decode_seconds += best_dec;
        to_double(ds.dtype, src, c.count, ref.data());
        to_double(ds.dtype, decoded.data(), c.count, got.data());
        m.err.add(ref.data(), got.data(), c.count);
    }
    return m;
}

Measured emulate_allreduce(Codec &codec, const std::vector<const Dataset *> &ranks,
                           size_t chunk_bytes) {
    Measured m;
    if (ranks.empty()) return m;
    const int p = int(ranks.size());
    const Dataset &first = *ranks.front();
    const terse_dtype_t dt = first.dtype;
    const terse_op_t op = first.op;
    const size_t esize = dtype_size(dt), count = first.count;
    const size_t chunk_elems = chunk_elems_for(dt, chunk_bytes);
    CodecInstance &ci = codec.instance(dt, p, chunk_elems);
    const terse_reduce_mode_t mode = codec.mode();

    std::vector<unsigned char> acc(chunk_elems * esize), own(chunk_elems * esize);
    std::vector<double> ref, got(chunk_elems), scratch;
    auto account = [&](const Payload &pl, size_t n) { count_payload(&m.size, pl, n, esize); };

    for (int b = 0; b < p; ++b) {
        for (const Range &c : chunks_of(ring_block(count, p, b), chunk_elems)) {
            const size_t bytes = c.count * esize;
            if (mode == TERSE_REDUCE_GATHER) {
                // Every rank's payload reaches every rank; each decodes and
                // sums them in rank order.
                for (int r = 0; r < p; ++r) {
                    Payload pl = encode_chunk(ci, at(*ranks[r], c.begin), c.count, nullptr, 0);
                    account(pl, c.count);
                    decode_chunk(ci, pl, acc.data(), c.count, r > 0, op, nullptr, 0);
                }
            } else if (mode == TERSE_REDUCE_SUMMABLE) {
                std::vector<double> agreed = agreed_stats(ci, ranks, c, 0);
                Payload sum;
                bool any_raw = false;
                std::vector<Payload> enc(static_cast<size_t>(p));
                for (int r = 0; r < p; ++r) {
                    enc[size_t(r)] = encode_chunk(ci, at(*ranks[r], c.begin), c.count, agreed.data(), 0);
                    any_raw = any_raw || enc[size_t(r)].raw;
                }
                if (any_raw) {
                    // A raw contribution cannot be added in the code domain:
                    // decode each and reduce in the datatype, in ring order.
                    for (int k = 0; k < p; ++k) {
                        const Payload &pl = enc[size_t(ring_rank(b, k, p))];
                        account(pl, c.count);
                        decode_chunk(ci, pl, acc.data(), c.count, k > 0, op, agreed.data(), 0);
                    }
                } else {
                    sum = enc[size_t(ring_rank(b, 0, p))];
                    account(sum, c.count);
                    for (int k = 1; k < p; ++k) {
                        const Payload &pl = enc[size_t(ring_rank(b, k, p))];
                        sum = combine_chunks(ci, sum, pl, c.count, agreed.data(), 0);
                        if (k < p - 1) account(sum, c.count);
                    }
                    account(sum, c.count);  // the allgather forwards the sum once
                    decode_chunk(ci, sum, acc.data(), c.count, false, op, agreed.data(), 0);
                }
            } else {
                // RECOMPRESS: at each hop the partial result is encoded,
                // sent, decoded and added to the receiver's own data; the
                // owner encodes the reduced chunk once for the allgather and
                // every rank (the owner too) keeps the decoded bytes.
                memcpy(acc.data(), at(*ranks[size_t(ring_rank(b, 0, p))], c.begin), bytes);
                for (int k = 1; k < p; ++k) {
                    Payload pl = encode_chunk(ci, acc.data(), c.count, nullptr, 0);
                    account(pl, c.count);
                    memcpy(own.data(), at(*ranks[size_t(ring_rank(b, k, p))], c.begin), bytes);
                    decode_chunk(ci, pl, own.data(), c.count, true, op, nullptr, 0);
                    std::swap(acc, own);
                }
                Payload fin = encode_chunk(ci, acc.data(), c.count, nullptr, 0);
                account(fin, c.count);
                decode_chunk(ci, fin, acc.data(), c.count, false, op, nullptr, 0);
            }
            exact_result(ranks, op, c, &ref, &scratch);
            to_double(dt, acc.data(), c.count, got.data());
            m.err.add(ref.data(), got.data(), c.count);
        }
    }
    return m;
}

}  // namespace terse::eval
