// Codec registry: finds codec plugins by name, loads them with dlopen,
// checks their descriptor, and makes instances.  Plugins are looked up as
// "terse_<name>.so" in each directory of TERSE_PLUGIN_PATH, then in the
// install directory ($libdir/terse).  A plugin that is missing, fails to
// load, lacks the entry symbol, or has a mismatched ABI version / struct size
// / malformed descriptor is refused with a message naming the file and the
// problem.  Loaded plugins stay loaded until the process exits.
#pragma once

#include "config/config.h"
#include "util/status.h"

#include <terse/codec.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace terse {

// A loaded, validated plugin.
struct CodecPlugin {
    const terse_codec_descriptor_t *desc = nullptr;
    std::string path;
    uint32_t id = 0;  // stable frame id: crc32c of the name
    bool lossless() const { return desc->flags & TERSE_CODEC_FLAG_LOSSLESS; }
};

// Whether d's payload is the elements themselves (TERSE_CODEC_FLAG_IDENTITY;
// the registry accepts the flag only with LOSSLESS and RECOMPRESS), so that
// the engine may send raw frames and skip the codec.
inline bool codec_is_identity(const terse_codec_descriptor_t *d) {
    return d && (d->flags & TERSE_CODEC_FLAG_IDENTITY);
}

// Parsed parameters of one plugin (owns them; released with free_params).
class CodecParams {
public:
    CodecParams(const CodecPlugin *plugin, void *params) : plugin_(plugin), params_(params) {}
    ~CodecParams();
    CodecParams(const CodecParams &) = delete;
    CodecParams &operator=(const CodecParams &) = delete;
    const CodecPlugin *plugin() const { return plugin_; }
    const void *get() const { return params_; }
    std::string canonical() const;  // "name:params_string"
    bool feedback_default() const { return plugin_->desc->flags & TERSE_CODEC_FLAG_FEEDBACK_DEFAULT; }
    // The end-to-end error bound the codec states for these parameters on
    // nranks ranks (descriptor's error_contract, ABI revision 2): lossless
    // codecs state 0 absolute; TERSE_BOUND_NONE when it states none.
    terse_bound_kind_t stated_bound(int nranks, double *value) const;
private:
    const CodecPlugin *plugin_;
    void *params_;
};

// One codec instance (owns it; released with destroy).
class CodecInstance {
public:
    CodecInstance(const CodecPlugin *plugin, void *inst, const terse_codec_setup_t &setup)
        : plugin_(plugin), inst_(inst), setup_(setup) {}
    ~CodecInstance();
    CodecInstance(const CodecInstance &) = delete;
    CodecInstance &operator=(const CodecInstance &) = delete;
    const CodecPlugin *plugin() const { return plugin_; }
    const terse_codec_descriptor_t *desc() const { return plugin_->desc; }
    void *get() const { return inst_; }
    const terse_codec_setup_t &setup() const { return setup_; }
    // Device workspace each call of this instance needs (codec.h revision 3):
    // 0 for a host instance or a codec that needs none.
    size_t device_workspace_size() const {
        return setup_.mem_kind == TERSE_MEM_CUDA && desc()->device_workspace_size
                   ? desc()->device_workspace_size(inst_)
                   : 0;
    }
private:
    const CodecPlugin *plugin_;
    void *inst_;
    terse_codec_setup_t setup_;
};

class Registry {
public:
    // The process-wide registry.  set_search_path() is called once at init
    // (from TERSE_PLUGIN_PATH); the install dir is always searched last.
    static Registry &instance();
    void set_search_path(const std::string &colon_separated);

    // Find (loading on first use) the plugin for name.  An unknown name gives
    // TERSE_ERR_PLUGIN with the list of codecs that are available.
    Status find(const std::string &name, const CodecPlugin **out);

    // Load a specific file (tests, tools); validates like find().
    Status load_file(const std::string &path, const CodecPlugin **out);

    // Names of all plugins found in the search path (loads nothing).
    std::vector<std::string> available() const;

    // Parse spec.params with the plugin's parse(); the engine's own keys
    // "feedback" and "guard" are not passed to the plugin.
    Status parse_params(const CodecSpec &spec, std::unique_ptr<CodecParams> *out);

    // The codecs a configured spec names: itself, or each candidate of
    // TERSE_CODEC=auto (config.h), parsed.  An unknown candidate, or one
    // that states no error bound (CodecParams::stated_bound) while auto
    // has a budget, is an error naming it.
    Status parse_codecs(const CodecSpec &spec, std::vector<std::unique_ptr<CodecParams>> *out);

    Status create(const CodecParams &params, const terse_codec_setup_t &setup,
                  std::unique_ptr<CodecInstance> *out);

private:
    Registry() = default;
    Status validate(const terse_codec_descriptor_t *d, const std::string &path);
    std::vector<std::string> dirs() const;

    mutable std::mutex mu_;  // guards loading; never taken on the hot path
    std::string search_path_;
    std::vector<std::unique_ptr<CodecPlugin>> plugins_;
    std::vector<void *> handles_;
};

}  // namespace terse
