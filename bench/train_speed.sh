#!/bin/sh
# Training speed of accel_train against PyTorch on this machine, same GPT, same step, same run.
#   sh bench/train_speed.sh            (from the top of a built tree; python3-torch optional)
#   BENCH_ROUNDS=5 BENCH_STEPS=60 sh bench/train_speed.sh
# Shape (the issue's): 4 layers, 4 heads, width 256, context 128, byte vocabulary, micro-batch 8 per
# rank, 2 ranks, AdamW, gradient clipping. accel: mpirun -np 2 accel_train on synthetic tokens.
# PyTorch: DistributedDataParallel over gloo, 1 thread per rank like accel, fp32 and bf16 autocast,
# with the same OpenBLAS core fix accel applies to itself. Prints tokens/s, achieved GFLOP/s
# (6N + 6LCT FLOPs per token: N parameters, causal attention) and the ratio to this machine's
# measured single-core sgemm peak (per rank: each rank has one core; bf16 can exceed 100%).
# A shared or virtual machine drifts by 10% and more from one minute to the next, so the four runs
# (accel and PyTorch, fp32 and bf16) are interleaved in BENCH_ROUNDS rounds after a discarded
# warm-up run, and the ratios are taken between medians.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
make -s bench/gemm_peak >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
L=4 H=4 C=256 T=128 V=256 MICRO=8 RANKS=2 STEPS=${BENCH_STEPS:-40} WARM=5 ROUNDS=${BENCH_ROUNDS:-3}
N=$(( V*C + T*C + L*(12*C*C + 13*C) + 2*C ))
FLOP_TOKEN=$(( 6*N + 6*L*C*T ))
peak=$(OMP_NUM_THREADS=1 ./bench/gemm_peak)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "GPT: $L layers, $H heads, width $C, context $T, vocab $V: N = $N parameters, $FLOP_TOKEN FLOP/token"
echo "machine: $(nproc) cores; single-core sgemm peak $peak GFLOP/s (best size and library)"
versions=$(./accel env)     # accel env also starts MPI: run it once
echo "accel products: $(echo "$versions" | sed -n 's/^BLAS *//p'); oneDNN $(echo "$versions" | sed -n 's/^oneDNN *//p')"
report() { # NAME TOKENS_PER_S
    awk -v n="$1" -v tps="$2" -v f="$FLOP_TOKEN" -v p="$peak" -v r="$RANKS" 'BEGIN {
        g = tps * f / 1e9; printf "%-30s %12.0f %12.1f %13.0f%%\n", n, tps, g, 100 * g / r / p }'
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
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
torch_tps() { # PRECISION
    line=$(OPENBLAS_CORETYPE=$core OMP_NUM_THREADS=1 timeout 900 /usr/bin/python3 bench/gpt_torch.py \
           --ranks $RANKS --layers $L --heads $H --width $C --context $T --micro $MICRO \
           --steps $STEPS --warmup $WARM --precision $1)
    echo "$line" | sed 's/.*: \([0-9]*\) tokens.*/\1/'
}
torch=no
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    torch=yes
    core=$(echo "$versions" | sed -n 's/^BLAS.*core //p')
else
    echo "pytorch: not installed (apt-get install python3-torch) - reference skipped"
fi
STEPS_SAVED=$STEPS; STEPS=5; accel_tps fp32 >/dev/null; STEPS=$STEPS_SAVED   # warm-up, discarded
printf '%-30s %12s %12s %14s\n' "run" "tokens/s" "GFLOP/s" "of core peak"
A32= A16= T32= T16=
r=1
while [ $r -le "$ROUNDS" ]; do
    x=$(accel_tps fp32); A32="$A32 $x"; report "round $r accel fp32" "$x"
    if [ $torch = yes ]; then x=$(torch_tps fp32); T32="$T32 $x"; report "round $r pytorch fp32" "$x"; fi
    x=$(accel_tps bf16); A16="$A16 $x"; report "round $r accel bf16" "$x"
    if [ $torch = yes ]; then x=$(torch_tps bf16); T16="$T16 $x"; report "round $r pytorch bf16" "$x"; fi
    r=$((r + 1))
done
echo "median of $ROUNDS rounds:"
a32=$(echo $A32 | median); a16=$(echo $A16 | median)
report "accel fp32" "$a32"
report "accel bf16" "$a16"
if [ $torch = yes ]; then
    t32=$(echo $T32 | median); t16=$(echo $T16 | median)
    report "pytorch fp32 (DDP gloo)" "$t32"
    report "pytorch bf16 (DDP gloo)" "$t16"
    ratios() { # ACCEL_LIST TORCH_LIST: the per-round ratios, lowest and highest
        echo "$1|$2" | awk -F'|' '{ n = split($1, a, " "); split($2, b, " "); lo = 1e9; hi = 0
            for (i = 1; i <= n; i++) { q = a[i] / b[i]; if (q < lo) lo = q; if (q > hi) hi = q }
            printf "%.2f-%.2fx", lo, hi }'
    }
    awk -v a="$a32" -v t="$t32" -v b="$a16" -v u="$t16" -v r32="$(ratios "$A32" "$T32")" \
        -v r16="$(ratios "$A16" "$T16")" 'BEGIN {
        printf "accel / pytorch (medians): fp32 %.2fx (rounds %s; target 1.5x), bf16 %.2fx (rounds %s; target 1.5x)\n",
               a / t, r32, b / u, r16 }'
fi
