#!/bin/bash
# Plain MPI and terse side by side, in one run, on the same emulated fabric.
#
#   perf/compare.sh -np 4 --rate 1gbit --codec quantize:bits=8 -m 1M:64M
#
# Inside one network namespace whose loopback is shaped with tc (see
# perf/netns-run.sh) it runs terse-osu-allreduce first with the plain MPI
# library, then under terse (LD_PRELOAD=libterse.so) once per --codec, and
# prints a table: latency and bus bandwidth of both, their ratio, terse's
# wire ratio and error.  Both use TCP over the shaped loopback: Open MPI with
# ob1/tcp (its control traffic included), terse's UCX with TERSE_UCX_TLS=tcp.
# All ranks share that one loopback: the rate is the aggregate of all ranks'
# traffic (a shared-link model), not a per-rank NIC.
#
# Every TERSE_* variable of the caller's environment (TERSE_MIN_BYTES,
# TERSE_CHUNK_BYTES, ...) is passed to the terse runs.
#
# With --nodes N the ranks run on N emulated nodes instead (see
# perf/netns-nodes.sh): shared memory inside a node, each node's link to a
# switch shaped to --rate in each direction.
set -u

prog=compare.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

usage() {
    cat <<EOF
Usage: perf/compare.sh [options] [-- extra terse-osu-allreduce options]
  -np N            ranks (default 2)
  --rate RATE      loopback rate: 1gbit, 10gbit, ... or unshaped (default 1gbit);
                   with --nodes, the rate of each node's link
  --nodes N        N emulated nodes (perf/netns-nodes.sh) instead of one shared
                   loopback: ranks fill nodes of ceil(np/N) slots in order;
                   Open MPI on vader inside a node and TCP between nodes,
                   terse's UCX on TERSE_UCX_TLS=self,sm,tcp over data0
  --delay DELAY    extra one-way delay with netem, e.g. 100us (default none)
  --codec SPEC     terse codec, e.g. none, quantize:bits=8; repeat for several
                   codecs against one baseline run (default none)
  -m MIN:MAX       sizes in bytes, powers of two (default 1M:64M)
  -i N, -x N       timed and warmup iterations per size (default 20 and 2)
  -L SECONDS       cap on timed iterations per size (default 3)
  -d TYPE          float (default) or double
  -t KIND          laplace (default), gauss, smooth, file:PATH
  --build DIR      terse build tree (default: $top/build)
  --prefix DIR     installed terse instead of a build tree
  --ref-build DIR  also run each codec with the terse of this other build tree
                   (e.g. the commit before a change), interleaved in the same
                   rounds, and add its latency and terse/ref speed columns
  --ref-unset VAR  do not pass the TERSE_* variable VAR to the --ref-build runs
                   (one the older build does not know, e.g. TERSE_PLANNER);
                   repeat for several
  --no-netns       no namespace and no shaping (no root needed); still TCP over lo
  --native         no namespace, and both MPI and terse's UCX on their default
                   transports (shared memory): e.g. the small-message overhead
  --repeat N       run baseline and terse N times, interleaved in rounds whose
                   order rotates, and report the median latency per size and
                   the median of each round's own ratio (steadier on a busy
                   machine)
  --csv FILE       append the comparison rows to FILE (CSV, header if new)
  --progress K/T   label progress lines starting at step K of T (for report.sh)
  --check-codecs   only print the --codec values whose plugin is present
  -h, --help       this help
Environment: MPIRUN (default mpirun), MPIRUN_ARGS (extra mpirun options for
both runs), TERSE_* (passed to the terse runs).
EOF
}
die() { echo "$prog: $*" >&2; exit 2; }

