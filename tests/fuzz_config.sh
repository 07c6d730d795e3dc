#!/bin/sh
# The configuration reader's fuzz harness (tests/fuzz/fuzz_config.c) over its seed corpus and the
# inputs that once crashed or failed to round-trip (tests/fuzz/corpus/config/), with the plain
# regression driver: any crash, abort or sanitizer report fails the test.
. "$top_srcdir/tests/lib.sh"
corpus="$top_srcdir/tests/fuzz/corpus/config"
n=$(ls "$corpus" | wc -l)
[ "$n" -ge 20 ] || fail "the seed corpus $corpus holds only $n inputs"
out=$(timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/tests/fuzz/config_regress" "$corpus" 2>&1) ||
    fail "fuzz_config failed on the corpus: $out"
echo "$out"
echo "$out" | grep -q "$n inputs run, 0 unreadable" || fail "not every corpus input was run: $out"
exit 0
