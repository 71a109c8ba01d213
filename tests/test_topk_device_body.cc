// topk's device kernels, emulated on the host (topk_device_body.h run by
// topk_device_emulation.h over the CUDA grid's indices), against the CPU
// codec (the built module, through its C ABI): payloads byte-identical
// (the same k elements, ties to the lower index, the same index coding),
// decoded and accumulated values bit-identical, the same status for every
// raw, short or corrupt case.  This is what checks the radix selection,
// the compaction and the index coding on a machine without a GPU; the
// device check (tests/gpu/device-check.sh) compares the real kernels.
#include "codec_test_data.h"
#include "codec_test_util.h"

#include "../plugins/topk/topk_device_emulation.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <cstring>
#include <string>
#include <vector>

using namespace codec_test;
namespace tk = terse_topk;
namespace tkd = terse_topk::dev;

namespace {

// The built module (terse_topk.so from TERSE_PLUGIN_PATH), driven through
// its C ABI: the CPU codec exactly as the engine runs it.
struct Module {
    void *handle = nullptr;
    const terse_codec_descriptor_t *d = nullptr;
    std::string error;
    Module() {
        const char *env = std::getenv("TERSE_PLUGIN_PATH");
        std::stringstream dirs(env ? env : "");
        std::string dir;
        while (!handle && std::getline(dirs, dir, ':'))
            if (!dir.empty()) handle = dlopen((dir + "/terse_topk.so").c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            error = "terse_topk.so not found in TERSE_PLUGIN_PATH";
            return;
        }
        auto entry = reinterpret_cast<terse_codec_entry_fn>(dlsym(handle, TERSE_CODEC_ENTRY_SYMBOL));
        if (entry) d = entry();
        else error = "no entry point";
    }
    ~Module() {
        if (handle) dlclose(handle);
    }
};

const Module &module() {
    static Module m;
    return m;
}

#define REQUIRE_MODULE() ASSERT_TRUE(module().error.empty()) << module().error

// A host instance of the module, created from parsed parameters.
struct Codec {
    void *params = nullptr, *inst = nullptr;
    std::string err;
    Codec(const std::vector<terse_codec_kv_t> &kv, terse_dtype_t dt, size_t max_count) {
        const terse_codec_descriptor_t *d = module().d;
        char buf[256] = {0};
        if (d->parse(kv.data(), kv.size(), &params, buf, sizeof buf) != TERSE_CODEC_OK) {
            err = buf;
            return;
        }
        terse_codec_setup_t s{};
        s.struct_size = sizeof s;
        s.dtype = dt;
        s.mem_kind = TERSE_MEM_HOST;
        s.nranks = 1;
        s.max_chunk_count = max_count;
        if (d->create(params, &s, &inst, buf, sizeof buf) != TERSE_CODEC_OK) err = buf;
    }
    ~Codec() {
        if (inst) module().d->destroy(inst);
        if (params) module().d->free_params(params);
    }
    Codec(const Codec &) = delete;
    Codec &operator=(const Codec &) = delete;
    bool ok() const { return inst != nullptr; }
    void *instance() const { return inst; }
    const std::string &error() const { return err; }
    size_t max_encoded_size(size_t n) const { return module().d->max_encoded_size(inst, n); }
};

std::vector<std::string> split(const std::string &s, char c) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, c)) out.push_back(item);
    return out;
}

constexpr terse_dtype_t kDtypes[] = {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT64, TERSE_DTYPE_FLOAT16,
                                     TERSE_DTYPE_BFLOAT16};

// A host instance (the module) and the device side's setup, for one spec.
struct Pair {
    std::vector<std::string> keys, values;
    std::vector<terse_codec_kv_t> kv;
    Codec cpu;
    tkd::Setup dev;
    std::vector<uint64_t> ws;
    Pair(const std::string &spec, terse_dtype_t dt, size_t max_count)
        : kv(parse_spec(spec)), cpu(kv, dt, max_count) {
        char err[256] = {0};
        tk::Params p;
        EXPECT_EQ(tk::parse_params(kv.data(), kv.size(), &p, err, sizeof err), TERSE_CODEC_OK) << err;
        dev = tkd::Setup{p, dt, terse_codec::dtype_bytes(dt), max_count};
        ws.assign((tkd::workspace_size(dev) + 7) / 8, 0x5555555555555555ull);
    }
    std::vector<terse_codec_kv_t> parse_spec(const std::string &spec) {
        for (const std::string &item : split(spec, ',')) {
            const size_t eq = item.find('=');
            keys.push_back(item.substr(0, eq));
            values.push_back(item.substr(eq + 1));
        }
        std::vector<terse_codec_kv_t> out;
        for (size_t i = 0; i < keys.size(); i++) out.push_back({keys[i].c_str(), values[i].c_str()});
        return out;
    }
};

