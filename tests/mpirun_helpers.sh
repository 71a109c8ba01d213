# Sourced by multi-rank test scripts.  make check exports MPIRUN,
# MPIRUN_FLAGS, TERSE_PLUGIN_PATH, TERSE_LIB, TERSE_BUILDDIR.
: "${MPIRUN:?run through make check (MPIRUN not set)}"
# Open MPI over shared memory for its own traffic; terse's UCX picks its own.
export OMPI_MCA_btl=self,vader
export OMPI_MCA_pml=ob1
# These tests exercise terse's engine, so the planner always runs the
# configured codec (the default model planner would send most calls on this
# shared-memory node to the MPI library); tests of the planner set
# TERSE_PLANNER=model themselves.
export TERSE_PLANNER="${TERSE_PLANNER:-fixed}"

# run_np N PROGRAM ARGS...: run under mpirun with a time limit, so a hang
# fails the test instead of stalling the suite.
run_np() {
    np=$1; shift
    timeout -k 10 ${TEST_TIMEOUT:-120} $MPIRUN $MPIRUN_FLAGS -np "$np" "$@"
}

fail() { echo "FAIL: $*" >&2; exit 1; }

# have_codec NAME: whether the codec plugin was built (else says it is skipped).
have_codec() { [ -e "$TERSE_BUILDDIR/plugins/$1/.libs/terse_$1.so" ] || { echo "(codec $1 not built: skipped)"; return 1; }; }
