// The codec kernels on a real GPU (run by tests/gpu/device-check.sh; built
// by make check whenever the toolkit is, so it cannot rot, and skipped,
// exit 77, without a device):
//   1. frames: quantize's device payloads byte-identical to the CPU codec's,
//      on the sample fields (TERSE_SHARED_DATA, else shared/data or
//      ../shared/data of the tree) and on gradient-like data, for every
//      dtype, width and rounding, odd counts, NaN/Inf chunks; statistics,
//      decode and decode-accumulate bit-identical; combine identical;
//      the lossless reduction (the none codec's decode-accumulate) equal to
//      its host emulation for every dtype and op (NaN sums: NaN on both);
//   2. throughput: each kernel on 256 MiB of float32 input (in GB/s of
//      input), against the card's device-to-device cudaMemcpy of the same
//      bytes (the target: 50% or more).
// Exit 0: every comparison held (throughput is reported, not judged);
// 1: a mismatch or a CUDA failure; 77: no device.
#include "../../plugins/none/none_device.h"
#include "../../plugins/quantize/quantize_codec.h"
#include "../../plugins/quantize/quantize_device.h"
#include "../../plugins/quantize/quantize_device_ops.h"
#include "../codec_test_data.h"
#include "../codec_test_util.h"
#include "gpu_test_util.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace codec_test;
using namespace gpu_test;
namespace tq = terse_quantize;

