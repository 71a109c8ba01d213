#!/bin/bash
# Emulate a cluster of N nodes on one machine for MPI jobs: each "node" is a
# network namespace (plus its own UTS and IPC namespace for the processes
# started in it), the nodes are joined by a tc-shaped data network, and
# mpirun starts one orted per node through this script as its rsh agent.
#
#   perf/netns-nodes.sh --nodes 2 --ppn 2 --rate 10gbit -- \
#       mpirun --allow-run-as-root -np 4 build/perf/terse-osu-allreduce -m 16M:16M
#
# Topology (all of it inside namespaces this script creates and deletes):
#
#   head namespace (mpirun):  bridge "ctl" 10.98.0.254/24   bridge "sw" (no address)
#                                 |  unshaped veths             |  shaped veths
#   node i namespace:         ctl0 10.98.0.i/24             data0 10.99.0.i/24
#
# "ctl" carries only Open MPI's out-of-band traffic (mpirun <-> orted); "sw"
# is the data network, a switch with one port per node, shaped to RATE in
# each direction of each port (the node's NIC: tbf on data0's egress for
# what it sends, on the switch port's egress for what it receives).  Inside
# a node, ranks talk over shared memory (a real node's path); see
# perf/README.md for what crosses the shaped link.
#
# The command runs in the head namespace with the fabric in its
# environment (OMPI_MCA_* and UCX_NET_DEVICES, see usage), so a plain
# "mpirun -np N prog" in it places ranks on the nodes.  Needs root, ip, tc,
# unshare and hostname.  Everything is deleted on exit, also on error or
# Ctrl-C.  Exits with the command's exit status.
set -eu

prog=netns-nodes.sh
ctl_net=10.98.0
data_net=10.99.0

# ------------------------------------------------ rsh agent (internal mode)
# mpirun calls "<this script> --rsh-agent <fabric id> <host> <orted command
# words...>" once per node.  Like ssh, the words are joined and run by a
# shell, here inside the node's network namespace, in a new UTS namespace
# (its own hostname, so Open MPI sees distinct nodes and session
# directories) and a new IPC namespace (UCX's shared-memory transports
# refuse peers of another IPC namespace, so they cannot join ranks of two
# nodes and bypass the shaped link).
if [ "${1:-}" = --rsh-agent ]; then
    [ $# -ge 4 ] || { echo "$prog --rsh-agent: expected a fabric id, a host and a command" >&2; exit 2; }
    id=$2 host=$3
    shift 3
    case "$id" in tn[0-9]*) ;; *) echo "$prog --rsh-agent: bad fabric id \"$id\"" >&2; exit 2 ;; esac
    case "$host" in
    "$ctl_net".[0-9]*) i=${host##*.} ;;
    *) echo "$prog --rsh-agent: host \"$host\" is not a node of this fabric ($ctl_net.1 ...)" >&2; exit 2 ;;
    esac
    ns="$id-node$i"
    ip netns list | grep -q "^$ns\\b" || { echo "$prog --rsh-agent: no namespace $ns for host $host" >&2; exit 2; }
    outer_uts=$(readlink /proc/self/ns/uts)
    # shellcheck disable=SC2016
    exec ip netns exec "$ns" unshare --uts --ipc -- sh -c '
        [ "$(readlink /proc/self/ns/uts)" != "$1" ] || { echo "netns-nodes.sh: no new UTS namespace" >&2; exit 1; }
        hostname "$2" || exit 1
        shift 2
        exec sh -c "$*"' agent "$outer_uts" "$ns" "$@"
fi

