#include "codec/registry.h"

#include "codec/codec_status.h"

#include "util/dtype.h"
#include "codec/frame.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <exception>
#include <new>
#include <set>

#ifndef TERSE_PLUGIN_DIR
#error "TERSE_PLUGIN_DIR (the plugin install directory) must be defined by lib/Makefile.am"
#endif

namespace terse {

namespace {

constexpr size_t kMaxNameLen = 63;
constexpr size_t kErrLen = 512;

// Owns a dlopen handle until the plugin is accepted; accepted plugins are
// released into Registry::handles_ and stay loaded until exit (instances may
// outlive any orderly teardown, e.g. in MPI attribute callbacks at exit).
struct DlClose {
    void operator()(void *h) const {
        if (h) dlclose(h);
    }
};
using DlHandle = std::unique_ptr<void, DlClose>;

bool valid_name(const char *s) {
    if (s == nullptr || *s == '\0') return false;
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
        if (n >= kMaxNameLen) return false;
    }
    return true;
}

// "terse_<name>.so" -> name; "" when the file is not named like a plugin.
std::string name_from_filename(const std::string &file) {
    static constexpr std::string_view kPrefix = "terse_", kSuffix = ".so";
    std::string_view f = file;
    if (auto slash = f.rfind('/'); slash != std::string_view::npos) f.remove_prefix(slash + 1);
    if (f.size() <= kPrefix.size() + kSuffix.size() || !f.starts_with(kPrefix) || !f.ends_with(kSuffix))
        return {};
    std::string name(f.substr(kPrefix.size(), f.size() - kPrefix.size() - kSuffix.size()));
    return valid_name(name.c_str()) ? name : std::string{};
}

bool is_regular_file(const std::string &path) {
    struct stat sb;
    return stat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode);
}

std::vector<std::string> list_plugins(const std::vector<std::string> &dirs) {
    std::set<std::string> names;
    for (const auto &d : dirs) {
        DIR *dir = opendir(d.c_str());
        if (!dir) continue;
        while (const dirent *e = readdir(dir)) {
            std::string name = name_from_filename(e->d_name);
            if (!name.empty() && is_regular_file(d + "/" + e->d_name)) names.insert(name);
        }
        closedir(dir);
    }
    return {names.begin(), names.end()};
}

std::string join(const std::vector<std::string> &v, const char *sep) {
    std::string out;
    for (const auto &s : v) {
        if (!out.empty()) out += sep;
        out += s;
    }
    return out;
}

std::string dtype_list(uint32_t mask) {
    std::vector<std::string> v;
    for (unsigned dt = 1; dt < TERSE_DTYPE_MAX_; dt++)
        if (mask & TERSE_DTYPE_BIT(dt)) v.emplace_back(dtype_name(dt));
    return join(v, ", ");
}

constexpr uint32_t kAllDtypes = ((1u << TERSE_DTYPE_MAX_) - 1u) & ~1u;  // bits 1..MAX_-1
constexpr uint32_t kAllMemKinds = TERSE_MEM_HOST | TERSE_MEM_CUDA;

// A plugin's message, NUL-terminated whatever the plugin did, or a
// description of its status code when it left the buffer empty.
std::string plugin_message(char *err, int rc) {
    err[kErrLen - 1] = '\0';
    if (err[0]) return err;
    return std::string("failed with status ") + std::to_string(rc) + " (" + codec_status_text(rc) +
           ") and no message";
}

}  // namespace

// ------------------------------------------------------------ owners

CodecParams::~CodecParams() {
    if (params_) plugin_->desc->free_params(params_);
}

terse_bound_kind_t CodecParams::stated_bound(int nranks, double *value) const {
    *value = 0;
    const terse_codec_descriptor_t *d = plugin_->desc;
    if (d->flags & TERSE_CODEC_FLAG_LOSSLESS) return TERSE_BOUND_ABS;
    int kind = TERSE_BOUND_NONE;
    if (!d->error_contract || d->error_contract(params_, nranks, &kind, value) != TERSE_CODEC_OK)
        return TERSE_BOUND_NONE;
    if ((kind != TERSE_BOUND_ABS && kind != TERSE_BOUND_REL) || !(*value >= 0) || !std::isfinite(*value))
        return TERSE_BOUND_NONE;
    return static_cast<terse_bound_kind_t>(kind);
}

