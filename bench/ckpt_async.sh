#!/bin/sh
# Training time lost per checkpoint save, synchronous (ckpt.async=false) against background
# (ckpt.async=true), for a state of over 1 GB: a GPT of 134 M parameters (8 layers, width 1024,
# vocab 32768) with AdamW holds 1.6 GB of parameters and moments. Each run takes 11 steps of 4
# samples per rank with ckpt.every=5: the saves after steps 5 and 10 fall inside the timed window
# (steps 1..11 of the metrics rows), the last one after it. A background save hides only when the
# steps between saves take longer than the save itself, as in a real run (minutes between saves).
# Lost per save = (window with saves - window without) / 2. Also prints the synchronous save's
# own time, the background copy, and checks that both runs' step-10 files hold the same tensors.
#   sh bench/ckpt_async.sh [RANKS]      (default 1: one compute thread, a core free for the writer)
# BENCH_CKPT_DIR: where checkpoints go (default a temporary directory under /tmp; 5 GB free needed).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
RANKS=${1:-1}
out=$(mktemp -d "${BENCH_CKPT_DIR:-/tmp}/ckpt_async.XXXXXX")
trap 'rm -rf "$out"' EXIT
model="model.name=gpt model.layers=8 model.width=1024 model.heads=16 model.context=64 model.vocab=32768
       data.path=synthetic train.global_batch=$((4 * RANKS)) train.steps=11 train.sample_tokens=0 threads=1
       train.peak_tflops=1 data.eval_samples=0 optim.name=adamw log.level=info"
run() { # NAME ARGS...: runs accel_train, keeps its log and metrics
    name=$1; shift
    timeout 1200 mpirun -np "$RANKS" ./accel_train $model train.metrics="$out/$name.jsonl" "$@" > "$out/$name.log" 2>&1 ||
        { echo "run $name failed:" >&2; tail -20 "$out/$name.log" >&2; exit 1; }
}
window() { # the seconds from step 1 to step 11 in a metrics file
    awk '/"kind": "train"/ { s = $0; sub(/.*"time": /, "", s); sub(/[,}].*/, "", s); t[++n] = s + 0 }
         END { printf "%.3f", t[n] - t[1] }' "$1"
}
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
echo "CPU: $cpu (family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; $RANKS rank(s)"
echo "file system of $out: $(df -h "$out" | awk 'NR == 2 { print $1 ", " $4 " free" }')"
run none
run sync ckpt.dir="$out/sync" ckpt.every=5 ckpt.keep_last=2
run async ckpt.dir="$out/async" ckpt.every=5 ckpt.keep_last=2 ckpt.async=true
state=$(du -b "$out/sync/step-00000010.h5" | cut -f1)
w0=$(window "$out/none.jsonl"); ws=$(window "$out/sync.jsonl"); wa=$(window "$out/async.jsonl")
save_s=$(sed -n 's/.*checkpoint: step [15]0* saved to .* in \([0-9.]*\) s$/\1/p' "$out/sync.log" | tr '\n' ' ')
bg_s=$(sed -n 's/.*checkpoint: step [15]0* saved to .* in \([0-9.]*\) s (in the background)$/\1/p' "$out/async.log" | tr '\n' ' ')
copy_s=$(sed -n 's/.*checkpoint: step [15]0* copied in \([0-9.]*\) s.*/\1/p' "$out/async.log" | tr '\n' ' ')
echo "checkpoint file: $(awk -v b="$state" 'BEGIN { printf "%.2f GB", b / 1e9 }') (parameters and AdamW moments)"
echo "steps 1..11 without saves: $w0 s; with 2 synchronous saves: $ws s; with 2 background saves: $wa s"
echo "synchronous save (steps 5, 10): $save_s s; background save: $bg_s s, of which the copy (the step boundary): $copy_s s"
awk -v n="$w0" -v s="$ws" -v a="$wa" 'BEGIN {
    ls = (s - n) / 2; la = (a - n) / 2
    printf "training time lost per save: synchronous %.2f s, background %.2f s (%.0f%% of synchronous; target 10%%)\n",
           ls, la, (ls > 0 ? 100 * la / ls : 0) }'
if ./accel_ckpt diff "$out/sync/step-00000010.h5" "$out/async/step-00000010.h5" > "$out/diff" 2>&1; then
    echo "step-10 files: every tensor identical ($(tail -n 1 "$out/diff"))"
else
    echo "step-10 files DIFFER:"; tail -n 5 "$out/diff"; exit 1
fi
