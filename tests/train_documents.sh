#!/bin/sh
# Packed documents kept apart (data.document_mask): accel_data prepare records where every document
# begins (/split/document_start, checked token by token with the byte tokenizer, counted by
# accel_data info with a real tokenizer that adds BOS), and so does accel_data import (llm.c
# shards: at every <|endoftext|>; --document-start ID for others); training with
# data.document_mask=true attends within documents and restarts positions, gives the same losses on 1 and 2 ranks, equals
# plain training on a corpus of one document (nothing to keep apart), changes the losses where
# documents are packed, goes with prompt/completion loss masks, and is refused clearly where it
# cannot work. The attention and positions themselves are checked against documents run one at a
# time (tests/check_gpt.c) and against transformers' packed position_ids (tests/check_llama.c).
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data" TOK="$top_srcdir/tests/fixtures/data/tinybpe"
[ -x "$AD" ] && [ -x "$ACCEL_TRAIN" ] && command -v h5dump >/dev/null ||
    fail "accel_data, accel_train (make) or h5dump (apt-get install hdf5-tools) is missing"
make_scratch
S=$SCRATCH
t() { timeout -k 5 120 "$@"; }

# 600 documents of 1 to 60 words (ASCII: one byte per character with the byte tokenizer)
awk 'BEGIN { srand(7); for (i = 0; i < 600; i++) { n = 1 + int(rand() * 60); s = "";
        for (k = 0; k < n; k++) s = s sprintf("%sw%d", k ? " " : "", int(rand() * 40));
        printf "{\"text\": \"%s\"}\n", s } }' > "$S/docs.jsonl"

# Bytes: the documents run into each other; a 1 marks each one's first byte.
t "$AD" prepare --jsonl --context 32 --output "$S/bytes.h5" "$S/docs.jsonl" > "$S/out" 2>&1 ||
    fail "prepare: $(cat "$S/out")"
awk -F'"' '{ n = length($4); print 1; for (k = 1; k < n; k++) print 0 }' "$S/docs.jsonl" > "$S/want"
{ h5_values "$S/bytes.h5" /train/document_start; h5_values "$S/bytes.h5" /val/document_start; } > "$S/got"
cmp -s "$S/got" "$S/want" || fail "/split/document_start is not 1 at each document's first byte"
pass "prepare records where each of 600 documents begins ($(wc -l < "$S/want") tokens)"

# A tokenizer with BOS: each document starts at its BOS; info counts them.
t "$AD" prepare --tokenizer "$TOK" --jsonl --context 32 --output "$S/bpe.h5" "$S/docs.jsonl" > "$S/out" 2>&1 ||
    fail "prepare --tokenizer: $(cat "$S/out")"
info=$(t "$AD" info "$S/bpe.h5") || fail "info: $info"
docs=$(printf '%s\n' "$info" | sed -n 's/.*documents: \([0-9]*\) begin here.*/\1/p' | awk '{ s += $1 } END { print s }')
[ "$docs" = 600 ] || fail "info counts $docs documents, not 600: $info"
bos=$(t h5dump -d /train/tokens -s 0 -c 1 "$S/bpe.h5" | sed -n 's/.*(0): \([0-9]*\).*/\1/p')
[ "$bos" = 0 ] || fail "the first token is $bos, not BOS (0)"
pass "with BOS: info counts the 600 documents"

model="model.name=llama model.layers=2 model.heads=4 model.kv_heads=2 model.width=32 model.context=32 \
model.vocab=512 train.global_batch=8 train.steps=20 train.log_every=5 optim.lr=3e-3 optim.warmup=3 \
train.sample_tokens=0 ckpt.dir= train.eval_every=10"
train() {   # train NAME NP ARGS...: metrics into NAME.jsonl
    name=$1; np=$2; shift 2
    # shellcheck disable=SC2086
    run_mpi "$np" "$ACCEL_TRAIN" $model train.metrics="$S/$name.jsonl" "$@" > "$S/$name.log" 2>&1 ||
        fail "$name: training failed: $(tail -20 "$S/$name.log")"
}
train masked1 1 data.path="$S/bpe.h5" data.document_mask=true
grep -q "documents are attended to one at a time" "$S/masked1.log" || fail "the run does not say it keeps documents apart"
grep -q '"kind": "eval"' "$S/masked1.jsonl" || fail "no held-out loss with data.document_mask"
train masked2 2 data.path="$S/bpe.h5" data.document_mask=true
compare_losses "$S/masked1.jsonl" "$S/masked2.jsonl" 1e-5 20 || fail "1 and 2 ranks differ with data.document_mask"
train masked2z3 2 data.path="$S/bpe.h5" data.document_mask=true dist.strategy=zero3 train.grad_accum=2
compare_losses "$S/masked1.jsonl" "$S/masked2z3.jsonl" 1e-5 20 || fail "zero3 with accumulation differs with data.document_mask"
train packed1 1 data.path="$S/bpe.h5"
if compare_losses "$S/packed1.jsonl" "$S/masked1.jsonl" 1e-4 > /dev/null; then
    fail "data.document_mask=true trains as if documents saw each other"
