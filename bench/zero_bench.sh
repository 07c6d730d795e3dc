#!/bin/sh
# ZeRO benchmark: for ddp, zero1, zero2, zero3 at 1, 2 and 4 ranks, the measured peak memory per rank
# (resident memory above start-up, max over ranks) next to `accel estimate-memory`'s prediction,
# bytes sent per step per rank next to the theory (ddp/zero1/zero2: 2(N-1)/N x 4P; zero3: 1.5x),
# and the step time.   sh bench/zero_bench.sh   (from the top of a built tree)
# The GPT is deep and narrow-context so that model state dominates memory.
set -eu
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
MODEL=${ZERO_BENCH_MODEL:-"model.name=gpt model.layers=16 model.width=512 model.heads=8 model.context=32"}
STEPS=${ZERO_BENCH_STEPS:-6}
RANKS=${ZERO_BENCH_RANKS:-"1 2 4"}
common="$MODEL data.path=synthetic data.eval_samples=8 train.global_batch=8 train.steps=$STEPS
        train.sample_tokens=0 log.level=warn optim.warmup=1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
P=$(./accel estimate-memory $common --world 1 | sed -n 's/^model .*: \([0-9]*\) parameters.*/\1/p')
echo "GPT ($MODEL): $P parameters = $(awk -v p="$P" 'BEGIN { printf "%.0f", p * 16 / 1048576 }') MiB of DDP model state (16 bytes/param)"
printf '%-7s %5s %12s %12s %7s %14s %14s %7s %10s\n' strategy ranks "peak MiB" "predict MiB" "error" \
    "sent MiB/step" "theory MiB" "ratio" "s/step"
for np in $RANKS; do
    for s in ddp zero1 zero2 zero3; do
        timeout 900 mpirun -np "$np" ./accel_train $common dist.strategy=$s train.metrics="$out/$s-$np.jsonl" \
            > "$out/$s-$np.out" 2>&1 || { echo "run $s on $np ranks failed:"; tail -5 "$out/$s-$np.out"; exit 1; }
        last=$(grep '"kind": "summary"' "$out/$s-$np.jsonl" | tail -1)
        peak=$(echo "$last" | sed 's/.*"peak_bytes": \([0-9.e+]*\).*/\1/')
        sent=$(echo "$last" | sed 's/.*"bytes_sent_per_step": \([0-9.e+]*\).*/\1/')
        secs=$(awk '/"kind": "train"/ { s = $0; sub(/.*"time": /, "", s); sub(/[,}].*/, "", s); t[++n] = s + 0 }
                    END { v = n > 2 ? (t[n] - t[2]) / (n - 2) : t[n] / n; printf "%.3f", v }' "$out/$s-$np.jsonl")
        pred=$(./accel estimate-memory $common dist.strategy=$s --world "$np" |
               awk -v s="$s" -v n="$np" '$1 == s && $2 == n { print $11 }')
        awk -v s="$s" -v n="$np" -v peak="$peak" -v pred="$pred" -v sent="$sent" -v P="$P" -v t="$secs" 'BEGIN {
            m = peak / 1048576; theory = (n > 1 ? 2 * (n - 1) / n : 0) * 4 * P / 1048576;
            if (s == "zero3") theory *= 1.5;
            err = 100 * (pred - m) / m; r = theory > 0 ? sent / 1048576 / theory : 0;
            printf "%-7s %5d %12.1f %12.1f %6.1f%% %14.1f %14.1f %7.2f %10.3f\n", s, n, m, pred, err, sent / 1048576, theory, r, t }'
    done
done
