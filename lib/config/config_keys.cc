// The key table and what is derived from it: lookup by each source's
// spelling, applying a value with the messages users see, and the canonical
// form of a communicator's configuration.
#include "config/config_keys.h"

#include "config/config_text.h"
#include "config/config_values.h"

#include <algorithm>
#include <climits>
#include <type_traits>

namespace terse {

using config_text::quote;

namespace {

constexpr size_t kKiB = size_t(1) << 10;
constexpr size_t kGiB = size_t(1) << 30;
constexpr size_t kTiB = size_t(1) << 40;

const config_value::Choice<Algorithm> kAlgorithm{{{"auto", Algorithm::Auto},
                                                  {"ring", Algorithm::Ring},
                                                  {"recursive_doubling", Algorithm::RecursiveDoubling},
                                                  {"gather", Algorithm::Gather},
                                                  {"two_level", Algorithm::TwoLevel}}};

// TERSE_NODE_KEY: a name for this rank's node, compared as text across the
// ranks of a communicator (runtime/node_layout.cc); a hostname, a rack slot
// or a number all fit, so its characters are those of host names.  Empty
// (the default) leaves the nodes to the MPI library's shared-memory split.
struct NodeKey {
    using type = std::string;
    static constexpr bool verbatim = false;
    static constexpr size_t kMaxLength = 64;

