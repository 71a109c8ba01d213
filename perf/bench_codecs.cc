// terse-bench-codecs: per-core throughput of every codec plugin's encode and
// decode-accumulate on 16 MiB float32 arrays, next to zstd level 1 and direct
// libzfp calls on the same data in the same run (Google Benchmark).
//
// Plugins are the real modules: terse_<name>.so, found in the directories of
// TERSE_PLUGIN_PATH and then the install directory, loaded with dlopen
// through their entry symbol.  A codec whose plugin is missing, or whose
// parameters it refuses, is skipped with a message.
//
// The array is processed in engine-sized chunks (--chunk_bytes, default
// 1 MiB like TERSE_CHUNK_BYTES), one encode / decode call per chunk, as the
// engine does.  Summable codecs get their own stats() as the agreed
// statistics (the single-rank view); stats() is timed separately, and so is
// combine() (each chunk's payload added to itself, as a ring's first
// reduce-scatter hop adds two single-rank payloads), and so is the decode
// of combine()'s payloads (decode_combined, the rest of that hop).  A chunk a
// codec returns raw counts at its raw size in the ratio, and its decode is
// the plain add the engine would do.
//
// Counters: bytes_per_second is input bytes (uncompressed) per CPU second;
// ratio = input bytes / payload bytes (without the engine's 40-byte frame
// header); raw_chunks = chunks the codec sent raw.
//
// Extra flags (before Google Benchmark's own):
//   --chunk_bytes=N    chunk size in bytes (default 1048576)
//   --codecs=S1;S2...  codec specs to run instead of the default list
//   --array_mib=N      array size in MiB (default 16)
#include <terse/codec.h>

#include "input_shapes.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>

#ifdef BENCH_HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef BENCH_HAVE_ZFP
#include <zfp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#ifndef BENCH_PLUGIN_DIR
#define BENCH_PLUGIN_DIR ""
#endif

