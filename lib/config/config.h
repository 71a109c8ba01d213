// Configuration: the grammar `codec[:key=value[,key=value...]]`, the
// per-communicator settings, and their sources in precedence order
//   built-in defaults < TERSE_* environment < config file section matching
//   the communicator name (TERSE_CONFIG) < MPI_Info hints (terse_*) <
//   terse_comm_configure().
// Everything here is local (no communication) and pure parsing: codec names
// and codec parameters are checked against the plugins by the registry, not
// here.  Every error names the source, the key, the bad value and what is
// accepted, via set_error().  The keys, their kinds of value, ranges and
// sources are one table (config_keys.h); the fields below are set through it.
#pragma once

#include "util/status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace terse {

// A parsed codec specification, e.g. "quantize:bits=4,block=256".
struct CodecSpec {
    std::string name = "none";
    std::vector<std::pair<std::string, std::string>> params;  // in written order
    std::string text() const;                                 // canonical "name:k=v,k=v" (params sorted by key)
};

enum class Algorithm { Auto, Ring, RecursiveDoubling, Gather, TwoLevel };
const char *algorithm_name(Algorithm a);

// The error a user allows a lossy codec (the guard's budget): none, an
// absolute bound on max |result - exact|, or a bound relative to max |exact|
// (norm-wise, as TERSE_VERIFY measures max_rel_error).
struct ErrorBudget {
    enum Kind { None, Abs, Rel } kind = None;
    double value = 0;
    bool operator==(const ErrorBudget &) const = default;
};
// TERSE_CODEC=auto:candidates=SPEC|SPEC...[,budget=abs:X|rel:X][,feedback=...]:
// the planner chooses per size class among the candidates (and the MPI
// library and the lossless engine) the fastest whose stated error bound
// meets the budget.  A candidate may have several parameters: items after
// candidates= that are not an auto key belong to its last candidate.
struct AutoCodec {
    enum class Budget { None, Abs, Rel };
    std::vector<CodecSpec> candidates;  // in written order
    Budget budget = Budget::None;
    double budget_value = 0;
};
inline bool codec_is_auto(const CodecSpec &spec) { return spec.name == "auto"; }
// The candidates and budget of an auto spec that codec_spec_parse accepted.
AutoCodec auto_codec_of(const CodecSpec &spec);

// TERSE_PLANNER: model (default) weighs the MPI library, the lossless engine
// and the codec per call; fixed always runs the configured codec on the
// engine for calls it is eligible for.
enum class PlannerMode { Model, Fixed };
const char *planner_name(PlannerMode p);

// TERSE_FEEDBACK_KEY: what names the buffer an error-feedback residual
// belongs to (engine/feedback_key.h): its address (the default), the call's
// slot in the communicator's sequence of calls, or a tag the user sets
// before the call (terse_set_next_feedback_tag).  Only sequence and tag
// keys survive a restart (terse_feedback_save).
enum class FeedbackKeyMode { Address = 0, Sequence = 1, Tag = 2 };
const char *feedback_key_name(FeedbackKeyMode m);
// How a rank serves its non-blocking operations in flight on a
// communicator (runtime/nonblocking.h): fifo advances them all in issue
// order; priority serves the highest priority (then the earliest issued)
// and holds the others at a chunk boundary while it moves.
enum class NbPolicy { Fifo, Priority };

// Settings that apply to one communicator; must agree across its ranks.
// Each field is a row of the key table (config_keys.cc); its initialiser is
// the key's default.
struct CommConfig {
    bool enable = true;                                       // enable
    CodecSpec codec;                                          // codec
    size_t min_bytes = 65536;                                 // min_bytes: smaller calls go to PMPI
    size_t chunk_bytes = 1u << 20;                            // chunk_bytes: pipeline chunk (input bytes)
    int pipeline_depth = 4;                                   // pipeline_depth: chunks in flight per peer
    Algorithm algorithm = Algorithm::Auto;                    // algorithm
    int feedback = -1;                                        // feedback: -1 codec default, 0 off, 1 on
    FeedbackKeyMode feedback_key = FeedbackKeyMode::Address;  // feedback_key
    bool verify = false;                                      // verify: compare with PMPI, record error
    unsigned guard = 0;                        // guard: check every guard-th lossy allreduce; 0 off
    ErrorBudget guard_budget;                  // guard_budget: allowed error; none: the codec's bound
    std::string tune_file;                     // tune_file: tuning file (tune_file.h); "" none
    PlannerMode planner = PlannerMode::Model;  // planner
    NbPolicy nb_policy = NbPolicy::Priority;   // nb_policy: serving non-blocking operations
    int nb_inflight = 8;                       // nb_inflight: non-blocking operations started at once
    int nb_hold_us = 1000;                     // nb_hold_us: priority holds lower operations this long

