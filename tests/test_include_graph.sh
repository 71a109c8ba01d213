#!/bin/sh
# The include graph follows lib/README.md: scripts/check-includes.sh finds
# no edge pointing the wrong way in this tree, and it does find each wrong
# edge planted in a small fixture tree that uses the same table (and none
# of the right ones planted beside them).
set -u
src=${TERSE_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
check="$src/scripts/check-includes.sh"

out=$(sh "$check" "$src" 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
    echo "$out"
    echo "FAIL: the include graph of $src breaks lib/README.md (exit $rc)" >&2
    exit 1
fi
echo "include graph of $src: clean"

fx=$(mktemp -d) || exit 1
trap 'rm -rf "$fx"' EXIT INT TERM
mkdir -p "$fx/lib/util" "$fx/lib/engine" "$fx/lib/runtime" "$fx/include/terse" \
    "$fx/plugins/common" "$fx/plugins/foo" "$fx/mpi-wrappers"
cp "$src/lib/README.md" "$fx/lib/"
cp "$src/common.am" "$src/configure.ac" "$fx/"
for f in include/terse/codec.h include/terse/terse.h lib/util/status.h lib/runtime/comm_state.h \
         lib/engine/coll_args.h lib/engine/op_base.h plugins/foo/foo.h; do
    : > "$fx/$f"
done
# Wrong edges are marked WRONG; every other line is allowed.
cat > "$fx/lib/engine/bad_edge.h" <<'EOF'
#pragma once
#include "engine/coll_args.h"
#include "util/status.h"
#include "runtime/comm_state.h"
#include <mpi.h>
#include <vector>
EOF
cat > "$fx/lib/runtime/fine.cc" <<'EOF'
#include "engine/op_base.h"
#include "runtime/comm_state.h"
#include <mpi.h>
EOF
cat > "$fx/plugins/common/le.h" <<'EOF'
#include <terse/codec.h>
EOF
cat > "$fx/plugins/foo/foo.c" <<'EOF'
#include <terse/codec.h>
#include "../common/le.h"
#include "foo.h"
#include <stdint.h>
#include "../../lib/util/status.h"
#include <terse/terse.h>
EOF
cat > "$fx/mpi-wrappers/w.cc" <<'EOF'
#include "engine/coll_args.h"
#include "engine/op_base.h"
#include "runtime/comm_state.h"
#include <mpi.h>
EOF
cat > "$fx/plugins/foo/Makefile.am" <<'EOF'
AM_CPPFLAGS += -I$(top_srcdir)/lib
foo_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir) -I$(top_srcdir)/plugins/common
EOF

out=$(sh "$check" "$fx" 2>&1)
rc=$?
echo "$out" | sed 's/^/  fixture: /'
fail=0
[ $rc -eq 1 ] || { echo "FAIL: the checker exited $rc on the fixture, not 1" >&2; fail=1; }
expect() {  # expect FILE:LINE TEXT: reported, with the rule it breaks
    echo "$out" | grep -F "$1:" | grep -qF "$2" ||
        { echo "FAIL: not reported: $1 ($2)" >&2; fail=1; }
}
expect lib/engine/bad_edge.h:4 "engine/ may not include runtime/"
expect lib/engine/bad_edge.h:5 "#include <mpi.h>: only runtime/, mpi-wrappers/ may include it"
expect plugins/foo/foo.c:5 "plugins/ may not include util/"
expect plugins/foo/foo.c:6 "plugins/ may not include include/terse/terse.h"
expect mpi-wrappers/w.cc:2 "mpi-wrappers/ may not include engine/"
expect plugins/foo/Makefile.am:1 "puts lib/ on the include path of plugins"
n=$(echo "$out" | grep -c .)
[ "$n" -eq 6 ] || { echo "FAIL: $n reports on the fixture, expected the 6 wrong edges only" >&2; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "the checker reports each of the 6 wrong edges of the fixture, and nothing else"