namespace {

size_t g_chunk_bytes = size_t(1) << 20;
size_t g_array_bytes = size_t(16) << 20;

// ---------------------------------------------------------------- data sets

struct DataSet {
    std::string name;
    std::vector<float> x;
    double max_abs = 0;
};

std::vector<DataSet> make_datasets() {
    std::vector<DataSet> out;
    const size_t n = g_array_bytes / sizeof(float);
    out.push_back({"gradient", input_shapes::as<float>(input_shapes::gradient(n, 1)), 0});
    out.push_back({"smooth", input_shapes::as<float>(input_shapes::smooth(n, 2)), 0});
    const char *dir = std::getenv("TERSE_SHARED_DATA");
    const std::string path = std::string(dir ? dir : "../shared/data") + "/ascent_512x512_f32.raw";
    if (FILE *f = std::fopen(path.c_str(), "rb")) {
        // The 1 MiB image as it is (not tiled: repeats would flatter zstd).
        std::vector<float> v(512 * 512);
        if (std::fread(v.data(), sizeof(float), v.size(), f) == v.size())
            out.push_back({"ascent", std::move(v), 0});
        std::fclose(f);
    } else {
        std::fprintf(stderr, "bench_codecs: %s not found (set TERSE_SHARED_DATA): sample field skipped\n",
                     path.c_str());
    }
    for (auto &d : out)
        for (float v : d.x) d.max_abs = std::max(d.max_abs, double(std::fabs(v)));
    return out;
}

// ---------------------------------------------------------------- plugins

class Plugin {
public:
    static const Plugin *find(const std::string &name) {
        static std::map<std::string, std::unique_ptr<Plugin>> cache;
        auto it = cache.find(name);
        if (it == cache.end()) it = cache.emplace(name, std::unique_ptr<Plugin>(new Plugin(name))).first;
        return it->second->desc_ ? it->second.get() : nullptr;
    }
    const terse_codec_descriptor_t *desc() const { return desc_; }
    const std::string &path() const { return path_; }
    ~Plugin() {
        if (handle_) dlclose(handle_);
    }

private:
    explicit Plugin(const std::string &name) {
        const char *env = std::getenv("TERSE_PLUGIN_PATH");
        std::string dirs = std::string(env ? env : "") + ":" + BENCH_PLUGIN_DIR;
        std::stringstream ss(dirs);
        std::string dir, tried;
        while (std::getline(ss, dir, ':')) {
            if (dir.empty()) continue;
            const std::string p = dir + "/terse_" + name + ".so";
            tried += " " + p;
            if ((handle_ = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) {
                path_ = p;
                break;
            }
        }
        if (!handle_) {
            std::fprintf(stderr, "bench_codecs: codec '%s' skipped: terse_%s.so not found (tried:%s)\n",
                         name.c_str(), name.c_str(), tried.c_str());
            return;
        }
        auto entry = reinterpret_cast<terse_codec_entry_fn>(dlsym(handle_, TERSE_CODEC_ENTRY_SYMBOL));
        const terse_codec_descriptor_t *d = entry ? entry() : nullptr;
        if (!d || d->abi_version != TERSE_CODEC_ABI_VERSION || d->struct_size != sizeof(*d)) {
            std::fprintf(stderr, "bench_codecs: codec '%s' skipped: %s has no valid %s\n", name.c_str(),
                         path_.c_str(), TERSE_CODEC_ENTRY_SYMBOL);
            return;
        }
        desc_ = d;
    }
    void *handle_ = nullptr;
    const terse_codec_descriptor_t *desc_ = nullptr;
    std::string path_;
};

// One configured instance plus the chunking of a data set.
class CodecRun {
public:
    // Returns nullptr (after a message) if the codec cannot run this spec.
    static std::unique_ptr<CodecRun> make(const std::string &spec, const DataSet &data) {
        const std::string name = spec.substr(0, spec.find(':'));
        const Plugin *pl = Plugin::find(name);
        if (!pl) return nullptr;
        std::unique_ptr<CodecRun> r(new CodecRun(pl->desc(), data));
        if (!r->init(spec.find(':') == std::string::npos ? "" : spec.substr(spec.find(':') + 1))) {
            std::fprintf(stderr, "bench_codecs: '%s' skipped: %s\n", spec.c_str(), r->error_.c_str());
            return nullptr;
        }
        return r;
    }
    ~CodecRun() {
        if (inst_) d_->destroy(inst_);
        if (params_) d_->free_params(params_);
    }

    size_t chunks() const { return (data_.x.size() + chunk_ - 1) / chunk_; }
    size_t count(size_t c) const { return std::min(chunk_, data_.x.size() - c * chunk_); }
    const float *src(size_t c) const { return data_.x.data() + c * chunk_; }
    bool summable() const { return d_->mode == TERSE_REDUCE_SUMMABLE; }

