// terse-config-check: validate terse's configuration before a job runs.
//
// Reads the TERSE_* environment and the config file (TERSE_CONFIG or
// --config), checks every codec name and its parameters against the codec
// plugins, and prints the effective configuration of each communicator name
// asked for.  It calls the same functions as the library, so it accepts and
// rejects exactly what a run would, but without MPI, UCX or a job launcher.
#include "config/config.h"
#include "config/config_keys.h"
#include "config/tune_file.h"
#include "codec/registry.h"
#include "util/status.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace terse;

namespace {

constexpr const char *kProg = "terse-config-check";

void usage(FILE *out) {
    fprintf(out,
            "usage: %s [--config FILE] [--tune FILE] [--comm NAME]... [--keys] [--help]\n"
            "\n"
            "Checks terse's configuration as a run would see it: the TERSE_* environment,\n"
            "the config file (--config FILE, else TERSE_CONFIG), and every codec with its\n"
            "parameters against the plugins in TERSE_PLUGIN_PATH and the install directory.\n"
            "Prints the effective configuration of each communicator NAME (default:\n"
            "MPI_COMM_WORLD and every config file section that names one communicator).\n"
            "Tuning files (tune_file, TERSE_TUNE_FILE, or --tune FILE) are checked too;\n"
            "--tune prints the file's entries in canonical form.\n"
            "\n"
            "  --config FILE   config file to check instead of TERSE_CONFIG\n"
            "  --tune FILE     tuning file to check (terse-tune(1))\n"
            "  --comm NAME     communicator name to resolve (repeatable)\n"
            "  --keys          list every key: default, sources, accepted values, meaning\n"
            "  --help          this text\n"
            "\n"
            "Exit status: 0 valid, 1 invalid (the message says what and where), 2 usage error.\n"
            "\n"
            "Per-communicator keys (config file keys; MPI_Info hints add the prefix terse_):\n"
            "  %s\n"
            "Environment variables:\n"
            "  ",
            kProg,
            [] {
                std::string s;
                for (const auto &k : config_keys()) s += (s.empty() ? "" : ", ") + k;
                return s;
            }()
                .c_str());
    const auto &vars = config_environment_variables();
    for (size_t i = 0; i < vars.size(); ++i)
        fprintf(out, "%s%s", vars[i].c_str(), i + 1 < vars.size() ? (i % 4 == 3 ? ",\n  " : ", ") : "\n");
    fprintf(out, "  TERSE_UCX_* are passed to UCX.\n");
}

// The key table, as the library reads it.
void list_keys(FILE *out) {
    for (const ConfigKey &k : config_key_table()) {
        fprintf(out, "%s = %s\n    %s:", k.name.c_str(), k.default_text.c_str(),
                k.scope == KeyScope::Comm ? "per communicator" : "process-wide");
        const char *sep = " ";
        for (ConfigSource s : {kFromEnv, kFromFile, kFromInfo, kFromApi})
            if (k.accepts(s)) {
                fprintf(out, "%s%s %s", sep, config_source_name(s), config_key_spelling(k, s).c_str());
                sep = ", ";
            }
        fprintf(out, "\n    accepted: %s\n    %s\n", k.accepted.c_str(), k.help.c_str());
    }
}

int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "%s: ", kProg);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s [--config FILE] [--comm NAME]... (see --help)\n", kProg);
    return 2;
}

bool is_literal_name(const std::string &pattern) { return pattern.find_first_of("*?[") == std::string::npos; }

// Checks a codec the way the library does when a communicator with this
// configuration becomes ready (only enabled configurations load a codec).
class CodecChecker {
public:
    // Returns false (and prints once per distinct codec) when it is refused.
    bool check(const CommConfig &cfg, const std::string &where) {
        if (!cfg.enable) return true;
        const std::string text = cfg.codec.text();
        if (auto it = refused_.find(text); it != refused_.end()) return false;
        if (accepted_.count(text)) return true;
        std::vector<std::unique_ptr<CodecParams>> params;
        if (Registry::instance().parse_codecs(cfg.codec, &params) != TERSE_OK) {
            fprintf(stderr, "%s: %s (codec=%s): %s\n", kProg, where.c_str(), text.c_str(), last_error());
            refused_.insert(text);
            return false;
        }
        accepted_.insert(text);
        return true;
    }

private:
    std::set<std::string> accepted_, refused_;
};