std::string what(const std::string &spec, terse_dtype_t dt, size_t n, const char *extra = "") {
    return spec + " " + dtype_str(dt) + " n=" + std::to_string(n) + " " + extra;
}

int codings[2];  // payloads seen with each index coding

::testing::AssertionResult same_encode(Pair &p, const void *src, size_t n,
                                       std::vector<uint8_t> *payload = nullptr, size_t cap = 0) {
    if (!cap) cap = p.cpu.max_encoded_size(n);
    std::vector<uint8_t> a(cap + 16, 0xa5), b(cap + 16, 0xa5);
    size_t la = 0, lb = 0;
    terse_codec_call_t call{};
    call.struct_size = sizeof call;
    const int ra = module().d->encode(p.cpu.instance(), src, n, a.data(), cap, &la, &call);
    const int rb = tkd::emu_encode(p.dev, p.ws.data(), src, n, b.data(), cap, &lb);
    if (ra != rb) return ::testing::AssertionFailure() << "status cpu " << ra << " device " << rb;
    if (ra != TERSE_CODEC_OK) {
        if (b != std::vector<uint8_t>(cap + 16, 0xa5))
            return ::testing::AssertionFailure() << "device wrote on " << rb;
        return ::testing::AssertionSuccess();
    }
    if (la != lb) return ::testing::AssertionFailure() << "length cpu " << la << " device " << lb;
    for (size_t i = 0; i < a.size(); i++)
        if (a[i] != b[i])
            return ::testing::AssertionFailure()
                   << "byte " << i << " of " << la << ": cpu " << int(a[i]) << " device " << int(b[i]);
    codings[a[2] & 1]++;
    if (payload) payload->assign(a.begin(), a.begin() + static_cast<long>(la));
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_decode(Pair &p, const std::vector<uint8_t> &pay, size_t n, const Buf &base,
                                       terse_op_t op = TERSE_OP_SUM) {
    for (int acc = 0; acc < 2; acc++) {
        Buf a = base, b = base;
        terse_codec_call_t call{};
        call.struct_size = sizeof call;
        const int ra = module().d->decode(p.cpu.instance(), pay.data(), pay.size(), a.data(), n, acc, op, &call);
        const int rb = tkd::emu_decode(p.dev, p.ws.data(), pay.data(), pay.size(), b.data(), n, acc, op);
        if (ra != rb)
            return ::testing::AssertionFailure()
                   << "accumulate=" << acc << " status cpu " << ra << " device " << rb;
        if (a.bytes != b.bytes) {
            const size_t eb = terse_codec::dtype_bytes(p.dev.dtype);
            for (size_t i = 0; i < n; i++)
                if (std::memcmp(&a.bytes[i * eb], &b.bytes[i * eb], eb) != 0)
                    return ::testing::AssertionFailure()
                           << "accumulate=" << acc << " status " << ra << " element " << i << ": cpu " << a.get(i)
                           << " device " << b.get(i);
            return ::testing::AssertionFailure() << "accumulate=" << acc << " bytes past the elements differ";
        }
    }
    return ::testing::AssertionSuccess();
}

void check_chunk(Pair &p, const Buf &x, const std::string &label) {
    std::vector<uint8_t> pay;
    ASSERT_TRUE(same_encode(p, x.data(), x.n, &pay)) << label;
    if (pay.empty()) return;
    ASSERT_TRUE(same_decode(p, pay, x.n, x)) << label << " decode";
}

const char *kSpecs[] = {"ratio=0.01,select=sampled", "ratio=0.1,select=exact", "ratio=0.3,select=sampled",
                        "k=1,select=exact",          "k=37,select=sampled",    "k=1000,select=exact"};

}  // namespace

