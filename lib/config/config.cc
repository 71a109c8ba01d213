// The codec grammar, the per-communicator keys, their canonical form, and the
// two in-process sources (MPI_Info hints and terse_comm_configure overrides).
// The environment and the config file live in config_env.cc / config_file.cc.
#include "config/config.h"

#include "config/config_text.h"

#include <algorithm>
#include <cinttypes>
#include <limits>

namespace terse {

using config_text::lower;
using config_text::quote;
using config_text::trim;

namespace {

constexpr const char *kCodecAccepted =
    "codec[:key=value[,key=value...]], e.g. quantize:bits=8,block=256; names and keys of "
    "a-z, 0-9 and '_', values non-empty without ',', ':', '=' or spaces";
constexpr const char *kBoolAccepted = "1, 0, on, off, true, false, yes, no";
constexpr const char *kFeedbackAccepted = "default, 1, 0, on, off, true, false, yes, no";
constexpr const char *kAlgorithmAccepted = "auto, ring, recursive_doubling, gather";

constexpr size_t kKiB = size_t(1) << 10;
constexpr size_t kGiB = size_t(1) << 30;
constexpr size_t kTiB = size_t(1) << 40;
constexpr size_t kChunkMin = 4 * kKiB, kChunkMax = kGiB;
constexpr size_t kMinBytesMax = kTiB;
constexpr int kDepthMin = 1, kDepthMax = 64;

bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

bool valid_ident(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), ident_char);
}

bool value_char(char c) {
    return c != ',' && c != ':' && c != '=' && c != ' ' && c != '\t' && c != '\n' &&
           c != '\r' && c != '\v' && c != '\f';
}

// Booleans as users write them in shells and config files.
bool bool_from(std::string_view text, bool *out) {
    const std::string v = lower(text);
    if (v == "1" || v == "on" || v == "true" || v == "yes") { *out = true; return true; }
    if (v == "0" || v == "off" || v == "false" || v == "no") { *out = false; return true; }
    return false;
}

// -1 (codec default), 0 or 1; out may be null to only check.
bool feedback_from(std::string_view text, int *out) {
    bool on;
    int v;
    if (lower(text) == "default") v = -1;
    else if (bool_from(text, &on)) v = on ? 1 : 0;
    else return false;
    if (out) *out = v;
    return true;
}

// Parses the grammar; returns "" on success or the reason it was refused.
std::string parse_codec(std::string_view text, CodecSpec *out) {
    const size_t colon = text.find(':');
    const std::string_view name = text.substr(0, colon);
    if (name.empty()) return "the codec name is empty";
    if (!valid_ident(name))
        return "codec name '" + quote(name) + "' has characters outside a-z, 0-9 and '_'";
    CodecSpec spec;
    spec.name = std::string(name);
    if (colon != std::string_view::npos) {
        std::string_view rest = text.substr(colon + 1);
        if (rest.empty()) return "nothing follows ':' (leave out ':' when there are no parameters)";
        while (true) {
            const size_t comma = rest.find(',');
            const std::string_view item = rest.substr(0, comma);
            if (item.empty()) return "an empty parameter between ',' separators";
            const size_t eq = item.find('=');
            if (eq == std::string_view::npos)
                return "parameter '" + quote(item) + "' has no '=value'";
            const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
            if (key.empty()) return "parameter '" + quote(item) + "' has an empty key";
            if (!valid_ident(key))
                return "parameter key '" + quote(key) + "' has characters outside a-z, 0-9 and '_'";
            if (value.empty()) return "parameter '" + std::string(key) + "' has an empty value";
            if (!std::all_of(value.begin(), value.end(), value_char))
                return "value '" + quote(value) + "' of parameter '" + std::string(key) +
                       "' contains ',', ':', '=' or a space";
            for (const auto &kv : spec.params)
                if (kv.first == key) return "parameter '" + std::string(key) + "' is given twice";
            if (key == "feedback" && !feedback_from(value, nullptr))
                return "value '" + quote(value) + "' of parameter 'feedback' is not one of " +
                       kFeedbackAccepted;
            spec.params.emplace_back(std::string(key), std::string(value));
            if (comma == std::string_view::npos) break;
            rest = rest.substr(comma + 1);
        }
    }
    *out = std::move(spec);
    return "";
}

