// Unit tests of the configuration part: grammar, keys, sizes, environment,
// config file, MPI_Info hints, overrides, their precedence, and the error
// messages users see (source, key, bad value, what is accepted).
#include "config/config.h"
#include "runtime/info_hints.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

using namespace terse;

namespace {

// A writable env array for config_read_environment().
struct Env {
    std::vector<std::string> storage;
    std::vector<char *> ptrs;
    Env(std::initializer_list<const char *> vars) : storage(vars.begin(), vars.end()) {
        for (auto &s : storage) ptrs.push_back(s.data());
        ptrs.push_back(nullptr);
    }
    char **get() { return ptrs.data(); }
};

std::string err() { return last_error(); }

void expect_contains(const std::string &msg, std::initializer_list<const char *> parts) {
    for (const char *p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing in: " << msg;
}

// Applies key=value and expects TERSE_ERR_INVALID with every part in the message.
void expect_bad(const char *key, const char *value, std::initializer_list<const char *> parts) {
    CommConfig cfg;
    const std::string before = cfg.canonical();
    clear_error();
    EXPECT_EQ(config_apply(&cfg, key, value, "SRC_X"), TERSE_ERR_INVALID) << key << "=" << value;
    const std::string msg = err();
    expect_contains(msg, {"SRC_X"});
    expect_contains(msg, parts);
    EXPECT_EQ(cfg.canonical(), before) << "a refused value must leave the config unchanged";
}

CommConfig applied(const char *key, const char *value) {
    CommConfig cfg;
    EXPECT_EQ(config_apply(&cfg, key, value, "test"), TERSE_OK) << key << "=" << value << ": " << err();
    return cfg;
}

uint64_t fnv1a(const std::string &s) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

// --------------------------------------------------------------------- codec grammar

TEST(CodecSpec, BareName) {
    CodecSpec s;
    ASSERT_EQ(codec_spec_parse("zfp", "t", &s), TERSE_OK);
    EXPECT_EQ(s.name, "zfp");
    EXPECT_TRUE(s.params.empty());
    EXPECT_EQ(s.text(), "zfp");
}

TEST(CodecSpec, DefaultIsNone) { EXPECT_EQ(CodecSpec{}.text(), "none"); }

TEST(CodecSpec, ParamsKeepWrittenOrderAndCanonicalSorts) {
    CodecSpec s;
    ASSERT_EQ(codec_spec_parse("quantize:bits=4,block=256,a_1=x.5e-3", "t", &s), TERSE_OK);
    EXPECT_EQ(s.name, "quantize");
    ASSERT_EQ(s.params.size(), 3u);
    EXPECT_EQ(s.params[0], (std::pair<std::string, std::string>("bits", "4")));
    EXPECT_EQ(s.params[1], (std::pair<std::string, std::string>("block", "256")));
    EXPECT_EQ(s.params[2], (std::pair<std::string, std::string>("a_1", "x.5e-3")));
    EXPECT_EQ(s.text(), "quantize:a_1=x.5e-3,bits=4,block=256");
    CodecSpec t;
    ASSERT_EQ(codec_spec_parse("quantize:block=256,a_1=x.5e-3,bits=4", "t", &t), TERSE_OK);
    EXPECT_EQ(t.text(), s.text());
}

TEST(CodecSpec, CanonicalTextParsesBack) {
    CodecSpec s, t;
    ASSERT_EQ(codec_spec_parse("topk:ratio=0.01,feedback=on", "t", &s), TERSE_OK);
    ASSERT_EQ(codec_spec_parse(s.text(), "t", &t), TERSE_OK);
    EXPECT_EQ(t.text(), s.text());
}

struct BadSpec {
    const char *text, *reason;
};

// Each spec is refused naming the variable, the spec, the reason and the
// accepted form, and leaves the output as it was.
template <size_t N>
void expect_refused(const BadSpec (&cases)[N], const char *accepted) {
    for (const auto &c : cases) {
        CodecSpec s;
        s.name = "keep";
        clear_error();
        EXPECT_EQ(codec_spec_parse(c.text, "TERSE_CODEC", &s), TERSE_ERR_INVALID) << c.text;
        const std::string msg = err();
        expect_contains(msg, {"TERSE_CODEC", "codec", c.reason, accepted});
        EXPECT_NE(msg.find(std::string("'") + c.text + "'"), std::string::npos) << msg;
        EXPECT_EQ(s.name, "keep") << "a refused spec must leave the output unchanged: " << c.text;
    }
}

TEST(CodecSpec, Errors) {
    const BadSpec cases[] = {
        {"", "name is empty"},
        {":bits=4", "name is empty"},
        {"Quantize", "outside a-z"},
        {"quant ize", "outside a-z"},
        {"quantize-8", "outside a-z"},
        {"quantize:", "nothing follows ':'"},
        {"quantize:bits", "no '=value'"},
        {"quantize:=4", "empty key"},
        {"quantize:Bits=4", "key 'Bits'"},
        {"quantize:bits=", "empty value"},
        {"quantize:bits=4,,block=2", "empty parameter"},
        {"quantize:bits=4,", "empty parameter"},
        {"quantize:,bits=4", "empty parameter"},
        {"quantize:bits=4,bits=8", "given twice"},
        {"quantize:bits=a b", "contains"},
        {"quantize:bits=4=5", "contains"},
        {"quantize:bits=4:block=2", "contains"},
        {"quantize:bits=\t4", "contains"},
        {"quantize:feedback=sometimes", "parameter 'feedback' is not one of default, 1, 0, on, off"},
    };
    expect_refused(cases, "codec[:key=value[,key=value...]]");
}

// --------------------------------------------------------------------- codec=auto

TEST(CodecAuto, CandidatesAndBudget) {
    CodecSpec s;
    ASSERT_EQ(codec_spec_parse("auto:candidates=quantize:bits=8|quantize:bits=4,block=256|errbound:rel=1e-3,"
                               "budget=rel:1e-2",
                               "t", &s),
              TERSE_OK)
        << err();
    EXPECT_TRUE(codec_is_auto(s));
    const AutoCodec a = auto_codec_of(s);
    ASSERT_EQ(a.candidates.size(), 3u);
    EXPECT_EQ(a.candidates[0].text(), "quantize:bits=8");
    EXPECT_EQ(a.candidates[1].text(), "quantize:bits=4,block=256");  // a candidate's second parameter
    EXPECT_EQ(a.candidates[2].text(), "errbound:rel=1e-3");
    EXPECT_EQ(a.budget, AutoCodec::Budget::Rel);
    EXPECT_DOUBLE_EQ(a.budget_value, 1e-2);
    // The canonical text parses back to the same, candidates in written order.
    CodecSpec t;
    ASSERT_EQ(codec_spec_parse(s.text(), "t", &t), TERSE_OK) << s.text() << ": " << err();
    EXPECT_EQ(t.text(), s.text());
    EXPECT_EQ(auto_codec_of(t).candidates[1].text(), "quantize:bits=4,block=256");
    // Without a budget, and with an absolute one.
    ASSERT_EQ(codec_spec_parse("auto:candidates=topk:ratio=0.01", "t", &s), TERSE_OK);
    EXPECT_EQ(auto_codec_of(s).budget, AutoCodec::Budget::None);
    ASSERT_EQ(codec_spec_parse("auto:budget=abs:0.5,candidates=errbound:abs=1e-3", "t", &s), TERSE_OK);
    EXPECT_EQ(auto_codec_of(s).budget, AutoCodec::Budget::Abs);
    EXPECT_DOUBLE_EQ(auto_codec_of(s).budget_value, 0.5);
}

TEST(CodecAuto, FeedbackIsTheEnginesKey) {
    CommConfig cfg;
    ASSERT_EQ(config_apply(&cfg, "codec", "auto:candidates=quantize:bits=4,feedback=on", "t"), TERSE_OK) << err();
    EXPECT_EQ(cfg.feedback, 1);
    EXPECT_EQ(cfg.codec.text(), "auto:candidates=quantize:bits=4");
}

TEST(CodecAuto, Errors) {
    const BadSpec cases[] = {
        {"auto", "auto needs candidates"},
        {"auto:budget=rel:0.1", "auto needs candidates="},
        {"auto:candidates=", "has no value"},
        {"auto:candidates=quantize:bits=8,budget=", "has no value"},
        {"auto:pick=quantize", "auto has no key 'pick'"},
        {"auto:candidates=quantize|Zfp", "candidate 'Zfp'"},
        {"auto:candidates=quantize||zfp", "the codec name is empty"},
        {"auto:candidates=quantize|auto:candidates=zfp", "cannot be auto"},
        {"auto:candidates=quantize:bits=8|quantize:bits=8", "given twice"},
        {"auto:candidates=quantize,candidates=zfp", "'candidates' is given twice"},
        {"auto:candidates=quantize,budget=1e-2", "is not abs:X or rel:X"},
        {"auto:candidates=quantize,budget=max:1e-2", "is not abs:X or rel:X"},
        {"auto:candidates=quantize,budget=rel:", "needs a number in (0, 1]"},
        {"auto:candidates=quantize,budget=rel:2", "needs a number in (0, 1]"},
        {"auto:candidates=quantize,budget=rel:1e-2x", "needs a number"},
        {"auto:candidates=quantize,budget=abs:-1", "needs a number > 0"},
        {"auto:candidates=quantize,budget=abs:inf", "needs a number > 0"},
        {"auto:candidates=quantize,feedback=maybe", "parameter 'feedback' is not one of"},
    };
    expect_refused(cases, "auto:candidates=CODEC[|CODEC...]");
}

TEST(PlannerKey, ModelByDefaultFixedOnRequest) {
    CommConfig cfg;
    EXPECT_EQ(cfg.planner, PlannerMode::Model);
    ASSERT_EQ(config_apply(&cfg, "planner", "fixed", "t"), TERSE_OK);
    EXPECT_EQ(cfg.planner, PlannerMode::Fixed);
    EXPECT_NE(cfg.canonical().find("planner=fixed"), std::string::npos);
    clear_error();
    EXPECT_EQ(config_apply(&cfg, "planner", "fastest", "TERSE_PLANNER"), TERSE_ERR_INVALID);
    expect_contains(err(), {"TERSE_PLANNER", "'fastest'", "model", "fixed"});
    EXPECT_EQ(cfg.planner, PlannerMode::Fixed);
}

// --------------------------------------------------------------------- sizes

TEST(ParseSize, Suffixes) {
    const std::pair<const char *, size_t> cases[] = {
        {"0", 0},
        {"65536", 65536},
        {"64K", 65536},
        {"64k", 65536},
        {"64KiB", 65536},
        {"64kib", 65536},
        {"1M", 1u << 20},
        {"1MiB", 1u << 20},
        {"3m", 3u << 20},
        {"2G", size_t(2) << 30},
        {"1GiB", size_t(1) << 30},
        {"1T", size_t(1) << 40},
        {"1TiB", size_t(1) << 40},
        {"007", 7},
    };
    for (const auto &[text, want] : cases) {
        size_t v = 12345;
        EXPECT_EQ(parse_size(text, "t", &v), TERSE_OK) << text << ": " << err();
        EXPECT_EQ(v, want) << text;
    }
}

TEST(ParseSize, Errors) {
    const char *cases[] = {"",
                           "K",
                           "-1",
                           "+1",
                           "1.5M",
                           "1KB",
                           "1 K",
                           "1e6",
                           "0x10",
                           "1Ki",
                           "M1",
                           "99999999999999999999",
                           "18014398509481984K",
                           "16777216T"};
    for (const char *text : cases) {
        size_t v = 12345;
        clear_error();
        EXPECT_EQ(parse_size(text, "TERSE_MIN_BYTES", &v), TERSE_ERR_INVALID) << text;
        EXPECT_EQ(v, 12345u);
        expect_contains(err(), {"TERSE_MIN_BYTES", "K, M, G", "1024"});
        EXPECT_NE(err().find(std::string("'") + text + "'"), std::string::npos) << err();
    }
}

// --------------------------------------------------------------------- keys

TEST(ConfigApply, Booleans) {
    for (const char *v : {"1", "on", "true", "yes", "ON", "True", "YES"}) {
        EXPECT_TRUE(applied("verify", v).verify) << v;
        CommConfig c;
        c.enable = false;
        ASSERT_EQ(config_apply(&c, "enable", v, "t"), TERSE_OK);
        EXPECT_TRUE(c.enable);
    }
    for (const char *v : {"0", "off", "false", "no", "OFF"}) {
        EXPECT_FALSE(applied("enable", v).enable) << v;
        CommConfig c;
        c.verify = true;
        ASSERT_EQ(config_apply(&c, "verify", v, "t"), TERSE_OK);
        EXPECT_FALSE(c.verify);
    }
    for (const char *key : {"enable", "verify"})
        for (const char *v : {"", "2", "enabled", "y", "o n"})
            expect_bad(key, v, {key, "'", "accepted", "on, off"});
}

TEST(ConfigApply, Codec) {
    EXPECT_EQ(applied("codec", "quantize:bits=8").codec.text(), "quantize:bits=8");
    EXPECT_EQ(applied("codec", "  zfp:rate=8  ").codec.text(), "zfp:rate=8");
    expect_bad("codec", "zfp:rate", {"'zfp:rate'", "for codec", "codec[:key=value"});
    expect_bad("codec", "", {"''", "for codec", "name is empty"});
}

TEST(ConfigApply, FeedbackInsideCodecSpecGoesToFeedbackKey) {
    CommConfig c = applied("codec", "quantize:bits=8,feedback=on,block=64");
    EXPECT_EQ(c.codec.text(), "quantize:bits=8,block=64");
    EXPECT_EQ(c.feedback, 1);
    c = applied("codec", "topk:feedback=off");
    EXPECT_EQ(c.codec.text(), "topk");
    EXPECT_EQ(c.feedback, 0);
    // Without the parameter the feedback setting stays as it was.
    ASSERT_EQ(config_apply(&c, "codec", "zfp:rate=8", "t"), TERSE_OK);
    EXPECT_EQ(c.feedback, 0);
    // The later of the two wins, as for any key.
    ASSERT_EQ(config_apply(&c, "feedback", "default", "t"), TERSE_OK);
    EXPECT_EQ(c.feedback, -1);
    expect_bad("codec", "quantize:bits=8,feedback=sometimes",
               {"'quantize:bits=8,feedback=sometimes'", "for codec", "'sometimes'", "default, 1, 0, on, off"});
}

TEST(ConfigApply, MinBytes) {
    EXPECT_EQ(applied("min_bytes", "0").min_bytes, 0u);
    EXPECT_EQ(applied("min_bytes", "32K").min_bytes, 32768u);
    EXPECT_EQ(applied("min_bytes", "1T").min_bytes, size_t(1) << 40);
    EXPECT_EQ(applied("min_bytes", "1099511627776").min_bytes, size_t(1) << 40);
    for (const char *v : {"1099511627777", "2T", "-5", "lots", "1.5K", ""})
        expect_bad("min_bytes", v, {"for min_bytes", "0..1T", "K, M, G"});
    expect_bad("min_bytes", "2T", {"'2T'"});
}

TEST(ConfigApply, ChunkBytes) {
    EXPECT_EQ(applied("chunk_bytes", "4K").chunk_bytes, 4096u);
    EXPECT_EQ(applied("chunk_bytes", "4096").chunk_bytes, 4096u);
    EXPECT_EQ(applied("chunk_bytes", "256KiB").chunk_bytes, 262144u);
    EXPECT_EQ(applied("chunk_bytes", "1G").chunk_bytes, size_t(1) << 30);
    for (const char *v : {"4095", "0", "1073741825", "2G", "1T", "big"})
        expect_bad("chunk_bytes", v, {"for chunk_bytes", "4K..1G", v});
    EXPECT_EQ(applied("chunk_bytes", " 1M ").chunk_bytes, 1u << 20);
}

TEST(ConfigApply, PipelineDepth) {
    EXPECT_EQ(applied("pipeline_depth", "1").pipeline_depth, 1);
    EXPECT_EQ(applied("pipeline_depth", "64").pipeline_depth, 64);
    EXPECT_EQ(applied("pipeline_depth", "8").pipeline_depth, 8);
    for (const char *v : {"0", "65", "-1", "4x", "", "1e1", "99999999999999999999999"})
        expect_bad("pipeline_depth", v, {"for pipeline_depth", "an integer 1..64"});
    CommConfig cfg;
    ASSERT_EQ(config_apply(&cfg, "pipeline_depth", "0", "TERSE_PIPELINE_DEPTH"), TERSE_ERR_INVALID);
    EXPECT_EQ(err(), "TERSE_PIPELINE_DEPTH: invalid value '0' for pipeline_depth (accepted: an integer 1..64)");
}

TEST(ConfigApply, Algorithm) {
    EXPECT_EQ(applied("algorithm", "auto").algorithm, Algorithm::Auto);
    EXPECT_EQ(applied("algorithm", "ring").algorithm, Algorithm::Ring);
    EXPECT_EQ(applied("algorithm", "Ring").algorithm, Algorithm::Ring);
    EXPECT_EQ(applied("algorithm", "recursive_doubling").algorithm, Algorithm::RecursiveDoubling);
    EXPECT_EQ(applied("algorithm", "gather").algorithm, Algorithm::Gather);
    for (const char *v : {"rd", "tree", "", "recursive-doubling"})
        expect_bad("algorithm", v, {"for algorithm", "auto, ring, recursive_doubling, gather"});
    EXPECT_STREQ(algorithm_name(Algorithm::Auto), "auto");
    EXPECT_STREQ(algorithm_name(Algorithm::Ring), "ring");
    EXPECT_STREQ(algorithm_name(Algorithm::RecursiveDoubling), "recursive_doubling");
    EXPECT_STREQ(algorithm_name(Algorithm::Gather), "gather");
}

TEST(ConfigApply, GuardInsideCodecSpecGoesToGuardKey) {
    CommConfig c = applied("codec", "quantize:bits=8,guard=100,feedback=on");
    EXPECT_EQ(c.codec.text(), "quantize:bits=8");
    EXPECT_EQ(c.guard, 100u);
    EXPECT_EQ(c.feedback, 1);
    // Without the parameter the guard setting stays as it was.
    ASSERT_EQ(config_apply(&c, "codec", "quantize:bits=4", "t"), TERSE_OK);
    EXPECT_EQ(c.guard, 100u);
    expect_bad("codec", "quantize:bits=8,guard=often",
               {"'quantize:bits=8,guard=often'", "parameter 'guard'", "an integer 0..1000000000"});
}

TEST(ConfigApply, GuardBudget) {
    CommConfig c = applied("guard_budget", "abs:1e-4");
    EXPECT_EQ(c.guard_budget.kind, ErrorBudget::Abs);
    EXPECT_EQ(c.guard_budget.value, 1e-4);
    c = applied("guard_budget", "REL:0.01");
    EXPECT_EQ(c.guard_budget.kind, ErrorBudget::Rel);
    EXPECT_EQ(c.guard_budget.value, 0.01);
    EXPECT_EQ(applied("guard_budget", "off").guard_budget.kind, ErrorBudget::None);
    expect_bad("guard_budget", "abs:0", {"'abs:0'", "not a finite number > 0", "rel:<fraction>"});
    expect_bad("guard_budget", "norm:1e-3", {"'norm:1e-3'", "abs:<bound> or rel:"});
    expect_bad("guard_budget", "rel:inf", {"'rel:inf'", "not a finite number > 0"});
}

TEST(ConfigApply, Feedback) {
    EXPECT_EQ(applied("feedback", "on").feedback, 1);
    EXPECT_EQ(applied("feedback", "1").feedback, 1);
    EXPECT_EQ(applied("feedback", "off").feedback, 0);
    EXPECT_EQ(applied("feedback", "0").feedback, 0);
    CommConfig c;
    c.feedback = 1;
    ASSERT_EQ(config_apply(&c, "feedback", "default", "t"), TERSE_OK);
    EXPECT_EQ(c.feedback, -1);
    for (const char *v : {"auto", "2", "", "maybe"})
        expect_bad("feedback", v, {"for feedback", "default", "on", "off"});
}

TEST(ConfigApply, UnknownKeySuggestsClosest) {
    const std::pair<const char *, const char *> cases[] = {
        {"codex", "codec"},        {"chunk_size", "chunk_bytes"},
        {"min_byte", "min_bytes"}, {"pipline_depth", "pipeline_depth"},
        {"algoritm", "algorithm"}, {"verfiy", "verify"},
        {"CODEC", "codec"},        {"enabled", "enable"},
        {"feedbak", "feedback"},
    };
    for (const auto &[key, near] : cases) {
        CommConfig cfg;
        clear_error();
        EXPECT_EQ(config_apply(&cfg, key, "1", "config file a.conf:3"), TERSE_ERR_INVALID);
        expect_contains(err(),
                        {"config file a.conf:3", "unknown key", key,
                         "enable, codec, min_bytes, chunk_bytes, pipeline_depth, "
                         "algorithm, feedback, feedback_key, verify, guard, guard_budget, tune_file, planner"});
        EXPECT_NE(err().find(std::string("did you mean '") + near + "'"), std::string::npos) << err();
    }
}

TEST(ConfigApply, KeysListed) {
    const std::vector<std::string> want = {"enable",         "codec",     "min_bytes",    "chunk_bytes",
                                           "pipeline_depth", "algorithm", "feedback",     "feedback_key",
                                           "verify",         "guard",     "guard_budget", "tune_file",
                                           "planner",        "nb_policy", "nb_inflight",  "nb_hold_us"};
    EXPECT_EQ(config_keys(), want);
}

// --------------------------------------------------------------------- canonical / hash

TEST(Canonical, Default) {
    CommConfig cfg;
    EXPECT_EQ(
        cfg.canonical(),
        "enable=1 codec=none min_bytes=65536 chunk_bytes=1048576 pipeline_depth=4 "
        "algorithm=auto feedback=default feedback_key=address verify=0 guard=0 guard_budget=off tune_file= planner=model nb_policy=priority nb_inflight=8 nb_hold_us=1000");
    EXPECT_EQ(cfg.hash(), fnv1a(cfg.canonical()));
    EXPECT_EQ(CommConfig{}.hash(), cfg.hash());
    // FNV-1a's published test vector pins the constants.
    EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cull);
}

TEST(Canonical, EveryFieldChangesStringAndHash) {
    const std::pair<const char *, const char *> changes[] = {
        {"enable", "0"},        {"codec", "quantize:bits=8"}, {"min_bytes", "1"},
        {"chunk_bytes", "64K"}, {"pipeline_depth", "2"},      {"algorithm", "ring"},
        {"feedback", "on"},     {"feedback", "off"},          {"verify", "1"},
    };
    const CommConfig base;
    std::vector<uint64_t> hashes = {base.hash()};
    for (const auto &[k, v] : changes) {
        const CommConfig c = applied(k, v);
        EXPECT_NE(c.canonical(), base.canonical()) << k;
        EXPECT_EQ(c.hash(), fnv1a(c.canonical()));
        for (uint64_t h : hashes) EXPECT_NE(c.hash(), h) << k << "=" << v;
        hashes.push_back(c.hash());
    }
}

TEST(Canonical, ParamOrderDoesNotMatter) {
    EXPECT_EQ(applied("codec", "q:a=1,b=2").hash(), applied("codec", "q:b=2,a=1").hash());
    EXPECT_NE(applied("codec", "q:a=1,b=2").hash(), applied("codec", "q:a=2,b=1").hash());
}

TEST(Canonical, ReadsBackThroughConfigApply) {
    CommConfig c;
    for (const auto &[k, v] :
         std::vector<std::pair<const char *, const char *>>{{"enable", "off"},
                                                            {"codec", "topk:ratio=0.01,block=64"},
                                                            {"min_bytes", "1M"},
                                                            {"chunk_bytes", "128K"},
                                                            {"pipeline_depth", "7"},
                                                            {"algorithm", "gather"},
                                                            {"feedback", "on"},
                                                            {"verify", "yes"}})
        ASSERT_EQ(config_apply(&c, k, v, "t"), TERSE_OK) << err();
    const std::string text = c.canonical();
    CommConfig back;
    back.enable = true;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t sp = text.find(' ', pos);
        if (sp == std::string::npos) sp = text.size();
        const std::string item = text.substr(pos, sp - pos);
        const size_t eq = item.find('=');
        ASSERT_NE(eq, std::string::npos);
        ASSERT_EQ(config_apply(&back, item.substr(0, eq), item.substr(eq + 1), "canonical"), TERSE_OK) << err();
        pos = sp + 1;
    }
    EXPECT_EQ(back.canonical(), text);
    EXPECT_EQ(back.hash(), c.hash());
}

