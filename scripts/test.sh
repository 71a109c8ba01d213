#!/bin/sh
# The whole test suite from a clean clone: install packages, configure, then
# make distcheck, which
#  - makes the tarball and checks that every file git tracks is in it
#    (scripts/check-dist-files.sh),
#  - builds the tarball's sources, read-only, in a folder of their own and
#    runs make check there (the suite, once),
#  - installs, runs make installcheck (scripts/installcheck.sh), uninstalls
#    and checks that nothing is left, and cleans.
# On failure it prints the logs of the failed tests (left in the distcheck
# build folder); on success the summary line CI reads.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
"$top/scripts/configure.sh"
cd "$top/build"
out=$(mktemp)
trap 'rm -f "$out" "$out.rc"' EXIT
{ rc=0; make -j"$(nproc)" distcheck || rc=$?; echo "$rc" >"$out.rc"; } 2>&1 | tee "$out"
rc=$(cat "$out.rc")

# The harness's totals per folder ("# PASS:  25"), colours stripped.
total() {
    sed 's/\x1b\[[0-9;]*m//g' "$out" | awk -v k="# $1:" 'index($0, k) == 1 { s += $NF } END { print s + 0 }'
}
pass=$(total PASS)
skip=$(total SKIP)
failed=$(($(total FAIL) + $(total ERROR) + $(total XPASS)))
if [ "$rc" != 0 ]; then
    # Show the logs of failed tests so CI output explains the failure.
    for t in $(find . -path './terse-*/_build/*' -name '*.trs' \
                 -exec grep -l ':test-result: FAIL\|:test-result: ERROR' {} +); do
        echo "==== ${t%.trs}.log"; tail -n 60 "${t%.trs}.log"
    done
    [ "$pass$failed$skip" = 000 ] || echo "$pass passed, $failed failed, $skip skipped"
    echo "test.sh: make distcheck failed (exit $rc)"
    exit 1
fi
echo "$pass passed, 0 failed, $skip skipped"
