#!/bin/sh
# The layers the build enforces (DESIGN.md): reads the quoted-#include graph of src/ and include/,
# maps every file to its layer (tests/layers.txt) and fails on an include that goes up the layer
# order, on a cycle, and on a file no layer claims. POSIX sh and awk only.
#
#   tests/layers.sh                 self-test on a fake tree, then the source tree (make check)
#   tests/layers.sh ROOT [MAP]      check the tree ROOT against MAP (default ROOT/tests/layers.txt)
#
# "accel/x.h" resolves to include/accel/x.h, any other quoted include relative to the including
# file's directory; includes that resolve to no file under src/ or include/ ("build_config.h", made by
# configure) are not part of the graph. For cycles a .c/.cu and the .h of the same name are one
# node, so two files that call each other through their own headers show up as a cycle.

: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"

# check ROOT MAP: prints one line per finding and a summary; exit status 1 on any violation.
check() {
    root=$1 map=$2
    [ -d "$root/src" ] || { echo "layers: no $root/src"; return 2; }
    [ -r "$map" ] || { echo "layers: cannot read the layer map $map"; return 2; }
    (
        cd "$root" || exit 2
        files=$(find src include -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) 2>/dev/null | LC_ALL=C sort)
        # The file list first (what exists), then every file's text (its includes).
        { printf '%s\n' $files; } | awk -v mapfile="$map" -v mapname="$(basename "$map")" '
        function norm(p,    n, i, k, part, out) {     # resolve "." and ".." in a relative path
            n = split(p, part, "/"); k = 0
            for (i = 1; i <= n; i++) {
                if (part[i] == "." || part[i] == "") continue
                if (part[i] == ".." && k > 0 && stk[k] != "..") { k--; continue }
                stk[++k] = part[i]
            }
            out = ""
            for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") stk[i]
            return out
        }
        function dirof(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "." }
        function layer(f,    best, d) {             # exact file entry, else the longest directory
            if (f in fmap) return fmap[f]
            best = ""
            for (d in dmap) if (index(f, d) == 1 && length(d) > length(best)) best = d
            return best == "" ? "" : dmap[best]
        }
        function node(f) { sub(/\.(c|h|cu)$/, "", f); return f }
        function dfs(u,    n, i, v, k, s, list) {
            color[u] = 1; path[++depth] = u
            n = split(adj[u], list, " ")
            for (i = 1; i <= n; i++) {
                v = list[i]
                if (color[v] == 1) {                   # back edge: the cycle is path[v..u] + v
                    for (k = depth; path[k] != v; k--) ;
                    s = ""
                    for (; k <= depth; k++) s = s why[path[k], (k < depth ? path[k + 1] : v)] "; "
                    printf "layers: CYCLE %s\n", substr(s, 1, length(s) - 2)
                    ncycle++
                } else if (color[v] == 0) dfs(v)
            }
            depth--; color[u] = 2
        }
        BEGIN {
            while ((getline line < mapfile) > 0) {
                sub(/#.*/, "", line)
                n = split(line, w, " ")
                if (n == 0) continue
                if (w[1] == "order") { for (i = 2; i <= n; i++) rank[w[i]] = i - 1; continue }
                if (w[1] == "allow" && n == 3) { allow[w[2], w[3]] = 1; continue }
                if (w[1] == "allow-link") continue          # tests/layers_link.sh
                if (n != 2) { printf "layers: bad line in %s: %s\n", mapname, line; bad++; continue }
                if (w[1] ~ /\/$/) dmap[w[1]] = w[2]; else fmap[w[1]] = w[2]
                if (!(w[2] in rank)) { printf "layers: %s names layer %s, not in the order line\n", mapname, w[2]; bad++ }
            }
        }
        # Pass 1 (standard input): the files.
        FILENAME == "-" || FILENAME == "" { exists[$0] = 1; nfiles++; order_[nfiles] = $0; next }
        # Pass 2: the files themselves.
        FNR == 1 { cur = FILENAME }
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
            if (inc ~ /^accel\//) t = "include/" inc
            else t = norm(dirof(cur) "/" inc)
            if (!(t in exists)) next                  # generated or system header: not ours
            nedges++
            lf = layer(cur); lt = layer(t)
            if (lf != "" && lt != "" && rank[lt] > rank[lf]) {
                if ((cur, t) in allow) {
                    printf "layers: ALLOWED %s (%s) includes %s (%s) [allow line in %s]\n", cur, lf, t, lt, mapname
                    nallowed++; used[cur, t] = 1
                } else {
                    printf "layers: UP %s (%s) includes %s (%s)\n", cur, lf, t, lt
                    nup++
                }
            }
            a = node(cur); b = node(t)
            if (a != b && !((a, b) in why)) { adj[a] = adj[a] " " b; why[a, b] = cur " includes " t }
        }
        END {
            for (i = 1; i <= nfiles; i++) {
                f = order_[i]
                if (layer(f) == "") { printf "layers: UNMAPPED %s: no layer in %s claims it\n", f, mapname; nunmapped++ }
            }
            for (i = 1; i <= nfiles; i++) { u = node(order_[i]); if (!color[u]) dfs(u) }
            for (k in allow) if (!(k in used)) {
                split(k, e, SUBSEP)
                printf "layers: STALE allow %s %s in %s: that upward include is gone, delete the line\n", e[1], e[2], mapname
            }
            printf "layers: %d files, %d includes: %d upward, %d cycles, %d unmapped, %d allowed (to remove)\n",
                nfiles, nedges, nup, ncycle, nunmapped, nallowed
            exit (nup + ncycle + nunmapped + bad) ? 1 : 0
        }' - $files
    )
}

