#!/bin/sh
# Data-layer unit tests (tests/check_data.c: eval order, exact gather, format validation, loader)
# on 1, 2 and 4 ranks: the gather and the collective opens must agree across any world size.
. "${top_srcdir:-.}/tests/lib.sh"
PROG="$top_builddir/tests/check_data"
[ -x "$PROG" ] || fail "$PROG is not built (make check builds it)"
for np in 1 2 4; do
    out=$(run_mpi "$np" "$PROG" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^[0-9]+%: Checks' || true
    [ "$rc" -eq 0 ] || { printf '%s\n' "$out"; fail "check_data on $np rank(s) exited $rc"; }
    printf '%s\n' "$out" | grep -q '100%: Checks' || { printf '%s\n' "$out"; fail "check_data on $np rank(s) did not pass all checks"; }
    pass "check_data on $np rank(s)"
done
