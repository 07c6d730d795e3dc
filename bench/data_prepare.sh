#!/bin/sh
# accel_data prepare's memory and speed on a JSON Lines corpus larger than its buffer: the peak
# resident memory (printed by accel_data) against the corpus size, for the byte tokenizer and a
# BPE tokenizer.json, at the default --buffer (64MiB) and a small one (8MiB), beside the
# process's start-up size (a prepare of 20 lines). Also checks that both buffers write the same
# dataset. The corpus is generated here (deterministic awk: words of the GPL-3 text, documents of
# 50-400 words, one {"text": ..., "id": N} object per line).
#   sh bench/data_prepare.sh [MB]               (default 512 MB of JSON Lines)
# BENCH_DATA_DIR: where the corpus and the datasets go (default /tmp; about 4 x MB free needed).
# BENCH_TOKENIZER: a tokenizer.json (default tests/fixtures/tokenizer/llama3.json.gz, unpacked:
# the Llama-3 pre-tokenizer and byte-level BPE with a 6,001-token vocabulary).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-512}
AD=$top/accel_data
[ -x "$AD" ] || { echo "data_prepare.sh: build accel first (make)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d "${BENCH_DATA_DIR:-/tmp}/data_prepare.XXXXXX")
trap 'rm -rf "$dir"' EXIT
tok=${BENCH_TOKENIZER:-}
if [ -z "$tok" ]; then
    tok=$dir/llama3.json
    gzip -dc "$top/tests/fixtures/tokenizer/llama3.json.gz" > "$tok"
fi
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
echo "CPU: $cpu (family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores"
echo "file system of $dir: $(df -h "$dir" | awk 'NR == 2 { print $1 ", " $4 " free" }')"
echo "generating $MB MB of JSON Lines..."
awk -v limit=$((MB * 1000000)) 'BEGIN { srand(26) }
    { for (i = 1; i <= NF; i++) if ($i ~ /^[A-Za-z,.;:()-]+$/) w[n++] = $i }
    END {
        while (size < limit) {
            k = 50 + int(rand() * 351); doc = w[int(rand() * n)]
            for (i = 1; i < k; i++) doc = doc " " w[int(rand() * n)]
            gsub(/"/, "", doc)
            line = "{\"text\": \"" doc "\", \"id\": " id++ "}"
            print line; size += length(line) + 1
        }
    }' /usr/share/common-licenses/GPL-3 > "$dir/corpus.jsonl"
head -n 20 "$dir/corpus.jsonl" > "$dir/small.jsonl"
bytes=$(wc -c < "$dir/corpus.jsonl")
echo "corpus: $bytes bytes, $(wc -l < "$dir/corpus.jsonl") documents"
run() { # NAME ARGS...: one prepare; prints its row
    name=$1; shift
    t0=$(date +%s.%N)
    "$AD" prepare --jsonl --context 8 --output "$dir/$name.h5" "$@" > "$dir/$name.log" 2>&1 ||
        { echo "prepare $name failed:" >&2; tail -5 "$dir/$name.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    peak=$(sed -n 's/^peak memory \([0-9]*\) MiB$/\1/p' "$dir/$name.log")
    tokens=$(sed -n 's/.*-> \([0-9]*\) tokens: train.*/\1/p' "$dir/$name.log")
    awk -v n="$name" -v p="$peak" -v t="$t1" -v s="$t0" -v b="$bytes" -v k="${tokens:-0}" 'BEGIN {
        printf "%-22s %10s %10.1f %12.1f %12.0f\n", n, p, t - s, b / (t - s) / 1e6, k }'
}
printf "%-22s %10s %10s %12s %12s\n" "run" "peak MiB" "seconds" "MB/s" "tokens"
"$AD" prepare --jsonl --context 8 --output "$dir/startup.h5" "$dir/small.jsonl" > "$dir/startup.log" 2>&1
echo "start-up (20 lines)    $(sed -n 's/^peak memory \([0-9]*\) MiB$/\1/p' "$dir/startup.log") MiB"
run bytes "$dir/corpus.jsonl"
run bytes-8MiB --buffer 8MiB "$dir/corpus.jsonl"
run bpe --tokenizer "$tok" "$dir/corpus.jsonl"
run bpe-8MiB --buffer 8MiB --tokenizer "$tok" "$dir/corpus.jsonl"
for p in bytes bpe; do
    h5diff "$dir/$p.h5" "$dir/$p-8MiB.h5" > /dev/null 2>&1 || cmp -s "$dir/$p.h5" "$dir/$p-8MiB.h5" ||
        { echo "$p: the 8MiB buffer wrote another dataset" >&2; exit 1; }
done
echo "both buffers wrote the same datasets"