    bool parse(std::string_view text, std::string *out, std::string *why) const {
        if (text.size() > kMaxLength) {
            *why = "expected at most " + std::to_string(kMaxLength) + " characters";
            return false;
        }
        for (char c : text) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                            c == '.' || c == '_' || c == '-' || c == ':';
            if (!ok) {
                *why = std::string("character '") + c + "' is not allowed";
                return false;
            }
        }
        *out = std::string(text);
        return true;
    }
    std::string format(const std::string &v) const { return v; }
    std::string accepted(const std::string &) const {
        return "up to 64 of the characters A-Z a-z 0-9 . _ - : (ranks with the same key share a node; "
               "empty: the MPI library's shared-memory split)";
    }
    std::vector<std::string> refused() const { return {"node 1", "a/b", std::string(kMaxLength + 1, 'n')}; }
};

const config_value::Choice<PlannerMode> kPlanner{{{"model", PlannerMode::Model}, {"fixed", PlannerMode::Fixed}}};

const config_value::Choice<FeedbackKeyMode> kFeedbackKey{
    {{"address", FeedbackKeyMode::Address, "the input buffer's address"},
     {"sequence", FeedbackKeyMode::Sequence,
      "the call's place among calls of its shape since terse_feedback_step"},
     {"tag", FeedbackKeyMode::Tag, "terse_set_next_feedback_tag"}}};
const config_value::Choice<NbPolicy> kNbPolicy{{{"priority", NbPolicy::Priority}, {"fifo", NbPolicy::Fifo}}};

// One row: binds a name to a field of CommConfig (per communicator) or
// GlobalConfig (process-wide) and to the kind of value it holds.  The
// field's initialiser is the default.
template <class Owner, class Field, class Kind>
ConfigKey row(const char *name, Field Owner::*field, const Kind &kind, unsigned sources, const char *help) {
    static_assert(std::is_same_v<Owner, CommConfig> || std::is_same_v<Owner, GlobalConfig>,
                  "a key sets a field of CommConfig or GlobalConfig");
    static_assert(std::is_same_v<Field, typename Kind::type>, "the kind must hold the field's type");
    constexpr bool comm = std::is_same_v<Owner, CommConfig>;
    const Field dflt = Owner{}.*field;
    ConfigKey k;
    k.name = name;
    k.scope = comm ? KeyScope::Comm : KeyScope::Process;
    k.sources = sources;
    k.help = help;
    k.accepted = kind.accepted(dflt);
    k.default_text = kind.format(dflt);
    k.refused = kind.refused();
    k.verbatim = Kind::verbatim;
    k.set = [field, kind](CommConfig *c, GlobalConfig *g, std::string_view text, std::string *why) {
        Owner *owner;
        if constexpr (comm) owner = c;
        else owner = g;
        if (!owner) return false;
        Field v{};
        if (!kind.parse(text, &v, why)) return false;
        owner->*field = std::move(v);
        return true;
    };
    k.get = [field, kind](const CommConfig *c, const GlobalConfig *g) -> std::string {
        const Owner *owner;
        if constexpr (comm) owner = c;
        else owner = g;
        return owner ? kind.format(owner->*field) : std::string();
    };
    return k;
}

std::vector<ConfigKey> make_table() {
    using namespace config_value;
    constexpr unsigned all = kFromAnySource, env = kFromEnv;
    return {
        // Per communicator (canonical order).
        row("enable", &CommConfig::enable, kBool, all,
            "0 passes every call to the MPI library (terse only counts them)"),
        row("codec", &CommConfig::codec, Codec{}, all, "the codec and its parameters"),
        row("min_bytes", &CommConfig::min_bytes, Size{0, kTiB}, all,
            "calls with fewer bytes pass through to the MPI library"),
        row("chunk_bytes", &CommConfig::chunk_bytes, Size{4 * kKiB, kGiB}, all,
            "pipeline chunk, in bytes of input"),
        row("pipeline_depth", &CommConfig::pipeline_depth, Integer<int>{1, 64}, all, "chunks in flight per peer"),
        row("algorithm", &CommConfig::algorithm, kAlgorithm, all,
            "the schedule: auto lets the planner choose; two_level: the MPI library inside a node, "
            "the codec between nodes"),
        row("feedback", &CommConfig::feedback, kFeedback, all,
            "error feedback for lossy codecs; default: the codec's choice"),
        row("feedback_key", &CommConfig::feedback_key, kFeedbackKey, all,
            "what names the buffer a feedback residual belongs to; sequence and tag keep it when buffers "
            "move and across terse_feedback_save/restore"),
        row("verify", &CommConfig::verify, kBool, all,
            "also compute every call with the MPI library and record the difference"),
        row("guard", &CommConfig::guard, kGuard, all,
            "with a lossy codec, check every n-th allreduce against the exact result and switch "
            "to lossless when the error exceeds the allowed one; 0 off"),
        row("guard_budget", &CommConfig::guard_budget, Budget{}, all,
            "the error the guard allows; off: the codec's own stated bound"),
        row("tune_file", &CommConfig::tune_file, Text{"a file name, empty for none"}, all,
            "tuning file (terse-tune) whose entries override the planner"),
        row("planner", &CommConfig::planner, kPlanner, all,
            "model: per call the fastest of the MPI library, the lossless engine and the codec; "
            "fixed: always the codec"),
        row("nb_policy", &CommConfig::nb_policy, kNbPolicy, all,
            "non-blocking operations in flight: priority serves the highest priority "
            "(terse_set_next_priority), then the earliest issued; fifo advances all in issue order"),
        row("nb_inflight", &CommConfig::nb_inflight, Integer<int>{1, 64}, all,
            "non-blocking operations started at once on a communicator; later ones queue"),
        row("nb_hold_us", &CommConfig::nb_hold_us, Integer<int>{0, 1000000}, all,
            "nb_policy=priority: an operation that moved within this many microseconds holds the ones "
            "below it; one idle longer waits on a peer and lets them move"),
        // Process-wide, from the environment only.
        row("plugin_path", &GlobalConfig::plugin_path, Text{"colon-separated directories"}, env,
            "directories searched for codec plugins before the install directory"),
        row("config", &GlobalConfig::config_file, Text{"a file name"}, env, "the configuration file"),
        row("stats", &GlobalConfig::stats,
            Choice<int>{{{"0", 0, "off"},
                         {"1", 1, "summary at MPI_Finalize"},
                         {"all", 2, "summary of every communicator"},
                         {"off", 0, nullptr, false},
                         {"no", 0, nullptr, false},
                         {"false", 0, nullptr, false},
                         {"on", 1, nullptr, false},
                         {"yes", 1, nullptr, false},
                         {"true", 1, nullptr, false}}},
            env, "statistics printed at MPI_Finalize"),
        row("log", &GlobalConfig::log_level,
            Choice<std::string>{{{"error", "error"}, {"warn", "warn"}, {"info", "info"}, {"debug", "debug"}}},
            env, "diagnostics on standard error"),
        row("capture", &GlobalConfig::capture_prefix, Text{"a file name prefix"}, env,
            "record the inputs of intercepted allreduces to HDF5 files prefix.rankR.h5"),
        row("capture_interval", &GlobalConfig::capture_interval, Integer<unsigned>{1, UINT_MAX}, env,
            "with capture, record every n-th call of each communicator"),
        row("node_key", &GlobalConfig::node_key, NodeKey{}, env,
            "this rank's node for algorithm=two_level, instead of the MPI library's shared-memory split"),
        row("device_codecs", &GlobalConfig::device_codecs,
            Choice<int>{{{"1", 1, "a summable codec with CUDA kernels encodes collectives on device buffers"},
                         {"0", 0, "every call on device buffers is staged whole through host memory"}}},
            env, "allreduces on CUDA device buffers: run the codec's device instance, or stage them whole"),
    };
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char &c : out)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return out;
}

std::string value_where(ConfigSource source, std::string_view spelled) {
    switch (source) {
    case kFromEnv: return std::string(spelled);
    case kFromInfo: return "MPI_Info key " + std::string(spelled);
    default: return config_source_name(source);
    }
}

