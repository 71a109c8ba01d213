#!/bin/sh
# Configure (scripts/configure.sh) and build terse out of tree in ./build
# (re-running is cheap).  Arguments go to configure.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/configure.sh" "$@"
cd "$top/build"
make -j"$(nproc)"
