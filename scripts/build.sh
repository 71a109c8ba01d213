#!/bin/sh
# Configure and build terse out of tree in ./build (re-running is cheap).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] || ./autogen.sh
mkdir -p build
cd build
[ -f Makefile ] && [ config.status -nt ../configure ] || ../configure --prefix="$top/build/install" "$@"
make -j"$(nproc)"
