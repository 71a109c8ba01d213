// terse-eval: evaluates codecs offline on captured allreduce inputs
// (TERSE_CAPTURE) or on any HDF5 dataset, and emulates the allreduce of
// several ranks' captures to report the error of the reduced result.
// See terse-eval(1).
#include "eval_codec.h"
#include "eval_common.h"
#include "eval_input.h"
#include "eval_run.h"

#include "config/config.h"
#include "codec/registry.h"

#include <terse/version.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

using namespace terse::eval;
using terse::dtype_name;

namespace {

struct Options {
    std::vector<std::string> files;
    std::vector<std::string> codecs;
    std::vector<std::string> datasets;
    std::string chunk_bytes;  // "": as captured, else the default
    int repeat = 3;
    bool per_rank_rows = false;
    bool allreduce = true;
    bool csv = false;
    bool list = false;
    std::string plugin_path;
};

struct UsageError : EvalError {
    using EvalError::EvalError;
};

void usage(FILE *out) {
    fprintf(out, "usage: terse-eval [options] FILE.h5 [FILE.h5 ...]\n"
                 "Evaluate terse codecs on allreduce inputs captured with TERSE_CAPTURE (one file per\n"
                 "rank) or on any HDF5 dataset.  See terse-eval(1).\n"
                 "\n"
                 "  --codec SPEC       codec to evaluate, e.g. quantize:bits=8 (repeatable; default:\n"
                 "                     the codec each captured call ran with)\n"
                 "  --dataset PATH     evaluate this dataset of every file instead of the captured\n"
                 "                     calls (repeatable); the files are the ranks, in order\n"
                 "  --chunk-bytes N    input bytes per chunk (default: as captured, else 1M)\n"
                 "  --ranks            also print one row per rank file\n"
                 "  --no-allreduce     skip the emulated allreduce across files\n"
                 "  --repeat N         timing repetitions, the best counts (default 3)\n"
                 "  --plugin-path DIRS search these directories for codec plugins first\n"
                 "  --csv              comma-separated output instead of a table\n"
                 "  --list             list the datasets found and exit\n"
                 "  -h, --help         this help\n"
                 "  --version          print the version\n");
}

Options parse_args(int argc, char **argv) {
    Options o;
    auto value = [&](int &i, const char *opt) -> std::string {
        std::string a = argv[i];
        size_t eq = a.find('=');
        if (eq != std::string::npos) return a.substr(eq + 1);
        if (i + 1 >= argc) throw UsageError(format("%s needs a value", opt));
        return argv[++i];
    };
    auto is = [](const std::string &a, const char *opt) {
        size_t n = strlen(opt);
        return a == opt || (a.compare(0, n, opt) == 0 && a.size() > n && a[n] == '=');
    };
    bool only_files = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (only_files || a.empty() || a[0] != '-') {
            o.files.push_back(a);
        } else if (a == "--") {
            only_files = true;
        } else if (a == "-h" || a == "--help") {
            usage(stdout);
            exit(0);
        } else if (a == "--version") {
            printf("terse-eval (terse) %s\n", TERSE_VERSION_STRING);
            exit(0);
        } else if (is(a, "--codec")) {
            o.codecs.push_back(value(i, "--codec"));
        } else if (is(a, "--dataset")) {
            o.datasets.push_back(value(i, "--dataset"));
        } else if (is(a, "--chunk-bytes")) {
            o.chunk_bytes = value(i, "--chunk-bytes");
            terse::CommConfig scratch;
            if (terse::config_apply(&scratch, "chunk_bytes", o.chunk_bytes, "--chunk-bytes") != TERSE_OK)
                throw UsageError(terse::last_error());
        } else if (is(a, "--repeat")) {
            std::string v = value(i, "--repeat");
            char *end = nullptr;
            long n = strtol(v.c_str(), &end, 10);
            if (v.empty() || *end || n < 1 || n > 1000)
                throw UsageError(format("--repeat: invalid value '%s' (accepted: 1..1000)", v.c_str()));
            o.repeat = int(n);
        } else if (is(a, "--plugin-path")) {
            o.plugin_path = value(i, "--plugin-path");
        } else if (a == "--ranks") {
            o.per_rank_rows = true;
        } else if (a == "--no-allreduce") {
            o.allreduce = false;
        } else if (a == "--csv") {
            o.csv = true;
        } else if (a == "--list") {
            o.list = true;
        } else {
            throw UsageError(format("unknown option '%s' (terse-eval --help lists the options)", a.c_str()));
        }
    }
    if (o.files.empty()) throw UsageError("no input files (usage: terse-eval [options] FILE.h5 ...)");
    return o;
}