TEST(TopkDeviceBody, EveryDtypeSpecCountAndShape) {
    REQUIRE_MODULE();
    const size_t counts[] = {1, 2, 3, 17, 31, 32, 33, 64, 100, 257, 1000, 4095, 4096, 4097, 10000, 40001};
    int checked = 0;
    for (terse_dtype_t dt : kDtypes)
        for (const char *spec : kSpecs) {
            Pair p(spec, dt, 40001);
            ASSERT_TRUE(p.cpu.ok()) << p.cpu.error();
            for (size_t n : counts)
                for (Shape s : kAllShapes) {
                    const Buf x = make_buf(dt, make_shape(s, n, 5 + n, static_cast<int>(s)));
                    check_chunk(p, x, what(spec, dt, n, shape_name(s)));
                    if (HasFatalFailure()) return;
                    checked++;
                }
        }
    EXPECT_GT(checked, 3000);
}

// Many equal magnitudes: the k-th largest key is shared by many elements,
// and the first ones in index order are kept (signed zeros and x, -x tie).
TEST(TopkDeviceBody, TiesGoToTheLowerIndex) {
    REQUIRE_MODULE();
    for (terse_dtype_t dt : kDtypes)
        for (const char *spec : {"ratio=0.05,select=exact", "k=100,select=sampled", "ratio=0.5,select=exact"}) {
            Pair p(spec, dt, 70000);
            for (size_t n : {size_t{200}, size_t{5000}, size_t{70000}}) {
                std::vector<double> v(n);
                for (size_t i = 0; i < n; i++) v[i] = (i % 3 == 0) ? -0.5 : (i % 3 == 1 ? 0.5 : 0.25);
                check_chunk(p, make_buf(dt, v), what(spec, dt, n, "three levels"));
                for (size_t i = 0; i < n; i++) v[i] = (i % 7 == 0) ? 1.0 : ((i & 1) ? -0.0 : 0.0);
                check_chunk(p, make_buf(dt, v), what(spec, dt, n, "sparse ones, signed zeros"));
                for (size_t i = 0; i < n; i++) v[i] = 3.0;
                check_chunk(p, make_buf(dt, v), what(spec, dt, n, "constant"));
                if (HasFatalFailure()) return;
            }
        }
}

TEST(TopkDeviceBody, NonFiniteChunksGoRaw) {
    REQUIRE_MODULE();
    for (terse_dtype_t dt : kDtypes) {
        Pair p("ratio=0.01", dt, 20000);
        const size_t n = 20000;
        const auto v = make_shape(Shape::Gaussian, n, 1, 0);
        for (double bad : {double(NAN), double(INFINITY), -double(INFINITY), -double(NAN)})
            for (size_t at : {size_t{0}, size_t{4095}, size_t{19999}}) {
                auto w = v;
                w[at] = bad;
                const Buf x = make_buf(dt, w);
                std::vector<uint8_t> pay;
                ASSERT_TRUE(same_encode(p, x.data(), n, &pay)) << what("ratio=0.01", dt, n, "non-finite");
                EXPECT_TRUE(pay.empty());
            }
    }
}

// Clustered indices favour varint gaps, spread ones bit-packed groups;
// both codings must be met and written alike.
TEST(TopkDeviceBody, BothIndexCodings) {
    REQUIRE_MODULE();
    codings[0] = codings[1] = 0;
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_BFLOAT16}) {
        Pair p("ratio=0.02,select=exact", dt, 100000);
        const size_t n = 100000;
        std::vector<double> v(n, 1e-3);
        for (size_t i = 0; i < n; i++) v[i] = 1e-3 * std::sin(double(i));
        for (size_t i = 0; i < 2000; i++) v[40000 + i] = 5.0 + double(i % 13);  // one dense cluster: gaps of 0
        for (size_t i = 0; i < 40; i++) v[i * 2477] = 50.0;                     // and far-apart ones
        check_chunk(p, make_buf(dt, v), what("cluster", dt, n));
        check_chunk(p, make_buf(dt, make_shape(Shape::Gaussian, n, 3, 0)), what("spread", dt, n));
        std::vector<double> w(n, 0.0);
        for (size_t i = 0; i < n; i += 50) w[i] = 1.0 + double(i);  // even spacing
        check_chunk(p, make_buf(dt, w), what("even", dt, n));
        std::vector<double> z(n, 0.0);
        for (size_t i = 0; i < 3; i++) z[i * 45000] = 1.0;  // huge gaps (multi-byte varints)
        check_chunk(p, make_buf(dt, z), what("huge gaps", dt, n));
        // Runs of near neighbours far apart: one wide gap per group of 32
        // makes bit-packing wide, varint pays for it once.
        Pair q("k=64,select=exact", dt, n);
        std::vector<double> runs(n, 0.0);
        for (size_t i = 0; i < 32; i++) {
            runs[2 * i] = 1.0 + double(i);
            runs[70000 + 2 * i] = 2.0 + double(i);
        }
        check_chunk(q, make_buf(dt, runs), what("runs", dt, n));
    }
    EXPECT_GT(codings[0], 0) << "no varint payload met";
    EXPECT_GT(codings[1], 0) << "no bit-packed payload met";
}

