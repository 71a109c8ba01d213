// The table of configuration keys.  Every setting terse reads, from every
// source, is one row of config_keys.cc: its name, the field it sets, the kind
// of value with its range, its help text, the sources that accept it and
// whether it is per communicator or process-wide.  Everything that names
// keys is derived from the table: reading each source, the known keys and
// the "did you mean" hint in error messages, the canonical form the ranks
// agree on, and terse-config-check's listing.  A new key is one row (plus
// its field in CommConfig or GlobalConfig, whose initialiser is its
// default).
#pragma once

#include "config/config.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace terse {

// The sources of configuration; a key accepts a set of them.
enum ConfigSource : unsigned {
    kFromEnv = 1u << 0,   // environment variable TERSE_<KEY>
    kFromFile = 1u << 1,  // "key = value" in the TERSE_CONFIG file
    kFromInfo = 1u << 2,  // MPI_Info hint terse_<key>
    kFromApi = 1u << 3,   // terse_comm_configure(comm, "key", value)
};
constexpr unsigned kFromAnySource = kFromEnv | kFromFile | kFromInfo | kFromApi;

enum class KeyScope {
    Comm,     // a field of CommConfig: per communicator, agreed across its ranks
    Process,  // a field of GlobalConfig: read once per process
};

struct ConfigKey {
    std::string name;  // bare name, as in the config file: "min_bytes"
    KeyScope scope;
    unsigned sources;                  // ConfigSource bits
    std::string help;                  // one line, for listings
    std::string accepted;              // what values are accepted, for messages and listings
    std::string default_text;          // the default, in canonical form
    std::vector<std::string> refused;  // values just outside the accepted ones
    bool verbatim;                     // the value is taken as is, blanks included

    // Reads text into the key's field of *comm (scope Comm) or *global
    // (scope Process).  On refusal returns false, leaves the field as it
    // was, and may say why in *why.
    std::function<bool(CommConfig *comm, GlobalConfig *global, std::string_view text, std::string *why)> set;
    // The field's value in canonical form (reads back through set).
    std::function<std::string(const CommConfig *comm, const GlobalConfig *global)> get;

    bool accepts(ConfigSource s) const { return (sources & s) != 0; }
};

// Every key, per-communicator ones first, in the order of the canonical form.
const std::vector<ConfigKey> &config_key_table();

// The key of that bare name, or nullptr.
const ConfigKey *config_key_find(std::string_view name);

// The name as a source spells it: TERSE_MIN_BYTES, min_bytes, terse_min_bytes.
std::string config_key_spelling(const ConfigKey &key, ConfigSource source);

// What a source is called in messages about the keys it is given
// ("environment", "MPI_Info", "terse_comm_configure", "config file").
const char *config_source_name(ConfigSource source);

// The keys a source accepts, as it spells them, in table order.
std::vector<std::string> config_source_keys(ConfigSource source);

// Sets key from source: spelled is the key as the source spells it, where
// the place for messages (a variable, "config file f:3", "MPI_Info key
// terse_codec"...; empty: derived from the source and the key).  An unknown
// key, or one the source may not set, is an error that lists the keys the
// source accepts and suggests the closest.  Only the field of the key's
// scope is needed (the other pointer may be null).
Status config_key_apply(ConfigSource source, std::string_view spelled, std::string_view value,
                        const std::string &where, CommConfig *comm, GlobalConfig *global);

}  // namespace terse
