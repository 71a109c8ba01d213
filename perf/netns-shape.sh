# shellcheck shell=sh
# Sourced by netns-run.sh and netns-nodes.sh (POSIX sh): the checks of
# --rate and --delay and the tc qdiscs that shape one link.  Uses the
# caller's variables rate, delay and burst and its die function.

# shape_check_args: normalise $rate ("unshaped" for no tc) and $delay
# (empty for none), or die naming the bad value.
shape_check_args() {
    case "$rate" in
    unshaped|none) rate=unshaped ;;
    *[0-9]*bit|*[0-9]*bps) ;;
    *) die "--rate \"$rate\": expected a tc rate such as 1gbit, 10gbit, 500mbit, or unshaped" ;;
    esac
    case "$delay" in
    ""|0|0ms|0us) delay="" ;;
    *[0-9]*s) ;;
    *) die "--delay \"$delay\": expected a time such as 100us or 1ms" ;;
    esac
}

# shape_tools: die unless tc is there when anything is to be shaped.
shape_tools() {
    if [ "$rate" != unshaped ] || [ -n "$delay" ]; then
        command -v tc >/dev/null 2>&1 || die "'tc' not found: install iproute2"
    fi
}

# shape_link NS DEV DELAY: shape the egress of DEV in namespace NS to $rate
# (tbf with bucket $burst), after netem's one-way DELAY when DELAY is not
# empty (netem delays, its child tbf limits the rate).
shape_link() {
    if [ -n "$3" ] && [ "$rate" != unshaped ]; then
        ip netns exec "$1" tc qdisc add dev "$2" root handle 1: netem delay "$3" limit 100000 || shape_netem_missing
        ip netns exec "$1" tc qdisc add dev "$2" parent 1:1 handle 10: tbf rate "$rate" burst "$burst" latency 50ms ||
            die "cannot add a tbf qdisc on $2 (kernel without sch_tbf?)"
    elif [ -n "$3" ]; then
        ip netns exec "$1" tc qdisc add dev "$2" root netem delay "$3" limit 100000 || shape_netem_missing
    elif [ "$rate" != unshaped ]; then
        ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst "$burst" latency 50ms ||
            die "cannot add a tbf qdisc on $2 (kernel without sch_tbf?)"
    fi
}

shape_netem_missing() {
    die "cannot add a netem qdisc for --delay: this kernel lacks sch_netem (try 'modprobe sch_netem'), or run without --delay"
}