// The configuration a captured call ran with (its canonical "key=value ..."
// string), or the defaults; --chunk-bytes overrides the chunk size.
CallSetup setup_of(const Dataset &d, const Options &o) {
    CallSetup s;
    const std::string where = d.file + ": " + d.path + " attribute config";
    size_t pos = 0;
    while (pos < d.config.size()) {
        size_t end = d.config.find(' ', pos);
        if (end == std::string::npos) end = d.config.size();
        std::string item = d.config.substr(pos, end - pos);
        pos = end + 1;
        size_t eq = item.find('=');
        if (item.empty() || eq == std::string::npos) continue;
        if (terse::config_apply(&s.cfg, item.substr(0, eq), item.substr(eq + 1), where) != TERSE_OK)
            throw EvalError(terse::last_error());
    }
    if (!o.chunk_bytes.empty() &&
        terse::config_apply(&s.cfg, "chunk_bytes", o.chunk_bytes, "--chunk-bytes") != TERSE_OK)
        throw EvalError(terse::last_error());
    s.ctx_id = d.ctx_id;
    s.seq = d.seq;
    return s;
}

// Results of one codec, over everything it was run on.
struct CodecResult {
    Measured per_rank;
    size_t datasets = 0;
    std::map<std::string, Measured> by_file;
    std::map<std::string, size_t> datasets_by_file;
    Measured reduced;
    size_t calls = 0;
    std::set<std::string> schedules;  // the engine's schedules the calls ran as
    int min_ranks = 0, max_ranks = 0;
    std::map<std::string, size_t> skipped;  // reason -> datasets
};

// One allreduce (or one named dataset): the contribution of each rank.
struct Group {
    std::string label;
    std::vector<Dataset *> ranks;  // by rank
    bool complete = true;          // every rank of the communicator is present
};

std::string members_key(const Dataset &d) {
    std::string k;
    for (int m : d.members) k += std::to_string(m) + ",";
    return k;
}

std::vector<Group> group_calls(std::vector<Dataset> &all, const Options &o) {
    std::vector<Group> groups;
    if (!o.datasets.empty()) {
        // Named datasets: file i is rank i.
        std::map<std::string, size_t> index;
        for (Dataset &d : all) {
            auto [it, fresh] = index.emplace(d.path, groups.size());
            if (fresh) groups.push_back(Group{d.path, {}, true});
            groups[it->second].ranks.push_back(&d);
        }
        return groups;
    }
    std::map<std::string, size_t> index;
    for (Dataset &d : all) {
        std::string key = d.path + "|" + members_key(d) + "|" + std::to_string(d.comm_size);
        auto [it, fresh] = index.emplace(key, groups.size());
        if (fresh) groups.push_back(Group{d.path, {}, true});
        groups[it->second].ranks.push_back(&d);
    }
    for (Group &g : groups) {
        const int size = g.ranks.front()->comm_size;
        std::vector<Dataset *> by_rank(size_t(size), nullptr);
        for (Dataset *d : g.ranks) {
            if (by_rank[size_t(d->rank)])
                throw EvalError(format("%s and %s both hold rank %d of %s: give each rank's file once",
                                       by_rank[size_t(d->rank)]->file.c_str(), d->file.c_str(), d->rank,
                                       d->path.c_str()));
            by_rank[size_t(d->rank)] = d;
        }
        g.complete = int(g.ranks.size()) == size;
        if (g.complete) g.ranks = by_rank;
    }
    return groups;
}

