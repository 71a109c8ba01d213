// The config file (TERSE_CONFIG): INI-like sections whose shell-glob header is
// matched against the communicator name.  Every value is validated when the
// file is read, so that a mistake in a section that matches no communicator
// of this run is still reported, not discovered weeks later.
#include "config/config.h"

#include "config/config_text.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fnmatch.h>
#include <memory>

namespace terse {

using config_text::quote;
using config_text::trim;

namespace {

struct FileCloser {
    void operator()(FILE *f) const { fclose(f); }
};

// Comments start a line or follow a blank: a '#' or ';' glued to other text
// stays part of it, since codec parameter values may contain either.
std::string_view strip_comment(std::string_view line) {
    for (size_t i = 0; i < line.size(); ++i)
        if ((line[i] == '#' || line[i] == ';') && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
            return line.substr(0, i);
    return line;
}

}  // namespace

Status ConfigFile::load(const std::string &path) {
    std::unique_ptr<FILE, FileCloser> f(fopen(path.c_str(), "rb"));
    if (!f) return set_error(TERSE_ERR_IO, "config file %s: cannot open: %s", path.c_str(), strerror(errno));
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, n);
    if (ferror(f.get()))
        return set_error(TERSE_ERR_IO, "config file %s: cannot read: %s", path.c_str(), strerror(errno));
    return parse(text, path);
}

Status ConfigFile::parse(std::string_view text, const std::string &origin) {
    std::vector<Section> sections;
    CommConfig scratch;  // values are checked here, applied per communicator later
    int lineno = 0;
    while (!text.empty()) {
        ++lineno;
        const size_t nl = text.find('\n');
        const std::string_view raw = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        const std::string_view line = trim(strip_comment(raw));
        if (line.empty()) continue;
        const std::string where = "config file " + origin + ":" + std::to_string(lineno);

        if (line.front() == '[') {
            // The last ']' closes the header: globs may hold classes like [0-9].
            const size_t close = line.rfind(']');
            if (close == std::string_view::npos || close + 1 != line.size())
                return set_error(TERSE_ERR_INVALID,
                                 "%s: malformed section header '%s' (accepted: [pattern], a shell "
                                 "glob matched against the communicator name, e.g. [*] or "
                                 "[MPI_COMM_WORLD])",
                                 where.c_str(), quote(line).c_str());
            const std::string_view pattern = trim(line.substr(1, close - 1));
            if (pattern.empty())
                return set_error(TERSE_ERR_INVALID,
                                 "%s: empty section pattern '[]' (accepted: [pattern], a shell "
                                 "glob such as [*] or [MPI_COMM_WORLD])",
                                 where.c_str());
            sections.push_back(Section{std::string(pattern), lineno, {}});
            continue;
        }

        const size_t eq = line.find('=');
        if (eq == std::string_view::npos)
            return set_error(
                TERSE_ERR_INVALID,
                "%s: '%s' is neither a section header nor a setting (accepted: '[pattern]' section headers, "
                "'key = value' lines, and comments starting with '#' or ';')",
                where.c_str(), quote(line).c_str());
        const std::string key(trim(line.substr(0, eq)));
        const std::string value(trim(line.substr(eq + 1)));
        if (key.empty())
            return set_error(TERSE_ERR_INVALID, "%s: '%s' has no key before '=' (accepted: key = value)",
                             where.c_str(), quote(line).c_str());
        if (sections.empty())
            return set_error(TERSE_ERR_INVALID,
                             "%s: key '%s' is outside any section (accepted: keys under a "
                             "'[pattern]' header, e.g. [*] for every communicator)",
                             where.c_str(), quote(key).c_str());
        if (Status st = config_apply(&scratch, key, value, where); st != TERSE_OK) return st;
        sections.back().entries.push_back(Entry{key, value, lineno});
    }
    origin_ = origin;
    sections_ = std::move(sections);
    return TERSE_OK;
}

Status ConfigFile::apply(const std::string &comm_name, CommConfig *cfg) const {
    CommConfig next = *cfg;
    for (size_t i = 0; i < sections_.size(); ++i)
        if (fnmatch(sections_[i].pattern.c_str(), comm_name.c_str(), 0) == 0)
            if (Status st = apply_section(i, &next); st != TERSE_OK) return st;
    *cfg = std::move(next);
    return TERSE_OK;
}

Status ConfigFile::apply_section(size_t index, CommConfig *cfg) const {
    if (index >= sections_.size())
        return set_error(TERSE_ERR_INVALID, "config file %s: no section %zu (it has %zu)", origin_.c_str(), index,
                         sections_.size());
    CommConfig next = *cfg;
    for (const Entry &e : sections_[index].entries) {
        const std::string where = "config file " + origin_ + ":" + std::to_string(e.line);
        if (Status st = config_apply(&next, e.key, e.value, where); st != TERSE_OK) return st;
    }
    *cfg = std::move(next);
    return TERSE_OK;
}

std::vector<std::string> ConfigFile::section_patterns() const {
    std::vector<std::string> out;
    for (const Section &s : sections_) out.push_back(s.pattern);
    return out;
}

}  // namespace terse
