// The TERSE_* environment: process-wide settings plus the environment layer
// of the per-communicator defaults.  Read once at initialisation, never on
// the hot path.  A misspelled variable is an error, not a silent no-op: a
// user who writes TERSE_CODECS=zfp and gets uncompressed runs would never
// know why.
#include "config/config.h"

#include "config/config_text.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>

extern char **environ;

namespace terse {

using config_text::lower;
using config_text::quote;

namespace {

constexpr std::string_view kPrefix = "TERSE_";
// UCX reads its own settings under terse's prefix (ucp_config_read("TERSE")),
// so TERSE_UCX_TLS=tcp tunes terse's UCX apart from the MPI library's.
constexpr std::string_view kUcxPrefix = "TERSE_UCX_";

const char *const kGlobalVars[] = {"TERSE_PLUGIN_PATH", "TERSE_CONFIG", "TERSE_STATS", "TERSE_LOG",
                                   "TERSE_CAPTURE", "TERSE_CAPTURE_INTERVAL"};

// Set by terse's own test harness and tools (tests/Makefile.am exports them
// to every test, and so to every rank); not configuration, never read here.
const char *const kToolVars[] = {"TERSE_LIB", "TERSE_SRCDIR", "TERSE_BUILDDIR",
                                 "TERSE_SHARED_DATA"};

std::string env_name(const std::string &key) {
    std::string s(kPrefix);
    for (char c : key) s += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    return s;
}

Status apply_global(GlobalConfig *g, const std::string &name, const std::string &value) {
    auto bad = [&](const char *accepted) {
        return set_error(TERSE_ERR_INVALID, "%s: invalid value '%s' (accepted: %s)", name.c_str(),
                         quote(value).c_str(), accepted);
    };
    const std::string v = lower(config_text::trim(value));
    if (name == "TERSE_PLUGIN_PATH") {
        g->plugin_path = value;
    } else if (name == "TERSE_CONFIG") {
        g->config_file = value;
    } else if (name == "TERSE_CAPTURE") {
        g->capture_prefix = value;
    } else if (name == "TERSE_STATS") {
        if (v == "0" || v == "off" || v == "no" || v == "false") g->stats = 0;
        else if (v == "1" || v == "on" || v == "yes" || v == "true") g->stats = 1;
        else if (v == "all") g->stats = 2;
        else return bad("0 (off), 1 (summary at MPI_Finalize), all (summary of every communicator)");
    } else if (name == "TERSE_LOG") {
        if (v == "error" || v == "warn" || v == "info" || v == "debug") g->log_level = v;
        else return bad("error, warn, info, debug");
    } else if (name == "TERSE_CAPTURE_INTERVAL") {
        unsigned long long n = 0;
        bool ok = !v.empty() && v.size() <= 10;
        for (char c : v) ok = ok && c >= '0' && c <= '9';
        if (ok) n = std::stoull(v);
        if (!ok || n < 1 || n > UINT_MAX) return bad("an integer >= 1 (capture every Nth call)");
        g->capture_interval = static_cast<unsigned>(n);
    }
    return TERSE_OK;
}

}  // namespace

const std::vector<std::string> &config_environment_variables() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto &k : config_keys()) v.push_back(env_name(k));
        for (const char *g : kGlobalVars) v.push_back(g);
        return v;
    }();
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
    // Known variables first, in a fixed order, then anything unrecognised.
    for (const char *name : kGlobalVars)
        if (auto it = vars.find(name); it != vars.end())
            if (Status st = apply_global(&g, name, it->second); st != TERSE_OK) return st;
    for (const auto &key : config_keys()) {
        const std::string name = env_name(key);
        if (auto it = vars.find(name); it != vars.end())
            if (Status st = config_apply(&d, key, it->second, name); st != TERSE_OK) return st;
    }
    const auto &known = config_environment_variables();
    for (const auto &[name, value] : vars) {
        if (name.compare(0, kUcxPrefix.size(), kUcxPrefix) == 0) continue;
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        if (std::any_of(std::begin(kToolVars), std::end(kToolVars),
                        [&](const char *t) { return name == t; }))
            continue;
        return set_error(TERSE_ERR_INVALID,
                         "unknown environment variable %s; did you mean %s? (known variables: %s; "
                         "TERSE_UCX_* are passed to UCX)",
                         quote(name).c_str(), config_text::closest(name, known).c_str(),
                         config_text::join(known).c_str());
    }
    *global = std::move(g);
    *defaults = std::move(d);
    return TERSE_OK;
}

}  // namespace terse
