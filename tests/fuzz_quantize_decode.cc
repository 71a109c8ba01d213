// libFuzzer target for the quantize decoder and combine().  Two ways in,
// chosen by the first byte:
//   raw:     the input after the 2-byte prefix is the payload itself;
//   patched: a valid payload of 1..4 ranks is built from the prefix, then the
//            rest of the input is applied as (offset, xor) patches, so the
//            fuzzer spends its time past the header checks.
// Either way decode and combine must return OK or an error, never touch
// memory they do not own (ASan), and decoded values must be finite.
#include "codec_test_util.h"

#include "../plugins/quantize/quantize_codec.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tq = terse_quantize;
using terse_codec::Isa;

namespace {

const int kBits[] = {1, 2, 4, 8, 16};

tq::Instance *make(const tq::Params &p, terse_dtype_t dt, int nranks, Isa isa) {
    tq::Instance *inst = nullptr;
    char err[128];
    if (codec_test::create_host_instance(p, dt, nranks, 1 << 16, isa, &inst, err, sizeof err) != TERSE_CODEC_OK)
        return nullptr;
    return inst;
}

void exercise(tq::Instance *inst, const uint8_t *pay, size_t len, size_t count, int contributors,
              const std::vector<uint8_t> &valid) {
    const size_t esz = terse_codec::dtype_bytes(inst->dtype);
    std::vector<uint8_t> out(count * esz + 1);
    const int rc = tq::decode(*inst, pay, len, out.data(), count, 0, TERSE_OP_SUM);
    if (rc != TERSE_CODEC_OK && rc != TERSE_CODEC_ERR_CORRUPT) abort();
    if (rc == TERSE_CODEC_OK) codec_test::abort_unless_finite(out, inst->dtype, count);
    tq::decode(*inst, pay, len, out.data(), count, 1, TERSE_OP_SUM);
    if (!valid.empty()) {
        std::vector<uint8_t> o(tq::max_encoded_size(*inst, count) + 64);
        size_t olen = 0;
        const int rc2 = tq::combine(*inst, pay, len, contributors, valid.data(), valid.size(), contributors,
                                    count, o.data(), o.size(), &olen);
        if (rc2 == TERSE_CODEC_OK && olen > o.size()) abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const uint8_t a = data[0], b = data[1];
    const terse_dtype_t dt = codec_test::kFloatTypes[a & 3];
    tq::Params p;
    p.bits = kBits[(a >> 2) % 5];
    p.log2_block = 5 + (b & 3);
    p.rounding = (b >> 2) & 1 ? tq::kStochastic : tq::kNearest;
    const int nranks = 1 + ((b >> 3) & 3);
    const Isa isa = codec_test::fuzz_isa(b >> 5);
    tq::Instance *inst = make(p, dt, 8, isa);
    if (!inst) return 0;

    if (!(a & 0x80)) {  // raw payload; its header names the count
        const uint8_t *pay = data + 2;
        const size_t len = size - 2;
        if (len >= tq::kHeaderBytes) {
            const uint64_t count = terse_codec::get_u64(pay + 16);
            if (count <= 4096) exercise(inst, pay, len, static_cast<size_t>(count), 1, {});
        }
        tq::destroy_instance(inst);
        return 0;
    }

    // Patched: a valid combined payload of nranks ranks, then damage.
    const size_t count = 1 + (static_cast<size_t>(a & 0x60) << 3) + (size > 2 ? data[2] : 0);
    const size_t esz = terse_codec::dtype_bytes(dt);
    const size_t nb = tq::stats_count(*inst, count);
    std::vector<double> agreed(nb, 0.0), st(nb);
    std::vector<std::vector<uint8_t>> in(nranks, std::vector<uint8_t>(count * esz));
    for (int r = 0; r < nranks; r++) {
        for (size_t i = 0; i < count; i++) {
            const double v = std::sin(0.37 * static_cast<double>(i) + r) * (1 + (i % 7));
            if (dt == TERSE_DTYPE_FLOAT32) {
                const float f = static_cast<float>(v);
                std::memcpy(in[r].data() + 4 * i, &f, 4);
            } else if (dt == TERSE_DTYPE_FLOAT64) {
                std::memcpy(in[r].data() + 8 * i, &v, 8);
            } else {
                const uint16_t h = dt == TERSE_DTYPE_FLOAT16 ? terse_codec::f32_to_f16(static_cast<float>(v))
                                                             : terse_codec::f32_to_bf16(static_cast<float>(v));
                std::memcpy(in[r].data() + 2 * i, &h, 2);
            }
        }
        tq::stats(*inst, in[r].data(), count, st.data());
        for (size_t i = 0; i < nb; i++) agreed[i] = std::max(agreed[i], st[i]);
    }
    const size_t cap = tq::max_encoded_size(*inst, count);
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    call.agreed_stats = agreed.data();
    std::vector<uint8_t> acc;
    int contributors = 0;
    for (int r = 0; r < nranks; r++) {
        std::vector<uint8_t> e(cap);
        size_t len = 0;
        call.seed = static_cast<uint64_t>(r);
        if (tq::encode(*inst, in[r].data(), count, e.data(), cap, &len, &call) != TERSE_CODEC_OK) {
            tq::destroy_instance(inst);
            return 0;  // raw (too short to shrink)
        }
        e.resize(len);
        if (acc.empty()) {
            acc = e;
        } else {
            std::vector<uint8_t> o(cap);
            size_t olen = 0;
            if (tq::combine(*inst, acc.data(), acc.size(), contributors, e.data(), e.size(), 1, count, o.data(),
                            cap, &olen) != TERSE_CODEC_OK)
                abort();  // valid inputs must combine
            o.resize(olen);
            acc = o;
        }
        contributors++;
    }
    std::vector<uint8_t> damaged = acc;
    for (size_t i = 3; i + 2 < size; i += 3) {
        const size_t off = (static_cast<size_t>(data[i]) | (static_cast<size_t>(data[i + 1]) << 8)) %
                           damaged.size();
        damaged[off] ^= data[i + 2];
    }
    exercise(inst, damaged.data(), damaged.size(), count, contributors, acc);
    tq::destroy_instance(inst);
    return 0;
}
