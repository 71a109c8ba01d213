#include "config/tune_file.h"

#include "config/config_text.h"
#include "config/config_values.h"
#include "util/fnv1a.h"

#include <fstream>
#include <sstream>

namespace terse {

using config_text::quote;

namespace {

constexpr const char *kColls[] = {"allreduce", "reduce_scatter", "allgather"};
constexpr const char *kSchedules[] = {"ring", "recursive_doubling", "gather", "mpi"};
constexpr const char *kKeys[] = {"codec", "chunk", "depth", "ranks"};

template <size_t N>
std::vector<std::string> names(const char *const (&a)[N]) {
    return std::vector<std::string>(a, a + N);
}

template <size_t N>
int index_of(const char *const (&a)[N], std::string_view s) {
    for (size_t i = 0; i < N; ++i)
        if (s == a[i]) return int(i);
    return -1;
}

// One line being read: fields split on ':' with their columns (1-based).
struct Field {
    std::string_view text;
    size_t col;
};

class LineParser {
public:
    // indent: blanks before the entry, added to every column reported.
    LineParser(const std::string &origin, int line, size_t indent)
        : origin_(origin), line_(line), indent_(indent) {}

    Status error(size_t col, const std::string &what) const {
        return set_error(TERSE_ERR_INVALID, "tuning file %s:%d:%zu: %s", origin_.c_str(), line_, col + indent_,
                         what.c_str());
    }

    Status parse(std::string_view line, TuneEntry *e) {
        std::vector<Field> f;
        size_t start = 0;
        for (;;) {
            const size_t colon = line.find(':', start);
            f.push_back({line.substr(start, colon == std::string_view::npos ? colon : colon - start), start + 1});
            if (colon == std::string_view::npos) break;
            start = colon + 1;
        }
        e->line = line_;
        // collective
        const int c = index_of(kColls, f[0].text);
        if (c < 0)
            return error(f[0].col, "unknown collective '" + quote(f[0].text) + "'; did you mean '" +
                                       config_text::closest(f[0].text, names(kColls)) +
                                       "'? (accepted: " + config_text::join(names(kColls)) + ")");
        e->coll = TuneColl(c);
        if (f.size() < 3)
            return error(line.size() + 1, "an entry is collective:range:@schedule[:key=value...], e.g. "
                                          "allreduce:64K-1M:@ring:chunk=256K");
        Status s = range(f[1], e);
        if (s != TERSE_OK) return s;
        if ((s = schedule(f[2], e)) != TERSE_OK) return s;
        std::vector<std::string> seen;
        for (size_t i = 3; i < f.size(); ++i) {
            if ((s = key_value(f[i], e, &seen)) != TERSE_OK) return s;
        }
        if (e->schedule == TuneSchedule::Mpi && (e->codec != TuneCodec::Configured || e->chunk_bytes || e->depth))
            return error(f[2].col, "@mpi passes the call to the MPI library: it takes no codec, chunk or depth");
        if (e->coll != TuneColl::Allreduce && e->schedule != TuneSchedule::Ring &&
            e->schedule != TuneSchedule::Mpi)
            return error(f[2].col, std::string(kColls[c]) + " runs only @ring or @mpi");
        return TERSE_OK;
    }

private:
    Status range(const Field &f, TuneEntry *e) const {
        const size_t dash = f.text.find('-');
        const std::string accepted = "a byte range lo-hi such as 0-64K or 1M-inf (lo included, hi excluded; "
                                     "sizes with an optional K, M, G suffix)";
        if (dash == std::string_view::npos) return error(f.col, "'" + quote(f.text) + "' is not " + accepted);
        const std::string_view lo = f.text.substr(0, dash), hi = f.text.substr(dash + 1);
        if (!config_value::size_from(lo, &e->lo))
            return error(f.col, "'" + quote(lo) + "' is not a size; expected " + accepted);
        if (config_text::lower(hi) == "inf") e->hi = SIZE_MAX;
        else if (!config_value::size_from(hi, &e->hi))
            return error(f.col + dash + 1, "'" + quote(hi) + "' is not a size or inf; expected " + accepted);
        if (e->hi <= e->lo) return error(f.col, "empty range '" + quote(f.text) + "': hi must be above lo");
        return TERSE_OK;
    }

    Status schedule(const Field &f, TuneEntry *e) const {
        if (f.text.empty() || f.text[0] != '@')
            return error(f.col, "expected @schedule, found '" + quote(f.text) + "' (accepted: @" +
                                    config_text::join(names(kSchedules), ", @") + ")");
        const std::string_view name = f.text.substr(1);
        const int s = index_of(kSchedules, name);
        if (s < 0)
            return error(f.col + 1, "unknown schedule '" + quote(name) + "'; did you mean '" +
                                        config_text::closest(name, names(kSchedules)) +
                                        "'? (accepted: " + config_text::join(names(kSchedules)) + ")");
        e->schedule = TuneSchedule(s);
        return TERSE_OK;
    }

