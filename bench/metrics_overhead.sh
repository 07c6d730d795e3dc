#!/bin/sh
# What recording costs: tokens/s of a small GPT training run with train.metrics (JSON lines) and
# train.tensorboard (event files) on, against the same run with both off. Every step then writes one
# JSON row and 8 TensorBoard events (two fflush calls) on rank 0.
#   sh bench/metrics_overhead.sh                  (from the top of a built tree)
#   BENCH_REPS=9 BENCH_STEPS=300 BENCH_RANKS=2 sh bench/metrics_overhead.sh
# The model is deliberately small (2 layers, width 64, context 32, global batch 8: a few ms per
# step), so that a fixed per-step cost shows; a real model's step is far longer. The off and on runs
# alternate, BENCH_REPS times each (default 7), after one discarded warm-up run; the figure of a run
# is accel_train's end-of-run throughput (mean over the steps after the first), and the script prints
# the median of each side and their difference in %. The output directory is removed afterwards.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x ./accel_train ] || { echo "metrics_overhead.sh: build accel first (make)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo ACCEL_DEVICE=cpu
REPS=${BENCH_REPS:-7} STEPS=${BENCH_STEPS:-200} RANKS=${BENCH_RANKS:-1}
args="model.name=gpt model.layers=2 model.width=64 model.heads=4 model.context=32 model.vocab=256
      data.path=synthetic data.eval_samples=8 train.global_batch=8 train.steps=$STEPS
      train.log_every=0 train.sample_tokens=0 train.peak_tflops=1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # on|off -> tokens/s
    extra=
    [ "$1" = on ] && extra="train.metrics=$out/m.jsonl train.tensorboard=$out/tb"
    rm -rf "$out/m.jsonl" "$out/tb"
    mpirun -np "$RANKS" ./accel_train $args $extra > "$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
    if [ "$1" = on ] && ! { [ -s "$out/m.jsonl" ] && ls "$out"/tb/events.out.tfevents.* >/dev/null 2>&1; }; then
        echo "metrics_overhead.sh: the 'on' run wrote no metrics or no event file" >&2; exit 1
    fi
    sed -n 's/.*throughput: \([0-9.]*\) tokens\/s.*/\1/p' "$out/log"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $RANKS rank(s), $STEPS steps of 8 x 32 tokens, $REPS reps each"
run off > /dev/null; run on > /dev/null                  # warm-up: page cache, CPU frequency
: > "$out/off"; : > "$out/on"
for i in $(seq "$REPS"); do
    run off >> "$out/off"
    run on >> "$out/on"
    printf '  rep %d: off %s, on %s tokens/s\n' "$i" "$(tail -n1 "$out/off")" "$(tail -n1 "$out/on")"
done
off=$(median < "$out/off") on=$(median < "$out/on")
awk -v off="$off" -v on="$on" 'BEGIN {
    printf "median tokens/s: off %.0f, on (train.metrics + train.tensorboard) %.0f: %+.2f%%\n", off, on, 100 * (on - off) / off }'