const char *op_label(terse_op_t op) { return op == TERSE_OP_SUM ? "sum" : op == TERSE_OP_MAX ? "max" : "min"; }

void check_group(const Group &g) {
    const Dataset &a = *g.ranks.front();
    for (const Dataset *d : g.ranks) {
        if (d->dtype != a.dtype || d->count != a.count || d->op != a.op)
            throw EvalError(format("%s: %s of %s holds %zu %s (op %s) but %s holds %zu %s (op %s): "
                                   "the ranks of one allreduce must match",
                                   g.label.c_str(), d->file.c_str(), d->path.c_str(), d->count,
                                   dtype_name(d->dtype), op_label(d->op), a.file.c_str(), a.count,
                                   dtype_name(a.dtype), op_label(a.op)));
    }
}

std::string num(double v, const char *fmt = "%.3g") {
    if (std::isnan(v)) return "-";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return format(fmt, v);
}

std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

void print_list(const std::vector<Dataset> &all) {
    printf("%-28s %-40s %-9s %12s %9s  %s\n", "file", "dataset", "datatype", "count", "rank", "codec");
    for (const Dataset &d : all) {
        std::string rank = d.captured ? format("%d/%d", d.rank, d.comm_size) : "-";
        printf("%-28s %-40s %-9s %12zu %9s  %s\n", d.file.c_str(), d.path.c_str(), dtype_name(d.dtype), d.count,
               rank.c_str(), d.codec.empty() ? "-" : d.codec.c_str());
    }
}

