#!/bin/sh
# Every codec end to end (libterse intercepting MPI_Allreduce) on 2, 3, 4, 5
# and 8 ranks: each codec's accuracy contract against exact sums, identical
# bits, NaN/Inf propagation, inputs at the codecs' bounds and error feedback
# (see test_codec_allreduce.cc).  Every run is made; the failures are listed
# at the end.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TEST_TIMEOUT=${TEST_TIMEOUT:-120}
prog=./test_codec_allreduce
failed=

run() {
    np=$1; shift
    echo "== np=$np $*"
    t0=$(date +%s)
    run_np "$np" $prog "$@" || failed="$failed
  np=$np $*"
    echo "   ($(($(date +%s) - t0)) s)"
}

run 2 --algorithm ring contract nonfinite feedback
run 2 --algorithm recursive_doubling contract
for alg in ring recursive_doubling gather; do
    run 3 --algorithm $alg contract nonfinite
done
run 3 --algorithm ring feedback edges
run 4 --algorithm ring contract
run 4 --algorithm recursive_doubling contract nonfinite
for alg in ring recursive_doubling gather; do
    run 5 --algorithm $alg --count 60001 contract nonfinite
done
run 5 --algorithm gather --count 60001 edges
run 5 --algorithm ring --count 60001 feedback
run 8 --algorithm ring --count 60001 contract nonfinite feedback
run 8 --algorithm recursive_doubling --count 60001 edges contract
run 8 --algorithm gather --count 60001 contract nonfinite

# Configured only by the environment, on MPI_COMM_WORLD.
for codec in errbound:rel=1e-3 topk:ratio=0.02 quantize:bits=4; do
    echo "== np=4 TERSE_CODEC=$codec (environment)"
    TERSE_CODEC=$codec TERSE_MIN_BYTES=0 TERSE_CHUNK_BYTES=32K TERSE_ALGORITHM=ring TERSE_FEEDBACK=off \
        run_np 4 $prog world || failed="$failed
  np=4 TERSE_CODEC=$codec world"
done
[ -z "$failed" ] || fail "these runs failed (details above):$failed"
echo "all codec end-to-end checks passed"