namespace {

tq::Instance *make_inst(int bits, int log2_block, tq::Rounding r, terse_dtype_t dt, int nranks,
                        terse_mem_kind_t mem, size_t max_count) {
    tq::Params p;
    p.bits = bits;
    p.log2_block = log2_block;
    p.rounding = r;
    terse_codec_setup_t s{};
    s.struct_size = sizeof s;
    s.dtype = dt;
    s.mem_kind = mem;
    s.nranks = nranks;
    s.max_chunk_count = max_count;
    tq::Instance *inst = nullptr;
    char err[256] = {0};
    if (tq::create_instance(p, &s, terse_codec::best_isa(), &inst, err, sizeof err) != TERSE_CODEC_OK) {
        std::fprintf(stderr, "FAIL: create: %s\n", err);
        std::exit(1);
    }
    return inst;
}

// The device side of one instance: workspace and stream, and the call struct.
struct DeviceSide {
    tq::Instance *in;
    DevBuf ws;
    Stream stream;
    DeviceSide(tq::Instance *inst) : in(inst), ws(tq::dev::workspace_size(inst->p, inst->max_chunk_count)) {}
    terse_codec_call_t call(const double *agreed, uint64_t seed) {
        terse_codec_call_t c{};
        c.struct_size = sizeof c;
        c.agreed_stats = agreed;
        c.seed = seed;
        c.stream = stream.s;
        c.workspace = ws.p;
        c.workspace_size = ws.n;
        return c;
    }
};

std::string label(const tq::Instance &in, size_t n, const std::string &what) {
    return std::string(dtype_str(in.dtype)) + " bits=" + std::to_string(in.p.bits) +
           " block=" + std::to_string(1 << in.p.log2_block) +
           (in.p.rounding == tq::kStochastic ? " stochastic" : " nearest") + " n=" + std::to_string(n) + " " +
           what;
}

// One chunk of several ranks through both: stats, encode (local and agreed
// stats), combine, decode and decode-accumulate.
void compare_chunk(terse_dtype_t dt, int bits, tq::Rounding r, int log2_block, const std::vector<Buf> &ranks,
                   const std::string &what) {
    const size_t n = ranks[0].n;
    const int nr = static_cast<int>(ranks.size());
    tq::Instance *host = make_inst(bits, log2_block, r, dt, nr, TERSE_MEM_HOST, n);
    tq::Instance *dinst = make_inst(bits, log2_block, r, dt, nr, TERSE_MEM_CUDA, n);
    DeviceSide dev(dinst);
    const size_t eb = terse_codec::dtype_bytes(dt), nb = tq::stats_count(*host, n);
    const size_t cap = tq::max_encoded_size(*host, n);
    const std::string lab = label(*host, n, what);

    // Statistics, and the agreed ones (max over ranks).
    std::vector<double> agreed(nb, 0.0);
    DevBuf dsrc(n * eb), dstats(nb * 8), dpay(cap), dpay2(cap), dout(n * eb);
    for (int k = 0; k < nr; k++) {
        std::vector<double> hs(nb), ds(nb);
        tq::stats(*host, ranks[k].data(), n, hs.data());
        dsrc.put(ranks[k].data(), n * eb);
        auto c = dev.call(nullptr, 0);
        if (tq::dev::cuda_stats(*dinst, dsrc.p, n, dstats.as<double>(), &c) != TERSE_CODEC_OK)
            fail(lab + ": stats");
        dstats.get(ds.data(), nb * 8);
        if (std::memcmp(hs.data(), ds.data(), nb * 8) != 0) fail(lab + ": stats differ");
        for (size_t b = 0; b < nb; b++) agreed[b] = std::max(agreed[b], hs[b]);
    }
    DevBuf dagreed(nb * 8);
    dagreed.put(agreed.data(), nb * 8);

    // Encode every rank both ways, then sum the payloads as a ring does.
    std::vector<uint8_t> hacc, dacc_h;
    int contributors = 0;
    for (int k = 0; k < nr; k++) {
        std::vector<uint8_t> hp(cap, 0), dp(cap, 0);
        size_t hl = 0, dl = 0;
        terse_codec_call_t hc{};
        hc.struct_size = sizeof hc;
        hc.agreed_stats = agreed.data();
        hc.seed = 77 + k;
        const int hr = tq::encode(*host, ranks[k].data(), n, hp.data(), cap, &hl, &hc);
        dsrc.put(ranks[k].data(), n * eb);
        GPU_CUDA_OK(cudaMemset(dpay.p, 0, cap));
        auto c = dev.call(dagreed.as<double>(), 77 + k);
        const int dr = tq::dev::cuda_encode(*dinst, dsrc.p, n, dpay.p, cap, &dl, &c);
        if (hr != dr) {
            fail(lab + ": encode status cpu " + std::to_string(hr) + " gpu " + std::to_string(dr));
            break;
        }
        // Without agreed stats (a single rank): local ones in the workspace.
        {
            std::vector<uint8_t> hp1(cap, 0), dp1(cap, 0);
            size_t l1 = 0, l2 = 0;
            const int r1 = tq::encode(*host, ranks[k].data(), n, hp1.data(), cap, &l1, nullptr);
            auto c0 = dev.call(nullptr, 0);
            GPU_CUDA_OK(cudaMemset(dpay2.p, 0, cap));
            const int r2 = tq::dev::cuda_encode(*dinst, dsrc.p, n, dpay2.p, cap, &l2, &c0);
            dpay2.get(dp1.data(), cap);
            if (r1 != r2 || (r1 == TERSE_CODEC_OK && (l1 != l2 || hp1 != dp1)))
                fail(lab + ": local-stats encode");
        }
        if (hr != TERSE_CODEC_OK) continue;  // raw: the same on both
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
        const int r1 = tq::combine(*host, hacc.data(), hacc.size(), contributors, hp.data(), hp.size(), 1, n,
                                   ho.data(), cap, &hol);
        DevBuf da(hacc.size()), db(hp.size());
        da.put(hacc.data(), hacc.size());
        db.put(hp.data(), hp.size());
        auto cc = dev.call(nullptr, 0);
        GPU_CUDA_OK(cudaMemset(dpay2.p, 0, cap));
        const int r2 = tq::dev::cuda_combine(*dinst, da.p, hacc.size(), contributors, db.p, hp.size(), 1, n,
                                             dpay2.p, cap, &dol, &cc);
        dpay2.get(dob.data(), cap);
        if (r1 != r2 || hol != dol || ho != dob) fail(lab + ": combine differs");
        ho.resize(hol);
        hacc = ho;
        contributors++;
    }
    if (contributors) {
        // Decode and decode-accumulate (onto rank 0's data) the sum both ways.
        DevBuf dp(hacc.size());
        dp.put(hacc.data(), hacc.size());
        for (int acc = 0; acc < 2; acc++) {
            Buf h = ranks[0];
            std::vector<uint8_t> d(n * eb);
            dout.put(ranks[0].data(), n * eb);
            const int r1 = tq::decode(*host, hacc.data(), hacc.size(), h.data(), n, acc, TERSE_OP_SUM);
            auto c = dev.call(nullptr, 0);
            const int r2 = tq::dev::cuda_decode(*dinst, dp.p, hacc.size(), dout.p, n, acc, TERSE_OP_SUM, &c);
            dout.get(d.data(), n * eb);
            if (r1 != r2 || std::memcmp(h.data(), d.data(), n * eb) != 0)
                fail(lab + (acc ? ": decode-accumulate differs" : ": decode differs"));
        }
        // A damaged payload is refused alike.
        std::vector<uint8_t> bad = hacc;
        bad[1] = 3;  // bits
        dp.put(bad.data(), bad.size());
        Buf h = ranks[0];
        auto c = dev.call(nullptr, 0);
        const int r1 = tq::decode(*host, bad.data(), bad.size(), h.data(), n, 0, TERSE_OP_SUM);
        const int r2 = tq::dev::cuda_decode(*dinst, dp.p, bad.size(), dout.p, n, 0, TERSE_OP_SUM, &c);
        if (r1 != r2) fail(lab + ": corrupt payload not refused alike");
    }
    tq::destroy_instance(host);
    tq::destroy_instance(dinst);
}

void compare_frames() {
    const terse_dtype_t dts[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16,
                                 TERSE_DTYPE_BFLOAT16};
    int cases = 0;
    for (terse_dtype_t dt : dts)
        for (int bits : {1, 2, 4, 8, 16})
            for (tq::Rounding r : {tq::kNearest, tq::kStochastic})
                for (size_t n : {size_t{1}, size_t{33}, size_t{1000}, size_t{65537}, size_t{300001}}) {
                    std::vector<Buf> ranks;
                    for (int k = 0; k < 3; k++)
                        ranks.push_back(make_buf(dt, make_shape(Shape::StudentT, n, n, k)));
                    compare_chunk(dt, bits, r, tq::default_log2_block(bits), ranks, "student-t gradients");
                    cases++;
                }
    // NaN and Inf chunks go raw on both; odd blocks.
    for (terse_dtype_t dt : dts) {
        auto v = make_shape(Shape::Gaussian, 5000, 3, 0);
        v[4097] = NAN;
        compare_chunk(dt, 8, tq::kNearest, 5, {make_buf(dt, v)}, "NaN chunk");
        v[4097] = INFINITY;
        compare_chunk(dt, 4, tq::kStochastic, 16, {make_buf(dt, v)}, "Inf chunk");
        cases += 2;
    }
    // The sample fields.
    int fields = 0;
    std::vector<std::string> files(std::begin(kFields), std::end(kFields));
    files.push_back("transformer_grad_3438080_f32.raw");
    for (const std::string &f : files) {
        const std::vector<float> v = load_field(f);
        if (v.empty()) continue;
        fields++;
        const std::vector<double> d(v.begin(), v.end());
        for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_BFLOAT16})
            for (int bits : {1, 4, 8})
                for (tq::Rounding r : {tq::kNearest, tq::kStochastic}) {
                    compare_chunk(dt, bits, r, tq::default_log2_block(bits), {make_buf(dt, d)}, f);
                    cases++;
                }
    }
    std::printf("frames: %d cases compared (%d sample fields from %s)%s\n", cases, fields,
                shared_data_dir().c_str(), fields ? "" : "; no sample fields found: gradient-like data only");
}