void print_report(const Options &o, const std::vector<std::string> &order,
                  const std::map<std::string, CodecResult> &results, size_t elements, size_t groups,
                  bool any_reduced) {
    if (o.csv) {
        printf("section,codec,scope,datasets,elements,ranks,ratio,max_abs_err,max_rel_err,nrmse,"
               "psnr_db,encode_gbps,decode_gbps,raw_chunks,schedule\n");
        auto row = [&](const char *section, const std::string &codec, const std::string &scope, size_t n,
                       const Measured &m, const std::string &ranks, bool speed, const std::string &sched) {
            printf("%s,%s,%s,%zu,%llu,%s,%s,%s,%s,%s,%s,%s,%s,%llu,%s\n", section, csv_field(codec).c_str(),
                   csv_field(scope).c_str(), n, (unsigned long long)(m.size.raw_bytes ? m.err.n : 0),
                   ranks.c_str(), num(m.size.ratio(), "%.6g").c_str(), num(m.err.max_abs_err(), "%.9g").c_str(),
                   num(m.err.max_rel_err(), "%.9g").c_str(), num(m.err.nrmse(), "%.9g").c_str(),
                   num(m.err.psnr_db(), "%.6g").c_str(), speed ? num(m.size.encode_gbps(), "%.6g").c_str() : "",
                   speed ? num(m.size.decode_gbps(), "%.6g").c_str() : "", (unsigned long long)m.size.raw_chunks,
                   csv_field(sched).c_str());
        };
        for (const std::string &c : order) {
            const CodecResult &r = results.at(c);
            if (!r.datasets) continue;
            row("per_rank", c, "all", r.datasets, r.per_rank, "", true, "");
            if (o.per_rank_rows)
                for (const auto &[file, m] : r.by_file)
                    row("per_rank", c, file, r.datasets_by_file.at(file), m, "", true, "");
        }
        for (const std::string &c : order) {
            const CodecResult &r = results.at(c);
            if (!r.calls) continue;
            std::string ranks = r.min_ranks == r.max_ranks ? std::to_string(r.min_ranks)
                                                           : format("%d-%d", r.min_ranks, r.max_ranks);
            std::string sched;
            for (const std::string &x : r.schedules) sched += (sched.empty() ? "" : " ") + x;
            row("allreduce", c, "all", r.calls, r.reduced, ranks, false, sched);
        }
        return;
    }

    printf("terse-eval: %zu file(s), %zu call(s)/dataset(s), %zu elements per rank in total\n\n", o.files.size(),
           groups, elements);
    printf("Each rank's data through encode and decode (chunk by chunk):\n");
    printf("%-28s %8s %9s %11s %11s %11s %8s %9s %9s\n", "codec", "datasets", "ratio", "max_abs_err",
           "max_rel_err", "nrmse", "psnr_dB", "enc_GB/s", "dec_GB/s");
    auto line = [&](const std::string &name, size_t n, const Measured &m) {
        printf("%-28s %8zu %9s %11s %11s %11s %8s %9s %9s\n", name.c_str(), n,
               num(m.size.ratio(), "%.2f").c_str(), num(m.err.max_abs_err()).c_str(),
               num(m.err.max_rel_err()).c_str(), num(m.err.nrmse()).c_str(), num(m.err.psnr_db(), "%.1f").c_str(),
               num(m.size.encode_gbps(), "%.2f").c_str(), num(m.size.decode_gbps(), "%.2f").c_str());
    };
    for (const std::string &c : order) {
        const CodecResult &r = results.at(c);
        if (!r.datasets) continue;
        line(c, r.datasets, r.per_rank);
        if (o.per_rank_rows)
            for (const auto &[file, m] : r.by_file) line("  " + file, r.datasets_by_file.at(file), m);
    }
    if (any_reduced) {
        printf("\nEmulated allreduce across the rank files: the reduced result against the exact one\n");
        printf("%-28s %8s %6s %9s %11s %11s %11s %8s  %s\n", "codec", "calls", "ranks", "ratio", "max_abs_err",
               "max_rel_err", "nrmse", "psnr_dB", "schedule");
        for (const std::string &c : order) {
            const CodecResult &r = results.at(c);
            if (!r.calls) continue;
            std::string ranks = r.min_ranks == r.max_ranks ? std::to_string(r.min_ranks)
                                                           : format("%d-%d", r.min_ranks, r.max_ranks);
            const Measured &m = r.reduced;
            std::string sched;
            for (const std::string &x : r.schedules) sched += (sched.empty() ? "" : ",") + x;
            printf("%-28s %8zu %6s %9s %11s %11s %11s %8s  %s\n", c.c_str(), r.calls, ranks.c_str(),
                   num(m.size.ratio(), "%.2f").c_str(), num(m.err.max_abs_err()).c_str(),
                   num(m.err.max_rel_err()).c_str(), num(m.err.nrmse()).c_str(),
                   num(m.err.psnr_db(), "%.1f").c_str(), sched.c_str());
        }
    }
    for (const std::string &c : order)
        for (const auto &[why, n] : results.at(c).skipped)
            printf("note: %s: %zu dataset(s) skipped: %s\n", c.c_str(), n, why.c_str());
}

