#!/bin/sh
# quantize and errbound end to end through libterse (test_codec_allreduce_quant.cc):
# every element within the codec's stated bound of the exact sum, identical
# bits on every rank, NaN/Inf propagated, for 2, 3, 5 and 8 ranks.
. "${srcdir:-.}/mpirun_helpers.sh"
set -u
export TERSE_MIN_BYTES=0
export TEST_TIMEOUT=${TEST_TIMEOUT:-90}

for np in 2 3 5 8; do
    echo "== quantize:bits=8, np=$np"
    TERSE_CODEC=quantize:bits=8 run_np $np ./test_codec_allreduce_quant quantize 8 nearest \
        || fail "quantize bits=8 np=$np"
    echo "== errbound:abs=1e-3, np=$np"
    TERSE_CODEC=errbound:abs=1e-3 run_np $np ./test_codec_allreduce_quant errbound abs 1e-3 \
        || fail "errbound abs np=$np"
done
echo "== quantize:bits=4,rounding=stochastic,block=64, np=4"
TERSE_CODEC=quantize:bits=4,rounding=stochastic,block=64 run_np 4 ./test_codec_allreduce_quant quantize 4 stochastic 64 \
    || fail "quantize bits=4 stochastic"
echo "== quantize:bits=1, np=3"
TERSE_CODEC=quantize:bits=1 run_np 3 ./test_codec_allreduce_quant quantize 1 nearest || fail "quantize bits=1"
echo "== errbound:rel=1e-3,zstd=on, np=5, ring"
TERSE_ALGORITHM=ring TERSE_CODEC=errbound:rel=1e-3,zstd=on run_np 5 ./test_codec_allreduce_quant errbound rel 1e-3 \
    || fail "errbound rel zstd"
echo "== errbound:rel=1e-3, np=4, recursive doubling"
TERSE_ALGORITHM=recursive_doubling TERSE_CODEC=errbound:rel=1e-3 run_np 4 ./test_codec_allreduce_quant errbound rel 1e-3 \
    || fail "errbound rel recursive doubling"
echo "all quantize/errbound end-to-end checks passed"
