// libFuzzer target for the errbound decoder and combine(), with and
// without the zstd stage.  Two ways in, chosen by the first byte:
//   raw:     the input after the 2-byte prefix is the payload itself;
//   patched: a valid payload of 1..4 ranks is built from the prefix, then the
//            rest of the input is applied as (offset, xor) patches.
// Decode and combine must return OK or an error, never touch memory they do
// not own (ASan), and decoded values must be finite.
#include "codec_test_util.h"

#include "../plugins/errbound/errbound_codec.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace te = terse_errbound;
using terse_codec::Isa;

namespace {

te::Instance *make(const te::Params &p, terse_dtype_t dt, int nranks, Isa isa) {
    te::Instance *inst = nullptr;
    char err[128];
    if (codec_test::create_host_instance(p, dt, nranks, 1 << 16, isa, &inst, err, sizeof err) != TERSE_CODEC_OK)
        return nullptr;
    return inst;
}

void exercise(te::Instance *inst, const uint8_t *pay, size_t len, size_t count, int contributors,
              const std::vector<uint8_t> &valid) {
    const size_t esz = terse_codec::dtype_bytes(inst->dtype);
    std::vector<uint8_t> out(count * esz + 1);
    const int rc = te::decode(*inst, pay, len, out.data(), count, 0, TERSE_OP_SUM);
    if (rc != TERSE_CODEC_OK && rc != TERSE_CODEC_ERR_CORRUPT) abort();
    if (rc == TERSE_CODEC_OK) codec_test::abort_unless_finite(out, inst->dtype, count);
    te::decode(*inst, pay, len, out.data(), count, 1, TERSE_OP_SUM);
    if (!valid.empty()) {
        std::vector<uint8_t> o(te::max_encoded_size(*inst, count));
        size_t olen = 0;
        const int rc2 = te::combine(*inst, pay, len, contributors, valid.data(), valid.size(), contributors,
                                    count, o.data(), o.size(), &olen);
        if (rc2 == TERSE_CODEC_OK && olen > o.size()) abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const uint8_t a = data[0], b = data[1];
    const terse_dtype_t dt = codec_test::kFloatTypes[a & 3];
    te::Params p;
    p.mode = static_cast<te::Mode>(((a >> 2) & 3) % 3);
    p.bound = p.mode == te::kAbs ? 1e-3 * (1 + (b & 7)) : 1e-3 * (1 + (b & 7)) * 10;
    p.zstd = te::zstd_available() && ((a >> 4) & 1);
    const int nranks = 1 + ((b >> 3) & 3);
    const Isa isa = codec_test::fuzz_isa(b >> 5);
    te::Instance *inst = make(p, dt, 8, isa);
    if (!inst) return 0;

    if (!(a & 0x80)) {
        const uint8_t *pay = data + 2;
        const size_t len = size - 2;
        if (len >= te::kHeaderBytes) {
            const uint64_t count = terse_codec::get_u64(pay + 8);
            if (count <= 4096) exercise(inst, pay, len, static_cast<size_t>(count), 1, {});
        }
        te::destroy_instance(inst);
        return 0;
    }

    const size_t count = 1 + (static_cast<size_t>(a & 0x60) << 3) + (size > 2 ? data[2] : 0);
    const size_t esz = terse_codec::dtype_bytes(dt);
    const size_t ns = te::stats_count(*inst, count);
    std::vector<double> agreed(ns, -INFINITY), st(ns);
    std::vector<std::vector<uint8_t>> in(nranks, std::vector<uint8_t>(count * esz));
    for (int r = 0; r < nranks; r++) {
        for (size_t i = 0; i < count; i++) {
            const double v = std::sin(0.37 * static_cast<double>(i) + r) * (1 + (i % 7)) * 0.1;
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
        te::stats(*inst, in[r].data(), count, st.data());
        for (size_t i = 0; i < ns; i++) agreed[i] = std::max(agreed[i], st[i]);
    }
    const size_t cap = te::max_encoded_size(*inst, count);
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    call.agreed_stats = agreed.data();
    std::vector<uint8_t> acc;
    int contributors = 0;
    for (int r = 0; r < nranks; r++) {
        std::vector<uint8_t> e(cap);
        size_t len = 0;
        if (te::encode(*inst, in[r].data(), count, e.data(), cap, &len, &call) != TERSE_CODEC_OK) {
            te::destroy_instance(inst);
            return 0;  // raw: too short to shrink, or the bound too fine for the type
        }
        e.resize(len);
        if (acc.empty()) {
            acc = e;
        } else {
            std::vector<uint8_t> o(cap);
            size_t olen = 0;
            if (te::combine(*inst, acc.data(), acc.size(), contributors, e.data(), e.size(), 1, count, o.data(),
                            cap, &olen) != TERSE_CODEC_OK)
                abort();
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
    te::destroy_instance(inst);
    return 0;
}