int run(const Options &o) {
    std::string path = o.plugin_path;
    if (const char *env = getenv("TERSE_PLUGIN_PATH"); env && *env) path = path.empty() ? env : path + ":" + env;
    terse::Registry::instance().set_search_path(path);

    // Find every dataset first, so that a bad file is reported before any work.
    std::vector<Dataset> all;
    for (const std::string &f : o.files) {
        if (o.datasets.empty()) {
            std::vector<Dataset> v = list_capture(f);
            if (v.empty() && !o.list)
                throw EvalError(format("%s: the capture holds no calls (was any allreduce intercepted "
                                       "and sampled?)",
                                       f.c_str()));
            for (Dataset &d : v) all.push_back(std::move(d));
        } else {
            for (const std::string &p : o.datasets) all.push_back(open_named(f, p));
        }
    }
    if (o.list) {
        print_list(all);
        return 0;
    }

    std::vector<std::string> order;
    std::map<std::string, std::unique_ptr<Codec>> codecs;
    std::map<std::string, CodecResult> results;
    auto codec_for = [&](const std::string &spec) -> Codec & {
        auto it = codecs.find(spec);
        if (it != codecs.end()) return *it->second;
        auto c = std::make_unique<Codec>(spec);
        order.push_back(spec);
        results[spec];
        return *codecs.emplace(spec, std::move(c)).first->second;
    };
    for (const std::string &c : o.codecs) codec_for(c);  // parameter errors before any work

    std::vector<Group> groups = group_calls(all, o);
    size_t elements = 0;
    bool any_reduced = false;
    for (Group &g : groups) {
        check_group(g);
        for (Dataset *d : g.ranks) load(*d);
        const Dataset &a = *g.ranks.front();
        elements += a.count;
        std::vector<std::string> specs = o.codecs;
        if (specs.empty()) {
            if (a.codec.empty())
                throw EvalError(format("%s: %s records no codec: name one with --codec SPEC", a.file.c_str(),
                                       a.path.c_str()));
            specs.push_back(a.codec);
        }
        const int nranks = a.captured ? a.comm_size : int(g.ranks.size());
        for (const std::string &spec : specs) {
            Codec &codec = codec_for(spec);
            CodecResult &r = results[spec];
            if (!codec.supports(a.dtype)) {
                r.skipped[format("%s data (the codec does not take this datatype)", dtype_name(a.dtype))] +=
                    g.ranks.size();
                continue;
            }
            if (a.op != TERSE_OP_SUM && !codec.lossless()) {
                r.skipped["max/min reductions (only lossless codecs run them)"] += g.ranks.size();
                continue;
            }
            for (const Dataset *d : g.ranks) {
                Measured m = round_trip(codec, *d, nranks, setup_of(*d, o), o.repeat);
                r.per_rank.err.merge(m.err);
                r.per_rank.size.merge(m.size);
                r.by_file[d->file].err.merge(m.err);
                r.by_file[d->file].size.merge(m.size);
                r.datasets_by_file[d->file]++;
                r.datasets++;
            }
            if (o.allreduce && g.complete && g.ranks.size() > 1) {
                std::vector<const Dataset *> ranks(g.ranks.begin(), g.ranks.end());
                std::string schedule;
                Measured m = emulate_allreduce(codec, ranks, setup_of(a, o), &schedule);
                r.schedules.insert(schedule);
                r.reduced.err.merge(m.err);
                r.reduced.size.merge(m.size);
                int p = int(ranks.size());
                r.min_ranks = r.calls ? std::min(r.min_ranks, p) : p;
                r.max_ranks = r.calls ? std::max(r.max_ranks, p) : p;
                r.calls++;
                any_reduced = true;
            } else if (o.allreduce && !g.complete) {
                r.skipped[format("allreduce not emulated: only some ranks' files were given")] += 1;
            }
        }
        for (Dataset *d : g.ranks) std::vector<unsigned char>().swap(d->data);
    }

    for (const std::string &c : order)
        if (results[c].datasets == 0) {
            std::string why;
            for (const auto &[w, n] : results[c].skipped) why += (why.empty() ? "" : "; ") + w;
            throw EvalError(
                format("codec %s could not be evaluated on any dataset (%s)", c.c_str(), why.c_str()));
        }
    print_report(o, order, results, elements, groups.size(), any_reduced);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    try {
        Options o = parse_args(argc, argv);
        return run(o);
    } catch (const UsageError &e) {
        fprintf(stderr, "terse-eval: %s\n", e.what());
        return 2;
    } catch (const EvalError &e) {
        fprintf(stderr, "terse-eval: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc &) {
        fprintf(stderr, "terse-eval: out of memory\n");
        return 1;
    }
}