    Status key_value(const Field &f, TuneEntry *e, std::vector<std::string> *seen) const {
        const size_t eq = f.text.find('=');
        const std::string_view key = f.text.substr(0, eq);
        if (index_of(kKeys, key) < 0)
            return error(f.col, "unknown key '" + quote(key) + "'; did you mean '" +
                                    config_text::closest(key, names(kKeys)) +
                                    "'? (accepted: " + config_text::join(names(kKeys)) + ", as key=value)");
        if (eq == std::string_view::npos) return error(f.col, "key '" + std::string(key) + "' has no '=value'");
        for (const std::string &k : *seen)
            if (k == key) return error(f.col, "key '" + std::string(key) + "' is given twice");
        seen->emplace_back(key);
        const std::string_view v = f.text.substr(eq + 1);
        const size_t vcol = f.col + eq + 1;
        if (key == "codec") {
            if (v == "configured") e->codec = TuneCodec::Configured;
            else if (v == "none") e->codec = TuneCodec::None;
            else
                return error(vcol, "codec '" + quote(v) +
                                       "' (accepted: configured, the communicator's codec; none, "
                                       "lossless; for the MPI library use @mpi)");
        } else if (key == "chunk") {
            if (!config_value::Size{4096, size_t(1) << 30}.parse(v, &e->chunk_bytes, nullptr))
                return error(vcol, "chunk '" + quote(v) + "' (accepted: a size 4K..1G)");
        } else if (key == "depth") {
            if (!config_value::Integer<int>{1, 64}.parse(v, &e->depth, nullptr))
                return error(vcol, "depth '" + quote(v) + "' (accepted: an integer 1..64)");
        } else {
            if (!config_value::Integer<int>{1, 1 << 24}.parse(v, &e->ranks, nullptr))
                return error(vcol, "ranks '" + quote(v) + "' (accepted: a communicator size >= 1)");
        }
        return TERSE_OK;
    }

    const std::string &origin_;
    int line_;
    size_t indent_;
};

bool overlap(const TuneEntry &a, const TuneEntry &b) {
    return a.coll == b.coll && a.ranks == b.ranks && a.lo < b.hi && b.lo < a.hi;
}

std::string size_or_inf(size_t v) { return v == SIZE_MAX ? "inf" : config_value::size_text(v); }

}  // namespace

const char *tune_coll_name(TuneColl c) { return kColls[int(c)]; }
const char *tune_schedule_name(TuneSchedule s) { return kSchedules[int(s)]; }

std::string TuneEntry::text() const {
    std::string s = std::string(tune_coll_name(coll)) + ":" + size_or_inf(lo) + "-" + size_or_inf(hi) + ":@" +
                    tune_schedule_name(schedule);
    if (codec == TuneCodec::None) s += ":codec=none";
    if (chunk_bytes) s += ":chunk=" + config_value::size_text(chunk_bytes);
    if (depth) s += ":depth=" + std::to_string(depth);
    if (ranks) s += ":ranks=" + std::to_string(ranks);
    return s;
}

Status TuneTable::parse(std::string_view text, const std::string &origin) {
    std::vector<TuneEntry> out;
    int line_no = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos,
                                            nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const size_t lead = line.find_first_not_of(" \t");
        if (lead == std::string_view::npos || line[lead] == '#') continue;
        const size_t end = line.find_last_not_of(" \t");
        LineParser p(origin, line_no, lead);
        TuneEntry e;
        Status s = p.parse(line.substr(lead, end + 1 - lead), &e);
        if (s != TERSE_OK) return s;
        for (const TuneEntry &o : out)
            if (overlap(o, e))
                return p.error(1, "range " + size_or_inf(e.lo) + "-" + size_or_inf(e.hi) + " of " +
                                      tune_coll_name(e.coll) + " overlaps line " + std::to_string(o.line) + " (" +
                                      o.text() + ")");
        out.push_back(e);
    }
    origin_ = origin;
    entries_ = std::move(out);
    return TERSE_OK;
}

Status TuneTable::load(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return set_error(TERSE_ERR_INVALID, "tuning file %s: cannot be read", path.c_str());
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse(ss.str(), path);
}

const TuneEntry *TuneTable::lookup(TuneColl coll, int nranks, size_t bytes) const {
    const TuneEntry *any = nullptr;
    for (const TuneEntry &e : entries_) {
        if (e.coll != coll || bytes < e.lo || bytes >= e.hi) continue;
        if (e.ranks == nranks) return &e;
        if (e.ranks == 0 && !any) any = &e;
    }
    return any;
}

std::string TuneTable::canonical() const {
    std::string s;
    for (const TuneEntry &e : entries_) s += e.text() + "\n";
    return s;
}

uint64_t TuneTable::hash() const { return fnv1a64(canonical()); }

}  // namespace terse
