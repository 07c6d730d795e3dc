#!/bin/sh
# Same seed and global batch on 1, 2 and 4 ranks: the loss trajectories agree within 1e-5 relative
# over 50 steps (data order and initial weights do not depend on the rank count).
. "$top_srcdir/tests/lib.sh"
make_scratch
# (ReLU kinks can turn a 1e-8 rounding difference into a visible one late in a run; these settings
# keep every pre-activation clear of them, as the trajectories below show.)
args="model.name=mlp train.steps=50 train.global_batch=64 seed=11 optim.lr=0.01 optim.warmup=10 log.level=warn"
for np in 1 2 4; do
    run_mpi $np "$ACCEL_TRAIN" $args train.metrics="$SCRATCH/m$np.jsonl" >/dev/null || fail "training on $np ranks"
    [ "$(grep -c '"kind": "train"' "$SCRATCH/m$np.jsonl")" -eq 50 ] || fail "expected 50 steps on $np ranks"
done
# Accumulation: 2 ranks x 4 micro-batches of 8 equals the same global batch of 64.
run_mpi 2 "$ACCEL_TRAIN" $args train.grad_accum=4 train.metrics="$SCRATCH/acc.jsonl" >/dev/null || fail "grad_accum run"
run_mpi 2 "$ACCEL_TRAIN" $args train.grad_accum=4 train.sync_each_batch=true train.metrics="$SCRATCH/sync.jsonl" >/dev/null || fail "sync_each_batch run"
compare() { compare_losses "$SCRATCH/$1.jsonl" "$SCRATCH/$2.jsonl" 1e-5 50; }
compare m1 m2 || fail "1 vs 2 ranks"
compare m1 m4 || fail "1 vs 4 ranks"
compare m1 acc || fail "grad_accum=4 vs one batch"
compare m1 sync || fail "sync_each_batch vs one batch"
first=$(grep -m1 '"kind": "train"' "$SCRATCH/m1.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
last=$(grep '"step": 50, "kind": "train"' "$SCRATCH/m1.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < 0.7 * f) }' || fail "loss did not fall: $first -> $last"
pass "mlp: 1/2/4 ranks and accumulation agree; loss $first -> $last"

# The GPT on synthetic tokens: 1/2/4 ranks and accumulation agree, and bf16 / fp16 stay within a
# stated tolerance of fp32 (2% relative per step over 50 steps; measured ~0.1%).
args="model.name=gpt data.path=synthetic model.layers=2 model.width=32 model.heads=2 model.context=16
      train.steps=50 train.global_batch=8 seed=5 optim.lr=0.01 train.sample_tokens=0 log.level=warn"
for np in 1 2 4; do
    run_mpi $np "$ACCEL_TRAIN" $args train.metrics="$SCRATCH/m$np.jsonl" >/dev/null || fail "gpt on $np ranks"
done
run_mpi 2 "$ACCEL_TRAIN" $args train.grad_accum=2 train.metrics="$SCRATCH/acc.jsonl" >/dev/null || fail "gpt grad_accum"
compare m1 m2 || fail "gpt: 1 vs 2 ranks"
compare m1 m4 || fail "gpt: 1 vs 4 ranks"
compare m1 acc || fail "gpt: grad_accum=2 vs one batch"
for p in bf16 fp16; do
    run_mpi 2 "$ACCEL_TRAIN" $args precision=$p train.metrics="$SCRATCH/$p.jsonl" >/dev/null || fail "gpt $p"
    compare_losses "$SCRATCH/m1.jsonl" "$SCRATCH/$p.jsonl" 0.02 50 || fail "$p drifts from fp32"
done
# bf16 on each product path this machine runs (oneDNN, accel's kernel, the emulation), forced.
bf16_run() {
    run_mpi 2 "$ACCEL_TRAIN" $args precision=bf16 train.metrics="$SCRATCH/bf16-$ACCEL_BF16_GEMM.jsonl" \
        >/dev/null && compare_losses "$SCRATCH/m1.jsonl" "$SCRATCH/bf16-$ACCEL_BF16_GEMM.jsonl" 0.02 50
}
for_each_bf16_path bf16_run
pass "gpt: 1/2/4 ranks and accumulation agree; bf16 ($(bf16_paths | tr ' ' /)) and fp16 within tolerance"
