#!/bin/sh
# Error feedback that training can keep (terse_feedback(3)), on 2 and 3
# ranks with 4-bit quantization: sequence and tag keys follow buffers that
# move, address keys lose them; a run saved after some calls and restored
# in a fresh mpirun continues bitwise as the uninterrupted run; every
# refused restore says why on every rank and leaves the residuals as they
# were.  test_feedback_checkpoint.c says what one run does.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0
export TERSE_CODEC=quantize:bits=4
export TERSE_FEEDBACK=on
N=12   # 4 iterations of 3 buckets
K=4    # the split: in the middle of the second iteration
dir=$(mktemp -d "${TMPDIR:-/tmp}/terse_fb.XXXXXX") || fail "mktemp"
trap 'rm -rf "$dir"' EXIT

# run NAME NP FIRST LAST ARGS...: rank 0's hashes in $dir/NAME (the run must succeed).
run() {
    out_=$1 np_=$2; shift 2
    run_np "$np_" ./test_feedback_checkpoint "$@" >"$dir/$out_.out" 2>&1 || { cat "$dir/$out_.out"; fail "$out_ (np=$np_) failed"; }
    grep '^call ' "$dir/$out_.out" >"$dir/$out_"
}
same() { cmp -s "$dir/$1" "$dir/$2" || { diff "$dir/$1" "$dir/$2"; fail "$3"; }; }
differ() { cmp -s "$dir/$1" "$dir/$2" && fail "$3"; return 0; }
# refused NAME NP WANT_RC ARGS...: a run whose save or restore fails; its output in $dir/NAME.
refused() {
    out_=$1 np_=$2; shift 2
    run_np "$np_" ./test_feedback_checkpoint "$@" >"$dir/$out_" 2>&1 && { cat "$dir/$out_"; fail "$out_: accepted"; }
    return 0
}
# flip FILE OFFSET: change the byte at OFFSET.
flip() {
    b=$(od -An -tu1 -j"$2" -N1 "$1" | tr -d ' ')
    printf "\\$(printf %03o $(((b + 1) % 256)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
# says NAME RANK TEXT: rank RANK's line in $dir/NAME has TEXT.
says() {
    grep "^rank $2: " "$dir/$1" | grep -qF -- "$3" || { cat "$dir/$1"; fail "$1: rank $2 does not say: $3"; }
}

for np in 2 3; do
    echo "== np=$np: the reference (fixed buffers, address keys) and feedback off"
    run ref $np 0 $N fixed
    grep -q "^intercepted $N$" "$dir/ref.out" || { cat "$dir/ref.out"; fail "not every call ran on terse's engine"; }
    [ "$(wc -l <"$dir/ref")" -eq $N ] || fail "the reference printed $(wc -l <"$dir/ref") calls"
    TERSE_FEEDBACK=off run nofb $np 0 $N fixed
    differ ref nofb "np=$np: feedback changes nothing here; the test cannot see it"

    echo "== np=$np: buffers that move keep their feedback under sequence and tag keys, lose it under address"
    TERSE_FEEDBACK_KEY=sequence run seq $np 0 $N moving
    same ref seq "np=$np: sequence keys on moving buffers differ from the reference"
    TERSE_FEEDBACK_KEY=tag run tag $np 0 $N moving --tags
    same ref tag "np=$np: tag keys on moving buffers differ from the reference"
    TERSE_FEEDBACK_KEY=address run addr $np 0 $N moving
    same nofb addr "np=$np: address keys on moving buffers are not the same as no feedback"
    TERSE_FEEDBACK_KEY=tag run untagged $np 0 $N moving
    same nofb untagged "np=$np: tag mode without tags is not the same as no feedback"
    TERSE_FEEDBACK_KEY=sequence run seqnb $np 0 $N moving --nonblocking
    same ref seqnb "np=$np: sequence keys of non-blocking calls differ from the reference"

    for mode in sequence tag; do
        t=; [ $mode = tag ] && t=--tags
        echo "== np=$np, feedback_key=$mode: saved after call $K, restored in a fresh mpirun"
        TERSE_FEEDBACK_KEY=$mode run a_$mode $np 0 $K moving $t --save "$dir/fb_$mode"
        for r in $(seq 0 $((np - 1))); do
            [ -s "$dir/fb_$mode.rank$r" ] || fail "no file for rank $r"
            [ -e "$dir/fb_$mode.rank$r.tmp" ] && fail "a temporary file is left"
        done
        TERSE_FEEDBACK_KEY=$mode run b_$mode $np $K $N moving $t --restore "$dir/fb_$mode"
        cat "$dir/a_$mode" "$dir/b_$mode" >"$dir/split_$mode"
        same ref split_$mode "np=$np: $mode: the restored run differs from the uninterrupted one"
        TERSE_FEEDBACK_KEY=$mode run fresh_$mode $np $K $N moving $t
        tail -n $((N - K)) "$dir/ref" >"$dir/ref_tail"
        differ ref_tail fresh_$mode "np=$np: $mode: a run without the restore gives the same results"
    done

    echo "== np=$np: refused restores leave the residuals untouched"
    export TERSE_FEEDBACK_KEY=sequence
    cp "$dir/fb_sequence.rank1" "$dir/bad.rank1"
    cp "$dir/fb_sequence.rank0" "$dir/bad.rank0"
    # One byte of rank 1's residual data changed.
    flip "$dir/bad.rank1" 200
    cmp -s "$dir/bad.rank1" "$dir/fb_sequence.rank1" && fail "internal: the byte did not change"
    for r in $(seq 2 $((np - 1))); do cp "$dir/fb_sequence.rank$r" "$dir/bad.rank$r"; done
    run corrupt $np $K $N moving --restore "$dir/fb_sequence" --try-restore-at 8 "$dir/bad"
    tail -n $((N - K)) "$dir/ref" >"$dir/ref_tail"
    same ref_tail corrupt "np=$np: a refused restore changed the residuals"
    says corrupt.out 1 "refused: TERSE_ERR_CORRUPT: terse_feedback_restore: error feedback file '$dir/bad.rank1' is corrupt: its check value does not match its contents"
    says corrupt.out 0 "refused: TERSE_ERR_REMOTE: terse_feedback_restore: rank 1 of communicator 'gradients'"
    says corrupt.out 0 "failed: error feedback file '$dir/bad.rank1' is corrupt"
    # Rank 0's file cut short, rank 1's missing.
    head -c 100 "$dir/fb_sequence.rank0" >"$dir/bad.rank0"
    rm -f "$dir/bad.rank1"
    run cut $np $K $N moving --restore "$dir/fb_sequence" --try-restore-at 5 "$dir/bad"
    same ref_tail cut "np=$np: a refused restore changed the residuals"
    says cut.out 0 "refused: TERSE_ERR_CORRUPT: terse_feedback_restore: error feedback file '$dir/bad.rank0' is truncated or damaged: 100 bytes, its header says"
    says cut.out 1 "refused: TERSE_ERR_IO: terse_feedback_restore: cannot open error feedback file '$dir/bad.rank1': No such file or directory"
    [ $np -gt 2 ] && says cut.out 2 "refused: TERSE_ERR_REMOTE: terse_feedback_restore: rank 0 of communicator 'gradients'"

    echo "== np=$np: restores of another run are refused on every rank"
    TERSE_CODEC=quantize:bits=8 refused codec $np $K $N moving --restore "$dir/fb_sequence"
    TERSE_FEEDBACK_KEY=tag refused mode $np $K $N moving --restore "$dir/fb_sequence"
    TERSE_FEEDBACK_KEY=address refused address $np 0 $K fixed --save "$dir/fb_address"
    for r in $(seq 0 $((np - 1))); do
        says codec $r "restore: TERSE_ERR_MISMATCH: terse_feedback_restore: error feedback file '$dir/fb_sequence.rank$r' was saved with codec 'quantize:bits=4', this communicator has codec 'quantize:bits=8'"
        says mode $r "restore: TERSE_ERR_MISMATCH: terse_feedback_restore: error feedback file '$dir/fb_sequence.rank$r' was saved with feedback_key=sequence, this communicator has feedback_key=tag"
        says address $r "save: TERSE_ERR_INVALID: terse_feedback_save: communicator 'gradients' of size $np keys its residuals by buffer address (feedback_key=address)"
        [ -e "$dir/fb_address.rank$r" ] && fail "a refused save left a file"
    done
    unset TERSE_FEEDBACK_KEY
done

echo "== a restore on a communicator of another size"
TERSE_FEEDBACK_KEY=sequence run three 3 0 $K moving --save "$dir/fb3"
TERSE_FEEDBACK_KEY=sequence refused size 2 $K $N moving --restore "$dir/fb3"
for r in 0 1; do
    says size $r "restore: TERSE_ERR_MISMATCH: terse_feedback_restore: error feedback file '$dir/fb3.rank$r' was saved on a communicator of 3 ranks, this one has 2"
done
echo "PASS"
