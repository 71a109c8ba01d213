#!/bin/sh
# terse-tune on 2 ranks writes a tuning file that terse-config-check accepts
# and that, loaded with TERSE_TUNE_FILE, sets the schedule the engine runs
# (TERSE_LOG=debug names the entry and the schedule of every call it changes).
set -u
: "${MPIRUN:?run through make check (MPIRUN not set)}"
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
fail() { echo "FAIL: $*" >&2; exit 1; }
run2() { timeout -k 10 300 $MPIRUN $MPIRUN_FLAGS -np 2 "$@"; }
tmp=$(mktemp -d /tmp/terse_tune.XXXXXX) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
export TERSE_CODEC=quantize:bits=8

echo "== calibration over every candidate"
run2 ./terse-tune -o "$tmp/all.tune" -m 64K:256K -r 3 -i 2 || fail "terse-tune exited $?"
cat "$tmp/all.tune"
[ "$(grep -c '^allreduce:' "$tmp/all.tune")" -eq 2 ] || fail "two sizes, two entries expected"
"$TERSE_BUILDDIR/tools/terse-config-check" --tune "$tmp/all.tune" || fail "terse-config-check refuses the file"

echo "== the ring alone: the file says @ring, and the engine runs the ring where the planner runs recursive doubling"
run2 ./terse-tune -o "$tmp/ring.tune" -m 256K:256K -r 1 -i 2 -s ring || fail "terse-tune -s ring exited $?"
cat "$tmp/ring.tune"
grep -q '^allreduce:0-inf:@ring:.*ranks=2$' "$tmp/ring.tune" || fail "no @ring entry"
# 2 ranks: the planner's own choice is recursive doubling at every size.
out=$(TERSE_TUNE_FILE="$tmp/ring.tune" TERSE_LOG=debug run2 -x LD_PRELOAD="$TERSE_LIB" \
      ./terse-osu-allreduce -m 256K:256K -i 2 -x 1 2>&1) || { echo "$out"; fail "run with the tuning file"; }
echo "$out" | grep -q "terse\[0\] debug: tuning file line 4 on 'MPI_COMM_WORLD': allreduce of 65536 elements runs ring" \
    || { echo "$out"; fail "the engine did not run the file's schedule"; }
out=$(TERSE_LOG=debug run2 -x LD_PRELOAD="$TERSE_LIB" ./terse-osu-allreduce -m 256K:256K -i 2 -x 1 2>&1)
echo "$out" | grep -q "tuning file" && fail "tuning lines without a tuning file"

echo "== ranks holding different files under the same name fail, naming it"
printf 'allreduce:0-inf:@ring\n' > "$tmp/a.tune"
printf 'allreduce:0-inf:@recursive_doubling\n' > "$tmp/b.tune"
# /dev/fd/3 is one name for two files: each rank's shell opens its own.
# (mpirun's -x reaches only the first program of an MPMD line: set it in each.)
bench="TERSE_TUNE_FILE=/dev/fd/3 LD_PRELOAD='$TERSE_LIB' exec ./terse-osu-allreduce -m 256K:256K -i 1 -x 1"
out=$(timeout -k 10 120 $MPIRUN $MPIRUN_FLAGS \
      -np 1 sh -c "$bench 3<'$tmp/a.tune'" : -np 1 sh -c "$bench 3<'$tmp/a.tune'" 2>&1) \
    || { echo "$out"; fail "the same file on both ranks"; }
out=$(timeout -k 10 120 $MPIRUN $MPIRUN_FLAGS \
      -np 1 sh -c "$bench 3<'$tmp/a.tune'" : -np 1 sh -c "$bench 3<'$tmp/b.tune'" 2>&1) \
    && { echo "$out"; fail "different files accepted"; }
echo "$out" | grep -q "disagree on the tuning file /dev/fd/3: its entries differ" \
    || { echo "$out"; fail "no message naming the tuning file"; }
echo PASS