// The lossless reduction on the device against its host emulation (which
// tests/test_reduce_device_body.cc holds to the engine's CPU kernels).
void compare_reduction() {
    const terse_dtype_t dts[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_INT32,
                                 TERSE_DTYPE_INT64,   TERSE_DTYPE_FLOAT16, TERSE_DTYPE_BFLOAT16};
    Stream st;
    int cases = 0;
    for (terse_dtype_t dt : dts)
        for (terse_op_t op : {TERSE_OP_SUM, TERSE_OP_MAX, TERSE_OP_MIN})
            for (size_t n : {size_t{1}, size_t{1001}, size_t{3000017}}) {
                const size_t eb = dt == TERSE_DTYPE_FLOAT64 || dt == TERSE_DTYPE_INT64      ? 8
                                  : dt == TERSE_DTYPE_FLOAT16 || dt == TERSE_DTYPE_BFLOAT16 ? 2
                                                                                            : 4;
                Rng r(n * 31 + dt * 7 + op);
                std::vector<uint8_t> acc(n * eb), in(n * eb);
                for (auto &b : acc) b = static_cast<uint8_t>(r.next());
                for (auto &b : in) b = static_cast<uint8_t>(r.next());
                std::vector<uint8_t> host = acc, dev(n * eb);
                terse_codec::reduce_emulated(terse_codec::ReduceJob{host.data(), in.data(), n, dt, op});
                DevBuf dacc(n * eb), din(n * eb);
                dacc.put(acc.data(), n * eb);
                din.put(in.data(), n * eb);
                if (terse_none::cuda_reduce(terse_codec::ReduceJob{dacc.p, din.p, n, dt, op}, st.s) !=
                    TERSE_CODEC_OK)
                    fail("reduction failed");
                dacc.get(dev.data(), n * eb);
                for (size_t i = 0; i < n; i++) {
                    if (std::memcmp(&host[i * eb], &dev[i * eb], eb) == 0) continue;
                    const bool nan_sum = op == TERSE_OP_SUM && terse_codec::reduce_is_nan(dt, &host[i * eb]) &&
                                         terse_codec::reduce_is_nan(dt, &dev[i * eb]);
                    if (!nan_sum) {
                        fail("reduction dtype " + std::to_string(dt) + " op " + std::to_string(op) + " element " +
                             std::to_string(i));
                        break;
                    }
                }
                cases++;
            }
    std::printf("reduction: %d cases compared\n", cases);
}

// ---------------------------------------------------------------- throughput

