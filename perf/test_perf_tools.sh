#!/bin/sh
# make check for perf/: the benchmark's checks and columns (plain MPI and
# under terse), its option errors, netns-run.sh (as root), compare.sh and
# osu-public.sh's columns.
# Correctness only: no timing is asserted.
set -u
: "${MPIRUN:?run through make check (MPIRUN not set)}"
srcdir=${srcdir:-.}
bench=./terse-osu-allreduce
fail() { echo "FAIL: $*" >&2; exit 1; }
run_np() { np=$1; shift; timeout -k 10 120 $MPIRUN $MPIRUN_FLAGS -np "$np" "$@"; }
rows() { grep -v '^#' | grep -v '^size,'; }

echo "== plain MPI: every size passes -c, error columns present, no wire ratio"
for np in 2 3; do
    out=$(run_np $np $bench -m 4:256K -i 3 -x 1 -c -f -o csv 2>&1) || { echo "$out"; fail "plain np=$np"; }
    echo "$out" | grep -q "^# terse: not loaded" || { echo "$out"; fail "header should say terse is not loaded"; }
    n=$(echo "$out" | rows | wc -l)
    [ "$n" = 17 ] || { echo "$out"; fail "expected 17 sizes (4 B .. 256 KiB), got $n"; }
    echo "$out" | rows | awk -F, '$7 != "" || $10 != 1 || $11 != "pass" || $9 > 1e-5 { bad = 1; print "bad row: " $0 }
                                  END { exit bad }' || fail "plain np=$np rows"
done
for kind in gauss smooth file:${TERSE_SHARED_DATA:-$srcdir/../../shared/data}/ecg_108000_f32.raw; do
    case $kind in file:*) [ -f "${kind#file:}" ] || { echo "(no shared data: skip $kind)"; continue; } ;; esac
    run_np 2 $bench -m 1K:64K -d double -t "$kind" -i 2 -x 0 -c >/dev/null || fail "data kind $kind"
done

echo "== the check fails when the tolerance is impossible"
out=$(run_np 2 $bench -m 4K:4K -i 1 -x 0 -c -e 0 -t smooth 2>&1) && fail "-c -e 0 should fail on float sums"
echo "$out" | grep -q "Fail" || { echo "$out"; fail "no Fail in the table"; }

echo "== option errors name the option and the bad value"
out=$(run_np 1 $bench -m 4K:x 2>&1) && fail "-m 4K:x accepted"
echo "$out" | grep -q -- '-m: expected MIN:MAX in bytes' || { echo "$out"; fail "-m message"; }
out=$(run_np 1 $bench -t cauchy 2>&1) && fail "-t cauchy accepted"
echo "$out" | grep -q -- "-t: expected laplace, gauss, smooth or file:PATH, got \"cauchy\"" || { echo "$out"; fail "-t message"; }

if [ -f "${TERSE_LIB:-}" ]; then
    echo "== under terse (LD_PRELOAD, codec none): lossless, identical, wire ratio reported"
    out=$(run_np 3 -x LD_PRELOAD="$TERSE_LIB" -x TERSE_PLANNER=fixed -x TERSE_MIN_BYTES=0 -x TERSE_CODEC=none \
          $bench -m 4:1M -i 2 -x 1 -c -o csv 2>&1) || { echo "$out"; fail "terse none"; }
    echo "$out" | grep -q "^# terse: [0-9].* loaded, TERSE_CODEC=none" || { echo "$out"; fail "header should say terse is loaded"; }
    echo "$out" | rows | awk -F, '$7 == "" || $7 < 0.9 || $10 != 1 || $11 != "pass" { bad = 1; print "bad row: " $0 }
                                  END { exit bad }' || fail "terse none rows"
    if ls $(echo "$TERSE_PLUGIN_PATH" | tr ':' ' ') 2>/dev/null | grep -q '^terse_quantize.so$'; then
        echo "== under terse, quantize:bits=8 compresses and stays within 5e-2"
        out=$(run_np 2 -x LD_PRELOAD="$TERSE_LIB" -x TERSE_PLANNER=fixed -x TERSE_MIN_BYTES=0 -x TERSE_CODEC=quantize:bits=8 \
              $bench -m 64K:1M -i 2 -x 1 -c -e 5e-2 -o csv 2>&1) || { echo "$out"; fail "terse quantize"; }
        echo "$out" | rows | awk -F, '$7 == "" || $7 < 2 { bad = 1; print "no compression: " $0 } END { exit bad }' \
            || fail "quantize:bits=8 should shrink the wire at least 2x"
    fi
else
    echo "(libterse.so not built: skip the terse runs)"
fi

echo "== compare.sh --no-netns prints one row per size for each codec"
out=$(timeout -k 10 180 "$srcdir/compare.sh" --build "$TERSE_BUILDDIR" --no-netns -np 2 -m 4K:16K -i 2 -x 1 --codec none 2>&1) \
    || { echo "$out"; fail "compare.sh"; }
