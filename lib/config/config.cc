// The entry points of the configuration over the key table (config_keys.cc):
// one key from a named place, the codec grammar and sizes on their own, the
// agreement hash, and the two in-process sources (MPI_Info hints as plain
// pairs, read from an MPI_Info by runtime/info_hints.cc, and
// terse_comm_configure overrides).  The environment and the config file
// live in config_env.cc / config_file.cc.
#include "config/config.h"

#include "config/config_keys.h"
#include "config/config_text.h"
#include "config/config_values.h"
#include "util/fnv1a.h"

#include <algorithm>

namespace terse {

using config_text::quote;

std::string CodecSpec::text() const {
    auto sorted = params;
    std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
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
    const config_value::Codec codec;
    std::string why;
    if (codec.parse(text, out, &why)) return TERSE_OK;
    return set_error(TERSE_ERR_INVALID, "%s: invalid value '%s' for codec: %s (accepted: %s)", source.c_str(),
                     quote(text).c_str(), why.c_str(), codec.accepted(CodecSpec{}).c_str());
}

AutoCodec auto_codec_of(const CodecSpec &spec) { return config_value::auto_codec_from(spec); }

Status parse_size(std::string_view text, const std::string &source, size_t *out) {
    if (config_value::size_from(text, out)) return TERSE_OK;
    return set_error(TERSE_ERR_INVALID,
                     "%s: invalid size '%s' (accepted: a whole number of bytes with an optional "
                     "suffix K, M, G or T (also KiB, MiB, GiB, TiB; powers of 1024), e.g. "
                     "65536, 64K, 1M)",
                     source.c_str(), quote(text).c_str());
}

const std::vector<std::string> &config_keys() {
    static const std::vector<std::string> keys = config_source_keys(kFromFile);
    return keys;
}

Status config_apply(CommConfig *cfg, std::string_view key, std::string_view value, const std::string &source) {
    return config_key_apply(kFromFile, key, value, source, cfg, nullptr);
}

uint64_t CommConfig::hash() const { return fnv1a64(canonical()); }

Status config_apply_hints(const InfoHints &hints, CommConfig *cfg, ConfigOverrides *taken) {
    static constexpr std::string_view kPrefix = "terse_";
    CommConfig next = *cfg;  // all hints or none
    ConfigOverrides mine;
    for (const auto &[key, value] : hints) {
        if (key.compare(0, kPrefix.size(), kPrefix) != 0) continue;  // hints for MPI or others
        if (Status st = config_key_apply(kFromInfo, key, value, "", &next, nullptr); st != TERSE_OK) return st;
        mine[key.substr(kPrefix.size())] = value;
    }
    *cfg = std::move(next);
    if (taken) *taken = std::move(mine);
    return TERSE_OK;
}

Status config_apply_hint_overrides(const ConfigOverrides &hints, CommConfig *cfg) {
    CommConfig next = *cfg;
    for (const auto &[key, value] : hints)
        if (Status st = config_key_apply(kFromInfo, "terse_" + key, value, "", &next, nullptr); st != TERSE_OK)
            return st;
    *cfg = std::move(next);
    return TERSE_OK;
}

Status config_apply_overrides(const ConfigOverrides &ov, CommConfig *cfg) {
    CommConfig next = *cfg;
    for (const auto &[key, value] : ov)
        if (Status st = config_key_apply(kFromApi, key, value, "", &next, nullptr); st != TERSE_OK) return st;
    *cfg = std::move(next);
    return TERSE_OK;
}

}  // namespace terse
