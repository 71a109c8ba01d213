// The codec registry (search path, loading, descriptor checks, errors) and
// the lossless none plugin, loaded from the build tree as a real module.
#include "codec/crc32c.h"
#include "codec/frame.h"
#include "codec/registry.h"
#include "terse_build_config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#ifndef TEST_PLUGIN_DIR
#error "TEST_PLUGIN_DIR must point at the test plugins (tests/.libs)"
#endif

namespace {

using terse::CodecInstance;
using terse::CodecParams;
using terse::CodecPlugin;
using terse::CodecSpec;
using terse::Registry;

std::string plugin_path_env() {
    const char *p = std::getenv("TERSE_PLUGIN_PATH");
    return p && *p ? p : NONE_PLUGIN_DIR;
}

// Every test starts from the same search path: the test plugins, then the
// build tree's real plugins.  (The registry is process-wide; loaded plugins
// stay loaded, which the tests below do not depend on.)
class RegistryTest : public ::testing::Test {
protected:
    void SetUp() override {
        Registry::instance().set_search_path(std::string(TEST_PLUGIN_DIR) + ":" + plugin_path_env());
        terse::clear_error();
    }
    static std::string msg() { return terse::last_error(); }
};

bool contains(const std::string &hay, const std::string &needle) { return hay.find(needle) != std::string::npos; }

// A private temporary directory, removed with its files at scope exit.
struct TempDir {
    std::string path;
    std::vector<std::string> files;
    TempDir() {
        char tmpl[] = "/tmp/terse_registry_XXXXXX";
        const char *p = mkdtemp(tmpl);
        if (p) path = p;
    }
    ~TempDir() {
        for (const auto &f : files) unlink(f.c_str());
        if (!path.empty()) rmdir(path.c_str());
    }
    std::string write(const std::string &name, const std::string &content) {
        std::string f = path + "/" + name;
        std::ofstream(f, std::ios::binary) << content;
        files.push_back(f);
        return f;
    }
};

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ------------------------------------------------------------ finding

TEST_F(RegistryTest, FindsTheNonePlugin) {
    const CodecPlugin *p = nullptr;
    ASSERT_EQ(Registry::instance().find("none", &p), TERSE_OK) << msg();
    ASSERT_NE(p, nullptr);
    EXPECT_STREQ(p->desc->name, "none");
    EXPECT_TRUE(p->lossless());
    // Its payload is the elements: the engine's fast paths key on this flag.
    EXPECT_TRUE(terse::codec_is_identity(p->desc));
    EXPECT_EQ(p->id, terse::crc32c(0, "none", 4));
    EXPECT_TRUE(p->path.ends_with("/terse_none.so")) << p->path;
    const CodecPlugin *again = nullptr;
    ASSERT_EQ(Registry::instance().find("none", &again), TERSE_OK);
    EXPECT_EQ(again, p);
}

TEST_F(RegistryTest, FindIsThreadSafe) {
    std::vector<const CodecPlugin *> got(8, nullptr);
    std::vector<terse::Status> st(8, TERSE_ERR_INVALID);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; i++)
        threads.emplace_back(
            [&, i] { st[i] = Registry::instance().find(i % 2 ? "none" : "goodsummable", &got[i]); });
    for (auto &t : threads) t.join();
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ(st[i], TERSE_OK);
        EXPECT_EQ(got[i], got[i % 2]);
    }
}

