#!/bin/sh
# The model planner under mpirun: results match PMPI whatever it chooses
# (bitwise, or for float sums on 3+ ranks within the rounding of the sum),
# every rank makes the same choices (the same decision lines in
# TERSE_LOG=debug, the same counts), TERSE_STATS shows each size class, and
# TERSE_CODEC=auto's errors name the candidate and what is accepted.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_PLANNER=model

# Each rank's decision lines ("planner: ... bytes: CHOICE (predicted ...)")
# without the rank prefix; all ranks must have the same list.
same_decisions() {
    np=$1
    for r in $(seq 0 $((np - 1))); do
        echo "$out" | sed -n "s/^terse\[$r\] debug: \(planner: communicator .* bytes: .*\)/\1/p" > decisions.$r
    done
    [ -s decisions.0 ] || fail "$2: no decision was logged"
    # The engine's calibration (runtime/engine_calibration.h): the same
    # operations and agreed times on every rank, only the wall time differs.
    for r in $(seq 0 $((np - 1))); do
        echo "$out" | sed -n "s/^terse\[$r\] debug: \(planner: .* engine calibrated\) in [0-9.]* ms\(.*\)/\1\2/p" \
            >> decisions.$r
    done
    # How many operations fit its budget depends on the machine's speed.
    grep -q "engine calibrated, [0-9]* operations: " decisions.0 ||
        { echo "$out"; fail "$2: the engine's calibration was not logged"; }
    # Every option measured at a size had a warm-up there first: the first
    # operations at a new size pay first touches even after a smaller one.
    # The log prints every entry's warm-up time; one that did not run reads 0.
    measured=$(grep -o "@[0-9]*K [0-9.]*us (" decisions.0 | wc -l)
    warmed=$(grep -oE "@[0-9]*K [0-9.]*us \([0-9.]*-[0-9.]*us, warm-up [0-9.]*[1-9][0-9.]*us" decisions.0 | wc -l)
    [ "$measured" -gt 0 ] && [ "$measured" -eq "$warmed" ] ||
        { grep "engine calibrated" decisions.0; fail "$2: $warmed of $measured calibrated sizes had a warm-up"; }
    for r in $(seq 1 $((np - 1))); do
        cmp -s decisions.0 decisions.$r || { diff decisions.0 decisions.$r; fail "$2: ranks 0 and $r decided differently"; }
    done
    rm -f decisions.*
}

run() {  # run NP LABEL MODE... with the caller's TERSE_* and OMPI_* settings
    np=$1 label=$2; shift 2
    out=$(TERSE_LOG=debug TERSE_STATS=all run_np $np ./test_planner_model "$@" 2>&1); rc=$?
    [ $rc -eq 0 ] || { echo "$out"; fail "$label exited $rc"; }
    echo "$out" | grep "^planner: intercepted=" | sed "s/^/$label: /"
    same_decisions $np "$label"
    echo "$out" | grep -q "^  planner: allreduce 1M\.\.2M: " || { echo "$out"; fail "$label: TERSE_STATS has no size class lines"; }
}

for np in 2 3; do
    echo "== np=$np, defaults (codec none): lossless, identical"
    run $np "np=$np none" lossless
    echo "== np=$np, quantize:bits=8: within its contract"
    TERSE_CODEC=quantize:bits=8 run $np "np=$np quantize" lossy 0.004
done

# The MPI library over TCP while terse's UCX uses shared memory: the engine
# is then the faster path for large calls, so the planner takes some.
echo "== np=2, Open MPI over TCP: the planner takes calls, results still exact"
OMPI_MCA_btl=self,tcp run 2 "np=2 mpi-over-tcp" lossless

echo "== np=2, TERSE_CODEC=auto with a budget"
TERSE_CODEC='auto:candidates=quantize:bits=8|quantize:bits=4|errbound:rel=1e-3,budget=rel:1e-2' \
    run 2 "np=2 auto" lossy 0.004

echo "== codec=auto errors name the candidate and what is accepted"
out=$(TERSE_CODEC='auto:candidates=quantize:bits=8|nosuchcodec' run_np 2 ./test_planner_model lossless 2>&1) \
    && fail "an unknown candidate was accepted"
echo "$out" | grep -q "candidate 'nosuchcodec'" || { echo "$out"; fail "unknown candidate not named"; }
out=$(TERSE_CODEC='auto:candidates=topk:ratio=0.01,budget=rel:1e-2' run_np 2 ./test_planner_model lossless 2>&1) \
    && fail "a candidate without a stated bound was accepted with a budget"
echo "$out" | grep -q "candidate 'topk:ratio=0.01' states no error bound" || { echo "$out"; fail "unbounded candidate not named"; }
out=$(TERSE_CODEC='auto:candidates=quantize,budget=rel:7' run_np 2 ./test_planner_model lossless 2>&1) \
    && fail "a malformed budget was accepted"
echo "$out" | grep -q "budget 'rel:7' needs a number in (0, 1]" || { echo "$out"; fail "bad budget not explained"; }
out=$(TERSE_PLANNER=fastest run_np 2 ./test_planner_model lossless 2>&1) && fail "TERSE_PLANNER=fastest accepted"
echo "$out" | grep -q "TERSE_PLANNER.*accepted: model.*fixed" || { echo "$out"; fail "bad TERSE_PLANNER not explained"; }
echo "PASS"
