#!/bin/sh
# A tokenizer.json from data to model and back out: data prepared with a byte-level BPE
# (tests/fixtures/data/tinybpe, vocabulary 400) trains a GPT whose sample is decoded with it; the
# checkpoint keeps the tokenizer (name, hash, bytes); the hf export writes the same tokenizer.json
# and its bos/eos ids;
# accel_generate encodes prompts with it from the checkpoint, the safetensors export and the hf
# export; train.init_from refuses data made with another tokenizer; a tokenizer larger than the
# model's vocabulary is refused.
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data"; AC="$top_builddir/accel_ckpt"; G="$top_builddir/accel_generate"
TOK="$top_srcdir/tests/fixtures/data/tinybpe"
make_scratch
S=$SCRATCH
t() { timeout -k 5 120 "$@"; }
hash=$(cat "$TOK/XXH64")
# Text: a few license files (about 60 KB), one document each.
out=$(t "$AD" prepare --tokenizer "$TOK" --output "$S/text.h5" --context 32 \
      /usr/share/common-licenses/Apache-2.0 /usr/share/common-licenses/MPL-2.0 2>&1) || fail "prepare: $out"
model="model.name=gpt model.layers=1 model.width=32 model.heads=2 model.context=32 model.vocab=400"
out=$(run_mpi 2 "$ACCEL_TRAIN" $model data.path="$S/text.h5" train.steps=6 train.global_batch=8 \
      train.sample_prompt="The " train.sample_tokens=12 ckpt.dir="$S/ck" 2>&1) || fail "training: $out"
printf '%s\n' "$out" | grep -qF "sample (temperature 0.8, top-k 40):" || fail "no sample printed: $out"
ck="$S/ck/step-00000006.h5"
[ -f "$ck" ] || fail "no checkpoint $ck: $(ls "$S/ck")"
info=$(t "$AC" info "$ck" 2>&1) || fail "accel_ckpt info: $info"
printf '%s\n' "$info" | grep -qi "tokenizer.*tinybpe" || fail "checkpoint info shows no tokenizer: $info"
h5dump -a /meta/tokenizer_hash "$ck" 2>/dev/null | grep -qi "$hash" || fail "checkpoint lacks tokenizer_hash $hash"
pass "training on tinybpe data: sample decoded, checkpoint keeps tokenizer tinybpe ($hash)"

# Exports carry it: hf writes the same tokenizer.json; safetensors keeps it in its metadata.
out=$(t "$AC" export "$ck" --format hf --output "$S/hf" 2>&1) || fail "export hf: $out"
cmp "$S/hf/tokenizer.json" "$TOK/tokenizer.json" || fail "the hf export's tokenizer.json differs from the data's"
# tinybpe's <|begin_of_text|> (0) and <|end_of_text|> (1) name the ids transformers generates with
grep -q '"bos_token_id": 0,' "$S/hf/config.json" && grep -q '"eos_token_id": 1' "$S/hf/generation_config.json" ||
    fail "bos/eos ids not exported: $(cat "$S/hf/config.json" "$S/hf/generation_config.json")"
grep -qF '"bos_token": "<|begin_of_text|>"' "$S/hf/tokenizer_config.json" || fail "tokenizer_config.json: $(cat "$S/hf/tokenizer_config.json")"
out=$(t "$AC" export "$ck" --format safetensors --output "$S/m.safetensors" 2>&1) || fail "export safetensors: $out"
for w in "$ck" "$S/m.safetensors" "$S/hf"; do
    out=$(t "$G" "$w" --prompt "The " -n 8 2>&1) || fail "accel_generate $w: $out"
    # (an HF directory's tokenizer is named after the directory: the hash is what identifies it)
    printf '%s\n' "$out" | grep -q "tokenizer [a-z]* (xxh64 $hash), 400 tokens" || fail "$w: tokenizer not used: $out"
    printf '%s\n' "$out" | tail -n 1 | grep -q "^The " || fail "$w: the text does not start with the prompt: $out"
done
# The same tokens as text: scoring the prompt-encoded file gives a finite loss.
printf 'The license grants you the right to use the work.\n' > "$S/score.txt"
out=$(t "$G" "$ck" -q --score "$S/score.txt" 2>&1) || fail "--score: $out"
printf '%s\n' "$out" | grep -q "score: .* tokens in [0-9]* windows of up to 32: mean loss [0-9.]* nats" || fail "--score output: $out"
pass "hf export writes the tokenizer.json; accel_generate uses the kept tokenizer (checkpoint, safetensors, hf)"

# --tokenizer chooses another; one larger than the vocabulary is refused with both sizes.
out=$(t "$G" "$ck" -q --tokenizer bytes --prompt "The " -n 4 2>&1) || fail "--tokenizer bytes: $out"
printf '%s\n' "$out" | grep -qF "tokenizer bytes" && fail "-q still printed the map"
zcat "$top_srcdir/tests/fixtures/tokenizer/gpt2.json.gz" > "$S/gpt2.json"
expect_fail "has " t "$G" "$ck" -q --tokenizer "$S/gpt2.json" --prompt "The "
expect_fail "but the model's vocabulary is model.vocab=400" t "$G" "$ck" -q --tokenizer "$S/gpt2.json" --prompt "The "

# Fine-tuning from these weights on data made with the byte tokenizer: refused, naming both.
out=$(t "$AD" prepare --output "$S/bytes.h5" --context 32 /usr/share/common-licenses/Apache-2.0 2>&1) || fail "prepare bytes: $out"
expect_fail "was made with tokenizer 'bytes'" run_mpi 1 "$ACCEL_TRAIN" data.path="$S/bytes.h5" train.init_from="$ck" \
    train.steps=2 train.global_batch=8
out=$(run_mpi 1 "$ACCEL_TRAIN" data.path="$S/text.h5" train.init_from="$ck" train.steps=2 train.global_batch=8 \
      train.sample_tokens=0 2>&1) || fail "init_from on data with the same tokenizer: $out"
printf '%s\n' "$out" | grep -q "initialised the parameters from train.init_from" || fail "init_from not done: $out"
pass "train.init_from: same tokenizer accepted, the byte tokenizer's data refused"
