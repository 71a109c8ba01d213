# shellcheck shell=sh
# Sourced (as env.sh of the folder tests/gpu/make-device-bundle.sh writes)
# with BUNDLE set to that folder, wherever it now lies: points Open MPI,
# PMIx and UCX, which Debian built for /usr, at their files in the folder,
# and terse at its plugins there.  It sets TERSE_BUNDLE_RUN to the words
# to put before every program of the folder (mpirun, and the program
# mpirun starts): empty where the machine's glibc is new enough for the
# folder's files (REQUIRES), else the loader of the folder's own glibc
# with the library path (LD_LIBRARY_PATH must not name that glibc: the
# machine's programs would load it with their own loader).
# TERSE_BUNDLE_GLIBC=auto (default) | system | bundled forces the choice,
# to test either path on one machine.  The folder's path must not hold
# spaces (TERSE_BUNDLE_RUN is split into words).  Returns 1, with the reason on
# stderr, when the choice cannot work.
: "${BUNDLE:?set BUNDLE to the folder make-device-bundle.sh wrote}"
bundle_lib=$BUNDLE/usr/lib/x86_64-linux-gnu

bundle_req() { sed -n "s/^$1 //p" "$BUNDLE/REQUIRES"; }
# bundle_at_least HAVE NEED: version HAVE >= NEED.
bundle_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; }
bundle_have=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')
# ldconfig is often outside an ordinary user's PATH.
bundle_sys_cxx=$( (ldconfig -p || /sbin/ldconfig -p || /usr/sbin/ldconfig -p) 2>/dev/null |
    awk '$1 == "libstdc++.so.6" && /x86-64/ { print $NF; exit }')
# On the machine's glibc: its libstdc++ if that has the GLIBCXX version,
# else the folder's (cxx/), which needs a newer glibc.
bundle_cxx=
bundle_need=$(bundle_req glibc)
if [ -z "$bundle_sys_cxx" ] || ! grep -q -a "GLIBCXX_$(bundle_req glibcxx)" "$bundle_sys_cxx"; then
    bundle_cxx=$BUNDLE/cxx
    bundle_at_least "$bundle_need" "$(bundle_req glibc_cxx)" || bundle_need=$(bundle_req glibc_cxx)
fi
case ${TERSE_BUNDLE_GLIBC:-auto} in
auto)
    if [ -n "$bundle_have" ] && bundle_at_least "$bundle_have" "$bundle_need"; then
        bundle_glibc=system
    else
        bundle_glibc=bundled
    fi
    ;;
system)
    bundle_glibc=system
    if [ -z "$bundle_have" ] || ! bundle_at_least "$bundle_have" "$bundle_need"; then
        echo "env.sh: TERSE_BUNDLE_GLIBC=system, but this machine's glibc (${bundle_have:-unknown}) is older than the $bundle_need the files of $BUNDLE need" >&2
        return 1
    fi
    ;;
bundled) bundle_glibc=bundled ;;
*)
    echo "env.sh: TERSE_BUNDLE_GLIBC=$TERSE_BUNDLE_GLIBC: expected auto, system or bundled" >&2
    return 1
    ;;
esac

# Open MPI's installation directories (opal/mca/installdirs/env), every
# one, since Debian's are not all below the prefix.
export OPAL_PREFIX="$BUNDLE/usr"
export OPAL_EXEC_PREFIX="$BUNDLE/usr"
export OPAL_BINDIR="$BUNDLE/usr/bin"
export OPAL_SBINDIR="$BUNDLE/usr/sbin"
export OPAL_LIBEXECDIR="$BUNDLE/usr/libexec"
export OPAL_DATAROOTDIR="$BUNDLE/usr/share"
export OPAL_DATADIR="$BUNDLE/usr/share"
export OPAL_SYSCONFDIR="$BUNDLE/etc/openmpi"
export OPAL_LIBDIR="$bundle_lib/openmpi/lib"
export OPAL_INCLUDEDIR="$bundle_lib/openmpi/include"
export OPAL_PKGDATADIR="$BUNDLE/usr/share/openmpi"
export OPAL_PKGLIBDIR="$bundle_lib/openmpi/lib/openmpi3"
export OPAL_PKGINCLUDEDIR="$bundle_lib/openmpi/include/openmpi"
# PMIx's (Debian's is outside Open MPI's tree; pmix/mca/pinstalldirs/env).
export PMIX_INSTALL_PREFIX="$bundle_lib/pmix2"
export PMIX_EXEC_PREFIX="$bundle_lib/pmix2"
export PMIX_LIBDIR="$bundle_lib/pmix2/lib"
export PMIX_PKGLIBDIR="$bundle_lib/pmix2/lib/pmix"
export PMIX_SYSCONFDIR="$bundle_lib/pmix2/share"
export PMIX_DATAROOTDIR="$bundle_lib/pmix2/share"
export PMIX_DATADIR="$bundle_lib/pmix2/share"
export PMIX_PKGDATADIR="$bundle_lib/pmix2/share/pmix"
export PMIX_MCA_mca_base_component_path="$bundle_lib/pmix2/lib/pmix"
# hwloc's plugins (PCI, OpenCL, GL) are optional and not packed: an empty
# folder, so that it does not load this machine's from where Debian has them.
export HWLOC_PLUGINS_PATH="$BUNDLE/lib/hwloc"
# UCX finds its transports beside libucs.so; said explicitly.
export UCX_MODULE_DIR="$bundle_lib/ucx"
export PATH="$BUNDLE/usr/bin${PATH:+:$PATH}"
bundle_path="$bundle_lib:$bundle_lib/openmpi/lib:$bundle_lib/pmix2/lib:$BUNDLE/lib:$BUNDLE/terse/lib"
export TERSE_PLUGIN_PATH="$BUNDLE/terse/plugins"
if [ "$bundle_glibc" = system ]; then
    export LD_LIBRARY_PATH="$bundle_path${bundle_cxx:+:$bundle_cxx}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    TERSE_BUNDLE_RUN=
    bundle_with=
    [ -z "$bundle_cxx" ] || bundle_with=", with the libstdc++ of cxx/"
    echo "env.sh: the MPI of $BUNDLE on this machine's glibc $bundle_have$bundle_with"
else
    # Libraries the machine adds (the CUDA driver) come after the folder's.
    export LD_LIBRARY_PATH="$bundle_path:$BUNDLE/cxx${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # shellcheck disable=SC2034 # for the script that sources this one
    TERSE_BUNDLE_RUN="$BUNDLE/glibc/ld-linux-x86-64.so.2 --library-path $BUNDLE/glibc:$LD_LIBRARY_PATH"
    echo "env.sh: the MPI of $BUNDLE on the folder's glibc ($(bundle_req bundled_glibc); this machine's: ${bundle_have:-unknown}, the files need $bundle_need)"
fi
unset bundle_with bundle_lib bundle_need bundle_have bundle_cxx bundle_sys_cxx bundle_glibc bundle_path
