#!/bin/bash
# The public OSU osu_allreduce (or any OSU-style latency binary) against the
# plain MPI library and terse preloaded with one or more settings, runs
# interleaved in rounds (the order rotates every round), median latency per
# size, and each setting's speed relative to plain MPI (plain / terse: above
# 1 is faster), as the ratio of the medians and as the median of each
# round's own ratio.
#
#   perf/osu-public.sh -np 2 --osu /work/osu-build/mpi/collective/osu_allreduce \
#       --rounds 5 --set default= --set q8=TERSE_CODEC=quantize:bits=8 -- -m 8:67108864 -i 100 -x 10
#
# Each --set NAME=VARS runs terse with VARS (space-separated VAR=VALUE,
# possibly none) on top of the caller's TERSE_* environment; NAME labels
# its columns.  Shared memory (Open MPI's vader, UCX's defaults) unless
# MPIRUN_ARGS says otherwise.
set -u
prog=osu-public.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
np=2 osu="" rounds=5 build="$top/build" bind=""
names=() vars=()
usage() {
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    cat <<USAGE
Options: -np N (default 2), --osu PATH (required), --rounds R (default 5),
  --set NAME=VARS (repeatable; default: one set "default" with no VARS),
  --build DIR (terse build tree, default $top/build), --bind (mpirun
  --bind-to core), -- then the benchmark's own options.
USAGE
}
die() { echo "$prog: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    -np) [ $# -ge 2 ] || die "-np needs a value"; np=$2; shift 2 ;;
    --osu) [ $# -ge 2 ] || die "--osu needs a path"; osu=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || die "--rounds needs a value"; rounds=$2; shift 2 ;;
    --set) [ $# -ge 2 ] || die "--set needs NAME=VARS"; names+=("${2%%=*}"); vars+=("${2#*=}"); shift 2 ;;
    --build) [ $# -ge 2 ] || die "--build needs a directory"; build=$2; shift 2 ;;
    --bind) bind="--bind-to core"; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
done
[ -x "$osu" ] || die "--osu: '$osu' is not an executable (e.g. find /work/osu-build -name osu_allreduce)"
case "$np$rounds" in *[!0-9]*) die "-np and --rounds take whole numbers" ;; esac
[ ${#names[@]} -gt 0 ] || { names=(default); vars=(""); }
lib="$build/mpi-wrappers/.libs/libterse.so"
[ -f "$lib" ] || die "no $lib (build terse first, or give --build)"
plugins=$(ls -d "$build"/plugins/*/.libs | tr '\n' ':')
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mpirun=${MPIRUN:-mpirun}
osu_args=("$@")
labels=(plain "${names[@]}")
for r in $(seq 1 "$rounds"); do
    n=${#labels[@]}
    for k in $(seq 0 $((n - 1))); do
        i=$(( (k + r - 1) % n ))
        label=${labels[$i]}
        echo "$prog: round $r/$rounds: $label" >&2
        if [ "$label" = plain ]; then
            $mpirun --oversubscribe --allow-run-as-root $bind -np "$np" --mca pml ob1 --mca btl self,vader \
                ${MPIRUN_ARGS:-} "$osu" "${osu_args[@]}" 2>/dev/null | awk '/^[0-9]/ { print $1, $2 }' >> "$work/$label"
        else
            xs=(-x LD_PRELOAD="$lib" -x TERSE_PLUGIN_PATH="$plugins")
            for v in $(env | grep -o '^TERSE_[A-Z_]*=' | tr -d =); do xs+=(-x "$v"); done
            for v in ${vars[$((i - 1))]}; do xs+=(-x "$v"); done
            $mpirun --oversubscribe --allow-run-as-root $bind -np "$np" --mca pml ob1 --mca btl self,vader \
                ${MPIRUN_ARGS:-} "${xs[@]}" "$osu" "${osu_args[@]}" 2>/dev/null | awk '/^[0-9]/ { print $1, $2 }' >> "$work/$label"
        fi
    done
done
median_of() {  # median of the numbers on stdin, one a line, with format $1 ("-" for none)
    sort -g | awk -v f="$1" '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf f "\n", v[(NR + 1) / 2]; else printf f "\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
median() {  # median of the latencies of size $2 in file $1
    awk -v s="$2" '$1 == s { print $2 }' "$1" | median_of "%.2f"
}
# The median over rounds of plain / terse within a round (the k-th time of
# a size in each file is round k's).  On a host whose speed changes between
# minutes (8-byte calls at 0.45 and 0.75 us, perf/README.md), the ratio of
# medians can compare two speeds; this compares each round with itself.
round_speed() {  # plain file $1, terse file $2, size $3
    awk -v s="$3" 'FNR == 1 { f++ } $1 == s { if (f == 1) p[++np] = $2; else t[++nt] = $2 }
        END { n = np < nt ? np : nt; for (k = 1; k <= n; k++) if (t[k] > 0) print p[k] / t[k] }' "$1" "$2" |
        median_of "%.2f"
}
echo "# $(basename "$osu") -np $np ${osu_args[*]}; $rounds rounds interleaved; median latency (us);"
echo "# speed = plain / terse of the medians; rounds = median of each round's plain / terse"
printf "%-10s %10s" size plain
for nm in "${names[@]}"; do printf " %10s %7s %7s" "$nm" speed rounds; done
printf "\n"
for size in $(awk '{ print $1 }' "$work/plain" | sort -n -u); do
    p=$(median "$work/plain" "$size")
    printf "%-10s %10s" "$size" "$p"
    for nm in "${names[@]}"; do
        t=$(median "$work/$nm" "$size")
        printf " %10s %7s %7s" "$t" "$(awk -v p="$p" -v t="$t" 'BEGIN { if (t > 0) printf "%.2f", p / t; else print "-" }')" \
            "$(round_speed "$work/plain" "$work/$nm" "$size")"
    done
    printf "\n"
done
