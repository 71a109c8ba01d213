// Error and size metrics of terse-eval, accumulated over many chunks and
// datasets.  Definitions (also in terse-eval(1)), with x the reference and
// y the decoded values, over the finite reference values:
//   max abs err  max |y - x|
//   max rel err  max |y - x| / max |x|     (relative to the largest magnitude,
//                                           as terse's TERSE_VERIFY reports it)
//   NRMSE        sqrt(mean (y - x)^2) / (max x - min x)
//   PSNR         20 log10((max x - min x) / sqrt(mean (y - x)^2)) dB
// A non-finite reference value must come back identical in kind (NaN,
// +Inf, -Inf); any other result there counts as a mismatch and makes the
// errors infinite.
#pragma once

#include <cstddef>
#include <cstdint>

namespace terse::eval {

struct ErrorStats {
    uint64_t n = 0;  // finite reference values compared
    uint64_t nonfinite_mismatch = 0;
    double sum_sq = 0;
    double max_abs = 0;
    double max_ref_abs = 0;
    double ref_min = 0, ref_max = 0;
    bool have_range = false;

    void add(const double *ref, const double *got, size_t count);
    void merge(const ErrorStats &o);

    double max_abs_err() const;
    double max_rel_err() const;
    double nrmse() const;
    double psnr_db() const;
};

struct SizeStats {
    uint64_t raw_bytes = 0;   // bytes of the elements
    uint64_t wire_bytes = 0;  // payloads plus terse's frame header per chunk
    uint64_t chunks = 0;
    uint64_t raw_chunks = 0;    // chunks the codec sent raw
    double encode_seconds = 0;  // best over repetitions, summed over chunks
    double decode_seconds = 0;

    void merge(const SizeStats &o);
    double ratio() const;
    double encode_gbps() const;
    double decode_gbps() const;
};

}  // namespace terse::eval
