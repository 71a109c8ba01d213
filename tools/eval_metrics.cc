#include "eval_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace terse::eval {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool same_kind(double a, double b) {
    if (std::isnan(a)) return std::isnan(b);
    return a == b;  // +Inf / -Inf
}
}  // namespace

void ErrorStats::add(const double *ref, const double *got, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        double x = ref[i], y = got[i];
        if (!std::isfinite(x)) {
            if (!same_kind(x, y)) ++nonfinite_mismatch;
            continue;
        }
        double e = std::isfinite(y) ? std::fabs(y - x) : kInf;
        ++n;
        sum_sq += e * e;
        max_abs = std::max(max_abs, e);
        max_ref_abs = std::max(max_ref_abs, std::fabs(x));
        if (!have_range) {
            ref_min = ref_max = x;
            have_range = true;
        } else {
            ref_min = std::min(ref_min, x);
            ref_max = std::max(ref_max, x);
        }
    }
}

void ErrorStats::merge(const ErrorStats &o) {
    n += o.n;
    nonfinite_mismatch += o.nonfinite_mismatch;
    sum_sq += o.sum_sq;
    max_abs = std::max(max_abs, o.max_abs);
    max_ref_abs = std::max(max_ref_abs, o.max_ref_abs);
    if (o.have_range) {
        if (!have_range) {
            ref_min = o.ref_min;
            ref_max = o.ref_max;
            have_range = true;
        } else {
            ref_min = std::min(ref_min, o.ref_min);
            ref_max = std::max(ref_max, o.ref_max);
        }
    }
}

double ErrorStats::max_abs_err() const { return nonfinite_mismatch ? kInf : max_abs; }

double ErrorStats::max_rel_err() const {
    if (nonfinite_mismatch) return kInf;
    if (max_abs == 0) return 0;
    return max_ref_abs > 0 ? max_abs / max_ref_abs : kInf;
}

double ErrorStats::nrmse() const {
    if (nonfinite_mismatch) return kInf;
    if (n == 0 || sum_sq == 0) return 0;
    double range = ref_max - ref_min;
    double rmse = std::sqrt(sum_sq / double(n));
    return range > 0 ? rmse / range : kInf;
}

double ErrorStats::psnr_db() const {
    if (nonfinite_mismatch) return -kInf;
    if (n == 0) return kNaN;
    if (sum_sq == 0) return kInf;
    double range = ref_max - ref_min;
    double rmse = std::sqrt(sum_sq / double(n));
    return range > 0 ? 20.0 * std::log10(range / rmse) : -kInf;
}

void SizeStats::merge(const SizeStats &o) {
    raw_bytes += o.raw_bytes;
    wire_bytes += o.wire_bytes;
    chunks += o.chunks;
    raw_chunks += o.raw_chunks;
    encode_seconds += o.encode_seconds;
    decode_seconds += o.decode_seconds;
}

double SizeStats::ratio() const { return wire_bytes ? double(raw_bytes) / double(wire_bytes) : 0; }

double SizeStats::encode_gbps() const {
    return encode_seconds > 0 ? double(raw_bytes) / encode_seconds / 1e9 : 0;
}

double SizeStats::decode_gbps() const {
    return decode_seconds > 0 ? double(raw_bytes) / decode_seconds / 1e9 : 0;
}

}  // namespace terse::eval