std::string CodecParams::canonical() const {
    std::string out = plugin_->desc->name;
    try {
        std::vector<char> buf(256);
        for (;;) {
            buf.back() = '\0';
            size_t n = plugin_->desc->params_string(params_, buf.data(), buf.size());
            if (n + 1 < buf.size() || buf.size() >= (1u << 20)) {
                n = std::min(n, strnlen(buf.data(), buf.size() - 1));
                if (n) out.append(":").append(buf.data(), n);
                return out;
            }
            buf.assign(buf.size() * 4, '\0');  // possibly truncated: retry larger
        }
    } catch (...) {
        return out + ":?";  // cannot agree on what we cannot print; mismatch will show
    }
}

CodecInstance::~CodecInstance() {
    if (inst_) plugin_->desc->destroy(inst_);
}

// ------------------------------------------------------------ registry

Registry &Registry::instance() {
    // Never destroyed: codec instances held by communicator attributes may
    // be released after static destructors have run.
    static Registry *r = new Registry();
    return *r;
}

void Registry::set_search_path(const std::string &colon_separated) {
    std::lock_guard<std::mutex> lock(mu_);
    search_path_ = colon_separated;
}

// Caller holds mu_.
std::vector<std::string> Registry::dirs() const {
    std::vector<std::string> out;
    auto add = [&out](std::string d) {
        while (d.size() > 1 && d.back() == '/') d.pop_back();
        if (!d.empty() && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    };
    size_t start = 0;
    while (start <= search_path_.size()) {
        size_t colon = search_path_.find(':', start);
        if (colon == std::string::npos) colon = search_path_.size();
        add(search_path_.substr(start, colon - start));
        start = colon + 1;
    }
    add(TERSE_PLUGIN_DIR);
    return out;
}

std::vector<std::string> Registry::available() const {
    try {
        std::vector<std::string> d;
        {
            std::lock_guard<std::mutex> lock(mu_);
            d = dirs();
        }
        return list_plugins(d);
    } catch (...) {
        return {};
    }
}

Status Registry::find(const std::string &name, const CodecPlugin **out) {
    try {
        std::string candidate;
        std::vector<std::string> searched;
        {
            std::lock_guard<std::mutex> lock(mu_);
            for (const auto &p : plugins_)
                if (name == p->desc->name) {
                    *out = p.get();
                    return TERSE_OK;
                }
            searched = dirs();
            if (valid_name(name.c_str()))
                for (const auto &d : searched) {
                    std::string path = d + "/terse_" + name + ".so";
                    if (is_regular_file(path)) {
                        candidate = std::move(path);
                        break;
                    }
                }
        }
        // A broken plugin earlier in the path is an error, never skipped in
        // favour of a later one: that would silently change which code runs.
        if (!candidate.empty()) return load_file(candidate, out);

        std::vector<std::string> avail = list_plugins(searched);
        return set_error(TERSE_ERR_PLUGIN, "unknown codec '%s' (%s%s; searched: %s)", name.c_str(),
                         avail.empty() ? "no codec plugins found" : "available: ", join(avail, ", ").c_str(),
                         join(searched, ", ").c_str());
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "out of memory looking up codec '%s'", name.c_str());
    } catch (const std::exception &e) {
        return set_error(TERSE_ERR_PLUGIN, "looking up codec '%s': %s", name.c_str(), e.what());
    }
}

