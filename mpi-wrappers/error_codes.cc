#include "error_codes.h"

#include <terse/terse.h>

#include "util/log.h"

namespace terse {

namespace {

// The text MPI_Error_string gives; terse prints the details (which rank,
// which setting, which frame) on stderr when the error happens.
struct Entry {
    Status status;
    const char *text;
};
constexpr Entry kEntries[] = {
    {TERSE_ERR_INVALID, "terse: invalid argument or configuration value"},
    {TERSE_ERR_NO_MEMORY, "terse: out of memory"},
    {TERSE_ERR_UNSUPPORTED, "terse: datatype, operation or memory kind not supported by the codec"},
    {TERSE_ERR_PLUGIN, "terse: codec plugin missing, broken or failing"},
    {TERSE_ERR_TRANSPORT, "terse: transport (UCX) failure"},
    {TERSE_ERR_MISMATCH, "terse: ranks disagree on the configuration"},
    {TERSE_ERR_CORRUPT, "terse: a received frame is corrupt"},
    {TERSE_ERR_MPI, "terse: an MPI call made by terse failed"},
    {TERSE_ERR_NOT_INITIALIZED, "terse: not initialized"},
    {TERSE_ERR_IO, "terse: a file could not be read or written"},
    {TERSE_ERR_REMOTE, "terse: the operation failed on another rank"},
};
constexpr int kStatuses = 12;  // TERSE_OK .. TERSE_ERR_REMOTE, by -status
static_assert(-int(TERSE_ERR_REMOTE) == kStatuses - 1);

// Written once at MPI_Init, read afterwards: no lock needed.
int g_code[kStatuses] = {};  // 0 (MPI_SUCCESS): not registered

}  // namespace

void register_error_codes() {
    for (const Entry &e : kEntries) {
        int cls = 0, code = 0;
        if (PMPI_Add_error_class(&cls) != MPI_SUCCESS || PMPI_Add_error_code(cls, &code) != MPI_SUCCESS ||
            PMPI_Add_error_string(cls, const_cast<char *>(e.text)) != MPI_SUCCESS ||
            PMPI_Add_error_string(code, const_cast<char *>(e.text)) != MPI_SUCCESS) {
            TERSE_LOG_INFO("MPI refused terse's error classes; errors are reported as MPI_ERR_OTHER");
            for (int &c : g_code) c = 0;
            return;
        }
        g_code[-int(e.status)] = code;
    }
}

int mpi_error_code(Status status) {
    const int i = -int(status);
    if (i > 0 && i < kStatuses && g_code[i] != 0) return g_code[i];
    return status == TERSE_ERR_TRANSPORT ? MPI_ERR_INTERN : MPI_ERR_OTHER;
}

}  // namespace terse
