#include "config/config_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>

namespace terse::config_value {

using config_text::lower;
using config_text::quote;

// Booleans as users write them in shells and config files.
const Choice<bool> kBool{{{"1", true},
                          {"0", false},
                          {"on", true},
                          {"off", false},
                          {"true", true},
                          {"false", false},
                          {"yes", true},
                          {"no", false}}};

const Choice<int> kFeedback{{{"default", -1},
                             {"1", 1},
                             {"0", 0},
                             {"on", 1},
                             {"off", 0},
                             {"true", 1},
                             {"false", 0},
                             {"yes", 1},
                             {"no", 0}}};

const Integer<unsigned> kGuard{0, 1000000000u};

namespace {

constexpr const char *kSuffixes[] = {"", "K", "M", "G", "T"};

bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

bool valid_ident(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), ident_char); }

bool value_char(char c) {
    return c != ',' && c != ':' && c != '=' && c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\v' &&
           c != '\f';
}

std::string parse_codec(std::string_view text, CodecSpec *out);

constexpr const char *kAutoAccepted =
    "auto:candidates=CODEC[|CODEC...][,budget=abs:X|rel:X][,feedback=on|off|default], e.g. "
    "auto:candidates=quantize:bits=8|errbound:rel=1e-3,budget=rel:1e-2";

// "abs:X" or "rel:X", X a finite number > 0 (rel at most 1).
std::string parse_budget(std::string_view v, AutoCodec *out) {
    const size_t colon = v.find(':');
    const std::string_view kind = v.substr(0, colon);
    if (colon == std::string_view::npos || (kind != "abs" && kind != "rel"))
        return "budget '" + quote(v) + "' is not abs:X or rel:X";
    const std::string num(v.substr(colon + 1));
    char *end = nullptr;
    const double x = num.empty() ? 0.0 : std::strtod(num.c_str(), &end);
    if (num.empty() || *end != '\0' || !std::isfinite(x) || !(x > 0) || (kind == "rel" && x > 1))
        return "budget '" + quote(v) + "' needs a number " + (kind == "rel" ? "in (0, 1]" : "> 0") + " after '" +
               std::string(kind) + ":'";
    out->budget = kind == "abs" ? AutoCodec::Budget::Abs : AutoCodec::Budget::Rel;
    out->budget_value = x;
    return "";
}

// The candidates of auto: '|'-separated codec specifications, none auto,
// none twice.
std::string parse_candidates(std::string_view v, AutoCodec *out) {
    while (true) {
        const size_t bar = v.find('|');
        CodecSpec c;
        std::string why = parse_codec(v.substr(0, bar), &c);
        if (!why.empty()) return "candidate '" + quote(v.substr(0, bar)) + "': " + why;
        if (codec_is_auto(c)) return "a candidate of auto cannot be auto";
        for (const CodecSpec &o : out->candidates)
            if (o.text() == c.text()) return "candidate '" + c.text() + "' is given twice";
        out->candidates.push_back(std::move(c));
        if (bar == std::string_view::npos) return "";
        v = v.substr(bar + 1);
    }
}

// auto's own grammar: its values hold ':', '=' and ',' of the candidates'.
std::string parse_auto(std::string_view rest, CodecSpec *out) {
    if (rest.empty()) return std::string("auto needs candidates (accepted: ") + kAutoAccepted + ")";
    std::vector<std::pair<std::string, std::string>> items;
    size_t start = 0;
    while (start <= rest.size()) {
        size_t comma = rest.find(',', start);
        if (comma == std::string_view::npos) comma = rest.size();
        const std::string_view item = rest.substr(start, comma - start);
        const std::string_view key = item.substr(0, item.find('='));
        if (key == "candidates" || key == "budget" || key == "feedback") {
            if (item.size() == key.size() || item.size() == key.size() + 1)
                return "auto's '" + std::string(key) + "' has no value";
            for (const auto &kv : items)
                if (kv.first == key) return "auto's '" + std::string(key) + "' is given twice";
            items.emplace_back(std::string(key), std::string(item.substr(key.size() + 1)));
        } else if (!items.empty() && items.back().first == "candidates") {
            items.back().second += "," + std::string(item);  // a further parameter of the last candidate
        } else {
            return "auto has no key '" + quote(key) + std::string("' (accepted: ") + kAutoAccepted + ")";
        }
        start = comma + 1;
    }
    AutoCodec a;
    CodecSpec spec;
    spec.name = "auto";
    for (const auto &[key, value] : items) {
        std::string why;
        if (key == "candidates") {
            why = parse_candidates(value, &a);
            std::string canon;
            for (const CodecSpec &c : a.candidates) canon += (canon.empty() ? "" : "|") + c.text();
            spec.params.emplace_back(key, canon);
        } else if (key == "budget") {
            why = parse_budget(value, &a);
            spec.params.emplace_back(key, value);
        } else {
            int fb;
            if (!kFeedback.parse(value, &fb, nullptr))
                why = "value '" + quote(value) + "' of parameter 'feedback' is not one of " +
                      kFeedback.accepted(-1);
            spec.params.emplace_back(key, value);
        }
        if (!why.empty()) return why;
    }
    if (a.candidates.empty()) return std::string("auto needs candidates= (accepted: ") + kAutoAccepted + ")";
    *out = std::move(spec);
    return "";
}