    void compute_stats() {
        for (size_t c = 0; c < chunks(); c++) {
            if (summable()) d_->stats(inst_, src(c), count(c), &stats_[c * nstats_], &call_[c]);
        }
    }
    // Encodes every chunk; returns payload bytes (raw chunks at raw size) or
    // -1 on an error.
    double encode_all() {
        double bytes = 0;
        raw_chunks_ = 0;
        for (size_t c = 0; c < chunks(); c++) {
            size_t len = 0;
            const int rc = d_->encode(inst_, src(c), count(c), out_[c].data(), out_[c].size(), &len, &call_[c]);
            if (rc == TERSE_CODEC_RAW) {
                raw_[c] = 1;
                raw_chunks_++;
                len = count(c) * sizeof(float);
            } else if (rc != TERSE_CODEC_OK) {
                error_ = "encode returned " + std::to_string(rc);
                return -1;
            } else {
                raw_[c] = 0;
            }
            len_[c] = len;
            bytes += double(len);
        }
        return bytes;
    }
    // Decode-accumulate every chunk into dst (raw chunks: a plain add).
    bool decode_all(float *dst) {
        for (size_t c = 0; c < chunks(); c++) {
            float *d = dst + c * chunk_;
            if (raw_[c]) {
                const float *s = src(c);
                for (size_t i = 0, n = count(c); i < n; i++) d[i] += s[i];
                continue;
            }
            if (d_->decode(inst_, out_[c].data(), len_[c], d, count(c), 1, TERSE_OP_SUM, &call_[c]) !=
                TERSE_CODEC_OK) {
                error_ = "decode failed";
                return false;
            }
        }
        return true;
    }
    // Combines every chunk's payload with itself (two single-rank
    // payloads, as a ring's reduce-scatter hop does) into out; returns the
    // combined bytes, or -1 on an error.  Raw chunks are skipped: the
    // engine sums those as elements.
    double combine_all(std::vector<std::vector<uint8_t>> *out, std::vector<size_t> *out_len = nullptr) {
        double bytes = 0;
        out->resize(chunks());
        if (out_len) out_len->assign(chunks(), 0);
        for (size_t c = 0; c < chunks(); c++) {
            if (raw_[c]) continue;
            auto &o = (*out)[c];
            o.resize(2 * out_[c].size() + 4096);
            size_t len = 0;
            if (d_->combine(inst_, out_[c].data(), len_[c], 1, out_[c].data(), len_[c], 1, count(c), o.data(),
                            o.size(), &len, &call_[c]) != TERSE_CODEC_OK) {
                error_ = "combine failed";
                return -1;
            }
            if (out_len) (*out_len)[c] = len;
            bytes += double(len);
        }
        return bytes;
    }
    // Makes combine_all()'s payloads the chunks' payloads, which
    // decode_all() then decodes (the rest of that hop); returns their bytes,
    // or -1 on an error.
    double adopt_combined() {
        std::vector<std::vector<uint8_t>> comb;
        std::vector<size_t> len;
        const double bytes = combine_all(&comb, &len);
        if (bytes < 0) return -1;
        for (size_t c = 0; c < chunks(); c++) {
            if (raw_[c]) continue;
            out_[c] = std::move(comb[c]);
            len_[c] = len[c];
        }
        return bytes;
    }
    size_t raw_chunks() const { return raw_chunks_; }
    const std::string &error() const { return error_; }

private:
    CodecRun(const terse_codec_descriptor_t *d, const DataSet &data) : d_(d), data_(data) {}

    bool init(const std::string &params) {
        std::vector<std::string> k, v;
        std::stringstream ss(params);
        std::string item;
        while (std::getline(ss, item, ',')) {
            if (item.empty()) continue;
            k.push_back(item.substr(0, item.find('=')));
            v.push_back(item.find('=') == std::string::npos ? "" : item.substr(item.find('=') + 1));
        }
        std::vector<terse_codec_kv_t> kv;
        for (size_t i = 0; i < k.size(); i++) kv.push_back({k[i].c_str(), v[i].c_str()});
        char err[512] = {0};
        if (d_->parse(kv.data(), kv.size(), &params_, err, sizeof err) != TERSE_CODEC_OK) {
            error_ = std::string("parameters refused: ") + err;
            return false;
        }
        chunk_ = std::max<size_t>(1, g_chunk_bytes / sizeof(float));
        terse_codec_setup_t setup{sizeof(terse_codec_setup_t), TERSE_DTYPE_FLOAT32, TERSE_MEM_HOST, 1, chunk_};
        if (d_->create(params_, &setup, &inst_, err, sizeof err) != TERSE_CODEC_OK) {
            error_ = std::string("create failed: ") + err;
            return false;
        }
        const size_t nc = chunks();
        out_.resize(nc);
        for (size_t c = 0; c < nc; c++) out_[c].resize(d_->max_encoded_size(inst_, count(c)));
        len_.assign(nc, 0);
        raw_.assign(nc, 0);
        nstats_ = summable() ? d_->stats_count(inst_, chunk_) : 0;
        stats_.assign(nc * std::max<size_t>(nstats_, 1), 0.0);
        call_.resize(nc);
        for (size_t c = 0; c < nc; c++) {
            call_[c] = terse_codec_call_t{sizeof(terse_codec_call_t),
                                          summable() ? &stats_[c * nstats_] : nullptr,
                                          0x5eed + c,
                                          nullptr,
                                          nullptr,
                                          0};
        }
        compute_stats();
        return true;
    }

