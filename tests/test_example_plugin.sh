#!/bin/sh
# The worked example of terse_codec(3) (tests/example_plugin/example_codec.c),
# built by make check as tests/.libs/terse_example.so, is found through
# TERSE_PLUGIN_PATH, validates its parameters, and runs in allreduces on 2
# and 3 ranks with the error a bfloat16 round trip per hop allows.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0 TERSE_VERIFY=1 TERSE_STATS=1
export TERSE_PLUGIN_PATH="$TERSE_BUILDDIR/tests/.libs:$TERSE_PLUGIN_PATH"
[ -e "$TERSE_BUILDDIR/tests/.libs/terse_example.so" ] || fail "terse_example.so was not built"

value() { echo "$2" | sed -n "s/^$1 //p" | head -n 1; }

for np in 2 3; do
    for codec in example example:rounding=zero; do
        echo "== $codec on $np ranks"
        out=$(TERSE_CODEC=$codec run_np $np ./known_allreduce 2>&1) || { echo "$out"; fail "$codec np=$np"; }
        echo "$out"
        live=$(value live_max_abs_err "$out")
        verify=$(value verify_max_abs_err "$out")
        # Inputs are below 4 in magnitude, partial sums below 4*np; each of
        # the np encodings (np-1 hops and the allgather) is off by at most
        # 2^-8 of its value (rounding to zero), so the error is below
        # np * 4np * 2^-8.
        awk -v e="$live" -v n=$np 'BEGIN { exit !(e > 0 && e <= n * 4 * n / 256) }' \
            || fail "$codec np=$np: error $live is 0 or above the bfloat16 bound"
        [ "$live" = "$verify" ] || fail "$codec np=$np: TERSE_VERIFY error $verify, measured $live"
        # Half the bytes on the wire (frame headers aside).
        echo "$out" | grep 'terse stats: comm=MPI_COMM_WORLD' | grep -Eq 'ratio=(1\.9[0-9]|2\.00)' \
            || fail "$codec np=$np: wire ratio is not about 2"
    done
done

echo "== a bad parameter stops the job with the plugin's message"
out=$(TERSE_CODEC=example:rounding=up run_np 2 ./known_allreduce 2>&1) && { echo "$out"; fail "rounding=up accepted"; }
echo "$out" | grep -q "invalid value 'up' for rounding (accepted: nearest, zero)" || { echo "$out"; fail "message"; }
echo "example plugin checks passed"