fi
pass "data.document_mask: the same losses on 1 and 2 ranks (ddp; zero3 with accumulation), not those of attending across documents"

# One document (a text file is one): nothing to keep apart, the same run as without the key.
awk -F'"' '{ print $4 }' "$S/docs.jsonl" > "$S/one.txt"
t "$AD" prepare --context 32 --output "$S/one.h5" "$S/one.txt" > "$S/out" 2>&1 || fail "prepare text: $(cat "$S/out")"
train one_plain 1 data.path="$S/one.h5" model.vocab=256
train one_masked 1 data.path="$S/one.h5" model.vocab=256 data.document_mask=true
compare_losses "$S/one_plain.jsonl" "$S/one_masked.jsonl" 1e-6 20 || fail "one document: data.document_mask changes the run"
pass "one document: data.document_mask=true trains exactly as without it"

# With prompt/completion loss masks: both apply (runs, same on 2 ranks).
awk 'BEGIN { for (i = 0; i < 300; i++) printf "{\"prompt\": \"Q: %d+%d=\", \"completion\": \" %d.\"}\n",
        i % 17, i % 13, i % 17 + i % 13 }' > "$S/sft.jsonl"
t "$AD" prepare --prompt-field prompt --jsonl-field completion --context 32 --output "$S/sft.h5" "$S/sft.jsonl" \
    > "$S/out" 2>&1 || fail "prepare --prompt-field: $(cat "$S/out")"
train sft1 1 data.path="$S/sft.h5" model.vocab=256 data.document_mask=true
train sft2 2 data.path="$S/sft.h5" model.vocab=256 data.document_mask=true
compare_losses "$S/sft1.jsonl" "$S/sft2.jsonl" 1e-5 20 || fail "prompt/completion with data.document_mask: 1 and 2 ranks differ"
pass "prompt/completion masks and data.document_mask together"

python_free_npy() {     # a .npy of 2000 uint16 zeros, header written with printf
    hdr="{'descr': '<u2', 'fortran_order': False, 'shape': (2000,), }"
    pad=$((117 - ${#hdr})); printf '\223NUMPY\001\000\166\000%s%*s\n' "$hdr" "$pad" "" > "$1"
    head -c 4000 /dev/zero >> "$1"
}
# Imports: an llm.c shard puts <|endoftext|> (50256) before every document, so each one is a start;
# a .npy marks none unless --document-start names the token (here 0: every token of the zeros).
SHARD="$top_srcdir/tests/fixtures/data/gpt2.bin"
t "$AD" import --output "$S/llmc.h5" "$SHARD" > "$S/out" 2>&1 || fail "import llm.c: $(cat "$S/out")"
grep -q "each begins at token 50256 (the token llm.c puts before every document)" "$S/out" || fail "import does not name llm.c's document token: $(cat "$S/out")"
od -An -v -tu2 -j 1024 "$SHARD" | tr -s ' ' '\n' | sed '/^$/d' | awk '{ print ($1 == 50256) }' > "$S/want"
{ h5_values "$S/llmc.h5" /train/document_start; h5_values "$S/llmc.h5" /val/document_start; } > "$S/got"
[ "$(grep -c 1 "$S/want")" -gt 0 ] || fail "the llm.c fixture holds no 50256"
cmp -s "$S/got" "$S/want" || fail "an llm.c import's document starts are not its 50256 tokens"
python_free_npy "$S/z.npy"
t "$AD" import --output "$S/zeros.h5" --vocab 512 --document-start 0 "$S/z.npy" > "$S/out" 2>&1 ||
    fail "import --document-start 0: $(cat "$S/out")"
docs=$(t "$AD" info "$S/zeros.h5" | sed -n 's/.*documents: \([0-9]*\) begin here.*/\1/p' | awk '{ s += $1 } END { print s }')
[ "$docs" = 2000 ] || fail "--document-start 0 on 2000 zeros records $docs documents"
t "$AD" import --output "$S/none.h5" --document-start none "$SHARD" > "$S/out" 2>&1 || fail "import --document-start none: $(cat "$S/out")"
t "$AD" info "$S/none.h5" | grep -q "documents:" && fail "--document-start none still records documents"
expect_fail "outside the vocabulary" t "$AD" import --output "$S/bad.h5" --vocab 512 --document-start 600 "$S/z.npy"
pass "imports record documents: llm.c's 50256 by default, --document-start ID, none"

# Refused clearly: data without document starts (a .npy imported without --document-start) and
# synthetic data.
python_free_npy "$S/t.npy"
t "$AD" import --output "$S/imported.h5" --vocab 512 "$S/t.npy" > "$S/out" 2>&1 || fail "import .npy: $(cat "$S/out")"
grep -q "documents: not recorded" "$S/out" || fail "import of a .npy does not say it records no documents: $(cat "$S/out")"
# shellcheck disable=SC2086
expect_fail "does not record where its documents begin" t "$ACCEL_TRAIN" $model data.path="$S/imported.h5" data.document_mask=true
# shellcheck disable=SC2086
expect_fail "synthetic data has no documents" t "$ACCEL_TRAIN" $model data.path=synthetic data.document_mask=true
