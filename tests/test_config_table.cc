// Walks the key table (config_keys.h): every key, through every source that
// accepts it, parses its default, refuses values just outside its range with
// a message naming the place, the key, the value and what is accepted,
// answers a misspelling with the key itself, and is refused by the sources
// that do not accept it; every key appears in terse-config-check's listing
// and is documented in man/terse.7 (and man/terse_api.3 for
// terse_comm_configure).  A new row that misses one of these fails here,
// naming the key.
#include "config/config.h"
#include "config/config_keys.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace terse;

namespace {

constexpr ConfigSource kSources[] = {kFromEnv, kFromFile, kFromInfo, kFromApi};

// What a key's field holds after one source gave it a value.
struct Applied {
    Status status;
    std::string message;
    std::string value;        // the key's field afterwards, canonical
    std::string comm_before;  // the whole per-communicator config before ...
    std::string comm_after;   // ... and after
};

Applied apply_from(ConfigSource source, const ConfigKey &key, const std::string &spelled,
                   const std::string &value) {
    CommConfig c;
    GlobalConfig g;
    Applied out;
    out.comm_before = c.canonical();
    clear_error();
    switch (source) {
    case kFromEnv: {
        std::string var = spelled + "=" + value;
        char *env[] = {var.data(), nullptr};
        out.status = config_read_environment(&g, &c, env);
        break;
    }
    case kFromFile: {
        ConfigFile f;
        out.status = f.parse("[*]\n" + spelled + " = " + value + "\n", "walk.conf");
        if (out.status == TERSE_OK) out.status = f.apply("MPI_COMM_WORLD", &c);
        break;
    }
    case kFromInfo: out.status = config_apply_hints({{spelled, value}}, &c); break;
    case kFromApi: out.status = config_apply_overrides({{spelled, value}}, &c); break;
    }
    out.message = last_error();
    out.value = key.get(&c, &g);
    out.comm_after = c.canonical();
    return out;
}

// The place a value error names for each source.
std::string value_place(ConfigSource source, const std::string &spelled) {
    switch (source) {
    case kFromEnv: return spelled + ":";
    case kFromFile: return "config file walk.conf:2:";
    case kFromInfo: return "MPI_Info key " + spelled + ":";
    case kFromApi: return "terse_comm_configure:";
    }
    return "";
}

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

std::string read_file(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string env_or_fail(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) ADD_FAILURE() << name << " is not set: run this test under make check";
    return v ? v : "";
}

// The lines of a man page between a heading (".SH NAME" or ".SS NAME") and
// the next heading of the same or a higher level.
std::vector<std::string> man_section(const std::string &page, const std::string &heading) {
    std::vector<std::string> out;
    std::istringstream in(page);
    std::string line;
    bool inside = false;
    const bool sub = heading.rfind(".SS", 0) == 0;
    while (std::getline(in, line)) {
        if (line == heading || line == heading + "\r") {
            inside = true;
            continue;
        }
        if (inside && (line.rfind(".SH", 0) == 0 || (sub && line.rfind(".SS", 0) == 0))) break;
        if (inside) out.push_back(line);
    }
    return out;
}

// A bold macro line (.B, .BI, .BR) whose first argument is name, or starts
// with name followed by '=' (".BI TERSE_CODEC= spec").
bool documents(const std::vector<std::string> &lines, const std::string &name) {
    for (const std::string &l : lines)
        for (const char *m : {".B ", ".BI ", ".BR "})
            if (l.rfind(m, 0) == 0) {
                const std::string arg = l.substr(strlen(m));
                if (arg == name || arg.rfind(name + " ", 0) == 0 || arg.rfind(name + "=", 0) == 0) return true;
            }
    return false;
}

TEST(KeyTable, NamesAreUniqueAndEveryKeyHasASource) {
    const auto &table = config_key_table();
    ASSERT_FALSE(table.empty());
    bool process_seen = false;
    for (size_t i = 0; i < table.size(); ++i) {
        const ConfigKey &k = table[i];
        EXPECT_NE(k.sources, 0u) << k.name;
        EXPECT_FALSE(k.help.empty()) << k.name;
        EXPECT_FALSE(k.accepted.empty()) << k.name;
        EXPECT_EQ(config_key_find(k.name), &k) << k.name;
        for (size_t j = 0; j < i; ++j) EXPECT_NE(table[j].name, k.name);
        // Process-wide settings are read once, from the environment.
        if (k.scope == KeyScope::Process) {
            EXPECT_EQ(k.sources, unsigned(kFromEnv)) << k.name;
            process_seen = true;
        } else {
            EXPECT_FALSE(process_seen) << k.name << ": per-communicator keys come first";
        }
    }
    EXPECT_EQ(config_key_find("no_such_key"), nullptr);
}

TEST(KeyTable, DefaultIsTheFieldInitialiser) {
    const CommConfig c;
    const GlobalConfig g;
    for (const ConfigKey &k : config_key_table()) EXPECT_EQ(k.get(&c, &g), k.default_text) << k.name;
}

TEST(KeyTable, EverySourceParsesTheDefault) {
    for (const ConfigKey &k : config_key_table())
        for (ConfigSource s : kSources) {
            if (!k.accepts(s)) continue;
            const std::string spelled = config_key_spelling(k, s);
            const Applied a = apply_from(s, k, spelled, k.default_text);
            EXPECT_EQ(a.status, TERSE_OK) << spelled << "=" << k.default_text << ": " << a.message;
            EXPECT_EQ(a.value, k.default_text) << spelled;
            EXPECT_EQ(a.comm_after, a.comm_before) << spelled;
        }
}

TEST(KeyTable, CanonicalFormReadsBack) {
    // Every per-communicator key is in the canonical form, in table order,
    // in a form each key reads back.
    std::string want;
    for (const ConfigKey &k : config_key_table())
        if (k.scope == KeyScope::Comm) want += (want.empty() ? "" : " ") + k.name + "=" + k.default_text;
    EXPECT_EQ(CommConfig{}.canonical(), want);
}

TEST(KeyTable, EverySourceRefusesOutOfRangeValues) {
    for (const ConfigKey &k : config_key_table()) {
        // Only free text accepts everything.
        if (k.refused.empty()) EXPECT_TRUE(k.verbatim && k.accepted.rfind("any text", 0) == 0) << k.name;
        for (ConfigSource s : kSources) {
            if (!k.accepts(s)) continue;
            const std::string spelled = config_key_spelling(k, s);
            for (const std::string &bad : k.refused) {
                const Applied a = apply_from(s, k, spelled, bad);
                EXPECT_EQ(a.status, TERSE_ERR_INVALID) << spelled << "=" << bad;
                for (const std::string &part :
                     {value_place(s, spelled), "invalid value '" + bad + "' for " + k.name,
                      "(accepted: " + k.accepted + ")"})
                    EXPECT_TRUE(contains(a.message, part))
                        << spelled << "=" << bad << ": '" << part << "' missing in: " << a.message;
                EXPECT_EQ(a.value, k.default_text) << spelled << "=" << bad << " changed the field";
                EXPECT_EQ(a.comm_after, a.comm_before) << spelled << "=" << bad;
            }
        }
    }
}

TEST(KeyTable, MisspellingSuggestsTheKey) {
    for (const ConfigKey &k : config_key_table())
        for (ConfigSource s : kSources) {
            if (!k.accepts(s)) continue;
            const std::string spelled = config_key_spelling(k, s);
            const std::string typo = spelled + (s == kFromEnv ? "Z" : "z");
            const Applied a = apply_from(s, k, typo, k.default_text);
            EXPECT_EQ(a.status, TERSE_ERR_INVALID) << typo;
            EXPECT_TRUE(contains(a.message, "unknown")) << a.message;
            EXPECT_TRUE(contains(a.message, "'" + typo + "'")) << a.message;
            EXPECT_TRUE(contains(a.message, "did you mean '" + spelled + "'?")) << a.message;
            for (const std::string &known : config_source_keys(s))
                EXPECT_TRUE(contains(a.message, known)) << known << " not listed in: " << a.message;
        }
}

TEST(KeyTable, SourcesThatDoNotAcceptAKeyRefuseIt) {
    for (const ConfigKey &k : config_key_table())
        for (ConfigSource s : kSources) {
            if (k.accepts(s)) continue;
            const std::string spelled = config_key_spelling(k, s);
            const Applied a = apply_from(s, k, spelled, k.default_text);
            EXPECT_EQ(a.status, TERSE_ERR_INVALID) << config_source_name(s) << " " << spelled;
            EXPECT_TRUE(contains(a.message, "'" + spelled + "' cannot be set here")) << a.message;
            for (ConfigSource t : kSources)
                if (k.accepts(t)) EXPECT_TRUE(contains(a.message, config_key_spelling(k, t))) << a.message;
        }
}

TEST(KeyTable, ListedByTerseConfigCheck) {
    const std::string tool = env_or_fail("TERSE_BUILDDIR") + "/tools/terse-config-check";
    FILE *p = popen((tool + " --keys").c_str(), "r");
    ASSERT_NE(p, nullptr) << tool;
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ASSERT_EQ(pclose(p), 0) << tool << " --keys failed: " << out;
    for (const ConfigKey &k : config_key_table()) {
        EXPECT_TRUE(contains(out, "\n" + k.name + " = " + k.default_text + "\n") ||
                    out.rfind(k.name + " = " + k.default_text + "\n", 0) == 0)
            << "key " << k.name << " (default " << k.default_text << ") missing in the listing";
        EXPECT_TRUE(contains(out, "accepted: " + k.accepted + "\n")) << k.name;
        EXPECT_TRUE(contains(out, k.help)) << k.name;
        for (ConfigSource s : kSources)
            if (k.accepts(s))
                EXPECT_TRUE(contains(out, std::string(config_source_name(s)) + " " + config_key_spelling(k, s)))
                    << k.name << ": " << config_source_name(s) << " missing in the listing";
    }
}

TEST(KeyTable, DocumentedInManPages) {
    const std::string dir = env_or_fail("TERSE_SRCDIR") + "/man/";
    const std::string terse7 = read_file(dir + "terse.7"), api3 = read_file(dir + "terse_api.3");
    ASSERT_FALSE(terse7.empty()) << dir << "terse.7";
    ASSERT_FALSE(api3.empty()) << dir << "terse_api.3";
    const auto comm_env = man_section(terse7, ".SS Per-communicator settings");
    const auto process_env = man_section(terse7, ".SS Process-wide settings");
    const auto info = man_section(terse7, ".SH MPI_INFO HINTS");
    const auto file = man_section(terse7, ".SH CONFIGURATION FILE");
    const auto configure = man_section(api3, ".SS terse_comm_configure()");
    ASSERT_FALSE(comm_env.empty() || process_env.empty() || info.empty() || file.empty() || configure.empty())
        << "a section the keys are documented in was renamed";
    for (const ConfigKey &k : config_key_table()) {
        const bool comm = k.scope == KeyScope::Comm;
        if (k.accepts(kFromEnv))
            EXPECT_TRUE(documents(comm ? comm_env : process_env, config_key_spelling(k, kFromEnv)))
                << "key " << k.name << ": " << config_key_spelling(k, kFromEnv)
                << " is not documented in man/terse.7 under "
                << (comm ? "Per-communicator settings" : "Process-wide settings");
        if (k.accepts(kFromInfo))
            EXPECT_TRUE(documents(info, config_key_spelling(k, kFromInfo)))
                << "key " << k.name << ": " << config_key_spelling(k, kFromInfo)
                << " is not documented in man/terse.7 under MPI_INFO HINTS";
        if (k.accepts(kFromFile))
            EXPECT_TRUE(documents(file, k.name))
                << "key " << k.name << " is not documented in man/terse.7 under CONFIGURATION FILE";
        if (k.accepts(kFromApi))
            EXPECT_TRUE(documents(configure, k.name))
                << "key " << k.name << " is not documented in man/terse_api.3 under "
                << "terse_comm_configure()";
    }
    // And no variable documented in terse.7 is missing from the table.
    for (const auto *lines : {&comm_env, &process_env})
        for (const std::string &l : *lines)
            if (l.rfind(".BI TERSE_", 0) == 0) {
                const std::string var = l.substr(4, l.find('=') - 4);
                bool known = false;
                for (const std::string &v : config_environment_variables()) known |= v == var;
                EXPECT_TRUE(known) << var << " is documented in man/terse.7 but is not a key";
            }
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
