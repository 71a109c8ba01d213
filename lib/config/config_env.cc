// The TERSE_* environment: process-wide settings plus the environment layer
// of the per-communicator defaults.  Read once at initialisation, never on
// the hot path.  A misspelled variable is an error, not a silent no-op: a
// user who writes TERSE_CODECS=zfp and gets uncompressed runs would never
// know why.
#include "config/config.h"

#include "config/config_keys.h"

#include <algorithm>
#include <map>

extern char **environ;

namespace terse {

namespace {

constexpr std::string_view kPrefix = "TERSE_";
// UCX reads its own settings under terse's prefix (ucp_config_read("TERSE")),
// so TERSE_UCX_TLS=tcp tunes terse's UCX apart from the MPI library's.
constexpr std::string_view kUcxPrefix = "TERSE_UCX_";

// Set by terse's own test harness and tools (tests/Makefile.am exports them
// to every test, and so to every rank); not configuration, never read here.
const char *const kToolVars[] = {"TERSE_LIB", "TERSE_SRCDIR", "TERSE_BUILDDIR", "TERSE_SHARED_DATA"};

}  // namespace

const std::vector<std::string> &config_environment_variables() {
    static const std::vector<std::string> names = config_source_keys(kFromEnv);
    return names;
}

Status config_read_environment(GlobalConfig *global, CommConfig *defaults, char **env) {
    if (!env) env = environ;
    // First occurrence wins, as with getenv(); the map also gives a stable
    // order for reporting when several variables are wrong.
    std::map<std::string, std::string> vars;
    for (char **e = env; e && *e; ++e) {
        const std::string_view entry(*e);
        if (entry.substr(0, kPrefix.size()) != kPrefix) continue;
        const size_t eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }

    GlobalConfig g = *global;
    CommConfig d = *defaults;
    // Known variables first, in table order, then anything unrecognised.
    for (const ConfigKey &key : config_key_table()) {
        if (!key.accepts(kFromEnv)) continue;
        const std::string name = config_key_spelling(key, kFromEnv);
        if (auto it = vars.find(name); it != vars.end()) {
            if (Status st = config_key_apply(kFromEnv, name, it->second, "", &d, &g); st != TERSE_OK) return st;
            vars.erase(it);
        }
    }
    for (const auto &[name, value] : vars) {
        if (name.compare(0, kUcxPrefix.size(), kUcxPrefix) == 0) continue;
        if (std::any_of(std::begin(kToolVars), std::end(kToolVars), [&](const char *t) { return name == t; }))
            continue;
        return config_key_apply(kFromEnv, name, value, "", &d, &g);  // the unknown-name error
    }
    *global = std::move(g);
    *defaults = std::move(d);
    return TERSE_OK;
}

}  // namespace terse
