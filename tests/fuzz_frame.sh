#!/bin/sh
# Short libFuzzer run over frame_open + the none decoder (see fuzz_frame.cc).
# A finding is written to fuzz_frame-crash-* in the build directory;
# reproduce with ./fuzz_frame <that file>.
[ -x ./fuzz_frame ] || { echo "fuzz_frame not built (no clang++)"; exit 77; }
corpus=$(mktemp -d) || exit 1
trap 'rm -rf "$corpus"' EXIT
./fuzz_frame -seed=1 -max_total_time="${TERSE_FUZZ_SECONDS:-10}" -max_len=2048 \
    -artifact_prefix=fuzz_frame- -print_final_stats=1 "$corpus"