# ------------------------------------------------------------------ options
np=2 rate=1gbit delay="" sizes=1M:64M iters=20 warmup=2 limit=3 dtype=float kind=laplace
nodes="" build="" prefix="" ref_build="" use_netns=1 csv_out="" progress="" inside="" workdir="" check_codecs="" native="" repeat=1
ref_unset=()
codecs=()
extra=()
need() { [ "$2" -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
    case "$1" in
    -np|--np|-n) need "$1" $#; np=$2; shift 2 ;;
    --rate) need "$1" $#; rate=$2; shift 2 ;;
    --delay) need "$1" $#; delay=$2; shift 2 ;;
    --nodes) need "$1" $#; nodes=$2; shift 2 ;;
    --codec) need "$1" $#; codecs+=("$2"); shift 2 ;;
    -m) need "$1" $#; sizes=$2; shift 2 ;;
    -i) need "$1" $#; iters=$2; shift 2 ;;
    -x) need "$1" $#; warmup=$2; shift 2 ;;
    -L) need "$1" $#; limit=$2; shift 2 ;;
    -d) need "$1" $#; dtype=$2; shift 2 ;;
    -t) need "$1" $#; kind=$2; shift 2 ;;
    --build) need "$1" $#; build=$2; shift 2 ;;
    --prefix) need "$1" $#; prefix=$2; shift 2 ;;
    --ref-build) need "$1" $#; ref_build=$2; shift 2 ;;
    --ref-unset) need "$1" $#; ref_unset+=("$2"); shift 2 ;;
    --no-netns) use_netns=0; shift ;;
    --native) use_netns=0; native=1; shift ;;
    --csv) need "$1" $#; csv_out=$2; shift 2 ;;
    --progress) need "$1" $#; progress=$2; shift 2 ;;
    --inside) need "$1" $#; inside=1; workdir=$2; shift 2 ;;   # internal: run inside the namespace
    --check-codecs) check_codecs=1; shift ;;
    --repeat) need "$1" $#; repeat=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) usage >&2; die "unknown argument \"$1\"" ;;
    esac
done
[ ${#codecs[@]} -gt 0 ] || codecs=(none)
case "$np" in ''|*[!0-9]*|0|1) die "-np: expected a rank count >= 2, got \"$np\"" ;; esac
case "$repeat" in ''|*[!0-9]*|0) die "--repeat: expected a count >= 1, got \"$repeat\"" ;; esac
case "$dtype" in float|double) ;; *) die "-d: expected float or double, got \"$dtype\"" ;; esac
ppn=""
if [ -n "$nodes" ]; then
    case "$nodes" in *[!0-9]*|0) die "--nodes: expected a node count >= 1, got \"$nodes\"" ;; esac
    [ "$use_netns" = 1 ] || die "--nodes cannot be combined with --no-netns or --native"
    [ "$np" -ge "$nodes" ] || die "--nodes $nodes needs at least $nodes ranks (-np $np)"
    ppn=$(( (np + nodes - 1) / nodes ))
fi

