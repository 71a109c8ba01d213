# Sourced (bash) by compare.sh and overlap.sh: how both sides of a comparison
# reach the shaped loopback, so that plain MPI and terse move their bytes over
# the same link.  Sets mpirun_cmd; mpi_flags (oversubscribe, no binding, root
# allowed); tcp_flags (Open MPI on ob1/tcp over lo, its control traffic
# included: shared memory would bypass the shaping); ucx_envs (terse's UCX on
# tcp over lo).  terse_passthrough appends to the caller's array `envs` an
# "-x NAME" for every TERSE_* variable of the environment that the scripts do
# not set themselves, except the names given as arguments.  The caller
# defines die().
mpirun_cmd=${MPIRUN:-mpirun}
command -v "$mpirun_cmd" >/dev/null 2>&1 || die "mpirun not found (install openmpi-bin or set MPIRUN)"
mpi_flags=(--oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
tcp_flags=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
ucx_envs=(-x TERSE_UCX_TLS="${TERSE_UCX_TLS:-tcp}" -x TERSE_UCX_NET_DEVICES="${TERSE_UCX_NET_DEVICES:-lo}")
terse_passthrough() {
    local v skip=" $* "
    for v in $(env | sed -n 's/^\(TERSE_[A-Za-z0-9_]*\)=.*/\1/p'); do
        case "$v" in TERSE_CODEC|TERSE_PLUGIN_PATH|TERSE_UCX_TLS|TERSE_UCX_NET_DEVICES) continue ;; esac
        case "$skip" in *" $v "*) continue ;; esac
        envs+=(-x "$v")
    done
}