Status Registry::load_file(const std::string &path, const CodecPlugin **out) {
    try {
        std::lock_guard<std::mutex> lock(mu_);
        const std::string file_name = name_from_filename(path);
        if (file_name.empty())
            return set_error(TERSE_ERR_PLUGIN,
                             "plugin %s: file name must be terse_<name>.so with <name> of "
                             "[a-z0-9_]+ (at most %zu characters)",
                             path.c_str(), kMaxNameLen);
        char real[PATH_MAX];
        if (!realpath(path.c_str(), real) || !is_regular_file(real))
            return set_error(TERSE_ERR_PLUGIN, "plugin %s: no such file", path.c_str());

        for (const auto &p : plugins_) {
            if (p->path == real) {
                *out = p.get();
                return TERSE_OK;
            }
            if (file_name == p->desc->name)
                return set_error(TERSE_ERR_PLUGIN,
                                 "plugin %s: codec '%s' is already loaded from %s; remove one of "
                                 "them from the search path",
                                 path.c_str(), file_name.c_str(), p->path.c_str());
        }

        dlerror();
        DlHandle handle(dlopen(real, RTLD_NOW | RTLD_LOCAL));
        if (!handle) {
            const char *why = dlerror();
            return set_error(TERSE_ERR_PLUGIN, "plugin %s: cannot load: %s", path.c_str(),
                             why ? why : "unknown dlopen error");
        }
        dlerror();
        void *sym = dlsym(handle.get(), TERSE_CODEC_ENTRY_SYMBOL);
        if (!sym)
            return set_error(TERSE_ERR_PLUGIN,
                             "plugin %s: no entry symbol '%s'; expected a terse codec plugin "
                             "built against codec.h ABI version %u",
                             path.c_str(), TERSE_CODEC_ENTRY_SYMBOL, TERSE_CODEC_ABI_VERSION);
        auto entry = reinterpret_cast<terse_codec_entry_fn>(sym);
        const terse_codec_descriptor_t *desc = nullptr;
        try {
            desc = entry();
        } catch (...) {
            return set_error(TERSE_ERR_PLUGIN, "plugin %s: %s() threw a C++ exception", path.c_str(),
                             TERSE_CODEC_ENTRY_SYMBOL);
        }
        if (Status st = validate(desc, path); st != TERSE_OK) return st;

        const uint32_t id = crc32c(0, desc->name, std::strlen(desc->name));
        for (const auto &p : plugins_)
            if (p->id == id)
                return set_error(TERSE_ERR_PLUGIN,
                                 "plugin %s: codec id 0x%08x of '%s' collides with codec '%s' "
                                 "(%s); rename one of them",
                                 path.c_str(), id, desc->name, p->desc->name, p->path.c_str());

        auto plugin = std::make_unique<CodecPlugin>();
        plugin->desc = desc;
        plugin->path = real;
        plugin->id = id;
        plugins_.reserve(plugins_.size() + 1);
        handles_.reserve(handles_.size() + 1);
        // Nothing below throws: the vectors have room.
        plugins_.push_back(std::move(plugin));
        handles_.push_back(handle.release());
        *out = plugins_.back().get();
        return TERSE_OK;
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "plugin %s: out of memory while loading", path.c_str());
    } catch (const std::exception &e) {
        return set_error(TERSE_ERR_PLUGIN, "plugin %s: %s", path.c_str(), e.what());
    }
}