    std::string canonical() const;  // "enable=1 codec=... min_bytes=..." in table order
    uint64_t hash() const;          // FNV-1a of canonical()
};

// Process-wide settings (not per communicator), rows of the key table too.
struct GlobalConfig {
    std::string plugin_path;         // TERSE_PLUGIN_PATH (colon-separated dirs)
    std::string config_file;         // TERSE_CONFIG
    int stats = 0;                   // TERSE_STATS: 0 off, 1 print at finalize
    std::string log_level = "warn";  // TERSE_LOG
    std::string capture_prefix;      // TERSE_CAPTURE
    unsigned capture_interval = 1;   // TERSE_CAPTURE_INTERVAL
    std::string node_key;            // TERSE_NODE_KEY: this rank's node; empty = shared memory decides
    int device_codecs = 1;           // TERSE_DEVICE_CODECS: 1 codecs run on device buffers, 0 staged whole
};

// One key of CommConfig as a config file spells it ("codec", "min_bytes"...).
// source is used in messages, e.g. "config file x:12" or "--chunk-bytes".
Status config_apply(CommConfig *cfg, std::string_view key, std::string_view value, const std::string &source);

// Parse the codec grammar.
Status codec_spec_parse(std::string_view text, const std::string &source, CodecSpec *out);

// Sizes accept plain bytes or K/M/G suffixes (powers of 1024): "64K", "1M".
Status parse_size(std::string_view text, const std::string &source, size_t *out);

// Names of the keys config_apply accepts, in table order.
const std::vector<std::string> &config_keys();

// Read the environment: fills the global settings and the environment layer
// of the per-communicator defaults.  Unknown TERSE_* variables (other than
// TERSE_UCX_*, which belong to UCX) are errors that suggest the closest
// known name.  env == nullptr reads ::environ.
Status config_read_environment(GlobalConfig *global, CommConfig *defaults, char **env = nullptr);

// Names of the TERSE_* variables config_read_environment() accepts (the
// per-communicator keys upper-cased, then the process-wide ones).
const std::vector<std::string> &config_environment_variables();

// A config file: sections "[pattern]" whose shell glob is matched against
// the communicator name ("*" matches all, "MPI_COMM_WORLD" the world),
// each holding "key = value" lines with the same keys as config_apply.
// Every matching section applies, in file order.
class ConfigFile {
public:
    Status load(const std::string &path);
    Status parse(std::string_view text, const std::string &origin);
    Status apply(const std::string &comm_name, CommConfig *cfg) const;
    std::vector<std::string> section_patterns() const;
    // One section alone, whatever its pattern (tools check every section).
    size_t section_count() const { return sections_.size(); }
    Status apply_section(size_t index, CommConfig *cfg) const;

private:
    struct Entry {
        std::string key, value;
        int line;
    };
    struct Section {
        std::string pattern;
        int line;
        std::vector<Entry> entries;
    };
    std::string origin_;
    std::vector<Section> sections_;
};

// Settings kept per communicator by bare key: MPI_Info hints without their
// prefix, and terse_comm_configure() calls.
using ConfigOverrides = std::map<std::string, std::string>;

// MPI_Info hints as (key, value) pairs, in the order of the MPI_Info: keys
// "terse_<key>" are terse's, unknown terse_* keys are errors, other keys
// belong to MPI or others and are skipped.  All or nothing; on success
// *taken (if given) holds the terse keys, without the prefix.
using InfoHints = std::vector<std::pair<std::string, std::string>>;
Status config_apply_hints(const InfoHints &hints, CommConfig *cfg, ConfigOverrides *taken = nullptr);

// Hints taken by config_apply_hints(), applied again (messages name them as
// MPI_Info keys).
Status config_apply_hint_overrides(const ConfigOverrides &hints, CommConfig *cfg);

// Explicit settings from terse_comm_configure().
Status config_apply_overrides(const ConfigOverrides &ov, CommConfig *cfg);

}  // namespace terse
