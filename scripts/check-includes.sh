#!/bin/sh
# check-includes.sh [ROOT]: check the include graph of the terse tree at
# ROOT (default: this script's tree) against the component table of
# ROOT/lib/README.md, the one place the rules are written.
#
# Reads every #include of lib/, mpi-wrappers/, plugins/ and tools/ and
# reports, as "file:line: rule", each one that points the wrong way: a
# folder including a component (or header) its row does not list, or an
# outside header confined to other folders (<mpi.h>, UCX).  Then checks that
# the build gives plugins no include path beyond their row: the -I flags of
# common.am's AM_CPPFLAGS and of plugins/*/Makefile.am, no CORE_CPPFLAGS in
# plugins, and automake's default -I. -I$(srcdir) -I$(top_builddir) off
# (nostdinc in configure.ac).  Exit status 1 when anything is reported.
# POSIX sh, find, sort and awk only.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
[ -f lib/README.md ] || { echo "$root/lib/README.md: not found" >&2; exit 2; }

list=$(mktemp) || exit 2
trap 'rm -f "$list"' EXIT INT TERM
for d in lib include mpi-wrappers plugins tools; do
    [ -d "$d" ] && find "$d" -type f
done | sort > "$list"

# Paths of the tree, for both awk programs below: "a/./b/../c" -> "a/c",
# and the folder of a path ("" at the top).
paths_awk='function normalize(p,    n, seg, out, i, m, st) {
    n = split(p, seg, "/"); m = 0
    for (i = 1; i <= n; i++) {
        if (seg[i] == "" || seg[i] == ".") continue
        if (seg[i] == ".." && m > 0 && st[m] != "..") { m--; continue }
        st[++m] = seg[i]
    }
    out = ""
    for (i = 1; i <= m; i++) out = out (i > 1 ? "/" : "") st[i]
    return out
}
function dirname(p) { return sub(/\/[^\/]*$/, "", p) ? p : "" }
'

status=0
awk "$paths_awk"'
# ---------------------------------------------------------------- the table
function trim(s) { gsub(/`/, "", s); gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
FNR == 1 { part++ }
part == 1 && /^\|/ {
    n = split($0, cell, "|")
    if (n < 5) next
    folder = trim(cell[2]); may = cell[4]
    if (folder == "folder" || folder ~ /^-+$/) next
    sub(/\/$/, "", folder)
    rows[folder] = 1
    # "may include": comma-separated tokens; "-" (or an em dash) is nothing.
    k = split(may, tok, ",")
    for (i = 1; i <= k; i++) {
        t = trim(tok[i])
        if (t == "" || t == "-" || t == "\342\200\224") continue
        allow[folder, t] = 1
        allowed_list[folder] = allowed_list[folder] " " t
        if (t ~ /^</) confined[t] = confined[t] (confined[t] == "" ? "" : ", ") folder "/"
    }
    next
}
part == 2 { exists[$0] = 1; files[++nfiles] = $0; next }

# The component a path of the tree belongs to.
function component(p,    s) {
    if (p ~ /^lib\//) { s = p; sub(/^lib\//, "", s); sub(/\/.*/, "", s); return s }
    if (p ~ /^plugins\/[^\/]+\//) { s = p; sub(/^plugins\//, "", s); sub(/\/.*/, "", s); return "plugins/" s }
    s = p; sub(/\/.*/, "", s); return s
}
# The table row that rules a component (each plugin folder: "plugins").
function row_of(c) {
    if (c in rows) return c
    if (c ~ /^plugins\// && ("plugins" in rows)) return "plugins"
    return ""
}
function report(file, line, msg) { printf "%s:%d: %s\n", file, line, msg; bad = 1 }

# An include that resolved to tgt, a file of the tree.
function check_edge(file, line, text, src, tgt,    c, r, t) {
    c = component(tgt)
    if (c == src) return
    r = row_of(src)
    if ((r, c) in allow || (r, tgt) in allow) return
    t = tgt; sub(/^lib\//, "", t)
    if ((r, t) in allow) return
    report(file, line, text ": " r "/ may not include " (c == "include" ? tgt : c "/") \
           " (may include:" allowed_list[r] "; lib/README.md)")
}
# An include of hdr, a header outside the tree: free unless a row confines
# it (a pattern "<name>" or "<prefix*>" in some row) and the row of src does not.
function check_outside(file, line, text, src, hdr,    r, pat, p, where) {
    r = row_of(src); where = ""
    for (pat in confined) {
        p = substr(pat, 2, length(pat) - 2)
        if (p ~ /\*$/) { p = substr(p, 1, length(p) - 1); if (substr(hdr, 1, length(p)) != p) continue }
        else if (hdr != p) continue
        if ((r, pat) in allow) return
        where = confined[pat]
    }
    if (where != "") report(file, line, text ": only " where " may include it (lib/README.md)")
}

# ---------------------------------------------------------------- includes
function scan(file,    src, line, l, kind, hdr, tgt, text) {
    src = component(file)
    if (row_of(src) == "") { report(file, 1, "folder " src "/ has no row in lib/README.md"); return }
    line = 0
    while ((getline l < file) > 0) {
        line++
        if (l !~ /^[ \t]*#[ \t]*include[ \t]*[<"]/) continue
        sub(/^[ \t]*#[ \t]*include[ \t]*/, "", l)
        kind = substr(l, 1, 1)
        hdr = substr(l, 2)
        if (kind == "<") sub(/>.*/, "", hdr)
        else sub(/".*/, "", hdr)
        text = "#include " (kind == "<" ? "<" hdr ">" : "\"" hdr "\"")
        tgt = ""
        if (kind == "\"" && exists[normalize(dirname(file) "/" hdr)]) tgt = normalize(dirname(file) "/" hdr)
        else if (exists["lib/" normalize(hdr)]) tgt = "lib/" normalize(hdr)
        else if (exists["include/" normalize(hdr)]) tgt = "include/" normalize(hdr)
        if (tgt != "") check_edge(file, line, text, src, tgt)
        else check_outside(file, line, text, src, hdr)
    }
    close(file)
}

END {
    if (!("plugins" in rows)) { print "lib/README.md: no component table (no row for plugins/)"; exit 1 }
    for (i = 1; i <= nfiles; i++) {
        f = files[i]
        if (f ~ /^include\//) continue
        if (f ~ /\.(h|hh|hpp|c|cc|cpp|cu)$/) scan(f)
    }
    exit bad
}
' lib/README.md "$list" || status=1

# ---------------------------------------------------------------- the build
# Include directories plugins may have: their own folder, and what their
# row lists (a directory, or one holding a listed header).
plugin_row=$(awk -F'|' '{ f = $2; gsub(/[` \t]/, "", f) } f == "plugins/" { print $4 }' lib/README.md |
             tr -d '`' | tr ',' ' ' | tr -s ' ' | sed 's/^ //; s/ $//')
