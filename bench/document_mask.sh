#!/bin/sh
# What keeping packed documents apart costs (data.document_mask=true), against attending across
# them, and against transformers doing the same (packed position_ids, its block-diagonal mask).
#   sh bench/document_mask.sh                    (from the top of a built tree)
#   BENCH_ROUNDS=5 BENCH_STEPS=60 BENCH_DOC=32 BENCH_CONTEXT=1024 sh bench/document_mask.sh
# Model: bench/train_speed.sh's Llama (4 layers, width 256, 4 heads, 2 kv heads, SwiGLU 688, byte
# vocabulary, tied head) at context BENCH_CONTEXT (256), micro-batch 8 per rank, 2 ranks, AdamW,
# clipping to 1.0.
# Data: documents of 1..2D-1 bytes (uniform, mean D = BENCH_DOC, default 64: four per sample),
# prepared by accel_data prepare (which records where each begins). accel: the same file with
# data.document_mask=false and true. PyTorch: bench/llama_torch.py --packed D (transformers'
# LlamaForCausalLM, position_ids restarting per document, no attention mask: transformers detects
# the packing and masks block-diagonally) against the same model without --packed, sdpa and manual
# attention, fp32 and bf16 autocast. Runs are interleaved in BENCH_ROUNDS rounds (default 3) after
# a discarded warm-up of each; medians are compared. Python: bench/.venv (see bench/train_speed.sh).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
L=4 H=4 KV=2 C=256 F=688 T=${BENCH_CONTEXT:-256} V=256 MICRO=8 RANKS=2
STEPS=${BENCH_STEPS:-30} WARM=5 ROUNDS=${BENCH_ROUNDS:-3} D=${BENCH_DOC:-64}
model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
    model.ffn_width=$F model.context=$T model.vocab=$V model.rope_theta=10000 model.rms_eps=1e-5
    model.tie_embeddings=true model.attention_bias=false"
peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
fam=$(lscpu | sed -n 's/^CPU family: *//p' | head -n 1)
mod=$(lscpu | sed -n 's/^Model: *//p' | head -n 1)
echo "CPU: $cpu (family $fam model $mod), $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Llama: $L layers, $H heads, $KV kv heads, width $C, ffn $F, context $T, vocab $V; micro-batch $MICRO x $RANKS ranks, $STEPS timed steps after $WARM"

# documents of 1..2D-1 letters, enough for every run's samples (each run reads from the start)
ndocs=$(( (STEPS + WARM) * MICRO * RANKS * (T + 1) / D * 12 / 10 + 100 ))
awk -v n="$ndocs" -v d="$D" 'BEGIN { srand(11); for (i = 0; i < n; i++) { k = 1 + int(rand() * (2 * d - 1)); s = "";
    for (j = 0; j < k; j++) s = s sprintf("%c", 97 + int(rand() * 26)); printf "{\"text\": \"%s\"}\n", s } }' > "$out/docs.jsonl"
./accel_data prepare --jsonl --context $T --val-fraction 0.01 --output "$out/docs.h5" "$out/docs.jsonl" > "$out/prepare.log" ||
    { cat "$out/prepare.log"; exit 1; }
echo "data: $ndocs documents of 1..$((2 * D - 1)) bytes (mean $D), $(sed -n 's/.* -> \([0-9]*\) tokens.*/\1/p' "$out/prepare.log" | head -n 1) tokens"

accel_tps() { # PRECISION MASK
    timeout 600 mpirun -np $RANKS ./accel_train $model_args data.path="$out/docs.h5" threads=1 \
        train.global_batch=$((MICRO*RANKS)) train.steps=$((STEPS+WARM)) train.sample_tokens=0 train.clip=1 \
        optim.name=adamw precision=$1 data.document_mask=$2 log.level=warn train.eval_every=0 ckpt.dir= \
        train.metrics="$out/m.jsonl" >/dev/null
    awk -v w=$WARM -v tok=$((MICRO*RANKS*T)) '
        /"kind": "train"/ { s = $0; sub(/.*"time": /, "", s); sub(/[,}].*/, "", s); t[++n] = s + 0 }
        END { printf "%.0f", (n - w) * tok / (t[n] - t[w]) }' "$out/m.jsonl"
}
venv=${VENV:-"$top/bench/.venv"}
py="$venv/bin/python"
torch=no
if "$py" -c 'import torch, transformers' 2>/dev/null; then
    torch=yes
    echo "peer: $("$py" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)')"
