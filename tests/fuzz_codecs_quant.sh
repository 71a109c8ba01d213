#!/bin/sh
# Short libFuzzer runs over the quantize and errbound decoders
# (fuzz_quantize_decode.cc, fuzz_errbound_decode.cc), TERSE_FUZZ_SECONDS each
# (default 5).  Longer on demand:
#   TERSE_FUZZ_SECONDS=600 make check TESTS=fuzz_codecs_quant.sh
# A finding is written to fuzz_<codec>_decode-crash-* in the build directory;
# reproduce with ./fuzz_<codec>_decode <that file>.
. "$(dirname "$0")/fuzz_codecs_lib.sh"
run_fuzzers 8192 "no clang++" fuzz_quantize_decode fuzz_errbound_decode
