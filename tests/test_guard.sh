#!/bin/sh
# The error guard (guard=K, terse(7)) with the drift test codec, which breaks
# its stated bound once an input reaches 'above' (test_guard.c says what is
# checked after every call, on every rank).
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0
export TERSE_PLUGIN_PATH="$TERSE_PLUGIN_PATH:$PWD/.libs"
msg="error guard: communicator 'guarded' switches from codec 'drift' to lossless after its lossy allreduce 4: "

for np in 2 3; do
    echo "== np=$np: guard=4 in the codec spec, bound broken from call 3: every rank switches after call 4"
    out=$(TERSE_CODEC=drift:above=50,guard=4 run_np $np ./test_guard 10 3 4 2>&1); rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "guard np=$np exited $rc"
    [ "$(echo "$out" | grep -c "$msg")" -eq 1 ] || fail "np=$np: the switch is not reported exactly once"
    echo "$out" | grep -q "measured absolute error [1-9][0-9.]* exceeds the allowed [0-9.e+-]* (the codec's stated bound)" \
        || fail "np=$np: the message does not give measured and allowed error"
    echo "$out" | grep -q "^guard_checks=1 guard_trips=1 guard_trip_call=4$" || fail "np=$np: statistics"
done

echo "== guard off: the codec keeps running, inexact, nothing checked or reported"
out=$(TERSE_CODEC=drift:above=50 run_np 2 ./test_guard 10 3 0 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "guard off exited $rc"
echo "$out" | grep -q "error guard" && fail "guard off printed a guard message"
echo "$out" | grep -q "^guard_checks=0 guard_trips=0 guard_trip_call=0$" || fail "guard off: statistics"

echo "== a codec within its bound: every second call checked, no switch"
out=$(TERSE_CODEC=drift TERSE_GUARD=2 run_np 2 ./test_guard 10 0 0 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "well-behaved codec exited $rc"
echo "$out" | grep -q "error guard" && fail "a codec within its bound was reported"
echo "$out" | grep -q "^guard_checks=5 guard_trips=0 guard_trip_call=0$" || fail "well-behaved: statistics"

echo "== a codec that states no bound needs a budget"
out=$(TERSE_CODEC=drift:bound=none TERSE_GUARD=2 run_np 2 ./test_guard 4 0 0 2>&1); rc=$?
[ $rc -ne 0 ] || fail "guard without a bound or budget accepted"
echo "$out" | grep -q "guard=2 with codec 'drift', which states no error bound, needs guard_budget" \
    || { echo "$out"; fail "no message asking for guard_budget"; }

echo "== with guard_budget=abs:0.5 the budget decides (checked calls 2 and 4; 4 exceeds it)"
out=$(TERSE_CODEC=drift:bound=none,above=50 TERSE_GUARD=2 TERSE_GUARD_BUDGET=abs:0.5 run_np 2 ./test_guard 8 3 4 2>&1); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "budget run exited $rc"
echo "$out" | grep -q "measured absolute error [1-9][0-9.]* exceeds the allowed 0.5 (guard_budget)" || fail "budget message"
echo "$out" | grep -q "^guard_checks=2 guard_trips=1 guard_trip_call=4$" || fail "budget: statistics"
echo "PASS"