TEST(TopkDeviceBody, SampleFieldsAndTransformerGradients) {
    REQUIRE_MODULE();
    std::vector<std::string> files(std::begin(kFields), std::end(kFields));
    files.push_back("transformer_grad_3438080_f32.raw");
    int found = 0;
    for (const std::string &f : files) {
        std::vector<float> v = load_field(f);
        if (v.empty()) continue;
        found++;
        const size_t n = std::min<size_t>(v.size(), 300000);
        std::vector<double> d(v.begin(), v.begin() + static_cast<long>(n));
        for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_BFLOAT16})
            for (const char *spec : {"ratio=0.01", "ratio=0.001,select=exact"}) {
                Pair p(spec, dt, n);
                check_chunk(p, make_buf(dt, d), what(spec, dt, n, f.c_str()));
                if (HasFatalFailure()) return;
            }
    }
    if (found == 0) GTEST_SKIP() << "no sample fields in " << shared_data_dir() << " (set TERSE_SHARED_DATA)";
}

TEST(TopkDeviceBody, ShortOutputsAndLargeChunks) {
    REQUIRE_MODULE();
    for (terse_dtype_t dt : kDtypes) {
        Pair p("ratio=0.01", dt, 300000);
        const Buf x = make_buf(dt, make_shape(Shape::StudentT, 300000, 9, 0), 1);  // misaligned by one element
        std::vector<uint8_t> pay;
        ASSERT_TRUE(same_encode(p, x.data(), x.n, &pay)) << what("ratio=0.01", dt, x.n);
        ASSERT_FALSE(pay.empty());
        for (size_t cap : {pay.size(), pay.size() - 1, size_t{16}, size_t{0}})
            ASSERT_TRUE(same_encode(p, x.data(), x.n, nullptr, cap)) << "cap " << cap;
        ASSERT_TRUE(same_decode(p, pay, x.n, x));
    }
}

TEST(TopkDeviceBody, CorruptPayloadsAreRefusedAlike) {
    REQUIRE_MODULE();
    for (terse_dtype_t dt : {TERSE_DTYPE_FLOAT32, TERSE_DTYPE_FLOAT16})
        for (const char *spec : {"ratio=0.05", "k=40"}) {
            const size_t n = 3000;
            Pair p(spec, dt, n);
            for (int variant = 0; variant < 2; variant++) {
                std::vector<double> v = make_shape(Shape::Laplace, n, 4, variant);
                if (variant) {  // clustered: a varint payload
                    for (size_t i = 0; i < 60; i++) v[1000 + i] = 10.0;
                    for (size_t i = 0; i < 5; i++) v[i * 600] = 20.0;
                }
                const Buf base = make_buf(dt, make_shape(Shape::Gaussian, n, 5, 0));
                std::vector<uint8_t> pay;
                ASSERT_TRUE(same_encode(p, make_buf(dt, v).data(), n, &pay));
                ASSERT_FALSE(pay.empty());
                for (size_t len = 0; len < pay.size(); len += 3) {
                    std::vector<uint8_t> t(pay.begin(), pay.begin() + static_cast<long>(len));
                    ASSERT_TRUE(same_decode(p, t, n, base)) << "truncated to " << len;
                }
                Rng r(31 + variant);
                const size_t vs = terse_codec::dtype_bytes(dt);
                const size_t k = tk::get_u32(pay.data() + 4);
                const size_t section = tk::kHeaderSize + k * vs;
                for (int t = 0; t < 4000; t++) {
                    std::vector<uint8_t> q = pay;
                    const int flips = 1 + static_cast<int>(r.next() % 3);
                    for (int f = 0; f < flips; f++) {
                        // Mostly the index section, where the gaps are checked.
                        const size_t at = (t % 4) ? section + r.next() % (q.size() - section)
                                                  : r.next() % q.size();
                        q[at] ^= static_cast<uint8_t>(1u << (r.next() % 8));
                    }
                    ASSERT_TRUE(same_decode(p, q, n, base)) << "damage " << t;
                }
                ASSERT_TRUE(same_decode(p, pay, n - 1, base));
                ASSERT_TRUE(same_decode(p, pay, n, base, TERSE_OP_MAX));
            }
        }
}

