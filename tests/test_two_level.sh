#!/bin/sh
# The two-level schedule end to end (test_two_level.cc) on nodes emulated
# with TERSE_NODE_KEY, one key per rank: each layout below is a word with
# one letter per rank, ranks with the same letter sharing a node ("aabbb":
# nodes of 2 and 3 ranks).  1 to 3 nodes of 1 to 4 ranks, uneven and
# interleaved ones included; one under the model planner; then the
# shared-memory split (no key), and a key set on some ranks only.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0
export TEST_TIMEOUT=${TEST_TIMEOUT:-120}

# run_layout WORD [ARGS]: one MPMD context per rank, each with its key.
run_layout() {
    word=$1; shift
    set -- "$@"
    contexts=""
    i=0
    while [ $i -lt ${#word} ]; do
        key=$(printf '%s' "$word" | cut -c$((i + 1)))
        contexts="$contexts${contexts:+ : }-np 1 env TERSE_NODE_KEY=node-$key ./test_two_level $*"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    timeout -k 10 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_FLAGS $contexts
}

for word in aaaa ab aabb aaabb abc abab aabbcc abbccc; do
    echo "== nodes $word"
    t0=$(date +%s)
    run_layout $word || fail "layout $word"
    echo "   ($(($(date +%s) - t0)) s)"
done

echo "== nodes aabb with TERSE_PLANNER=model: algorithm=two_level is not the model's to change"
TERSE_PLANNER=model run_layout aabb || fail "layout aabb under the model planner"

echo "== nodes aabb, algorithm=auto, TERSE_PLANNER=model: the two-level schedule is weighed"
log=$(TERSE_PLANNER=model TERSE_LOG=debug run_layout aabb weighed 2>&1) || { printf '%s\n' "$log"; fail "weighed, aabb"; }
printf '%s\n' "$log" | grep -q "none/two_level" || { printf '%s\n' "$log" | grep planner; fail "aabb: no planner decision weighed none/two_level"; }
printf '%s\n' "$log" | grep -q "2 nodes of up to 2 ranks, 2 rails" || fail "aabb: the nodes were not measured"
printf '%s\n' "$log" | grep "planner:.*none/two_level" | head -n 2

# One node, or a node of one rank: nothing to weigh, and no node or rail
# communicator made to find that out (node_layout.h); aaabb is weighed.
for word in aaaa aaab; do
    echo "== nodes $word, algorithm=auto, TERSE_PLANNER=model: nothing to weigh, no layout made"
    log=$(TERSE_PLANNER=model TERSE_LOG=debug run_layout $word weighed 2>&1) || { printf '%s\n' "$log"; fail "weighed, $word"; }
    if printf '%s\n' "$log" | grep -q "two_level"; then
        printf '%s\n' "$log" | grep two_level
        fail "$word: the two-level schedule was weighed"
    fi
    printf '%s\n' "$log" | grep -q "one node, or nodes of one rank: no two-level layout" ||
        { printf '%s\n' "$log" | grep "communicator '"; fail "$word: a layout was made"; }
done
echo "== nodes aaabb, algorithm=auto, TERSE_PLANNER=model: weighed (nodes of 3 and 2 ranks)"
log=$(TERSE_PLANNER=model TERSE_LOG=debug run_layout aaabb weighed 2>&1) || { printf '%s\n' "$log"; fail "weighed, aaabb"; }
printf '%s\n' "$log" | grep -q "communicator '': 2 nodes of 2..3 ranks, 2 shards" ||
    { printf '%s\n' "$log" | grep "communicator '"; fail "aaabb: the nodes were not measured"; }

echo "== no TERSE_NODE_KEY: the MPI library's shared-memory split, 3 ranks"
run_np 3 ./test_two_level || fail "shared-memory split"

echo "== TERSE_NODE_KEY on rank 0 only"
timeout -k 10 "$TEST_TIMEOUT" $MPIRUN $MPIRUN_FLAGS -np 1 env TERSE_NODE_KEY=x ./test_two_level mismatch : \
    -np 1 ./test_two_level mismatch || fail "mismatched keys"
echo "all two-level checks passed"
