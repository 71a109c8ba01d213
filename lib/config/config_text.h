// Small text helpers shared by the configuration sources (environment,
// config file, MPI_Info, explicit overrides): trimming, quoting values for
// messages, and "did you mean" suggestions for misspelled names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace terse::config_text {

// Strip spaces, tabs, CR and LF at both ends.
std::string_view trim(std::string_view s);

// ASCII lower case (values like "ON" or "Ring" are accepted case-blind).
std::string lower(std::string_view s);

// The value as it goes into a message: at most ~120 characters, so that a
// pasted blob does not push the explanation out of the 1 KiB error buffer.
std::string quote(std::string_view s);

// "a, b, c"
std::string join(const std::vector<std::string> &items, const char *sep = ", ");

// Damerau-Levenshtein (optimal string alignment) distance, case-blind:
// a swapped pair of letters counts as one slip, like a typo does.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to word ("" when there are no candidates).  Ties go
// to the earlier candidate so that suggestions are stable.
std::string closest(std::string_view word, const std::vector<std::string> &candidates);

}  // namespace terse::config_text
