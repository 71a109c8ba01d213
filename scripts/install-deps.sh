#!/bin/sh
# Install the Debian packages terse builds, tests and benchmarks with.
# Idempotent: installs only what is missing.  Needs root (or sudo).
set -eu
PKGS="build-essential autoconf automake libtool autoconf-archive pkg-config make
 openmpi-bin libopenmpi-dev gfortran libucx-dev ucx-utils
 libhdf5-dev hdf5-tools libzstd-dev libzfp-dev
 libgtest-dev googletest libbenchmark-dev
 clang libclang-rt-14-dev valgrind iproute2 gnuplot-nox man-db groff-base"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
