#!/bin/sh
# Capture then evaluate: a 3-rank job runs allreduces on known data under
# TERSE_CAPTURE; the files must hold every call with its attributes, capture
# must not change any result, and terse-eval's emulation of the allreduce on
# the captured inputs must report the error the live run had (0 for the
# lossless codec; the live TERSE_VERIFY error for lossy ones).  Also the
# errors terse-eval gives for bad input.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u

EVAL="$TERSE_BUILDDIR/tools/terse-eval"
[ -x "$EVAL" ] || { echo "SKIP: terse-eval not built (no HDF5)"; exit 77; }
NP=3
CALLS=6   # known_allreduce.c: 4 on MPI_COMM_WORLD, 2 on "grad"
tmp=$(mktemp -d /tmp/terse_capture_eval.XXXXXX) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
# The 1-element reductions at the end of known_allreduce pass through.
export TERSE_MIN_BYTES=1K
# The example plugin of terse_codec(3) is built in this directory.
export TERSE_PLUGIN_PATH="$TERSE_BUILDDIR/tests/.libs:$TERSE_PLUGIN_PATH"

value() { sed -n "s/^$1 //p" "$2" | head -n 1; }

# csv_field SECTION CODEC COLUMN FILE: a column of terse-eval --csv output
# (a quoted field, such as a codec spec with commas, is unquoted first).
csv_field() {
    awk -v s="$1" -v c="$2" -v col="$3" '
        function unquote(line,   q) {
            while (match(line, /"[^"]*"/)) {
                q = substr(line, RSTART + 1, RLENGTH - 2); gsub(/,/, ";", q)
                line = substr(line, 1, RSTART - 1) q substr(line, RSTART + RLENGTH)
            }
            return line
        }
        BEGIN { gsub(/,/, ";", c) }
        { n = split(unquote($0), f, ",") }
        NR == 1 { for (i = 1; i <= n; i++) idx[f[i]] = i; next }
        f[1] == s && f[2] == c && f[3] == "all" { print f[idx[col]]; exit }' "$4"
}

# same A B: numbers equal to 1e-6 relative (printing rounds the last digit).
same() {
    awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a;
        exit !(d <= 1e-6 * m || d == 0) }'
}

echo "== capture with the lossless codec"
TERSE_CODEC=none TERSE_VERIFY=1 TERSE_CAPTURE="$tmp/none" \
    run_np $NP ./known_allreduce > "$tmp/none.out" 2> "$tmp/none.err" \
    || { cat "$tmp/none.out" "$tmp/none.err"; fail "capture run (none)"; }
cat "$tmp/none.out"
[ "$(value live_max_abs_err "$tmp/none.out")" = 0 ] || fail "codec none: the live result is not exact"
for r in 0 1 2; do
    [ -s "$tmp/none.rank$r.h5" ] || fail "no capture file $tmp/none.rank$r.h5"
done

echo "== file layout"
"$EVAL" --list "$tmp"/none.rank*.h5 > "$tmp/list" || { cat "$tmp/list"; fail "terse-eval --list"; }
cat "$tmp/list"
n=$(grep -c '/calls/' "$tmp/list")
[ "$n" -eq $((CALLS * NP)) ] || fail "expected $((CALLS * NP)) captured calls, found $n"
grep -q '/calls/grad/' "$tmp/list" || fail "the communicator named grad has no group"
grep -q '/calls/MPI_COMM_WORLD/' "$tmp/list" || fail "MPI_COMM_WORLD has no group"
if command -v h5dump >/dev/null 2>&1; then
    ds=$(awk '$1 ~ /rank1/ && $2 ~ /^\/calls\/grad\// { print $2; exit }' "$tmp/list")
    h5dump -A -d "$ds" "$tmp/none.rank1.h5" > "$tmp/attrs" || fail "h5dump $ds"
    for want in '"grad"' '"float32"' '"sum"' '"none"' 50000; do
        grep -q "$want" "$tmp/attrs" || { cat "$tmp/attrs"; fail "attribute value $want missing from $ds"; }
    done
    grep -A5 'ATTRIBUTE "rank"' "$tmp/attrs" | grep -q '(0): 1' || { cat "$tmp/attrs"; fail "rank attribute of rank 1"; }
    grep -A5 'ATTRIBUTE "comm_size"' "$tmp/attrs" | grep -q "(0): $NP" || fail "comm_size attribute"
    h5dump -A -g / "$tmp/none.rank2.h5" | grep -q '"terse-capture"' || fail "format attribute"
fi

echo "== evaluate the lossless capture"
"$EVAL" "$tmp"/none.rank*.h5 --codec none --csv > "$tmp/none.csv" || { cat "$tmp/none.csv"; fail "terse-eval none"; }
cat "$tmp/none.csv"
[ "$(csv_field per_rank none max_abs_err "$tmp/none.csv")" = 0 ] || fail "none: per-rank error is not 0"
[ "$(csv_field allreduce none max_abs_err "$tmp/none.csv")" = 0 ] || fail "none: emulated allreduce error is not 0"
[ "$(csv_field allreduce none datasets "$tmp/none.csv")" = $CALLS ] || fail "none: not every call emulated"
"$EVAL" "$tmp"/none.rank*.h5 > "$tmp/table" || fail "terse-eval with the captured codec"
grep -q '^none ' "$tmp/table" || { cat "$tmp/table"; fail "default codec is not the captured one"; }