# ---------------------------------------------------------------- options
usage() {
    cat <<EOF
Usage: $prog [--nodes N] [--ppn K] --rate RATE [--delay DELAY] [--burst SIZE]
             [--counters] -- command [args...]
  --nodes N      emulated nodes (default 2, at most 200)
  --ppn K        MPI slots per node in the default hostfile (default 1)
  --rate RATE    rate of each node's link to the switch, each direction:
                 e.g. 1gbit, 10gbit, 25gbit, or "unshaped" (no tc)
  --delay DELAY  one-way delay on each node's outgoing data link, with netem
                 (e.g. 50us); needs the kernel's sch_netem
  --burst SIZE   tbf bucket size (default 256kb)
  --counters     after the command, print the bytes each node sent and
                 received on its data link (data0), its control link (ctl0)
                 and its loopback during the command
Runs the command in the head namespace, where mpirun finds its nodes through:
  OMPI_MCA_orte_default_hostfile  10.98.0.1 slots=K ... 10.98.0.N slots=K
  OMPI_MCA_plm_rsh_agent          this script in --rsh-agent mode
  OMPI_MCA_oob_tcp_if_include     10.98.0.0/24 (control links, unshaped)
  OMPI_MCA_btl_tcp_if_include     10.99.0.0/24 (data network, shaped)
  OMPI_MCA_hwloc_base_binding_policy=none (the nodes share this machine's CPUs)
  OMPI_MCA_plm_rsh_no_tree_spawn=1
  OMPI_MCA_mpi_yield_when_idle=1  when N x K exceeds this machine's CPUs (as
                                  mpirun does on one oversubscribed host)
  UCX_NET_DEVICES=data0           (any UCX user: terse's own transport too)
  NETNS_NODES_HOSTS               10.98.0.1:K,...  (for mpirun -H)
  NETNS_NODES_DATA_IF=data0, NETNS_NODES_COUNT=N
EOF
}
die() { echo "$prog: $*" >&2; exit 2; }

nodes=2 ppn=1 rate="" delay="" burst=256kb counters=""
need() { [ "$2" -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
    case "$1" in
    --nodes) need "$1" $#; nodes=$2; shift 2 ;;
    --ppn) need "$1" $#; ppn=$2; shift 2 ;;
    --rate) need "$1" $#; rate=$2; shift 2 ;;
    --delay) need "$1" $#; delay=$2; shift 2 ;;
    --burst) need "$1" $#; burst=$2; shift 2 ;;
    --counters) counters=1; shift ;;
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
case "$nodes" in ''|*[!0-9]*|0) die "--nodes: expected a count from 1 to 200, got \"$nodes\"" ;; esac
[ "$nodes" -le 200 ] || die "--nodes: expected a count from 1 to 200, got \"$nodes\""
case "$ppn" in ''|*[!0-9]*|0) die "--ppn: expected a slot count >= 1, got \"$ppn\"" ;; esac

[ "$(id -u)" = 0 ] || die "must run as root (creates network namespaces, veth pairs and bridges)"
for c in ip unshare hostname; do
    command -v $c >/dev/null 2>&1 || die "'$c' not found (ip: iproute2; unshare: util-linux; hostname: hostname)"
done
shape_tools
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
[ -x "$self" ] || die "$self is not executable (mpirun runs it as its rsh agent)"

# ------------------------------------------------------------ the fabric
id="tn$$"
head="$id-head"
created=()
workdir=""
cleanup() {
    local ns pids
    # Processes left in a node (an orted of an interrupted job) would keep
    # its namespace and links alive: end them first, by pid.
    for ns in ${created[@]+"${created[@]}"}; do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] || kill $pids 2>/dev/null || true
    done
    for ns in ${created[@]+"${created[@]}"}; do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        if [ -n "$pids" ]; then sleep 1; pids=$(ip netns pids "$ns" 2>/dev/null || true); fi
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
        ip netns delete "$ns" 2>/dev/null || true
    done
    [ -z "$workdir" ] || rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

add_ns() {
    ip netns add "$1" || die "ip netns add $1 failed (is this a container without CAP_SYS_ADMIN?)"
    created+=("$1")
    # No IPv6 inside the fabric: new links would otherwise send multicast
    # listener reports that show in the counters.  These are the new
    # namespace's own settings (ip netns exec fails rather than run here).
    # shellcheck disable=SC2016
    ip netns exec "$1" sh -c 'for k in all default; do
        [ ! -w /proc/sys/net/ipv6/conf/$k/disable_ipv6 ] || echo 1 >/proc/sys/net/ipv6/conf/$k/disable_ipv6; done'
    ip -n "$1" link set lo up
}
# veth HUBDEV BRIDGE NODE NODEDEV ADDR: a veth pair from a bridge of the
# head namespace to NODEDEV in NODE, created in place (never in the root
# namespace).
veth() {
    ip -n "$head" link add "$1" type veth peer name "$4" netns "$3" ||
        die "cannot create a veth pair (kernel without veth?)"
    ip -n "$head" link set "$1" master "$2" up
    ip -n "$3" addr add "$5/24" dev "$4"
    ip -n "$3" link set "$4" up
}

