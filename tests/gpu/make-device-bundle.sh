#!/bin/sh
# Assemble the MPI the prepared device check brings along (issue 8): a GPU
# machine may have no MPI and no package registry, so this runs HERE, on the
# Debian build machine, and writes one folder (ignored by git, at most
# 64 MiB, which is what the device runner carries) that runs a multi-rank
# MPI_Allreduce through terse on device buffers anywhere with a glibc at
# least as new as the one the folder records:
#
#   sh tests/gpu/make-device-bundle.sh [BUILD_DIR [OUT_DIR]]
#
# BUILD_DIR (default ./build): a build configured with CUDA and built
# (scripts/configure.sh; make -C build).  OUT_DIR (default tests/gpu/bundle).
# The folder holds:
#   usr/, etc/   Open MPI, PMIx and UCX as Debian ships them (apt-get download
#                of the installed versions, dpkg-deb -x), less documentation,
#                headers, compiler wrappers, Fortran, Java and OpenSHMEM, and
#                less the MCA components Debian's own mca-params.conf turns
#                off (openib, ofi, uct, ucx), whose libraries (verbs,
#                libfabric) would be most of the size;
#   lib/         every other shared library the closure of NEEDED entries
#                reaches, copied from this machine, but glibc's and
#                libcuda.so.1 (the driver is the GPU machine's);
#   cxx/         libstdc++ and libgcc_s, used only where the machine's
#                libstdc++ lacks the GLIBCXX version REQUIRES names;
#   glibc/       Debian's glibc (libc6, the installed version): Debian 12's
#                libevent needs glibc 2.36, newer than e.g. Ubuntu 22.04's,
#                so where the machine's glibc is older than REQUIRES says,
#                env.sh runs every program of the folder through this
#                glibc's own loader instead (TERSE_BUNDLE_RUN);
#   terse/       libterse.so and the codec plugins of BUILD_DIR (with their
#                CUDA kernels), debug sections stripped;
#   bin/         test_device_staging_mpi and test_device_engine_mpi, linked
#                against terse/lib;
#   env.sh       (tests/gpu/device-bundle-env.sh) sourced with BUNDLE set:
#                relocates Open MPI, PMIx and UCX to wherever the folder is.
# It prints the folder's size and fails if it is over 64 MiB.  Then, on
# the GPU machine, with the folder carried along (git ignores it):
# sh tests/gpu/device-check.sh, whose last block (tests/gpu/
# device-mpi-check.sh) uses it.  Test it here without a GPU, from a copy
# elsewhere and an empty environment:
#   cp -a tests/gpu/bundle /tmp/b && env -i PATH=/usr/bin:/bin \
#     TERSE_DEVICE_BUNDLE=/tmp/b TERSE_DEVICE_CHECK_FAKE_DRIVER=$PWD/build/tests/fake_cuda/.libs/libcuda.so.1 \
#     sh tests/gpu/device-check.sh
# The .deb files are cached in ${TMPDIR:-/tmp}/terse-device-bundle-debs.
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
out=${2:-$top/tests/gpu/bundle}
limit_mib=64
multiarch=x86_64-linux-gnu
die() { echo "make-device-bundle: $*" >&2; exit 1; }

grep -q '^#define TERSE_HAVE_CUDA 1' "$build/terse_build_config.h" 2>/dev/null ||
    die "$build is not a build with CUDA (no TERSE_HAVE_CUDA in terse_build_config.h): run scripts/configure.sh where nvcc is found, then make"
[ -e "$build/mpi-wrappers/.libs/libterse.so" ] || die "$build/mpi-wrappers/.libs/libterse.so missing: run make -C $build first"
for p in none quantize; do
    [ -e "$build/plugins/$p/.libs/terse_$p.so" ] || die "$build/plugins/$p/.libs/terse_$p.so missing: run make -C $build first"
done
for tool in apt-get dpkg-deb dpkg-query readelf objdump mpicc strip; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found: this script runs on the Debian build machine"
done

# ------------------------------------------------ Open MPI, PMIx, UCX (debs)
# The installed versions: libterse.so was compiled against their headers.
debs=${TMPDIR:-/tmp}/terse-device-bundle-debs
mkdir -p "$debs"
packages="openmpi-bin libopenmpi3 openmpi-common libpmix2 libucx0 libc6"
stage=$(mktemp -d "${TMPDIR:-/tmp}/terse-device-bundle.XXXXXX")
trap 'rm -rf "$stage" "$stage.files" "$stage.elf" "$stage.new"' EXIT
for pkg in $packages; do
    version=$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null) ||
        die "package $pkg is not installed here (terse must be built against the Open MPI it bundles)"
    # apt-get writes an epoch's colon as %3a in the file name.
    set -- "$debs/${pkg}_$(printf %s "$version" | sed 's/:/%3a/')_"*.deb
    if ! [ -e "$1" ]; then
        (cd "$debs" && apt-get download "$pkg=$version" >/dev/null 2>&1) || die "apt-get download $pkg=$version failed"
        set -- "$debs/${pkg}_$(printf %s "$version" | sed 's/:/%3a/')_"*.deb
    fi
    [ -e "$1" ] || die "apt-get download $pkg=$version wrote no $pkg .deb in $debs"
    file=$1
    echo "make-device-bundle: $pkg $version"
    dpkg-deb -x "$file" "$stage"
