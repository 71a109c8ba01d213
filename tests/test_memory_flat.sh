#!/bin/sh
# Memory held flat (test_memory_flat.c): eligible 1 MiB allreduces on one
# communicator, then communicator dup / allreduce / free rounds, on 2 ranks;
# RSS must stay within the program's slack and a steady stream of calls
# must not fault its buffers in again.  Short counts here; the full counts
# of perf/README.md:
#   TERSE_MEMORY_CALLS=100000 TERSE_MEMORY_ROUNDS=10000 make -C build/tests check TESTS=test_memory_flat.sh
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0
calls=${TERSE_MEMORY_CALLS:-1000}
rounds=${TERSE_MEMORY_ROUNDS:-400}
# Full counts take minutes; a hang still fails.
TEST_TIMEOUT=$(( 120 + calls / 50 + rounds / 10 ))
export TEST_TIMEOUT

echo "== lossless codec: $calls calls of 1 MiB, $rounds communicator rounds"
run_np 2 ./test_memory_flat "$calls" "$rounds" || fail "codec none"

# Lossy with error feedback: every call also copies its whole input (the
# residual added) and agrees on 128 KiB of block statistics, which must come
# from cached scratch as well.
echo "== quantize with error feedback: $((calls / 25)) calls of 16 MiB"
TERSE_CODEC=quantize:bits=8 TERSE_FEEDBACK=on run_np 2 ./test_memory_flat $((calls / 25)) 0 16777216 \
    || fail "quantize with feedback"
echo "memory held flat"