// --------------------------------------------------------------------- environment

TEST(Environment, ReadsEverything) {
    Env env{"PATH=/bin",
            "TERSE_ENABLE=0",
            "TERSE_CODEC=quantize:bits=8",
            "TERSE_MIN_BYTES=1K",
            "TERSE_CHUNK_BYTES=256K",
            "TERSE_PIPELINE_DEPTH=8",
            "TERSE_ALGORITHM=ring",
            "TERSE_FEEDBACK=off",
            "TERSE_VERIFY=1",
            "TERSE_GUARD=100",
            "TERSE_GUARD_BUDGET=rel:1e-3",
            "TERSE_PLUGIN_PATH=/a:/b",
            "TERSE_CONFIG=/etc/terse.conf",
            "TERSE_STATS=all",
            "TERSE_LOG=debug",
            "TERSE_CAPTURE=/tmp/cap",
            "TERSE_CAPTURE_INTERVAL=10"};
    GlobalConfig g;
    CommConfig d;
    ASSERT_EQ(config_read_environment(&g, &d, env.get()), TERSE_OK) << err();
    EXPECT_EQ(
        d.canonical(),
        "enable=0 codec=quantize:bits=8 min_bytes=1024 chunk_bytes=262144 pipeline_depth=8 "
        "algorithm=ring feedback=0 feedback_key=address verify=1 guard=100 guard_budget=rel:0.001 tune_file= planner=model nb_policy=priority nb_inflight=8 nb_hold_us=1000");
    EXPECT_EQ(g.plugin_path, "/a:/b");
    EXPECT_EQ(g.config_file, "/etc/terse.conf");
    EXPECT_EQ(g.stats, 2);
    EXPECT_EQ(g.log_level, "debug");
    EXPECT_EQ(g.capture_prefix, "/tmp/cap");
    EXPECT_EQ(g.capture_interval, 10u);
}

