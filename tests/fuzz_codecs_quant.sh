#!/bin/sh
# Short libFuzzer runs over the quantize and errbound decoders
# (fuzz_quantize_decode.cc, fuzz_errbound_decode.cc), TERSE_FUZZ_SECONDS each
# (default 5).  Longer on demand:
#   TERSE_FUZZ_SECONDS=600 make check TESTS=fuzz_codecs_quant.sh
# A finding is written to fuzz_<codec>_decode-crash-* in the build directory;
# reproduce with ./fuzz_<codec>_decode <that file>.
ran=0
for f in fuzz_quantize_decode fuzz_errbound_decode; do
    [ -x "./$f" ] || { echo "$f not built (no clang++): skipped"; continue; }
    corpus=$(mktemp -d) || exit 1
    ./$f -seed=1 -max_total_time="${TERSE_FUZZ_SECONDS:-5}" -max_len=8192 -rss_limit_mb=1024 \
        -artifact_prefix=$f- -print_final_stats=1 "$corpus"
    rc=$?
    rm -rf "$corpus"
    [ $rc -eq 0 ] || { echo "$f: libFuzzer found a problem (exit $rc)"; exit 1; }
    ran=$((ran + 1))
done
[ $ran -gt 0 ] || exit 77
