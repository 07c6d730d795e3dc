#!/bin/sh
# Activation recompute and the micro-batch plan (src/nn/decoder.c, src/train/plan.c):
# - train.recompute=mlp|block trains to bitwise the fp32 losses of none (gpt under zero3 on 2 ranks,
#   llama with gradient accumulation), and accel estimate-memory's activations shrink none > mlp > block;
# - a layer's activations grow linearly with the context (attention keeps no T x T probabilities);
# - train.micro_batch=N sets grad_accum; train.micro_batch=auto with train.memory_limit between the
#   estimates of two micro-batches picks the smaller, prints the larger's need (over the limit), and
#   the run's measured peak stays under the limit; 2 ranks plan the same;
# - bad keys and impossible plans fail with a message naming the key.
. "$top_srcdir/tests/lib.sh"
make_scratch
gpt="model.name=gpt model.layers=3 model.width=64 model.heads=4 model.context=32 model.vocab=256
     data.path=synthetic train.steps=6 train.global_batch=8 train.sample_tokens=0 optim.warmup=2"
llama="model.name=llama model.layers=2 model.width=64 model.heads=4 model.kv_heads=2 model.context=32
       model.vocab=256 data.path=synthetic train.steps=6 train.global_batch=8 train.grad_accum=2
       train.sample_tokens=0 optim.warmup=2"

# Bitwise: the metrics rows print losses with 9 significant digits, exact for a float.
for r in none mlp block; do
    (cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $gpt dist.strategy=zero3 train.recompute=$r \
        train.metrics=gpt-$r.jsonl > gpt-$r.log 2>&1) || fail "gpt zero3 recompute=$r: $(tail -5 "$SCRATCH/gpt-$r.log")"
    (cd "$SCRATCH" && run_mpi 1 "$ACCEL_TRAIN" $llama train.recompute=$r train.metrics=llama-$r.jsonl \
        > llama-$r.log 2>&1) || fail "llama recompute=$r: $(tail -5 "$SCRATCH/llama-$r.log")"
done
for m in gpt llama; do
    for r in mlp block; do
        compare_losses "$SCRATCH/$m-none.jsonl" "$SCRATCH/$m-$r.jsonl" 0 6 ||
            fail "$m: recompute=$r losses differ from none"
    done
done
pass "recompute mlp and block: fp32 losses bitwise equal to none (gpt zero3 on 2 ranks, llama with grad_accum 2)"

# The estimate's activations shrink with recompute.
act() { "$ACCEL" estimate-memory $1 train.recompute=$2 --world 1 | awk '$1 == "ddp" { print $9 }'; }
for m in gpt llama; do
    eval "cfg=\$$m"
    a0=$(act "$cfg" none); a1=$(act "$cfg" mlp); a2=$(act "$cfg" block)
    awk -v a="$a0" -v b="$a1" -v c="$a2" 'BEGIN { exit !(a > b && b > c && c > 0) }' ||
        fail "$m: estimate-memory activations none $a0, mlp $a1, block $a2 MiB do not shrink"
    pass "$m: estimate-memory activations none $a0 > mlp $a1 > block $a2 MiB"
done

# Attention keeps T floats per head and row (its log-sum-exp), not the T x T probabilities: one
# more layer's activations double with the context (they would quadruple with T x T per head).
layer() {
    one=$("$ACCEL" estimate-memory $1 model.layers=1 --world 1 | awk '$1 == "ddp" { print $9 }')
    two=$("$ACCEL" estimate-memory $1 model.layers=2 --world 1 | awk '$1 == "ddp" { print $9 }')
    awk -v a="$one" -v b="$two" 'BEGIN { print b - a }'
}
long="model.name=gpt model.width=64 model.heads=4 model.vocab=256 data.path=synthetic train.global_batch=4"
l1=$(layer "$long model.context=1024"); l2=$(layer "$long model.context=2048")
awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(a > 0 && b < 2.2 * a) }' ||
    fail "one layer's activations at context 1024: $l1 MiB, at 2048: $l2 MiB (not linear in the context)"
pass "one layer's activations grow linearly with the context: $l1 MiB at 1024, $l2 MiB at 2048"

# A fixed micro-batch sets grad_accum.
out=$(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $gpt train.steps=1 train.micro_batch=2 2>&1) ||
    fail "train.micro_batch=2: $out"
echo "$out" | grep -q "global batch 8 = 2 ranks x 2 grad_accum x 2 micro-batch" ||
    fail "train.micro_batch=2 on 2 ranks did not make grad_accum 2: $out"
pass "train.micro_batch=2 on 2 ranks: grad_accum 2"

# auto: a limit halfway between the estimates of micro-batches 2 and 4 (global 16 on 1 rank)
# picks 2; its measured peak (above start-up) stays under the limit.
big="model.name=gpt model.layers=4 model.width=128 model.heads=4 model.context=128 model.vocab=256
     data.path=synthetic train.steps=2 train.global_batch=16 train.sample_tokens=0 train.recompute=mlp"