// Checks a tuning file as a communicator's context creation does (once
// per distinct file).
bool check_tune_file(const std::string &path, bool print) {
    static std::set<std::string> checked;
    if (path.empty() || (!print && checked.count(path))) return true;
    checked.insert(path);
    TuneTable t;
    if (t.load(path) != TERSE_OK) {
        fprintf(stderr, "%s: %s\n", kProg, last_error());
        return false;
    }
    if (print) fputs(t.canonical().c_str(), stdout);
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    std::string config_path, tune_path;
    bool have_config_arg = false;
    std::vector<std::string> comms;
    for (int i = 1; i < argc; ++i) {
        std::string opt = argv[i], value;
        if (opt == "--help" || opt == "-h") {
            usage(stdout);
            return 0;
        }
        if (opt == "--keys") {
            list_keys(stdout);
            return 0;
        }
        const size_t eq = opt.find('=');
        if (opt.rfind("--", 0) == 0 && eq != std::string::npos) {  // --opt=value
            value = opt.substr(eq + 1);
            opt.resize(eq);
        } else if (opt == "--config" || opt == "--comm" || opt == "--tune") {
            if (i + 1 >= argc) return usage_error("option %s needs an argument", opt.c_str());
            value = argv[++i];
        }
        if (opt != "--config" && opt != "--comm" && opt != "--tune")
            return usage_error("unknown argument '%s'", argv[i]);
        if (value.empty()) return usage_error("option %s needs a non-empty argument", opt.c_str());
        if (opt == "--config") {
            config_path = value;
            have_config_arg = true;
        } else if (opt == "--tune") {
            tune_path = value;
        } else {
            comms.push_back(value);
        }
    }

    GlobalConfig global;
    CommConfig defaults;
    if (config_read_environment(&global, &defaults) != TERSE_OK) {
        fprintf(stderr, "%s: %s\n", kProg, last_error());
        return 1;
    }
    if (!have_config_arg) config_path = global.config_file;

    ConfigFile file;
    const bool have_file = !config_path.empty();
    if (have_file && file.load(config_path) != TERSE_OK) {
        fprintf(stderr, "%s: %s\n", kProg, last_error());
        return 1;
    }

    Registry::instance().set_search_path(global.plugin_path);
    CodecChecker codecs;
    bool ok = true;
    if (!tune_path.empty()) {
        if (!check_tune_file(tune_path, true)) return 1;
        if (!have_config_arg) return 0;  // the tuning file alone was asked for
    }
    ok &= check_tune_file(defaults.tune_file, false);
    // The library checks the environment's codec at MPI_Init.
    ok &= codecs.check(defaults, "environment TERSE_CODEC");

    // A section whose pattern matches no communicator asked for here may
    // match one in the real run: check what each section sets on its own.
    if (have_file) {
        const auto patterns = file.section_patterns();
        for (size_t i = 0; i < file.section_count(); ++i) {
            CommConfig cfg = defaults;
            if (file.apply_section(i, &cfg) != TERSE_OK) {
                fprintf(stderr, "%s: %s\n", kProg, last_error());
                return 1;
            }
            ok &= codecs.check(cfg, "config file " + config_path + " section [" + patterns[i] + "]");
            ok &= check_tune_file(cfg.tune_file, false);
        }
    }

    if (comms.empty()) {
        comms.push_back("MPI_COMM_WORLD");
        if (have_file)
            for (const auto &p : file.section_patterns())
                if (is_literal_name(p) && std::find(comms.begin(), comms.end(), p) == comms.end())
                    comms.push_back(p);
    }
    for (const auto &name : comms) {
        CommConfig cfg = defaults;
        if (have_file && file.apply(name, &cfg) != TERSE_OK) {
            fprintf(stderr, "%s: %s\n", kProg, last_error());
            return 1;
        }
        if (!codecs.check(cfg, "communicator " + name)) {
            ok = false;
            continue;
        }
        printf("%s: %s\n", name.c_str(), cfg.canonical().c_str());
    }
    return ok ? 0 : 1;
}
