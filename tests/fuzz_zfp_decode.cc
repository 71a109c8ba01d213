// libFuzzer target for the zfp decoder (and encoder), built with ASan and
// UBSan from the plugin source.  libzfp itself is not instrumented, so
// payloads are placed to end exactly at a PROT_NONE guard page: any read past
// a payload by libzfp faults.  With TERSE_ZFP_FUZZ_ORACLE the plugin also
// aborts if libzfp's read position passes its own zero-padded copy (the
// variable modes).  Each input is decoded as it is, then used as elements
// that are encoded, damaged by the input's tail and decoded again.
#include <terse/codec.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" const terse_codec_descriptor_t *terse_codec_entry_v1(void);

namespace {

constexpr size_t kMaxCount = 2048;

// A buffer whose last byte is followed by an unreadable page.
class Guarded {
public:
    Guarded() {
        page_ = size_t(sysconf(_SC_PAGESIZE));
        total_ = 64 * page_;
        base_ = static_cast<uint8_t *>(
            mmap(nullptr, total_ + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (base_ == MAP_FAILED) __builtin_trap();
        if (mprotect(base_ + total_, page_, PROT_NONE) != 0) __builtin_trap();
    }
    // Copy p[0..n) to end at the guard page; returns the copy.
    const uint8_t *place(const uint8_t *p, size_t n) {
        if (n > total_) n = total_;
        uint8_t *dst = base_ + total_ - n;
        if (n) std::memcpy(dst, p, n);
        return dst;
    }

private:
    uint8_t *base_;
    size_t page_, total_;
};

struct Fixture {
    const terse_codec_descriptor_t *d = terse_codec_entry_v1();
    void *inst[2][3] = {};  // [float64?][mode]
    Guarded guard;
    Fixture() {
        const terse_codec_kv_t kv[3] = {{"rate", "6.5"}, {"accuracy", "1e-3"}, {"precision", "11"}};
        char err[256];
        for (int m = 0; m < 3; m++) {
            void *params = nullptr;
            if (d->parse(&kv[m], 1, &params, err, sizeof err) != TERSE_CODEC_OK) __builtin_trap();
            for (int t = 0; t < 2; t++) {
                terse_codec_setup_t s{sizeof(terse_codec_setup_t), t ? TERSE_DTYPE_FLOAT64 : TERSE_DTYPE_FLOAT32,
                                      TERSE_MEM_HOST, 1, kMaxCount};
                if (d->create(params, &s, &inst[t][m], err, sizeof err) != TERSE_CODEC_OK) __builtin_trap();
            }
            d->free_params(params);  // instances keep their own copy
        }
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static Fixture fx;
    if (size < 3) return 0;
    const int t = data[0] & 1, m = ((data[0] >> 1) & 3) % 3, acc = (data[0] >> 3) & 1;
    void *inst = fx.inst[t][m];
    const size_t vs = t ? 8 : 4;
    terse_codec_call_t call{sizeof(terse_codec_call_t), nullptr, 0, nullptr};

    // 1. The input as a payload; count from its header when small enough.
    size_t count = 1 + (data[1] | size_t(data[2]) << 8) % kMaxCount;
    if (size >= 3 + 24 && (data[1] & 1)) {
        uint64_t hc = 0;
        for (int i = 0; i < 8; i++) hc |= uint64_t(data[3 + 16 + i]) << (8 * i);
        if (hc >= 1 && hc <= kMaxCount) count = size_t(hc);
    }
    std::vector<uint8_t> dst(count * vs, 0);
    const uint8_t *payload = fx.guard.place(data + 3, size - 3);
    fx.d->decode(inst, payload, size - 3, dst.data(), count, acc, TERSE_OP_SUM, &call);

    // 2. The input as elements: encode, damage, decode.
    const size_t n = (size - 3) / vs;
    if (n == 0 || n > kMaxCount) return 0;
    std::vector<uint8_t> elems(data + 3, data + 3 + n * vs);
    std::vector<uint8_t> enc(fx.d->max_encoded_size(inst, n));
    size_t len = 0;
    if (fx.d->encode(inst, elems.data(), n, enc.data(), enc.size(), &len, &call) != TERSE_CODEC_OK) return 0;
    if (len > enc.size()) __builtin_trap();
    std::vector<uint8_t> out(n * vs);
    if (fx.d->decode(inst, fx.guard.place(enc.data(), len), len, out.data(), n, 0, TERSE_OP_SUM, &call) !=
        TERSE_CODEC_OK)
        __builtin_trap();  // a payload the encoder wrote must decode
    const uint8_t *tail = data + 3 + n * vs;
    const size_t tail_len = size - 3 - n * vs;
    std::vector<uint8_t> bad(enc.begin(), enc.begin() + len);
    for (size_t i = 0; i + 1 < tail_len; i += 2) bad[tail[i] % bad.size()] ^= tail[i + 1] | 1;
    size_t bad_len = bad.size();
    if (tail_len & 1) bad_len -= 1 + tail[tail_len - 1] % bad_len;
    fx.d->decode(inst, fx.guard.place(bad.data(), bad_len), bad_len, out.data(), n, acc, TERSE_OP_SUM, &call);
    return 0;
}
