#!/bin/sh
# The prepared device check (issue 8): run on a machine with a GPU, from the
# root of a working tree, it builds what it needs from that tree and runs
# the GPU tests, printing their results; where there is no GPU or no CUDA
# driver it says so and exits 77 (skipped), failing nothing.
#
#   sh tests/gpu/device-check.sh [BUILD_DIR]
#
# It needs a C++20 compiler (CXX, default g++) and the CUDA toolkit
# (CUDA_HOME, default: the folder above nvcc, else /usr/local/cuda); no
# autotools, MPI or package registry, since a GPU machine may have none.
# BUILD_DIR (default: a temporary folder, removed at the end) receives the
# objects and programs.
#
# Runs today: test_gpu_mem_kind (memory-kind detection of device/),
# test_gpu_staging (staging device buffers through pinned host memory) and
# test_gpu_codec_kernels (the codec kernels against the CPU codec, and their
# throughput against the card's device-to-device copy; block below).
# TERSE_SHARED_DATA: the sample fields (default: shared/data of the tree,
# else ../shared/data beside it; gradient-like data is generated anyway).
#
# Last, the multi-rank block (tests/gpu/device-mpi-check.sh): MPI_Allreduce
# and its relatives on device buffers of 2 and 4 ranks sharing the GPU,
# through terse, checked against PMPI and timed against host buffers, with
# the MPI that tests/gpu/make-device-bundle.sh packed into tests/gpu/bundle
# on the build machine (carry that folder to the GPU machine), else a
# system mpirun with a build of this tree; with neither, that block alone
# is skipped, saying so.  The whole script stays under 8 minutes: the block
# gets what is left of them (at least 2 minutes, else it is skipped).
# TERSE_DEVICE_CHECK_FAKE_DRIVER=PATH/libcuda.so.1 (the fake driver of a
# build tree, tests/fake_cuda) is for testing this script without a GPU:
# the GPU tests are passed over and only the multi-rank block runs, on it.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
script_start=$(date +%s)

if [ -n "${TERSE_DEVICE_CHECK_FAKE_DRIVER:-}" ]; then
    echo "device-check: TERSE_DEVICE_CHECK_FAKE_DRIVER set: no GPU tests, the multi-rank block on the fake driver"
    exec sh "$top/tests/gpu/device-mpi-check.sh" 300
fi

# A GPU and its driver: the driver library, and a device listed.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && ! [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] &&
    ! [ -e /usr/lib64/libcuda.so.1 ]; then
    echo "device-check: no CUDA driver (libcuda.so.1) on $(hostname): no GPU to check here; skipped"
    exit 77
fi
if command -v nvidia-smi >/dev/null 2>&1; then
    if ! nvidia-smi -L >/dev/null 2>&1; then
        echo "device-check: nvidia-smi lists no GPU on $(hostname); skipped"
        exit 77
    fi
    nvidia-smi -L
fi

if [ -z "${CUDA_HOME:-}" ]; then
    if command -v nvcc >/dev/null 2>&1; then
        CUDA_HOME=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
    else
        CUDA_HOME=/usr/local/cuda
    fi
fi
if ! [ -f "$CUDA_HOME/include/cuda.h" ] || ! [ -f "$CUDA_HOME/include/cuda_runtime_api.h" ]; then
    echo "device-check: FAIL: a driver but no CUDA toolkit at $CUDA_HOME (set CUDA_HOME)" >&2
    exit 1
fi
CXX=${CXX:-g++}