TEST_F(RegistryTest, AvailableListsPluginsInSearchPath) {
    auto names = Registry::instance().available();
    auto has = [&](const char *n) { return std::find(names.begin(), names.end(), n) != names.end(); };
    EXPECT_TRUE(has("none"));
    EXPECT_TRUE(has("badabi"));
    EXPECT_TRUE(has("testcodec"));
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

TEST_F(RegistryTest, UnknownCodecListsAvailableAndSearched) {
    const CodecPlugin *p = nullptr;
    EXPECT_EQ(Registry::instance().find("quantise", &p), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(msg(), "unknown codec 'quantise' (available: ")) << msg();
    EXPECT_TRUE(contains(msg(), "none")) << msg();
    EXPECT_TRUE(contains(msg(), "; searched: " TEST_PLUGIN_DIR ", ")) << msg();
}

TEST_F(RegistryTest, InvalidNameIsUnknownAndNeverAPath) {
    const CodecPlugin *p = nullptr;
    for (const char *name : {"../none", "", "None", "a/b"}) {
        EXPECT_EQ(Registry::instance().find(name, &p), TERSE_ERR_PLUGIN) << name;
        EXPECT_TRUE(contains(msg(), std::string("unknown codec '") + name + "'")) << msg();
    }
}

TEST_F(RegistryTest, EmptyAndRepeatedSearchDirsAreIgnored) {
    Registry::instance().set_search_path("::" + plugin_path_env() + "::" + plugin_path_env() + ":");
    const CodecPlugin *p = nullptr;
    ASSERT_EQ(Registry::instance().find("none", &p), TERSE_OK) << msg();
    EXPECT_EQ(Registry::instance().find("nosuchcodec", &p), TERSE_ERR_PLUGIN);
    EXPECT_FALSE(contains(msg(), "searched: ,")) << msg();
    EXPECT_FALSE(contains(msg(), ", , ")) << msg();
}

// ------------------------------------------------------------ refusals

struct Broken {
    const char *file;    // terse_<file>.so in TEST_PLUGIN_DIR
    std::string needle;  // what the message must say
};

// Without this gtest prints the struct's bytes, padding included.
void PrintTo(const Broken &b, std::ostream *os) { *os << b.file; }

class BrokenPluginTest : public RegistryTest, public ::testing::WithParamInterface<Broken> {};

TEST_P(BrokenPluginTest, RefusedWithMessageNamingFileAndProblem) {
    const Broken &b = GetParam();
    const std::string path = std::string(TEST_PLUGIN_DIR) + "/terse_" + b.file + ".so";
    const CodecPlugin *p = nullptr;
    EXPECT_EQ(Registry::instance().load_file(path, &p), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(msg(), "plugin " + path + ": ")) << msg();
    EXPECT_TRUE(contains(msg(), b.needle)) << msg();
    // Looking it up by name gives the same refusal, never a different plugin.
    terse::clear_error();
    EXPECT_EQ(Registry::instance().find(b.file, &p), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(msg(), b.needle)) << msg();
}

INSTANTIATE_TEST_SUITE_P(
    Registry, BrokenPluginTest,
    ::testing::Values(
        Broken{"noentry", "no entry symbol 'terse_codec_entry_v1'"},
        Broken{"nullentry", "terse_codec_entry_v1() returned NULL, expected a codec descriptor"},
        Broken{"throwentry", "terse_codec_entry_v1() threw a C++ exception"},
        Broken{"badabi", "ABI version 7, this terse expects 1"},
        Broken{"badsize", "descriptor struct_size " +
                              std::to_string(sizeof(terse_codec_descriptor_t) - sizeof(void *)) +
                              ", this terse expects " + std::to_string(sizeof(terse_codec_descriptor_t))},
        Broken{"noencode", "required callback 'encode' is NULL"},
        Broken{"badname", "codec name 'othername' does not match its file name, expected 'badname'"},
        Broken{"badsummable",
               "mode summable requires callbacks stats_count, stats and combine, but stats_count is NULL"},
        Broken{"badcombine", "combine is set but mode is recompress"},
        Broken{"badmode", "reduction mode 9 is unknown"}, Broken{"nodtypes", "dtype mask 0x0 is empty"},
        Broken{"baddtype", "dtype mask 0x100002 is out of range"},
        Broken{"badmem", "memory kinds 0x2, expected host"}, Broken{"badreserved", "reserved[3] is not NULL"},
        Broken{"badidentity", "flag TERSE_CODEC_FLAG_IDENTITY requires TERSE_CODEC_FLAG_LOSSLESS"},
        Broken{"badworkspace", "device_workspace_size is set but memory kinds 0x1 do not include cuda"}),
    [](const ::testing::TestParamInfo<Broken> &info) { return std::string(info.param.file); });

TEST_F(RegistryTest, WellFormedSummableLoads) {
    const CodecPlugin *p = nullptr;
    ASSERT_EQ(Registry::instance().load_file(TEST_PLUGIN_DIR "/terse_goodsummable.so", &p), TERSE_OK) << msg();
    EXPECT_EQ(p->desc->mode, TERSE_REDUCE_SUMMABLE);
}

TEST_F(RegistryTest, GarbageFileIsRefused) {
    TempDir dir;
    ASSERT_FALSE(dir.path.empty());
    const std::string path = dir.write("terse_garbage.so", "this is not an ELF shared object\n");
    const CodecPlugin *p = nullptr;
    EXPECT_EQ(Registry::instance().load_file(path, &p), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(msg(), "plugin " + path + ": cannot load: ")) << msg();
    // Found through the search path: the error, not "unknown codec".
    Registry::instance().set_search_path(dir.path + ":" + plugin_path_env());
    terse::clear_error();
    EXPECT_EQ(Registry::instance().find("garbage", &p), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(msg(), "cannot load")) << msg();
}

TEST_F(RegistryTest, FileNameMustBeAPluginName) {
    TempDir dir;
    const std::string path = dir.write("libfoo.so", "x");
    const CodecPlugin *p = nullptr;
    EXPECT_EQ(Registry::instance().load_file(path, &p), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(msg(), "plugin " + path + ": file name must be terse_<name>.so")) << msg();
    EXPECT_EQ(Registry::instance().load_file(dir.path + "/terse_missing.so", &p), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(msg(), "terse_missing.so: no such file")) << msg();
}

TEST_F(RegistryTest, SameFileByAnotherSpellingIsTheSamePlugin) {
    const CodecPlugin *a = nullptr, *b = nullptr;
    ASSERT_EQ(Registry::instance().load_file(TEST_PLUGIN_DIR "/terse_testcodec.so", &a), TERSE_OK) << msg();
    ASSERT_EQ(Registry::instance().load_file(TEST_PLUGIN_DIR "/./terse_testcodec.so", &b), TERSE_OK) << msg();
    EXPECT_EQ(a, b);
}

TEST_F(RegistryTest, SecondCopyOfALoadedCodecIsRefused) {
    const CodecPlugin *none = nullptr;
    ASSERT_EQ(Registry::instance().find("none", &none), TERSE_OK) << msg();
    TempDir dir;
    const std::string copy = dir.write("terse_none.so", read_file(none->path));
    const CodecPlugin *p = nullptr;
    EXPECT_EQ(Registry::instance().load_file(copy, &p), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(msg(), "codec 'none' is already loaded from " + none->path)) << msg();
}

// ------------------------------------------------------------ params and instances

std::unique_ptr<CodecParams> parse_ok(const std::string &name,
                                      std::vector<std::pair<std::string, std::string>> kv = {}) {
    CodecSpec spec;
    spec.name = name;
    spec.params = std::move(kv);
    std::unique_ptr<CodecParams> out;
    EXPECT_EQ(Registry::instance().parse_params(spec, &out), TERSE_OK) << terse::last_error();
    return out;
}

terse::Status parse_err(const std::string &name, std::vector<std::pair<std::string, std::string>> kv) {
    CodecSpec spec;
    spec.name = name;
    spec.params = std::move(kv);
    std::unique_ptr<CodecParams> out;
    terse::clear_error();
    terse::Status st = Registry::instance().parse_params(spec, &out);
    EXPECT_EQ(out, nullptr);
    return st;
}

terse_codec_setup_t setup_for(terse_dtype_t dt, int nranks = 4, terse_mem_kind_t mem = TERSE_MEM_HOST) {
    terse_codec_setup_t s{};
    s.struct_size = sizeof s;
    s.dtype = dt;
    s.mem_kind = mem;
    s.nranks = nranks;
    s.max_chunk_count = 1 << 20;
    return s;
}

// ABI revisions (include/terse/codec.h): a host plugin built against
// revision 2 loads and runs host instances; a revision-3 device codec
// exposes its device workspace for cuda instances only.
TEST_F(RegistryTest, PluginOfRevisionTwoLoadsAsHostOnly) {
    auto p = parse_ok("rev2");
    EXPECT_EQ(p->plugin()->desc->mem_kinds, unsigned{TERSE_MEM_HOST});
    EXPECT_EQ(p->plugin()->desc->device_workspace_size, nullptr);
    std::unique_ptr<CodecInstance> inst;
    ASSERT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32), &inst), TERSE_OK) << msg();
    EXPECT_EQ(inst->device_workspace_size(), 0u);
    EXPECT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32, 4, TERSE_MEM_CUDA), &inst),
              TERSE_ERR_UNSUPPORTED);
    EXPECT_TRUE(contains(msg(), "codec 'rev2' does not support cuda memory (supports: host)")) << msg();
}