TEST(Environment, EmptyLeavesDefaults) {
    Env env{"HOME=/root", "TERSE=1", "terse_codec=zfp", "XTERSE_CODEC=zfp"};
    GlobalConfig g;
    CommConfig d;
    ASSERT_EQ(config_read_environment(&g, &d, env.get()), TERSE_OK) << err();
    EXPECT_EQ(d.canonical(), CommConfig{}.canonical());
    EXPECT_EQ(g.stats, 0);
    EXPECT_EQ(g.log_level, "warn");
    EXPECT_EQ(g.capture_interval, 1u);
}

TEST(Environment, Stats) {
    const std::pair<const char *, int> cases[] = {{"TERSE_STATS=0", 0},
                                                  {"TERSE_STATS=1", 1},
                                                  {"TERSE_STATS=all", 2},
                                                  {"TERSE_STATS=off", 0},
                                                  {"TERSE_STATS=ALL", 2}};
    for (const auto &[var, want] : cases) {
        Env env{var};
        GlobalConfig g;
        CommConfig d;
        ASSERT_EQ(config_read_environment(&g, &d, env.get()), TERSE_OK) << var;
        EXPECT_EQ(g.stats, want) << var;
    }
}

struct BadEnv {
    const char *var;
    std::vector<const char *> parts;
};

