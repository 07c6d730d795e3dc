#!/bin/sh
# Chat data (not a test): `accel_data prepare` on conversations against transformers'
# apply_chat_template as TRL's SFTTrainer calls it, one conversation at a time in one process
# (bench/chat_hf.py), and a differential check of the two outputs at scale.
#
#   sh bench/chat_prepare.sh [N]                (default N = 20000 conversations)
#
# The corpus is generated (bench/chat_hf.py gen, seeded: the same file every run): TRL "messages"
# lines, an optional system message (30%), 1-4 user/assistant turns, messages of 10-200 words of
# the GPL-3 text with some unicode (é, 日本, emoji), quotes, numbers and line breaks, 2% of the
# answers starting with a blank line (a token that starts in the header and ends in the answer).
# The tokenizer is tests/fixtures/tokenizer/qwen2.json.gz (Qwen2's NFC normalizer and pre-tokenizer,
# byte-level BPE trained to a 5,000-token vocabulary; <|im_start|> and <|im_end|> added as special
# tokens when missing) with a tokenizer_config.json of eos_token "<|im_end|>" and no bos_token.
# Templates: tests/fixtures/chat/templates/chatml_generation.jinja ({% generation %} blocks: the
# peer is apply_chat_template(..., return_assistant_tokens_mask=True)) and chatml.jinja (no tags:
# accel's prefix rule, which the peer computes with transformers' renderer and the tokenizer's
# offsets, as tests/chat_reference.py does). Per template: accel (wall time of the process, its
# "peak memory" line), the peer (load and loop timed apart; peak resident set from getrusage), the
# peer's rendering alone (tokenize=False), then accel's /train + /val against the peer's ids and
# masks. The tools run one after the other, never together. HF runs one thread
# (RAYON_NUM_THREADS=1, TOKENIZERS_PARALLELISM=false).
# BENCH_DATA_DIR: where the corpus and the outputs go (default /tmp).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-20000}
AD=$top/accel_data
[ -x "$AD" ] || { echo "chat_prepare.sh: build accel first (make)" >&2; exit 1; }
. "$top/bench/venv.sh"
python_with "import transformers, tokenizers, jinja2, numpy" transformers tokenizers jinja2 numpy || exit 2
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
dir=$(mktemp -d "${BENCH_DATA_DIR:-/tmp}/chat_prepare.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
echo "CPU: $cpu (family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores"
"$py" -c 'import transformers, tokenizers, jinja2; print("transformers", transformers.__version__, "tokenizers", tokenizers.__version__, "jinja2", jinja2.__version__)'
"$py" "$top/bench/chat_hf.py" gen "$N" /usr/share/common-licenses/GPL-3 "$dir/chat.jsonl"
echo "corpus: $N conversations, $(wc -c < "$dir/chat.jsonl") bytes of JSON Lines"
gzip -dc "$top/tests/fixtures/tokenizer/qwen2.json.gz" > "$dir/qwen2.json"
"$py" "$top/bench/chat_hf.py" tokenizer "$dir/qwen2.json" "$dir/tok"
field() { # NAME LINE: the number after NAME in a "name value name value" line
    echo "$2" | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }'
}
dump() { # H5 DATASET RAW
    h5dump -b LE -o "$3" -d "$2" "$1" > /dev/null
}
rows=$dir/rows
: > "$rows"
status=0
for t in chatml_generation chatml; do
    tpl=$top/tests/fixtures/chat/templates/$t.jinja
    echo "== $t"
    t0=$(date +%s.%N)
    "$AD" prepare --tokenizer "$dir/tok" --chat-template "$tpl" --jsonl-field messages --context 8 \
        --output "$dir/$t.h5" "$dir/chat.jsonl" > "$dir/$t.log" 2>&1 ||
        { echo "prepare $t failed:" >&2; tail -5 "$dir/$t.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    peak=$(sed -n 's/^peak memory \([0-9]*\) MiB$/\1/p' "$dir/$t.log")
    tokens=$(sed -n 's/.*-> \([0-9]*\) tokens: train.*/\1/p' "$dir/$t.log")
    as=$(echo "$t1 $t0" | awk '{ printf "%.3f", $1 - $2 }')
    echo "accel: $as s, $tokens tokens, peak memory $peak MiB"
    h=$("$py" "$top/bench/chat_hf.py" run "$dir/tok" "$tpl" "$dir/chat.jsonl" "$dir/hf.$t")
    echo "transformers: $h"
    r=$("$py" "$top/bench/chat_hf.py" render "$dir/tok" "$tpl" "$dir/chat.jsonl" | head -n 1)
    echo "transformers render only: $r"
    case $(h5dump -H -d /train/tokens "$dir/$t.h5" | sed -n 's/.*DATATYPE *H5T_STD_\([UI][0-9]*\)LE.*/\1/p') in
    U8) dt=u8 ;; U16) dt=u16 ;; U32) dt=u32 ;; *) echo "unknown token type" >&2; exit 1 ;;
    esac
    for s in train val; do
        dump "$dir/$t.h5" /$s/tokens "$dir/a.$s.tok"
        dump "$dir/$t.h5" /$s/loss_mask "$dir/a.$s.mask"
    done
    "$py" "$top/bench/chat_hf.py" compare "$dir/hf.$t" $dt "$dir/a.train.tok" "$dir/a.val.tok" \
        "$dir/a.train.mask" "$dir/a.val.mask" "$dir/chat.jsonl" "$dir/tok" "$tpl" || status=1
    echo "$t $N $as $tokens $peak $(field loop_s "$h") $(field load_s "$h") $(field peak_mib "$h") $(field tokens "$h") $(field loop_s "$r")" >> "$rows"
done
echo
echo "HF seconds: reading the JSON Lines and the conversation loop (importing transformers and loading the"
echo "tokenizer not counted: the load after the row); accel: the whole process. ratio = accel conv/s / HF conv/s."
printf '%-18s %-17s %8s %9s %12s %9s %8s\n' tool template seconds "conv/s" "tokens/s" "peak MiB" ratio
awk '{
    n = $2; as = $3; at = $4; ap = $5; hs = $6; hl = $7; hp = $8; ht = $9; rs = $10
    printf "%-18s %-17s %8.2f %9.0f %12.0f %9d %8s\n", "accel_data", $1, as, n / as, at / as, ap, sprintf("%.1fx", hs / as)
    printf "%-18s %-17s %8.2f %9.0f %12.0f %9d %8s  (+%.1f s load)\n", "transformers", $1, hs, n / hs, ht / hs, hp, "1.0x", hl
    printf "%-18s %-17s %8.2f %9.0f %12s %9s %8s\n", "  render only", $1, rs, n / rs, "-", "-", "-"
}' "$rows"
exit $status