TEST_F(RegistryTest, DeviceCodecOfRevisionThreeStatesItsWorkspace) {
    auto p = parse_ok("rev3cuda");
    EXPECT_EQ(p->plugin()->desc->mem_kinds, unsigned{TERSE_MEM_HOST | TERSE_MEM_CUDA});
    std::unique_ptr<CodecInstance> host, dev;
    ASSERT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32), &host), TERSE_OK) << msg();
    EXPECT_EQ(host->device_workspace_size(), 0u);
    ASSERT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32, 4, TERSE_MEM_CUDA), &dev), TERSE_OK)
        << msg();
    EXPECT_EQ(dev->setup().mem_kind, TERSE_MEM_CUDA);
    EXPECT_EQ(dev->device_workspace_size(), size_t{1000} << 20);
    // The memory kinds terse only detects are never a codec's to run on.
    EXPECT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32, 4, TERSE_MEM_CUDA_HOST), &dev),
              TERSE_ERR_UNSUPPORTED);
}

// The quantize, errbound and topk modules name cuda exactly when they were
// built with their kernels.
TEST_F(RegistryTest, DeviceCodecsNameCudaOnlyWithTheirKernels) {
    for (const char *name : {"quantize", "errbound", "topk"}) {
        const CodecPlugin *q = nullptr;
        ASSERT_EQ(Registry::instance().find(name, &q), TERSE_OK) << msg();
#if defined(TERSE_HAVE_CUDA)
        EXPECT_EQ(q->desc->mem_kinds, unsigned{TERSE_MEM_HOST | TERSE_MEM_CUDA}) << name;
        EXPECT_NE(q->desc->device_workspace_size, nullptr) << name;
#else
        EXPECT_EQ(q->desc->mem_kinds, unsigned{TERSE_MEM_HOST}) << name;
        EXPECT_EQ(q->desc->device_workspace_size, nullptr) << name;
#endif
    }
}

