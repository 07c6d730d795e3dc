#!/bin/sh
# Training speed of accel_train against PyTorch on this machine, same GPT, same step, same run.
#   sh bench/train_speed.sh            (from the top of a built tree; python3-torch optional)
# Shape (the issue's): 4 layers, 4 heads, width 256, context 128, byte vocabulary, micro-batch 8 per
# rank, 2 ranks, AdamW, gradient clipping. accel: mpirun -np 2 accel_train on synthetic tokens.
# PyTorch: DistributedDataParallel over gloo, 1 thread per rank like accel, fp32 and bf16 autocast,
# with the same OpenBLAS core fix accel applies to itself. Prints tokens/s, achieved GFLOP/s
# (6N + 6LCT FLOPs per token: N parameters, causal attention) and the ratio to this machine's
# measured single-core sgemm peak (per rank: each rank has one core).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
make -s bench/gemm_peak >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
L=4 H=4 C=256 T=128 V=256 MICRO=8 RANKS=2 STEPS=${BENCH_STEPS:-40} WARM=5
N=$(( V*C + T*C + L*(12*C*C + 13*C) + 2*C ))
FLOP_TOKEN=$(( 6*N + 6*L*C*T ))
peak=$(OMP_NUM_THREADS=1 ./bench/gemm_peak)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "GPT: $L layers, $H heads, width $C, context $T, vocab $V: N = $N parameters, $FLOP_TOKEN FLOP/token"
echo "machine: $(nproc) cores; single-core sgemm peak $peak GFLOP/s (1024^3, $(./accel env | sed -n 's/^BLAS *//p'))"
printf '%-26s %12s %12s %14s\n' "run" "tokens/s" "GFLOP/s" "of core peak"
report() { # NAME TOKENS_PER_S
    awk -v n="$1" -v tps="$2" -v f="$FLOP_TOKEN" -v p="$peak" -v r="$RANKS" 'BEGIN {
        g = tps * f / 1e9; printf "%-26s %12.0f %12.1f %13.0f%%\n", n, tps, g, 100 * g / r / p }'
}
accel_tps() { # PRECISION
    timeout 900 mpirun -np $RANKS ./accel_train model.name=gpt data.path=synthetic data.eval_samples=16 \
        model.layers=$L model.heads=$H model.width=$C model.context=$T model.vocab=$V \
        train.global_batch=$((MICRO*RANKS)) train.steps=$((STEPS+WARM)) train.sample_tokens=0 \
        precision=$1 log.level=warn train.metrics="$out/$1.jsonl" >/dev/null
    awk -v w=$WARM -v tok=$((MICRO*RANKS*T)) '
        /"step"/ { s = $0; sub(/.*"time": /, "", s); sub(/}.*/, "", s); t[++n] = s + 0 }
        END { printf "%.0f", (n - w) * tok / (t[n] - t[w]) }' "$out/$1.jsonl"
}
a32=$(accel_tps fp32); report "accel fp32" "$a32"
a16=$(accel_tps bf16); report "accel bf16" "$a16"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    core=$(./accel env | sed -n 's/^BLAS.*core //p')
    for p in fp32 bf16; do
        line=$(OPENBLAS_CORETYPE=$core OMP_NUM_THREADS=1 timeout 900 /usr/bin/python3 bench/gpt_torch.py \
               --ranks $RANKS --layers $L --heads $H --width $C --context $T --micro $MICRO \
               --steps $STEPS --warmup $WARM --precision $p)
        tps=$(echo "$line" | sed 's/.*: \([0-9]*\) tokens.*/\1/')
        report "pytorch $p (DDP gloo)" "$tps"
        eval "t$p=$tps"
    done
    awk -v a="$a32" -v t="$tfp32" -v b="$a16" -v u="$tbf16" 'BEGIN {
        printf "accel / pytorch: fp32 %.2fx (target 1.5x), bf16 %.2fx (target 1.5x)\n", a / t, b / u }'
else
    echo "pytorch: not installed (apt-get install python3-torch) - reference skipped"
fi
