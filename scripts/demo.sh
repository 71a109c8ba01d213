#!/bin/sh
# The README's main job, from a clean clone, as root:
#   install the Debian packages, build terse, then compare a compressed
#   MPI_Allreduce with the plain MPI library across local ranks on an emulated
#   1 Gbit/s link and on the unshaped loopback (perf/report.sh --quick), and
#   print the side-by-side table and the paths of the plots.
# Extra arguments go to perf/report.sh (e.g. --codecs "none quantize:bits=4").
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" != 0 ]; then
    echo "demo.sh: run as root (sudo scripts/demo.sh): the emulated fabric needs a network" >&2
    echo "         namespace shaped with tc, and the packages are installed with apt-get." >&2
    exit 2
fi
echo "==> installing packages (scripts/install-deps.sh)"
"$top/scripts/install-deps.sh"
echo "==> building terse in $top/build (scripts/build.sh)"
"$top/scripts/build.sh" >"${TMPDIR:-/tmp}/terse-demo-build.log" 2>&1 || {
    tail -n 40 "${TMPDIR:-/tmp}/terse-demo-build.log" >&2
    echo "demo.sh: build failed; full log: ${TMPDIR:-/tmp}/terse-demo-build.log" >&2
    exit 1
}
echo "==> comparing terse with plain MPI (perf/report.sh --quick)"
exec "$top/perf/report.sh" --quick --build "$top/build" "$@"