TEST_F(RegistryTest, NoneParamsAndCanonical) {
    auto p = parse_ok("none");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->canonical(), "none");
    EXPECT_FALSE(p->feedback_default());
    // "feedback" belongs to the engine; the plugin never sees it.
    EXPECT_NE(parse_ok("none", {{"feedback", "on"}}), nullptr);
}

TEST_F(RegistryTest, NoneRejectsAnyKey) {
    EXPECT_EQ(parse_err("none", {{"bits", "8"}}), TERSE_ERR_INVALID);
    EXPECT_TRUE(contains(terse::last_error(), "codec 'none': unknown key 'bits'")) << terse::last_error();
    EXPECT_TRUE(contains(terse::last_error(), "accepted: none")) << terse::last_error();
}

TEST_F(RegistryTest, ParseOfUnknownCodecIsPluginError) {
    EXPECT_EQ(parse_err("quantise", {}), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(terse::last_error(), "unknown codec 'quantise'"));
}

TEST_F(RegistryTest, CreateChecksDtypeAndMemory) {
    auto p = parse_ok("none");
    std::unique_ptr<CodecInstance> inst;
    EXPECT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT16), &inst), TERSE_ERR_UNSUPPORTED);
    EXPECT_TRUE(
        contains(terse::last_error(),
                 "codec 'none' does not support dtype float16 (supports: float32, float64, int32, int64)"))
        << terse::last_error();
    // none runs on device memory in a build with CUDA (plugins/none/none_device.cu).