if [ -z "$plugin_row" ]; then
    echo "lib/README.md: no row for plugins/"
    status=1
fi

# check_flags FILE [VAR]: every -I of FILE (only in the assignments of VAR,
# with their continuation lines, when VAR is given) must name a directory
# plugins may see.  Without VAR the whole file is a plugin's: it may not
# use CORE_CPPFLAGS or DEFAULT_INCLUDES either.
check_flags() {
    awk -v allowed="$plugin_row" -v mk="$1" -v var="${2:-}" "$paths_awk"'
    BEGIN { here = dirname(mk) }
    {
        if (var != "") {
            take = cont || $0 ~ ("^[ \t]*" var "[ \t]*\\+?=")
            cont = take && /\\$/
            if (!take) next
        } else if (/CORE_CPPFLAGS|DEFAULT_INCLUDES/) {
            printf "%s:%d: a plugin may not use CORE_CPPFLAGS or DEFAULT_INCLUDES (lib/README.md)\n", mk, NR
            bad = 1
        }
        n = split($0, w, /[ \t]+/)
        for (i = 1; i <= n; i++) {
            if (w[i] !~ /^-I/) continue
            d = substr(w[i], 3)
            if (d ~ /^\$\((top_srcdir|top_builddir)\)/) sub(/^\$\((top_srcdir|top_builddir)\)\/?/, "", d)
            else if (d ~ /^\$\((srcdir|builddir)\)/) { sub(/^\$\((srcdir|builddir)\)\/?/, "", d); d = here "/" d }
            else if (d ~ /^\$/) continue  # an outside package (its *_CFLAGS)
            else d = here "/" d
            d = normalize(d)
            # A plugin folder may have itself on its path.
            ok = var == "" && d == here
            k = split(allowed, a, " ")
            for (j = 1; j <= k && !ok; j++)
                if (a[j] == d || index(a[j], d "/") == 1) ok = 1
            if (!ok) {
                printf "%s:%d: %s puts %s on the include path of plugins, which may see only %s (lib/README.md)\n",
                       mk, NR, w[i], (d == "" ? "the top of the tree" : d "/"), allowed
                bad = 1
            }
        }
    }
    END { exit bad }
    ' "$1" || status=1
}

if [ -f common.am ]; then
    check_flags common.am 'AM_CPPFLAGS'
else
    echo "common.am: not found"
    status=1
fi
for mk in plugins/*/Makefile.am plugins/Makefile.am; do
    [ -f "$mk" ] && check_flags "$mk"
done
if ! grep -q '^AM_INIT_AUTOMAKE(\[[^]]*nostdinc' configure.ac 2>/dev/null; then
    line=$(grep -n '^AM_INIT_AUTOMAKE' configure.ac 2>/dev/null | cut -d: -f1)
    echo "configure.ac:${line:-1}: AM_INIT_AUTOMAKE lacks nostdinc: automake then puts -I. -I\$(srcdir) -I\$(top_builddir) on every target, plugins included (lib/README.md)"
    status=1
fi
exit $status
