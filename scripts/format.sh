#!/bin/sh
# Apply .clang-format to terse's C and C++ sources (make format), or with
# --check only say which files it would change and how many lines (make
# format-check; exit 1 when any).  --diff prints the changes instead.
# The sources: *.c, *.cc and *.h under include/ lib/ mpi-wrappers/ plugins/
# tools/ tests/ perf/ that git tracks (every such file outside a git work
# tree).  CLANG_FORMAT names the binary (default: clang-format).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
cf=${CLANG_FORMAT:-clang-format}
mode=apply
case ${1:-} in
"") ;;
--check) mode=check ;;
--diff) mode=diff ;;
*) echo "usage: $0 [--check | --diff]" >&2; exit 2 ;;
esac
command -v "$cf" >/dev/null 2>&1 || { echo "format.sh: $cf not found (Debian: clang-format)" >&2; exit 2; }
[ -f .clang-format ] || { echo "format.sh: no .clang-format in $top" >&2; exit 2; }

dirs="include lib mpi-wrappers plugins tools tests perf"
list=$(mktemp)
trap 'rm -f "$list" "$list.out"' EXIT
set -f  # the pathspecs below are for git, not for the shell
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # shellcheck disable=SC2046
    git ls-files -- $(for d in $dirs; do printf '%s/*.c %s/*.cc %s/*.h ' "$d" "$d" "$d"; done) >"$list"
else
    # shellcheck disable=SC2086
    find $dirs \( -name '*.c' -o -name '*.cc' -o -name '*.h' \) ! -path include/terse/version.h | sort >"$list"
fi

set +f
if [ "$mode" = apply ]; then
    xargs "$cf" -i --style=file <"$list"
    echo "format.sh: formatted $(wc -l <"$list") files"
    exit 0
fi
files=0 lines=0
while IFS= read -r f; do
    "$cf" --style=file "$f" | diff -u "$f" - >"$list.out" || true
    [ -s "$list.out" ] || continue
    n=$(awk 'NR > 2 && /^-/ { n++ } END { print n + 0 }' "$list.out")
    files=$((files + 1)) lines=$((lines + n))
    if [ "$mode" = diff ]; then cat "$list.out"; else echo "$f: $n lines"; fi
done <"$list"
if [ "$files" = 0 ]; then
    echo "format.sh: all $(wc -l <"$list") files follow .clang-format"
    exit 0
fi
echo "format.sh: $files of $(wc -l <"$list") files ($lines lines) differ from .clang-format; make format applies it"
exit 1
