// libFuzzer target for the topk decoder (and encoder), built with ASan and
// UBSan from the plugin sources.  Each input is used twice:
//  1. as a payload, decoded as it is (byte 0 picks dtype and accumulate);
//  2. as elements, encoded, then damaged by the input's tail bytes and
//     decoded again, which reaches deep into well-formed payloads.
// Payloads live in exactly sized heap buffers so ASan sees any overread.
#include <terse/codec.h>

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" const terse_codec_descriptor_t *terse_codec_entry_v1(void);

namespace {

constexpr size_t kMaxCount = 4096;
const terse_dtype_t kDtypes[4] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16,
                                  TERSE_DTYPE_BFLOAT16};
const size_t kSizes[4] = {4, 8, 2, 2};

struct Fixture {
    const terse_codec_descriptor_t *d = terse_codec_entry_v1();
    void *inst[4][2] = {};  // [dtype][exact?]
    void *params[2] = {};
    Fixture() {
        const terse_codec_kv_t kv[2][2] = {{{"ratio", "0.05"}, {"select", "sampled"}},
                                           {{"k", "20"}, {"select", "exact"}}};
        char err[256];
        for (int p = 0; p < 2; p++) {
            if (d->parse(kv[p], 2, &params[p], err, sizeof err) != TERSE_CODEC_OK) __builtin_trap();
            for (int t = 0; t < 4; t++) {
                terse_codec_setup_t s{sizeof(terse_codec_setup_t), kDtypes[t], TERSE_MEM_HOST, 1, kMaxCount};
                if (d->create(params[p], &s, &inst[t][p], err, sizeof err) != TERSE_CODEC_OK) __builtin_trap();
            }
        }
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static Fixture fx;
    if (size < 3) return 0;
    const int t = data[0] & 3, p = (data[0] >> 2) & 1, acc = (data[0] >> 3) & 1;
    void *inst = fx.inst[t][p];
    const size_t vs = kSizes[t];
    terse_codec_call_t call{sizeof(terse_codec_call_t), nullptr, 0, nullptr};

    // 1. The input as a payload; count from its header when small enough.
    size_t count = 1 + (data[1] | size_t(data[2]) << 8) % kMaxCount;
    if (size >= 3 + 12) {
        const uint32_t hc = uint32_t(data[3 + 8]) | uint32_t(data[3 + 9]) << 8 | uint32_t(data[3 + 10]) << 16 |
                            uint32_t(data[3 + 11]) << 24;
        if (hc >= 1 && hc <= kMaxCount && (data[1] & 1)) count = hc;
    }
    std::vector<uint8_t> payload(data + 3, data + size);
    std::vector<uint8_t> dst(count * vs, 0);
    fx.d->decode(inst, payload.data(), payload.size(), dst.data(), count, acc, TERSE_OP_SUM, &call);

    // 2. The input as elements: encode, damage, decode.
    const size_t n = (size - 3) / vs;
    if (n == 0 || n > kMaxCount) return 0;
    std::vector<uint8_t> elems(data + 3, data + 3 + n * vs);
    std::vector<uint8_t> enc(fx.d->max_encoded_size(inst, n));
    size_t len = 0;
    if (fx.d->encode(inst, elems.data(), n, enc.data(), enc.size(), &len, &call) != TERSE_CODEC_OK) return 0;
    if (len > enc.size()) __builtin_trap();
    std::vector<uint8_t> good(enc.begin(), enc.begin() + len);
    std::vector<uint8_t> out(n * vs);
    if (fx.d->decode(inst, good.data(), good.size(), out.data(), n, 0, TERSE_OP_SUM, &call) != TERSE_CODEC_OK)
        __builtin_trap();  // a payload the encoder wrote must decode
    // Damage: the tail of the input gives (position, xor) pairs.
    const uint8_t *tail = data + 3 + n * vs;
    const size_t tail_len = size - 3 - n * vs;
    std::vector<uint8_t> bad = good;
    for (size_t i = 0; i + 1 < tail_len; i += 2) bad[tail[i] % bad.size()] ^= tail[i + 1] | 1;
    if (tail_len & 1) bad.resize(bad.size() - 1 - tail[tail_len - 1] % bad.size());
    fx.d->decode(inst, bad.data(), bad.size(), out.data(), n, acc, TERSE_OP_SUM, &call);
    return 0;
}