#if defined(TERSE_HAVE_CUDA)
    ASSERT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32, 4, TERSE_MEM_CUDA), &inst), TERSE_OK)
        << terse::last_error();
    EXPECT_EQ(inst->setup().mem_kind, TERSE_MEM_CUDA);
    inst.reset();
#else
    EXPECT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32, 4, TERSE_MEM_CUDA), &inst),
              TERSE_ERR_UNSUPPORTED);
    EXPECT_TRUE(contains(terse::last_error(), "does not support cuda memory")) << terse::last_error();
#endif
    EXPECT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32, 4, TERSE_MEM_CUDA_MANAGED), &inst),
              TERSE_ERR_UNSUPPORTED);
    EXPECT_EQ(inst, nullptr);
    ASSERT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_INT64), &inst), TERSE_OK);
    EXPECT_EQ(inst->setup().dtype, TERSE_DTYPE_INT64);
    EXPECT_EQ(inst->plugin()->desc, p->plugin()->desc);
}

// testcodec reports how many params/instances are alive through stats_count.
size_t live(const CodecPlugin *p, size_t which) { return p->desc->stats_count(nullptr, which); }

TEST_F(RegistryTest, PluginErrorsArePrefixedWithCodecName) {
    EXPECT_EQ(parse_err("testcodec", {{"limit", "abc"}}), TERSE_ERR_INVALID);
    EXPECT_STREQ(terse::last_error(), "codec 'testcodec': limit='abc' is not an integer");
    EXPECT_EQ(parse_err("testcodec", {{"silent", "1"}}), TERSE_ERR_INVALID);
    EXPECT_TRUE(contains(terse::last_error(), "codec 'testcodec': failed with status -1 (bad parameter)"))
        << terse::last_error();
    EXPECT_EQ(parse_err("testcodec", {{"throw", "1"}}), TERSE_ERR_PLUGIN);
    EXPECT_TRUE(contains(terse::last_error(), "codec 'testcodec': parse threw a C++ exception"))
        << terse::last_error();

    auto p = parse_ok("testcodec", {{"limit", "4"}, {"feedback", "off"}});
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->canonical(), "testcodec:limit=4");
    std::unique_ptr<CodecInstance> inst;
    terse::clear_error();
    EXPECT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32, 10), &inst), TERSE_ERR_INVALID);
    EXPECT_STREQ(terse::last_error(), "codec 'testcodec': 10 ranks exceed limit=4");
    EXPECT_EQ(inst, nullptr);
}

TEST_F(RegistryTest, OwnersReleaseParamsAndInstances) {
    const CodecPlugin *plugin = nullptr;
    ASSERT_EQ(Registry::instance().find("testcodec", &plugin), TERSE_OK) << msg();
    const size_t params0 = live(plugin, 0), inst0 = live(plugin, 1);
    {
        auto p = parse_ok("testcodec", {{"limit", "64"}});
        EXPECT_EQ(live(plugin, 0), params0 + 1);
        std::unique_ptr<CodecInstance> a, b;
        ASSERT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT32), &a), TERSE_OK);
        ASSERT_EQ(Registry::instance().create(*p, setup_for(TERSE_DTYPE_FLOAT64), &b), TERSE_OK);
        EXPECT_EQ(live(plugin, 1), inst0 + 2);
    }
    EXPECT_EQ(live(plugin, 0), params0);
    EXPECT_EQ(live(plugin, 1), inst0);
}

