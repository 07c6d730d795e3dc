#!/bin/sh
# Unit tests of big-model inference (tests/check_infer.c): size and map parsing, the automatic map,
# the weights reader, bitwise-identical logits for every device map, the prefetch schedule.
. "${top_srcdir:-.}/tests/lib.sh"
prog="$top_builddir/tests/check_infer"
[ -x "$prog" ] || fail "$prog is not built (make check builds it)"
timeout -k 10 "$TEST_TIMEOUT" "$prog" || fail "check_infer failed"
pass "infer unit tests"
