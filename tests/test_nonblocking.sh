#!/bin/sh
# Non-blocking collectives (MPI_Iallreduce, MPI_Ireduce_scatter_block,
# MPI_Ireduce_scatter, MPI_Iallgather, MPI_Iallgatherv) on terse's engine:
# against PMPI on 1-5 ranks, lossless and quantize:bits=8; every completion
# call with the MPI library's requests mixed in; many outstanding; freed
# while active; MPI_Finalize with operations in flight; two threads under
# MPI_THREAD_MULTIPLE; failures reaching every rank; the per-kind
# statistics line; Fortran; mpi4py.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0

echo "== every call and completion call, lossless"
for np in 1 2 3 4 5 8; do run_np $np ./test_nonblocking exact || fail "non-blocking np=$np"; done

if have_codec quantize; then
    echo "== quantize:bits=8 within its contract"
    for np in 2 5; do
        TERSE_CODEC=quantize:bits=8 TERSE_FEEDBACK=off run_np $np ./test_nonblocking lossy || fail "lossy np=$np"
    done
fi

echo "== MPI_Finalize with operations in flight"
for np in 1 3; do run_np $np ./test_nonblocking finalize || fail "finalize np=$np"; done

echo "== a failure on one rank is an error of the completion call on every rank"
for np in 2 3; do run_np $np ./test_nonblocking fail || fail "failure np=$np"; done

echo "== two threads, two communicators (MPI_THREAD_MULTIPLE)"
run_np 3 ./test_nonblocking_threads; rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "test_nonblocking_threads exited $rc"

echo "== algorithm=two_level on 2 emulated nodes: non-blocking calls run flat"
TERSE_ALGORITHM=two_level timeout -k 10 ${TEST_TIMEOUT:-120} $MPIRUN $MPIRUN_FLAGS \
    -np 2 env TERSE_NODE_KEY=a ./test_nonblocking exact : -np 2 env TERSE_NODE_KEY=b ./test_nonblocking exact ||
    fail "two_level np=4"

echo "== TERSE_STATS names each kind"
out=$(TERSE_STATS=1 run_np 2 ./test_nonblocking exact 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "$out"; fail "stats run exited $rc"; }
line=$(echo "$out" | grep '^terse stats: comm=MPI_COMM_WORLD ')
echo "$line"
for k in allreduce iallreduce ireduce_scatter_block ireduce_scatter iallgather iallgatherv; do
    echo "$line" | grep -q " $k=[1-9][0-9]*/[0-9]*/[0-9]*" || fail "no '$k=calls/bytes_in/wire' in the stats line"
done

if [ -x ./test_fortran_nonblocking ]; then
    echo "== Fortran (use mpi): non-blocking calls, completion calls and the blocking decoupled calls are intercepted"
    out=$(TERSE_STATS=1 run_np 2 ./test_fortran_nonblocking 2>&1); rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "Fortran non-blocking exited $rc"
    echo "$out" | grep -q "^terse stats: comm=MPI_COMM_WORLD .* iallreduce=[1-9]" || fail "Fortran MPI_Iallreduce not run by terse"
    for k in reduce_scatter_block reduce_scatter allgather allgatherv; do
        echo "$out" | grep -q "^terse stats: comm=MPI_COMM_WORLD .* $k=[1-9]" || fail "Fortran blocking $k not run by terse"
    done
fi

echo "== mpi4py: comm.Iallreduce(...).Wait()"
if python3 -c 'import mpi4py, numpy' 2>/dev/null; then
    out=$(TERSE_STATS=1 run_np 2 -x LD_PRELOAD="$TERSE_LIB" python3 "$TERSE_SRCDIR/tests/nonblocking_mpi4py.py" 2>&1); rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "mpi4py Iallreduce exited $rc"
    echo "$out" | grep -q "^terse stats: comm=MPI_COMM_WORLD .* iallreduce=[1-9]" || fail "mpi4py Iallreduce not run by terse"
else
    echo "(mpi4py or numpy not installed: skipped)"
fi
exit 0
