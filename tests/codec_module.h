// Test helper: load a codec plugin module the way the registry does
// (terse_<name>.so from the directories of TERSE_PLUGIN_PATH, entry symbol
// TERSE_CODEC_ENTRY_SYMBOL) and drive it through the C ABI only, so the
// tests exercise the real module.  RAII owners for the module handle, the
// parsed parameters and the instance.
#pragma once

#include <terse/codec.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace codec_test {

class Module {
public:
    // Empty error() means loaded.
    explicit Module(const std::string &name) {
        const char *env = std::getenv("TERSE_PLUGIN_PATH");
        std::stringstream dirs(env ? env : "");
        std::string dir;
        std::string tried;
        while (std::getline(dirs, dir, ':')) {
            if (dir.empty()) continue;
            const std::string path = dir + "/terse_" + name + ".so";
            tried += " " + path;
            handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (handle_) {
                path_ = path;
                break;
            }
        }
        if (!handle_) {
            error_ = "terse_" + name + ".so not found in TERSE_PLUGIN_PATH (tried:" + tried + ")";
            return;
        }
        auto entry = reinterpret_cast<terse_codec_entry_fn>(dlsym(handle_, TERSE_CODEC_ENTRY_SYMBOL));
        if (!entry) {
            error_ = path_ + ": no symbol " TERSE_CODEC_ENTRY_SYMBOL;
            return;
        }
        desc_ = entry();
    }
    ~Module() {
        if (handle_) dlclose(handle_);
    }
    Module(const Module &) = delete;
    Module &operator=(const Module &) = delete;

    const std::string &error() const { return error_; }
    const std::string &path() const { return path_; }
    const terse_codec_descriptor_t *desc() const { return desc_; }

private:
    void *handle_ = nullptr;
    const terse_codec_descriptor_t *desc_ = nullptr;
    std::string path_, error_;
};

// Parse "k=v,k=v" with the plugin.  Returns the status; message in *err.
inline int parse(const terse_codec_descriptor_t *d, const std::string &spec, void **params, std::string *err) {
    std::vector<std::string> keys, values;
    std::stringstream ss(spec);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        const auto eq = item.find('=');
        keys.push_back(item.substr(0, eq));
        values.push_back(eq == std::string::npos ? "" : item.substr(eq + 1));
    }
    std::vector<terse_codec_kv_t> kv;
    for (size_t i = 0; i < keys.size(); i++) kv.push_back({keys[i].c_str(), values[i].c_str()});
    char buf[512] = {0};
    const int rc = d->parse(kv.data(), kv.size(), params, buf, sizeof buf);
    if (err) *err = buf;
    return rc;
}

// A parsed, created codec instance.
class Codec {
public:
    Codec(const terse_codec_descriptor_t *d, const std::string &spec, terse_dtype_t dtype, size_t max_count,
          int nranks = 1)
        : d_(d) {
        rc_ = parse(d, spec, &params_, &error_);
        if (rc_ != TERSE_CODEC_OK) return;
        terse_codec_setup_t setup{};
        setup.struct_size = sizeof setup;
        setup.dtype = dtype;
        setup.mem_kind = TERSE_MEM_HOST;
        setup.nranks = nranks;
        setup.max_chunk_count = max_count;
        char buf[512] = {0};
        rc_ = d->create(params_, &setup, &inst_, buf, sizeof buf);
        error_ = buf;
    }
    ~Codec() {
        if (inst_) d_->destroy(inst_);
        if (params_) d_->free_params(params_);
    }
    Codec(const Codec &) = delete;
    Codec &operator=(const Codec &) = delete;

    bool ok() const { return rc_ == TERSE_CODEC_OK && inst_; }
    int status() const { return rc_; }
    const std::string &error() const { return error_; }
    void *instance() const { return inst_; }

    std::string params_string() const {
        char buf[256] = {0};
        d_->params_string(params_, buf, sizeof buf);
        return buf;
    }
    size_t max_encoded_size(size_t count) const { return d_->max_encoded_size(inst_, count); }

    // Encode into a buffer of max_encoded_size(count); *out is resized to the payload.
    int encode(const void *src, size_t count, std::vector<uint8_t> *out) const {
        out->assign(max_encoded_size(count), 0xA5);
        size_t len = 0;
        terse_codec_call_t call{};
        call.struct_size = sizeof call;
        const int rc = d_->encode(inst_, src, count, out->data(), out->size(), &len, &call);
        if (rc == TERSE_CODEC_OK) out->resize(len);
        return rc;
    }
    int decode(const void *src, size_t len, void *dst, size_t count, bool accumulate,
               terse_op_t op = TERSE_OP_SUM) const {
        terse_codec_call_t call{};
        call.struct_size = sizeof call;
        return d_->decode(inst_, src, len, dst, count, accumulate ? 1 : 0, op, &call);
    }

private:
    const terse_codec_descriptor_t *d_;
    void *params_ = nullptr;
    void *inst_ = nullptr;
    int rc_ = TERSE_CODEC_ERR_INTERNAL;
    std::string error_;
};

// Sample data folder (TERSE_SHARED_DATA), empty if unset or missing.
inline std::string shared_data_dir() {
    const char *d = std::getenv("TERSE_SHARED_DATA");
    return d ? d : "";
}

// Read a raw little-endian float32 file; empty on failure.
inline std::vector<float> read_f32(const std::string &path) {
    std::vector<float> v;
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return v;
    std::fseek(f, 0, SEEK_END);
    const long n = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    if (n > 0) {
        v.resize(size_t(n) / sizeof(float));
        if (std::fread(v.data(), sizeof(float), v.size(), f) != v.size()) v.clear();
    }
    std::fclose(f);
    return v;
}

}  // namespace codec_test