add_ns "$head"
ip -n "$head" link add ctl type bridge || die "cannot create a bridge (kernel without bridge support?)"
ip -n "$head" link add sw type bridge
ip -n "$head" addr add "$ctl_net.254/24" dev ctl
ip -n "$head" link set ctl up
ip -n "$head" link set sw up
workdir=$(mktemp -d "${TMPDIR:-/tmp}/netns-nodes.XXXXXX")
hosts=""
for i in $(seq 1 "$nodes"); do
    ns="$id-node$i"
    add_ns "$ns"
    veth "c$i" ctl "$ns" ctl0 "$ctl_net.$i"
    veth "d$i" sw "$ns" data0 "$data_net.$i"
    # The node's NIC: what it sends (netem's delay once, on this side) and
    # what it receives (the switch port's egress).
    shape_link "$ns" data0 "$delay"
    shape_link "$head" "d$i" ""
    echo "$ctl_net.$i slots=$ppn" >>"$workdir/hostfile"
    hosts="$hosts${hosts:+,}$ctl_net.$i:$ppn"
done
if [ -n "${NETNS_NODES_VERBOSE:-}" ]; then
    echo "$prog: fabric $id, $nodes nodes x $ppn slots, data0: $(ip netns exec "$id-node1" tc qdisc show dev data0 | tr '\n' ' ')" >&2
fi

# counters: one line per node and link, "node iface tx_bytes rx_bytes".
counters_now() {
    local i dev
    for i in $(seq 1 "$nodes"); do
        for dev in data0 ctl0 lo; do
            # shellcheck disable=SC2016
            ip netns exec "$id-node$i" sh -c 'echo "$1 $2 $(cat /sys/class/net/$2/statistics/tx_bytes) $(cat /sys/class/net/$2/statistics/rx_bytes)"' \
                sh "$i" "$dev"
        done
    done
}
[ -z "$counters" ] || counters_now >"$workdir/before"

export OMPI_MCA_orte_default_hostfile="$workdir/hostfile"
export OMPI_MCA_plm_rsh_agent="$self --rsh-agent $id"
export OMPI_MCA_plm_rsh_no_tree_spawn=1
export OMPI_MCA_oob_tcp_if_include="$ctl_net.0/24"
export OMPI_MCA_btl_tcp_if_include="$data_net.0/24"
export OMPI_MCA_hwloc_base_binding_policy=none
export UCX_NET_DEVICES=data0
# Each orted sees a node of K slots that is not oversubscribed, so Open
# MPI's ranks would spin without ever yielding, while all nodes share this
# machine's CPUs: where the slots outnumber them, ask for what mpirun does
# on one oversubscribed host (unless the caller chose).
if [ "$((nodes * ppn))" -gt "$(nproc)" ] && [ -z "${OMPI_MCA_mpi_yield_when_idle:-}" ]; then
    export OMPI_MCA_mpi_yield_when_idle=1
fi
export NETNS_NODES_HOSTS="$hosts" NETNS_NODES_DATA_IF=data0 NETNS_NODES_COUNT="$nodes"

# Not exec: the trap must still delete the fabric afterwards.
set +e
ip netns exec "$head" "$@"
rc=$?
set -e

if [ -n "$counters" ]; then
    counters_now >"$workdir/after"
    echo "$prog: bytes during the command (tx = sent by the node, rx = received):" >&2
    awk 'FNR == NR { tx[$1 " " $2] = $3; rx[$1 " " $2] = $4; next }
         { printf "%s: node%s %s tx_bytes=%d rx_bytes=%d\n", prog, $1, $2, $3 - tx[$1 " " $2], $4 - rx[$1 " " $2] }' \
        prog="$prog" "$workdir/before" "$workdir/after" >&2
fi
exit $rc
