#!/bin/sh
# No rank left waiting: a failure injected on one rank at every step of
# every schedule (start, begin, first/middle/last hop of reduce-scatter and
# allgather), lossless and lossy, on 2, 3 and 5 ranks under
# MPI_ERRORS_RETURN: every rank gets an error that explains itself and the
# next call works.  A hang runs into the time limit and fails the test.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0
export TEST_TIMEOUT=${TEST_TIMEOUT:-60}
log=test_engine_failures.log
: > $log
for codec in none quantize:bits=8; do
    for np in 2 3 5; do
        echo "== $codec, np=$np"
        t0=$(date +%s)
        rc=0
        run_np $np ./test_engine_failures $codec > $log.out 2>&1 || rc=$?
        if [ $rc -ne 0 ]; then
            tail -40 $log.out
            fail "codec=$codec np=$np: exit status $rc (124: it hung and was stopped)"
        fi
        grep '^failures:' $log.out
        cat $log.out >> $log
        echo "   ($(($(date +%s) - t0)) s)"
    done
done
rm -f $log.out
echo "all failure checks passed"
