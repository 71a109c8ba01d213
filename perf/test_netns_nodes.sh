#!/bin/sh
# make check for perf/netns-nodes.sh: two emulated nodes run an allreduce
# (plain MPI and under terse) whose result is checked, ranks land on distinct
# nodes, cross-node traffic goes over the shaped data link and intra-node
# traffic does not, and nothing is left behind.  Skipped (exit 77) with the
# reason when not root or when namespaces, veth pairs, bridges or tbf are
# missing.  Correctness only: no timing is asserted.
set -u
: "${MPIRUN:?run through make check (MPIRUN not set)}"
srcdir=${srcdir:-.}
nodes_sh=$srcdir/netns-nodes.sh
bench=./terse-osu-allreduce
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# ------------------------------------------------------------ can we run?
[ "$(id -u)" = 0 ] || skip "not root (netns-nodes.sh creates network namespaces)"
for c in ip tc unshare hostname; do
    command -v $c >/dev/null 2>&1 || skip "'$c' not found"
done
probe=tnprobe-$$
ip netns add $probe 2>/dev/null || skip "cannot create a network namespace (no CAP_SYS_ADMIN?)"
why=""
if ! ip -n $probe link add pa type veth peer name pb 2>/dev/null; then why="no veth support in this kernel"
elif ! ip -n $probe link add pbr type bridge 2>/dev/null; then why="no bridge support in this kernel"
elif ! ip netns exec $probe tc qdisc add dev pa root tbf rate 1gbit burst 256kb latency 50ms 2>/dev/null; then why="no tbf qdisc (sch_tbf) in this kernel"
elif ! ip netns exec $probe unshare --uts --ipc true 2>/dev/null; then why="cannot unshare UTS and IPC namespaces"
fi
ip netns delete $probe
[ -z "$why" ] || skip "$why"

mpirun_flags="$MPIRUN_FLAGS --mca pml ob1 --mca btl self,vader,tcp"
run_nodes() { timeout -k 10 120 "$nodes_sh" "$@"; }
# bytes NAME LINK FIELD: a counter from the --counters lines in $out.
bytes() { echo "$out" | sed -n "s/^netns-nodes.sh: $1 $2 .*$3=\([0-9]*\).*/\1/p"; }

echo "== option errors name the option and the bad value"
out=$("$nodes_sh" --rate fast -- true 2>&1) && fail "--rate fast accepted"
echo "$out" | grep -q 'expected a tc rate' || { echo "$out"; fail "bad rate message"; }
out=$("$nodes_sh" --nodes 0 --rate 1gbit -- true 2>&1) && fail "--nodes 0 accepted"
echo "$out" | grep -q -- '--nodes: expected a count' || { echo "$out"; fail "bad --nodes message"; }

echo "== exit status passed on, namespaces deleted afterwards"
out=$(run_nodes --nodes 2 --rate unshaped -- sh -c 'ip netns identify $$; exit 7'); rc=$?
[ $rc = 7 ] || fail "exit status not passed on (got $rc, want 7)"
id=${out%-head}
case "$id" in tn[0-9]*) ;; *) fail "command did not run in the head namespace (got \"$out\")" ;; esac
ip netns list | grep -q "^$id-" && fail "namespaces of $id left behind: $(ip netns list | grep "^$id-")"

echo "== 2 nodes x 2 ranks: ranks filled in order, one hostname and IPC namespace per node"
out=$(run_nodes --nodes 2 --ppn 2 --rate 1gbit -- $MPIRUN $mpirun_flags -np 4 \
      sh -c 'echo "rank $OMPI_COMM_WORLD_RANK $(hostname) $(readlink /proc/self/ns/ipc) $(readlink /proc/self/ns/net)"' 2>&1) \
    || { echo "$out"; fail "mpirun on two emulated nodes"; }
echo "$out"
echo "$out" | awk '/^rank / { host[$2] = $3; ipc[$2] = $4; net[$2] = $5; n++ }
    END {
        if (n != 4) { print "expected 4 ranks, got " n; exit 1 }
        if (host[0] != host[1] || host[2] != host[3] || host[0] == host[2]) { print "hostnames not 2 + 2"; exit 1 }
        if (ipc[0] != ipc[1] || ipc[2] != ipc[3] || ipc[0] == ipc[2]) { print "IPC namespaces not 2 + 2"; exit 1 }
        if (net[0] != net[1] || net[2] != net[3] || net[0] == net[2]) { print "network namespaces not 2 + 2"; exit 1 }
    }' || fail "rank placement"

