#!/bin/sh
# The engine end to end (libterse intercepting MPI_Allreduce) for several
# communicator sizes and every algorithm, against PMPI_Allreduce.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0
export TEST_TIMEOUT=${TEST_TIMEOUT:-60}

for alg in ring recursive_doubling gather; do
    for np in 1 2 3 5 8; do
        big=
        case "$alg:$np" in ring:3|ring:8|recursive_doubling:5) big=big ;; esac
        echo "== exact, algorithm=$alg, np=$np $big"
        t0=$(date +%s)
        TERSE_ALGORITHM=$alg run_np $np ./test_engine_allreduce exact $big || fail "exact alg=$alg np=$np"
        echo "   ($(($(date +%s) - t0)) s)"
    done
done
echo "== exact, algorithm=auto, np=4, small chunks and a shallow pipeline"
TERSE_CHUNK_BYTES=4096 TERSE_PIPELINE_DEPTH=1 run_np 4 ./test_engine_allreduce exact || fail "small chunks"

for alg in ring recursive_doubling gather; do
    echo "== lossy quantize:bits=8, algorithm=$alg, np=4, TERSE_VERIFY=1"
    TERSE_CODEC=quantize:bits=8 TERSE_VERIFY=1 TERSE_ALGORITHM=$alg run_np 4 ./test_engine_allreduce lossy 8 \
        || fail "lossy alg=$alg"
done

for np in 2 3 5; do
    echo "== poison: rank 1 sends a corrupt frame, np=$np"
    out=$(TERSE_ALGORITHM=ring run_np $np ./test_engine_allreduce poison 2>&1); rc=$?
    echo "$out" | tail -3
    [ $rc -eq 0 ] || { echo "$out"; fail "poison np=$np exited $rc"; }
    echo "$out" | grep -q "failed on rank 2\|failed on rank 1\|corrupt" || fail "poison np=$np: no error naming the failure"
done
echo "all engine end-to-end checks passed"
