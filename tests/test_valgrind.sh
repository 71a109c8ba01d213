#!/bin/sh
# A multi-rank run under valgrind must be clean of memory errors and
# definite leaks whose stack passes through terse (libterse or a codec
# plugin).  Open MPI and PMIx leak a little on their own; those records are
# not terse's and are ignored by the filter below.
. "${srcdir:-.}/mpirun_helpers.sh"
command -v valgrind >/dev/null 2>&1 || { echo "SKIP: valgrind not installed"; exit 77; }
set -u
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
export TERSE_MIN_BYTES=0
TEST_TIMEOUT=600 run_np 2 valgrind --leak-check=full --show-leak-kinds=definite \
    --errors-for-leak-kinds=definite --num-callers=30 --log-file="$logdir/vg.%p.log" \
    ./test_comm_lifecycle 12 || fail "test_comm_lifecycle under valgrind exited $?"
ls "$logdir"/vg.*.log >/dev/null 2>&1 || fail "valgrind wrote no logs"
# Records are separated by "==PID== " lines; keep those naming terse code.
bad=$(awk '
    /^==[0-9]+== *$/ { if (rec ~ /(libterse|terse_[a-z0-9_]+\.so|terse::)/) print rec; rec = ""; next }
    { rec = rec "\n" $0 }
    END { if (rec ~ /(libterse|terse_[a-z0-9_]+\.so|terse::)/) print rec }
' "$logdir"/vg.*.log | grep -v "ERROR SUMMARY\|HEAP SUMMARY\|LEAK SUMMARY\|Command:\|Parent PID")
if [ -n "$(echo "$bad" | grep -E 'Invalid|uninitialised|definitely lost|Mismatched|overlap|free')" ]; then
    echo "$bad"
    fail "valgrind found errors in terse"
fi
grep -h "ERROR SUMMARY" "$logdir"/vg.*.log
echo "valgrind: no errors or definite leaks from terse"