Status Registry::validate(const terse_codec_descriptor_t *d, const std::string &path) {
    const char *p = path.c_str();
    if (d == nullptr)
        return set_error(TERSE_ERR_PLUGIN, "plugin %s: %s() returned NULL, expected a codec descriptor", p,
                         TERSE_CODEC_ENTRY_SYMBOL);
    // abi_version and struct_size are the first two fields in every ABI
    // version, so they can be read before knowing the layout is ours.
    if (d->abi_version != TERSE_CODEC_ABI_VERSION)
        return set_error(TERSE_ERR_PLUGIN, "plugin %s: ABI version %u, this terse expects %u", p, d->abi_version,
                         TERSE_CODEC_ABI_VERSION);
    if (d->struct_size != sizeof(terse_codec_descriptor_t))
        return set_error(TERSE_ERR_PLUGIN,
                         "plugin %s: descriptor struct_size %u, this terse expects %zu (built "
                         "against a different codec.h?)",
                         p, d->struct_size, sizeof(terse_codec_descriptor_t));
    if (!valid_name(d->name))
        return set_error(TERSE_ERR_PLUGIN,
                         "plugin %s: codec name '%s' is not valid, expected [a-z0-9_]+ of at most "
                         "%zu characters",
                         p, d->name ? d->name : "(null)", kMaxNameLen);
    const std::string file_name = name_from_filename(path);
    if (file_name != d->name)
        return set_error(TERSE_ERR_PLUGIN,
                         "plugin %s: codec name '%s' does not match its file name, expected '%s'", p, d->name,
                         file_name.c_str());

    struct Required {
        const char *name;
        bool present;
    };
    const Required required[] = {
        {"parse", d->parse != nullptr},
        {"free_params", d->free_params != nullptr},
        {"params_string", d->params_string != nullptr},
        {"create", d->create != nullptr},
        {"destroy", d->destroy != nullptr},
        {"max_encoded_size", d->max_encoded_size != nullptr},
        {"encode", d->encode != nullptr},
        {"decode", d->decode != nullptr},
    };
    for (const auto &r : required)
        if (!r.present)
            return set_error(TERSE_ERR_PLUGIN, "plugin %s: required callback '%s' is NULL", p, r.name);

    switch (d->mode) {
    case TERSE_REDUCE_SUMMABLE:
        if (!d->stats_count || !d->stats || !d->combine)
            return set_error(TERSE_ERR_PLUGIN,
                             "plugin %s: mode summable requires callbacks stats_count, stats and "
                             "combine, but %s is NULL",
                             p,
                             !d->stats_count ? "stats_count"
                             : !d->stats     ? "stats"
                                             : "combine");
        break;
    case TERSE_REDUCE_RECOMPRESS:
    case TERSE_REDUCE_GATHER:
        if (d->combine)
            return set_error(TERSE_ERR_PLUGIN,
                             "plugin %s: combine is set but mode is %s; only summable codecs may "
                             "combine codes",
                             p, d->mode == TERSE_REDUCE_GATHER ? "gather" : "recompress");
        break;
    default:
        return set_error(TERSE_ERR_PLUGIN,
                         "plugin %s: reduction mode %d is unknown, expected recompress (0), "
                         "summable (1) or gather (2)",
                         p, static_cast<int>(d->mode));
    }

    if ((d->flags & TERSE_CODEC_FLAG_IDENTITY) &&
        (!(d->flags & TERSE_CODEC_FLAG_LOSSLESS) || d->mode != TERSE_REDUCE_RECOMPRESS))
        return set_error(TERSE_ERR_PLUGIN,
                         "plugin %s: flag TERSE_CODEC_FLAG_IDENTITY requires TERSE_CODEC_FLAG_LOSSLESS "
                         "and mode recompress (the payload must be the elements themselves)",
                         p);

    if (d->dtypes == 0 || (d->dtypes & ~kAllDtypes))
        return set_error(TERSE_ERR_PLUGIN,
                         "plugin %s: dtype mask 0x%x is %s, expected a non-empty set of bits "
                         "TERSE_DTYPE_BIT(1..%d) (mask 0x%x)",
                         p, d->dtypes, d->dtypes == 0 ? "empty" : "out of range", int{TERSE_DTYPE_MAX_} - 1,
                         kAllDtypes);
    if (!(d->mem_kinds & TERSE_MEM_HOST) || (d->mem_kinds & ~kAllMemKinds))
        return set_error(TERSE_ERR_PLUGIN,
                         "plugin %s: memory kinds 0x%x, expected host (0x%x) plus optionally "
                         "cuda (0x%x)",
                         p, d->mem_kinds, unsigned{TERSE_MEM_HOST}, unsigned{TERSE_MEM_CUDA});
    if (d->device_workspace_size && !(d->mem_kinds & TERSE_MEM_CUDA))
        return set_error(TERSE_ERR_PLUGIN,
                         "plugin %s: device_workspace_size is set but memory kinds 0x%x do not include cuda "
                         "(0x%x); only device codecs have a device workspace",
                         p, d->mem_kinds, unsigned{TERSE_MEM_CUDA});
    for (size_t i = 0; i < sizeof d->reserved / sizeof d->reserved[0]; i++)
        if (d->reserved[i])
            return set_error(TERSE_ERR_PLUGIN, "plugin %s: reserved[%zu] is not NULL, expected all NULL", p, i);
    return TERSE_OK;
}

