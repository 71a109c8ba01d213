// terse-eval's input: datasets found in HDF5 files, either the calls of a
// terse capture (lib/capture_format.h) or datasets the user names.  Data is
// loaded on demand, one call (all ranks) at a time, so captures larger than
// memory can be evaluated call by call.
#pragma once

#include <terse/codec.h>

#include <cstdint>
#include <string>
#include <vector>

namespace terse::eval {

struct Dataset {
    std::string file;  // the HDF5 file
    std::string path;  // the dataset inside it, e.g. /calls/MPI_COMM_WORLD/3
    terse_dtype_t dtype = TERSE_DTYPE_FLOAT32;
    terse_op_t op = TERSE_OP_SUM;
    size_t count = 0;

    // From the capture's attributes; rank = -1 for a user-named dataset.
    bool captured = false;
    int rank = -1;
    int comm_size = -1;
    uint64_t call_index = 0;
    std::string comm_name;
    std::string codec;         // the codec the communicator ran with
    std::string config;        // its canonical configuration ("" if unknown)
    std::vector<int> members;  // world ranks of the communicator
    bool have_ids = false;     // ctx_id and seq recorded (codec seeds)
    uint32_t ctx_id = 0;
    uint32_t seq = 0;

    std::vector<unsigned char> data;  // count elements of dtype once loaded
};

// Every call dataset of a capture file; throws EvalError if the file cannot
// be opened or is not a terse capture.
std::vector<Dataset> list_capture(const std::string &file);

// The named dataset of file (any floating-point or integer HDF5 type of a
// width terse handles, any rank of dataspace, read flattened); throws
// EvalError when the file or dataset is missing or its type is unsupported.
Dataset open_named(const std::string &file, const std::string &path);

// Reads the elements into ds.data (converted to the host's byte order).
void load(Dataset &ds);

// Whether file can be opened as HDF5 at all (for a clear first message).
void check_readable(const std::string &file);

}  // namespace terse::eval