// Error feedback and the guard belong to the engine, for every codec:
// "zfp:rate=8,feedback=on,guard=100" is shorthand for codec=zfp:rate=8 plus
// feedback=on and guard=100 from the same source, so each setting lives in
// one field.
void lift_codec_engine_keys(CommConfig *cfg) {
    auto &params = cfg->codec.params;
    for (auto kv = params.begin(); kv != params.end();) {
        // Values checked by the grammar (config_values.cc, parse_codec).
        if (kv->first == "feedback") config_value::kFeedback.parse(kv->second, &cfg->feedback, nullptr);
        else if (kv->first == "guard") config_value::kGuard.parse(kv->second, &cfg->guard, nullptr);
        else {
            ++kv;
            continue;
        }
        kv = params.erase(kv);
    }
}

Status not_here(ConfigSource source, const ConfigKey &key, std::string_view spelled, const std::string &where) {
    std::vector<std::string> places;
    for (ConfigSource s : {kFromEnv, kFromFile, kFromInfo, kFromApi})
        if (key.accepts(s))
            places.push_back(std::string(config_source_name(s)) + " " + config_key_spelling(key, s));
    return set_error(TERSE_ERR_INVALID, "%s: key '%s' cannot be set here: it is %s, set by %s",
                     where.empty() ? config_source_name(source) : where.c_str(), quote(spelled).c_str(),
                     key.scope == KeyScope::Process ? "process-wide" : "per communicator",
                     config_text::join(places, " or ").c_str());
}

Status unknown(ConfigSource source, std::string_view spelled, const std::string &where) {
    const std::vector<std::string> known = config_source_keys(source);
    const char *kind = source == kFromEnv ? "variable" : "key";
    return set_error(TERSE_ERR_INVALID, "%s: unknown %s '%s'; did you mean '%s'? (known %ss: %s%s)",
                     where.empty() ? config_source_name(source) : where.c_str(), kind, quote(spelled).c_str(),
                     config_text::closest(spelled, known).c_str(), kind, config_text::join(known).c_str(),
                     source == kFromEnv ? "; TERSE_UCX_* are passed to UCX" : "");
}

}  // namespace

const std::vector<ConfigKey> &config_key_table() {
    static const std::vector<ConfigKey> table = make_table();
    return table;
}

const ConfigKey *config_key_find(std::string_view name) {
    for (const ConfigKey &k : config_key_table())
        if (k.name == name) return &k;
    return nullptr;
}

std::string config_key_spelling(const ConfigKey &key, ConfigSource source) {
    switch (source) {
    case kFromEnv: return "TERSE_" + upper(key.name);
    case kFromInfo: return "terse_" + key.name;
    default: return key.name;
    }
}

const char *config_source_name(ConfigSource source) {
    switch (source) {
    case kFromEnv: return "environment";
    case kFromFile: return "config file";
    case kFromInfo: return "MPI_Info";
    case kFromApi: return "terse_comm_configure";
    }
    return "configuration";
}

std::vector<std::string> config_source_keys(ConfigSource source) {
    std::vector<std::string> out;
    for (const ConfigKey &k : config_key_table())
        if (k.accepts(source)) out.push_back(config_key_spelling(k, source));
    return out;
}

Status config_key_apply(ConfigSource source, std::string_view spelled, std::string_view value,
                        const std::string &where, CommConfig *comm, GlobalConfig *global) {
    const ConfigKey *key = nullptr;
    for (const ConfigKey &k : config_key_table())
        if (config_key_spelling(k, source) == spelled) {
            key = &k;
            break;
        }
    if (!key) return unknown(source, spelled, where);
    const bool have_field = key->scope == KeyScope::Comm ? comm != nullptr : global != nullptr;
    if (!key->accepts(source) || !have_field) return not_here(source, *key, spelled, where);
    const std::string_view text = key->verbatim ? value : config_text::trim(value);
    std::string why;
    if (!key->set(comm, global, text, &why))
        return set_error(TERSE_ERR_INVALID, "%s: invalid value '%s' for %s%s%s (accepted: %s)",
                         where.empty() ? value_where(source, spelled).c_str() : where.c_str(),
                         quote(text).c_str(), key->name.c_str(), why.empty() ? "" : ": ", why.c_str(),
                         key->accepted.c_str());
    if (key->scope == KeyScope::Comm) lift_codec_engine_keys(comm);
    return TERSE_OK;
}

const char *algorithm_name(Algorithm a) {
    const char *n = kAlgorithm.name_of(a);
    return n ? n : "unknown";
}

const char *planner_name(PlannerMode p) {
    const char *n = kPlanner.name_of(p);
    return n ? n : "unknown";
}

const char *feedback_key_name(FeedbackKeyMode m) {
    const char *n = kFeedbackKey.name_of(m);
    return n ? n : "unknown";
}

std::string CommConfig::canonical() const {
    // Every per-communicator key in table order, values in the form the key
    // reads back, so that the string both compares across ranks and parses.
    std::string s;
    for (const ConfigKey &k : config_key_table()) {
        if (k.scope != KeyScope::Comm) continue;
        if (!s.empty()) s += ' ';
        s += k.name + "=" + k.get(this, nullptr);
    }
    return s;
}

}  // namespace terse