    const terse_codec_descriptor_t *d_;
    const DataSet &data_;
    void *params_ = nullptr;
    void *inst_ = nullptr;
    size_t chunk_ = 0, nstats_ = 0, raw_chunks_ = 0;
    std::vector<std::vector<uint8_t>> out_;
    std::vector<size_t> len_;
    std::vector<char> raw_;
    std::vector<double> stats_;
    std::vector<terse_codec_call_t> call_;
    std::string error_;
};

void set_counters(benchmark::State &st, size_t in_bytes, double payload_bytes, size_t raw_chunks) {
    st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(in_bytes));
    st.counters["ratio"] = payload_bytes > 0 ? double(in_bytes) / payload_bytes : 0.0;
    st.counters["raw_chunks"] = double(raw_chunks);
}

void bench_encode(benchmark::State &st, const std::string &spec, const DataSet *data) {
    auto run = CodecRun::make(spec, *data);
    if (!run) {
        st.SkipWithError("codec not available (see message above)");
        return;
    }
    double payload = 0;
    for (auto _ : st) {
        payload = run->encode_all();
        if (payload < 0) {
            st.SkipWithError(run->error().c_str());
            return;
        }
    }
    set_counters(st, data->x.size() * sizeof(float), payload, run->raw_chunks());
}

void bench_stats(benchmark::State &st, const std::string &spec, const DataSet *data) {
    auto run = CodecRun::make(spec, *data);
    if (!run) {
        st.SkipWithError("codec not available (see message above)");
        return;
    }
    for (auto _ : st) run->compute_stats();
    st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(data->x.size() * sizeof(float)));
}

