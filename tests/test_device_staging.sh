#!/bin/sh
# Device buffers staged through pinned host memory, without a GPU: the
# fake CUDA driver (tests/fake_cuda, built as fake_cuda/.libs/libcuda.so.1 here)
# is found by dlopen("libcuda.so.1") through LD_LIBRARY_PATH.  The unit
# test of the staging area, then MPI_Allreduce, reduce-scatter, allgather(v)
# and MPI_Iallreduce on "device" buffers on 2 and 3 ranks, with a lossless
# codec and with quantize:bits=8 (and then a 1 MiB allreduce timed on host
# and device buffers: tests/gpu/device-mpi-check.sh runs the same program
# on a real GPU), checking the TERSE_STATS process line
# counts every staged call and byte.  TERSE_DEVICE_CODECS=0: every call is
# staged whole, the path under test here (quantize's CUDA kernels need a
# real GPU; the device codec path is test_device_engine.sh's).  Skipped (77)
# in a build without CUDA.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
if [ ! -e fake_cuda/.libs/libcuda.so.1 ] || [ ! -x ./test_device_staging_mpi ]; then
    echo "SKIP: built without CUDA (the fake driver and the staging tests need the toolkit's headers)"
    exit 77
fi
LD_LIBRARY_PATH="$PWD/fake_cuda/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
# Open MPI passes LD_LIBRARY_PATH to local ranks; -x makes it explicit.
MPIRUN_FLAGS="$MPIRUN_FLAGS -x LD_LIBRARY_PATH"

if [ -x ./test_device_staging ]; then
    ./test_device_staging || fail "unit test of the staging area"
else
    echo "(no GoogleTest: the unit test of the staging area is not built)"
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=
for np in 2 3; do
    # mib=1: one large allreduce, checked and timed host against device
    # buffers, as the prepared device check does at up to 64 MiB on a GPU.
    for mode in "lossless none" "quantize8 quantize:bits=8 mib=1" "lossless none thread"; do
        set -- $mode
        prog_mode=$1 codec=$2 thread=${3:-}
        echo "== np=$np $prog_mode ($codec) $thread"
        if ! TERSE_DEVICE_CODECS=0 TERSE_CODEC=$codec TERSE_MIN_BYTES=4096 TERSE_FEEDBACK=off TERSE_STATS=1 TERSE_LOG=debug \
            run_np "$np" ./test_device_staging_mpi "$prog_mode" $thread >"$out" 2>&1; then
            tail -30 "$out"
            failed="$failed np=$np/$prog_mode$thread"
            continue
        fi
        grep -q "MPI library is not CUDA-aware" "$out" || { failed="$failed np=$np/$prog_mode$thread(log)"; echo "no CUDA-awareness line in the log"; }
        want=$(sed -n 's/^staged calls \([0-9]*\) bytes \([0-9]*\)$/device_staged=\1 device_staged_bytes=\2/p' "$out")
        line=$(grep "terse stats: process rank=0 " "$out")
        grep "^timing " "$out"
        echo "   $want | $line"
        case "$line" in
        *" $want"*) ;;
        *) failed="$failed np=$np/$prog_mode$thread(stats)"; echo "the TERSE_STATS line does not count '$want'" ;;
        esac
    done
done
[ -z "$failed" ] || fail "these runs failed:$failed"
echo "device staging checks passed"