// Index sections written by hand: the edges of both readers (the length of
// a varint gap, trailing or missing bytes, indices at and past count,
// group widths).
TEST(TopkDeviceBody, CraftedIndexSections) {
    REQUIRE_MODULE();
    const size_t n = 1000;
    Pair p("k=2", TERSE_DTYPE_FLOAT32, n);
    auto payload = [&](uint8_t coding, uint32_t k, const std::vector<uint8_t> &section) {
        std::vector<uint8_t> q(tk::kHeaderSize + 4 * k, 0);
        tk::write_header(q.data(), tk::Header{tk::kFormatVersion, TERSE_DTYPE_FLOAT32, coding, 0, k, uint32_t(n),
                                              uint32_t(section.size())});
        for (uint32_t j = 0; j < k; j++) q[tk::kHeaderSize + 4 * j + 3] = 0x3f;  // 0.5..
        q.insert(q.end(), section.begin(), section.end());
        return q;
    };
    const Buf base = make_buf(TERSE_DTYPE_FLOAT32, make_shape(Shape::Gaussian, n, 2, 0));
    const std::vector<std::vector<uint8_t>> varint = {
        {0x85, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01},  // six bytes for one gap
        {0x81, 0x80, 0x80, 0x80, 0x00, 0x00},        // five bytes: gap 1
        {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00},        // a gap of 2^32 - 1
        {0x01, 0x02, 0x80},                          // a trailing continuation byte
        {0x01, 0x02, 0x03},                          // a third gap
        {0x01},                                      // one gap short
        {0xe6, 0x07, 0x00},                          // indices 998, 999
        {0xe7, 0x07, 0x00},                          // indices 999, 1000
        {0x00, 0xe6, 0x07},                          // indices 0, 999
        {},
    };
    for (size_t c = 0; c < varint.size(); c++)
        EXPECT_TRUE(same_decode(p, payload(tk::kVarint, 2, varint[c]), n, base)) << "varint case " << c;
    Pair p33("k=33", TERSE_DTYPE_FLOAT32, n);
    std::vector<uint8_t> groups = {1};  // width 1: 32 gaps of one bit, then a group of one
    for (int b = 0; b < 4; b++) groups.push_back(0x55);
    const std::vector<std::vector<uint8_t>> packed = {
        [&] {
            auto g = groups;
            g.insert(g.end(), {3, 0x05});
            return g;
        }(),  // fine
        [&] {
            auto g = groups;
            g.insert(g.end(), {33, 0, 0, 0, 0, 0});
            return g;
        }(),  // width 33
        [&] {
            auto g = groups;
            g.push_back(3);
            return g;
        }(),  // bits missing
        [&] {
            auto g = groups;
            g.insert(g.end(), {3, 0x05, 0});
            return g;
        }(),     // a trailing byte
        groups,  // a group missing
        [&] {
            auto g = groups;
            g.insert(g.end(), {10, 0xff, 0x03});
            return g;
        }(),  // an index past count
        [&] {
            auto g = groups;
            g[0] = 0;
            g.resize(1);
            g.insert(g.end(), {0});
            return g;
        }(),  // all zero gaps
    };
    for (size_t c = 0; c < packed.size(); c++)
        EXPECT_TRUE(same_decode(p33, payload(tk::kBitpacked, 33, packed[c]), n, base)) << "packed case " << c;
}