TEST(Environment, BadValuesNameVariableValueAndAccepted) {
    const BadEnv cases[] = {
        {"TERSE_PIPELINE_DEPTH=0",
         {"TERSE_PIPELINE_DEPTH: invalid value '0' for pipeline_depth (accepted: an integer 1..64)"}},
        {"TERSE_CHUNK_BYTES=1K", {"TERSE_CHUNK_BYTES", "'1K'", "chunk_bytes", "4K..1G"}},
        {"TERSE_MIN_BYTES=10Q", {"TERSE_MIN_BYTES", "'10Q'", "min_bytes", "0..1T"}},
        {"TERSE_ENABLE=maybe", {"TERSE_ENABLE", "'maybe'", "enable", "on, off"}},
        {"TERSE_CODEC=zfp:", {"TERSE_CODEC", "'zfp:'", "codec[:key=value"}},
        {"TERSE_ALGORITHM=tree", {"TERSE_ALGORITHM", "'tree'", "recursive_doubling"}},
        {"TERSE_FEEDBACK=2", {"TERSE_FEEDBACK", "'2'", "default"}},
        {"TERSE_VERIFY=", {"TERSE_VERIFY", "''", "on, off"}},
        {"TERSE_STATS=2", {"TERSE_STATS", "'2'", "all"}},
        {"TERSE_LOG=verbose", {"TERSE_LOG", "'verbose'", "error, warn, info, debug"}},
        {"TERSE_CAPTURE_INTERVAL=0", {"TERSE_CAPTURE_INTERVAL", "'0'", ">= 1"}},
        {"TERSE_CAPTURE_INTERVAL=x", {"TERSE_CAPTURE_INTERVAL", "'x'", ">= 1"}},
        {"TERSE_CAPTURE_INTERVAL=99999999999", {"TERSE_CAPTURE_INTERVAL", ">= 1"}},
    };
    for (const auto &c : cases) {
        // The bad variable comes first so that it wins over the valid ones of the same name.
        Env env{c.var, "TERSE_CODEC=zfp", "TERSE_LOG=info"};
        GlobalConfig g;
        CommConfig d;
        clear_error();
        EXPECT_EQ(config_read_environment(&g, &d, env.get()), TERSE_ERR_INVALID) << c.var;
        for (const char *p : c.parts) EXPECT_NE(err().find(p), std::string::npos) << p << " in " << err();
        // All or nothing: the earlier, valid variables are not half-applied.
        EXPECT_EQ(d.canonical(), CommConfig{}.canonical()) << c.var;
        EXPECT_EQ(g.log_level, "warn") << c.var;
    }
}