done

cd "$stage"
lib=usr/lib/$multiarch
# glibc: the loader and the libraries the folder's files link, kept apart.
mkdir glibc
for f in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libmvec.so.1 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1 \
    libresolv.so.2 libanl.so.1 libnss_files.so.2 libnss_dns.so.2; do
    cp -L "lib/$multiarch/$f" glibc/
done
# The rest of libc6 (locales, gconv, tools) is not needed.
rm -rf lib lib64 etc/ld.so.conf.d usr/share/locale usr/libexec usr/sbin "usr/lib/$multiarch/gconv" \
    "usr/lib/$multiarch/audit"
ompilib=$lib/openmpi/lib
# Documentation, compiler wrappers' data and headers, Fortran, Java,
# OpenSHMEM, tracing: nothing mpirun or a C program needs.
rm -rf usr/share/doc usr/share/man usr/share/lintian "$lib/pkgconfig" "$lib/openmpi/include" \
    "$lib/pmix2/include" "$lib/pmix2/share/pmix/pmixcc-wrapper-data.txt" \
    usr/share/openmpi/*-wrapper-data.txt usr/share/openmpi/amca-param-sets usr/share/openmpi/openmpi-valgrind.supp \
    "$lib"/libmpi_mpifh* "$lib"/libmpi_usempi* "$lib"/libmpi_java* "$lib"/liboshmem* "$lib"/libompitrace* \
    "$lib"/libmpi_cxx* "$ompilib"/ompi_monitoring_prof.so "$ompilib"/openmpi3/libompi_dbg_msgq.so \
    "$ompilib"/openmpi3/mca_spml_* "$ompilib"/openmpi3/mca_sshmem_* "$ompilib"/openmpi3/mca_atomic_* \
    "$ompilib"/openmpi3/mca_scoll_* "$ompilib"/openmpi3/mca_memheap_*
# Components Debian's etc/openmpi/openmpi-mca-params.conf turns off anyway
# (btl ^uct,openib,ofi; mtl ^ofi; pml ^ucx; osc ^ucx,pt2pt), and the other
# users of verbs, libfabric and PSM; UCX's verbs and RDMA-CM transports
# (shared memory and TCP serve one node).
rm -f "$ompilib"/openmpi3/mca_btl_openib.so "$ompilib"/openmpi3/mca_btl_ofi.so "$ompilib"/openmpi3/mca_btl_uct.so \
    "$ompilib"/openmpi3/mca_mtl_*.so "$ompilib"/openmpi3/mca_pml_ucx.so "$ompilib"/openmpi3/mca_osc_ucx.so \
    "$ompilib"/openmpi3/mca_osc_pt2pt.so "$ompilib"/openmpi3/mca_btl_usnic.so "$ompilib"/openmpi3/mca_common_ofi* \
    "$ompilib"/openmpi3/mca_common_verbs* "$lib"/libmca_common_verbs* "$lib"/libmca_common_ofi* \
    "$lib"/libmca_common_ucx* "$lib"/ucx/libuct_ib.* "$lib"/ucx/libuct_rdmacm.*
# Only the programs mpirun needs, and ompi_info to diagnose a relocation.
for f in usr/bin/*; do
    case ${f#usr/bin/} in orterun | orted | ompi_info | mpirun.openmpi) ;; *) rm -f "$f" ;; esac
done
ln -sf orterun usr/bin/mpirun
rm -f usr/bin/mpirun.openmpi

# ------------------------------------------------------- terse and the test
mkdir -p terse/lib terse/plugins bin lib lib/hwloc cxx
soname=$(readelf -d "$build/mpi-wrappers/.libs/libterse.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
cp -L "$build/mpi-wrappers/.libs/libterse.so" "terse/lib/$soname"
ln -s "$soname" terse/lib/libterse.so
for so in "$build"/plugins/*/.libs/terse_*.so; do cp -L "$so" terse/plugins/; done
# The devsim test codec, for trying the device codec block on the fake
# driver (tests/gpu/device-mpi-check.sh), when make check built it.
[ -e "$build/tests/.libs/terse_devsim.so" ] && cp -L "$build/tests/.libs/terse_devsim.so" terse/plugins/
strip --strip-debug terse/lib/"$soname" terse/plugins/*.so
# Linked against libterse.so ahead of the MPI library (mpicc puts -lmpi
# last), found through $ORIGIN wherever the folder lies.
# shellcheck disable=SC2016
mpicc -std=c11 -O2 -o bin/test_device_staging_mpi "$top/tests/test_device_staging_mpi.c" -I"$top/tests" \
    -Lterse/lib -lterse -Wl,-rpath,'$ORIGIN/../terse/lib' -ldl -lm
readelf -d bin/test_device_staging_mpi | grep -q 'libterse' || die "the test program does not link libterse.so"
# shellcheck disable=SC2016
mpicc -std=c11 -O2 -o bin/test_device_engine_mpi "$top/tests/test_device_engine_mpi.c" -I"$top/tests" \
    -Lterse/lib -lterse -Wl,-rpath,'$ORIGIN/../terse/lib' -ldl -lm
readelf -d bin/test_device_engine_mpi | grep -q 'libterse' || die "the test program does not link libterse.so"

# ------------------------------------------ the closure of NEEDED libraries
# Resolved in the folder first, then on this machine (ldconfig's cache);
# glibc's own libraries and the CUDA driver are the GPU machine's.
is_elf() { [ -f "$1" ] && [ ! -L "$1" ] && [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = "177ELF" ]; }
in_bundle() { for d in "$lib" "$ompilib" "$lib/pmix2/lib" lib cxx terse/lib glibc; do [ -e "$d/$1" ] && return 0; done; return 1; }
system_path() { ldconfig -p | awk -v n="$1" '$1 == n && /x86-64/ { print $NF; exit }'; }
elf_files() { find . -type f >"$stage.files"; while IFS= read -r f; do is_elf "$f" && echo "$f"; done <"$stage.files"; }
# Each round reads the files the last one copied in.
elf_files >"$stage.elf"
while [ -s "$stage.elf" ]; do
    : >"$stage.new"
    while IFS= read -r f; do
        for need in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            case $need in
            libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libutil.so.* | libresolv.so.* | \
                libanl.so.* | ld-linux-x86-64.so.* | libcuda.so.*) continue ;;
            esac
            in_bundle "$need" && continue
            src=$(system_path "$need")
            [ -n "$src" ] || die "$f needs $need, which this machine does not have either"
            case $need in libstdc++.so.* | libgcc_s.so.*) dest=cxx ;; *) dest=lib ;; esac
            cp -L "$src" "$dest/$need"
            echo "./$dest/$need" >>"$stage.new"
            echo "make-device-bundle: + $dest/$need (from $src, for ${f#./})"
        done
    done <"$stage.elf"
    mv "$stage.new" "$stage.elf"
done

# ------------------------------------------- what the GPU machine must have
# versions PREFIX FOLDER...: the newest PREFIX_ symbol version the ELF
# files below the folders need.
versions() {
    v=$1
    shift
    find "$@" -type f | while IFS= read -r f; do is_elf "$f" && objdump -T "$f"; done |
        grep -o "(${v}_[0-9.]*)" | tr -d '()' | sed "s/^${v}_//" | sort -u -V | tail -n 1
}
glibc=$(versions GLIBC usr lib terse bin)
glibc_cxx=$(versions GLIBC cxx)
glibcxx=$(versions GLIBCXX usr lib terse bin)
{
    echo "# Written by tests/gpu/make-device-bundle.sh on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ)."
    echo "# The newest symbol versions the files here need from the machine's glibc"
    echo "# (those of cxx/ apart) and libstdc++; glibc/ is the glibc of the build machine."
    echo "glibc $glibc"
    echo "glibc_cxx $glibc_cxx"
    echo "glibcxx $glibcxx"
    echo "bundled_glibc $(dpkg-query -W -f '${Version}' libc6)"
    echo "built_with $(ldd --version | head -n 1)"
} >REQUIRES
cp "$top/tests/gpu/device-bundle-env.sh" env.sh

size=$(du -sk . | awk '{ print $1 }')
echo "make-device-bundle: $((size / 1024)) MiB ($size KiB); runs on the machine's glibc from $glibc up (with its"
echo "make-device-bundle:   libstdc++ if that has GLIBCXX_$glibcxx, else cxx/, which needs glibc $glibc_cxx), else on glibc/"
[ "$size" -le $((limit_mib * 1024)) ] || die "the folder is $size KiB, over the $limit_mib MiB a device run carries"

cd "$top"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -a "$stage" "$out"
chmod 755 "$out"
echo "make-device-bundle: wrote $out"
