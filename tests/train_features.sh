#!/bin/sh
# accel_train end to end: defaults, a YAML file with overrides, the printed configuration and
# global batch, the rank table, SGD and schedules, the example configs.
. "$top_srcdir/tests/lib.sh"
make_scratch
# Built-in defaults: a small GPT on the Debian text corpus, which rank 0 prepares on first use.
out=$(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" train.steps=20 train.sample_tokens=40 2>&1) || fail "2-rank run on defaults: $out"
for want in "effective configuration (built-in defaults)" "global_batch: 32" "accel: 2 ranks on 1 node" \
            "preparing the default corpus data/corpus.h5" "data: data/corpus.h5:" \
            "global batch 32 = 2 ranks x 1 grad_accum x 16 micro-batch" "step    20/20" "tokens/s" \
            "held-out loss" "sample (temperature 0.8, top-k 40):"; do
    echo "$out" | grep -qF -- "$want" || fail "output lacks '$want': $out"
done
[ -f "$SCRATCH/data/corpus.h5" ] || fail "the default corpus was not kept for the next run"
out=$(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" train.steps=2 train.sample_tokens=0 2>&1) || fail "second run: $out"
echo "$out" | grep -q "preparing the default corpus" && fail "the corpus was prepared twice"
cat > "$SCRATCH/job.yaml" <<YAML
model:
  name: mlp
  hidden: 32
train:
  steps: 15
  global_batch: 32
optim:
  name: sgd
  lr: 0.05
  schedule: linear
YAML
out=$(run_mpi 2 "$ACCEL_TRAIN" "$SCRATCH/job.yaml" train.steps=12 2>&1) || fail "YAML run: $out"
echo "$out" | grep -q "from $SCRATCH/job.yaml" || fail "config path not shown"
echo "$out" | grep -q "sgd lr 0.05, linear schedule" || fail "optimizer not taken from YAML: $out"
echo "$out" | grep -q "step    12/12" || fail "override of train.steps ignored"
ACCEL_TRAIN_STEPS=7 "$ACCEL_TRAIN" "$SCRATCH/job.yaml" 2>&1 | grep -q "step     7/7" || fail "ACCEL_TRAIN_STEPS ignored"
"$ACCEL_TRAIN" --print-config train.steps=3 | grep -q "  steps: 3" || fail "--print-config"
"$ACCEL_TRAIN" --help | grep -q "usage: accel_train" || fail "--help"
for f in "$top_srcdir"/examples/*.yaml; do
    [ -f "$f" ] || continue
    "$ACCEL_TRAIN" --print-config "$f" >/dev/null || fail "example $f does not load"
done
"$ACCEL" config --defaults > "$SCRATCH/gen.yaml" || fail "accel config --defaults"
grep -q "^# accel job configuration" "$SCRATCH/gen.yaml" || fail "accel config header"
"$ACCEL_TRAIN" --print-config "$SCRATCH/gen.yaml" >/dev/null || fail "accel config output does not load back"
"$ACCEL" config --defaults -o "$SCRATCH/gen2.yaml" train.steps=9 2>/dev/null || fail "accel config -o"
grep -q "  steps: 9" "$SCRATCH/gen2.yaml" || fail "accel config key=value"
expect_fail "exists; not overwriting" "$ACCEL" config --defaults -o "$SCRATCH/gen2.yaml"
pass "accel_train features"

# A stop trigger raised by one rank stops every rank at the same step, without deadlock.
out=$(run_mpi 2 "$ACCEL_TRAIN" model.name=mlp train.steps=40 debug.stop_step=7 debug.stop_rank=1 2>&1) || fail "stop trigger run: $out"
echo "$out" | grep -q "stop requested: every rank stops after step 7" || fail "stop trigger not honoured: $out"
echo "$out" | grep -q "done: step 7 of 40" || fail "training did not end at step 7"
# SIGTERM (what Slurm sends before a time limit) is a stop request too.
"$ACCEL_TRAIN" model.name=mlp train.steps=100000 train.log_every=1000 > "$SCRATCH/sig.out" 2>&1 &
pid=$!
sleep 2; kill -TERM $pid
wait $pid || fail "SIGTERM run exited non-zero: $(cat "$SCRATCH/sig.out")"
grep -q "stop requested by a signal" "$SCRATCH/sig.out" || fail "SIGTERM not turned into a stop: $(tail -3 "$SCRATCH/sig.out")"

# fp16: an overflow injected on rank 1 at step 5 skips exactly that step on every rank.
run_mpi 2 "$ACCEL_TRAIN" model.name=mlp train.steps=12 precision=fp16 debug.overflow_step=5 debug.overflow_rank=1 \
    train.metrics="$SCRATCH/fp16.jsonl" > "$SCRATCH/fp16.out" 2>&1 || fail "fp16 run: $(cat "$SCRATCH/fp16.out")"
[ "$(grep -c '"skipped": true' "$SCRATCH/fp16.jsonl")" -eq 1 ] || fail "expected exactly one skipped step"
grep -q '"step": 5, .*"loss_scale": 32768, "skipped": true' "$SCRATCH/fp16.jsonl" || fail "step 5 not skipped or scale not halved"
for r in 0 1; do
    grep -q "\[rank $r/2 .*step 5: fp16 gradient overflow on 1 rank(s); the step is skipped on every rank" "$SCRATCH/fp16.out" \
        || fail "rank $r did not skip step 5"
done
pass "stop trigger, SIGTERM and fp16 overflow skip"
