#!/bin/sh
# The layers at link level: every layer is built as its own convenience library
# (.libs/libaccel_<layer>.a, Makefile.am), and no layer's objects may need a symbol that only a
# higher layer defines; that is, each layer links with only the layers below it. tests/layers.sh
# checks the same order on the include graph; this catches calls declared by hand or through a
# lower header. The order and the allow lines come from tests/layers.txt, the one layer map.
#
# We read the archives' symbol tables (nm) rather than link a shared object per layer with
# --no-undefined: the answer is the same for accel's own symbols, it needs none of the external
# libraries, and it can name the object and the symbol. An "allow-link FROM.o TO.o" line in
# tests/layers.txt (src/<layer>/<object>) lets one known upward call through while it is fixed.
: "${top_builddir:=$(pwd)}"
: "${top_srcdir:=$top_builddir}"
map="$top_srcdir/tests/layers.txt"
NM=${NM:-nm}

order=$(sed -n 's/^order[ \t]*//p' "$map")
[ -n "$order" ] || { echo "FAIL: no order line in $map"; exit 1; }

# One line per symbol: LAYER OBJECT KIND(T defined, U needed) SYMBOL.
syms=$(
    for l in $order; do
        a="$top_builddir/.libs/libaccel_$l.a"
        if [ ! -f "$a" ]; then
            # The tools are programs, not a library; a layer with no sources yet has no archive.
            if [ "$l" != tools ] && ls "$top_srcdir/src/$l/"*.c >/dev/null 2>&1; then
                echo "MISSING $l"
            fi
            continue
        fi
        "$NM" -P -g -A "$a" | awk -v l="$l" '{
            obj = $1; sub(/^.*\[/, "", obj); sub(/\]:$/, "", obj)
            k = $3 == "U" ? "U" : ($3 ~ /^[TDBRVWSGi]$/ ? "T" : "")
            if (k != "") print l, obj, k, $2 }'
    done
) || exit 1
missing=$(printf '%s\n' "$syms" | sed -n 's/^MISSING //p')
[ -z "$missing" ] || { echo "FAIL: no convenience library for layer(s) with sources: $missing (Makefile.am)"; exit 1; }

printf '%s\n' "$syms" | awk -v order="$order" -v mapfile="$map" '
    BEGIN {
        n = split(order, o, " "); for (i = 1; i <= n; i++) rank[o[i]] = i
        while ((getline line < mapfile) > 0) {
            sub(/#.*/, "", line)
            if (split(line, w, " ") == 3 && w[1] == "allow-link") allow[w[2], w[3]] = 1
        }
    }
    $3 == "T" { def[$4] = $1; defobj[$4] = "src/" $1 "/" $2; next }
    $3 == "U" { nu++; need[nu] = $4; from[nu] = $1; fromobj[nu] = "src/" $1 "/" $2 }
    END {
        for (i = 1; i <= nu; i++) {
            s = need[i]
            if (!(s in def) || rank[def[s]] <= rank[from[i]]) continue
            if ((fromobj[i], defobj[s]) in allow) {
                printf "layers_link: ALLOWED %s (%s) needs %s from %s (%s) [allow-link line]\n",
                    fromobj[i], from[i], s, defobj[s], def[s]
                nallowed++; continue
            }
            printf "layers_link: UP %s (%s) needs %s from %s (%s)\n", fromobj[i], from[i], s, defobj[s], def[s]
            nup++
        }
        printf "layers_link: %d symbols needed: %d from a higher layer, %d allowed (to remove)\n", nu, nup, nallowed
        exit nup ? 1 : 0
    }'
rc=$?
[ "$rc" -eq 0 ] && { echo "PASS: each layer links with the layers below it only"; exit 0; }
echo "FAIL: a layer needs a higher one (see above; the order is in tests/layers.txt)"
exit 1