TEST(Environment, MisspelledVariablesSuggestClosest) {
    const std::pair<const char *, const char *> cases[] = {
        {"TERSE_CODECS=zfp", "TERSE_CODEC"},
        {"TERSE_CDOEC=zfp", "TERSE_CODEC"},
        {"TERSE_CHUNK_SIZE=1M", "TERSE_CHUNK_BYTES"},
        {"TERSE_PLUGINPATH=/x", "TERSE_PLUGIN_PATH"},
        {"TERSE_PIPELINE=4", "TERSE_PIPELINE_DEPTH"},
        {"TERSE_STAT=1", "TERSE_STATS"},
        {"TERSE_CAPTURE_INTERVALS=2", "TERSE_CAPTURE_INTERVAL"},
        {"TERSE_ENABLED=1", "TERSE_ENABLE"},
        {"TERSE_codec=zfp", "TERSE_CODEC"},
        {"TERSE_UCX=tcp", "TERSE_CODEC"},  // not the UCX_ prefix; suggestion is whatever is closest
    };
    for (const auto &[var, near] : cases) {
        Env env{var};
        GlobalConfig g;
        CommConfig d;
        clear_error();
        EXPECT_EQ(config_read_environment(&g, &d, env.get()), TERSE_ERR_INVALID) << var;
        const std::string name = std::string(var).substr(0, std::string(var).find('='));
        expect_contains(err(), {"environment: unknown variable", ("'" + name + "'").c_str(), "TERSE_PLUGIN_PATH",
                                "TERSE_UCX_* are passed to UCX"});
        if (std::string(var) != "TERSE_UCX=tcp") {
            EXPECT_NE(err().find(std::string("did you mean '") + near + "'?"), std::string::npos) << err();
        }
    }
}

