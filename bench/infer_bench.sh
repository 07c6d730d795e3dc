#!/bin/sh
# Big-model inference benchmark (not a test): load time, tokens/s, peak memory and the fraction of
# disk-read time hidden by prefetch, for three device maps of one GPT checkpoint:
#   resident   every layer in memory                       (--device-map '*=cpu')
#   half       the first half of the blocks in memory       (--device-map '0-K=cpu,*=disk')
#   one        everything but the embeddings on disk        (--device-map '0=cpu,*=disk')
#   auto       device_map=auto within half the weights      (--max-memory cpu=...)
#
#   make accel_generate tests/infer_mkweights
#   bench/infer_bench.sh                          # default: width 1024, 20 layers = 1.0 GB fp32
#   BENCH_WIDTH=512 BENCH_LAYERS=8 bench/infer_bench.sh     # a quick run (100 MB)
#
# Knobs (environment): BENCH_WIDTH, BENCH_LAYERS, BENCH_HEADS (16), BENCH_CONTEXT (128),
# BENCH_TOKENS (new tokens, 16), BENCH_PROMPT (32 bytes of prompt), BENCH_DIR (where the
# checkpoint goes; default ./bench-infer), BENCH_SLOTS (ring slots, 2), BENCH_THREADS (BLAS
# threads, 0 = OpenBLAS default), BENCH_KEEP=1 keeps the checkpoint.
#
# The page cache is NOT dropped (the machine is shared; dropping it needs root and hurts everyone):
# the checkpoint was just written, so disk layers are read from a warm page cache. The read and
# hidden-time figures are therefore a lower bound on real disk reads; with a cold cache the reads
# are slower and prefetch hides a smaller fraction. Report them as "warm cache".
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
build=${top_builddir:-$top}
G="$build/accel_generate"
MK="$build/tests/infer_mkweights"
[ -x "$G" ] && [ -x "$MK" ] || { echo "build first: make accel_generate tests/infer_mkweights" >&2; exit 2; }

W=${BENCH_WIDTH:-1024} L=${BENCH_LAYERS:-20} H=${BENCH_HEADS:-16} T=${BENCH_CONTEXT:-128}
N=${BENCH_TOKENS:-16} P=${BENCH_PROMPT:-32} S=${BENCH_SLOTS:-2} TH=${BENCH_THREADS:-0}
DIR=${BENCH_DIR:-./bench-infer}
mkdir -p "$DIR"
ckpt="$DIR/gpt-w$W-l$L.h5"
cfg="model.name=gpt model.layers=$L model.width=$W model.heads=$H model.context=$T model.vocab=256"

if [ ! -f "$ckpt" ]; then
    echo "writing $ckpt ($cfg)"
    t0=$(date +%s.%N)
    "$MK" "$ckpt" $cfg
    echo "  written in $(echo "$(date +%s.%N) - $t0" | bc) s"
fi
bytes=$(stat -c %s "$ckpt")
mib=$((bytes / 1048576))
prompt=$(head -c "$P" "$top/README.md" | tr -c 'A-Za-z0-9 .,\n' ' ')

# The workspace is printed in the map; half the weights plus the workspace for the "half" run.
ws=$("$G" "$ckpt" --print-map threads=$TH | sed -n 's/.*workspace \([0-9.]*\) \([KMG]\)iB.*/\1 \2/p')
set -- $ws
case "$2" in K) wsm=1 ;; M) wsm=$(printf '%.0f' "$1") ;; G) wsm=$(printf '%.0f' "$(echo "$1 * 1024" | bc)") ;; *) wsm=1 ;; esac
half=$((mib / 2 + wsm + 1))

echo
echo "model: $cfg, $mib MiB of fp32 weights; $N new tokens after a $P-byte prompt (no KV cache: each"
echo "token recomputes its window); ring $S slots; page cache warm (not dropped)"
printf '%-9s %-28s %8s %10s %9s %10s %10s %9s %7s\n' map spec "load s" "tokens/s" "peak MiB" \
    "read MiB" "read MiB/s" "waited s" hidden
for run in "resident|--device-map *=cpu" "half|--device-map 0-$((L / 2))=cpu,*=disk" \
           "one|--device-map 0=cpu,*=disk" "auto|--max-memory cpu=${half}MiB"; do
    name=${run%%|*}
    spec=${run#*|}
    out=$("$G" "$ckpt" -q --stats --prompt "$prompt" -n "$N" --ring-slots "$S" $spec threads=$TH 2>&1 >/dev/null)
    load=$(printf '%s\n' "$out" | sed -n 's/^load: *\([0-9.]*\) s.*/\1/p')
    tps=$(printf '%s\n' "$out" | sed -n 's/.*= \([0-9.]*\) tokens\/s.*/\1/p')
    peak=$(printf '%s\n' "$out" | sed -n 's/.*memory-bytes: peak=\([0-9]*\).*/\1/p')
    read=$(printf '%s\n' "$out" | sed -n 's/.*reads, \([0-9.]*\) MiB in \([0-9.]*\) s (\([0-9]*\) MiB\/s.*waited \([0-9.]*\) s: \([0-9]*\)%.*/\1 \3 \4 \5/p')
    set -- ${read:-0 0 0 -}
    printf '%-9s %-28s %8s %10s %9d %10s %10s %9s %6s%%\n' "$name" "$spec" "$load" "$tps" \
        $((peak / 1048576)) "$1" "$2" "$3" "$4"
done
[ "${BENCH_KEEP:-0}" = 1 ] || rm -f "$ckpt"
