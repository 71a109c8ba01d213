#!/bin/sh
# Short libFuzzer runs over the topk and zfp decoders (fuzz_topk_decode.cc,
# fuzz_zfp_decode.cc), TERSE_FUZZ_SECONDS each (default 5).  Longer on demand:
#   TERSE_FUZZ_SECONDS=600 make check TESTS=fuzz_codecs_sparse.sh
# A finding is written to fuzz_<codec>_decode-crash-* in the build directory;
# reproduce with ./fuzz_<codec>_decode <that file>.
. "$(dirname "$0")/fuzz_codecs_lib.sh"
run_fuzzers 4096 "no clang++ or no libzfp" fuzz_topk_decode fuzz_zfp_decode
