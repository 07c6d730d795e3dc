#!/bin/sh
# End to end: accel_train model.name=gpt on the synthetic token task (an order-2 Markov chain over
# the vocabulary) learns: the mean loss of the last 5 of 60 steps is at least 1.5 nats below the
# first step's (~ln 256 = 5.55; it reaches ~3), and so is the held-out loss. The same run on 1 rank
# ends at the same loss (data-parallel GPT gradients do not depend on the world size), and the
# 2-rank run reports its fastest and slowest rank's forward+backward time and its update time.
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
args="data.path=synthetic model.name=gpt model.layers=2 model.width=64 model.heads=4 model.context=32 train.steps=60 train.global_batch=16"

run_mpi 2 "$ACCEL_TRAIN" $args train.metrics="$SCRATCH/m2.jsonl" > "$SCRATCH/out2" 2>&1 ||
    { cat "$SCRATCH/out2"; fail "2-rank gpt training failed"; }
run_mpi 1 "$ACCEL_TRAIN" $args train.metrics="$SCRATCH/m1.jsonl" > "$SCRATCH/out1" 2>&1 ||
    { cat "$SCRATCH/out1"; fail "1-rank gpt training failed"; }

# Metrics rows (docs/metrics.md): {"step": N, "kind": "train", "loss": X, ...}, then the final
# {"step": 60, "kind": "eval", "eval_loss": X, ...}.
summary() {
    awk -F'[:,]' '
        /"kind": "train"/ { for (i = 1; i < NF; i++) if ($i ~ /"loss"/) l[++n] = $(i + 1) }
        /"eval_loss"/ { for (i = 1; i < NF; i++) if ($i ~ /"eval_loss"/) e = $(i + 1) }
        END { s = 0; for (i = n - 4; i <= n; i++) s += l[i]; printf "%d %.9g %.9g %.9g %.9g\n", n, l[1], s / 5, l[n], e }' "$1"
}
set -- $(summary "$SCRATCH/m2.jsonl")
steps=$1 first=$2 tail5=$3 last=$4 eval=$5
echo "2 ranks: $steps steps, loss $first -> $last (mean of last 5: $tail5), held-out $eval"
[ "$steps" = 60 ] || fail "expected 60 metrics lines, got $steps"
awk -v f="$first" -v t="$tail5" -v e="$eval" 'BEGIN { exit !(f > 5.0 && t < f - 1.5 && e < f - 1.5) }' ||
    fail "gpt did not learn: first loss $first, last-5 mean $tail5, held-out $eval"
# The per-rank compute summary: fastest <= slowest forward+backward, and a non-zero update time.
line=$(grep "cpu: forward+backward" "$SCRATCH/out2") || { cat "$SCRATCH/out2"; fail "no compute summary"; }
times=$(echo "$line" | sed -n 's/.*backward \([0-9.]*\) .* rank, \([0-9.]*\) on .* update \([0-9.]*\) ms.*/\1 \2 \3/p')
echo "$times" | awk '{ exit !(NF == 3 && $1 > 0 && $2 >= $1 && $3 > 0) }' ||
    fail "implausible compute summary: $line"
echo "2 ranks, ${line#*cpu: }"
set -- $(summary "$SCRATCH/m1.jsonl")
echo "1 rank: loss $2 -> $4"
awk -v a="$last" -v b="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * b) }' ||
    fail "1-rank and 2-rank runs end at different losses ($4 vs $last)"
pass "gpt trains on synthetic tokens: $first -> $last"
