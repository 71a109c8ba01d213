#!/bin/sh
# terse-config-check on good and bad configurations: exit status (0 valid,
# 1 invalid, 2 usage) and the text of its messages.
set -u

tool="${TERSE_BUILDDIR:-..}/tools/terse-config-check"
if [ ! -x "$tool" ]; then
    echo "FAIL: $tool not built (build tools/ before tests/)"
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/terse_config_check.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# Start from a clean terse environment; keep only the plugin path the test
# harness exported (the harness's own TERSE_LIB etc. stay too: the tool must
# accept them like the library does).
for v in $(env | sed -n 's/^\(TERSE_[A-Z0-9_]*\)=.*/\1/p'); do
    case $v in
        TERSE_PLUGIN_PATH|TERSE_LIB|TERSE_SRCDIR|TERSE_BUILDDIR|TERSE_SHARED_DATA) ;;
        *) unset "$v" ;;
    esac
done

failures=0
n=0
# run NAME EXPECTED_RC [TEXT...] -- COMMAND...: every TEXT must appear in stdout+stderr.
run() {
    name=$1 want=$2
    shift 2
    texts=""
    while [ "$1" != "--" ]; do
        texts="$texts
$1"
        shift
    done
    shift
    n=$((n + 1))
    out=$("$@" 2>&1)
    rc=$?
    ok=1
    [ "$rc" -eq "$want" ] || { echo "FAIL [$name]: exit $rc, expected $want"; ok=0; }
    old_ifs=$IFS
    IFS='
'
    for t in $texts; do
        case $out in
            *"$t"*) ;;
            *) echo "FAIL [$name]: missing '$t'"; ok=0 ;;
        esac
    done
    IFS=$old_ifs
    if [ $ok -eq 0 ]; then
        echo "---- output of: $*"
        echo "$out"
        echo "----"
        failures=$((failures + 1))
    else
        echo "ok [$name]"
    fi
}

# ---------------------------------------------------------------- usage
run help 0 "usage: terse-config-check" "--config FILE" "TERSE_CODEC" "TERSE_UCX_*" -- "$tool" --help
run unknown-option 2 "unknown argument '--bogus'" "usage:" -- "$tool" --bogus
run missing-argument 2 "option --config needs an argument" -- "$tool" --config
run empty-comm 2 "option --comm needs a non-empty argument" -- "$tool" --comm=

# ---------------------------------------------------------------- environment
run defaults 0 "MPI_COMM_WORLD: enable=1 codec=none min_bytes=65536 chunk_bytes=1048576 pipeline_depth=4 algorithm=auto feedback=default feedback_key=address verify=0" \
    -- "$tool"
run env-values 0 "MPI_COMM_WORLD: enable=1 codec=none min_bytes=1024 chunk_bytes=262144 pipeline_depth=8 algorithm=ring feedback=0 feedback_key=address verify=1" \
    -- env TERSE_CODEC=none TERSE_MIN_BYTES=1K TERSE_CHUNK_BYTES=256KiB TERSE_PIPELINE_DEPTH=8 \
       TERSE_ALGORITHM=ring TERSE_FEEDBACK=off TERSE_VERIFY=on TERSE_STATS=all TERSE_LOG=debug "$tool"
run ucx-variables 0 "MPI_COMM_WORLD: enable=1" -- env TERSE_UCX_TLS=tcp TERSE_UCX_NET_DEVICES=lo "$tool"
run misspelled-variable 1 "environment: unknown variable 'TERSE_CODECS'" "did you mean 'TERSE_CODEC'?" \
    -- env TERSE_CODECS=none "$tool"
run misspelled-variable-2 1 "TERSE_CHUNK_SIZE" "did you mean 'TERSE_CHUNK_BYTES'?" \
    -- env TERSE_CHUNK_SIZE=1M "$tool"
run bad-env-value 1 "TERSE_PIPELINE_DEPTH: invalid value '0' for pipeline_depth (accepted: an integer 1..64)" \
    -- env TERSE_PIPELINE_DEPTH=0 "$tool"
run bad-env-size 1 "TERSE_CHUNK_BYTES: invalid value '2K' for chunk_bytes" "4K..1G" \
    -- env TERSE_CHUNK_BYTES=2K "$tool"
run bad-env-grammar 1 "TERSE_CODEC: invalid value 'none:' for codec" "codec[:key=value[,key=value...]]" \
    -- env TERSE_CODEC=none: "$tool"
run bad-stats 1 "TERSE_STATS: invalid value 'maybe'" "all" -- env TERSE_STATS=maybe "$tool"

# ---------------------------------------------------------------- codecs, through the plugins
run unknown-codec 1 "environment TERSE_CODEC (codec=nosuchcodec)" "unknown codec 'nosuchcodec'" "none" \
    -- env TERSE_CODEC=nosuchcodec "$tool"
