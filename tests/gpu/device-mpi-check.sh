#!/bin/sh
# The multi-rank block of the prepared device check (tests/gpu/device-check.sh
# runs it last): MPI_Allreduce, reduce-scatter, allgather(v) and
# non-blocking calls on device buffers of ranks sharing the machine's GPU,
# through terse, on 2 and 4 ranks, with the lossless codec (none) and
# quantize:bits=8, then MPI_Allreduce of 1, 8 and 64 MiB checked and timed
# on host against device buffers (the staging overhead).  Results are
# checked against PMPI on host copies (bitwise where lossless, within the
# codec's bound where not), and the TERSE_STATS process line of rank 0 must
# count every staged call and byte the program made; those runs set
# TERSE_DEVICE_CODECS=0 (every call staged whole).  Then the device codec
# path (runtime/device_codecs.h): test_device_engine_mpi with quantize:bits=8
# and its CUDA kernels (devsim on the fake driver) on 2 and 4 ranks, TERSE_ALGORITHM=ring, the same
# large sizes: results bitwise equal to the host path, every blocking
# allreduce counted device_encoded, payload bytes under half of what whole
# staging copies; its stats lines and timings are printed.
#
#   sh tests/gpu/device-mpi-check.sh [SECONDS]
#
# SECONDS (default 300): the time all runs together may take; each run gets
# its share, and one that runs past it fails the block.
# The MPI, in this order:
#   - the folder of tests/gpu/make-device-bundle.sh (TERSE_DEVICE_BUNDLE,
#     default tests/gpu/bundle): its Open MPI, libterse.so, plugins and
#     test program, relocated by its env.sh (which runs them on the
#     folder's own glibc where the machine's is too old;
#     TERSE_BUNDLE_GLIBC=system|bundled forces either);
#   - else a system mpirun with this tree's build (BUILD_DIR, default
#     ./build, configured with CUDA and built with make check's programs);
#   - else it says that neither is there and exits 77 (skipped).
# TERSE_DEVICE_CHECK_MIB: the large sizes (default 1,8,64).
# TERSE_DEVICE_CHECK_FAKE_DRIVER: for testing this script on a machine
# without a GPU only: the fake driver's libcuda.so.1 (build/tests/fake_cuda/
# .libs/libcuda.so.1), found by the ranks ahead of any real one; the runs
# must then report the fake driver, and the timings time host copies.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
budget=${1:-300}
mib=${TERSE_DEVICE_CHECK_MIB:-1,8,64}
bundle=${TERSE_DEVICE_BUNDLE:-$top/tests/gpu/bundle}
build=${BUILD_DIR:-$top/build}
say() { echo "device-mpi-check: $*"; }

if [ -n "${TERSE_DEVICE_CHECK_FAKE_DRIVER:-}" ]; then
    [ -f "$TERSE_DEVICE_CHECK_FAKE_DRIVER" ] ||
        { say "FAIL: TERSE_DEVICE_CHECK_FAKE_DRIVER=$TERSE_DEVICE_CHECK_FAKE_DRIVER is not a file"; exit 1; }
    fake_dir=$(cd "$(dirname "$TERSE_DEVICE_CHECK_FAKE_DRIVER")" && pwd)
    [ -e "$fake_dir/libcuda.so.1" ] || { say "FAIL: no libcuda.so.1 in $fake_dir (the fake driver's folder)"; exit 1; }
    LD_LIBRARY_PATH="$fake_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    want_driver="driver: the fake CUDA driver"
    # quantize's kernels need a GPU: the device codec block runs the devsim
    # test codec (tests/plugins/devsim_codec.cc) on the fake driver.
    device_codec=devsim
    say "THE FAKE CUDA DRIVER $fake_dir/libcuda.so.1 (TERSE_DEVICE_CHECK_FAKE_DRIVER): no GPU is used"
else
    want_driver="driver: CUDA,"
    device_codec=quantize:bits=8
fi

