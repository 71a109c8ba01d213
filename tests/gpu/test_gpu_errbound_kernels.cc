// errbound's kernels on a real GPU (run by tests/gpu/device-check.sh; built
// by make check whenever the toolkit is, so it cannot rot, and skipped,
// exit 77, without a device):
//   1. frames: device payloads byte-identical to the CPU codec's on the
//      sample fields and on gradient-like data, for every dtype and mode,
//      odd counts, NaN/Inf chunks; statistics, decode and
//      decode-accumulate bit-identical; combined payloads identical;
//   2. throughput: each kernel on 256 MiB of float32 (GB/s of input)
//      against the card's device-to-device cudaMemcpy (target: 50%).
// Exit 0: every comparison held (throughput is reported, not judged);
// 1: a mismatch or a CUDA failure; 77: no device.
#include "../../plugins/errbound/errbound_codec.h"
#include "../../plugins/errbound/errbound_device.h"
#include "../../plugins/errbound/errbound_device_ops.h"
#include "../codec_test_data.h"
#include "../codec_test_util.h"
#include "gpu_test_util.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using namespace codec_test;
using namespace gpu_test;
namespace te = terse_errbound;

namespace {

te::Instance *make_inst(te::Mode m, double bound, terse_dtype_t dt, int nranks, terse_mem_kind_t mem,
                        size_t max_count) {
    te::Params p;
    p.mode = m;
    p.bound = bound;
    terse_codec_setup_t s{};
    s.struct_size = sizeof s;
    s.dtype = dt;
    s.mem_kind = mem;
    s.nranks = nranks;
    s.max_chunk_count = max_count;
    te::Instance *inst = nullptr;
    char err[256] = {0};
    if (te::create_instance(p, &s, terse_codec::best_isa(), &inst, err, sizeof err) != TERSE_CODEC_OK) {
        std::fprintf(stderr, "FAIL: create: %s\n", err);
        std::exit(1);
    }
    return inst;
}

struct DeviceSide {
    DevBuf ws;
    Stream stream;
    explicit DeviceSide(const te::Instance *in) : ws(te::dev::workspace_size(in->max_chunk_count)) {}
    terse_codec_call_t call(const double *agreed) {
        terse_codec_call_t c{};
        c.struct_size = sizeof c;
        c.agreed_stats = agreed;
        c.stream = stream.s;
        c.workspace = ws.p;
        c.workspace_size = ws.n;
        return c;
    }
};

const char *mode_str(te::Mode m) { return m == te::kAbs ? "abs" : m == te::kRel ? "rel" : "norm"; }

void compare_chunk(terse_dtype_t dt, te::Mode mode, double bound, const std::vector<Buf> &ranks,
                   const std::string &what) {
    const size_t n = ranks[0].n;
    const int nr = static_cast<int>(ranks.size());
    te::Instance *host = make_inst(mode, bound, dt, nr, TERSE_MEM_HOST, n);
    te::Instance *dinst = make_inst(mode, bound, dt, nr, TERSE_MEM_CUDA, n);
    DeviceSide dev(dinst);
    const size_t eb = terse_codec::dtype_bytes(dt), ns = te::stats_count(*host, n);
    const size_t cap = te::max_encoded_size(*host, n);
    const std::string lab = std::string(dtype_str(dt)) + " " + mode_str(mode) + "=" + std::to_string(bound) +
                            " n=" + std::to_string(n) + " " + what;
    std::vector<double> agreed(ns, -1e300);
    DevBuf dsrc(n * eb), dstats(ns * 8), dpay(cap), dpay2(cap), dout(n * eb);
    for (int k = 0; k < nr; k++) {
        std::vector<double> hs(ns), ds(ns);
        te::stats(*host, ranks[k].data(), n, hs.data());
        dsrc.put(ranks[k].data(), n * eb);
        auto c = dev.call(nullptr);
        if (te::dev::cuda_stats(*dinst, dsrc.p, n, dstats.as<double>(), &c) != TERSE_CODEC_OK)
            fail(lab + ": stats");
        dstats.get(ds.data(), ns * 8);
        if (std::memcmp(hs.data(), ds.data(), ns * 8) != 0) fail(lab + ": stats differ");
        for (size_t b = 0; b < ns; b++) agreed[b] = std::max(agreed[b], hs[b]);
    }
    DevBuf dagreed(ns * 8);
    dagreed.put(agreed.data(), ns * 8);
    std::vector<uint8_t> hacc;
    int contributors = 0;
    for (int k = 0; k < nr; k++) {
        std::vector<uint8_t> hp(cap, 0), dp(cap, 0);
        size_t hl = 0, dl = 0;
        terse_codec_call_t hc{};
        hc.struct_size = sizeof hc;
        hc.agreed_stats = agreed.data();
        const int hr = te::encode(*host, ranks[k].data(), n, hp.data(), cap, &hl, &hc);
        dsrc.put(ranks[k].data(), n * eb);
        dpay.fill(0);
        auto c = dev.call(dagreed.as<double>());
        const int dr = te::dev::cuda_encode(*dinst, dsrc.p, n, dpay.p, cap, &dl, &c);
        if (hr != dr) {
            fail(lab + ": encode status cpu " + std::to_string(hr) + " gpu " + std::to_string(dr));
            break;
        }
        {  // without agreed stats: the chunk's own, computed on the device
            std::vector<uint8_t> hp1(cap, 0), dp1(cap, 0);
            size_t l1 = 0, l2 = 0;
            const int r1 = te::encode(*host, ranks[k].data(), n, hp1.data(), cap, &l1, nullptr);
            auto c0 = dev.call(nullptr);
            dpay2.fill(0);
            const int r2 = te::dev::cuda_encode(*dinst, dsrc.p, n, dpay2.p, cap, &l2, &c0);
            dpay2.get(dp1.data(), cap);
            if (r1 != r2 || (r1 == TERSE_CODEC_OK && (l1 != l2 || hp1 != dp1)))
                fail(lab + ": local-stats encode");
        }
        if (hr != TERSE_CODEC_OK) continue;
        dpay.get(dp.data(), cap);
        if (hl != dl || hp != dp) {
            fail(lab + ": frames differ (rank " + std::to_string(k) + ")");
            continue;
        }
        hp.resize(hl);
        if (contributors == 0) {
            hacc = hp;
            contributors = 1;
            continue;
        }
        std::vector<uint8_t> ho(cap, 0), dob(cap, 0);
        size_t hol = 0, dol = 0;
        const int r1 = te::combine(*host, hacc.data(), hacc.size(), contributors, hp.data(), hp.size(), 1, n,
                                   ho.data(), cap, &hol);
        DevBuf da(hacc.size()), db(hp.size());
        da.put(hacc.data(), hacc.size());
        db.put(hp.data(), hp.size());
        auto cc = dev.call(nullptr);
        dpay2.fill(0);
        const int r2 = te::dev::cuda_combine(*dinst, da.p, hacc.size(), contributors, db.p, hp.size(), 1, n,
                                             dpay2.p, cap, &dol, &cc);
        dpay2.get(dob.data(), cap);
        if (r1 != r2 || hol != dol || ho != dob) fail(lab + ": combine differs");
        ho.resize(hol);
        hacc = ho;
        contributors++;
    }
    if (contributors) {
        DevBuf dp(hacc.size());
        dp.put(hacc.data(), hacc.size());
        for (int acc = 0; acc < 2; acc++) {
            Buf h = ranks[0];
            std::vector<uint8_t> d(n * eb);
            dout.put(ranks[0].data(), n * eb);
            const int r1 = te::decode(*host, hacc.data(), hacc.size(), h.data(), n, acc, TERSE_OP_SUM);
            auto c = dev.call(nullptr);
            const int r2 = te::dev::cuda_decode(*dinst, dp.p, hacc.size(), dout.p, n, acc, TERSE_OP_SUM, &c);
            dout.get(d.data(), n * eb);
            if (r1 != r2 || std::memcmp(h.data(), d.data(), n * eb) != 0)
                fail(lab + (acc ? ": decode-accumulate differs" : ": decode differs"));
        }
        std::vector<uint8_t> bad = hacc;
        bad[2] = 6;  // log2 of the block
        dp.put(bad.data(), bad.size());
        Buf h = ranks[0];
        auto c = dev.call(nullptr);
        const int r1 = te::decode(*host, bad.data(), bad.size(), h.data(), n, 0, TERSE_OP_SUM);
        const int r2 = te::dev::cuda_decode(*dinst, dp.p, bad.size(), dout.p, n, 0, TERSE_OP_SUM, &c);
        if (r1 != r2) fail(lab + ": corrupt payload not refused alike");
    }
    te::destroy_instance(host);
    te::destroy_instance(dinst);
}

struct ModeBound {
    te::Mode m;
    double b;
};
constexpr ModeBound kModes[] = {{te::kAbs, 1e-4}, {te::kRel, 1e-3}, {te::kNorm, 1e-2}};

void compare_frames() {
    const terse_dtype_t dts[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16,
                                 TERSE_DTYPE_BFLOAT16};
    int cases = 0;
    for (terse_dtype_t dt : dts)
        for (const ModeBound &mb : kModes)
            for (size_t n : {size_t{1}, size_t{33}, size_t{1000}, size_t{65537}, size_t{300001}}) {
                std::vector<Buf> ranks;
                for (int k = 0; k < 3; k++) ranks.push_back(make_buf(dt, make_shape(Shape::StudentT, n, n, k)));
                compare_chunk(dt, mb.m, mb.b, ranks, "student-t gradients");
                cases++;
            }
    for (terse_dtype_t dt : dts) {
        auto v = make_shape(Shape::Gaussian, 5000, 3, 0);
        v[4097] = NAN;
        compare_chunk(dt, te::kAbs, 1e-3, {make_buf(dt, v)}, "NaN chunk");
        v[4097] = INFINITY;
        compare_chunk(dt, te::kRel, 1e-3, {make_buf(dt, v)}, "Inf chunk");
        cases += 2;
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
            for (const ModeBound &mb : kModes) {
                compare_chunk(dt, mb.m, mb.b, {make_buf(dt, d)}, f);
                cases++;
            }
    }
    std::printf("errbound frames: %d cases compared (%d sample fields from %s)%s\n", cases, fields,
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
    std::printf("errbound throughput on %zu MiB of float32, GB/s of input; device-to-device copy: %.0f GB/s\n",
                bytes >> 20, copy_gbs);
    for (const ModeBound &mb : kModes) {
        te::Instance *in = make_inst(mb.m, mb.b, TERSE_DTYPE_FLOAT32, 2, TERSE_MEM_CUDA, n);
        DeviceSide dev(in);
        const size_t ns = te::stats_count(*in, n), cap = te::max_encoded_size(*in, n);
        DevBuf stats(ns * 8), pay(cap), sum(cap);
        auto c = dev.call(nullptr);
        c.stream = st.s;
        const std::string name = std::string("errbound ") + mode_str(mb.m) + "=" + std::to_string(mb.b) + " ";
        // norm's statistics are the CPU's eight ordered lanes: a serial pass, timed once.
        report(name + "stats", bytes,
               best_time(st.s, mb.m == te::kNorm ? 1 : reps,
                         [&] { te::dev::cuda_stats(*in, src.p, n, stats.as<double>(), &c); }),
               copy_gbs);
        auto ca = dev.call(stats.as<double>());
        ca.stream = st.s;
        size_t len = 0;
        report(name + "encode", bytes,
               best_time(st.s, reps,
                         [&] {
                             if (te::dev::cuda_encode(*in, src.p, n, pay.p, cap, &len, &ca) != TERSE_CODEC_OK)
                                 fail(name + "encode failed");
                         }),
               copy_gbs);
        if (!len) continue;
        report(
            name + "decode", bytes,
            best_time(st.s, reps, [&] { te::dev::cuda_decode(*in, pay.p, len, dst.p, n, 0, TERSE_OP_SUM, &c); }),
            copy_gbs);
        report(
            name + "decode-accumulate", bytes,
            best_time(st.s, reps, [&] { te::dev::cuda_decode(*in, pay.p, len, dst.p, n, 1, TERSE_OP_SUM, &c); }),
            copy_gbs);
        size_t slen = 0;
        report(name + "combine 1+1", bytes,
               best_time(
                   st.s, reps,
                   [&] { te::dev::cuda_combine(*in, pay.p, len, 1, pay.p, len, 1, n, sum.p, cap, &slen, &c); }),
               copy_gbs);
        std::printf("    (payload %zu bytes, %.2f bits per element)\n", len, 8.0 * double(len) / double(n));
        te::destroy_instance(in);
    }
}

}  // namespace

int main() {
    if (!have_device()) return 77;
    if (!te::dev::cuda_built()) {
        std::printf("FAIL: errbound built without its device kernels\n");
        return 1;
    }
    compare_frames();
    throughput();
    if (failures()) {
        std::printf("FAIL: %d mismatches between the GPU and the CPU errbound codec\n", failures());
        return 1;
    }
    std::printf("PASS: errbound GPU frames, statistics, combine and decode(-accumulate) equal the CPU's\n");
    return 0;
}