run bad-codec-param 1 "codec=none:level=3" "level" -- env TERSE_CODEC=none:level=3 "$tool"
run feedback-param 0 "codec=none min_bytes=65536 chunk_bytes=1048576 pipeline_depth=4 algorithm=auto feedback=1" \
    -- env TERSE_CODEC=none:feedback=on "$tool"
# A disabled communicator loads no codec, in the library as here.
run disabled-skips-codec 0 "enable=0 codec=nosuchcodec" -- env TERSE_ENABLE=0 TERSE_CODEC=nosuchcodec "$tool"

# ---------------------------------------------------------------- config file
cat > "$tmp/good.conf" <<'CONF'
# every communicator
[*]
min_bytes = 32K        # inline comment
; other comment style

[MPI_COMM_WORLD]
pipeline_depth = 2

[solver_*]
algorithm = recursive_doubling

[halo]
verify = yes
CONF
run file-good 0 \
    "MPI_COMM_WORLD: enable=1 codec=none min_bytes=32768 chunk_bytes=1048576 pipeline_depth=2 algorithm=auto" \
    "halo: enable=1 codec=none min_bytes=32768 chunk_bytes=1048576 pipeline_depth=4 algorithm=auto feedback=default feedback_key=address verify=1" \
    -- "$tool" --config "$tmp/good.conf"
run file-from-env 0 "halo: enable=1" -- env TERSE_CONFIG="$tmp/good.conf" "$tool"
run file-comm-glob 0 "solver_7: enable=1 codec=none min_bytes=32768 chunk_bytes=1048576 pipeline_depth=4 algorithm=recursive_doubling" \
    -- "$tool" --config "$tmp/good.conf" --comm solver_7
run file-env-below-file 0 "MPI_COMM_WORLD: enable=1 codec=none min_bytes=32768 chunk_bytes=1048576 pipeline_depth=2 algorithm=ring" \
    -- env TERSE_PIPELINE_DEPTH=9 TERSE_ALGORITHM=ring "$tool" --config="$tmp/good.conf"

printf '[*]\nmin_bytes = 1K\npipeline_depth = 65\n' > "$tmp/bad_value.conf"
run file-bad-value 1 "bad_value.conf:3: invalid value '65' for pipeline_depth (accepted: an integer 1..64)" \
    -- "$tool" --config "$tmp/bad_value.conf"
printf '[*]\n\ncodex = none\n' > "$tmp/bad_key.conf"
run file-bad-key 1 "bad_key.conf:3: unknown key 'codex'" "did you mean 'codec'?" \
    -- "$tool" --config "$tmp/bad_key.conf"
printf 'codec = none\n[*]\n' > "$tmp/no_section.conf"
run file-no-section 1 "no_section.conf:1: key 'codec' is outside any section" \
    -- "$tool" --config "$tmp/no_section.conf"
printf '[*]\ncodec none\n' > "$tmp/bad_line.conf"
run file-bad-line 1 "bad_line.conf:2: 'codec none' is neither a section header nor a setting" \
    -- "$tool" --config "$tmp/bad_line.conf"
# A section no communicator of this check matches is still checked, codec included.
printf '[*]\nmin_bytes = 0\n[later_*]\ncodec = nosuchcodec:x=1\n' > "$tmp/bad_codec.conf"
run file-unknown-codec 1 "section [later_*] (codec=nosuchcodec:x=1)" "unknown codec 'nosuchcodec'" \
    -- "$tool" --config "$tmp/bad_codec.conf"
run file-missing 1 "config file $tmp/missing.conf: cannot open: No such file or directory" \
    -- "$tool" --config "$tmp/missing.conf"
run file-missing-env 1 "cannot open: No such file or directory" -- env TERSE_CONFIG="$tmp/missing.conf" "$tool"

printf '# comment\nallreduce:0-64K:@mpi\nallreduce:64K-inf:@ring:chunk=256K:depth=2\n' > "$tmp/good.tune"
run tune-good 0 "allreduce:64K-inf:@ring:chunk=256K:depth=2" -- "$tool" --tune "$tmp/good.tune"
printf 'allreduce:0-64K:@mpi\nallreduce:64K-inf:@rign\n' > "$tmp/bad.tune"
run tune-bad-schedule 1 "bad.tune:2:20: unknown schedule 'rign'; did you mean 'ring'?" -- "$tool" --tune "$tmp/bad.tune"
run tune-from-env 1 "bad.tune:2:20: unknown schedule 'rign'" -- env TERSE_TUNE_FILE="$tmp/bad.tune" "$tool"
printf '[*]\ntune_file = %s\n' "$tmp/bad.tune" > "$tmp/tune.conf"
run tune-from-file 1 "bad.tune:2:20" -- "$tool" --config "$tmp/tune.conf"

echo "$((n - failures)) of $n checks passed"
[ $failures -eq 0 ]