echo "$out" | grep -q "^## codec none" || { echo "$out"; fail "compare.sh: no codec section"; }
n=$(echo "$out" | grep -c '^[0-9]*K  *[0-9.]*  *[0-9.]*  *[0-9.]*x ')
[ "$n" = 3 ] || { echo "$out"; fail "compare.sh: expected 3 rows, got $n"; }

echo "== osu-public.sh: ratio of medians, and the median of each round's ratio"
# A launcher that runs nothing and prints one 8-byte latency: 10 us, 11
# under terse, and twice that from its 4th run on (a host that changed
# speed in the middle of round 2, between terse's run and plain's).  Each
# round's ratio is 10/11 but round 2's, 20/11; the medians, plain's 20 and
# terse's 11, make terse look 1.82 times faster.
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
cat > "$fake/mpirun" <<'FAKE'
#!/bin/sh
n=$(cat "$0.count" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.count"
t=10; [ "$n" -ge 3 ] && t=20
case "$*" in *LD_PRELOAD=*) t=$((t + t / 10)) ;; esac
echo "8 $t.00"
FAKE
chmod +x "$fake/mpirun"
out=$(MPIRUN="$fake/mpirun" "$srcdir/osu-public.sh" -np 2 --osu "$bench" --build "$TERSE_BUILDDIR" --rounds 3 \
      --set t= -- -m 8:8 2>/dev/null) || { echo "$out"; fail "osu-public.sh"; }
echo "$out"
echo "$out" | awk '$1 == 8 { ok = $2 == 20 && $3 == 11 && $4 == 1.82 && $5 == 0.91 } END { exit !ok }' ||
    fail "osu-public.sh: want plain 20, terse 11, speed 1.82, rounds 0.91"

echo "== compare.sh: the order rotates every round, and the median of each round's ratio"
# The same host as above, for compare.sh's CSV: with the order rotating
# (baseline, terse; terse, baseline; baseline, terse) the medians are plain
# 20 and terse 11, speedup 1.82, and the rounds' ratios 0.91, 1.82, 0.91.
# Without the rotation the medians would read 10 and 22 (0.45).
rm -f "$fake/mpirun.count"
cat > "$fake/mpirun" <<'FAKE'
#!/bin/sh
n=$(cat "$0.count" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.count"
t=10; [ "$n" -ge 3 ] && t=20
case "$*" in *LD_PRELOAD=*) t=$((t + t / 10)); echo "# terse: 1" ;; esac
echo "size,avg_us,min_us,max_us,iterations,busbw_gbs,wire_ratio,max_abs_err,max_rel_err,identical"
echo "4096,$t.00,$t.00,$t.00,2,0.1,1.00,0,0,1"
FAKE
chmod +x "$fake/mpirun"
out=$(MPIRUN="$fake/mpirun" "$srcdir/compare.sh" --build "$TERSE_BUILDDIR" --no-netns -np 2 -m 4K:4K --repeat 3 \
      --codec none 2>/dev/null) || { echo "$out"; fail "compare.sh with a fake launcher"; }
echo "$out" | grep '^4K '
echo "$out" | awk '$1 == "4K" { ok = $2 == 20 && $3 == 11 && $4 == "1.82x" && $5 == "0.91x" } END { exit !ok }' ||
    { echo "$out"; fail "compare.sh: want MPI 20, terse 11, speedup 1.82x, rounds 0.91x"; }
rm -rf "$fake"
trap - EXIT

if [ "$(id -u)" = 0 ] && command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1 && ip netns add terse-probe-$$ 2>/dev/null; then
    ip netns delete terse-probe-$$
    echo "== netns-run.sh: shaped loopback, exit status, clean-up"
    out=$("$srcdir/netns-run.sh" --rate 1gbit -- sh -c 'tc qdisc show dev lo; ip -o link show lo; echo NS=$(ip netns identify $$)')
    echo "$out"
    echo "$out" | grep -q "tbf .*rate 1Gbit" || fail "no tbf qdisc at 1Gbit on lo"
    echo "$out" | grep -q "UP" || fail "lo is not up"
    ns=$(echo "$out" | sed -n 's/^NS=//p')
    [ -n "$ns" ] || fail "command did not run inside a named namespace"
    ip netns list | grep -q "^$ns\b" && fail "namespace $ns left behind"
    "$srcdir/netns-run.sh" --rate unshaped -- sh -c 'exit 7'; rc=$?
    [ $rc = 7 ] || fail "exit status not passed on (got $rc, want 7)"
    if out=$("$srcdir/netns-run.sh" --rate 100mbit --delay 1ms -- tc qdisc show dev lo 2>&1); then
        echo "$out" | grep -q netem && echo "$out" | grep -q tbf || { echo "$out"; fail "netem + tbf not both present"; }
    else
        echo "$out" | grep -q "lacks sch_netem" || { echo "$out"; fail "--delay failed without naming netem"; }
        echo "(no netem in this kernel: --delay refused with a clear message)"
    fi
    out=$("$srcdir/netns-run.sh" --rate fast -- true 2>&1) && fail "--rate fast accepted"
    echo "$out" | grep -q 'expected a tc rate' || { echo "$out"; fail "bad rate message"; }
else
    echo "(not root or no network namespaces: skip netns-run.sh checks)"
fi
echo "PASS"