if [ $# -ge 1 ]; then
    build=$1
    mkdir -p "$build"
else
    build=$(mktemp -d "${TMPDIR:-/tmp}/terse-device-check.XXXXXX")
    trap 'rm -rf "$build"' EXIT
fi

# The build configuration the sources read (configure writes it normally).
cat > "$build/terse_build_config.h" <<CFG
#define TERSE_HAVE_CUDA 1
CFG

echo "device-check: building in $build with $CXX and CUDA at $CUDA_HOME"
cudart="-L$CUDA_HOME/lib64 -Wl,-rpath,$CUDA_HOME/lib64 -lcudart"
# shellcheck disable=SC2086
"$CXX" -std=c++20 -O2 -Wall -Wextra -pthread -I"$top/include" -I"$top/lib" -I"$build" -I"$CUDA_HOME/include" \
    -o "$build/test_gpu_mem_kind" "$top/tests/gpu/test_gpu_mem_kind.cc" \
    "$top"/lib/device/*.cc "$top/lib/util/log.cc" "$top/lib/util/status.cc" $cudart -ldl

status=0
echo "device-check: test_gpu_mem_kind"
"$build/test_gpu_mem_kind" || status=$?
# Staging device buffers through pinned host memory (device/staged_call.h):
# round trips and the chunked copy's bandwidth.  A multi-rank allreduce on
# device buffers needs an MPI library, which this script does not bring
# yet: tests/test_device_staging.sh runs that under make check with a fake
# driver on any machine.
if [ "$status" -eq 0 ]; then
    # shellcheck disable=SC2086
    "$CXX" -std=c++20 -O2 -Wall -Wextra -pthread -I"$top/include" -I"$top/lib" -I"$build" -I"$CUDA_HOME/include" \
        -o "$build/test_gpu_staging" "$top/tests/gpu/test_gpu_staging.cc" \
        "$top"/lib/device/*.cc "$top/lib/util/log.cc" "$top/lib/util/status.cc" $cudart -ldl
    echo "device-check: test_gpu_staging"
    "$build/test_gpu_staging" || status=$?
fi
case $status in
0) echo "device-check: memory kinds and staging PASS" ;;
77) echo "device-check: the GPU tests found no usable device; skipped"; exit 77 ;;
*) echo "device-check: FAIL (a GPU test exited $status)"; exit 1 ;;
esac

# ---------------------------------------------------------------- codec kernels
# plugins/quantize/quantize_device.cu and plugins/none/none_device.cu (the
# lossless reduction) with nvcc for this card, the CPU codec
# with $CXX (FP contraction off on both: the bits must match), compiled in
# parallel; then test_gpu_codec_kernels, at most 6 minutes.
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .') || cap=
case $cap in '' | *[!0-9]*) cap=90 ;; esac
gencode="-gencode arch=compute_$cap,code=sm_$cap"
q="$top/plugins/quantize"
echo "device-check: building the codec kernels for sm_$cap"
pids=
# shellcheck disable=SC2086
"$CUDA_HOME/bin/nvcc" -std=c++20 -O3 --fmad=false $gencode -Xcompiler -ffp-contract=off \
    -DTERSE_QUANTIZE_CUDA=1 -I"$top/include" -c "$q/quantize_device.cu" -o "$build/quantize_device.o" &
pids="$pids $!"
# shellcheck disable=SC2086
"$CUDA_HOME/bin/nvcc" -std=c++20 -O3 --fmad=false $gencode -Xcompiler -ffp-contract=off \
    -I"$top/include" -c "$top/plugins/none/none_device.cu" -o "$build/none_device.o" &
pids="$pids $!"
for src in "$q"/quantize_codec.cc "$q"/quantize_kernels_scalar.cc "$q"/quantize_kernels_avx2.cc \
    "$q"/quantize_kernels_avx512.cc "$q"/quantize_params.cc "$q"/quantize_plugin.cc \
    "$top/tests/gpu/test_gpu_codec_kernels.cc"; do
    "$CXX" -std=c++20 -O2 -ffp-contract=off -DTERSE_QUANTIZE_CUDA=1 -I"$top/include" -I"$CUDA_HOME/include" \
        -c "$src" -o "$build/$(basename "$src" .cc).o" &
    pids="$pids $!"
done
for p in $pids; do
    wait "$p" || { echo "device-check: FAIL: building the codec kernels"; exit 1; }
done
"$CXX" -o "$build/test_gpu_codec_kernels" "$build"/test_gpu_codec_kernels.o "$build"/quantize_*.o \
    "$build/none_device.o" \
    -L"$CUDA_HOME/lib64" -lcudart_static -lrt -ldl -lpthread

if [ -z "${TERSE_SHARED_DATA:-}" ]; then
    for d in "$top/shared/data" "$top/../shared/data"; do
        if [ -d "$d" ]; then TERSE_SHARED_DATA=$(cd "$d" && pwd); break; fi
    done
fi
export TERSE_SHARED_DATA="${TERSE_SHARED_DATA:-$top/shared/data}"
echo "device-check: test_gpu_codec_kernels (sample fields from $TERSE_SHARED_DATA)"
status=0
if command -v timeout >/dev/null 2>&1; then
    timeout 360 "$build/test_gpu_codec_kernels" || status=$?
else
    "$build/test_gpu_codec_kernels" || status=$?
fi
case $status in
0) echo "device-check: codec kernels PASS" ;;
77) echo "device-check: test_gpu_codec_kernels found no usable device; skipped"; exit 77 ;;
124) echo "device-check: FAIL (test_gpu_codec_kernels ran past 6 minutes)"; exit 1 ;;
*) echo "device-check: FAIL (test_gpu_codec_kernels exit $status)"; exit 1 ;;
esac

# ----------------------------------------------------- multi-rank, device buffers
# What is left of the 8 minutes, less 20 seconds of margin.
left=$((480 - 20 - ($(date +%s) - script_start)))
if [ "$left" -lt 120 ]; then
    echo "device-check: ${left}s left of the 8 minutes: the multi-rank device test is skipped"
    exit 0
fi
status=0
sh "$top/tests/gpu/device-mpi-check.sh" "$left" || status=$?
case $status in
0) echo "device-check: multi-rank device buffers PASS" ;;
77) echo "device-check: the multi-rank device test was skipped (no MPI; above)" ;;
*) echo "device-check: FAIL (the multi-rank device test, exit $status)"; exit 1 ;;
esac
