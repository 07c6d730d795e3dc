#!/bin/sh
# KV cache generation benchmark (not a test): accel_generate's tokens/s with the key/value cache and
# with --no-kv-cache (every new token recomputes its whole window), the speed-up, and how far apart
# the two runs' logits are (--logits-out: every pass's fp32 logits), for two device maps of one GPT
# checkpoint at context 1024:
#   resident   every layer in memory                       (--device-map '*=cpu')
#   half       the first half of the blocks in memory       (--device-map '0-K=cpu,*=disk', K = L/2)
#
#   make accel_generate tests/infer_mkweights
#   bench/kv_cache_bench.sh                      # width 1024, 20 layers, 16 heads, context 1024 (1.0 GB fp32)
#   BENCH_LAYERS=8 bench/kv_cache_bench.sh        # a quicker run (0.4 GB)
#   BENCH_PROMPT=768 BENCH_TOKENS=16 bench/kv_cache_bench.sh   # a long prompt: windows near 1024
#
# Knobs (environment): BENCH_WIDTH (1024), BENCH_LAYERS (20), BENCH_HEADS (16), BENCH_CONTEXT
# (1024), BENCH_TOKENS (new tokens, 128), BENCH_PROMPT (bytes of prompt, 32), BENCH_KV_RUNS (runs
# with the cache, 3: the median is taken; the no-cache run is long and runs once), BENCH_MAPS
# ("resident half"), BENCH_DIR (where the checkpoint goes; default ./bench-infer), BENCH_THREADS
# (BLAS threads, 0 = OpenBLAS default), BENCH_KEEP=1 keeps the checkpoint.
#
# What the figures mean: tokens/s is accel_generate --stats' figure, new tokens over the time from
# the first pass to the last, so the cached runs include the prompt's one whole-window pass. With a
# short prompt the no-cache windows are short too (prompt .. prompt + tokens - 1 positions), so the
# speed-up grows with the prompt: each uncached token costs a forward over its window, each cached
# one a forward over one position (matrix-vector products that read every weight once: bound by
# memory bandwidth, and for disk layers by the reads). Greedy decoding: both runs must print the same
# text, and the logits must agree to rounding (expected max abs diff <= 1e-5). Besides the whole
# run's tokens/s, the table gives the first (prompt) pass alone (a -n 1 run) and the per-token time of
# the other tokens, (run time - first pass) / (tokens - 1), with and without the cache, and their
# ratio ("decode"): the cache's speed-up once the prompt is in.
# The page cache is not dropped (see bench/infer_bench.sh): disk layers come from a warm page cache.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
build=${top_builddir:-$top}
G="$build/accel_generate"
MK="$build/tests/infer_mkweights"
[ -x "$G" ] && [ -x "$MK" ] || { echo "build first: make accel_generate tests/infer_mkweights" >&2; exit 2; }

W=${BENCH_WIDTH:-1024} L=${BENCH_LAYERS:-20} H=${BENCH_HEADS:-16} T=${BENCH_CONTEXT:-1024}
N=${BENCH_TOKENS:-128} P=${BENCH_PROMPT:-32} TH=${BENCH_THREADS:-0} RUNS=${BENCH_KV_RUNS:-3}
MAPS=${BENCH_MAPS:-resident half}
DIR=${BENCH_DIR:-./bench-infer}
[ "$P" -ge 1 ] && [ "$P" -le "$T" ] || { echo "BENCH_PROMPT must be 1..$T bytes" >&2; exit 2; }
mkdir -p "$DIR"
ckpt="$DIR/gpt-w$W-l$L-t$T.h5"
cfg="model.name=gpt model.layers=$L model.width=$W model.heads=$H model.context=$T model.vocab=256"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
echo "CPU: $cpu (family $(lscpu | sed -n 's/^CPU family: *//p' | head -n 1) model $(lscpu | sed -n 's/^Model: *//p' | head -n 1)), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ! -f "$ckpt" ]; then
    echo "writing $ckpt ($cfg)"
    t0=$(date +%s.%N)
    timeout 1800 "$MK" "$ckpt" $cfg
    echo "  written in $(echo "$(date +%s.%N) - $t0" | bc) s"
fi
mib=$(($(stat -c %s "$ckpt") / 1048576))
# the prompt: the first P bytes of README.md (repeated if short), printable
prompt=$(while :; do cat "$top/README.md"; done | head -c "$P" | tr -c 'A-Za-z0-9 .,' ' ')