# S bytes per call, over (iterations + warmup) calls: Open MPI's and terse's
# schedules for 2 nodes x 2 ranks send at least S per call across the link
# (Rabenseifner: S, ring: 1.5 S), and shared memory inside a node leaves
# the nodes' loopback (nearly) idle.
S=262144 calls=5
check_links() {
    for n in node1 node2; do
        tx=$(bytes $n data0 tx_bytes)
        lo=$(bytes $n lo tx_bytes)
        [ -n "$tx" ] && [ -n "$lo" ] || { echo "$out"; fail "$1: no counters for $n"; }
        [ "$tx" -ge $((S * calls)) ] || { echo "$out"; fail "$1: $n sent $tx bytes on data0, want >= $((S * calls))"; }
        [ "$lo" -lt "$S" ] || { echo "$out"; fail "$1: $n sent $lo bytes on lo: intra-node traffic not on shared memory"; }
    done
}

echo "== plain MPI, 2 nodes x 2 ranks: checked result, traffic across the shaped link"
out=$(run_nodes --nodes 2 --ppn 2 --rate 1gbit --counters -- $MPIRUN $mpirun_flags -np 4 \
      $bench -m $S:$S -i 4 -x 1 -c -o csv 2>&1) || { echo "$out"; fail "plain MPI on two emulated nodes"; }
echo "$out" | grep -q "^$S,.*,pass" || { echo "$out"; fail "plain MPI: no passing row"; }
check_links "plain MPI"

if [ -f "${TERSE_LIB:-}" ]; then
    echo "== terse (codec none, UCX sm + tcp), 2 nodes x 2 ranks: lossless, identical, over the shaped link"
    out=$(run_nodes --nodes 2 --ppn 2 --rate 1gbit --counters -- $MPIRUN $mpirun_flags -np 4 \
          -x LD_PRELOAD="$TERSE_LIB" -x TERSE_PLANNER=fixed -x TERSE_MIN_BYTES=0 -x TERSE_CODEC=none -x TERSE_UCX_TLS=self,sm,tcp \
          $bench -m $S:$S -i 4 -x 1 -c -o csv 2>&1) || { echo "$out"; fail "terse on two emulated nodes"; }
    echo "$out" | grep -q "^# terse: [0-9].* loaded" || { echo "$out"; fail "terse not loaded"; }
    echo "$out" | grep "^$S," | awk -F, '$7 == "" || $10 != 1 || $11 != "pass" { bad = 1; print "bad row: " $0 } END { exit bad }' \
        || fail "terse row"
    check_links "terse"

    echo "== compare.sh --nodes 2: one row per size"
    out=$(timeout -k 10 180 "$srcdir/compare.sh" --build "$TERSE_BUILDDIR" --nodes 2 -np 2 --rate 1gbit \
          -m 64K:128K -i 2 -x 1 --codec none 2>&1) || { echo "$out"; fail "compare.sh --nodes"; }
    echo "$out" | grep -q "^# Fabric: 2 emulated nodes" || { echo "$out"; fail "compare.sh: no fabric line"; }
    n=$(echo "$out" | grep -c '^[0-9]*K  *[0-9.]*  *[0-9.]*  *[0-9.]*x ')
    [ "$n" = 2 ] || { echo "$out"; fail "compare.sh --nodes: expected 2 rows, got $n"; }
else
    echo "(libterse.so not built: skip the terse runs)"
fi

echo "== --delay: netem + tbf on data0, or a clear refusal"
if out=$(run_nodes --rate 100mbit --delay 1ms -- sh -c 'ip netns exec "$(ip netns identify $$ | sed s/-head$//)-node1" tc qdisc show dev data0' 2>&1); then
    echo "$out" | grep -q netem && echo "$out" | grep -q tbf || { echo "$out"; fail "netem + tbf not both on data0"; }
else
    echo "$out" | grep -q "lacks sch_netem" || { echo "$out"; fail "--delay failed without naming netem"; }
    echo "(no netem in this kernel: --delay refused with a clear message)"
fi
echo "PASS"