// Digits with an optional binary suffix; false on syntax error or overflow.
bool size_from(std::string_view text, size_t *out) {
    size_t i = 0;
    uint64_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        const unsigned d = unsigned(text[i] - '0');
        if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
        v = v * 10 + d;
        ++i;
    }
    if (i == 0) return false;
    const std::string suffix = lower(text.substr(i));
    unsigned shift;
    if (suffix.empty()) shift = 0;
    else if (suffix == "k" || suffix == "kib") shift = 10;
    else if (suffix == "m" || suffix == "mib") shift = 20;
    else if (suffix == "g" || suffix == "gib") shift = 30;
    else if (suffix == "t" || suffix == "tib") shift = 40;
    else return false;
    if (shift && v > (std::numeric_limits<uint64_t>::max() >> shift)) return false;
    v <<= shift;
    if (v > std::numeric_limits<size_t>::max()) return false;
    *out = static_cast<size_t>(v);
    return true;
}

bool int_from(std::string_view text, long long lo, long long hi, long long *out) {
    if (text.empty() || text.size() > 18) return false;
    long long v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    if (v < lo || v > hi) return false;
    *out = v;
    return true;
}

Status invalid(const std::string &source, std::string_view key, std::string_view value,
               const char *accepted) {
    return set_error(TERSE_ERR_INVALID, "%s: invalid value '%s' for %.*s (accepted: %s)",
                     source.c_str(), quote(value).c_str(), int(key.size()), key.data(),
                     accepted);
}

Status apply_size(size_t *field, std::string_view key, std::string_view value, size_t lo,
                  size_t hi, const char *accepted, const std::string &source) {
    size_t v;
    if (!size_from(value, &v) || v < lo || v > hi) return invalid(source, key, value, accepted);
    *field = v;
    return TERSE_OK;
}

}  // namespace

const char *algorithm_name(Algorithm a) {
    switch (a) {
    case Algorithm::Auto: return "auto";
    case Algorithm::Ring: return "ring";
    case Algorithm::RecursiveDoubling: return "recursive_doubling";
    case Algorithm::Gather: return "gather";
    }
    return "unknown";
}