TEST(Environment, UcxVariablesBelongToUcx) {
    Env env{"TERSE_UCX_TLS=tcp", "TERSE_UCX_NET_DEVICES=eth0", "TERSE_UCX_LOG_LEVEL=debug", "TERSE_CODEC=zfp"};
    GlobalConfig g;
    CommConfig d;
    ASSERT_EQ(config_read_environment(&g, &d, env.get()), TERSE_OK) << err();
    EXPECT_EQ(d.codec.text(), "zfp");
}

TEST(Environment, TestHarnessVariablesAreNotConfiguration) {
    Env env{"TERSE_LIB=/x/libterse.so", "TERSE_SRCDIR=/s", "TERSE_BUILDDIR=/b", "TERSE_SHARED_DATA=/d"};
    GlobalConfig g;
    CommConfig d;
    ASSERT_EQ(config_read_environment(&g, &d, env.get()), TERSE_OK) << err();
}

TEST(Environment, FirstOccurrenceWinsLikeGetenv) {
    Env env{"TERSE_CODEC=zfp", "TERSE_CODEC=topk"};
    GlobalConfig g;
    CommConfig d;
    ASSERT_EQ(config_read_environment(&g, &d, env.get()), TERSE_OK) << err();
    EXPECT_EQ(d.codec.text(), "zfp");
}

TEST(Environment, ProcessEnvironmentWhenNull) {
    ASSERT_EQ(setenv("TERSE_PIPELINE_DEPTH", "9", 1), 0);
    GlobalConfig g;
    CommConfig d;
    const Status st = config_read_environment(&g, &d);
    unsetenv("TERSE_PIPELINE_DEPTH");
    ASSERT_EQ(st, TERSE_OK) << err();
    EXPECT_EQ(d.pipeline_depth, 9);
}

TEST(Environment, VariableList) {
    const auto &v = config_environment_variables();
    for (const char *n : {"TERSE_ENABLE",         "TERSE_CODEC",
                          "TERSE_MIN_BYTES",      "TERSE_CHUNK_BYTES",
                          "TERSE_PIPELINE_DEPTH", "TERSE_ALGORITHM",
                          "TERSE_FEEDBACK",       "TERSE_FEEDBACK_KEY",
                          "TERSE_VERIFY",         "TERSE_GUARD",
                          "TERSE_GUARD_BUDGET",   "TERSE_TUNE_FILE",
                          "TERSE_PLANNER",        "TERSE_NB_POLICY",
                          "TERSE_NB_INFLIGHT",    "TERSE_NB_HOLD_US",
                          "TERSE_PLUGIN_PATH",    "TERSE_CONFIG",
                          "TERSE_STATS",          "TERSE_LOG",
                          "TERSE_CAPTURE",        "TERSE_CAPTURE_INTERVAL",
                          "TERSE_NODE_KEY",       "TERSE_DEVICE_CODECS"})
        EXPECT_NE(std::find(v.begin(), v.end(), n), v.end()) << n;
    EXPECT_EQ(v.size(), 24u);
}

// --------------------------------------------------------------------- config file

const char *kFile = R"(# terse settings
; another comment style

[*]
codec = quantize:bits=8     # everyone compresses
min_bytes = 32K

[MPI_COMM_WORLD]
pipeline_depth=2

[solver_[0-9]*]
codec = zfp:rate=8
algorithm = ring   ; inline comment

[solver_1?]
verify = on

[*]
chunk_bytes = 512K
)";

TEST(ConfigFileTest, GlobsApplyInFileOrder) {
    ConfigFile f;
    ASSERT_EQ(f.parse(kFile, "site.conf"), TERSE_OK) << err();
    EXPECT_EQ(f.section_patterns(),
              (std::vector<std::string>{"*", "MPI_COMM_WORLD", "solver_[0-9]*", "solver_1?", "*"}));
    EXPECT_EQ(f.section_count(), 5u);

    CommConfig world;
    ASSERT_EQ(f.apply("MPI_COMM_WORLD", &world), TERSE_OK) << err();
    EXPECT_EQ(
        world.canonical(),
        "enable=1 codec=quantize:bits=8 min_bytes=32768 chunk_bytes=524288 "
        "pipeline_depth=2 algorithm=auto feedback=default feedback_key=address verify=0 guard=0 guard_budget=off tune_file= planner=model nb_policy=priority nb_inflight=8 nb_hold_us=1000");

    CommConfig s12;
    ASSERT_EQ(f.apply("solver_12", &s12), TERSE_OK) << err();
    EXPECT_EQ(s12.codec.text(), "zfp:rate=8");
    EXPECT_EQ(s12.algorithm, Algorithm::Ring);
    EXPECT_TRUE(s12.verify);
    EXPECT_EQ(s12.pipeline_depth, 4);
    EXPECT_EQ(s12.chunk_bytes, 524288u);

    CommConfig s3;
    ASSERT_EQ(f.apply("solver_3", &s3), TERSE_OK);
    EXPECT_EQ(s3.codec.text(), "zfp:rate=8");
    EXPECT_FALSE(s3.verify);  // solver_1? needs two characters after "solver_"

    CommConfig other;
    ASSERT_EQ(f.apply("solverX", &other), TERSE_OK);
    EXPECT_EQ(other.codec.text(), "quantize:bits=8");
    EXPECT_EQ(other.algorithm, Algorithm::Auto);

    CommConfig one;
    ASSERT_EQ(f.apply_section(2, &one), TERSE_OK);
    EXPECT_EQ(one.codec.text(), "zfp:rate=8");
    EXPECT_EQ(one.min_bytes, 65536u);
    EXPECT_EQ(f.apply_section(5, &one), TERSE_ERR_INVALID);
}

