#!/bin/sh
# make installcheck (make distcheck runs it after make install): what was
# installed works on its own, without the build tree.
#  - terse-config-check finds every installed codec module in the plugin
#    folder compiled into the library (TERSE_PLUGIN_PATH unset);
#  - a C program builds against the installed headers (terse.h, codec.h,
#    the generated version.h) with the flags of the installed terse.pc,
#    links the installed libterse, and reports this version.
# usage: installcheck.sh BINDIR LIBDIR VERSION CODEC_SPEC...
# MPICC and PKG_CONFIG come from the environment (make passes configure's).
set -eu
[ $# -ge 4 ] || { echo "usage: $0 BINDIR LIBDIR VERSION CODEC_SPEC..." >&2; exit 2; }
bindir=$1 libdir=$2 version=$3
shift 3
fail() { echo "installcheck: $*" >&2; exit 1; }

for spec in "$@"; do
    out=$(env -u TERSE_PLUGIN_PATH TERSE_CODEC="$spec" "$bindir/terse-config-check" 2>&1) \
        || { echo "$out"; fail "the installed terse-config-check does not accept codec $spec"; }
done
echo "installcheck: codecs found in the installed plugin folder: $*"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/api.c" <<'C'
#include <stdio.h>
#include <terse/codec.h>
#include <terse/terse.h>

int main(void) {
    int major = -1, minor = -1, patch = -1;
    terse_version(&major, &minor, &patch);
    printf("%d.%d.%d\n", major, minor, patch);
    return 0;
}
C
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" ${PKG_CONFIG:-pkg-config} --cflags --libs terse) \
    || fail "pkg-config cannot read $libdir/pkgconfig/terse.pc"
# shellcheck disable=SC2086
${MPICC:-mpicc} -Wall -Werror -o "$tmp/api" "$tmp/api.c" $flags \
    || fail "a program does not build against the installed headers and library ($flags)"
got=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/api") \
    || fail "the program linked with the installed libterse does not run"
[ "$got" = "$version" ] || fail "the installed library says version $got, expected $version"
echo "installcheck: a program built with terse.pc links the installed libterse $got"