est() { "$ACCEL" estimate-memory $big train.micro_batch=$1 --world "$2" | awk '$1 == "ddp" { print $11 }'; }
e2=$(est 2 1); e4=$(est 4 1)
limit=$(awk -v a="$e2" -v b="$e4" 'BEGIN { printf "%.0f", (a + b) / 2 * 1048576 }')
out=$(cd "$SCRATCH" && run_mpi 1 "$ACCEL_TRAIN" $big train.micro_batch=auto train.memory_limit=$limit \
      train.metrics=auto.jsonl 2>&1) || fail "micro_batch=auto: $out"
plan=$(echo "$out" | grep "micro-batch plan:") || fail "no plan line: $out"
echo "$plan" | grep -q "micro-batch 2 (estimated peak .*) x grad_accum 8 x 1 ranks = global batch 16; a micro-batch of 4 would need" ||
    fail "auto with a limit between the estimates of 2 ($e2 MiB) and 4 ($e4 MiB) did not pick 2: $plan"
echo "$out" | grep -q "global batch 16 = 1 ranks x 8 grad_accum x 2 micro-batch" || fail "header: $out"
echo "$plan" | awk -v lim="$limit" '{ for (i = 1; i <= NF; i++) if ($i == "need") need = $(i + 1) * 1073741824
                                      exit !(need > lim) }' || fail "the next micro-batch's need is not over the limit: $plan"
peak=$(sed -n 's/.*"kind": "summary".*"peak_bytes": \([0-9.e+]*\).*/\1/p' "$SCRATCH/auto.jsonl")
awk -v p="$peak" -v lim="$limit" 'BEGIN { exit !(p > 0 && p <= lim) }' ||
    fail "measured peak $peak bytes is over the limit $limit"
pass "micro_batch=auto, limit $limit bytes (estimates: 2 -> $e2 MiB, 4 -> $e4 MiB): picks 2; measured peak $peak bytes"

# 2 ranks: both plan the same (one plan line, the run completes).
e2=$(est 2 2); e4=$(est 4 2)
limit=$(awk -v a="$e2" -v b="$e4" 'BEGIN { printf "%.0f", (a + b) / 2 * 1048576 }')
out=$(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $big train.micro_batch=auto train.memory_limit=$limit 2>&1) ||
    fail "micro_batch=auto on 2 ranks: $out"
echo "$out" | grep -q "micro-batch 2 (estimated peak .*) x grad_accum 4 x 2 ranks = global batch 16" ||
    fail "2 ranks: $(echo "$out" | grep plan)"
pass "micro_batch=auto on 2 ranks: micro-batch 2 x grad_accum 4"

# The GPU engine's rows: GPT-2 124M in bf16, 16 x 1024 tokens on one GPU needs about 14.2 GiB
# (docs/gpu.md); ZeRO shards the optimizer state, so on 4 ranks it needs less than ddp.
gpt2="model.name=gpt model.layers=12 model.heads=12 model.width=768 model.context=1024 model.vocab=50257
      train.global_batch=16 precision=bf16"
gpu=$("$ACCEL" estimate-memory $gpt2 --world 1,4 | sed -n '/^GPU engine/,$p')
echo "$gpu" | grep -q "^GPU engine (device=cuda), device MiB per rank (ZeRO-1, 2 and 3 alike" || fail "no GPU rows: $gpu"
echo "$gpu" | awk '/1 ranks, micro-batch 16:/ { d = $6 + 0 } /4 ranks, micro-batch 4:/ { d4 = $6 + 0; z4 = $8 + 0 }
                   END { exit !(d > 14000 && d < 15000 && z4 > 0 && z4 < d4) }' ||
    fail "GPU rows out of line (1 GPU ddp about 14.2 GiB; 4 ranks zero1-3 below ddp): $gpu"
# A model the GPU engine refuses gets no GPU rows, and the reason.
gpu=$("$ACCEL" estimate-memory model.name=llama model.experts=4 --world 1 | sed -n '/^GPU engine/,$p')
echo "$gpu" | grep -q "^GPU engine: no rows (device=cuda: model.experts=4" || fail "experts: GPU rows or no reason: $gpu"
pass "estimate-memory's GPU rows: $(echo "$gpu" | sed 1d | tr -s ' ' | tr '\n' ';')"

# Bad input.
t="$ACCEL_TRAIN $gpt train.steps=1"
expect_fail "expected one of none|mlp|block" $t train.recompute=all
expect_fail "has no activation recompute" $t model.name=mlp train.recompute=mlp
expect_fail "train.micro_batch=3 does not divide the 8 samples per rank" $t train.micro_batch=3
expect_fail "train.micro_batch=2 and train.grad_accum=2 disagree" $t train.micro_batch=2 train.grad_accum=2
expect_fail "chooses train.grad_accum itself" $t train.micro_batch=auto train.grad_accum=2
expect_fail "even a micro-batch of 1 needs" $t train.micro_batch=auto train.memory_limit=1MiB
expect_fail "expects a size in bytes" $t train.micro_batch=auto train.memory_limit=8GX
expect_fail "expects an integer or auto" $t train.micro_batch=most