Status Registry::parse_params(const CodecSpec &spec, std::unique_ptr<CodecParams> *out) {
    const CodecPlugin *plugin = nullptr;
    if (Status st = find(spec.name, &plugin); st != TERSE_OK) return st;
    const char *name = plugin->desc->name;
    void *params = nullptr;
    try {
        std::vector<terse_codec_kv_t> kv;
        kv.reserve(spec.params.size());
        for (const auto &[k, v] : spec.params)
            if (k != "feedback" && k != "guard")  // the engine's keys, validated by config
                kv.push_back({k.c_str(), v.c_str()});

        char err[kErrLen] = {0};
        int rc;
        try {
            rc = plugin->desc->parse(kv.data(), kv.size(), &params, err, sizeof err);
        } catch (...) {
            return set_error(TERSE_ERR_PLUGIN, "codec '%s': parse threw a C++ exception", name);
        }
        if (rc != TERSE_CODEC_OK)
            return set_error(codec_status(rc), "codec '%s': %s", name, plugin_message(err, rc).c_str());
        *out = std::make_unique<CodecParams>(plugin, params);
        return TERSE_OK;
    } catch (const std::bad_alloc &) {
        if (params) plugin->desc->free_params(params);
        return set_error(TERSE_ERR_NO_MEMORY, "codec '%s': out of memory parsing parameters", name);
    }
}

Status Registry::parse_codecs(const CodecSpec &spec, std::vector<std::unique_ptr<CodecParams>> *out) {
    out->clear();
    if (!codec_is_auto(spec)) {
        std::unique_ptr<CodecParams> p;
        if (Status s = parse_params(spec, &p); s != TERSE_OK) return s;
        out->push_back(std::move(p));
        return TERSE_OK;
    }
    const AutoCodec au = auto_codec_of(spec);
    for (const CodecSpec &c : au.candidates) {
        std::unique_ptr<CodecParams> p;
        if (Status s = parse_params(c, &p); s != TERSE_OK)
            return set_error(s, "codec=auto: candidate '%s': %s", c.text().c_str(), last_error());
        double v;
        if (au.budget != AutoCodec::Budget::None && p->stated_bound(1, &v) == TERSE_BOUND_NONE)
            return set_error(TERSE_ERR_INVALID,
                             "codec=auto: candidate '%s' states no error bound, so it cannot be held to "
                             "budget %s:%g (accepted with a budget: lossless codecs and codecs that state "
                             "a bound, such as quantize and errbound)",
                             c.text().c_str(), au.budget == AutoCodec::Budget::Abs ? "abs" : "rel",
                             au.budget_value);
        out->push_back(std::move(p));
    }
    return TERSE_OK;
}

Status Registry::create(const CodecParams &params, const terse_codec_setup_t &setup,
                        std::unique_ptr<CodecInstance> *out) {
    const CodecPlugin *plugin = params.plugin();
    const terse_codec_descriptor_t *d = plugin->desc;
    const unsigned dt = static_cast<unsigned>(setup.dtype);
    if (dt == 0 || dt >= TERSE_DTYPE_MAX_ || !(d->dtypes & TERSE_DTYPE_BIT(dt)))
        return set_error(TERSE_ERR_UNSUPPORTED, "codec '%s' does not support dtype %s (supports: %s)", d->name,
                         dtype_name(dt), dtype_list(d->dtypes).c_str());
    if (!(d->mem_kinds & setup.mem_kind))
        return set_error(TERSE_ERR_UNSUPPORTED, "codec '%s' does not support %s memory (supports: host%s)",
                         d->name, setup.mem_kind == TERSE_MEM_CUDA ? "cuda" : "this kind of",
                         (d->mem_kinds & TERSE_MEM_CUDA) ? ", cuda" : "");
    terse_codec_setup_t s = setup;
    s.struct_size = sizeof s;
    void *inst = nullptr;
    try {
        char err[kErrLen] = {0};
        int rc;
        try {
            rc = d->create(params.get(), &s, &inst, err, sizeof err);
        } catch (...) {
            return set_error(TERSE_ERR_PLUGIN, "codec '%s': create threw a C++ exception", d->name);
        }
        if (rc != TERSE_CODEC_OK)
            return set_error(codec_status(rc), "codec '%s': %s", d->name, plugin_message(err, rc).c_str());
        if (!inst)
            return set_error(TERSE_ERR_PLUGIN, "codec '%s': create succeeded but returned no instance", d->name);
        *out = std::make_unique<CodecInstance>(plugin, inst, s);
        return TERSE_OK;
    } catch (const std::bad_alloc &) {
        if (inst) d->destroy(inst);
        return set_error(TERSE_ERR_NO_MEMORY, "codec '%s': out of memory creating an instance", d->name);
    }
}

}  // namespace terse