TEST(ConfigFileTest, LaterLinesWin) {
    ConfigFile f;
    ASSERT_EQ(f.parse("[a*]\ncodec=zfp\n[ab]\ncodec = topk\ncodec= none\n", "x"), TERSE_OK) << err();
    CommConfig c;
    ASSERT_EQ(f.apply("ab", &c), TERSE_OK);
    EXPECT_EQ(c.codec.text(), "none");
    CommConfig d;
    ASSERT_EQ(f.apply("ac", &d), TERSE_OK);
    EXPECT_EQ(d.codec.text(), "zfp");
}

TEST(ConfigFileTest, HashInsideValueIsNotAComment) {
    // Comments start a line or follow a blank; codec values may hold '#'.
    ConfigFile f;
    ASSERT_EQ(f.parse("[*] # all\ncodec = zfp:tag=a#b ;note\n", "h.conf"), TERSE_OK) << err();
    CommConfig c;
    ASSERT_EQ(f.apply("x", &c), TERSE_OK);
    EXPECT_EQ(c.codec.text(), "zfp:tag=a#b");
}

TEST(ConfigFileTest, CrLfAndBlankLines) {
    ConfigFile f;
    ASSERT_EQ(f.parse("\r\n[ * ]\r\n  pipeline_depth = 3 \r\n\r\n", "dos.conf"), TERSE_OK) << err();
    CommConfig c;
    ASSERT_EQ(f.apply("anything", &c), TERSE_OK);
    EXPECT_EQ(c.pipeline_depth, 3);
    EXPECT_EQ(f.section_patterns(), std::vector<std::string>{"*"});
}

TEST(ConfigFileTest, EmptyFileChangesNothing) {
    ConfigFile f;
    ASSERT_EQ(f.parse("# nothing\n", "e"), TERSE_OK);
    CommConfig c;
    ASSERT_EQ(f.apply("MPI_COMM_WORLD", &c), TERSE_OK);
    EXPECT_EQ(c.canonical(), CommConfig{}.canonical());
}

struct BadFile {
    const char *text;
    std::vector<const char *> parts;
};

TEST(ConfigFileTest, ErrorsGiveFileAndLine) {
    const BadFile cases[] = {
        {"codec = zfp\n", {"bad.conf:1", "outside any section", "'codec'", "[pattern]"}},
        {"# c\n\n[*]\npipeline_depth = 0\n", {"bad.conf:4", "'0'", "pipeline_depth", "1..64"}},
        {"[*]\ncodex = zfp\n", {"bad.conf:2", "unknown key 'codex'", "did you mean 'codec'"}},
        {"[*]\ncodec zfp\n", {"bad.conf:2", "'codec zfp'", "key = value"}},
        {"[*]\n= zfp\n", {"bad.conf:2", "no key"}},
        {"[*\ncodec=zfp\n", {"bad.conf:1", "'[*'", "[pattern]"}},
        {"[*] extra\n", {"bad.conf:1", "'[*] extra'", "[pattern]"}},
        {"[]\n", {"bad.conf:1", "empty section pattern"}},
        {"[*]\nchunk_bytes = 12\n", {"bad.conf:2", "'12'", "chunk_bytes", "4K..1G"}},
        {"[*]\ncodec = zfp:rate\n", {"bad.conf:2", "codec[:key=value"}},
        // An error in a section that matches nothing is still an error.
        {"[never_matches]\nverify = perhaps\n", {"bad.conf:2", "'perhaps'", "verify"}},
    };
    for (const auto &c : cases) {
        ConfigFile f;
        clear_error();
        EXPECT_EQ(f.parse(c.text, "bad.conf"), TERSE_ERR_INVALID) << c.text;
        for (const char *p : c.parts) EXPECT_NE(err().find(p), std::string::npos) << p << " in " << err();
    }
}

TEST(ConfigFileTest, LoadReadsFile) {
    char path[] = "/tmp/terse_test_config_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    const std::string text = "[MPI_COMM_WORLD]\ncodec = quantize:bits=4\n";
    ASSERT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
    close(fd);
    ConfigFile f;
    const Status st = f.load(path);
    CommConfig c;
    const Status st2 = f.apply("MPI_COMM_WORLD", &c);
    unlink(path);
    ASSERT_EQ(st, TERSE_OK) << err();
    ASSERT_EQ(st2, TERSE_OK);
    EXPECT_EQ(c.codec.text(), "quantize:bits=4");
}

TEST(ConfigFileTest, LoadErrorsNamePathAndReason) {
    ConfigFile f;
    EXPECT_EQ(f.load("/nonexistent/terse.conf"), TERSE_ERR_IO);
    expect_contains(err(), {"/nonexistent/terse.conf", "No such file or directory"});
    EXPECT_EQ(f.load("/tmp"), TERSE_ERR_IO);
    expect_contains(err(), {"/tmp", "Is a directory"});
}

TEST(ConfigFileTest, LoadErrorsGiveLine) {
    char path[] = "/tmp/terse_test_config_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    const std::string text = "[*]\nmin_bytes = 1K\nalgorithm = fast\n";
    ASSERT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
    close(fd);
    ConfigFile f;
    const Status st = f.load(path);
    unlink(path);
    EXPECT_EQ(st, TERSE_ERR_INVALID);
    expect_contains(err(), {(std::string(path) + ":3").c_str(), "'fast'", "algorithm"});
}

// --------------------------------------------------------------------- MPI_Info

struct Info {
    MPI_Info info = MPI_INFO_NULL;
    Info() { MPI_Info_create(&info); }
    ~Info() { MPI_Info_free(&info); }
    void set(const char *k, const char *v) { MPI_Info_set(info, k, v); }
};