// ------------------------------------------------------------ the none codec

class NoneCodecTest : public RegistryTest {
protected:
    std::unique_ptr<CodecInstance> make(terse_dtype_t dt) {
        params_ = parse_ok("none");
        std::unique_ptr<CodecInstance> inst;
        EXPECT_EQ(Registry::instance().create(*params_, setup_for(dt), &inst), TERSE_OK) << msg();
        return inst;
    }
    std::unique_ptr<CodecParams> params_;
};

template <typename T>
std::vector<T> random_values(size_t n, std::mt19937_64 &rng) {
    std::vector<T> v(n);
    for (auto &x : v) {
        if constexpr (std::is_floating_point_v<T>)
            x = static_cast<T>(std::uniform_real_distribution<double>(-1e3, 1e3)(rng));
        else x = static_cast<T>(rng());  // full range: sums wrap
    }
    return v;
}

template <typename T>
T ref_op(T a, T b, terse_op_t op) {
    switch (op) {
    case TERSE_OP_SUM:
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
        } else {
            return a + b;
        }
    case TERSE_OP_MAX: return a > b ? a : b;
    case TERSE_OP_MIN: return a < b ? a : b;
    }
    return a;
}

template <typename T>
void check_none_codec(CodecInstance &inst) {
    const terse_codec_descriptor_t *d = inst.desc();
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    std::mt19937_64 rng(1234);
    for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{17}, size_t{1000}, size_t{4099}}) {
        auto src = random_values<T>(n, rng);
        ASSERT_EQ(d->max_encoded_size(inst.get(), n), n * sizeof(T));
        std::vector<uint8_t> enc(n * sizeof(T) + 1);
        size_t len = 12345;
        ASSERT_EQ(d->encode(inst.get(), src.data(), n, enc.data(), enc.size(), &len, &call), TERSE_CODEC_OK);
        ASSERT_EQ(len, n * sizeof(T));
        // The payload is the raw little-endian elements.
        ASSERT_EQ(n ? std::memcmp(enc.data(), src.data(), len) : 0, 0);

        std::vector<T> out(n + 1, T(7));
        ASSERT_EQ(d->decode(inst.get(), enc.data(), len, out.data(), n, 0, TERSE_OP_SUM, &call), TERSE_CODEC_OK);
        ASSERT_EQ(n ? std::memcmp(out.data(), src.data(), len) : 0, 0);
        ASSERT_EQ(out[n], T(7)) << "wrote past count";

        for (terse_op_t op : {TERSE_OP_SUM, TERSE_OP_MAX, TERSE_OP_MIN}) {
            auto acc = random_values<T>(n, rng);
            std::vector<T> want(n);
            for (size_t i = 0; i < n; i++) want[i] = ref_op(acc[i], src[i], op);
            ASSERT_EQ(d->decode(inst.get(), enc.data(), len, acc.data(), n, 1, op, &call), TERSE_CODEC_OK);
            ASSERT_EQ(n ? std::memcmp(acc.data(), want.data(), n * sizeof(T)) : 0, 0)
                << "op " << op << " n " << n;
        }

        if (n) {
            EXPECT_EQ(d->encode(inst.get(), src.data(), n, enc.data(), n * sizeof(T) - 1, &len, &call),
                      TERSE_CODEC_ERR_NOSPACE);
            EXPECT_EQ(d->decode(inst.get(), enc.data(), n * sizeof(T) - 1, out.data(), n, 0, TERSE_OP_SUM, &call),
                      TERSE_CODEC_ERR_CORRUPT);
            EXPECT_EQ(d->decode(inst.get(), enc.data(), n * sizeof(T) + 1, out.data(), n, 1, TERSE_OP_SUM, &call),
                      TERSE_CODEC_ERR_CORRUPT);
        }
    }
}

