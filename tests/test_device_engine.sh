#!/bin/sh
# The engine's device codec path (runtime/device_codecs.h) without a GPU:
# the fake CUDA driver (tests/fake_cuda, whose device memory only its own
# copies may touch) and the devsim test codec (tests/plugins/devsim_codec.cc,
# a summable codec whose device instance emulates kernels with the
# driver's copies).  MPI_Allreduce on device buffers on 2 ranks
# (TERSE_ALGORITHM=ring) and 3 (the planner's ring), several sizes with
# odd counts, raw chunks, float and double, in place: results bitwise equal
# to the host path's (test_device_engine_mpi checks), and so are
# reduce-scatters and allgathers (block and v, in place and not) and
# non-blocking calls, every call served counted as device_encoded in the
# TERSE_STATS process line, the payload bytes staged well under what whole
# staging copies, the calls the path does not serve (a non-blocking call
# while another holds the lane, a host send buffer, rank 1's in-place
# reduce-scatter whose block overlaps its buffer's start; then
# TERSE_VERIFY=1) staged whole with their reasons, a codec refusing a
# device instance (errbound zstd=on) said once per type and its calls
# staged whole, and the engine's waits for copies in flight
# taken (the fake driver answers "not ready" first).  Then
# TERSE_DEVICE_CODECS=0 stages every call whole, and a misspelled value is
# refused.  Skipped (77) in a build without CUDA.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
if [ ! -e fake_cuda/.libs/libcuda.so.1 ] || [ ! -x ./test_device_engine_mpi ] || [ ! -e .libs/terse_devsim.so ]; then
    echo "SKIP: built without CUDA (the fake driver and the devsim codec need the toolkit's headers)"
    exit 77
fi
LD_LIBRARY_PATH="$PWD/fake_cuda/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
MPIRUN_FLAGS="$MPIRUN_FLAGS -x LD_LIBRARY_PATH"
export TERSE_PLUGIN_PATH="$TERSE_PLUGIN_PATH:$PWD/.libs"
# Every rank's statistics: rank 1 stages one call rank 0 does not.
export TERSE_CODEC=devsim TERSE_MIN_BYTES=4096 TERSE_FEEDBACK=off TERSE_STATS=all TERSE_LOG=info

out=$(mktemp)
trap 'rm -f "$out"' EXIT
num() { sed -n "s/.*terse stats: process rank=0 .* $1=\([0-9]*\).*/\1/p" "$out"; }
failed=
for run in "2 ring" "3 auto"; do
    set -- $run
    np=$1 alg=$2
    echo "== np=$np TERSE_ALGORITHM=$alg"
    if ! TERSE_ALGORITHM=$alg run_np "$np" ./test_device_engine_mpi >"$out" 2>&1; then
        tail -30 "$out"
        failed="$failed np=$np"
        continue
    fi
    grep "terse stats: process rank=0 " "$out"
    calls=$(sed -n 's/^device calls \([0-9]*\) bytes.*/\1/p' "$out")
    bytes=$(sed -n 's/^device calls [0-9]* bytes \([0-9]*\)$/\1/p' "$out")
    notready=$(sed -n 's/^not ready \(-*[0-9]*\)$/\1/p' "$out")
    enc=$(num device_encoded) encb=$(num device_encoded_bytes) pay=$(num device_payload_bytes)
    echo "   program: device calls $calls bytes $bytes, not ready $notready; stats: encoded $enc bytes $encb payload $pay"
    [ -n "$calls" ] && [ "$enc" = "$calls" ] && [ "$encb" = "$bytes" ] ||
        { failed="$failed np=$np(encoded)"; echo "device_encoded does not count every blocking call"; }
    # Whole staging copies every byte in and out; the 8-bit payloads (and
    # the widened sums) are well under half of that.
    [ -n "$pay" ] && [ "$pay" -gt 0 ] && [ $((pay * 2)) -lt "${encb:-0}" ] ||
        { failed="$failed np=$np(payload)"; echo "payload bytes $pay not well under the whole bytes $encb"; }
    grep -q "terse stats: process rank=0 .* device_whole=2 device_whole_why=nonblocking:1,buffers:1" "$out" ||
        { failed="$failed np=$np(whole)"; echo "the calls not served are not counted as staged whole with their reasons"; }
    # Rank 1's in-place reduce-scatter (uneven counts) overlaps its
    # buffer's start: staged whole there, beside ranks on the device path.
    grep -q "terse stats: process rank=1 .* device_whole_why=.*buffers:2" "$out" ||
        { failed="$failed np=$np(overlap)"; echo "rank 1's overlapping in-place reduce-scatter was not staged whole"; }
    [ "${notready:-0}" -gt 0 ] ||
        { failed="$failed np=$np(not ready)"; echo "the engine never met a copy in flight"; }
    grep -q "device lane: pinned frame cache grown" "$out" ||
        { failed="$failed np=$np(lane)"; echo "no log line of the lane's sizing"; }
