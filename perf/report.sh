#!/bin/bash
# Comparison report: sweep message sizes, codecs and emulated fabric rates for
# several rank counts, running plain MPI and terse side by side (perf/compare.sh
# once per rank count and rate: one baseline, then every codec, all in the
# same shaped namespace), and write
#   perf/results/<timestamp>/results.csv   one row per (np, rate, codec, size)
#   perf/results/<timestamp>/summary.md    markdown tables
#   perf/results/<timestamp>/*.png         latency and bus bandwidth against
#                                          size per (np, rate); error against
#                                          wire ratio
# Needs root (network namespaces) and gnuplot for the plots.
set -u

prog=report.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

usage() {
    cat <<EOF
Usage: perf/report.sh [options]
  --quick          small sweep for a first look (a few minutes on 2 cores):
                   np 4, rates 1gbit and unshaped, sizes 1M:16M,
                   codecs none quantize:bits=8 topk:ratio=0.01
  --np "N ..."     rank counts (default "2 4")
  --rates "R ..."  loopback rates (default "1gbit 10gbit 25gbit unshaped")
  --codecs "C ..." codecs (default "none quantize:bits=8 quantize:bits=4
                   topk:ratio=0.01 errbound:rel=1e-3 zfp:rate=8"); a codec
                   whose plugin is missing is skipped with a note
  -m MIN:MAX       sizes in bytes (default 64K:64M)
  -i N, -x N, -L S iterations, warmup, seconds cap per size (default 20, 2, 2)
  -d TYPE, -t KIND datatype and data kind, as terse-osu-allreduce
  --repeat N       N interleaved rounds, median latency (steadier; N times longer)
  --out DIR        output folder (default perf/results/<timestamp>)
  --build DIR      terse build tree (default: $top/build)
  --prefix DIR     installed terse instead of a build tree
  -h, --help       this help
TERSE_* variables in the environment are passed to the terse runs.
EOF
}
die() { echo "$prog: $*" >&2; exit 2; }

nps="2 4"
rates="1gbit 10gbit 25gbit unshaped"
codecs="none quantize:bits=8 quantize:bits=4 topk:ratio=0.01 errbound:rel=1e-3 zfp:rate=8"
sizes=64K:64M iters=20 warmup=2 limit=2 dtype=float kind=laplace out="" loc=() repeat=1
need() { [ "$2" -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) nps=4; rates="1gbit unshaped"; sizes=1M:16M; codecs="none quantize:bits=8 topk:ratio=0.01"
             iters=10; warmup=2; limit=1; shift ;;
    --np) need "$1" $#; nps=$2; shift 2 ;;
    --rates) need "$1" $#; rates=$2; shift 2 ;;
    --codecs) need "$1" $#; codecs=$2; shift 2 ;;
    -m) need "$1" $#; sizes=$2; shift 2 ;;
    -i) need "$1" $#; iters=$2; shift 2 ;;
    -x) need "$1" $#; warmup=$2; shift 2 ;;
    -L) need "$1" $#; limit=$2; shift 2 ;;
    -d) need "$1" $#; dtype=$2; shift 2 ;;
    -t) need "$1" $#; kind=$2; shift 2 ;;
    --out) need "$1" $#; out=$2; shift 2 ;;
    --repeat) need "$1" $#; repeat=$2; shift 2 ;;
    --build|--prefix) need "$1" $#; loc=("$1" "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument \"$1\"" ;;
    esac
done
[ "$(id -u)" = 0 ] || die "must run as root: the fabric is emulated in network namespaces shaped with tc"

# Which codecs have a plugin?  compare.sh knows where the build puts them.
codec_args=()
for c in $codecs; do codec_args+=(--codec "$c"); done
present=$("$here/compare.sh" ${loc[@]+"${loc[@]}"} --check-codecs "${codec_args[@]}") || exit $?
[ -n "$present" ] || die "none of the codecs \"$codecs\" has a plugin module; build terse first"
run_codecs=()
for c in $present; do run_codecs+=(--codec "$c"); done
ncodecs=$(echo "$present" | wc -w)

[ -n "$out" ] || out="$here/results/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
csv="$out/results.csv"
log="$out/compare.log"
rm -f "$csv"
: >"$log"