else
    echo "pytorch: not available in $venv (bench/train_speed.sh makes it) - reference skipped"
fi
torch_tps() { # PRECISION VARIANT PACKED(0|D)
    line=$(OMP_NUM_THREADS=1 timeout 900 "$py" bench/llama_torch.py --ranks $RANKS $peer_args --micro $MICRO \
           --steps $STEPS --warmup $WARM --precision $1 --variant $2 --packed $3 2>"$out/torch.err") || {
        echo "pytorch run failed:" >&2; tail -n 20 "$out/torch.err" >&2; exit 1; }
    echo "$line" | sed 's/.*: \([0-9]*\) tokens.*/\1/'
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# runs: NAME -> command; warm-up of each, then the rounds
runs="accel_fp32_across accel_fp32_docs accel_bf16_across accel_bf16_docs"
[ $torch = no ] || runs="$runs torch_fp32_sdpa_across torch_fp32_sdpa_docs torch_fp32_manual_across torch_fp32_manual_docs
    torch_bf16_sdpa_across torch_bf16_sdpa_docs"
run() { # NAME: tokens/s
    set -- $(echo "$1" | tr '_' ' ')
    if [ "$1" = accel ]; then accel_tps "$2" "$([ "$3" = docs ] && echo true || echo false)"
    else torch_tps "$2" "$3" "$([ "$4" = docs ] && echo "$D" || echo 0)"; fi
}
SAVED=$STEPS; STEPS=3
for n in $runs; do run "$n" > /dev/null; done
STEPS=$SAVED
for n in $runs; do eval "R_$n="; done
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for n in $runs; do
        x=$(run "$n")
        eval "R_$n=\"\$R_$n $x\""
        printf 'round %d %-28s %8s tokens/s\n' "$r" "$n" "$x"
    done
    r=$((r + 1))
done
echo "medians of $ROUNDS rounds (load average now: $(cut -d' ' -f1-3 /proc/loadavg)):"
for n in $runs; do eval "m=\$(echo \$R_$n | median)"; eval "M_$n=$m"; printf '  %-28s %8s tokens/s\n' "$n" "$m"; done
cost() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (b / a - 1) }'; }
echo "keeping documents apart costs (tokens/s, docs against across):"
echo "  accel fp32 $(cost "$M_accel_fp32_across" "$M_accel_fp32_docs"), bf16 $(cost "$M_accel_bf16_across" "$M_accel_bf16_docs")"
if [ $torch = yes ]; then
    echo "  pytorch fp32 sdpa $(cost "$M_torch_fp32_sdpa_across" "$M_torch_fp32_sdpa_docs"), manual $(cost "$M_torch_fp32_manual_across" "$M_torch_fp32_manual_docs"), bf16 sdpa $(cost "$M_torch_bf16_sdpa_across" "$M_torch_bf16_sdpa_docs")"
    best32=$(printf '%s\n%s\n' "$M_torch_fp32_sdpa_docs" "$M_torch_fp32_manual_docs" | sort -n | tail -n 1)
    awk -v a="$M_accel_fp32_docs" -v t="$best32" -v b="$M_accel_bf16_docs" -v u="$M_torch_bf16_sdpa_docs" 'BEGIN {
        printf "accel / pytorch with documents kept apart (medians): fp32 %.2fx (best of sdpa, manual), bf16 %.2fx (sdpa)\n", a / t, b / u }'
fi