std::string CodecSpec::text() const {
    auto sorted = params;
    std::sort(sorted.begin(), sorted.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    std::string out = name;
    for (size_t i = 0; i < sorted.size(); ++i) {
        out += i ? ',' : ':';
        out += sorted[i].first;
        out += '=';
        out += sorted[i].second;
    }
    return out;
}

Status codec_spec_parse(std::string_view text, const std::string &source, CodecSpec *out) {
    const std::string why = parse_codec(text, out);
    if (why.empty()) return TERSE_OK;
    return set_error(TERSE_ERR_INVALID, "%s: invalid value '%s' for codec: %s (accepted: %s)",
                     source.c_str(), quote(text).c_str(), why.c_str(), kCodecAccepted);
}

Status parse_size(std::string_view text, const std::string &source, size_t *out) {
    if (size_from(text, out)) return TERSE_OK;
    return set_error(TERSE_ERR_INVALID,
                     "%s: invalid size '%s' (accepted: a whole number of bytes with an optional "
                     "suffix K, M, G or T (also KiB, MiB, GiB, TiB; powers of 1024), e.g. "
                     "65536, 64K, 1M)",
                     source.c_str(), quote(text).c_str());
}

const std::vector<std::string> &config_keys() {
    static const std::vector<std::string> keys = {
        "enable", "codec", "min_bytes", "chunk_bytes",
        "pipeline_depth", "algorithm", "feedback", "verify"};
    return keys;
}

Status config_apply(CommConfig *cfg, std::string_view key, std::string_view raw_value,
                    const std::string &source) {
    const std::string_view value = trim(raw_value);
    if (key == "enable") {
        if (!bool_from(value, &cfg->enable)) return invalid(source, key, value, kBoolAccepted);
    } else if (key == "codec") {
        CodecSpec spec;
        if (Status st = codec_spec_parse(value, source, &spec); st != TERSE_OK) return st;
        // Error feedback is the engine's, for every codec: "zfp:rate=8,feedback=on"
        // is shorthand for codec=zfp:rate=8 plus feedback=on from the same
        // source, so the setting lives in one field and reaches the engine.
        auto fb = std::find_if(spec.params.begin(), spec.params.end(),
                               [](const auto &kv) { return kv.first == "feedback"; });
        if (fb != spec.params.end()) {
            feedback_from(fb->second, &cfg->feedback);  // checked by the parser
            spec.params.erase(fb);
        }
        cfg->codec = std::move(spec);
    } else if (key == "min_bytes") {
        return apply_size(&cfg->min_bytes, key, value, 0, kMinBytesMax,
                          "a size 0..1T in bytes with an optional suffix K, M, G or T "
                          "(powers of 1024), e.g. 65536 or 64K",
                          source);
    } else if (key == "chunk_bytes") {
        return apply_size(&cfg->chunk_bytes, key, value, kChunkMin, kChunkMax,
                          "a size 4K..1G in bytes with an optional suffix K, M or G "
                          "(powers of 1024), e.g. 1M",
                          source);
    } else if (key == "pipeline_depth") {
        long long v;
        if (!int_from(value, kDepthMin, kDepthMax, &v))
            return invalid(source, key, value, "an integer 1..64");
        cfg->pipeline_depth = static_cast<int>(v);
    } else if (key == "algorithm") {
        const std::string v = lower(value);
        if (v == "auto") cfg->algorithm = Algorithm::Auto;
        else if (v == "ring") cfg->algorithm = Algorithm::Ring;
        else if (v == "recursive_doubling") cfg->algorithm = Algorithm::RecursiveDoubling;
        else if (v == "gather") cfg->algorithm = Algorithm::Gather;
        else return invalid(source, key, value, kAlgorithmAccepted);
    } else if (key == "feedback") {
        if (!feedback_from(value, &cfg->feedback))
            return invalid(source, key, value, kFeedbackAccepted);
    } else if (key == "verify") {
        if (!bool_from(value, &cfg->verify)) return invalid(source, key, value, kBoolAccepted);
    } else {
        const std::string near = config_text::closest(key, config_keys());
        return set_error(TERSE_ERR_INVALID, "%s: unknown key '%s'; did you mean '%s'? (known keys: %s)",
                         source.c_str(), quote(key).c_str(), near.c_str(),
                         config_text::join(config_keys()).c_str());
    }
    return TERSE_OK;
}

std::string CommConfig::canonical() const {
    // Every field, fixed order, values in the form config_apply accepts, so
    // that the string both compares across ranks and reads back in.
    std::string s;
    s += "enable=";
    s += enable ? '1' : '0';
    s += " codec=" + codec.text();
    s += " min_bytes=" + std::to_string(min_bytes);
    s += " chunk_bytes=" + std::to_string(chunk_bytes);
    s += " pipeline_depth=" + std::to_string(pipeline_depth);
    s += " algorithm=";
    s += algorithm_name(algorithm);
    s += " feedback=";
    s += feedback < 0 ? "default" : feedback ? "1" : "0";
    s += " verify=";
    s += verify ? '1' : '0';
    return s;
}

uint64_t CommConfig::hash() const {
    uint64_t h = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
    for (unsigned char c : canonical()) {
        h ^= c;
        h *= 1099511628211ull;  // FNV-1a 64-bit prime
    }
    return h;
}

Status config_apply_info(MPI_Info info, CommConfig *cfg) {
    if (info == MPI_INFO_NULL) return TERSE_OK;
    static constexpr std::string_view kPrefix = "terse_";
    int nkeys = 0;
    if (PMPI_Info_get_nkeys(info, &nkeys) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "MPI_Info: MPI_Info_get_nkeys failed");
    CommConfig next = *cfg;  // all hints or none
    for (int i = 0; i < nkeys; ++i) {
        char key[MPI_MAX_INFO_KEY + 1] = {};
        if (PMPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "MPI_Info: MPI_Info_get_nthkey(%d) failed", i);
        const std::string_view k(key);
        if (k.substr(0, kPrefix.size()) != kPrefix) continue;  // hints for MPI or others
        const std::string source = "MPI_Info key " + std::string(k);
        const std::string_view bare = k.substr(kPrefix.size());
        const auto &keys = config_keys();
        if (std::find(keys.begin(), keys.end(), bare) == keys.end()) {
            std::vector<std::string> known;
            for (const auto &x : keys) known.push_back(std::string(kPrefix) + x);
            return set_error(TERSE_ERR_INVALID,
                             "%s: unknown terse hint '%s'; did you mean '%s'? (known keys: %s)",
                             source.c_str(), quote(k).c_str(),
                             config_text::closest(k, known).c_str(),
                             config_text::join(known).c_str());
        }
        int len = 0, flag = 0;
        if (PMPI_Info_get_valuelen(info, key, &len, &flag) != MPI_SUCCESS || !flag)
            return set_error(TERSE_ERR_MPI, "%s: MPI_Info_get_valuelen failed", source.c_str());
        std::string value(size_t(len) + 1, '\0');
        if (PMPI_Info_get(info, key, len, value.data(), &flag) != MPI_SUCCESS || !flag)
            return set_error(TERSE_ERR_MPI, "%s: MPI_Info_get failed", source.c_str());
        value.resize(std::char_traits<char>::length(value.c_str()));
        if (Status st = config_apply(&next, bare, value, source); st != TERSE_OK) return st;
    }
    *cfg = std::move(next);
    return TERSE_OK;
}

Status config_apply_overrides(const ConfigOverrides &ov, CommConfig *cfg) {
    CommConfig next = *cfg;
    for (const auto &[key, value] : ov)
        if (Status st = config_apply(&next, key, value, "terse_comm_configure"); st != TERSE_OK)
            return st;
    *cfg = std::move(next);
    return TERSE_OK;
}

}  // namespace terse