TEST(InfoHints, AppliesTerseKeysIgnoresOthers) {
    Info info;
    info.set("terse_codec", "quantize:bits=8,block=64");
    info.set("terse_min_bytes", "1M");
    info.set("cb_nodes", "4");  // someone else's hint
    info.set("mpi_assert_no_any_tag", "true");
    CommConfig c;
    ASSERT_EQ(config_apply_info(info.info, &c), TERSE_OK) << err();
    EXPECT_EQ(c.codec.text(), "quantize:bits=8,block=64");
    EXPECT_EQ(c.min_bytes, 1u << 20);
    EXPECT_EQ(c.pipeline_depth, 4);
}

TEST(InfoHints, NullAndEmptyInfo) {
    CommConfig c;
    EXPECT_EQ(config_apply_info(MPI_INFO_NULL, &c), TERSE_OK);
    Info info;
    EXPECT_EQ(config_apply_info(info.info, &c), TERSE_OK);
    EXPECT_EQ(c.canonical(), CommConfig{}.canonical());
}

TEST(InfoHints, UnknownTerseKeyIsError) {
    Info info;
    info.set("terse_codex", "zfp");
    CommConfig c;
    EXPECT_EQ(config_apply_info(info.info, &c), TERSE_ERR_INVALID);
    expect_contains(err(), {"MPI_Info: unknown key 'terse_codex'", "did you mean 'terse_codec'",
                            "known keys: terse_enable, terse_codec", "terse_pipeline_depth"});
}

TEST(InfoHints, BadValueIsErrorAndNothingApplies) {
    Info info;
    info.set("terse_codec", "zfp");
    info.set("terse_pipeline_depth", "0");
    CommConfig c;
    EXPECT_EQ(config_apply_info(info.info, &c), TERSE_ERR_INVALID);
    EXPECT_EQ(err(), "MPI_Info key terse_pipeline_depth: invalid value '0' for pipeline_depth "
                     "(accepted: an integer 1..64)");
    EXPECT_EQ(c.canonical(), CommConfig{}.canonical());
}

TEST(InfoHints, LongValue) {
    Info info;
    // Close to MPI_MAX_INFO_VAL: the value is read with its real length.
    const std::string spec = "quantize:k=" + std::string(MPI_MAX_INFO_VAL - 20, 'v');
    info.set("terse_codec", spec.c_str());
    CommConfig c;
    ASSERT_EQ(config_apply_info(info.info, &c), TERSE_OK) << err();
    EXPECT_EQ(c.codec.text(), spec);
}

// --------------------------------------------------------------------- overrides

TEST(Overrides, ApplyAndReport) {
    CommConfig c;
    ASSERT_EQ(config_apply_overrides({{"codec", "topk:ratio=0.01"}, {"verify", "1"}}, &c), TERSE_OK);
    EXPECT_EQ(c.codec.text(), "topk:ratio=0.01");
    EXPECT_TRUE(c.verify);
    CommConfig d;
    EXPECT_EQ(config_apply_overrides({{"codec", "zfp"}, {"algorithm", "fastest"}}, &d), TERSE_ERR_INVALID);
    expect_contains(err(), {"terse_comm_configure", "'fastest'", "algorithm", "recursive_doubling"});
    EXPECT_EQ(d.codec.text(), "none");  // all or nothing
    EXPECT_EQ(config_apply_overrides({{"chunk", "1M"}}, &d), TERSE_ERR_INVALID);
    expect_contains(err(), {"terse_comm_configure", "unknown key 'chunk'", "did you mean 'chunk_bytes'"});
}

// --------------------------------------------------------------------- precedence

// Layers built the way comm_state resolves a communicator's configuration.
TEST(Precedence, DefaultsEnvFileInfoOverrides) {
    Env env{"TERSE_CODEC=zfp:rate=4", "TERSE_MIN_BYTES=1K", "TERSE_CHUNK_BYTES=64K", "TERSE_PIPELINE_DEPTH=2",
            "TERSE_ALGORITHM=ring"};
    GlobalConfig g;
    CommConfig defaults;
    ASSERT_EQ(config_read_environment(&g, &defaults, env.get()), TERSE_OK) << err();

    ConfigFile f;
    ASSERT_EQ(f.parse("[*]\ncodec = quantize:bits=8\nchunk_bytes = 128K\n"
                      "[MPI_COMM_WORLD]\npipeline_depth = 3\nalgorithm = gather\n"
                      "[other]\nverify = 1\n",
                      "p.conf"),
              TERSE_OK);
    Info info;
    info.set("terse_pipeline_depth", "5");
    info.set("terse_codec", "topk:ratio=0.1");
    const ConfigOverrides ov = {{"codec", "none"}};

    CommConfig c = defaults;  // defaults < env
    EXPECT_EQ(c.min_bytes, 1024u);
    ASSERT_EQ(f.apply("MPI_COMM_WORLD", &c), TERSE_OK);  // < file
    EXPECT_EQ(c.codec.text(), "quantize:bits=8");
    EXPECT_EQ(c.pipeline_depth, 3);
    ASSERT_EQ(config_apply_info(info.info, &c), TERSE_OK);  // < info
    EXPECT_EQ(c.codec.text(), "topk:ratio=0.1");
    ASSERT_EQ(config_apply_overrides(ov, &c), TERSE_OK);  // < overrides
    EXPECT_EQ(
        c.canonical(),
        "enable=1 codec=none min_bytes=1024 chunk_bytes=131072 pipeline_depth=5 "
        "algorithm=gather feedback=default feedback_key=address verify=0 guard=0 guard_budget=off tune_file= planner=model nb_policy=priority nb_inflight=8 nb_hold_us=1000");

    // A communicator no specific section matches keeps the env where the file is silent.
    CommConfig o = defaults;
    ASSERT_EQ(f.apply("solver", &o), TERSE_OK);
    EXPECT_EQ(
        o.canonical(),
        "enable=1 codec=quantize:bits=8 min_bytes=1024 chunk_bytes=131072 pipeline_depth=2 "
        "algorithm=ring feedback=default feedback_key=address verify=0 guard=0 guard_budget=off tune_file= planner=model nb_policy=priority nb_inflight=8 nb_hold_us=1000");
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    MPI_Init(&argc, &argv);  // singleton init: the MPI_Info tests need MPI
    const int rc = RUN_ALL_TESTS();
    MPI_Finalize();
    return rc;
}
