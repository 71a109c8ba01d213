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
# Runs today: test_gpu_mem_kind (memory-kind detection of device/) and
# test_gpu_staging (staging device buffers through pinned host memory).
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)

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
0) echo "device-check: PASS" ;;
77) echo "device-check: the GPU tests found no usable device; skipped"; exit 77 ;;
*) echo "device-check: FAIL (a GPU test exited $status)"; exit 1 ;;
esac
