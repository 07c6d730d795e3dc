#!/bin/sh
# Fine-tuning on prompt/completion pairs: accel_data prepare --prompt-field writes a loss mask that
# trains the completions only (checked byte by byte with the byte tokenizer, and by token counts
# with a real tokenizer.json that adds BOS and EOS), the same file whatever --buffer spills; training
# averages over the trained tokens of each global batch, so the losses do not depend on how the
# batch is cut into ranks and micro-batches (the gradient-accumulation normalisation Hugging Face
# fixed in transformers 4.46), and bad input is refused clearly. Conversations rendered with a chat
# template keep it through training: every checkpoint stores it, and the exports carry it
# (chat_template.jinja of a Hugging Face directory) byte for byte, also through train.init_from.
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data"
TOK="$top_srcdir/tests/fixtures/data/tinybpe"
[ -x "$AD" ] && [ -x "$ACCEL_TRAIN" ] || fail "accel_data or accel_train is not built"
command -v h5dump >/dev/null || fail "h5dump (hdf5-tools) is missing"
make_scratch
S=$SCRATCH
t() { timeout -k 5 120 "$@"; }

# 300 lines of arithmetic: {"prompt": "Q: a+b=", "completion": " c."} (ASCII: one byte per char)
awk 'BEGIN { for (i = 0; i < 300; i++) { a = (i * 37) % 100; b = (i * 11) % 100;
        printf "{\"prompt\": \"Q: %d+%d=\", \"completion\": \" %d.\"}\n", a, b, a + b } }' > "$S/sft.jsonl"

# Byte tokenizer: the stream is prompt bytes then completion bytes, line by line, and the mask is 0
# for every prompt byte, 1 for every completion byte.
out=$(t "$AD" prepare --prompt-field prompt --jsonl-field completion --context 16 --output "$S/sft.h5" \
    "$S/sft.jsonl") || fail "prepare --prompt-field: $out"
printf '%s\n' "$out" | grep -q "each line is prompt, document; only the document is trained" \
    || fail "the prompt rule is not printed: $out"
printf '%s\n' "$out" | grep -q "accel-tokens v2" || fail "a masked file is not version 2: $out"
awk -F'"' '{ for (k = 1; k <= length($4); k++) print 0; for (k = 1; k <= length($8); k++) print 1 }' \
    "$S/sft.jsonl" > "$S/want_mask"
awk -F'"' '{ printf "%s%s", $4, $8 }' "$S/sft.jsonl" | od -An -v -tu1 | tr -s ' ' '\n' | sed '/^$/d' > "$S/want_tok"
{ h5_values "$S/sft.h5" /train/loss_mask; h5_values "$S/sft.h5" /val/loss_mask; } > "$S/got_mask"
{ h5_values "$S/sft.h5" /train/tokens; h5_values "$S/sft.h5" /val/tokens; } > "$S/got_tok"
cmp -s "$S/got_mask" "$S/want_mask" || fail "the loss mask is not 0 per prompt byte, 1 per completion byte"
cmp -s "$S/got_tok" "$S/want_tok" || fail "the tokens are not the prompt and completion bytes"
trained=$(grep -c 1 "$S/want_mask")
info=$(t "$AD" info "$S/sft.h5") || fail "info: $info"
printf '%s\n' "$info" | grep -q "format: accel-tokens, version 2" || fail "info version: $info"
got=$(printf '%s\n' "$info" | sed -n 's/.*loss mask: \([0-9]*\) of the tokens are trained.*/\1/p' | awk '{ s += $1 } END { print s }')
[ "$got" = "$trained" ] || fail "info counts $got trained tokens, the file has $trained: $info"
pass "prompt/completion with bytes: tokens and mask exact ($trained of $(wc -l < "$S/want_mask") tokens trained)"

# A tiny --buffer spills tokens and mask to temporary files: the same datasets.
t "$AD" prepare --prompt-field prompt --jsonl-field completion --context 16 --buffer 100 \
    --output "$S/spill.h5" "$S/sft.jsonl" > "$S/out" 2>&1 || fail "prepare --buffer 100: $(cat "$S/out")"
