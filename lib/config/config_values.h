// The kinds of value a configuration key holds, each with its range: how a
// value is read from text, written back in canonical form (which reads back
// to the same value), and described to the user ("accepted: ...").  The key
// table (config_keys.cc) pairs each key with one of these and its field.
#pragma once

#include "config/config.h"
#include "config/config_text.h"

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace terse::config_value {

// Every kind provides:
//   using type = ...;                      the field's type
//   bool parse(std::string_view text, type *out, std::string *why) const;
//                                          false when refused (*out unchanged;
//                                          *why may give the reason)
//   std::string format(const type &v) const;
//   std::string accepted(const type &dflt) const;
//   std::vector<std::string> refused() const;
//                                          values just outside what is
//                                          accepted, for the table's tests
//   static constexpr bool verbatim;        true: the text is taken as is,
//                                          without trimming blanks

// One of a fixed set of names, matched case-blind.  The first listed name of
// a value is its canonical form; hidden names are accepted but not listed.
template <class T>
struct Choice {
    struct Name {
        const char *text;
        T value;
        const char *meaning = nullptr;  // shown as "text (meaning)"
        bool listed = true;
    };
    using type = T;
    static constexpr bool verbatim = false;
    std::vector<Name> names;

    bool parse(std::string_view text, T *out, std::string *) const;
    std::string format(const T &v) const;
    std::string accepted(const T &) const;
    std::vector<std::string> refused() const { return {"no_such_value", ""}; }
    const char *name_of(const T &v) const;  // nullptr for a value without a name
};

// A byte count: digits with an optional binary suffix, lo..hi.
struct Size {
    using type = size_t;
    static constexpr bool verbatim = false;
    size_t lo, hi;

    bool parse(std::string_view text, size_t *out, std::string *) const;
    std::string format(const size_t &v) const { return std::to_string(v); }
    std::string accepted(const size_t &dflt) const;
    std::vector<std::string> refused() const;
};

// A whole number lo..hi (no sign, no suffix).
template <class T>
struct Integer {
    using type = T;
    static constexpr bool verbatim = false;
    T lo, hi;

    bool parse(std::string_view text, T *out, std::string *) const;
    std::string format(const T &v) const { return std::to_string(v); }
    std::string accepted(const T &) const;
    std::vector<std::string> refused() const;
};

// Any text, kept exactly as given (paths may hold blanks).
struct Text {
    using type = std::string;
    static constexpr bool verbatim = true;
    const char *what;  // e.g. "colon-separated directories"

    bool parse(std::string_view text, std::string *out, std::string *) const {
        *out = std::string(text);
        return true;
    }
    std::string format(const std::string &v) const { return v; }
    std::string accepted(const std::string &) const { return std::string("any text: ") + what; }
    std::vector<std::string> refused() const { return {}; }
};

// The grammar codec[:key=value[,key=value...]].
struct Codec {
    using type = CodecSpec;
    static constexpr bool verbatim = false;

    bool parse(std::string_view text, CodecSpec *out, std::string *why) const;
    std::string format(const CodecSpec &v) const { return v.text(); }
    std::string accepted(const CodecSpec &) const;
    std::vector<std::string> refused() const { return {"", "zfp:", "Zfp"}; }
};

// The guard's error budget: "off", "abs:X" or "rel:X" with X a finite
// number > 0.
struct Budget {
    using type = ErrorBudget;
    static constexpr bool verbatim = false;

    bool parse(std::string_view text, ErrorBudget *out, std::string *why) const;
    std::string format(const ErrorBudget &v) const;
    std::string accepted(const ErrorBudget &) const;
    std::vector<std::string> refused() const { return {"abs:0", "rel:-1", "rel", "abs:x", "norm:1e-3"}; }
};
// The candidates and budget of a spec the Codec kind accepted as auto.
AutoCodec auto_codec_from(const CodecSpec &spec);

extern const Choice<bool> kBool;
// Error feedback: -1 the codec's default, 0 off, 1 on.
extern const Choice<int> kFeedback;
// The guard: check every K-th lossy allreduce, 0 off.
extern const Integer<unsigned> kGuard;

// Digits with an optional binary suffix (K, M, G, T, KiB...); false on a
// syntax error or overflow.
bool size_from(std::string_view text, size_t *out);

// "4K", "1G": the largest binary suffix that divides v, or plain bytes.
std::string size_text(size_t v);

// ------------------------------------------------------------ templates

template <class T>
bool Choice<T>::parse(std::string_view text, T *out, std::string *) const {
    const std::string v = config_text::lower(text);
    for (const Name &n : names)
        if (v == n.text) {
            *out = n.value;
            return true;
        }
    return false;
}

template <class T>
const char *Choice<T>::name_of(const T &v) const {
    for (const Name &n : names)
        if (n.listed && n.value == v) return n.text;
    return nullptr;
}

template <class T>
std::string Choice<T>::format(const T &v) const {
    const char *n = name_of(v);
    return n ? n : "unknown";
}

template <class T>
std::string Choice<T>::accepted(const T &) const {
    std::string out;
    for (const Name &n : names) {
        if (!n.listed) continue;
        if (!out.empty()) out += ", ";
        out += n.text;
        if (n.meaning) out += std::string(" (") + n.meaning + ")";
    }
    return out;
}

template <class T>
bool Integer<T>::parse(std::string_view text, T *out, std::string *) const {
    // At most 18 digits: no overflow of long long, and far above any range.
    if (text.empty() || text.size() > 18) return false;
    long long v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + (c - '0');
    }
    if (v < static_cast<long long>(lo) || v > static_cast<long long>(hi)) return false;
    *out = static_cast<T>(v);
    return true;
}

template <class T>
std::string Integer<T>::accepted(const T &) const {
    if (hi == std::numeric_limits<T>::max()) return "an integer >= " + std::to_string(lo);
    return "an integer " + std::to_string(lo) + ".." + std::to_string(hi);
}

template <class T>
std::vector<std::string> Integer<T>::refused() const {
    std::vector<std::string> out = {"x", std::to_string(static_cast<long long>(hi) + 1)};
    if (lo > 0) out.push_back(std::to_string(static_cast<long long>(lo) - 1));
    else out.push_back("-1");
    return out;
}

}  // namespace terse::config_value