set -- $nps; n_np=$#
set -- $rates; n_rates=$#
case "$repeat" in ''|*[!0-9]*|0) die "--repeat: expected a count >= 1, got \"$repeat\"" ;; esac
total=$(( n_np * n_rates * (1 + ncodecs) * repeat ))
echo "$prog: $total runs: np in {$nps} x rate in {$rates} x (MPI baseline + $ncodecs codecs), sizes $sizes"
echo "$prog: writing to $out"
t_start=$SECONDS
step=1
failed=()
for np in $nps; do
    for rate in $rates; do
        echo "=== np=$np rate=$rate" >>"$log"
        # Progress lines go to the terminal (stderr), the tables to the log.
        "$here/compare.sh" ${loc[@]+"${loc[@]}"} -np "$np" --rate "$rate" -m "$sizes" -i "$iters" -x "$warmup" \
            -L "$limit" -d "$dtype" -t "$kind" --repeat "$repeat" "${run_codecs[@]}" --csv "$csv" --progress "$step/$total" >>"$log"
        rc=$?
        [ "$rc" = 0 ] || failed+=("np=$np rate=$rate (exit $rc, see compare.log)")
        step=$(( step + (1 + ncodecs) * repeat ))
    done
done
elapsed=$(( SECONDS - t_start ))
[ -s "$csv" ] || { cat "$log" >&2; die "no results: every run failed (see $log)"; }