void throughput() {
    const size_t bytes = size_t{256} << 20;
    const size_t n = bytes / sizeof(float);
    DevBuf src(bytes), dst(bytes);
    put_gradient_like(src, n);
    Stream st;
    const int reps = 5;
    const double copy_gbs = copy_rate(st.s, bytes, reps);
    std::printf(
        "throughput on %zu MiB inputs, GB/s of input (uncompressed) bytes, against a device-to-device\n"
        "cudaMemcpy of the same bytes: %.0f GB/s of bytes copied (%.0f GB/s of memory traffic, read plus\n"
        "write); target: 50%% of the bytes-copied rate = %.0f GB/s.  Each call includes its checks and\n"
        "the wait for its status.\n",
        bytes >> 20, copy_gbs, 2 * copy_gbs, copy_gbs / 2);
    auto report = [&](const char *what, double t) {
        const double gbs = bytes / t * 1e-9;
        std::printf("  %-48s %8.0f GB/s  %5.1f%% of copy  %5.1f%% of copy traffic%s\n", what, gbs,
                    100 * gbs / copy_gbs, 50 * gbs / copy_gbs,
                    gbs >= copy_gbs / 2 ? "" : "  (below the 50% target)");
    };
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_BFLOAT16}) {
        const size_t count = bytes / (dt == TERSE_DTYPE_FLOAT32 ? 4 : 2);
        for (terse_op_t op : {TERSE_OP_SUM, TERSE_OP_MAX}) {
            const std::string name = std::string("lossless reduction ") +
                                     (dt == TERSE_DTYPE_FLOAT32 ? "float32" : "bfloat16") +
                                     (op == TERSE_OP_SUM ? " sum" : " max");
            report(name.c_str(), best_time(st.s, reps, [&] {
                       terse_none::cuda_reduce(terse_codec::ReduceJob{dst.p, src.p, count, dt, op}, st.s);
                   }));
        }
    }
    for (int bits : {1, 4, 8}) {
        for (tq::Rounding r : {tq::kNearest, tq::kStochastic}) {
            tq::Instance *in = make_inst(bits, tq::default_log2_block(bits), r, TERSE_DTYPE_FLOAT32, 2,
                                         TERSE_MEM_CUDA, n);
            DeviceSide dev(in);
            const size_t nb = tq::stats_count(*in, n), cap = tq::max_encoded_size(*in, n);
            DevBuf stats(nb * 8), pay(cap), sum(cap);
            auto c0 = dev.call(nullptr, 0);
            c0.stream = st.s;
            const std::string name = "quantize bits=" + std::to_string(bits) +
                                     (r == tq::kStochastic ? " stochastic " : " nearest ");
            report((name + "stats").c_str(),
                   best_time(st.s, reps, [&] { tq::dev::cuda_stats(*in, src.p, n, stats.as<double>(), &c0); }));
            auto c = dev.call(stats.as<double>(), 9);
            c.stream = st.s;
            size_t len = 0;
            report((name + "encode").c_str(), best_time(st.s, reps, [&] {
                       if (tq::dev::cuda_encode(*in, src.p, n, pay.p, cap, &len, &c) != TERSE_CODEC_OK)
                           fail(name + "encode failed");
                   }));
            report((name + "decode").c_str(), best_time(st.s, reps, [&] {
                       tq::dev::cuda_decode(*in, pay.p, len, dst.p, n, 0, TERSE_OP_SUM, &c);
                   }));
            report((name + "decode-accumulate").c_str(), best_time(st.s, reps, [&] {
                       tq::dev::cuda_decode(*in, pay.p, len, dst.p, n, 1, TERSE_OP_SUM, &c);
                   }));
            size_t slen = 0;
            report((name + "combine 1+1").c_str(), best_time(st.s, reps, [&] {
                       tq::dev::cuda_combine(*in, pay.p, len, 1, pay.p, len, 1, n, sum.p, cap, &slen, &c);
                   }));
            report((name + "decode-accumulate of a 2-rank sum").c_str(), best_time(st.s, reps, [&] {
                       tq::dev::cuda_decode(*in, sum.p, slen, dst.p, n, 1, TERSE_OP_SUM, &c);
                   }));
            tq::destroy_instance(in);
        }
    }
}

}  // namespace

int main() {
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        std::printf("SKIP: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none listed");
        return 77;
    }
    if (!tq::dev::cuda_built()) {
        std::printf("FAIL: quantize built without its device kernels\n");
        return 1;
    }
    cudaDeviceProp prop{};
    GPU_CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    compare_frames();
    compare_reduction();
    throughput();
    if (failures()) {
        std::printf("FAIL: %d mismatches between the GPU and the CPU codec\n", failures());
        return 1;
    }
    std::printf("PASS: GPU frames, statistics, combine and decode(-accumulate) equal the CPU's\n");
    return 0;
}
