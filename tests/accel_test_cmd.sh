#!/bin/sh
# `accel test` (collectives on every dtype, bandwidth, parallel HDF5) passes on 1, 2 and 4 ranks.
. "$top_srcdir/tests/lib.sh"
make_scratch
for np in 1 2 4; do
    out=$(run_mpi $np "$ACCEL" test --dir "$SCRATCH" --max-mib 4 2>&1) || fail "accel test on $np ranks: $out"
    echo "$out" | grep -q "accel test: PASSED: .* on $np rank" || fail "no PASSED line on $np ranks: $out"
    echo "$out" | grep -q "busbw GB/s" || fail "no bandwidth table on $np ranks"
    echo "$out" | grep -q "parallel HDF5 .* ok" || fail "no parallel HDF5 check on $np ranks"
    pass "accel test on $np ranks: $(echo "$out" | tail -1)"
done
ls "$SCRATCH"/*.h5 >/dev/null 2>&1 && fail "accel test left its HDF5 file behind"
"$ACCEL" test --help | grep -q "usage: accel test" || fail "accel test --help"
expect_fail "unexpected argument" "$ACCEL" test --bogus
exit 0
