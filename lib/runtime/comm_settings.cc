#include "runtime/comm_settings.h"

#include "runtime/info_hints.h"
#include "util/log.h"

#include <utility>

namespace terse {

Status comm_hints_read(MPI_Info info, ConfigOverrides *keys) {
    CommConfig scratch;
    return config_apply_info(info, &scratch, keys);
}

void comm_hints_merge(CommState *st, const ConfigOverrides &keys) {
    for (const auto &[k, v] : keys) st->info_overrides[k] = v;
    st->reresolve();
}

void comm_hints_replace(CommState *st, ConfigOverrides keys) {
    st->info_overrides = std::move(keys);
    st->reresolve();
}

void comm_renamed(CommState *st, const char *name) {
    if (st->ready) {
        TERSE_LOG_WARN("communicator renamed '%s' -> '%s' after first use: config file sections "
                       "for the new name apply after the next MPI_Comm_set_info or "
                       "terse_comm_configure()",
                       st->name.c_str(), name);
        st->name = name;
        return;
    }
    st->name = name;
    st->reresolve();
}

}  // namespace terse
