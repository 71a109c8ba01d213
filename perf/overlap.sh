#!/bin/bash
# Overlap of non-blocking collectives with compute: plain MPI and terse side
# by side, on the same emulated fabric, in one run.
#
#   perf/overlap.sh -np 4 --rate 1gbit --codec quantize:bits=8 --codec none
#
# Inside one network namespace whose loopback is shaped with tc (see
# perf/netns-run.sh), round after round, plain MPI then terse once per
# --codec, it runs
#   - terse-osu-iallreduce: overlap % of MPI_Iallreduce with matched compute;
#   - terse-train-sim: a training step, blocking / Iallreduce / decoupled;
#   - terse-osu-iallreduce -I: CPU time per second of a rank whose helper
#     threads (terse's progress thread) have started and have nothing to do;
# and prints three tables of medians over the rounds.  Both sides use TCP
# over the shaped loopback exactly as perf/compare.sh does (Open MPI ob1/tcp,
# terse's UCX with TERSE_UCX_TLS=tcp); every caller's TERSE_* variable is
# passed to the terse runs.
set -u

prog=overlap.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

usage() {
    cat <<EOF
Usage: perf/overlap.sh [options]
  -np N            ranks (default 4)
  --rate RATE      loopback rate (default 1gbit), or unshaped
  --codec SPEC     terse codec, repeat for several (default quantize:bits=8)
  --repeat N       rounds of every run, interleaved; medians reported (default 1)
  --osu "ARGS"     terse-osu-iallreduce options (default "-m 16M:16M -i 5 -x 1")
  --sim "ARGS"     terse-train-sim options (default "--scale 0.125")
  --idle SECONDS   length of each idle-cost phase (default 5)
  --only LIST      comma-separated of osu,sim,idle (default all three)
  --build DIR      terse build tree (default: $top/build)
  --no-netns       no namespace and no shaping (no root needed); still TCP over lo
  --keep DIR       also copy every run's raw output (CSV and stderr) to DIR
  -h, --help       this help
Environment: MPIRUN (default mpirun), MPIRUN_ARGS (extra mpirun options),
TERSE_* (passed to the terse runs).  The idle runs set TERSE_PLANNER=fixed
and TERSE_MIN_BYTES=0 so that terse takes the one MPI_Iallreduce and starts
its progress thread.
EOF
}
die() { echo "$prog: $*" >&2; exit 2; }

np=4 rate=1gbit repeat=1 build="" use_netns=1 inside="" workdir="" idle=5 only=osu,sim,idle keep=""
osu_args="-m 16M:16M -i 5 -x 1" sim_args="--scale 0.125"
codecs=()
need() { [ "$2" -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
    case "$1" in
    -np|--np|-n) need "$1" $#; np=$2; shift 2 ;;
    --rate) need "$1" $#; rate=$2; shift 2 ;;
    --codec) need "$1" $#; codecs+=("$2"); shift 2 ;;
    --repeat) need "$1" $#; repeat=$2; shift 2 ;;
    --osu) need "$1" $#; osu_args=$2; shift 2 ;;
    --sim) need "$1" $#; sim_args=$2; shift 2 ;;
    --idle) need "$1" $#; idle=$2; shift 2 ;;
    --only) need "$1" $#; only=$2; shift 2 ;;
    --build) need "$1" $#; build=$2; shift 2 ;;
    --no-netns) use_netns=0; shift ;;
    --keep) need "$1" $#; keep=$2; shift 2 ;;
    --inside) need "$1" $#; inside=1; workdir=$2; shift 2 ;;   # internal: run inside the namespace
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument \"$1\"" ;;
    esac
done
[ ${#codecs[@]} -gt 0 ] || codecs=(quantize:bits=8)
case "$np" in ''|*[!0-9]*|0|1) die "-np: expected a rank count >= 2, got \"$np\"" ;; esac
case "$repeat" in ''|*[!0-9]*|0) die "--repeat: expected a count >= 1, got \"$repeat\"" ;; esac
for part in ${only//,/ }; do
    case "$part" in osu|sim|idle) ;; *) die "--only: expected osu, sim or idle, got \"$part\"" ;; esac
done
wants() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }

[ -n "$build" ] || build="$top/build"
build=$(cd "$build" 2>/dev/null && pwd) || die "build tree \"$build\" not found (run scripts/build.sh or pass --build DIR)"
osu="$build/perf/terse-osu-iallreduce"
sim="$build/perf/terse-train-sim"
libterse="$build/mpi-wrappers/.libs/libterse.so"
plugin_path=$(ls -d "$build"/plugins/*/.libs 2>/dev/null | tr '\n' ':')
plugin_path=${plugin_path%:}
for f in "$osu" "$sim"; do [ -x "$f" ] || die "$f not found (build it: make -C $build/perf)"; done
[ -f "$libterse" ] || die "libterse.so not found at $libterse"

. "$here/mpirun-tcp.sh"

# --------------------------------------------------- inside the namespace
if [ -n "$inside" ]; then
    # run_one NAME BINARY "ARGS" [mpirun -x assignments...]
    # shellcheck disable=SC2086
    run_one() {
        local name=$1 bin=$2 args=$3; shift 3
        local t0=$SECONDS
        printf '  %s ...' "$name" >&2
        "$mpirun_cmd" "${mpi_flags[@]}" -np "$np" "${tcp_flags[@]}" ${MPIRUN_ARGS:-} "$@" \
            "$bin" $args -o csv >"$workdir/$name.csv" 2>"$workdir/$name.err"
        local rc=$?
        echo "$rc" >"$workdir/$name.rc"
        if [ "$rc" = 0 ]; then echo " $((SECONDS - t0)) s" >&2
        else echo " FAILED (exit $rc):" >&2; tail -n 5 "$workdir/$name.err" | sed 's/^/    | /' >&2; fi
    }
    terse_envs() {  # codec -> the -x list of a terse run
        envs=(-x LD_PRELOAD="$libterse" -x TERSE_CODEC="$1"
              -x TERSE_PLUGIN_PATH="$plugin_path${TERSE_PLUGIN_PATH:+:$TERSE_PLUGIN_PATH}" "${ucx_envs[@]}")
        terse_passthrough
    }
    for r in $(seq 1 "$repeat"); do
        echo "round $r/$repeat (np=$np, rate=$rate):" >&2
        for bench in osu sim idle; do
            wants $bench || continue
            case $bench in
            osu) bin=$osu args=$osu_args ;;
            sim) bin=$sim args=$sim_args ;;
            idle) bin=$osu args="-m 16M:16M -I $idle" ;;
            esac
            (unset LD_PRELOAD; run_one "$bench.plain.$r" "$bin" "$args")
            if [ $bench = sim ]; then
                # terse's runs do the work of the plain run: its compute-loop rate.
                loop=$(sed -n 's/^# Compute loop: \([0-9.e+]*\) units.*/\1/p' "$workdir/sim.plain.$r.csv")
                [ -n "$loop" ] && args="$args --loop-rate $loop"
            fi
            i=0
            for c in "${codecs[@]}"; do
                i=$((i + 1))
                terse_envs "$c"
                [ $bench = idle ] && envs+=(-x TERSE_PLANNER=fixed -x TERSE_MIN_BYTES=0)
                run_one "$bench.terse$i.$r" "$bin" "$args" "${envs[@]}"
            done
        done
    done
    exit 0
fi

# ------------------------------------------------------------ outside: run
workdir=$(mktemp -d "${TMPDIR:-/tmp}/terse-overlap.XXXXXX")
trap 'rm -rf "$workdir"' EXIT
inner=("$0" --inside "$workdir" -np "$np" --rate "$rate" --repeat "$repeat" --osu "$osu_args" --sim "$sim_args"
       --idle "$idle" --only "$only" --build "$build")
for c in "${codecs[@]}"; do inner+=(--codec "$c"); done
if [ "$use_netns" = 1 ]; then
    "$here/netns-run.sh" --rate "$rate" -- "${inner[@]}" || exit $?
else
    rate="host-lo"
    "${inner[@]}" || exit $?
fi
if [ -n "$keep" ]; then
    mkdir -p "$keep" && cp "$workdir"/*.csv "$workdir"/*.err "$keep"/ || die "--keep: cannot copy to $keep"
fi

# ------------------------------------------------------------ outside: tables
# median NAME COLUMN: "key median" per row key (column 1) over the rounds;
# nothing when a round failed.
median() {
    local name=$1 col=$2 files=() r
    for r in $(seq 1 "$repeat"); do
        [ "$(cat "$workdir/$name.$r.rc" 2>/dev/null)" = 0 ] || return 0
        files+=("$workdir/$name.$r.csv")
    done
    awk -F, -v col="$col" '
    /^#/ || $1 == "size" || $1 == "mode" || $1 == "phase" { next }
    { if (!($1 in n)) order[++k] = $1; v[$1, ++n[$1]] = $col }
    END {
        for (j = 1; j <= k; j++) {
            key = order[j]; m = n[key]
            for (a = 1; a <= m; a++) s[a] = v[key, a]
            for (a = 2; a <= m; a++) for (b = a; b > 1 && s[b] < s[b - 1]; b--) { t = s[b]; s[b] = s[b - 1]; s[b - 1] = t }
            print key, (m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2)
        }
    }' "${files[@]}"
}
names=(plain)
labels=("plain MPI")
i=0
for c in "${codecs[@]}"; do i=$((i + 1)); names+=("terse$i"); labels+=("terse $c"); done
lookup() { awk -v k="$2" '$1 == k { print $2; exit }' <<<"$1"; }
failed=0
report_failures() {
    local bench=$1 n r rc
    for n in "${names[@]}"; do
        for r in $(seq 1 "$repeat"); do
            rc=$(cat "$workdir/$bench.$n.$r.rc" 2>/dev/null || echo missing)
            if [ "$rc" != 0 ]; then
                echo "$bench $n round $r FAILED ($rc):"; tail -n 8 "$workdir/$bench.$n.$r.err" 2>/dev/null | sed 's/^/  | /'
                failed=1
            fi
        done
    done
}

echo "# Overlap of non-blocking collectives: np=$np, rate=$rate, medians of $repeat round(s)"
echo "# MPI library: $(sed -n 's/^# MPI library: //p' "$workdir"/*.plain.1.csv 2>/dev/null | head -n1)"
if [ "$use_netns" = 1 ]; then
    echo "# Fabric: all $np ranks share ONE loopback shaped to $rate (shared-link model)"
else
    echo "# Fabric: the host's unshaped loopback (--no-netns)"
fi
echo "# Both sides: mpirun ${tcp_flags[*]}; terse: LD_PRELOAD=$libterse TERSE_UCX_TLS=${TERSE_UCX_TLS:-tcp} TERSE_UCX_NET_DEVICES=${TERSE_UCX_NET_DEVICES:-lo}"
env | grep '^TERSE_' | grep -v '^TERSE_\(CODEC\|PLUGIN_PATH\|UCX_TLS\|UCX_NET_DEVICES\)=' | sed 's/^/#   also /'
cpus=$(nproc 2>/dev/null || echo '?')
echo "# Host: $cpus cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"

if wants osu; then
    echo
    echo "## MPI_Iallreduce overlap (terse-osu-iallreduce $osu_args): overlap % (pure communication ms)"
    report_failures osu
    printf '%-8s' "Size"; for l in "${labels[@]}"; do printf ' %26s' "$l"; done; echo
    declare -A ov pu
    for n in "${names[@]}"; do ov[$n]=$(median "osu.$n" 5); pu[$n]=$(median "osu.$n" 4); done
    for s in $(awk '{ print $1 }' <<<"${ov[plain]}"); do
        printf '%-8s' "$s"
        for n in "${names[@]}"; do
            o=$(lookup "${ov[$n]}" "$s") p=$(lookup "${pu[$n]}" "$s")
            if [ -n "$o" ]; then printf ' %26s' "$(printf '%.1f %% (%.1f ms)' "$o" "$(echo "$p" | awk '{ print $1 / 1000 }')")"
            else printf ' %26s' "-"; fi
        done
        echo
    done
fi

if wants sim; then
    echo
    echo "## Training step (terse-train-sim $sim_args): step ms (speedup vs plain-MPI blocking of the same round)"
    sed -n 's/^# \(Model\|Compute\|Decoupled\)/#   \1/p' "$workdir/sim.plain.1.csv" 2>/dev/null
    report_failures sim
    printf '%-12s' "Mode"; for l in "${labels[@]}"; do printf ' %26s' "$l"; done; echo
    # The speedup is the median over rounds of that round's ratio: every
    # round calibrates its compute anew (terse's runs reuse the plain run's
    # rate), so step times are comparable inside a round, not across rounds.
    speedup() {  # config mode
        local r b v
        for r in $(seq 1 "$repeat"); do
            b=$(awk -F, '$1 == "blocking" { print $2 }' "$workdir/sim.plain.$r.csv")
            v=$(awk -F, -v m="$2" '$1 == m { print $2 }' "$workdir/sim.$1.$r.csv")
            [ -n "$b" ] && [ -n "$v" ] && echo "$b $v"
        done | awk '{ x[++n] = $1 / $2 }
            END {
                if (!n) exit
                for (a = 2; a <= n; a++) for (b = a; b > 1 && x[b] < x[b - 1]; b--) { t = x[b]; x[b] = x[b - 1]; x[b - 1] = t }
                printf "%.2f", n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
            }'
    }
    declare -A st
    for n in "${names[@]}"; do st[$n]=$(median "sim.$n" 2); done
    for m in $(awk '{ print $1 }' <<<"${st[plain]}"); do
        printf '%-12s' "$m"
        for n in "${names[@]}"; do
            v=$(lookup "${st[$n]}" "$m")
            if [ -n "$v" ]; then printf ' %26s' "$(printf '%.1f (%sx)' "$v" "$(speedup "$n" "$m")")"
            else printf ' %26s' "-"; fi
        done
        echo
    done
fi

if wants idle; then
    echo
    echo "## Idle cost after one 16 MiB MPI_Iallreduce ($idle s per phase; terse runs: TERSE_PLANNER=fixed TERSE_MIN_BYTES=0)"
    echo "# CPU s per wall s of a rank: whole process / threads other than the main one; context switches per s"
    report_failures idle
    printf '%-28s %14s %14s %12s %16s\n' "" "sleep: cpu" "sleep: other" "sleep: sw/s" "compute: other"
    for k in "${!names[@]}"; do
        n=${names[$k]}
        c=$(median "idle.$n" 3) o=$(median "idle.$n" 5) w=$(median "idle.$n" 7)
        printf '%-28s %14s %14s %12s %16s\n' "${labels[$k]}" "$(lookup "$c" sleep)" "$(lookup "$o" sleep)" \
            "$(lookup "$w" sleep)" "$(lookup "$o" compute)"
    done
fi
exit $failed
