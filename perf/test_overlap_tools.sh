#!/bin/sh
# make check for the overlap benchmarks: terse-osu-iallreduce (overlap table
# and idle cost), terse-train-sim and overlap.sh, plain MPI and under terse,
# 2 ranks, tiny sizes, no namespace.  Correctness of the output only: rows
# present and well formed, overlap within 0..100, every mode timed; no
# timing is asserted.
set -u
: "${MPIRUN:?run through make check (MPIRUN not set)}"
srcdir=${srcdir:-.}
osu=./terse-osu-iallreduce
sim=./terse-train-sim
fail() { echo "FAIL: $*" >&2; exit 1; }
run_np() { np=$1; shift; timeout -k 10 120 $MPIRUN $MPIRUN_FLAGS -np "$np" "$@"; }
rows() { grep -v '^#' | grep -v '^\(size\|mode\|phase\),'; }
terse_env="-x LD_PRELOAD=${TERSE_LIB:-} -x TERSE_PLANNER=fixed -x TERSE_MIN_BYTES=0 -x TERSE_CODEC=none"

# check_osu OUTPUT LABEL: 5 sizes (4 KiB .. 64 KiB), times > 0, overlap in 0..100
check_osu() {
    n=$(echo "$1" | rows | wc -l)
    [ "$n" = 5 ] || { echo "$1"; fail "$2: expected 5 sizes, got $n"; }
    echo "$1" | rows | awk -F, 'NF != 8 || $2 <= 0 || $3 <= 0 || $4 <= 0 || $5 < 0 || $5 > 100 || $8 != 3 {
                                   bad = 1; print "bad row: " $0 } END { exit bad }' || fail "$2 rows"
}
# check_sim OUTPUT LABEL: the four modes, step times > 0, blocking's speedup 1
check_sim() {
    for m in compute blocking iallreduce decoupled; do
        echo "$1" | rows | grep -q "^$m,[0-9.]*,[0-9.]*,[0-9.]*,[0-9.]*,2$" || { echo "$1"; fail "$2: no well-formed $m row"; }
    done
    echo "$1" | rows | awk -F, '$2 <= 0 || ($1 == "blocking" && $5 != "1.00") { bad = 1; print "bad row: " $0 } END { exit bad }' \
        || fail "$2 rows"
}
# check_idle OUTPUT LABEL: sleep and compute phases, CPU figures >= 0
check_idle() {
    for p in sleep compute; do
        echo "$1" | rows | grep -q "^$p," || { echo "$1"; fail "$2: no $p phase"; }
    done
    echo "$1" | rows | awk -F, 'NF != 8 || $2 <= 0 || $3 < 0 || $5 < 0 || $7 < 0 { bad = 1; print "bad row: " $0 } END { exit bad }' \
        || fail "$2 idle rows"
}

echo "== terse-osu-iallreduce, plain MPI, with and without MPI_Test calls"
for t in 0 3; do
    out=$(run_np 2 $osu -m 4K:64K -i 3 -x 1 -t $t -o csv 2>&1) || { echo "$out"; fail "plain -t $t"; }
    echo "$out" | grep -q "^# terse: not loaded" || { echo "$out"; fail "header should say terse is not loaded"; }
    check_osu "$out" "plain -t $t"
done
out=$(run_np 2 $osu -m 4K:4K -I 0.2 -o csv 2>&1) || { echo "$out"; fail "plain idle"; }
check_idle "$out" "plain"

echo "== terse-osu-iallreduce: option errors name the option and the value"
out=$(run_np 1 $osu -t x 2>&1) && fail "-t x accepted"
echo "$out" | grep -q -- '-t: expected a count of MPI_Test calls' || { echo "$out"; fail "-t message"; }
out=$(run_np 1 $osu -m 8:4 2>&1) && fail "-m 8:4 accepted"
echo "$out" | grep -q -- '-m: MIN must not exceed MAX' || { echo "$out"; fail "-m message"; }

