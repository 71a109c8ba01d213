#!/bin/sh
# The node reduce-scatter of the two-level schedule (test_node_reduce_scatter.cc)
# against the MPI library's, on 1 to 4 ranks over shared memory.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
for np in 1 2 3 4; do
    echo "== np=$np"
    run_np $np ./test_node_reduce_scatter || fail "np=$np"
done