done

echo "== np=2 TERSE_DEVICE_CODECS=0: every call staged whole"
if TERSE_DEVICE_CODECS=0 TERSE_ALGORITHM=ring run_np 2 ./test_device_engine_mpi >"$out" 2>&1; then
    grep "terse stats: process rank=0 " "$out"
    [ "$(num device_encoded)" = 0 ] && grep -q "device_whole_why=off:20" "$out" ||
        { failed="$failed off"; echo "TERSE_DEVICE_CODECS=0 did not stage every call whole"; }
else
    tail -30 "$out"
    failed="$failed off(run)"
fi

echo "== np=2 TERSE_VERIFY=1: verified calls are staged whole"
if TERSE_VERIFY=1 TERSE_ALGORITHM=ring run_np 2 ./test_device_engine_mpi >"$out" 2>&1; then
    grep "terse stats: process rank=0 " "$out"
    [ "$(num device_encoded)" = 0 ] && grep -q "device_whole_why=checks:20" "$out" ||
        { failed="$failed verify"; echo "verified calls were not staged whole for their checks"; }
else
    tail -30 "$out"
    failed="$failed verify(run)"
fi

echo "== np=2 a codec that refuses a device instance (errbound zstd=on): said once, calls staged whole"
if TERSE_CODEC=errbound:abs=1e-3,zstd=on TERSE_ALGORITHM=ring run_np 2 ./test_device_engine_mpi >"$out" 2>&1; then
    grep "terse stats: process rank=0 " "$out"
    refusals=$(grep -c "device codecs: .errbound.*no device instance" "$out")
    # Once per rank and element type (the program reduces floats and doubles).
    echo "   refusal lines: $refusals (2 ranks x float, double)"
    [ "$refusals" = 4 ] || { failed="$failed refusal(lines)"; echo "the refusal was not said once per rank and type"; }
    ! grep -q "the call is staged whole" "$out" || { failed="$failed refusal(per call)"; echo "a warning per call"; }
    [ "$(num device_encoded)" = 0 ] && grep -q "device_whole_why=buffers:1,unavailable:19" "$out" ||
        { failed="$failed refusal(whole)"; echo "the refused calls were not staged whole as unavailable"; }
else
    tail -30 "$out"
    failed="$failed refusal(run)"
fi

echo "== a misspelled TERSE_DEVICE_CODECS is refused"
if TERSE_DEVICE_CODECS=yes run_np 1 ./test_device_engine_mpi >"$out" 2>&1; then
    failed="$failed bad-value"
    echo "TERSE_DEVICE_CODECS=yes was accepted"
else
    grep -i "TERSE_DEVICE_CODECS" "$out" | head -3
    grep -q "TERSE_DEVICE_CODECS: invalid value 'yes'.*accepted: 1 .*0 " "$out" ||
        { failed="$failed bad-value(message)"; echo "the error does not name the variable, the value and what is accepted"; }
fi
[ -z "$failed" ] || fail "these runs failed:$failed"
echo "device engine checks passed"
