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
# examples/llama.yaml, shortened: the Llama it describes trains on the default corpus under mpirun.
out=$(run_mpi 2 "$ACCEL_TRAIN" "$top_srcdir/examples/llama.yaml" train.steps=40 train.log_every=20 \
      train.sample_tokens=16 train.metrics= data.path= 2>&1) || fail "examples/llama.yaml: $out"
echo "$out" | grep -q "name: llama" || fail "examples/llama.yaml did not run a llama: $out"
loss=$(echo "$out" | sed -n 's/.*train loss \([0-9.]*\) -> \([0-9.]*\).*/\1 \2/p')
echo "$loss" | awk '{ exit !(NF == 2 && $2 < $1 - 1.0) }' || fail "examples/llama.yaml: loss did not fall ($loss)"
pass "examples/llama.yaml trains: loss $loss"