TEST_F(NoneCodecTest, Float32) {
    auto i = make(TERSE_DTYPE_FLOAT32);
    ASSERT_TRUE(i);
    check_none_codec<float>(*i);
}
TEST_F(NoneCodecTest, Float64) {
    auto i = make(TERSE_DTYPE_FLOAT64);
    ASSERT_TRUE(i);
    check_none_codec<double>(*i);
}
TEST_F(NoneCodecTest, Int32) {
    auto i = make(TERSE_DTYPE_INT32);
    ASSERT_TRUE(i);
    check_none_codec<int32_t>(*i);
}
TEST_F(NoneCodecTest, Int64) {
    auto i = make(TERSE_DTYPE_INT64);
    ASSERT_TRUE(i);
    check_none_codec<int64_t>(*i);
}

TEST_F(NoneCodecTest, IntegerSumWrapsAndExtremes) {
    auto inst = make(TERSE_DTYPE_INT32);
    ASSERT_TRUE(inst);
    const auto *d = inst->desc();
    int32_t in[3] = {1, std::numeric_limits<int32_t>::min(), 5};
    int32_t acc[3] = {std::numeric_limits<int32_t>::max(), -1, -5};
    ASSERT_EQ(d->decode(inst->get(), in, sizeof in, acc, 3, 1, TERSE_OP_SUM, nullptr), TERSE_CODEC_OK);
    EXPECT_EQ(acc[0], std::numeric_limits<int32_t>::min());
    EXPECT_EQ(acc[1], std::numeric_limits<int32_t>::max());
    EXPECT_EQ(acc[2], 0);
}

// The documented NaN rule: max(acc, in) = acc > in ? acc : in (and < for min).
TEST_F(NoneCodecTest, NaNAndInfFollowThePlainComparison) {
    auto inst = make(TERSE_DTYPE_FLOAT64);
    ASSERT_TRUE(inst);
    const auto *d = inst->desc();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const double in[4] = {nan, 1.0, -inf, 2.0};
    for (terse_op_t op : {TERSE_OP_MAX, TERSE_OP_MIN}) {
        double acc[4] = {1.0, nan, 0.0, inf};
        ASSERT_EQ(d->decode(inst->get(), in, sizeof in, acc, 4, 1, op, nullptr), TERSE_CODEC_OK);
        EXPECT_TRUE(std::isnan(acc[0])) << "incoming NaN wins";
        EXPECT_EQ(acc[1], 1.0) << "NaN in the accumulator is replaced";
        EXPECT_EQ(acc[2], op == TERSE_OP_MAX ? 0.0 : -inf);
        EXPECT_EQ(acc[3], op == TERSE_OP_MAX ? inf : 2.0);
    }
    double acc[2] = {inf, nan};
    const double in2[2] = {-inf, 1.0};
    ASSERT_EQ(d->decode(inst->get(), in2, sizeof in2, acc, 2, 1, TERSE_OP_SUM, nullptr), TERSE_CODEC_OK);
    EXPECT_TRUE(std::isnan(acc[0]));
    EXPECT_TRUE(std::isnan(acc[1]));
}

TEST_F(NoneCodecTest, UnknownOpIsRefused) {
    auto inst = make(TERSE_DTYPE_FLOAT32);
    ASSERT_TRUE(inst);
    float a[1] = {1}, b[1] = {2};
    EXPECT_EQ(inst->desc()->decode(inst->get(), b, sizeof b, a, 1, 1, static_cast<terse_op_t>(7), nullptr),
              TERSE_CODEC_ERR_UNSUPPORTED);
}