echo "== terse-train-sim, plain MPI: the layer tables and every mode"
for model in resnet50 gpt2; do
    out=$(run_np 2 $sim --model $model --scale 0.001 --batch 1 --flops 1e12 --steps 1 --warmup 0 --rounds 2 --list -o csv 2>&1) \
        || { echo "$out"; fail "plain $model"; }
    check_sim "$out" "plain $model"
done
# The tables are the architectures' (at scale 1: their exact parameter counts).
out=$(run_np 1 $sim --model resnet50 --modes compute --flops 1e15 --steps 1 --warmup 0 --rounds 1 2>&1) || { echo "$out"; fail "resnet50 at scale 1"; }
echo "$out" | grep -q "25557032 float gradients.* in 5 buckets" || { echo "$out" | head; fail "resnet50 should have 25,557,032 parameters in 5 DDP buckets"; }
out=$(run_np 1 $sim --model gpt2 --modes compute --flops 1e16 --steps 1 --warmup 0 --rounds 1 2>&1) || { echo "$out"; fail "gpt2 at scale 1"; }
echo "$out" | grep -q "124439808 float gradients" || { echo "$out" | head; fail "gpt2 should have 124,439,808 parameters"; }
out=$(run_np 1 $sim --modes blocking,bogus 2>&1) && fail "--modes bogus accepted"
echo "$out" | grep -q -- '--modes: expected compute, blocking, iallreduce or decoupled, got "bogus"' || { echo "$out"; fail "--modes message"; }

if [ -f "${TERSE_LIB:-}" ]; then
    echo "== under terse (LD_PRELOAD, codec none, engine forced)"
    out=$(run_np 2 $terse_env $osu -m 4K:64K -i 3 -x 1 -o csv 2>&1) || { echo "$out"; fail "terse osu"; }
    echo "$out" | grep -q "^# terse: [0-9].* loaded, TERSE_CODEC=none" || { echo "$out"; fail "header should say terse is loaded"; }
    check_osu "$out" "terse"
    out=$(run_np 2 $terse_env $osu -m 64K:64K -I 0.2 -o csv 2>&1) || { echo "$out"; fail "terse idle"; }
    check_idle "$out" "terse"
    out=$(run_np 2 $terse_env $sim --model resnet50 --scale 0.002 --batch 1 --flops 1e12 --steps 1 --warmup 0 --rounds 2 -o csv 2>&1) \
        || { echo "$out"; fail "terse sim"; }
    check_sim "$out" "terse"

    echo "== overlap.sh --no-netns: the three tables, plain and terse columns"
    out=$(timeout -k 10 300 "$srcdir/overlap.sh" --build "$TERSE_BUILDDIR" --no-netns -np 2 --codec none \
          --osu "-m 16K:32K -i 2 -x 1" --sim "--scale 0.002 --batch 1 --flops 1e12 --steps 1 --warmup 0 --rounds 1" --idle 0.2 2>&1) \
        || { echo "$out"; fail "overlap.sh"; }
    echo "$out" | grep -q "^## MPI_Iallreduce overlap" || { echo "$out"; fail "overlap.sh: no overlap table"; }
    n=$(echo "$out" | grep -c '^[0-9]*  *[0-9.]* % ([0-9.]* ms)  *[0-9.]* % ([0-9.]* ms)$')
    [ "$n" = 2 ] || { echo "$out"; fail "overlap.sh: expected 2 overlap rows, got $n"; }
    for m in compute blocking iallreduce decoupled; do
        echo "$out" | grep -q "^$m  *[0-9.]* ([0-9.]*x)  *[0-9.]* ([0-9.]*x)$" || { echo "$out"; fail "overlap.sh: no $m row"; }
    done
    echo "$out" | grep -q '^terse none  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*$' || { echo "$out"; fail "overlap.sh: no idle row"; }
else
    echo "(libterse.so not built: skip the terse runs)"
fi
echo "PASS"