// combined: decode the payloads combine() made of each chunk's with itself
// (two contributors, one more plane: the rest of the summable hop).
void bench_decode(benchmark::State &st, const std::string &spec, const DataSet *data, bool combined) {
    auto run = CodecRun::make(spec, *data);
    if (!run) {
        st.SkipWithError("codec not available (see message above)");
        return;
    }
    double payload = run->encode_all();
    if (combined && payload >= 0) payload = run->adopt_combined();
    if (payload < 0) {
        st.SkipWithError(run->error().c_str());
        return;
    }
    std::vector<float> dst(data->x.size(), 0.0f);
    for (auto _ : st) {
        if (!run->decode_all(dst.data())) {
            st.SkipWithError(run->error().c_str());
            return;
        }
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    set_counters(st, data->x.size() * sizeof(float), payload, run->raw_chunks());
}

// Input bytes per second of the summable hop's combine: two payloads of a
// chunk in, one out (the ratio counter is input bytes over the output).
void bench_combine(benchmark::State &st, const std::string &spec, const DataSet *data) {
    auto run = CodecRun::make(spec, *data);
    if (!run) {
        st.SkipWithError("codec not available (see message above)");
        return;
    }
    if (run->encode_all() < 0) {
        st.SkipWithError(run->error().c_str());
        return;
    }
    std::vector<std::vector<uint8_t>> out;
    double combined = 0;
    for (auto _ : st) {
        combined = run->combine_all(&out);
        if (combined < 0) {
            st.SkipWithError(run->error().c_str());
            return;
        }
    }
    set_counters(st, data->x.size() * sizeof(float), combined, run->raw_chunks());
}

// ---------------------------------------------------------------- baselines

#ifdef BENCH_HAVE_ZSTD
void bench_zstd(benchmark::State &st, const DataSet *data, bool decode) {
    const size_t chunk = std::max<size_t>(1, g_chunk_bytes / sizeof(float));
    const size_t n = data->x.size(), nc = (n + chunk - 1) / chunk;
    std::vector<std::vector<uint8_t>> out(nc);
    std::vector<size_t> len(nc);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    auto encode_all = [&]() {
        double bytes = 0;
        for (size_t c = 0; c < nc; c++) {
            const size_t cnt = std::min(chunk, n - c * chunk);
            out[c].resize(ZSTD_compressBound(cnt * 4));
            len[c] = ZSTD_compressCCtx(cctx, out[c].data(), out[c].size(), data->x.data() + c * chunk, cnt * 4,
                                       1);
            bytes += double(len[c]);
        }
        return bytes;
    };
    double payload = encode_all();
    std::vector<float> scratch(chunk), dst(n, 0.0f);
    for (auto _ : st) {
        if (!decode) {
            payload = encode_all();
            continue;
        }
        for (size_t c = 0; c < nc; c++) {
            const size_t cnt = std::min(chunk, n - c * chunk);
            ZSTD_decompressDCtx(dctx, scratch.data(), cnt * 4, out[c].data(), len[c]);
            float *d = dst.data() + c * chunk;
            for (size_t i = 0; i < cnt; i++) d[i] += scratch[i];
        }
        benchmark::DoNotOptimize(dst.data());
    }
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
    set_counters(st, n * sizeof(float), payload, 0);
}
#endif

#ifdef BENCH_HAVE_ZFP
// mode: "rate" (value = bits per value) or "accuracy" (value = tolerance).
void bench_libzfp(benchmark::State &st, const DataSet *data, const std::string &mode, double value, bool decode) {
    const size_t chunk = std::max<size_t>(1, g_chunk_bytes / sizeof(float));
    const size_t n = data->x.size(), nc = (n + chunk - 1) / chunk;
    zfp_stream *zs = zfp_stream_open(nullptr);
    if (mode == "rate") zfp_stream_set_rate(zs, value, zfp_type_float, 1, zfp_false);
    else zfp_stream_set_accuracy(zs, value);
    zfp_field *f = zfp_field_1d(nullptr, zfp_type_float, chunk);
    std::vector<std::vector<uint8_t>> out(nc);
    auto encode_all = [&]() {
        double bytes = 0;
        for (size_t c = 0; c < nc; c++) {
            const size_t cnt = std::min(chunk, n - c * chunk);
            zfp_field_set_pointer(f, const_cast<float *>(data->x.data() + c * chunk));
            zfp_field_set_size_1d(f, cnt);
            out[c].resize(zfp_stream_maximum_size(zs, f));
            bitstream *bs = stream_open(out[c].data(), out[c].size());
            zfp_stream_set_bit_stream(zs, bs);
            zfp_stream_rewind(zs);
            bytes += double(zfp_compress(zs, f));
            stream_close(bs);
        }
        return bytes;
    };
    double payload = encode_all();
    std::vector<float> scratch(chunk), dst(n, 0.0f);
    for (auto _ : st) {
        if (!decode) {
            payload = encode_all();
            continue;
        }
        for (size_t c = 0; c < nc; c++) {
            const size_t cnt = std::min(chunk, n - c * chunk);
            zfp_field_set_pointer(f, scratch.data());
            zfp_field_set_size_1d(f, cnt);
            bitstream *bs = stream_open(out[c].data(), out[c].size());
            zfp_stream_set_bit_stream(zs, bs);
            zfp_stream_rewind(zs);
            zfp_decompress(zs, f);
            stream_close(bs);
            float *d = dst.data() + c * chunk;
            for (size_t i = 0; i < cnt; i++) d[i] += scratch[i];
        }
        benchmark::DoNotOptimize(dst.data());
    }
    zfp_field_free(f);
    zfp_stream_close(zs);
    set_counters(st, n * sizeof(float), payload, 0);
}
#endif

// zfp's tolerance is absolute: 1e-3 of each data set's largest magnitude,
// the same for the plugin and for direct libzfp.
double zfp_tolerance(const DataSet &d) { return d.max_abs > 0 ? d.max_abs * 1e-3 : 1e-3; }

std::vector<std::string> default_specs() {
    return {"none",
            "quantize:bits=8",
            "quantize:bits=4",
            "quantize:bits=2",
            "quantize:bits=1",
            "topk:ratio=0.01",
            "topk:ratio=0.01,select=exact",
            "errbound:rel=1e-3",
            "errbound:rel=1e-3,zstd=on",
            "zfp:rate=8",
            "zfp:accuracy=@"};  // @: zfp_tolerance() of the data set
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> specs = default_specs();
    std::vector<char *> rest;
    for (int i = 0; i < argc; i++) {
        const std::string a = argv[i];
        if (a.rfind("--chunk_bytes=", 0) == 0) {
            g_chunk_bytes = std::strtoull(a.c_str() + 14, nullptr, 10);
        } else if (a.rfind("--array_mib=", 0) == 0) {
            g_array_bytes = std::strtoull(a.c_str() + 12, nullptr, 10) << 20;
        } else if (a.rfind("--codecs=", 0) == 0) {
            specs.clear();
            std::stringstream ss(a.substr(9));
            std::string s;
            while (std::getline(ss, s, ';'))
                if (!s.empty()) specs.push_back(s);
        } else {
            rest.push_back(argv[i]);
        }
    }
    if (g_chunk_bytes < sizeof(float) || g_array_bytes == 0) {
        std::fprintf(stderr, "bench_codecs: --chunk_bytes and --array_mib must be positive\n");
        return 2;
    }
    int rargc = int(rest.size());
    benchmark::Initialize(&rargc, rest.data());
    if (benchmark::ReportUnrecognizedArguments(rargc, rest.data())) return 2;

    static const std::vector<DataSet> datasets = make_datasets();
    for (const auto &d : datasets) {
        for (std::string spec : specs) {
            if (const auto at = spec.find('@'); at != std::string::npos) {
                char tol[32];
                std::snprintf(tol, sizeof tol, "%.3g", zfp_tolerance(d));
                spec = spec.substr(0, at) + tol + spec.substr(at + 1);
            }
            const std::string name = spec.substr(0, spec.find(':'));
            if (!Plugin::find(name)) continue;  // message printed once
            benchmark::RegisterBenchmark(("encode/" + d.name + "/" + spec).c_str(), bench_encode, spec, &d)
                ->Unit(benchmark::kMillisecond);
            if (Plugin::find(name)->desc()->mode == TERSE_REDUCE_SUMMABLE) {
                benchmark::RegisterBenchmark(("stats/" + d.name + "/" + spec).c_str(), bench_stats, spec, &d)
                    ->Unit(benchmark::kMillisecond);
                benchmark::RegisterBenchmark(("combine/" + d.name + "/" + spec).c_str(), bench_combine, spec, &d)
                    ->Unit(benchmark::kMillisecond);
                benchmark::RegisterBenchmark(("decode_combined/" + d.name + "/" + spec).c_str(), bench_decode,
                                             spec, &d, true)
                    ->Unit(benchmark::kMillisecond);
            }
            benchmark::RegisterBenchmark(("decode_acc/" + d.name + "/" + spec).c_str(), bench_decode, spec, &d,
                                         false)
                ->Unit(benchmark::kMillisecond);
        }
#ifdef BENCH_HAVE_ZSTD
        benchmark::RegisterBenchmark(("encode/" + d.name + "/zstd-1 (libzstd)").c_str(), bench_zstd, &d, false)
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("decode_acc/" + d.name + "/zstd-1 (libzstd)").c_str(), bench_zstd, &d, true)
            ->Unit(benchmark::kMillisecond);
#endif
#ifdef BENCH_HAVE_ZFP
        const double tol = zfp_tolerance(d);
        char acc[64];
        std::snprintf(acc, sizeof acc, "accuracy=%.3g (libzfp)", tol);
        for (bool dec : {false, true}) {
            const std::string op = dec ? "decode_acc/" : "encode/";
            benchmark::RegisterBenchmark((op + d.name + "/rate=8 (libzfp)").c_str(), bench_libzfp, &d,
                                         std::string("rate"), 8.0, dec)
                ->Unit(benchmark::kMillisecond);
            benchmark::RegisterBenchmark((op + d.name + "/" + acc).c_str(), bench_libzfp, &d,
                                         std::string("accuracy"), std::stod(std::string(acc).substr(9)), dec)
                ->Unit(benchmark::kMillisecond);
        }
#endif
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
