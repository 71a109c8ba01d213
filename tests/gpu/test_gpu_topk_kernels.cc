// topk's kernels on a real GPU (run by tests/gpu/device-check.sh; built by
// make check whenever the toolkit is, so it cannot rot, and skipped, exit
// 77, without a device), through the codec's descriptor as the engine
// drives it (host instances and TERSE_MEM_CUDA ones):
//   1. frames: device payloads byte-identical to the CPU codec's on the
//      sample fields and on gradient-like data, for every dtype, several
//      ratios and fixed k, ties, odd counts, NaN/Inf chunks (raw on both);
//      decode and decode-accumulate bit-identical;
//   2. throughput: encode, decode and decode-accumulate on 256 MiB of
//      float32 (GB/s of input) against the card's device-to-device copy.
// Exit 0: every comparison held (throughput is reported, not judged);
// 1: a mismatch or a CUDA failure; 77: no device.
#include "../../plugins/topk/topk_device.h"
#include "../codec_test_data.h"
#include "../codec_test_util.h"
#include "gpu_test_util.h"

#include <terse/codec.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

extern "C" const terse_codec_descriptor_t *terse_codec_entry_v1(void);

using namespace codec_test;
using namespace gpu_test;

namespace {

const terse_codec_descriptor_t *desc() { return terse_codec_entry_v1(); }

// Parsed parameters and an instance of the descriptor, released with their owner.
struct Inst {
    void *params = nullptr, *inst = nullptr;
    Inst(const std::string &spec, terse_dtype_t dt, terse_mem_kind_t mem, size_t max_count) {
        std::vector<std::string> keys, values;
        std::stringstream ss(spec);
        std::string item;
        while (std::getline(ss, item, ',')) {
            const size_t eq = item.find('=');
            keys.push_back(item.substr(0, eq));
            values.push_back(item.substr(eq + 1));
        }
        std::vector<terse_codec_kv_t> kv;
        for (size_t i = 0; i < keys.size(); i++) kv.push_back({keys[i].c_str(), values[i].c_str()});
        char err[256] = {0};
        terse_codec_setup_t s{};
        s.struct_size = sizeof s;
        s.dtype = dt;
        s.mem_kind = mem;
        s.nranks = 2;
        s.max_chunk_count = max_count;
        if (desc()->parse(kv.data(), kv.size(), &params, err, sizeof err) != TERSE_CODEC_OK ||
            desc()->create(params, &s, &inst, err, sizeof err) != TERSE_CODEC_OK) {
            std::fprintf(stderr, "FAIL: %s: %s\n", spec.c_str(), err);
            std::exit(1);
        }
    }
    ~Inst() {
        desc()->destroy(inst);
        desc()->free_params(params);
    }
    Inst(const Inst &) = delete;
    Inst &operator=(const Inst &) = delete;
};

struct DeviceSide {
    Inst in;
    DevBuf ws;
    Stream stream;
    DeviceSide(const std::string &spec, terse_dtype_t dt, size_t max_count)
        : in(spec, dt, TERSE_MEM_CUDA, max_count), ws(desc()->device_workspace_size(in.inst)) {}
    terse_codec_call_t call() {
        terse_codec_call_t c{};
        c.struct_size = sizeof c;
        c.stream = stream.s;
        c.workspace = ws.p;
        c.workspace_size = ws.n;
        return c;
    }
};

int compare_chunk(const std::string &spec, terse_dtype_t dt, const Buf &x, const std::string &what) {
    const size_t n = x.n, eb = terse_codec::dtype_bytes(dt);
    Inst host(spec, dt, TERSE_MEM_HOST, n);
    DeviceSide dev(spec, dt, n);
    const std::string lab = spec + " " + dtype_str(dt) + " n=" + std::to_string(n) + " " + what;
    const size_t cap = desc()->max_encoded_size(host.inst, n);
    std::vector<uint8_t> hp(cap, 0), dp(cap, 0);
    size_t hl = 0, dl = 0;
    terse_codec_call_t hc{};
    hc.struct_size = sizeof hc;
    const int hr = desc()->encode(host.inst, x.data(), n, hp.data(), cap, &hl, &hc);
    DevBuf dsrc(n * eb), dpay(cap), dout(n * eb);
    dsrc.put(x.data(), n * eb);
    dpay.fill(0);
    auto c = dev.call();
    const int dr = desc()->encode(dev.in.inst, dsrc.p, n, dpay.p, cap, &dl, &c);
    if (hr != dr) {
        fail(lab + ": encode status cpu " + std::to_string(hr) + " gpu " + std::to_string(dr));
        return 0;
    }
    if (hr != TERSE_CODEC_OK) return 1;
    dpay.get(dp.data(), cap);
    if (hl != dl || hp != dp) {
        fail(lab + ": frames differ");
        return 0;
    }
    hp.resize(hl);
    const Buf base = make_buf(dt, make_shape(Shape::Gaussian, n, 77, 0));
    for (int acc = 0; acc < 2; acc++) {
        Buf h = base;
        std::vector<uint8_t> d(n * eb);
        dout.put(base.data(), n * eb);
        const int r1 = desc()->decode(host.inst, hp.data(), hl, h.data(), n, acc, TERSE_OP_SUM, &hc);
        const int r2 = desc()->decode(dev.in.inst, dpay.p, hl, dout.p, n, acc, TERSE_OP_SUM, &c);
        dout.get(d.data(), n * eb);
        if (r1 != r2 || std::memcmp(h.data(), d.data(), n * eb) != 0)
            fail(lab + (acc ? ": decode-accumulate differs" : ": decode differs"));
    }
    std::vector<uint8_t> bad = hp;
    bad[hl - 1] ^= 0x80;  // the index section's last byte
    dpay.put(bad.data(), hl);
    Buf h = base;
    const int r1 = desc()->decode(host.inst, bad.data(), hl, h.data(), n, 0, TERSE_OP_SUM, &hc);
    const int r2 = desc()->decode(dev.in.inst, dpay.p, hl, dout.p, n, 0, TERSE_OP_SUM, &c);
    if (r1 != r2) fail(lab + ": damaged payload not refused alike");
    return 1;
}

void compare_frames() {
    const terse_dtype_t dts[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16,
                                 TERSE_DTYPE_BFLOAT16};
    const char *specs[] = {"ratio=0.01", "ratio=0.1,select=exact", "k=1", "k=5000"};
    int cases = 0;
    for (terse_dtype_t dt : dts)
        for (const char *spec : specs)
            for (size_t n : {size_t{1}, size_t{33}, size_t{1000}, size_t{65537}, size_t{300001}}) {
                cases += compare_chunk(spec, dt, make_buf(dt, make_shape(Shape::StudentT, n, n, 1)), "student-t");
                std::vector<double> ties(n);
                for (size_t i = 0; i < n; i++) ties[i] = (i % 5 == 0) ? -0.5 : (i % 5 == 1 ? 0.5 : 0.0);
                cases += compare_chunk(spec, dt, make_buf(dt, ties), "ties");
            }
    for (terse_dtype_t dt : dts) {
        auto v = make_shape(Shape::Gaussian, 5000, 3, 0);
        v[4097] = NAN;
        cases += compare_chunk("ratio=0.01", dt, make_buf(dt, v), "NaN chunk");
        v[4097] = INFINITY;
        cases += compare_chunk("ratio=0.01", dt, make_buf(dt, v), "Inf chunk");
    }
    int fields = 0;
    std::vector<std::string> files(std::begin(kFields), std::end(kFields));
    files.push_back("transformer_grad_3438080_f32.raw");
    for (const std::string &f : files) {
        const std::vector<float> v = load_field(f);
        if (v.empty()) continue;
        fields++;
        const std::vector<double> d(v.begin(), v.end());
        for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_BFLOAT16})
            for (const char *spec : {"ratio=0.01", "ratio=0.001"})
                cases += compare_chunk(spec, dt, make_buf(dt, d), f);
    }
    std::printf("topk frames: %d cases compared (%d sample fields from %s)%s\n", cases, fields,
                shared_data_dir().c_str(), fields ? "" : "; no sample fields found: gradient-like data only");
}

