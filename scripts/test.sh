#!/bin/sh
# The whole test suite from a clean clone: install packages, build, make check.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
"$top/scripts/build.sh"
cd "$top/build"
if ! make -j"$(nproc)" check; then
    # Show the logs of failed tests so CI output explains the failure.
    for t in $(find . -name '*.trs' -exec grep -l ':test-result: FAIL\|:test-result: ERROR' {} +); do
        echo "==== ${t%.trs}.log"; tail -n 60 "${t%.trs}.log"
    done
    exit 1
fi
# Summary line that CI reads.
pass=$(find . -name '*.trs' -exec grep -h ':test-result: PASS' {} + | wc -l)
skip=$(find . -name '*.trs' -exec grep -h ':test-result: SKIP' {} + | wc -l)
echo "$pass passed, 0 failed, $skip skipped"
