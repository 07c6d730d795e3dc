#!/bin/sh
# Memory benchmark for train.recompute and train.micro_batch=auto: for a GPT and a Llama with
# recompute none, mlp and block, the measured peak resident memory per rank (above start-up, max
# over ranks; the metrics summary's peak_bytes) next to `accel estimate-memory`'s total, and the
# step time (recompute costs one more forward of what it dropped). Then micro_batch=auto under a
# limit: the micro-batch chosen, its measured peak and the next larger one's estimate.
#   sh bench/memory_bench.sh          (from the top of a built tree)
# MEMORY_BENCH_RANKS (default 1) ranks per run; the models are sized so activations dominate.
set -eu
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
NP=${MEMORY_BENCH_RANKS:-1}
STEPS=${MEMORY_BENCH_STEPS:-4}
GPT="model.name=gpt model.layers=8 model.width=256 model.heads=8 model.context=256"
LLAMA="model.name=llama model.layers=8 model.width=256 model.heads=8 model.kv_heads=2 model.context=256"
common="data.path=synthetic data.eval_samples=8 train.global_batch=$((8 * NP)) train.steps=$STEPS
        train.sample_tokens=0 log.level=warn optim.warmup=1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $NP rank(s), micro-batch 8, context 256"
printf '%-6s %-9s %12s %12s %8s %10s\n' model recompute "peak MiB" "estimate MiB" error "s/step"
peak_of() { sed -n 's/.*"kind": "summary".*"peak_bytes": \([0-9.e+]*\).*/\1/p' "$1" | tail -1; }
secs_of() { awk '/"kind": "train"/ { s = $0; sub(/.*"time": /, "", s); sub(/[,}].*/, "", s); t[++n] = s + 0 }
                 END { printf "%.3f", (n > 1 ? (t[n] - t[1]) / (n - 1) : t[n]) }' "$1"; }
for name in gpt llama; do
    [ "$name" = gpt ] && model=$GPT || model=$LLAMA
    for r in none mlp block; do
        timeout 900 mpirun -np "$NP" ./accel_train $model $common train.recompute=$r \
            train.metrics="$out/$name-$r.jsonl" > "$out/$name-$r.log" 2>&1 ||
            { echo "$name recompute=$r failed:"; tail -5 "$out/$name-$r.log"; exit 1; }
        est=$(./accel estimate-memory $model $common train.recompute=$r --world "$NP" |
              awk -v n="$NP" '$1 == "ddp" && $2 == n { print $11 }')
        awk -v m="$name" -v r="$r" -v p="$(peak_of "$out/$name-$r.jsonl")" -v e="$est" -v t="$(secs_of "$out/$name-$r.jsonl")" 'BEGIN {
            p /= 1048576; printf "%-6s %-9s %12.1f %12.1f %7.1f%% %10.3f\n", m, r, p, e, 100 * (e - p) / p, t }'
    done
done
# micro_batch=auto: 32 samples per rank under a limit of 300 MiB with recompute=mlp.
limit=${MEMORY_BENCH_LIMIT:-300MiB}
auto="$GPT data.path=synthetic data.eval_samples=8 train.global_batch=$((32 * NP)) train.steps=2
      train.sample_tokens=0 log.level=info optim.warmup=1 train.recompute=mlp"
timeout 900 mpirun -np "$NP" ./accel_train $auto train.micro_batch=auto train.memory_limit=$limit \
    train.metrics="$out/auto.jsonl" > "$out/auto.log" 2>&1 || { echo "auto failed:"; tail -5 "$out/auto.log"; exit 1; }
echo "gpt, recompute=mlp, micro_batch=auto, train.memory_limit=$limit:"
grep -o "micro-batch plan: .*" "$out/auto.log"
awk -v p="$(peak_of "$out/auto.jsonl")" 'BEGIN { printf "measured peak %.1f MiB per rank\n", p / 1048576 }'