void throughput() {
    const size_t bytes = size_t{256} << 20;
    const size_t n = bytes / sizeof(float);
    DevBuf src(bytes), dst(bytes);
    put_gradient_like(src, n);
    Stream st;
    const int reps = 5;
    const double copy_gbs = copy_rate(st.s, bytes, reps);
    std::printf("topk throughput on %zu MiB of float32, GB/s of input; device-to-device copy: %.0f GB/s\n",
                bytes >> 20, copy_gbs);
    for (const char *spec : {"ratio=0.01", "ratio=0.001"}) {
        DeviceSide dev(spec, TERSE_DTYPE_FLOAT32, n);
        const size_t cap = desc()->max_encoded_size(dev.in.inst, n);
        DevBuf pay(cap);
        auto c = dev.call();
        c.stream = st.s;
        size_t len = 0;
        const std::string name = std::string("topk ") + spec + " ";
        report(name + "encode", bytes,
               best_time(st.s, reps,
                         [&] {
                             if (desc()->encode(dev.in.inst, src.p, n, pay.p, cap, &len, &c) != TERSE_CODEC_OK)
                                 fail(name + "encode failed");
                         }),
               copy_gbs);
        if (!len) continue;
        report(name + "decode", bytes,
               best_time(st.s, reps,
                         [&] { desc()->decode(dev.in.inst, pay.p, len, dst.p, n, 0, TERSE_OP_SUM, &c); }),
               copy_gbs);
        report(name + "decode-accumulate", bytes,
               best_time(st.s, reps,
                         [&] { desc()->decode(dev.in.inst, pay.p, len, dst.p, n, 1, TERSE_OP_SUM, &c); }),
               copy_gbs);
        std::printf("    (payload %zu bytes)\n", len);
    }
}

}  // namespace

int main() {
    if (!have_device()) return 77;
    if (!terse_topk::dev::cuda_built()) {
        std::printf("FAIL: topk built without its device kernels\n");
        return 1;
    }
    compare_frames();
    throughput();
    if (failures()) {
        std::printf("FAIL: %d mismatches between the GPU and the CPU topk codec\n", failures());
        return 1;
    }
    std::printf("PASS: topk GPU frames and decode(-accumulate) equal the CPU's\n");
    return 0;
}