// Encoded by none, sealed, opened and decoded: the path one chunk takes.
TEST_F(NoneCodecTest, ThroughAFrame) {
    auto inst = make(TERSE_DTYPE_FLOAT32);
    ASSERT_TRUE(inst);
    const auto *d = inst->desc();
    std::vector<float> src(257);
    for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<float>(i) * 0.5f;
    std::vector<uint8_t> frame(terse::kFrameHeaderSize + d->max_encoded_size(inst->get(), src.size()));
    size_t len = 0;
    ASSERT_EQ(d->encode(inst->get(), src.data(), src.size(), frame.data() + terse::kFrameHeaderSize,
                        frame.size() - terse::kFrameHeaderSize, &len, nullptr),
              TERSE_CODEC_OK);
    const uint32_t id = inst->plugin()->id;
    size_t total = terse::frame_seal(frame.data(), TERSE_DTYPE_FLOAT32, 0, id, 1, src.size(), len);
    terse::FrameInfo info{};
    ASSERT_EQ(terse::frame_open(frame.data(), total, TERSE_DTYPE_FLOAT32, id, src.size(), 0, &info), TERSE_OK)
        << msg();
    std::vector<float> out(src.size(), 1.0f);
    ASSERT_EQ(
        d->decode(inst->get(), info.payload, info.payload_len, out.data(), info.count, 1, TERSE_OP_SUM, nullptr),
        TERSE_CODEC_OK);
    for (size_t i = 0; i < src.size(); i++) ASSERT_EQ(out[i], src[i] + 1.0f);
}

}  // namespace

// ABI revision 2: the bounds codecs state, which TERSE_CODEC=auto holds to
// its budget.
TEST_F(RegistryTest, StatedBounds) {
    auto bound = [](const char *text, int nranks, double *v) {
        CodecSpec spec;
        EXPECT_EQ(terse::codec_spec_parse(text, "t", &spec), TERSE_OK);
        std::unique_ptr<terse::CodecParams> p;
        EXPECT_EQ(Registry::instance().parse_params(spec, &p), TERSE_OK) << terse::last_error();
        return p ? p->stated_bound(nranks, v) : TERSE_BOUND_NONE;
    };
    double v = -1;
    EXPECT_EQ(bound("none", 4, &v), TERSE_BOUND_ABS);
    EXPECT_EQ(v, 0);
    const std::vector<std::string> have = Registry::instance().available();
    auto has = [&](const char *n) { return std::find(have.begin(), have.end(), n) != have.end(); };
    if (has("quantize")) {
        EXPECT_EQ(bound("quantize:bits=8", 4, &v), TERSE_BOUND_REL);
        EXPECT_NEAR(v, 4.0 / 254, 1e-9);  // n * m / (2L), L = 127
        EXPECT_EQ(bound("quantize:bits=4,rounding=stochastic", 2, &v), TERSE_BOUND_REL);
        EXPECT_NEAR(v, 2.0 / 7, 1e-9);  // n * m / L, L = 7
        EXPECT_EQ(bound("quantize:bits=1", 3, &v), TERSE_BOUND_REL);
        EXPECT_NEAR(v, 3.0, 1e-8);
    }
    if (has("errbound")) {
        EXPECT_EQ(bound("errbound:abs=1e-4", 8, &v), TERSE_BOUND_ABS);
        EXPECT_DOUBLE_EQ(v, 1e-4);
        EXPECT_EQ(bound("errbound:rel=1e-3", 8, &v), TERSE_BOUND_REL);
        EXPECT_DOUBLE_EQ(v, 2e-3);  // a value range is at most 2 max|x| wide
        EXPECT_EQ(bound("errbound:norm=1e-2", 8, &v), TERSE_BOUND_REL);
        EXPECT_DOUBLE_EQ(v, 1e-2);
    }
    if (has("topk")) EXPECT_EQ(bound("topk", 4, &v), TERSE_BOUND_NONE);
    if (has("zfp")) EXPECT_EQ(bound("zfp:accuracy=1e-3", 4, &v), TERSE_BOUND_NONE);
}
