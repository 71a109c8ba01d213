#include "eval_input.h"

#include "capture/capture_format.h"
#include "eval_common.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace terse::eval {

namespace {

using h5::Handle;

// What a link points at (H5I_DATASET, H5I_GROUP, ...); H5Oget_info's
// signature differs between HDF5 1.10 and 1.12, opening the object does not.
H5I_type_t object_type(hid_t loc, const char *name) {
    Handle o(H5Oopen(loc, name, H5P_DEFAULT), H5Oclose);
    return o.ok() ? H5Iget_type(o.get()) : H5I_BADID;
}

bool attr_exists(hid_t obj, const char *name) { return H5Aexists(obj, name) > 0; }

bool read_string_attr(hid_t obj, const char *name, std::string *out) {
    if (!attr_exists(obj, name)) return false;
    Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!a.ok()) return false;
    Handle ftype(H5Aget_type(a.get()), H5Tclose);
    if (!ftype.ok() || H5Tget_class(ftype.get()) != H5T_STRING) return false;
    if (H5Tis_variable_str(ftype.get()) > 0) {
        Handle mtype(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(mtype.get(), H5T_VARIABLE);
        char *s = nullptr;
        if (H5Aread(a.get(), mtype.get(), &s) < 0) return false;
        *out = s ? s : "";
        H5free_memory(s);
        return true;
    }
    size_t n = H5Tget_size(ftype.get());
    std::string buf(n + 1, '\0');
    Handle mtype(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mtype.get(), n + 1);
    H5Tset_strpad(mtype.get(), H5T_STR_NULLTERM);
    if (H5Aread(a.get(), mtype.get(), buf.data()) < 0) return false;
    buf.resize(strlen(buf.c_str()));
    *out = buf;
    return true;
}

bool read_int_attrs(hid_t obj, const char *name, std::vector<int64_t> *out) {
    if (!attr_exists(obj, name)) return false;
    Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
    if (!a.ok()) return false;
    Handle space(H5Aget_space(a.get()), H5Sclose);
    hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0) return false;
    out->assign(size_t(n), 0);
    if (n == 0) return true;
    return H5Aread(a.get(), H5T_NATIVE_INT64, out->data()) >= 0;
}

bool read_int_attr(hid_t obj, const char *name, int64_t *out) {
    std::vector<int64_t> v;
    if (!read_int_attrs(obj, name, &v) || v.size() != 1) return false;
    *out = v[0];
    return true;
}

Handle open_file(const std::string &file) {
    check_readable(file);
    Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!f.ok()) throw EvalError(format("%s: not an HDF5 file (or damaged)", file.c_str()));
    return f;
}

// Type and size of a dataset, checked; fills dtype and count.
void describe(hid_t ds, const std::string &file, const std::string &path, Dataset *out) {
    Handle type(H5Dget_type(ds), H5Tclose);
    Handle space(H5Dget_space(ds), H5Sclose);
    if (!type.ok() || !space.ok())
        throw EvalError(format("%s: %s: cannot read its type or shape", file.c_str(), path.c_str()));
    terse_dtype_t dt;
    if (!h5::dtype_of_h5_type(type.get(), &dt)) {
        H5T_class_t cls = H5Tget_class(type.get());
        const char *what = cls == H5T_FLOAT      ? "a floating-point type"
                           : cls == H5T_INTEGER  ? "an integer type"
                           : cls == H5T_STRING   ? "strings"
                           : cls == H5T_COMPOUND ? "a compound type"
                                                 : "a non-numeric type";
        throw EvalError(format("%s: %s holds %s of %zu bytes, which terse does not handle "
                               "(accepted: float32, float64, float16, bfloat16, int32, int64)",
                               file.c_str(), path.c_str(), what, H5Tget_size(type.get())));
    }
    hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0) throw EvalError(format("%s: %s: cannot read its shape", file.c_str(), path.c_str()));
    out->file = file;
    out->path = path;
    out->dtype = dt;
    out->count = size_t(n);
}

struct Walk {
    hid_t file;
    const std::string *name;
    std::vector<Dataset> *out;
    std::string error;
};

herr_t visit_call(hid_t group, const char *link, const H5L_info_t *, void *opdata) {
    auto *w = static_cast<Walk *>(opdata);
    if (object_type(group, link) != H5I_DATASET) return 0;
    Handle ds(H5Dopen2(group, link, H5P_DEFAULT), H5Dclose);
    char gname[1024] = {0};
    H5Iget_name(group, gname, sizeof gname);
    std::string path = std::string(gname) + "/" + link;
    if (!ds.ok()) {
        w->error = format("%s: %s: cannot open", w->name->c_str(), path.c_str());
        return -1;
    }
    Dataset d;
    try {
        describe(ds.get(), *w->name, path, &d);
    } catch (const EvalError &e) {
        w->error = e.what();
        return -1;
    }
    d.captured = true;
    int64_t v;
    std::vector<int64_t> members;
    std::string s;
    if (read_int_attr(ds.get(), "rank", &v)) d.rank = int(v);
    if (read_int_attr(ds.get(), "comm_size", &v)) d.comm_size = int(v);
    if (read_int_attr(ds.get(), "call_index", &v)) d.call_index = uint64_t(v);
    read_string_attr(ds.get(), "comm_name", &d.comm_name);
    read_string_attr(ds.get(), "codec", &d.codec);
    read_string_attr(ds.get(), "config", &d.config);
    int64_t ctx = 0, seq = 0;
    if (read_int_attr(ds.get(), "ctx_id", &ctx) && read_int_attr(ds.get(), "seq", &seq)) {
        d.have_ids = true;
        d.ctx_id = uint32_t(ctx);
        d.seq = uint32_t(seq);
    }
    if (read_string_attr(ds.get(), "op", &s) && !h5::op_from_name(s, &d.op)) {
        w->error = format("%s: %s: unknown op '%s' in its attributes", w->name->c_str(), path.c_str(), s.c_str());
        return -1;
    }
    if (read_int_attrs(ds.get(), "members", &members)) d.members.assign(members.begin(), members.end());
    if (d.rank < 0 || d.comm_size < 1 || d.rank >= d.comm_size) {
        w->error = format("%s: %s: missing or inconsistent rank/comm_size attributes", w->name->c_str(),
                          path.c_str());
        return -1;
    }
    w->out->push_back(std::move(d));
    return 0;
}

