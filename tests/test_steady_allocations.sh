#!/bin/sh
# Steady-state intercepted calls allocate nothing (operator new), for every
# schedule, lossless and lossy, on 2 and 3 ranks.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0
export TEST_TIMEOUT=${TEST_TIMEOUT:-90}
CALLS=${STEADY_CALLS:-1000}

check() {
    echo "== $*"
    run_np "$@" || fail "$*"
}
for np in 2 3; do
    TERSE_ALGORITHM=ring check $np ./test_steady_allocations $CALLS 65536
    TERSE_ALGORITHM=recursive_doubling check $np ./test_steady_allocations $CALLS 4096 double
    TERSE_CODEC=quantize:bits=8 TERSE_ALGORITHM=ring check $np ./test_steady_allocations $CALLS 65536
    TERSE_CODEC=topk:ratio=0.05 check $np ./test_steady_allocations 200 65536
    TERSE_CODEC=quantize:bits=8 TERSE_VERIFY=1 check $np ./test_steady_allocations 200 65536
done
# Small chunks: many messages per call.
TERSE_CHUNK_BYTES=4096 TERSE_PIPELINE_DEPTH=2 check 3 ./test_steady_allocations 200 65536
echo "no steady-state allocations"
