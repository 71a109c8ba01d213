#!/bin/sh
# Interception as users run it: linked (-lterse), LD_PRELOAD, terse-run,
# Fortran, threads, communicator life cycle and configuration agreement.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0

echo "== threads (MPI_THREAD_MULTIPLE, two communicators)"
run_np 3 ./test_threads; rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "test_threads exited $rc"

echo "== communicator create/free loop"
for np in 2 3; do run_np $np ./test_comm_lifecycle || fail "lifecycle np=$np"; done

echo "== MPI_Reduce_scatter_block and MPI_Allgather on the engine"
for np in 1 2 3 5; do run_np $np ./test_reduce_scatter_allgather || fail "reduce_scatter/allgather np=$np"; done

echo "== MPI_Reduce_scatter and MPI_Allgatherv (unequal, zero counts) on the engine"
for np in 1 2 3 4 5 8; do run_np $np ./test_reduce_scatter_allgatherv exact || fail "reduce_scatter/allgatherv np=$np"; done
if have_codec quantize; then
    for np in 2 5; do
        TERSE_CODEC=quantize:bits=8 TERSE_FEEDBACK=off run_np $np ./test_reduce_scatter_allgatherv lossy \
            || fail "reduce_scatter/allgatherv quantize:bits=8 np=$np"
    done
fi

echo "== MPI_Info hints, dup inheritance, terse_comm_configure"
run_np 2 ./test_config_agreement hints || fail "hints"

echo "== ranks that disagree all get an error"
out=$(TEST_TIMEOUT=60 timeout -k 10 60 $MPIRUN $MPIRUN_FLAGS -np 1 -x TERSE_STATS=all -x TERSE_MIN_BYTES=4096 ./test_config_agreement mismatch : \
      -np 2 -x TERSE_STATS=all -x TERSE_MIN_BYTES=8192 ./test_config_agreement mismatch 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "mismatch run exited $rc"
# Two failing calls (between the two thresholds, and above both), three ranks.
[ $(echo "$out" | grep -c "rank 0 has 'min_bytes=4096' but rank 1 has 'min_bytes=8192'") -eq 6 ] || fail "mismatch message does not name the setting"
[ $(echo "$out" | grep -c "^terse stats: process rank=[012] floor=4096 ") -eq 3 ] || fail "the ranks do not share the lower floor"

echo "== calls below the floor pass without a look at their communicator"
for np in 2 3; do
    out=$(TERSE_MIN_BYTES=4096 TERSE_STATS=1 run_np $np ./test_pass_through 2>&1); rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "pass-through np=$np exited $rc"
    want=$(echo "$out" | sed -n 's/^expected passed_straight=//p')
    [ -n "$want" ] || fail "pass-through np=$np printed no expected count"
    echo "$out" | grep -q "^terse stats: process rank=0 floor=4096 passed_straight=$want\$" \
        || fail "pass-through np=$np: the process line does not count $want straight passes"
done

echo "== the floor is the smallest min_bytes of the environment and every config file section, on any rank"
cfg=$(mktemp /tmp/terse_floor.XXXXXX) || fail "mktemp"
printf '[grad_*]\nmin_bytes = 1K\n[MPI_COMM_WORLD]\ncodec = none\n' > "$cfg"
out=$(TERSE_CONFIG="$cfg" TERSE_MIN_BYTES=4096 TERSE_STATS=all run_np 2 -x LD_PRELOAD="$TERSE_LIB" ./test_plain_allreduce 2>&1); rc=$?
rm -f "$cfg"
[ $rc -eq 0 ] || { echo "$out"; fail "config file floor run exited $rc"; }
[ "$(echo "$out" | grep -c '^terse stats: process rank=[01] floor=1024 ')" -eq 2 ] || { echo "$out"; fail "floor with a config file"; }

echo "== misspelled variable stops the job with a suggestion"
out=$(TERSE_CODECC=none run_np 2 ./test_threads 2>&1); rc=$?
[ $rc -ne 0 ] || fail "misspelled TERSE_CODECC accepted"
echo "$out" | grep -q "did you mean 'TERSE_CODEC'" || { echo "$out"; fail "no suggestion for TERSE_CODECC"; }

echo "== unknown codec stops the job naming the available ones"
out=$(TERSE_CODEC=quantise run_np 2 ./test_threads 2>&1); rc=$?
[ $rc -ne 0 ] || fail "unknown codec accepted"
echo "$out" | grep -q "unknown codec 'quantise'" || { echo "$out"; fail "unknown codec message"; }

if [ -x ./test_fortran_allreduce ]; then
    echo "== Fortran (use mpi) is intercepted, MPI_IN_PLACE included"
    out=$(TERSE_STATS=1 run_np 3 ./test_fortran_allreduce 2>&1) || { echo "$out"; fail "fortran"; }
    echo "$out"
    echo "$out" | grep "terse stats: comm=MPI_COMM_WORLD" | grep -q "intercepted=2 " || fail "Fortran calls not intercepted"
fi

if [ -x ./test_fortran_f08 ]; then
    echo "== Fortran (use mpi_f08) is intercepted, ierror left out included"
    out=$(TERSE_STATS=1 run_np 3 ./test_fortran_f08 2>&1) || { echo "$out"; fail "fortran f08"; }
    echo "$out"
    line=$(echo "$out" | grep "terse stats: comm=MPI_COMM_WORLD" | head -n 1)
    for k in allreduce iallreduce iallgather reduce_scatter_block allgather; do
        echo "$line" | grep -q " $k=[1-9]" || fail "Fortran f08 $k not run by terse"
    done
fi

echo "== LD_PRELOAD and terse-run on a program not linked with terse"
out=$(TERSE_STATS=1 run_np 2 -x LD_PRELOAD="$TERSE_LIB" ./test_plain_allreduce 2>&1) || { echo "$out"; fail "preload"; }
echo "$out" | grep "comm=MPI_COMM_WORLD" | grep -q "intercepted=1 " || { echo "$out"; fail "not intercepted under LD_PRELOAD"; }
out=$(TERSE_STATS=1 run_np 2 "$TERSE_BUILDDIR/mpi-wrappers/terse-run" ./test_plain_allreduce 2>&1) || { echo "$out"; fail "terse-run"; }
echo "$out" | grep "comm=MPI_COMM_WORLD" | grep -q "intercepted=1 " || { echo "$out"; fail "not intercepted under terse-run"; }
out=$(TERSE_STATS=1 run_np 2 ./test_plain_allreduce 2>&1) || fail "plain"
echo "$out" | grep -q "terse stats" && fail "plain program printed terse stats without terse"
echo "all wrapper checks passed"