if [ -f "$bundle/env.sh" ]; then
    BUNDLE=$(cd "$bundle" && pwd)
    # shellcheck disable=SC1091
    . "$BUNDLE/env.sh" || { say "FAIL: the MPI of $BUNDLE cannot run here (above)"; exit 1; }
    run=$TERSE_BUNDLE_RUN
    mpirun="$BUNDLE/usr/bin/mpirun"
    prog="$BUNDLE/bin/test_device_staging_mpi"
    eprog="$BUNDLE/bin/test_device_engine_mpi"
    say "the MPI of $BUNDLE ($(sed -n 's/^built_with //p' "$BUNDLE/REQUIRES"))"
elif command -v mpirun >/dev/null 2>&1 && [ -x "$build/tests/test_device_staging_mpi" ]; then
    run=
    mpirun=$(command -v mpirun)
    prog="$build/tests/test_device_staging_mpi"
    eprog="$build/tests/test_device_engine_mpi"
    TERSE_PLUGIN_PATH=$(printf '%s:' "$build"/plugins/*/.libs "$build"/tests/.libs | sed 's/:$//')
    export TERSE_PLUGIN_PATH
    say "the system's $mpirun with the build in $build"
else
    say "no MPI to run ranks with: neither $bundle (sh tests/gpu/make-device-bundle.sh on the build machine)" \
        "nor a system mpirun with a build in $build; the multi-rank device test is skipped"
    exit 77
fi

# terse takes any other TERSE_ variable in a rank's environment for a
# misspelled setting: this script's own end here.
unset TERSE_DEVICE_CHECK_FAKE_DRIVER TERSE_DEVICE_CHECK_MIB TERSE_DEVICE_CHECK_ONLY TERSE_DEVICE_BUNDLE TERSE_BUNDLE_GLIBC

# Ranks started by this mpirun alone, on this machine, wherever it runs:
# oversubscribing allowed, not bound (a container may forbid it), as root
# too; Open MPI's own traffic on shared memory (terse's UCX picks its own),
# without the single-copy mechanism a container may forbid (CMA).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export TERSE_PLANNER=fixed TERSE_MIN_BYTES=4096 TERSE_FEEDBACK=off TERSE_STATS=1 TERSE_LOG=debug
per_run=$((budget / 8))
out=$(mktemp "${TMPDIR:-/tmp}/terse-device-mpi.XXXXXX")
mps_dir=
trap 'rm -f "$out"; [ -z "$mps_dir" ] || mps_stop' EXIT
failed=
timings=
for np in 2 4; do
    for mode in "lossless none" "quantize8 quantize:bits=8"; do
        # shellcheck disable=SC2086
        set -- $mode
        say "== np=$np $1 (TERSE_CODEC=$2), mib=$mib, at most ${per_run}s"
        rc=0
        # shellcheck disable=SC2086 # $run: the loader and its arguments, or nothing
        TERSE_DEVICE_CODECS=0 TERSE_CODEC=$2 timeout -k 10 "$per_run" $run "$mpirun" -x LD_LIBRARY_PATH -x TERSE_PLUGIN_PATH -np "$np" \
            $run "$prog" "$1" "mib=$mib" >"$out" 2>&1 || rc=$?
        if [ "$rc" -ne 0 ]; then
            tail -n 40 "$out"
            [ "$rc" -eq 124 ] && say "ran past ${per_run}s"
            failed="$failed np=$np/$1(exit $rc)"
            continue
        fi
        grep "^driver: " "$out"
        grep -q "^$want_driver" "$out" || { failed="$failed np=$np/$1(driver)"; say "not run on '$want_driver'"; }
        grep -q "MPI library is not CUDA-aware\|MPI library without MPIX_Query_cuda_support" "$out" ||
            { failed="$failed np=$np/$1(log)"; say "no line on the MPI library's CUDA-awareness in the log"; }
        grep "^timing " "$out"
        timings="$timings$(sed -n "s/^timing /  $2 /p" "$out")
"
        want=$(sed -n 's/^staged calls \([0-9]*\) bytes \([0-9]*\)$/device_staged=\1 device_staged_bytes=\2/p' "$out")
        line=$(grep "terse stats: process rank=0 " "$out")
        say "   expected $want | $line"
        case "$line" in
        *" $want"*) [ -n "$want" ] || { failed="$failed np=$np/$1(no count)"; say "the program printed no staged count"; } ;;
        *) failed="$failed np=$np/$1(stats)"; say "the TERSE_STATS line does not count '$want'" ;;
        esac
    done
done
# The device codec path: quantize's kernels on the device buffers, only
# payloads staged.  Ranks sharing one GPU time-slice it between their
# contexts, which a job with a GPU per rank does not; so on a real GPU the
# block runs again under the CUDA multi-process service where the machine
# has it (nvidia-cuda-mps-control), which lets the ranks' kernels share the
# GPU at once, and says which is which.
num() { sed -n "s/.*terse stats: process rank=0 .* $1=\([0-9]*\).*/\1/p" "$out"; }
mps_start() {
    mps_dir=$(mktemp -d "${TMPDIR:-/tmp}/terse-mps.XXXXXX")
    mkdir -p "$mps_dir/pipe" "$mps_dir/log"
    export CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" CUDA_MPS_LOG_DIRECTORY="$mps_dir/log"
    if nvidia-cuda-mps-control -d; then
        say "the CUDA multi-process service started ($mps_dir)"
        return 0
    fi
    say "the CUDA multi-process service did not start: the MPS block is skipped"
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    rm -rf "$mps_dir"
    mps_dir=
    return 1
}
mps_stop() {
    [ -n "$mps_dir" ] || return 0
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
    sleep 1
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    rm -rf "$mps_dir"
    mps_dir=
}
variants="time-sliced"
if [ "$device_codec" != devsim ] && command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    variants="time-sliced mps"
fi
for variant in $variants; do
    if [ "$variant" = mps ]; then mps_start || break; fi
    for np in 2 4; do
        say "== np=$np device codecs (TERSE_CODEC=$device_codec TERSE_ALGORITHM=ring), $variant, mib=$mib, at most ${per_run}s"
        if [ ! -x "$eprog" ]; then
            failed="$failed np=$np/device-codecs(no program)"
            say "no $eprog (rebuild the bundle, or make check's programs)"
            continue
        fi
        rc=0
        # shellcheck disable=SC2086 # $run: the loader and its arguments, or nothing
        TERSE_CODEC=$device_codec TERSE_ALGORITHM=ring TERSE_LOG=info timeout -k 10 "$per_run" $run "$mpirun" \
            -x LD_LIBRARY_PATH -x TERSE_PLUGIN_PATH -np "$np" $run "$eprog" "mib=$mib" >"$out" 2>&1 || rc=$?
        if [ "$rc" -ne 0 ]; then
            tail -n 40 "$out"
            [ "$rc" -eq 124 ] && say "ran past ${per_run}s"
            failed="$failed np=$np/device-codecs(exit $rc)"
            continue
        fi
        grep "^driver: \|device lane\|device codecs: a lane" "$out" | head -n 6
        grep "^timing " "$out"
        timings="$timings$(sed -n "s/^timing /  $device_codec device codecs $variant /p" "$out")
"
        line=$(grep "terse stats: process rank=0 " "$out")
        calls=$(sed -n 's/^device calls \([0-9]*\) bytes.*/\1/p' "$out")
        bytes=$(sed -n 's/^device calls [0-9]* bytes \([0-9]*\)$/\1/p' "$out")
        enc=$(num device_encoded) encb=$(num device_encoded_bytes) pay=$(num device_payload_bytes)
        say "   expected device_encoded=$calls device_encoded_bytes=$bytes | $line"
        [ -n "$calls" ] && [ "$enc" = "$calls" ] && [ "$encb" = "$bytes" ] ||
            { failed="$failed np=$np/device-codecs(encoded)"; say "device_encoded does not count every blocking call"; }
        [ -n "$pay" ] && [ "$pay" -gt 0 ] && [ $((pay * 2)) -lt "${encb:-0}" ] ||
            { failed="$failed np=$np/device-codecs(payload)"; say "payload bytes $pay not under half of $encb"; }
    done
    if [ "$variant" = mps ]; then mps_stop; fi
done
say "time per MPI_Allreduce through terse, host against device buffers (the slowest rank's mean):"
printf '%s' "$timings"
if [ -n "$failed" ]; then
    say "FAIL:$failed"
    exit 1
fi
say "PASS"
