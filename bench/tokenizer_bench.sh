#!/bin/sh
# Tokenizer encoding speed (not a test): accel (bench/tokenizer_bench, built here on demand) against
# Hugging Face `tokenizers` (bench/tokenizer_hf.py, one thread: RAYON_NUM_THREADS=1,
# TOKENIZERS_PARALLELISM=false) on the fixture tokenizers of tests/fixtures/tokenizer/ and their
# 1.15 MB multilingual test text.
#
#   sh bench/tokenizer_bench.sh                 (BENCH_REPS=5 runs per side, best taken)
#   BENCH_TOKENIZERS="gpt2 llama3" sh bench/tokenizer_bench.sh
#
# Fair by construction: the same text and the same calls on both sides, in two modes:
#   docs   the text cut into ~BENCH_DOC-byte documents (default 4096; each ends at a newline), as a
#          data pipeline encodes files: accel one encode per document, HF one encode_batch over all
#          (its fastest path; one thread)
#   whole  one encode call over the whole 1.15 MB text
# Each run uses a freshly loaded tokenizer on both sides (cold word caches; load time not counted);
# the best of BENCH_REPS runs; the id counts are printed side by side (they must agree). Python:
# bench/venv.sh (bench/.venv with tokenizers, made when missing; PYTHON=... to override).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${top_builddir:-$top}
REPS=${BENCH_REPS:-5}
TOKS=${BENCH_TOKENIZERS:-gpt2 llama3 qwen2 mistral llama2}
FIX=$top/tests/fixtures/tokenizer
. "$top/bench/venv.sh"
python_with "import tokenizers" tokenizers || exit 2
make -C "$build" -s bench/tokenizer_bench >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/accel-tokbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
gzip -dc "$FIX/text.txt.gz" > "$work/text.txt"
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; text $(wc -c < "$work/text.txt") bytes; best of $REPS"
echo "HF tokenizers $("$py" -c 'import tokenizers; print(tokenizers.__version__)')"
DOC=${BENCH_DOC:-4096}
printf '%-9s %-6s %12s %12s %8s %10s %10s\n' tokenizer mode "accel MB/s" "HF MB/s" ratio "accel ids" "HF ids"
for t in $TOKS; do
    mkdir -p "$work/$t"
    gzip -dc "$FIX/$t.json.gz" > "$work/$t/tokenizer.json"
    for mode in docs whole; do
        d=$DOC; [ $mode = whole ] && d=0
        a=$("$build/bench/tokenizer_bench" "$work/$t" "$work/text.txt" "$REPS" "$d")
        h=$("$py" "$top/bench/tokenizer_hf.py" "$work/$t/tokenizer.json" "$work/text.txt" "$REPS" "$d")
        set -- $a; am=$2; ai=$4
        set -- $h; hm=$2; hi=$4
        printf '%-9s %-6s %12s %12s %7.2fx %10s %10s\n' "$t" "$mode" "$am" "$hm" \
            "$(echo "$am $hm" | awk '{print $1/$2}')" "$ai" "$hi"
    done
done
