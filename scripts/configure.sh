#!/bin/sh
# Configure terse out of tree in ./build, running autogen.sh first when
# configure is missing or older than configure.ac (re-running is cheap).
# Arguments go to configure.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] || ./autogen.sh
mkdir -p build
cd build
[ -f Makefile ] && [ config.status -nt ../configure ] || ../configure --prefix="$top/build/install" "$@"
