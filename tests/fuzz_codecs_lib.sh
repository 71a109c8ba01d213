# Sourced by fuzz_codecs_*.sh: run_fuzzers MAX_LEN WHY_UNBUILT TARGET...
# runs each libFuzzer TARGET in the build directory for TERSE_FUZZ_SECONDS
# (default 5) from an empty corpus, with inputs of at most MAX_LEN bytes.
# A target that is not built is skipped (WHY_UNBUILT says why it may not
# be); a finding fails the test; none built at all: exit 77 (skip).
run_fuzzers() {
    max_len=$1
    why_unbuilt=$2
    shift 2
    ran=0
    for f in "$@"; do
        [ -x "./$f" ] || { echo "$f not built ($why_unbuilt): skipped"; continue; }
        corpus=$(mktemp -d) || exit 1
        ./$f -seed=1 -max_total_time="${TERSE_FUZZ_SECONDS:-5}" -max_len="$max_len" -rss_limit_mb=1024 \
            -artifact_prefix=$f- -print_final_stats=1 "$corpus"
        rc=$?
        rm -rf "$corpus"
        [ $rc -eq 0 ] || { echo "$f: libFuzzer found a problem (exit $rc)"; exit 1; }
        ran=$((ran + 1))
    done
    [ $ran -gt 0 ] || exit 77
}