for d in /train/tokens /train/loss_mask /val/tokens /val/loss_mask; do
    [ "$(h5_values "$S/spill.h5" $d | cksum)" = "$(h5_values "$S/sft.h5" $d | cksum)" ] || fail "--buffer 100 changes $d"
done
pass "a spilled stream gives the same tokens and mask"

# A tokenizer with BOS and EOS: each line is BOS, prompt, completion, EOS; BOS and prompt are
# context, completion and EOS trained. The prompt and completion are tokenized on their own, so
# the counts are those of preparing the prompts and the completions alone (BOS before each).
cut -d'"' -f1-5 "$S/sft.jsonl" | sed 's/, *$/}/' > "$S/prompts.jsonl"
sed 's/"prompt": "[^"]*", //' "$S/sft.jsonl" > "$S/completions.jsonl"
ntok() { t "$AD" info "$1" | sed -n 's/^\(train\|val\) *: \([0-9]*\) tokens.*/\2/p' | awk '{ s += $1 } END { print s }'; }
t "$AD" prepare --tokenizer "$TOK" --prompt-field prompt --jsonl-field completion --context 16 \
    --output "$S/bpe.h5" "$S/sft.jsonl" > "$S/out" 2>&1 || fail "prepare with tinybpe: $(cat "$S/out")"
grep -q "each line is BOS (id 0), prompt, document, EOS (id 1); only the document and EOS are trained" "$S/out" \
    || fail "BOS/EOS rule: $(cat "$S/out")"
t "$AD" prepare --tokenizer "$TOK" --jsonl-field prompt --context 4 --output "$S/p.h5" "$S/prompts.jsonl" > "$S/out" 2>&1 \
    || fail "prepare prompts: $(cat "$S/out")"
t "$AD" prepare --tokenizer "$TOK" --jsonl-field completion --context 4 --output "$S/c.h5" "$S/completions.jsonl" > "$S/out" 2>&1 \
    || fail "prepare completions: $(cat "$S/out")"
np=$(ntok "$S/p.h5"); nc=$(ntok "$S/c.h5"); nb=$(ntok "$S/bpe.h5")
[ "$nb" -eq $((np + nc)) ] || fail "BOS+prompt+completion+EOS per line should be $np + $nc tokens, the file has $nb"
bt=$(t "$AD" info "$S/bpe.h5" | sed -n 's/.*loss mask: \([0-9]*\) of.*/\1/p' | awk '{ s += $1 } END { print s }')
[ "$bt" -eq "$nc" ] || fail "completion+EOS should train $nc tokens (the completions with one separator each), the mask trains $bt"
h5_values "$S/bpe.h5" /train/tokens | head -1 | grep -qx 0 || fail "the stream does not start with BOS"
h5_values "$S/bpe.h5" /train/loss_mask | head -1 | grep -qx 0 || fail "BOS is trained"
pass "tinybpe: BOS, prompt, completion, EOS per line; $bt of $nb tokens trained"

# Training: the loss is the mean over the trained tokens of the global batch. At initialisation it is
# about ln(256) = 5.5 per token (a mean over all tokens would give a quarter of that), and the same
# on 1 rank, with 4 micro-batches accumulated, and on 2 ranks.
args="model.name=gpt model.layers=2 model.heads=2 model.width=32 model.context=16 data.path=$S/sft.h5 \
train.steps=12 train.global_batch=8 optim.lr=3e-3 train.eval_every=6 train.sample_tokens=0 log.level=warn"
run_mpi 1 "$ACCEL_TRAIN" $args train.metrics="$S/m1.jsonl" > "$S/o1" 2>&1 || fail "train on 1 rank: $(tail -3 "$S/o1")"
run_mpi 1 "$ACCEL_TRAIN" $args train.grad_accum=4 train.metrics="$S/m1k.jsonl" > "$S/o1k" 2>&1 || fail "train grad_accum=4: $(tail -3 "$S/o1k")"
run_mpi 2 "$ACCEL_TRAIN" $args train.metrics="$S/m2.jsonl" > "$S/o2" 2>&1 || fail "train on 2 ranks: $(tail -3 "$S/o2")"
first=$(grep -m1 '"kind": "train"' "$S/m1.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
awk -v l="$first" 'BEGIN { exit !(l > 5.0 && l < 6.0) }' || fail "step 1 loss $first is not a mean over the trained tokens (about 5.5)"
compare_losses "$S/m1.jsonl" "$S/m1k.jsonl" 1e-5 12 || fail "grad_accum=4 changes the masked losses"
compare_losses "$S/m1.jsonl" "$S/m2.jsonl" 1e-5 12 || fail "2 ranks change the masked losses"
for m in m1k m2; do
    e1=$(grep '"kind": "eval"' "$S/m1.jsonl" | sed 's/.*"eval_loss": \([^,]*\),.*/\1/' | tr '\n' ' ')
    e=$(grep '"kind": "eval"' "$S/$m.jsonl" | sed 's/.*"eval_loss": \([^,]*\),.*/\1/' | tr '\n' ' ')
    awk -v a="$e1" -v b="$e" 'BEGIN { n = split(a, x, " "); split(b, y, " "); if (n < 2) exit 1;
        for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > 1e-5 * x[i]) exit 1 } }' \
        || fail "held-out losses differ ($m): $e1 vs $e"