# The self-test: a fake tree with one upward include, one header cycle and one .c/.h cycle must be
# reported as exactly that; the same tree without them must pass.
self_test() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/accel-layers.XXXXXX") || return 1
    mkdir -p "$tmp/src/low" "$tmp/src/high" "$tmp/include/accel"
    cat > "$tmp/map.txt" <<'EOF'
order low high
src/low/ low
src/high/ high
include/accel/high.h high
EOF
    printf '#include "build_config.h"\n#include "accel/high.h"\n' > "$tmp/src/low/up.c"   # upward
    printf '#include "../low/p.h"\n' > "$tmp/include/accel/high.h"                   # downward: fine
    printf '#include "q.h"\n' > "$tmp/src/low/p.h"                                  # p.h <-> q.h
    printf '#include "p.h"\n' > "$tmp/src/low/q.h"
    printf '#include "n.h"\n' > "$tmp/src/high/m.c"                                 # m.c <-> n.c
    printf '#include "m.h"\n' > "$tmp/src/high/n.c"
    : > "$tmp/src/high/m.h"; : > "$tmp/src/high/n.h"
    out=$(check "$tmp" "$tmp/map.txt"); rc=$?
    ok=1
    [ "$rc" -eq 1 ] || ok=0
    printf '%s\n' "$out" | grep -q '^layers: UP src/low/up.c (low) includes include/accel/high.h (high)$' || ok=0
    printf '%s\n' "$out" | grep -q '^layers: CYCLE src/low/p.h includes src/low/q.h; src/low/q.h includes src/low/p.h$' || ok=0
    printf '%s\n' "$out" | grep -q '^layers: CYCLE src/high/m.c includes src/high/n.h; src/high/n.c includes src/high/m.h$' || ok=0
    printf '%s\n' "$out" | grep -q ': 1 upward, 2 cycles, 0 unmapped' || ok=0
    if [ "$ok" -eq 1 ]; then
        # Take the violations away (and allow-list the upward include): now it must pass.
        echo 'allow src/low/up.c include/accel/high.h' >> "$tmp/map.txt"
        : > "$tmp/src/low/q.h"; : > "$tmp/src/high/n.c"
        out2=$(check "$tmp" "$tmp/map.txt") || ok=0
        printf '%s\n' "$out2" | grep -q '^layers: ALLOWED src/low/up.c' || ok=0
        touch "$tmp/src/orphan.c"                   # a file no layer claims fails
        check "$tmp" "$tmp/map.txt" | grep -q '^layers: UNMAPPED src/orphan.c' || ok=0
    fi
    rm -rf "$tmp"
    if [ "$ok" -ne 1 ]; then
        echo "FAIL: layers self-test: the fake tree was not reported as expected (exit $rc):"
        printf '%s\n%s\n' "$out" "$out2"
        return 1
    fi
    echo "PASS: layers self-test (an upward include, a header cycle and a .c/.h cycle are found)"
}

if [ $# -ge 1 ]; then
    check "$1" "${2:-$1/tests/layers.txt}"
    exit $?
fi
self_test || exit 1
check "$top_srcdir" "$top_srcdir/tests/layers.txt" && echo "PASS: layers of $top_srcdir" && exit 0
echo "FAIL: the include graph breaks the layer order (see above; the order is in tests/layers.txt)"
exit 1
