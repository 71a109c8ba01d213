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
# the codec kernels against the CPU codecs, with their throughput against
# the card's device-to-device copy (block below): test_gpu_codec_kernels
# (quantize and the lossless reduction), test_gpu_errbound_kernels and
# test_gpu_topk_kernels.
# TERSE_DEVICE_CHECK_ONLY=kernels runs the codec-kernel block alone (no
# memory-kind, staging or multi-rank tests), for a short second GPU run.
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

only=${TERSE_DEVICE_CHECK_ONLY:-}
case $only in
'' | kernels) ;;
*) echo "device-check: TERSE_DEVICE_CHECK_ONLY=$only is not known (accepted: kernels)" >&2; exit 2 ;;
esac

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
status=0
if [ "$only" = kernels ]; then
    echo "device-check: TERSE_DEVICE_CHECK_ONLY=kernels: the codec kernels alone"
else
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
fi

# ---------------------------------------------------------------- codec kernels
# The device sources (quantize, errbound, topk and the none codec's lossless
# reduction) with nvcc for this card and the CPU codecs with $CXX (FP
# contraction off on both: the bits must match), every file at once (the
# GPU machine has the cores); then the three kernel tests, sharing what is
# left of the 8 minutes (less the multi-rank block's share).
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .') || cap=
case $cap in '' | *[!0-9]*) cap=90 ;; esac
gencode="-gencode arch=compute_$cap,code=sm_$cap"
p="$top/plugins"
echo "device-check: building the codec kernels for sm_$cap"
defs="-DTERSE_QUANTIZE_CUDA=1 -DTERSE_ERRBOUND_CUDA=1 -DTERSE_TOPK_CUDA=1"
pids=
for cu in "$p/quantize/quantize_device.cu" "$p/none/none_device.cu" "$p/errbound/errbound_device.cu" \
    "$p/topk/topk_device.cu"; do
    # shellcheck disable=SC2086
    "$CUDA_HOME/bin/nvcc" -std=c++20 -O3 --fmad=false $gencode -Xcompiler -ffp-contract=off $defs \
        -I"$top/include" -c "$cu" -o "$build/$(basename "$cu" .cu).o" &
    pids="$pids $!"
done
for src in "$p"/quantize/quantize_codec.cc "$p"/quantize/quantize_kernels_scalar.cc \
    "$p"/quantize/quantize_kernels_avx2.cc "$p"/quantize/quantize_kernels_avx512.cc \
    "$p"/quantize/quantize_params.cc "$p"/quantize/quantize_plugin.cc \
    "$p"/errbound/errbound_codec.cc "$p"/errbound/errbound_kernels_scalar.cc \
    "$p"/errbound/errbound_kernels_avx2.cc "$p"/errbound/errbound_kernels_avx512.cc \
    "$p"/errbound/errbound_params.cc "$p"/errbound/errbound_plugin.cc "$p"/errbound/errbound_zstd.cc \
    "$p"/topk/topk_params.cc "$p"/topk/topk_select.cc "$p"/topk/topk_collect.cc \
    "$p"/topk/topk_index_coding.cc "$top/tests/gpu/topk_codec_for_test.cc" \
    "$top/tests/gpu/test_gpu_codec_kernels.cc" "$top/tests/gpu/test_gpu_errbound_kernels.cc" \
    "$top/tests/gpu/test_gpu_topk_kernels.cc"; do
    # shellcheck disable=SC2086
    "$CXX" -std=c++20 -O2 -ffp-contract=off $defs -I"$top/include" -I"$CUDA_HOME/include" \
        -c "$src" -o "$build/$(basename "$src" .cc).o" &
    pids="$pids $!"
done
for pid in $pids; do
    wait "$pid" || { echo "device-check: FAIL: building the codec kernels"; exit 1; }
done
staticrt="-L$CUDA_HOME/lib64 -lcudart_static -lrt -ldl -lpthread"
# shellcheck disable=SC2086
"$CXX" -o "$build/test_gpu_codec_kernels" "$build"/test_gpu_codec_kernels.o "$build"/quantize_*.o \
    "$build/none_device.o" $staticrt
# shellcheck disable=SC2086
"$CXX" -o "$build/test_gpu_errbound_kernels" "$build"/test_gpu_errbound_kernels.o "$build"/errbound_*.o $staticrt
# shellcheck disable=SC2086
"$CXX" -o "$build/test_gpu_topk_kernels" "$build"/test_gpu_topk_kernels.o "$build"/topk_*.o $staticrt

if [ -z "${TERSE_SHARED_DATA:-}" ]; then
    for d in "$top/shared/data" "$top/../shared/data"; do
        if [ -d "$d" ]; then TERSE_SHARED_DATA=$(cd "$d" && pwd); break; fi
    done
fi
export TERSE_SHARED_DATA="${TERSE_SHARED_DATA:-$top/shared/data}"
echo "device-check: codec kernels (sample fields from $TERSE_SHARED_DATA)"
# The kernel tests end by this time: 8 minutes less 20 s of margin, less
# 150 s for the multi-rank block unless it is not run.
reserve=150
[ "$only" = kernels ] && reserve=0
kernels_end=$((script_start + 480 - 20 - reserve))
for t in test_gpu_codec_kernels test_gpu_errbound_kernels test_gpu_topk_kernels; do
    left=$((kernels_end - $(date +%s)))
    if [ "$left" -lt 10 ]; then
        echo "device-check: FAIL: no time left of the 8 minutes for $t"
        exit 1
    fi
    echo "device-check: $t (at most ${left}s)"
    status=0
    if command -v timeout >/dev/null 2>&1; then
        timeout "$left" "$build/$t" || status=$?
    else
        "$build/$t" || status=$?
    fi
    case $status in
    0) echo "device-check: $t PASS" ;;
    77) echo "device-check: $t found no usable device; skipped"; exit 77 ;;
    124) echo "device-check: FAIL ($t ran past its ${left}s)"; exit 1 ;;
    *) echo "device-check: FAIL ($t exit $status)"; exit 1 ;;
    esac
done
echo "device-check: codec kernels PASS"
if [ "$only" = kernels ]; then
    exit 0
fi

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