done
pass "masked training: step-1 loss $first per trained token; the same on 1 rank, grad_accum=4 and 2 ranks"

# A plugin that does not read loss masks trains on the plain file and is refused the masked one.
U="$top_builddir/tests/.libs/unigram_plugin.so"
[ -f "$U" ] || fail "tests/unigram_plugin.so is not built"
awk -F'"' '{ printf "{\"text\": \"%s%s\"}\n", $4, $8 }' "$S/sft.jsonl" > "$S/plain.jsonl"
t "$AD" prepare --jsonl --context 16 --output "$S/plain.h5" "$S/plain.jsonl" > "$S/out" 2>&1 || fail "prepare plain: $(cat "$S/out")"
uargs="model.plugin=$U model.context=16 train.steps=3 train.global_batch=4 train.sample_tokens=0"
run_mpi 1 "$ACCEL_TRAIN" $uargs data.path="$S/plain.h5" > "$S/u" 2>&1 || fail "the unigram plugin on plain data: $(tail -3 "$S/u")"
expect_fail "has a loss mask (prompt/completion data), which model 'unigram' does not read" \
    "$ACCEL_TRAIN" $uargs data.path="$S/sft.h5"

# Conversations: the template the data keeps goes into the checkpoints (2 ranks: rank 0's is
# broadcast) and out with every export, byte for byte.
CF="$top_srcdir/tests/fixtures/chat"
CT="$CF/templates/chatml_generation.jinja"
CK="$top_builddir/accel_ckpt"
ctbytes=$(wc -c < "$CT")
t "$AD" prepare --tokenizer "$CF/tok" --chat-template "$CT" --jsonl-field messages --context 8 \
    --output "$S/chat.h5" "$CF/sft_messages.jsonl" > "$S/out" 2>&1 || fail "prepare of conversations: $(cat "$S/out")"
cargs="model.name=gpt model.vocab=600 model.layers=1 model.heads=2 model.width=16 model.context=8 \
train.global_batch=4 train.sample_tokens=0 log.level=warn"
rm -rf "$S/ck"
run_mpi 2 "$ACCEL_TRAIN" $cargs data.path="$S/chat.h5" train.steps=2 ckpt.dir="$S/ck" ckpt.every=2 > "$S/oc" 2>&1 ||
    fail "training on conversations: $(tail -3 "$S/oc")"
c="$S/ck/step-00000002.h5"
t "$CK" info "$c" > "$S/info" 2>&1 && grep -q "chat template: *kept ($ctbytes bytes, /meta/chat_template)" "$S/info" ||
    fail "the checkpoint does not keep the chat template: $(cat "$S/info")"
