#!/bin/sh
# Every man page renders without a warning (groff -ww: all warnings), and
# hyphenates no identifier or path.
set -u
command -v groff >/dev/null 2>&1 || { echo "SKIP: groff not installed"; exit 77; }
dir="$TERSE_SRCDIR/man"
n=0
for page in "$dir"/*.[1-9]; do
    [ -e "$page" ] || continue
    n=$((n + 1))
    out=$(groff -man -ww -z "$page" 2>&1)
    [ -z "$out" ] || { echo "$out"; echo "FAIL: $page: groff warnings" >&2; exit 1; }
    if command -v man >/dev/null 2>&1; then
        out=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
        [ -z "$out" ] || { echo "$out"; echo "FAIL: $page: man -l warnings" >&2; exit 1; }
        if MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q "$(printf '\342\200\220')"; then
            echo "FAIL: $page: a word is hyphenated at a line end (add .nr HY 0 before .TH)" >&2
            exit 1
        fi
    fi
    # Every page listed for installation.
    grep -q "[[:space:]]$(basename "$page")" "$dir/Makefile.am" \
        || { echo "FAIL: $(basename "$page") is not in man/Makefile.am dist_man_MANS" >&2; exit 1; }
done
[ $n -gt 0 ] || { echo "FAIL: no man pages in $dir" >&2; exit 1; }
echo "$n man pages render cleanly"