// Parses the grammar; returns "" on success or the reason it was refused.
std::string parse_codec(std::string_view text, CodecSpec *out) {
    if (text.substr(0, 4) == "auto" && (text.size() == 4 || text[4] == ':'))
        return parse_auto(text.size() > 4 ? text.substr(5) : std::string_view(), out);
    const size_t colon = text.find(':');
    const std::string_view name = text.substr(0, colon);
    if (name.empty()) return "the codec name is empty";
    if (!valid_ident(name)) return "codec name '" + quote(name) + "' has characters outside a-z, 0-9 and '_'";
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
            if (eq == std::string_view::npos) return "parameter '" + quote(item) + "' has no '=value'";
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
            int fb;
            if (key == "feedback" && !kFeedback.parse(value, &fb, nullptr))
                return "value '" + quote(value) + "' of parameter 'feedback' is not one of " +
                       kFeedback.accepted(-1);
            unsigned guard;
            if (key == "guard" && !kGuard.parse(value, &guard, nullptr))
                return "value '" + quote(value) + "' of parameter 'guard' is not " + kGuard.accepted(0);
            spec.params.emplace_back(std::string(key), std::string(value));
            if (comma == std::string_view::npos) break;
            rest = rest.substr(comma + 1);
        }
    }
    *out = std::move(spec);
    return "";
}

}  // namespace

AutoCodec auto_codec_from(const CodecSpec &spec) {
    AutoCodec a;
    for (const auto &[key, value] : spec.params) {
        if (key == "candidates") parse_candidates(value, &a);  // checked when parsed
        else if (key == "budget") parse_budget(value, &a);
    }
    return a;
}

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

std::string size_text(size_t v) {
    unsigned unit = 0;
    while (v != 0 && unit + 1 < std::size(kSuffixes) && v % 1024 == 0) {
        v /= 1024;
        ++unit;
    }
    return std::to_string(v) + kSuffixes[unit];
}

bool Size::parse(std::string_view text, size_t *out, std::string *) const {
    size_t v;
    if (!size_from(text, &v) || v < lo || v > hi) return false;
    *out = v;
    return true;
}

std::string Size::accepted(const size_t &dflt) const {
    // Only the suffixes that can give a value in range are offered.
    std::string suffixes;
    size_t units = 0;
    for (size_t u = 1; u < std::size(kSuffixes) && (size_t(1) << (10 * u)) <= hi; ++u) ++units;
    for (size_t u = 1; u <= units; ++u) {
        if (u > 1) suffixes += u == units ? " or " : ", ";
        suffixes += kSuffixes[u];
    }
    std::string out = "a size " + size_text(lo) + ".." + size_text(hi) + " in bytes";
    if (units) out += " with an optional suffix " + suffixes + " (powers of 1024)";
    out += ", e.g. " + std::to_string(dflt);
    if (size_text(dflt) != std::to_string(dflt)) out += " or " + size_text(dflt);
    return out;
}

std::vector<std::string> Size::refused() const {
    std::vector<std::string> out = {"x", "1.5K"};
    if (hi < std::numeric_limits<size_t>::max()) out.push_back(std::to_string(hi + 1));
    if (lo > 0) out.push_back(std::to_string(lo - 1));
    return out;
}

bool Budget::parse(std::string_view text, ErrorBudget *out, std::string *why) const {
    const std::string v = lower(text);
    if (v == "off" || v == "none") {
        *out = ErrorBudget{};
        return true;
    }
    const size_t colon = v.find(':');
    const std::string kind = v.substr(0, colon);
    if (colon == std::string::npos || (kind != "abs" && kind != "rel")) {
        if (why) *why = "the budget is abs:<bound> or rel:<fraction of max |exact|>";
        return false;
    }
    const std::string num = v.substr(colon + 1);
    char *end = nullptr;
    const double x = num.empty() ? 0 : std::strtod(num.c_str(), &end);
    if (num.empty() || *end || !std::isfinite(x) || x <= 0) {
        if (why) *why = "'" + quote(num) + "' is not a finite number > 0";
        return false;
    }
    *out = ErrorBudget{kind == "abs" ? ErrorBudget::Abs : ErrorBudget::Rel, x};
    return true;
}

std::string Budget::format(const ErrorBudget &v) const {
    if (v.kind == ErrorBudget::None) return "off";
    char buf[64];
    snprintf(buf, sizeof buf, "%s:%.17g", v.kind == ErrorBudget::Abs ? "abs" : "rel", v.value);
    return buf;
}

std::string Budget::accepted(const ErrorBudget &) const {
    return "off (the codec's own error bound), abs:<bound> (max |result - exact|) or "
           "rel:<fraction> (max |result - exact| / max |exact|), numbers finite and > 0, e.g. rel:1e-3";
}

bool Codec::parse(std::string_view text, CodecSpec *out, std::string *why) const {
    std::string reason = parse_codec(text, out);
    if (reason.empty()) return true;
    if (why) *why = std::move(reason);
    return false;
}

std::string Codec::accepted(const CodecSpec &) const {
    return std::string("codec[:key=value[,key=value...]], e.g. quantize:bits=8,block=256; names and keys of "
                       "a-z, 0-9 and '_', values non-empty without ',', ':', '=' or spaces; or ") +
           kAutoAccepted;
}

}  // namespace terse::config_value
