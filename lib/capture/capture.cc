#include "capture/capture.h"

#include "terse_build_config.h"

#include <terse/version.h>

#include <new>

#ifdef TERSE_HAVE_HDF5
#include "capture/capture_format.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>
#endif

namespace terse {

namespace capture_detail {
bool g_active = false;
}  // namespace capture_detail

#ifdef TERSE_HAVE_HDF5

namespace {

using h5::Handle;

bool attr_write(hid_t obj, const char *name, hid_t type, hid_t space, const void *data) {
    Handle a(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    return a.ok() && H5Awrite(a.get(), type, data) >= 0;
}

bool attr_string(hid_t obj, const char *name, const std::string &value) {
    Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
    Handle s(H5Screate(H5S_SCALAR), H5Sclose);
    if (!t.ok() || !s.ok() || H5Tset_size(t.get(), value.size() + 1) < 0 ||
        H5Tset_strpad(t.get(), H5T_STR_NULLTERM) < 0)
        return false;
    return attr_write(obj, name, t.get(), s.get(), value.c_str());
}

bool attr_u64(hid_t obj, const char *name, uint64_t v) {
    Handle s(H5Screate(H5S_SCALAR), H5Sclose);
    return s.ok() && attr_write(obj, name, H5T_NATIVE_UINT64, s.get(), &v);
}

bool attr_i32(hid_t obj, const char *name, int32_t v) {
    Handle s(H5Screate(H5S_SCALAR), H5Sclose);
    return s.ok() && attr_write(obj, name, H5T_NATIVE_INT32, s.get(), &v);
}

bool attr_i32_array(hid_t obj, const char *name, const std::vector<int32_t> &v) {
    hsize_t n = v.size();
    Handle s(n ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_NULL), H5Sclose);
    return s.ok() && attr_write(obj, name, H5T_NATIVE_INT32, s.get(), v.data());
}

}  // namespace

// The open capture file of this process.
class CaptureWriter {
public:
    Status open(const std::string &prefix, unsigned interval, int world_rank, int world_size) {
        interval_ = interval;
        path_ = prefix + ".rank" + std::to_string(world_rank) + ".h5";
        h5::QuietErrors quiet;
        file_ = Handle(H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
        if (!file_.ok())
            return set_error(TERSE_ERR_IO,
                             "TERSE_CAPTURE=%s: cannot create the capture file '%s' (does the "
                             "directory exist and is it writable?)",
                             prefix.c_str(), path_.c_str());
        hid_t f = file_.get();
        if (!attr_string(f, "format", h5::kFormatName) || !attr_i32(f, "format_version", h5::kFormatVersion) ||
            !attr_string(f, "terse_version", TERSE_VERSION_STRING) || !attr_i32(f, "world_rank", world_rank) ||
            !attr_i32(f, "world_size", world_size) || !attr_u64(f, "capture_interval", interval))
            return set_error(TERSE_ERR_IO, "capture file '%s': cannot write its attributes", path_.c_str());
        calls_ = Handle(H5Gcreate2(f, h5::kCallsGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
        if (!calls_.ok())
            return set_error(TERSE_ERR_IO, "capture file '%s': cannot create group /%s", path_.c_str(),
                             h5::kCallsGroup);
        H5Fflush(f, H5F_SCOPE_LOCAL);
        return TERSE_OK;
    }

    bool wanted(uint64_t call_index) const { return call_index % interval_ == 0; }

    Status record(const CaptureSite &st, const void *buf, size_t count, terse_dtype_t dtype, uint64_t call_index,
                  terse_op_t op) {
        std::lock_guard<std::mutex> lock(mu_);
        h5::QuietErrors quiet;
        const std::string comm_name(st.comm_name);
        hid_t group = comm_group(comm_name);
        if (group < 0)
            return set_error(TERSE_ERR_IO,
                             "capture file '%s': cannot create the group of "
                             "communicator '%s'",
                             path_.c_str(), comm_name.c_str());
        Handle type = h5::memory_type(dtype);
        if (!type.ok())
            return set_error(TERSE_ERR_UNSUPPORTED, "capture: datatype %d has no HDF5 type", int(dtype));
        // A freed communicator's name may be reused by a new one whose call
        // index restarts: never overwrite, add a suffix instead.
        std::string name = std::to_string(call_index);
        for (int k = 1; H5Lexists(group, name.c_str(), H5P_DEFAULT) > 0; ++k)
            name = std::to_string(call_index) + "~" + std::to_string(k);
        hsize_t dims = count;
        Handle space(H5Screate_simple(1, &dims, nullptr), H5Sclose);
        Handle ds(space.ok() ? H5Dcreate2(group, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                          H5P_DEFAULT)
                             : H5I_INVALID_HID,
                  H5Dclose);
        if (!ds.ok())
            return set_error(TERSE_ERR_IO, "capture file '%s': cannot create dataset %s/%s", path_.c_str(),
                             h5::link_name(comm_name).c_str(), name.c_str());
        if (count > 0 && H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
            return set_error(TERSE_ERR_IO,
                             "capture file '%s': writing %zu elements to %s/%s failed "
                             "(disk full?)",
                             path_.c_str(), count, h5::link_name(comm_name).c_str(), name.c_str());
        std::vector<int32_t> members(st.world_ranks.begin(), st.world_ranks.end());
        hid_t d = ds.get();
        int32_t world_rank = st.rank < int(members.size()) ? members[st.rank] : -1;
        if (!attr_string(d, "comm_name", comm_name) || !attr_string(d, "datatype", terse::dtype_name(dtype)) ||
            !attr_string(d, "op", h5::op_name(op)) || !attr_u64(d, "count", count) ||
            !attr_u64(d, "call_index", call_index) || !attr_i32(d, "rank", st.rank) ||
            !attr_i32(d, "comm_size", st.size) || !attr_i32(d, "world_rank", world_rank) ||
            !attr_i32_array(d, "members", members) || !attr_string(d, "codec", st.config->codec.text()) ||
            !attr_string(d, "config", st.config->canonical()) || !attr_u64(d, "ctx_id", st.ctx_id) ||
            !attr_u64(d, "seq", st.seq))
            return set_error(TERSE_ERR_IO, "capture file '%s': cannot write the attributes of %s/%s",
                             path_.c_str(), h5::link_name(comm_name).c_str(), name.c_str());
        // Flush so that a run that dies later still leaves a readable file.
        H5Fflush(file_.get(), H5F_SCOPE_LOCAL);
        return TERSE_OK;
    }

    void close() {
        h5::QuietErrors quiet;
        groups_.clear();
        calls_.reset();
        file_.reset();
    }

    const std::string &path() const { return path_; }

private:
    hid_t comm_group(const std::string &comm_name) {
        std::string link = h5::link_name(comm_name);
        auto it = groups_.find(link);
        if (it != groups_.end()) return it->second.get();
        Handle g(H5Gcreate2(calls_.get(), link.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
        if (!g.ok()) return H5I_INVALID_HID;
        hid_t id = g.get();
        groups_.emplace(link, std::move(g));
        return id;
    }

    std::mutex mu_;
    unsigned interval_ = 1;
    std::string path_;
    Handle file_;
    Handle calls_;
    std::map<std::string, Handle> groups_;
};

namespace {
// Deliberately not a static object: if the program exits without
// MPI_Finalize, HDF5's own exit handler closes the file, and no destructor
// of ours runs after it.
CaptureWriter *g_writer = nullptr;
}  // namespace

Status capture_open(const GlobalConfig &global, int world_rank, int world_size) {
    capture_close();
    if (global.capture_prefix.empty()) return TERSE_OK;
    if (global.capture_interval == 0)
        return set_error(TERSE_ERR_INVALID, "TERSE_CAPTURE_INTERVAL=0: the interval must be a positive integer "
                                            "(1 records every call, N every N-th call of each communicator)");
    auto *w = new (std::nothrow) CaptureWriter;
    if (!w) return set_error(TERSE_ERR_NO_MEMORY, "capture: out of memory");
    Status s = w->open(global.capture_prefix, global.capture_interval, world_rank, world_size);
    if (s != TERSE_OK) {
        w->close();
        delete w;
        return s;
    }
    g_writer = w;
    capture_detail::g_active = true;
    return TERSE_OK;
}

bool capture_wanted(uint64_t call_index) { return g_writer && g_writer->wanted(call_index); }

Status capture_record(const CaptureSite &site, const void *buf, size_t count, terse_dtype_t dtype,
                      uint64_t call_index, terse_op_t op) {
    if (!g_writer || !g_writer->wanted(call_index)) return TERSE_OK;
    if (count > 0 && buf == nullptr)
        return set_error(TERSE_ERR_INVALID, "capture: null buffer for %zu elements", count);
    if (!site.config) return set_error(TERSE_ERR_INVALID, "capture: no configuration given for the communicator");
    try {
        return g_writer->record(site, buf, count, dtype, call_index, op);
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "capture: out of memory");
    }
}

void capture_close() {
    capture_detail::g_active = false;
    if (!g_writer) return;
    g_writer->close();
    delete g_writer;
    g_writer = nullptr;
}

const char *capture_path() { return g_writer ? g_writer->path().c_str() : ""; }

#else  // !TERSE_HAVE_HDF5

Status capture_open(const GlobalConfig &global, int, int) {
    if (global.capture_prefix.empty()) return TERSE_OK;
    return set_error(TERSE_ERR_UNSUPPORTED,
                     "TERSE_CAPTURE=%s: this terse was built without HDF5, so it cannot write "
                     "captures; rebuild with HDF5 (configure --with-hdf5; Debian: libhdf5-dev) or "
                     "unset TERSE_CAPTURE",
                     global.capture_prefix.c_str());
}

bool capture_wanted(uint64_t) { return false; }

Status capture_record(const CaptureSite &, const void *, size_t, terse_dtype_t, uint64_t, terse_op_t) {
    return TERSE_OK;
}

void capture_close() { capture_detail::g_active = false; }

const char *capture_path() { return ""; }

#endif

}  // namespace terse
