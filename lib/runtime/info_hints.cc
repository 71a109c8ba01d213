#include "runtime/info_hints.h"

#include <string>
#include <string_view>

namespace terse {

Status config_apply_info(MPI_Info info, CommConfig *cfg, ConfigOverrides *taken) {
    if (info == MPI_INFO_NULL) return TERSE_OK;
    int nkeys = 0;
    if (PMPI_Info_get_nkeys(info, &nkeys) != MPI_SUCCESS)
        return set_error(TERSE_ERR_MPI, "MPI_Info: MPI_Info_get_nkeys failed");
    InfoHints hints;
    for (int i = 0; i < nkeys; ++i) {
        char key[MPI_MAX_INFO_KEY + 1] = {};
        if (PMPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS)
            return set_error(TERSE_ERR_MPI, "MPI_Info: MPI_Info_get_nthkey(%d) failed", i);
        if (std::string_view(key).substr(0, 6) != "terse_") continue;  // not ours: not read
        int len = 0, flag = 0;
        if (PMPI_Info_get_valuelen(info, key, &len, &flag) != MPI_SUCCESS || !flag)
            return set_error(TERSE_ERR_MPI, "MPI_Info key %s: MPI_Info_get_valuelen failed", key);
        std::string value(size_t(len) + 1, '\0');
        if (PMPI_Info_get(info, key, len, value.data(), &flag) != MPI_SUCCESS || !flag)
            return set_error(TERSE_ERR_MPI, "MPI_Info key %s: MPI_Info_get failed", key);
        value.resize(std::char_traits<char>::length(value.c_str()));
        hints.emplace_back(key, std::move(value));
    }
    return config_apply_hints(hints, cfg, taken);
}

}  // namespace terse
