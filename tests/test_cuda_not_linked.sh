#!/bin/sh
# libterse.so and the codec modules never link the CUDA runtime or driver
# (device/cuda_driver.h loads the driver at first need), so that a build
# with CUDA loads on machines without a driver or GPU.  Checks the NEEDED
# entries of what the build made.
set -eu
: "${TERSE_BUILDDIR:?}"
command -v readelf >/dev/null 2>&1 || { echo "SKIP: no readelf"; exit 77; }
status=0
checked=0
for so in "$TERSE_BUILDDIR"/mpi-wrappers/.libs/libterse.so "$TERSE_BUILDDIR"/plugins/*/.libs/*.so; do
    [ -f "$so" ] || continue
    checked=$((checked + 1))
    if readelf -d "$so" | grep NEEDED | grep -E 'libcuda(rt)?\.so' >/dev/null; then
        echo "FAIL: $so links CUDA: $(readelf -d "$so" | grep NEEDED | grep -E 'libcuda(rt)?\.so' | tr -s ' ')"
        status=1
    fi
done
[ "$checked" -gt 0 ] || { echo "FAIL: no libterse.so under $TERSE_BUILDDIR"; exit 1; }
echo "checked $checked shared objects"
exit $status
