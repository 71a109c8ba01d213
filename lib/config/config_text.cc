#include "config/config_text.h"

#include <algorithm>
#include <cctype>

namespace terse::config_text {

std::string_view trim(std::string_view s) {
    auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && blank(s.back())) s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char &c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string quote(std::string_view s) {
    constexpr size_t kMax = 120;
    if (s.size() <= kMax) return std::string(s);
    return std::string(s.substr(0, kMax)) + "...";
}

std::string join(const std::vector<std::string> &items, const char *sep) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += sep;
        out += items[i];
    }
    return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
    const std::string x = lower(a), y = lower(b);
    const size_t n = x.size(), m = y.size();
    // Three rolling rows are enough for the transposition rule.
    std::vector<size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
    for (size_t j = 0; j <= m; ++j) prev[j] = j;
    for (size_t i = 1; i <= n; ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= m; ++j) {
            const size_t cost = x[i - 1] == y[j - 1] ? 0 : 1;
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
            if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1])
                cur[j] = std::min(cur[j], prev2[j - 2] + 1);
        }
        std::swap(prev2, prev);
        std::swap(prev, cur);
    }
    return prev[m];
}

std::string closest(std::string_view word, const std::vector<std::string> &candidates) {
    const std::string w = lower(word);
    std::string best;
    size_t best_d = static_cast<size_t>(-1);
    for (const auto &c : candidates) {
        // Scores in half steps: a shortened name (TERSE_PIPELINE, chunk) is
        // a slip and a half from the full one, however many letters were
        // left off; a real one-letter slip still wins over it.
        size_t d = 2 * edit_distance(w, c);
        if (!w.empty() && lower(c).compare(0, w.size(), w) == 0) d = std::min<size_t>(d, 3);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    return best;
}

}  // namespace terse::config_text
