#!/bin/sh
# The examples work: a user model loaded as a plugin trains under mpirun, and a hand-written loop
# distributed with the library converges to the same answer on 1 and 4 ranks.
. "$top_srcdir/tests/lib.sh"
plugin="$top_builddir/examples/plugin/.libs/softmax_regression.so"
[ -f "$plugin" ] || fail "plugin not built: $plugin"
out=$(run_mpi 2 "$ACCEL_TRAIN" model.plugin="$plugin" train.steps=60 2>&1) || fail "plugin run: $out"
echo "$out" | grep -q "model softmax_regression: 330 parameters" || fail "plugin not used: $out"
acc=$(echo "$out" | sed -n 's/.*accuracy \([0-9.]*\)%.*/\1/p')
awk -v a="$acc" 'BEGIN { exit !(a > 50) }' || fail "plugin model did not learn (accuracy $acc%)"
pass "plugin model trains: accuracy $acc%"
for np in 1 4; do
    out=$(run_mpi $np "$top_builddir/examples/own_loop" 2>&1) || fail "own_loop on $np ranks: $out"
    pass "$out"
done
