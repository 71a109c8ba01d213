#include "engine/stats.h"

#include <cstdio>

namespace terse {

const char *stats_kind_name(terse_coll_kind_t kind) {
    switch (kind) {
    case TERSE_KIND_ALLREDUCE: return "allreduce";
    case TERSE_KIND_REDUCE_SCATTER_BLOCK: return "reduce_scatter_block";
    case TERSE_KIND_REDUCE_SCATTER: return "reduce_scatter";
    case TERSE_KIND_ALLGATHER: return "allgather";
    case TERSE_KIND_ALLGATHERV: return "allgatherv";
    case TERSE_KIND_IALLREDUCE: return "iallreduce";
    case TERSE_KIND_IREDUCE_SCATTER_BLOCK: return "ireduce_scatter_block";
    case TERSE_KIND_IREDUCE_SCATTER: return "ireduce_scatter";
    case TERSE_KIND_IALLGATHER: return "iallgather";
    case TERSE_KIND_IALLGATHERV: return "iallgatherv";
    case TERSE_KIND_COUNT: break;
    }
    return "?";
}

void Stats::add_operation(const OpAccount &a) {
    std::lock_guard<std::mutex> lk(mu_);
    if (unsigned(a.kind) < TERSE_KIND_COUNT) c_.per_kind[a.kind].bytes_wire += a.wire;
    c_.bytes_wire += a.wire;
    c_.bytes_wire_raw += a.wire_raw;
    c_.chunks_raw += a.raw_chunks;
    c_.seconds_total += a.seconds_total;
    c_.seconds_encode += a.seconds_encode;
    c_.seconds_decode += a.seconds_decode;
    double wait = a.seconds_total - a.seconds_encode - a.seconds_decode;
    c_.seconds_wait += wait > 0 ? wait : 0;
}

std::string Stats::format() const {
    const terse_comm_stats_t c = counters();
    char buf[512];
    double ratio = c.bytes_wire ? double(c.bytes_wire_raw) / double(c.bytes_wire) : 0.0;
    int n = snprintf(buf, sizeof buf,
                     "intercepted=%llu passed=%llu bytes_in=%llu wire=%llu wire_raw=%llu ratio=%.2f "
                     "raw_chunks=%llu time=%.6fs encode=%.6fs decode=%.6fs wait=%.6fs",
                     (unsigned long long)c.calls_intercepted, (unsigned long long)c.calls_passed,
                     (unsigned long long)c.bytes_in, (unsigned long long)c.bytes_wire,
                     (unsigned long long)c.bytes_wire_raw, ratio, (unsigned long long)c.chunks_raw,
                     c.seconds_total, c.seconds_encode, c.seconds_decode, c.seconds_wait);
    if ((c.max_abs_error > 0 || c.max_rel_error > 0) && n > 0 && size_t(n) < sizeof buf)
        n += snprintf(buf + n, sizeof buf - n, " max_abs_err=%.3g max_rel_err=%.3g", c.max_abs_error,
                      c.max_rel_error);
    if (c.guard_checks > 0 && n > 0 && size_t(n) < sizeof buf)
        snprintf(buf + n, sizeof buf - n, " guard_checks=%llu guard_trips=%llu guard_trip_call=%llu",
                 (unsigned long long)c.guard_checks, (unsigned long long)c.guard_trips,
                 (unsigned long long)c.guard_trip_call);
    std::string line = buf;
    for (int k = 0; k < TERSE_KIND_COUNT; ++k) {
        const terse_kind_stats_t &pk = c.per_kind[k];
        if (!pk.calls) continue;
        snprintf(buf, sizeof buf, " %s=%llu/%llu/%llu", stats_kind_name(terse_coll_kind_t(k)),
                 (unsigned long long)pk.calls, (unsigned long long)pk.bytes_in,
                 (unsigned long long)pk.bytes_wire);
        line += buf;
    }
    return line;
}

}  // namespace terse