t "$CK" verify "$c" > "$S/v" 2>&1 || fail "verify of a checkpoint with a chat template: $(cat "$S/v")"
t "$CK" export "$c" --format hf --output "$S/chat.hf" > "$S/out" 2>&1 || fail "export --format hf: $(cat "$S/out")"
cmp "$S/chat.hf/chat_template.jinja" "$CT" || fail "export --format hf: chat_template.jinja differs from $CT"
t "$CK" export "$c" --format hdf5 --output "$S/chat.model.h5" > "$S/out" 2>&1 &&
    t "$CK" export "$S/chat.model.h5" --format hf --output "$S/chat2.hf" > "$S/out" 2>&1 ||
    fail "export hdf5, then hf: $(cat "$S/out")"
cmp "$S/chat2.hf/chat_template.jinja" "$CT" || fail "the hdf5 export lost the chat template"
t "$CK" export "$c" --format safetensors --output "$S/chat.safetensors" > "$S/out" 2>&1 ||
    fail "export --format safetensors: $(cat "$S/out")"
grep -q accel_chat_template "$S/chat.safetensors" || fail "the safetensors export has no accel_chat_template"
pass "conversations: the checkpoint keeps the chat template; hf, hdf5 and safetensors exports carry it"

# Data without a template (plain text, the same tokenizer) on weights that keep one
# (train.init_from=the safetensors export): the checkpoints keep the weights' template, also after
# a resume.
t "$AD" prepare --tokenizer "$CF/tok" --jsonl --context 8 --output "$S/plaintok.h5" "$S/plain.jsonl" > "$S/out" 2>&1 ||
    fail "prepare plain text with the chat tokenizer: $(cat "$S/out")"
rm -rf "$S/ck2"
run_mpi 1 "$ACCEL_TRAIN" train.init_from="$S/chat.safetensors" data.path="$S/plaintok.h5" train.steps=2 \
    train.global_batch=4 train.sample_tokens=0 ckpt.dir="$S/ck2" ckpt.every=2 > "$S/oi" 2>&1 ||
    fail "init_from the safetensors export: $(tail -3 "$S/oi")"
grep -q "chat template: the data keeps none; checkpoints keep train.init_from's ($ctbytes bytes)" "$S/oi" ||
    fail "init_from: the weights' chat template is not taken: $(cat "$S/oi")"
run_mpi 1 "$ACCEL_TRAIN" train.init_from="$S/chat.safetensors" data.path="$S/plaintok.h5" train.steps=3 \
    train.global_batch=4 train.sample_tokens=0 ckpt.dir="$S/ck2" ckpt.every=1 resume=auto > "$S/or" 2>&1 ||
    fail "resume: $(tail -3 "$S/or")"
t "$CK" export "$S/ck2/step-00000003.h5" --format hf --output "$S/init.hf" > "$S/out" 2>&1 ||
    fail "export of the resumed run: $(cat "$S/out")"
cmp "$S/init.hf/chat_template.jinja" "$CT" || fail "init_from + resume: the chat template did not travel"
pass "train.init_from: data without a template keeps the weights' one, through a resume"

# Bad input.
expect_fail "must differ from the document field" "$AD" prepare --prompt-field text --output "$S/x.h5" "$S/sft.jsonl"
expect_fail "is empty" "$AD" prepare --prompt-field "" --output "$S/x.h5" "$S/sft.jsonl"
{ head -2 "$S/sft.jsonl"; echo '{"completion": " 3."}'; } > "$S/noprompt.jsonl"
expect_fail "noprompt.jsonl:3: no field \"prompt\"" "$AD" prepare --prompt-field prompt --jsonl-field completion \
    --output "$S/x.h5" --context 2 "$S/noprompt.jsonl"
{ head -2 "$S/sft.jsonl"; echo '{"prompt": 7, "completion": " 3."}'; } > "$S/numprompt.jsonl"
expect_fail "numprompt.jsonl:3: field \"prompt\" is an integer" "$AD" prepare --prompt-field prompt \
    --jsonl-field completion --output "$S/x.h5" --context 2 "$S/numprompt.jsonl"
sed 's/"completion": "[^"]*"/"completion": ""/' "$S/sft.jsonl" > "$S/empty.jsonl"
expect_fail "nothing would be trained" "$AD" prepare --prompt-field prompt --jsonl-field completion \
    --output "$S/x.h5" "$S/empty.jsonl"
[ ! -e "$S/x.h5" ] || fail "a refused prepare left $S/x.h5 behind"
exit 0
