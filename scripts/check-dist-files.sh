#!/bin/sh
# Every file git tracks is in the distribution tarball: names each one that
# `make dist` leaves out, so a new file missing from its Makefile.am fragment
# (SOURCES, EXTRA_DIST, noinst_HEADERS, dist_*) fails here by name rather
# than as a build error somewhere downstream of the tarball.
#
# usage: check-dist-files.sh SRCDIR DISTDIR
#   SRCDIR   the source tree (a git work tree)
#   DISTDIR  the unpacked tarball (make distcheck's hook passes its own)
# A source tree that is not a git work tree (one unpacked from a tarball)
# has nothing to compare with: that is said and is not an error.
set -eu
[ $# = 2 ] || { echo "usage: $0 SRCDIR DISTDIR" >&2; exit 2; }
src=$1 dist=$2
[ -d "$dist" ] || { echo "check-dist-files: $dist: no such folder" >&2; exit 2; }
if ! command -v git >/dev/null 2>&1; then
    echo "check-dist-files: git not installed; tarball contents not checked"
    exit 0
fi
if ! err=$(git -C "$src" rev-parse --is-inside-work-tree 2>&1 >/dev/null); then
    case $err in
    *"not a git repository"*)
        echo "check-dist-files: $src is not a git work tree; tarball contents not checked"
        exit 0 ;;
    esac
    echo "check-dist-files: git cannot read $src: $err" >&2
    exit 1
fi

# Tracked files deliberately not distributed (extended regular expression).
not_distributed='^\.gitignore$'

list=$(mktemp)
trap 'rm -f "$list"' EXIT
git -C "$src" ls-files -z | tr '\0' '\n' | grep -Ev "$not_distributed" >"$list"
missing=0
while IFS= read -r f; do
    [ -e "$src/$f" ] || continue  # deleted in the work tree, not yet committed
    if [ ! -e "$dist/$f" ]; then
        echo "check-dist-files: $f is tracked by git but not in the tarball" \
             "(list it in its folder's Makefile.am fragment)" >&2
        missing=$((missing + 1))
    fi
done <"$list"
[ "$missing" = 0 ] || { echo "check-dist-files: $missing tracked file(s) missing from the tarball" >&2; exit 1; }
echo "check-dist-files: all $(wc -l <"$list") tracked files are in the tarball"