echo "== interval: every 2nd call"
TERSE_CODEC=none TERSE_CAPTURE="$tmp/half" TERSE_CAPTURE_INTERVAL=2 \
    run_np 2 ./known_allreduce > /dev/null || fail "capture run with interval 2"
n=$("$EVAL" --list "$tmp"/half.rank0.h5 | grep -c '/calls/')
[ "$n" -eq $((CALLS / 2)) ] || fail "interval 2: expected $((CALLS / 2)) calls in rank 0's file, found $n"

echo "== errors of terse-eval"
expect_error() {  # expect_error PATTERN ARGS...: exit 1 and a message matching PATTERN
    pat=$1; shift
    "$EVAL" "$@" > "$tmp/err.out" 2>&1; rc=$?
    [ $rc -eq 1 ] || { cat "$tmp/err.out"; fail "terse-eval $*: exit $rc, expected 1"; }
    grep -q "$pat" "$tmp/err.out" || { cat "$tmp/err.out"; fail "terse-eval $*: message lacks '$pat'"; }
}
expect_error "No such file" "$tmp/missing.h5" --codec none
echo "not hdf5" > "$tmp/text.h5"
expect_error "not an HDF5 file" "$tmp/text.h5" --codec none
expect_error "no dataset /nope" "$tmp/none.rank0.h5" --dataset /nope --codec none
expect_error "is not a dataset" "$tmp/none.rank0.h5" --dataset /calls --codec none
expect_error "unknown codec 'nosuchcodec'" "$tmp/none.rank0.h5" --codec nosuchcodec
expect_error "rounding" "$tmp/none.rank0.h5" --codec example:rounding=up
"$EVAL" "$tmp/none.rank0.h5" --bogus > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option: exit status not 2"
# One rank's file alone: evaluated per rank, not reduced, and said so.
"$EVAL" "$tmp/none.rank0.h5" --codec none > "$tmp/one" || fail "single file"
grep -q "only some ranks" "$tmp/one" || { cat "$tmp/one"; fail "no note about missing ranks"; }

# lossy CODEC TAG NP [ALGORITHM]: capture must not change the result, and
# terse-eval's emulation of the captured calls must give the live error.
lossy() {
    codec=$1; tag=$2; np=$3; alg=${4:-auto}
    echo "== lossy codec $codec on $np ranks, algorithm $alg"
    export TERSE_FEEDBACK=off TERSE_CODEC=$codec TERSE_VERIFY=1 TERSE_ALGORITHM=$alg
    run_np $np ./known_allreduce > "$tmp/$tag.plain" 2>&1 \
        || { cat "$tmp/$tag.plain"; fail "$codec: run without capture"; }
    TERSE_CAPTURE="$tmp/$tag" run_np $np ./known_allreduce > "$tmp/$tag.out" 2>&1 \
        || { cat "$tmp/$tag.out"; fail "$codec: run with capture"; }
    unset TERSE_FEEDBACK TERSE_CODEC TERSE_VERIFY TERSE_ALGORITHM
    cat "$tmp/$tag.out"
    [ "$(value result_hash "$tmp/$tag.out")" = "$(value result_hash "$tmp/$tag.plain")" ] \
        || fail "$codec: results differ with capture on"
    live=$(value live_max_abs_err "$tmp/$tag.out")
    verify=$(value verify_max_abs_err "$tmp/$tag.out")
    same "$live" "$verify" || fail "$codec: TERSE_VERIFY error $verify differs from the live error $live"
    "$EVAL" "$tmp"/$tag.rank*.h5 --codec "$codec" --csv > "$tmp/$tag.csv" \
        || { cat "$tmp/$tag.csv"; fail "$codec: terse-eval"; }
    cat "$tmp/$tag.csv"
    emulated=$(csv_field allreduce "$codec" max_abs_err "$tmp/$tag.csv")
    echo "$codec np=$np $alg: live $live, TERSE_VERIFY $verify, terse-eval $emulated"
    awk -v l="$live" 'BEGIN { exit !(l > 0) }' || fail "$codec: lossy codec gave an exact result"
    same "$emulated" "$live" || fail "$codec np=$np $alg: terse-eval's emulated error $emulated is not the live $live"
}

# Every schedule the engine has: the ring (3 ranks), recursive doubling
# (2 ranks; 3 ranks folds one), gather; recompress, summable and gather codecs.
lossy example ex3 3
lossy example ex2 2
lossy example ex3rd 3 recursive_doubling
have() { [ -e "$TERSE_BUILDDIR/plugins/$1/.libs/terse_$1.so" ] || { echo "(codec $1 not built: skipped)"; return 1; }; }
if have quantize; then
    lossy quantize:bits=8 q3 3
    lossy quantize:bits=4 q2 2
    lossy quantize:bits=8 q3rd 3 recursive_doubling
    lossy quantize:bits=8 q3g 3 gather
fi
if have topk; then
    lossy topk:ratio=0.1 t3 3
fi
if have zfp; then
    lossy zfp:rate=8 z3 3
fi
if have errbound; then
    lossy errbound:abs=0.01 e3 3
    lossy errbound:rel=1e-3,zstd=on e2 2
fi
echo "capture and evaluation checks passed"