maxdiff() { # FILE1 FILE2: max |a - b| over the fp32 logits, or a reason they cannot be compared
    python3 - "$1" "$2" <<'EOF'
import sys
from array import array
a, b = array("f"), array("f")
a.frombytes(open(sys.argv[1], "rb").read())
b.frombytes(open(sys.argv[2], "rb").read())
if len(a) != len(b):
    print(f"sizes differ ({len(a)} and {len(b)} floats)")
else:
    print("%.3g" % max((abs(x - y) for x, y in zip(a, b)), default=0.0))
EOF
}
gen() { # TAG MAP_SPEC NEW_TOKENS [--no-kv-cache]: one accel_generate run; sets tps secs passes rd
    tag=$1 spec=$2 n=$3
    shift 3
    timeout 3600 "$G" "$ckpt" -q --stats --prompt "$prompt" -n "$n" $spec threads=$TH "$@" \
        --logits-out "$tmp/$tag.logits" >"$tmp/$tag.text" 2>"$tmp/$tag.err" || {
        echo "accel_generate failed ($tag: $spec $*):" >&2; tail -n 20 "$tmp/$tag.err" >&2; exit 1; }
    tps=$(sed -n 's/.*= \([0-9.]*\) tokens\/s.*/\1/p' "$tmp/$tag.err")
    secs=$(sed -n 's/^gen: .* tokens in \([0-9.]*\) s = .*/\1/p' "$tmp/$tag.err")
    passes=$(sed -n 's/.*tokens\/s (\([0-9]*\) passes).*/\1/p' "$tmp/$tag.err")
    rd=$(sed -n 's/.*reads, \([0-9.]*\) MiB in.*/\1/p' "$tmp/$tag.err")
    rd=${rd:-0}
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "model: $cfg, $mib MiB of fp32 weights; $N new tokens (greedy) after a $P-byte prompt"
echo "threads=$TH; page cache warm (not dropped); KV runs: median of $RUNS, no-KV: one run"
echo "first pass: the prompt's whole-window pass (-n 1, median of $RUNS); decode: the other $((N - 1)) tokens,"
echo "ms per token = (run time - first pass) / $((N - 1)): the steady state without the prompt's pass"
printf '%-9s %11s %11s %8s %9s %11s %11s %8s %10s %s\n' map "KV tok/s" "no-KV tok/s" speed-up \
    "1st pass s" "KV ms/tok" "noKV ms/tok" decode "max |dz|" "text"
for name in $MAPS; do
    case $name in
        resident) spec="--device-map *=cpu" ;;
        half) spec="--device-map 0-$((L / 2))=cpu,*=disk" ;;
        one) spec="--device-map 0=cpu,*=disk" ;;
        *) echo "unknown map '$name' (resident, half, one)" >&2; exit 2 ;;
    esac
    kv= kvs= first= r=1
    while [ $r -le "$RUNS" ]; do
        gen "$name.first$r" "$spec" 1; first="$first $secs"
        gen "$name.kv$r" "$spec" "$N"; kv="$kv $tps"; kvs="$kvs $secs"; kvread=$rd
        [ $r -gt 1 ] || kvpasses=$passes
        r=$((r + 1))
    done
    kvm=$(echo $kv | median) kvsm=$(echo $kvs | median) firstm=$(echo $first | median)
    gen "$name.nokv" "$spec" "$N" --no-kv-cache
    nokv=$tps nokvs=$secs nokvpasses=$passes nokvread=$rd
    d=$(maxdiff "$tmp/$name.kv1.logits" "$tmp/$name.nokv.logits")
    if cmp -s "$tmp/$name.kv1.text" "$tmp/$name.nokv.text"; then same="same text"; else same="TEXT DIFFERS"; fi
    awk -v n="$name" -v a="$kvm" -v b="$nokv" -v f="$firstm" -v ks="$kvsm" -v ns="$nokvs" -v N="$N" \
        -v d="$d" -v t="$same" 'BEGIN {
        k = N > 1 ? 1e3 * (ks - f) / (N - 1) : 0; u = N > 1 ? 1e3 * (ns - f) / (N - 1) : 0
        printf "%-9s %11.2f %11.2f %7.1fx %9.3f %11.1f %11.1f %7.1fx %10s %s\n", n, a, b, a / b, f, k, u,
               (k > 0 ? u / k : 0), d, t }'
    echo "          $spec; KV runs:$kv tokens/s ($kvpasses passes, $kvread MiB read from disk);" \
         "first passes:$first s; no-KV: $nokvpasses passes, $nokvread MiB read; load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "speed-up target: >= 10x; logits: max abs diff expected <= 1e-5"
[ "${BENCH_KEEP:-0}" = 1 ] || rm -f "$ckpt"