herr_t visit_comm(hid_t calls, const char *link, const H5L_info_t *, void *opdata) {
    auto *w = static_cast<Walk *>(opdata);
    if (object_type(calls, link) != H5I_GROUP) return 0;
    Handle g(H5Gopen2(calls, link, H5P_DEFAULT), H5Gclose);
    if (!g.ok()) return -1;
    hsize_t idx = 0;
    return H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, &idx, visit_call, w) < 0 ? -1 : 0;
}

// Numeric order of call indices ("10" after "9"), then any "~k" suffix.
bool path_less(const Dataset &a, const Dataset &b) {
    if (a.comm_name != b.comm_name) return a.comm_name < b.comm_name;
    if (a.call_index != b.call_index) return a.call_index < b.call_index;
    return a.path < b.path;
}

}  // namespace

void check_readable(const std::string &file) {
    struct stat sb;
    if (stat(file.c_str(), &sb) != 0) throw EvalError(format("%s: %s", file.c_str(), strerror(errno)));
    if (!S_ISREG(sb.st_mode)) throw EvalError(format("%s: not a regular file", file.c_str()));
    h5::QuietErrors quiet;
    if (H5Fis_hdf5(file.c_str()) <= 0) throw EvalError(format("%s: not an HDF5 file", file.c_str()));
}

std::vector<Dataset> list_capture(const std::string &file) {
    h5::QuietErrors quiet;
    Handle f = open_file(file);
    std::string fmt;
    if (!read_string_attr(f.get(), "format", &fmt) || fmt != h5::kFormatName)
        throw EvalError(format("%s: not a terse capture (its root has no attribute format = "
                               "\"%s\"); name a dataset to evaluate with --dataset PATH",
                               file.c_str(), h5::kFormatName));
    int64_t version = 0;
    if (!read_int_attr(f.get(), "format_version", &version) || version != h5::kFormatVersion)
        throw EvalError(format("%s: capture format version %lld; this terse-eval reads version %d", file.c_str(),
                               (long long)version, h5::kFormatVersion));
    std::vector<Dataset> out;
    if (H5Lexists(f.get(), h5::kCallsGroup, H5P_DEFAULT) <= 0) return out;
    Handle calls(H5Gopen2(f.get(), h5::kCallsGroup, H5P_DEFAULT), H5Gclose);
    if (!calls.ok()) throw EvalError(format("%s: cannot open group /%s", file.c_str(), h5::kCallsGroup));
    Walk w{f.get(), &file, &out, {}};
    hsize_t idx = 0;
    if (H5Literate(calls.get(), H5_INDEX_NAME, H5_ITER_INC, &idx, visit_comm, &w) < 0)
        throw EvalError(w.error.empty() ? format("%s: cannot list /%s", file.c_str(), h5::kCallsGroup) : w.error);
    std::sort(out.begin(), out.end(), path_less);
    return out;
}

Dataset open_named(const std::string &file, const std::string &path) {
    h5::QuietErrors quiet;
    Handle f = open_file(file);
    // H5Lexists needs every intermediate group to exist: walk the path.
    std::string so_far;
    size_t pos = 0;
    while (pos <= path.size()) {
        size_t next = path.find('/', pos);
        std::string part = path.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
        pos = next == std::string::npos ? path.size() + 1 : next + 1;
        if (part.empty()) continue;
        so_far += "/" + part;
        if (H5Lexists(f.get(), so_far.c_str(), H5P_DEFAULT) <= 0)
            throw EvalError(format("%s: no dataset %s (%s does not exist; h5ls -r %s lists what "
                                   "the file holds)",
                                   file.c_str(), path.c_str(), so_far.c_str(), file.c_str()));
    }
    if (so_far.empty()) throw EvalError(format("--dataset '%s': not a dataset path", path.c_str()));
    if (object_type(f.get(), so_far.c_str()) != H5I_DATASET)
        throw EvalError(
            format("%s: %s is not a dataset (a group or other object)", file.c_str(), so_far.c_str()));
    Handle ds(H5Dopen2(f.get(), so_far.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) throw EvalError(format("%s: %s: cannot open", file.c_str(), so_far.c_str()));
    Dataset d;
    describe(ds.get(), file, so_far, &d);
    return d;
}

void load(Dataset &ds) {
    h5::QuietErrors quiet;
    Handle f = open_file(ds.file);
    Handle d(H5Dopen2(f.get(), ds.path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!d.ok()) throw EvalError(format("%s: %s: cannot open", ds.file.c_str(), ds.path.c_str()));
    Handle mtype = h5::memory_type(ds.dtype);
    ds.data.assign(ds.count * dtype_size(ds.dtype), 0);
    if (ds.count && H5Dread(d.get(), mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.data.data()) < 0)
        throw EvalError(format("%s: %s: reading %zu elements failed (truncated or damaged file?)",
                               ds.file.c_str(), ds.path.c_str(), ds.count));
}

}  // namespace terse::eval