# ------------------------------------------------------- locate the binaries
# A build tree: perf/terse-osu-allreduce, mpi-wrappers/.libs/libterse.so and
# plugins/<name>/.libs/terse_<name>.so.  An install: bin/, lib/, lib/terse/.
locate() {
    if [ -n "$prefix" ]; then
        bench="$prefix/bin/terse-osu-allreduce"
        libterse="$prefix/lib/libterse.so"
        [ -f "$libterse" ] || libterse=$(ls "$prefix"/lib*/libterse.so 2>/dev/null | head -n1)
        plugin_path="$(dirname "${libterse:-$prefix/lib/x}")/terse"
    else
        [ -n "$build" ] || build="$top/build"
        build=$(cd "$build" 2>/dev/null && pwd) || die "build tree \"$build\" not found (run scripts/build.sh, or pass --build DIR or --prefix DIR)"
        bench="$build/perf/terse-osu-allreduce"
        libterse="$build/mpi-wrappers/.libs/libterse.so"
        plugin_path=$(ls -d "$build"/plugins/*/.libs 2>/dev/null | tr '\n' ':')
        plugin_path=${plugin_path%:}
    fi
    [ -x "$bench" ] || die "benchmark not found at $bench (build it: make -C ${build:-$prefix}/perf)"
    [ -f "$libterse" ] || die "libterse.so not found at ${libterse:-$prefix/lib} (build or install terse first)"
}
locate
if [ -n "$ref_build" ]; then
    ref_build=$(cd "$ref_build" 2>/dev/null && pwd) || die "--ref-build: build tree \"$ref_build\" not found"
    ref_libterse="$ref_build/mpi-wrappers/.libs/libterse.so"
    [ -f "$ref_libterse" ] || die "--ref-build: libterse.so not found at $ref_libterse"
    ref_plugin_path=$(ls -d "$ref_build"/plugins/*/.libs 2>/dev/null | tr '\n' ':')
    ref_plugin_path=${ref_plugin_path%:}
fi

# A codec's plugin module: terse_<name>.so somewhere on the plugin path.
plugin_present() {
    local name=${1%%:*} d
    local IFS=:
    for d in $plugin_path ${TERSE_PLUGIN_PATH:-}; do
        [ -f "$d/terse_$name.so" ] && return 0
    done
    return 1
}

. "$here/mpirun-tcp.sh"
if [ -n "$nodes" ]; then
    # netns-nodes.sh exports the hosts, the rsh agent and btl_tcp_if_include
    # (the data network); Open MPI uses shared memory inside a node, and so
    # does terse's UCX (the nodes' IPC namespaces keep it off other nodes).
    tcp_flags=(--mca pml ob1 --mca btl self,vader,tcp)
    ucx_envs=(-x TERSE_UCX_TLS="${TERSE_UCX_TLS:-self,sm,tcp}" -x TERSE_UCX_NET_DEVICES="${TERSE_UCX_NET_DEVICES:-data0}")
elif [ -n "$native" ]; then
    tcp_flags=()
    ucx_envs=()
    [ -n "${TERSE_UCX_TLS:-}" ] && ucx_envs+=(-x TERSE_UCX_TLS)
    [ -n "${TERSE_UCX_NET_DEVICES:-}" ] && ucx_envs+=(-x TERSE_UCX_NET_DEVICES)
fi
bench_args=(-m "$sizes" -i "$iters" -x "$warmup" -L "$limit" -d "$dtype" -t "$kind" -f -o csv ${extra[@]+"${extra[@]}"})

# --------------------------------------------------- inside the namespace
if [ -n "$inside" ]; then
    step=0 total=0
    if [ -n "$progress" ]; then step=$(( ${progress%/*} - 1 )); total=${progress#*/}; fi
    label() {
        step=$((step + 1))
        if [ -n "$progress" ]; then printf '[%d/%d] ' "$step" "$total" >&2; fi
        printf 'np=%s%s rate=%s %s%s ...\n' "$np" "${nodes:+ nodes=$nodes}" "$rate" "$1" "${2:+ $2}" >&2
    }
    # shellcheck disable=SC2086
    run_one() {  # name, then environment assignments for mpirun -x
        local name=$1; shift
        local t0=$SECONDS
        "$mpirun_cmd" "${mpi_flags[@]}" -np "$np" ${tcp_flags[@]+"${tcp_flags[@]}"} ${MPIRUN_ARGS:-} "$@" \
            "$bench" "${bench_args[@]}" >"$workdir/$name.csv" 2>"$workdir/$name.err"
        local rc=$?
        echo "$rc" >"$workdir/$name.rc"
        if [ "$rc" != 0 ]; then
            echo "    failed (exit $rc) after $((SECONDS - t0)) s; last lines of its output:" >&2
            tail -n 5 "$workdir/$name.err" | sed 's/^/    | /' >&2
        else
            echo "    done in $((SECONDS - t0)) s" >&2
        fi
    }
    # One run: "baseline", or SIDE:I (SIDE terse or ref, I the codec's
    # index, 1-based).
    run_step() {
        local what=$1 r=$2 rep=$3
        if [ "$what" = baseline ]; then
            label "plain MPI (baseline)" "$rep"
            (unset LD_PRELOAD; run_one "baseline.$r")
            return
        fi
        local side=${what%%:*} i=${what#*:}
        local c=${codecs[$((i - 1))]}
        local lib=$libterse pp=$plugin_path tag=""
        if [ "$side" = ref ]; then lib=$ref_libterse pp=$ref_plugin_path tag=" (ref build)"; fi
        label "terse$tag codec=$c" "$rep"
        envs=(-x LD_PRELOAD="$lib" -x TERSE_CODEC="$c" -x TERSE_PLUGIN_PATH="$pp${TERSE_PLUGIN_PATH:+:$TERSE_PLUGIN_PATH}"
              ${ucx_envs[@]+"${ucx_envs[@]}"})
        if [ "$side" = ref ]; then terse_passthrough ${ref_unset[@]+"${ref_unset[@]}"}; else terse_passthrough; fi
        # Local ranks inherit mpirun's whole environment, -x or not: what
        # the reference build must not see is unset around it.
        if [ "$side" = ref ] && [ ${#ref_unset[@]} -gt 0 ]; then
            (unset "${ref_unset[@]}"; run_one "$side$i.$r" "${envs[@]}")
        else
            run_one "$side$i.$r" "${envs[@]}"
        fi
    }
    steps=(baseline)
    for i in $(seq 1 ${#codecs[@]}); do
        [ -n "$ref_build" ] && steps+=("ref:$i")
        steps+=("terse:$i")
    done
    # The order rotates every round, so that no run always follows another
    # (the host's speed drifts over minutes, and a run after a pause or
    # after another setting's may find it otherwise); the "rounds" column
    # compares the runs of one round.
    n=${#steps[@]}
    for r in $(seq 1 "$repeat"); do
        rep=""
        [ "$repeat" -gt 1 ] && rep="(round $r/$repeat)"
        for k in $(seq 0 $((n - 1))); do
            run_step "${steps[$(( (k + r - 1) % n ))]}" "$r" "$rep"
        done
    done
    exit 0
fi

# ------------------------------------------------------------ outside: run
# Codecs whose plugin is missing are dropped here with a note, so one
# missing module does not cost a whole namespace run.
kept=()
for c in "${codecs[@]}"; do
    if plugin_present "$c"; then kept+=("$c")
    else echo "$prog: skipping codec \"$c\": plugin terse_${c%%:*}.so not found in $plugin_path" >&2; fi
done
if [ -n "$check_codecs" ]; then
    for c in ${kept[@]+"${kept[@]}"}; do echo "$c"; done
    exit 0
fi
[ ${#kept[@]} -gt 0 ] || die "no codec left to run (plugins missing)"
codecs=("${kept[@]}")

# Without a namespace no link is shaped: the label says which fabric ran
# (set before the inner run is built, whose progress lines print it too).
if [ -z "$nodes" ] && [ "$use_netns" != 1 ]; then
    if [ -n "$native" ]; then rate="native"; else rate="host-lo"; fi
fi
workdir=$(mktemp -d "${TMPDIR:-/tmp}/terse-compare.XXXXXX")
trap 'rm -rf "$workdir"' EXIT
inner=("$0" --inside "$workdir" ${native:+--native} ${nodes:+--nodes "$nodes"} --repeat "$repeat" -np "$np" --rate "$rate" -m "$sizes" -i "$iters" -x "$warmup" -L "$limit"
       -d "$dtype" -t "$kind" ${prefix:+--prefix "$prefix"} ${build:+--build "$build"} ${ref_build:+--ref-build "$ref_build"} ${progress:+--progress "$progress"})
for c in "${codecs[@]}"; do inner+=(--codec "$c"); done
for v in ${ref_unset[@]+"${ref_unset[@]}"}; do inner+=(--ref-unset "$v"); done
inner+=(-- ${extra[@]+"${extra[@]}"})
if [ -n "$nodes" ]; then
    "$here/netns-nodes.sh" --nodes "$nodes" --ppn "$ppn" --rate "$rate" ${delay:+--delay "$delay"} -- "${inner[@]}" || exit $?
elif [ "$use_netns" = 1 ]; then
    "$here/netns-run.sh" --rate "$rate" ${delay:+--delay "$delay"} -- "${inner[@]}" || exit $?
else
    "${inner[@]}" || exit $?
fi

# ------------------------------------------------------------ outside: table
# median(a, k): the median of a[1..k] (sorted in place), for the awk
# programs below.
awk_median='
function median(a, k,    f, g, t) {
    for (f = 2; f <= k; f++) for (g = f; g > 1 && a[g] < a[g - 1]; g--) { t = a[g]; a[g] = a[g - 1]; a[g - 1] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}'
# Rounds -> one result per run: the median latency over rounds per size (a
# failed round fails the run).  Errors and ratios come from the first round.
ref_names=""
[ -n "$ref_build" ] && ref_names=$(seq -f 'ref%g' 1 ${#codecs[@]})
for name in baseline $(seq -f 'terse%g' 1 ${#codecs[@]}) $ref_names; do
    rc=0
    files=()
    for r in $(seq 1 "$repeat"); do
        [ "$(cat "$workdir/$name.$r.rc" 2>/dev/null || echo 1)" = 0 ] || { rc=$(cat "$workdir/$name.$r.rc" 2>/dev/null || echo 1); cp "$workdir/$name.$r.err" "$workdir/$name.err"; break; }
        files+=("$workdir/$name.$r.csv")
    done
    echo "$rc" >"$workdir/$name.rc"
    [ "$rc" = 0 ] || continue
    cp "$workdir/$name.1.err" "$workdir/$name.err"
    awk -F, -v OFS=, -v np="$np" -v rounds="$repeat" "$awk_median"'
    FNR == 1 { file++ }
    /^#/ { if (file == 1) print; next }
    /^size,/ { if (file == 1) print; next }
    {
        if (file == 1) { order[++n] = $1; row[$1] = $0 }
        v[$1, file] = $2; if (file == 1 || $3 < mn[$1]) mn[$1] = $3; if (file == 1 || $4 > mx[$1]) mx[$1] = $4
        it[$1] += $5
    }
    END {
        for (k = 1; k <= n; k++) {
            s = order[k]
            for (f = 1; f <= rounds; f++) a[f] = v[s, f]
            med = median(a, rounds)
            split(row[s], c, ",")
            c[2] = sprintf("%.2f", med); c[3] = sprintf("%.2f", mn[s]); c[4] = sprintf("%.2f", mx[s]); c[5] = it[s]
            c[6] = sprintf("%.4f", med > 0 ? s / (med * 1e-6) / 1e9 * 2 * (np - 1) / np : 0)
            line = c[1]; for (j = 2; j in c; j++) line = line OFS c[j]
            print line
            delete c
        }
    }' "${files[@]}" >"$workdir/$name.csv"
done
rc_of() { cat "$workdir/$1.rc" 2>/dev/null || echo 1; }
meta() { sed -n "s/^# $2: //p" "$workdir/$1.csv" | head -n1; }
mpi_lib=$(meta baseline "MPI library")
[ "$(rc_of baseline)" = 0 ] || { echo "$prog: the plain MPI baseline failed:" >&2; cat "$workdir/baseline.err" >&2; exit 1; }

echo "# terse vs plain MPI: MPI_Allreduce(SUM), np=$np, $dtype, data=$kind, rate=$rate${delay:+, delay=$delay}"
echo "# MPI library: $mpi_lib"
if [ -n "$nodes" ]; then
    echo "# Fabric: $nodes emulated nodes (perf/netns-nodes.sh) of up to $ppn ranks, ranks filled in order;"
    echo "#   shared memory inside a node, each node's link to the switch shaped to $rate each way."
elif [ "$use_netns" = 1 ]; then
    echo "# Fabric: all $np ranks share ONE loopback shaped to $rate in a private network namespace"
    echo "#   (shared-link model: the rate is the aggregate of all ranks' traffic, not per rank)."
elif [ -n "$native" ]; then
    echo "# Fabric: none emulated (--native): MPI and UCX pick their own transports (shared memory)."
else
    echo "# Fabric: the host's unshaped loopback (--no-netns)."
fi
if [ -n "$nodes" ]; then
    echo "# Baseline: mpirun ${tcp_flags[*]} (Open MPI: vader inside a node, TCP on data0 between nodes)"
    echo "# terse:    same mpirun flags + LD_PRELOAD=$libterse ${ucx_envs[*]}"
elif [ -n "$native" ]; then
    echo "# Baseline: mpirun ${mpi_flags[*]} (the MPI library's default transports)"
    echo "# terse:    same mpirun flags + LD_PRELOAD=$libterse ${ucx_envs[*]:-}"
else
    echo "# Baseline: mpirun ${tcp_flags[*]} (Open MPI on TCP over lo)"
    echo "# terse:    same mpirun flags + LD_PRELOAD=$libterse TERSE_UCX_TLS=${TERSE_UCX_TLS:-tcp} TERSE_UCX_NET_DEVICES=${TERSE_UCX_NET_DEVICES:-lo}"
fi
env | grep '^TERSE_' | grep -v '^TERSE_\(CODEC\|PLUGIN_PATH\|UCX_TLS\|UCX_NET_DEVICES\)=' | sed 's/^/#   also /'
[ -n "$ref_build" ] && echo "# ref:      the same runs with LD_PRELOAD=$ref_libterse (interleaved in every round)"
echo "# speedup = MPI avg / terse avg latency (>1: terse faster); busbw = size/avg * 2(n-1)/n"
echo "# rounds = the median of each round's own MPI / terse ratio (the order of the runs rotates every round)"
[ -n "$ref_build" ] && echo "# vs ref = ref avg / terse avg latency (>1: this build faster than the reference build)"

fail=0
i=0
for c in "${codecs[@]}"; do
    i=$((i + 1))
    echo
    echo "## codec $c"
    if [ "$(rc_of terse$i)" != 0 ]; then
        echo "terse run FAILED (exit $(rc_of terse$i)):"
        tail -n 15 "$workdir/terse$i.err" | sed 's/^/  | /'
        fail=1
        continue
    fi
    ref_csv=/dev/null
    if [ -n "$ref_build" ]; then
        if [ "$(rc_of ref$i)" = 0 ]; then ref_csv="$workdir/ref$i.csv"
        else echo "reference build run FAILED (exit $(rc_of ref$i)); its columns are left out:"; tail -n 5 "$workdir/ref$i.err" | sed 's/^/  | /'; fi
    fi
    # Each round's own ratio, MPI / terse per size, and their median over
    # the rounds (a round whose run failed counts in neither).
    rounds_csv="$workdir/terse$i.rounds"
    pairs=()
    for r in $(seq 1 "$repeat"); do
        [ "$(cat "$workdir/baseline.$r.rc" 2>/dev/null)" = 0 ] && [ "$(cat "$workdir/terse$i.$r.rc" 2>/dev/null)" = 0 ] &&
            pairs+=("$workdir/baseline.$r.csv" "$workdir/terse$i.$r.csv")
    done
    awk -F, -v OFS=, "$awk_median"'
    /^#/ || /^size,/ { next }
    FILENAME ~ /\/baseline\.[0-9]+\.csv$/ { base[$1] = $2; next }
    $1 in base && $2 > 0 { n[$1]++; q[$1, n[$1]] = base[$1] / $2 }
    END {
        for (s in n) {
            k = n[s]
            for (f = 1; f <= k; f++) a[f] = q[s, f]
            print s, median(a, k)
        }
    }' ${pairs[@]+"${pairs[@]}"} /dev/null >"$rounds_csv"
    # Join the CSVs on size (the reference build's third, when there is one;
    # the rounds' ratios last).
    awk -F, -v np="$np" -v nodes="$nodes" -v rate="$rate" -v delay="${delay:-0}" -v codec="$c" -v dtype="$dtype" -v kind="$kind" \
        -v csv="$csv_out" -v rounds_csv="$rounds_csv" '
    function human(b) {
        if (b >= 1073741824 && b % 1073741824 == 0) return (b / 1073741824) "G"
        if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
        if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
        return b
    }
    function us(v) { return v < 100 ? sprintf("%.2f", v) : sprintf("%.1f", v) }
    FILENAME == rounds_csv { per_round[$1] = $2; next }
    FNR == 1 { file++ }
    /^#/ || /^size,/ { next }
    file == 1 { mavg[$1] = $2; mbw[$1] = $6; merr[$1] = $9; mit[$1] = $5; next }
    file == 2 {
        order[++n] = $1; tavg[$1] = $2; tbw[$1] = $6; ratio[$1] = $7; tabs[$1] = $8; terr[$1] = $9
        tit[$1] = $5; ident[$1] = $10
        next
    }
    file == 3 { ravg[$1] = $2; has_ref = 1; next }
    END {
        printf "%-7s %13s %13s %8s %7s %10s %10s %7s %10s %10s", "Size", "MPI avg(us)", "terse avg(us)",
               "speedup", "rounds", "MPI busbw", "terse bw", "wire", "MPI", "terse"
        if (has_ref) printf " %13s %8s", "ref avg(us)", "vs ref"
        printf "\n"
        printf "%-7s %13s %13s %8s %7s %10s %10s %7s %10s %10s\n", "", "", "", "", "", "(GB/s)", "(GB/s)", "ratio",
               "max rel", "max rel"
        for (k = 1; k <= n; k++) {
            s = order[k]
            if (!(s in mavg)) continue
            sp = tavg[s] > 0 ? mavg[s] / tavg[s] : 0
            printf "%-7s %13s %13s %7.2fx %6sx %10.3f %10.3f %7s %10.2e %10.2e", human(s), us(mavg[s]), us(tavg[s]),
                   sp, (s in per_round ? sprintf("%.2f", per_round[s]) : "-"), mbw[s], tbw[s],
                   (ratio[s] == "" ? "-" : ratio[s]), merr[s], terr[s]
            if (has_ref) printf " %13s %7.2fx", (s in ravg ? us(ravg[s]) : "-"), (s in ravg && tavg[s] > 0 ? ravg[s] / tavg[s] : 0)
            printf "%s\n", (ident[s] == "1" ? "" : "  (ranks differ!)")
            if (csv != "") {
                if (!header_done) {
                    if ((getline line < csv) <= 0)
                        print "np,rate,delay,codec,dtype,data,size,mpi_avg_us,terse_avg_us,speedup,mpi_busbw_gbs,terse_busbw_gbs,wire_ratio,mpi_max_rel_err,terse_max_abs_err,terse_max_rel_err,mpi_iterations,terse_iterations,terse_identical,nodes" >> csv
                    close(csv); header_done = 1
                }
                printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%.4f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", np, rate, delay, codec, dtype,
                       kind, s, mavg[s], tavg[s], sp, mbw[s], tbw[s], ratio[s], merr[s], tabs[s], terr[s], mit[s],
                       tit[s], ident[s], nodes >> csv
            }
        }
    }' "$workdir/baseline.csv" "$workdir/terse$i.csv" "$ref_csv" "$rounds_csv"
    if ! grep -q '^# terse: [0-9]' "$workdir/terse$i.csv"; then
        echo "note: terse was not loaded in this run (LD_PRELOAD of $libterse had no effect)"
    fi
done
exit $fail
