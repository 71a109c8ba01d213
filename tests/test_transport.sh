#!/bin/sh
# Multi-rank tests of the UCX transport: 2 and 3 ranks, with UCX's default
# transports (shared memory here) and with TERSE_UCX_TLS=tcp (TCP loopback,
# what the benchmarks use), then with a multi-threaded worker.  Each run is bounded so a lost message fails
# instead of hanging make check.
prog=./test_transport
if [ ! -x "$prog" ]; then
    echo "test_transport.sh: $prog not built (GoogleTest missing?)"
    exit 77
fi
: "${MPIRUN:?MPIRUN not set (run through make check)}"

# Plain output in the log: mpirun gives ranks a pty, so gtest would colour it.
GTEST_COLOR=no
export GTEST_COLOR

status=0
run() {
    label=$1
    shift
    echo "== $label"
    if ! "$@"; then
        echo "FAILED: $label"
        status=1
    fi
}

for np in 2 3; do
    run "np=$np default transports" timeout 120 $MPIRUN $MPIRUN_FLAGS -np $np $prog
    run "np=$np TERSE_UCX_TLS=tcp" env TERSE_UCX_TLS=tcp timeout 120 $MPIRUN $MPIRUN_FLAGS -np $np $prog
done
# The rendezvous rule: a threshold the user sets is kept even over TCP alone.
run "np=2 TERSE_UCX_TLS=tcp TERSE_UCX_RNDV_THRESH=64k" env TERSE_UCX_TLS=tcp TERSE_UCX_RNDV_THRESH=64k \
    timeout 120 $MPIRUN $MPIRUN_FLAGS -np 2 $prog --gtest_filter='*Rendezvous*'
# MPI_THREAD_MULTIPLE: a multi-threaded worker shared by several threads.
run "np=3 --multi default transports" timeout 120 $MPIRUN $MPIRUN_FLAGS -np 3 $prog --multi
run "np=3 --multi TERSE_UCX_TLS=tcp" env TERSE_UCX_TLS=tcp timeout 120 $MPIRUN $MPIRUN_FLAGS -np 3 $prog --multi
exit $status
