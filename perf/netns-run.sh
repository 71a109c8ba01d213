#!/bin/sh
# Run a command inside a fresh network namespace whose loopback is shaped to a
# given rate with tc, to emulate a slow fabric on one machine.
#
#   perf/netns-run.sh --rate 1gbit [--delay 0ms] [--burst 256kb] -- cmd args...
#   perf/netns-run.sh --rate unshaped -- cmd args...
#
# Every process of the command (all MPI ranks) shares the one shaped loopback:
# the rate is the AGGREGATE of all ranks' traffic, a shared-link model, not a
# per-rank NIC.  MPI and UCX must be forced onto TCP over "lo" inside the
# namespace, or shared memory bypasses the shaping (perf/compare.sh does that).
#
# Needs root, ip and tc (Debian: iproute2).  The namespace is deleted on exit,
# also on error or Ctrl-C.  Exits with the command's exit status.
set -eu

prog=$(basename "$0")
usage() {
    cat <<EOF
Usage: $prog --rate RATE [--delay DELAY] [--burst SIZE] -- command [args...]
  --rate RATE    tc rate of the loopback, e.g. 1gbit, 10gbit, 500mbit,
                 or "unshaped" (namespace without tc)
  --delay DELAY  one-way delay added with netem, e.g. 50us, 1ms (default none)
  --burst SIZE   tbf bucket size (default 256kb; must exceed the loopback MTU)
Runs the command in a new network namespace whose loopback is shaped; all
processes share that loopback, so RATE is the aggregate of their traffic.
EOF
}
die() { echo "$prog: $*" >&2; exit 2; }

rate="" delay="" burst="256kb"
while [ $# -gt 0 ]; do
    case "$1" in
    --rate) [ $# -ge 2 ] || die "--rate needs a value (e.g. 1gbit or unshaped)"; rate=$2; shift 2 ;;
    --rate=*) rate=${1#--rate=}; shift ;;
    --delay) [ $# -ge 2 ] || die "--delay needs a value (e.g. 1ms)"; delay=$2; shift 2 ;;
    --delay=*) delay=${1#--delay=}; shift ;;
    --burst) [ $# -ge 2 ] || die "--burst needs a value (e.g. 256kb)"; burst=$2; shift 2 ;;
    --burst=*) burst=${1#--burst=}; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) usage >&2; die "unknown argument \"$1\" (the command goes after --)" ;;
    esac
done
[ -n "$rate" ] || { usage >&2; die "--rate is required"; }
[ $# -gt 0 ] || { usage >&2; die "no command given after --"; }
# shellcheck source=netns-shape.sh
. "$(dirname "$0")/netns-shape.sh"
shape_check_args

[ "$(id -u)" = 0 ] || die "must run as root (creates a network namespace and shapes it with tc)"
command -v ip >/dev/null 2>&1 || die "'ip' not found: install iproute2"
shape_tools

ns="terse-$$"
cleanup() { ip netns delete "$ns" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

ip netns add "$ns" || die "ip netns add $ns failed (is this a container without CAP_SYS_ADMIN?)"
ip -n "$ns" link set lo up
shape_link "$ns" lo "$delay"
if [ -n "${NETNS_RUN_VERBOSE:-}" ]; then
    echo "$prog: namespace $ns, lo: $(ip netns exec "$ns" tc qdisc show dev lo | tr '\n' ' ')" >&2
fi

# Not exec: the trap must still delete the namespace afterwards.
set +e
ip netns exec "$ns" "$@"
rc=$?
exit $rc