# ------------------------------------------------------------------ summary
mpi_lib=$(sed -n 's/^# MPI library: //p' "$log" | head -n1)
{
    echo "# terse vs plain MPI: MPI_Allreduce comparison"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'), host: $(uname -n), $(nproc) cores, $(uname -r)"
    echo "- MPI library: $mpi_lib"
    echo "- Command: \`perf/report.sh --np \"$nps\" --rates \"$rates\" --codecs \"$(echo $present)\" -m $sizes -i $iters -x $warmup -L $limit -d $dtype -t $kind --repeat $repeat\` ($elapsed s)"
    echo "- Data: $dtype, kind \`$kind\` (different on every rank); errors are against an exact double-precision reference."
    echo "- Fabric: every (np, rate) runs in its own network namespace whose loopback is shaped with tc."
    echo "  **All ranks share that one loopback: a shared-link model, the rate is the aggregate of all ranks' traffic.**"
    echo "  Open MPI runs on TCP over it (\`--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo\`);"
    echo "  terse (LD_PRELOAD) uses UCX on TCP over it (\`TERSE_UCX_TLS=tcp TERSE_UCX_NET_DEVICES=lo\`)."
    echo "- speedup = MPI avg latency / terse avg latency (>1: terse faster). busbw = size/avg x 2(n-1)/n."
    if [ ${#failed[@]} -gt 0 ]; then
        echo "- **Failed runs** (missing from the tables): ${failed[*]}"
    fi
    echo
    awk -F, -f - "$csv" <<'AWK'
    function human(b) {
        if (b >= 1073741824 && b % 1073741824 == 0) return (b / 1073741824) " GiB"
        if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
        if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
        return b " B"
    }
    NR == 1 { next }
    {
        key = $1 SUBSEP $2
        if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
        if (!(($1, $2, $4) in cseen)) { cseen[$1, $2, $4] = 1; codecs[key, ++nc[key]] = $4 }
        if (!(($1, $2, $7) in sseen)) { sseen[$1, $2, $7] = 1; sizes[key, ++ns[key]] = $7 }
        mpi[key, $7] = $8; mbw[key, $7] = $11
        t[key, $4, $7] = $9; sp[key, $4, $7] = $10; bw[key, $4, $7] = $12
        ratio[key, $4, $7] = $13; err[key, $4, $7] = $16
        if (!(($4) in gseen)) { gseen[$4] = 1; allc[++ng] = $4 }
        if ($13 != "") { r = $13 + 0; if (!($4 in rmin) || r < rmin[$4]) rmin[$4] = r; if (!($4 in rmax) || r > rmax[$4]) rmax[$4] = r }
        e = $16 + 0; if (!($4 in emax) || e > emax[$4]) emax[$4] = e
    }
    END {
        for (k = 1; k <= nk; k++) {
            key = keys[k]; split(key, p, SUBSEP)
            printf "## np=%s, rate=%s\n\n", p[1], p[2]
            printf "Average latency in us (speedup of terse over MPI in brackets).\n\n"
            printf "| Size | MPI |"; for (c = 1; c <= nc[key]; c++) printf " terse %s |", codecs[key, c]; printf "\n"
            printf "|---:|---:|"; for (c = 1; c <= nc[key]; c++) printf "---:|"; printf "\n"
            for (s = 1; s <= ns[key]; s++) {
                z = sizes[key, s]
                printf "| %s | %.0f |", human(z), mpi[key, z]
                for (c = 1; c <= nc[key]; c++) {
                    cc = codecs[key, c]
                    if ((key, cc, z) in t) printf " %.0f (%.2fx) |", t[key, cc, z], sp[key, cc, z]
                    else printf " - |"
                }
                printf "\n"
            }
            printf "\nBus bandwidth in GB/s.\n\n"
            printf "| Size | MPI |"; for (c = 1; c <= nc[key]; c++) printf " %s |", codecs[key, c]; printf "\n"
            printf "|---:|---:|"; for (c = 1; c <= nc[key]; c++) printf "---:|"; printf "\n"
            for (s = 1; s <= ns[key]; s++) {
                z = sizes[key, s]
                printf "| %s | %.3f |", human(z), mbw[key, z]
                for (c = 1; c <= nc[key]; c++) {
                    cc = codecs[key, c]
                    if ((key, cc, z) in bw) printf " %.3f |", bw[key, cc, z]; else printf " - |"
                }
                printf "\n"
            }
            printf "\n"
        }
        printf "## Compression and error, over all runs\n\n"
        printf "| Codec | wire ratio (min - max) | max relative error (max) |\n|---|---:|---:|\n"
        for (c = 1; c <= ng; c++) {
            cc = allc[c]
            if (cc in rmin) rr = sprintf("%.2f - %.2f", rmin[cc], rmax[cc]); else rr = "- (not reported)"
            printf "| %s | %s | %.2e |\n", cc, rr, emax[cc]
        }
        printf "\nMax relative error = max |terse - exact| / max |exact| over the result.\n"
    }
AWK
    echo
    echo "## Plots"
    echo
} >"$out/summary.md"

# -------------------------------------------------------------------- plots
plots=()
if command -v gnuplot >/dev/null 2>&1; then
    # gnuplot-nox may lack cairo; the libgd png terminal is always there.
    term="pngcairo size 1000,600 font ',10' noenhanced"
    gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 || term="png size 1000,600 noenhanced"
    dat="$out/plotdata"
    mkdir -p "$dat"
    # One data file per (np, rate, series): size, avg latency, busbw.
    awk -F, -v dir="$dat" '
    NR == 1 { next }
    function fname(np, rate, series) { gsub(/[^A-Za-z0-9_.=-]/, "_", series); return dir "/np" np "_" rate "__" series ".dat" }
    {
        f = fname($1, $2, "0_MPI")
        if (!((f, $7) in done)) { done[f, $7] = 1; print $7, $8, $11 > f }
        print $7, $9, $12 > fname($1, $2, "1_" $4)
        if ($13 != "") { c = $4; gsub(/[^A-Za-z0-9_.=-]/, "_", c); print $13, $16 > (dir "/err__" c ".dat") }
    }' "$csv"
    # tc rate -> GB/s ("" for unshaped).
    rate_gbs() {
        case "$1" in
        *gbit) awk -v r="${1%gbit}" 'BEGIN { print r / 8 }' ;;
        *mbit) awk -v r="${1%mbit}" 'BEGIN { print r / 8000 }' ;;
        *kbit) awk -v r="${1%kbit}" 'BEGIN { print r / 8000000 }' ;;
        *) echo "" ;;
        esac
    }
    # Keep the codec order of the run for colours and legends.
    # Colours follow the codec's place in the list, so they agree across plots.
    series_for() {  # np rate -> "file|title|style" lines, baseline first
        local f i=0
        echo "$dat/np$1_$2__0_MPI.dat|plain MPI (Open MPI, TCP)|lc rgb 'black' lw 3 dt 2"
        for c in $present; do
            i=$((i + 1))
            f="$dat/np$1_$2__1_$(printf '%s' "$c" | sed 's/[^A-Za-z0-9_.=-]/_/g').dat"
            [ -f "$f" ] && echo "$f|terse $c|lc $i lw 2"
        done
    }
    for key in $(awk -F, 'NR > 1 && !seen[$1 "_" $2]++ { print $1 "_" $2 }' "$csv"); do
        np=${key%%_*} rate=${key#*_}
        for what in latency busbw; do
            png="$out/${what}_np${np}_${rate}.png"
            if [ $what = latency ]; then col=2 ylabel="average latency (us)" logy="set logscale y; set format y '%g'"
            else col=3 ylabel="bus bandwidth (GB/s)" logy="unset logscale y; set yrange [0:*]"; fi
            plotcmd="plot "
            sep=""
            # On a shared link of rate R, n ranks moving 2(n-1)S bytes in all
            # cap an uncompressed allreduce's busbw at R/n.
            gbs=$(rate_gbs "$rate")
            if [ $what = busbw ] && [ -n "$gbs" ]; then
                plotcmd="$plotcmd$gbs/$np with lines lc rgb 'gray50' dt 3 lw 2 title 'uncompressed limit: rate/np', "
            fi
            while IFS='|' read -r f title style; do
                plotcmd="$plotcmd$sep'$f' using (\$1/1048576):$col with linespoints $style pt 7 ps 0.8 title '$title'"
                sep=", "
            done < <(series_for "$np" "$rate")
            gnuplot <<EOF 2>>"$out/gnuplot.log"
set terminal $term
set output '$png'
set title "MPI_Allreduce $dtype, np=$np, loopback $rate (shared link)"
set xlabel "message size (MiB)"
set ylabel "$ylabel"
set logscale x 2
$logy
set grid
set key outside right top
$plotcmd
EOF
            [ -s "$png" ] && plots+=("$png")
        done
    done
    # Error against wire ratio: every (np, rate, size) point of every codec.
    if ls "$dat"/err__*.dat >/dev/null 2>&1; then
        png="$out/error_vs_ratio.png"
        plotcmd="plot "
        sep=""
        pt=3 i=0
        for c in $present; do
            i=$((i + 1))
            f="$dat/err__$(printf '%s' "$c" | sed 's/[^A-Za-z0-9_.=-]/_/g').dat"
            pt=$((pt + 1))
            [ -f "$f" ] && plotcmd="$plotcmd$sep'$f' using 1:(\$2 > 0 ? \$2 : 1e-12) with points lc $i pt $pt ps 1.5 lw 2 title 'terse $c'" && sep=", "
        done
        gnuplot <<EOF 2>>"$out/gnuplot.log"
set terminal $term
set output '$png'
set title "Error against compression: every size, rank count and rate"
set xlabel "wire ratio (uncompressed bytes / bytes sent)"
set ylabel "max relative error of the result"
set logscale x 2
set logscale y
set format y '%.0e'
set grid
set key top left
$plotcmd
EOF
        [ -s "$png" ] && plots+=("$png")
    fi
    for p in ${plots[@]+"${plots[@]}"}; do echo "![$(basename "$p" .png)]($(basename "$p"))" >>"$out/summary.md"; done
else
    echo "gnuplot not found: no plots (Debian: apt-get install gnuplot-nox)" | tee -a "$out/summary.md" >&2
fi

# --------------------------------------------------------- short table now
echo
echo "Summary (average latency in us; speedup = MPI / terse):"
awk -F, '
    function human(b) { return b >= 1048576 ? (b / 1048576) "M" : b >= 1024 ? (b / 1024) "K" : b }
    NR == 1 { next }
    {
        key = "np=" $1 " rate=" $2
        if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
        if (!((key, $4) in cs)) { cs[key, $4] = 1; codecs[key, ++nc[key]] = $4 }
        if (!((key, $7) in ss)) { ss[key, $7] = 1; sizes[key, ++ns[key]] = $7 }
        mpi[key, $7] = $8; t[key, $4, $7] = $9; sp[key, $4, $7] = $10; r[key, $4, $7] = $13
        if (!((key, $4) in e) || $16 + 0 > e[key, $4]) e[key, $4] = $16 + 0
    }
    END {
        for (k = 1; k <= nk; k++) {
            key = keys[k]
            printf "\n%s\n%-6s %10s", key, "Size", "MPI"
            for (c = 1; c <= nc[key]; c++) printf " %24s", substr(codecs[key, c], 1, 24)
            printf "\n"
            for (s = 1; s <= ns[key]; s++) {
                z = sizes[key, s]
                printf "%-6s %10.0f", human(z), mpi[key, z]
                for (c = 1; c <= nc[key]; c++) {
                    cc = codecs[key, c]
                    if ((key, cc, z) in t) {
                        cell = sprintf("%.0f (%.2fx%s)", t[key, cc, z], sp[key, cc, z], r[key, cc, z] == "" ? "" : sprintf(", r%.1f", r[key, cc, z]))
                        printf " %24s", cell
                    } else printf " %24s", "-"
                }
                printf "\n"
            }
            printf "%-6s %10s", "maxrel", "-"
            for (c = 1; c <= nc[key]; c++) printf " %24s", sprintf("%.1e", e[key, codecs[key, c]])
            printf "\n"
        }
        printf "\n(rN = wire ratio: uncompressed bytes / bytes sent; maxrel = largest\n"
        printf " max |terse - exact| / max |exact| over the sizes)\n"
    }' "$csv"
echo
[ ${#failed[@]} -eq 0 ] || echo "Failed runs: ${failed[*]}"
echo "Results: $csv"
echo "Summary: $out/summary.md"
echo "Plots:   ${plots[*]:-(none)}"
echo "Log:     $log"
[ ${#failed[@]} -eq 0 ]
