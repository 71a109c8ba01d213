// The HDF5 layout of capture files, shared by the writer (capture.cc) and
// the reader (tools/terse-eval).  Include only where HDF5 is available.
//
// <prefix>.rank<R>.h5
//   /                       attributes: format = "terse-capture",
//                           format_version = 1, terse_version, world_rank,
//                           world_size, capture_interval
//   /calls/<comm>/<index>   one 1-D dataset per recorded call: the input of
//                           this rank, <index> = the call index on that
//                           communicator (decimal), <comm> = its name with
//                           '/' replaced by '_' ("unnamed" when empty); a
//                           second live communicator of the same name gets
//                           "<index>~1", "~2", ...
//       attributes: comm_name, datatype ("float32" ...), op ("sum" ...),
//                   count, call_index, rank (in the communicator), comm_size,
//                   world_rank, members (world rank of each communicator
//                   rank), codec (the communicator's codec spec), config
//                   (its canonical configuration), ctx_id and seq (the
//                   communicator's context id and the engine's sequence
//                   number for this call, from which codec seeds derive)
//
// float16 and bfloat16 are stored as 2-byte HDF5 floating-point types with
// their own bit fields, so h5dump and h5py show the values.
#pragma once

#include "util/dtype.h"

#include <hdf5.h>
#include <terse/codec.h>

#include <cstring>
#include <string>
#include <utility>

namespace terse::h5 {

constexpr const char *kFormatName = "terse-capture";
constexpr int kFormatVersion = 1;
constexpr const char *kCallsGroup = "calls";

// One HDF5 identifier with its close function; closes on destruction.
class Handle {
public:
    using CloseFn = herr_t (*)(hid_t);
    Handle() = default;
    Handle(hid_t id, CloseFn close) : id_(id), close_(close) {}
    ~Handle() { reset(); }
    Handle(Handle &&o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
    Handle &operator=(Handle &&o) noexcept {
        if (this != &o) {
            reset();
            id_ = std::exchange(o.id_, H5I_INVALID_HID);
            close_ = o.close_;
        }
        return *this;
    }
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;

    hid_t get() const { return id_; }
    bool ok() const { return id_ >= 0; }
    void reset() {
        if (id_ >= 0 && close_) close_(id_);
        id_ = H5I_INVALID_HID;
    }

private:
    hid_t id_ = H5I_INVALID_HID;
    CloseFn close_ = nullptr;
};

// Silences HDF5's automatic error-stack printing for its lifetime and
// restores the previous handler: terse reports errors itself, and the
// application may use HDF5 with its own settings.
class QuietErrors {
public:
    QuietErrors() {
        H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
    QuietErrors(const QuietErrors &) = delete;
    QuietErrors &operator=(const QuietErrors &) = delete;

private:
    H5E_auto2_t func_ = nullptr;
    void *data_ = nullptr;
};

inline bool dtype_from_name(const std::string &s, terse_dtype_t *out) {
    for (int d = 1; d < TERSE_DTYPE_MAX_; ++d) {
        if (s == dtype_name(terse_dtype_t(d))) {
            *out = terse_dtype_t(d);
            return true;
        }
    }
    return false;
}

inline const char *op_name(terse_op_t op) {
    switch (op) {
    case TERSE_OP_SUM: return "sum";
    case TERSE_OP_MAX: return "max";
    case TERSE_OP_MIN: return "min";
    }
    return "unknown";
}

inline bool op_from_name(const std::string &s, terse_op_t *out) {
    for (terse_op_t op : {TERSE_OP_SUM, TERSE_OP_MAX, TERSE_OP_MIN}) {
        if (s == op_name(op)) {
            *out = op;
            return true;
        }
    }
    return false;
}

// A 2-byte IEEE-style float in native byte order: sign at bit 15, then
// ebits of exponent and mbits of mantissa.
inline Handle half_type(size_t ebits, size_t mbits, size_t ebias) {
    Handle t(H5Tcopy(H5T_NATIVE_FLOAT), H5Tclose);
    if (!t.ok()) return t;
    // Fields first (they fit in 32 bits), then shrink: HDF5 checks that the
    // fields fit the precision at each step.
    if (H5Tset_fields(t.get(), 15, mbits, ebits, 0, mbits) < 0 || H5Tset_precision(t.get(), 16) < 0 ||
        H5Tset_size(t.get(), 2) < 0 || H5Tset_ebias(t.get(), ebias) < 0)
        return Handle();
    return t;
}

// The in-memory HDF5 type of dt (a new handle; not ok() on failure).
inline Handle memory_type(terse_dtype_t dt) {
    switch (dt) {
    case TERSE_DTYPE_FLOAT32: return Handle(H5Tcopy(H5T_NATIVE_FLOAT), H5Tclose);
    case TERSE_DTYPE_FLOAT64: return Handle(H5Tcopy(H5T_NATIVE_DOUBLE), H5Tclose);
    case TERSE_DTYPE_INT32: return Handle(H5Tcopy(H5T_NATIVE_INT32), H5Tclose);
    case TERSE_DTYPE_INT64: return Handle(H5Tcopy(H5T_NATIVE_INT64), H5Tclose);
    case TERSE_DTYPE_FLOAT16: return half_type(5, 10, 15);
    case TERSE_DTYPE_BFLOAT16: return half_type(8, 7, 127);
    default: return Handle();
    }
}

// Which terse datatype a stored HDF5 type holds; false if none fits.
inline bool dtype_of_h5_type(hid_t type, terse_dtype_t *out) {
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    if (cls == H5T_FLOAT) {
        if (size == 4) {
            *out = TERSE_DTYPE_FLOAT32;
            return true;
        }
        if (size == 8) {
            *out = TERSE_DTYPE_FLOAT64;
            return true;
        }
        if (size == 2) {
            size_t spos, epos, esize, mpos, msize;
            if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return false;
            if (esize == 5 && msize == 10) {
                *out = TERSE_DTYPE_FLOAT16;
                return true;
            }
            if (esize == 8 && msize == 7) {
                *out = TERSE_DTYPE_BFLOAT16;
                return true;
            }
        }
        return false;
    }
    if (cls == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_2) {
        if (size == 4) {
            *out = TERSE_DTYPE_INT32;
            return true;
        }
        if (size == 8) {
            *out = TERSE_DTYPE_INT64;
            return true;
        }
    }
    return false;
}

// A communicator name as one HDF5 link name.
inline std::string link_name(const std::string &comm_name) {
    if (comm_name.empty()) return "unnamed";
    std::string s = comm_name;
    for (char &c : s)
        if (c == '/') c = '_';
    if (s == "." || s == "..") s = "_" + s;
    return s;
}

}  // namespace terse::h5
