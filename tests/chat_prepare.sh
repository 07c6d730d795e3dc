#!/bin/sh
# accel_data prepare on conversations (src/data/chat.c, jinja.c, corpus.c): TRL "messages" lines and
# conversational prompt/completion lines are rendered with a Hugging Face chat template and tokenized
# whole, and the loss mask trains the assistant's text (the template's {% generation %} blocks, else
# what each assistant message adds), or the completion. Checked against transformers' ids and
# assistant masks (tests/fixtures/chat, made by tests/make_chat_fixtures.sh): the four fixture
# streams exactly; the template found in a tokenizer directory (chat_template.jinja, or the
# "chat_template" of tokenizer_config.json); --train-on all; the trained count accel_data info
# reports; bad input refused clearly with no output left behind; and a short masked training run.
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data"
F="$top_srcdir/tests/fixtures/chat"
TOK="$F/tok"
[ -x "$AD" ] && [ -x "$ACCEL_TRAIN" ] || fail "accel_data or accel_train is not built"
command -v h5dump >/dev/null || fail "h5dump (hdf5-tools) is missing"
[ -f "$F/sft_messages.chatml.u32" ] || fail "fixtures missing in $F (tests/make_chat_fixtures.sh makes them)"
make_scratch
S=$SCRATCH
t() { timeout -k 5 60 "$@"; }
# nums TYPE: od's numbers (TYPE u1, u2, u4; little-endian as h5dump -b LE and the fixtures are), one a line
nums() { od -An -v --endian=little -t"$1" | tr -s ' ' '\n' | sed '/^$/d'; }
# same_as FILE NAME: FILE's tokens (uint16) and loss mask, /train then /val, are fixture NAME's
same_as() {
    { h5_values "$1" /train/tokens u2; h5_values "$1" /val/tokens u2; } > "$S/got_tok"
    { h5_values "$1" /train/loss_mask u1; h5_values "$1" /val/loss_mask u1; } > "$S/got_mask"
    nums u4 < "$F/$2.u32" > "$S/want_tok"
    nums u1 < "$F/$2.mask" > "$S/want_mask"
    cmp -s "$S/got_tok" "$S/want_tok" || fail "$1: the token ids are not transformers' ($2.u32: $(wc -l < "$S/want_tok") ids, got $(wc -l < "$S/got_tok"))"
    cmp -s "$S/got_mask" "$S/want_mask" || fail "$1: the loss mask is not transformers' assistant mask ($2.mask)"
}
# info_trained FILE: the trained tokens accel_data info counts, /train + /val
info_trained() {
    t "$AD" info "$1" > "$S/info" 2>&1 || fail "info $1: $(cat "$S/info")"
    sed -n 's/.*loss mask: \([0-9]*\) of the tokens are trained.*/\1/p' "$S/info" | awk '{ s += $1 } END { print s + 0 }'
}
# refused WORDS CMD...: CMD exits non-zero (not by a signal or timeout), prints every '|'-separated
# piece of WORDS, and leaves nothing in $S/out (no dataset, no temporary file).
mkdir -p "$S/out"
O="$S/out/x.h5"
refused() {
    want=$1; shift
    out=$(t "$@" 2>&1); rc=$?
    [ "$rc" -ne 0 ] || fail "expected a refusal from: $* (got exit 0)"
    [ "$rc" -lt 124 ] || fail "'$*' crashed or hung (exit $rc): $out"
    set -f; oldifs=$IFS; IFS='|'
    for w in $want; do
        printf '%s\n' "$out" | grep -qF -- "$w" || { IFS=$oldifs; set +f; fail "'$*' did not say '$w'; it said: $out"; }
    done
    IFS=$oldifs; set +f
    [ -z "$(ls -A "$S/out")" ] || fail "a refused prepare left $(ls -A "$S/out") behind: $*"
    echo "ok: refused (exit $rc): $(printf '%s\n' "$out" | grep 'accel_data prepare:' | head -1)"
}

# 1+4. The four fixture streams: exactly transformers' ids and masks, all of /train then /val; and
# accel_data info counts the mask's ones as the trained tokens.
check_fixture() {               # NAME TEMPLATE JSONL ARGS...
    name=$1 tpl=$2 jsonl=$3; shift 3
    out=$(t "$AD" prepare --tokenizer "$TOK" --chat-template "$F/templates/$tpl.jinja" "$@" --context 4 \
        --output "$S/$name.h5" "$F/$jsonl") || fail "prepare $name: $out"
    printf '%s\n' "$out" | grep -q "accel-tokens v2" || fail "$name: a masked file is not version 2: $out"
    same_as "$S/$name.h5" "$name"
}
check_fixture sft_messages.chatml_generation chatml_generation sft_messages.jsonl --jsonl-field messages
printf '%s\n' "$out" | grep -qF "conversations: rendered with $F/templates/chatml_generation.jinja; trained: the assistant messages (the template's {% generation %} blocks)" \
    || fail "the progress line is not the generation rule: $out"
check_fixture sft_messages.chatml chatml sft_messages.jsonl --jsonl-field messages
printf '%s\n' "$out" | grep -qF "conversations: rendered with $F/templates/chatml.jinja; trained: the assistant messages (what each adds" \
    || fail "the progress line is not the prefix rule: $out"
check_fixture sft_messages.llama3 llama3 sft_messages.jsonl --jsonl-field messages
check_fixture sft_pc.chatml chatml sft_pc.jsonl --prompt-field prompt --jsonl-field completion
printf '%s\n' "$out" | grep -qF "conversations: rendered with $F/templates/chatml.jinja; trained: the completion" \
    || fail "the progress line is not the completion rule: $out"
pass "messages x chatml_generation/chatml/llama3 and prompt/completion x chatml: ids and masks are transformers'"

# An NFC-normalizing tokenizer (as Qwen2's) with decomposed characters: the tokens' bytes add up to
# the normalized text, and the masks are still transformers' (a "\n\n\n" token straddles each
# assistant header and its answer).
out=$(t "$AD" prepare --tokenizer "$F/tok_nfc" --chat-template "$F/templates/chatml_generation.jinja" \
    --jsonl-field messages --context 2 --output "$S/nfc.h5" "$F/sft_nfc.jsonl") || fail "prepare nfc: $out"
same_as "$S/nfc.h5" sft_nfc.chatml_generation
pass "an NFC tokenizer and decomposed characters: ids and masks are transformers'"

summary=""
for name in sft_messages.chatml_generation sft_messages.chatml sft_messages.llama3 sft_pc.chatml; do
    ones=$(nums u1 < "$F/$name.mask" | grep -c '^1$')
    got=$(info_trained "$S/$name.h5")
    [ "$got" = "$ones" ] || fail "info counts $got trained tokens in $name, its mask has $ones ones: $(cat "$S/info")"
    grep -q "format: accel-tokens, version 2" "$S/info" || fail "info $name: $(cat "$S/info")"
    summary="$summary $name $ones/$(wc -c < "$F/$name.mask");"
done
pass "accel_data info counts the mask's ones as trained tokens:$summary"

# 2. The template from the tokenizer directory: chat_template.jinja; tokenizer_config.json's
# "chat_template" (written here with awk, a JSON string); both (chat_template.jinja wins, as in
# transformers); and --chat-template naming the directory or its tokenizer_config.json.
cp -r "$TOK" "$S/tjinja"
cp "$F/templates/chatml_generation.jinja" "$S/tjinja/chat_template.jinja"
# json_string FILE: the file's text as a JSON string literal
json_string() {
    awk 'BEGIN { printf "\"" }
         { for (i = 1; i <= length($0); i++) { c = substr($0, i, 1)
               if (c == "\\") printf "%s", "\\\\"; else if (c == "\"") printf "%s", "\\\""
               else if (c == "\t") printf "%s", "\\t"; else printf "%s", c }
           printf "%s", "\\n" }
         END { printf "\"" }' "$1"
}
with_template() {               # CONFIG JINJA: CONFIG plus "chat_template": JINJA's text
    { echo '{'; printf ' "chat_template": %s,\n' "$(json_string "$2")"; sed 1d "$1"; }
}
head -1 "$TOK/tokenizer_config.json" | grep -qx '{' || fail "tok/tokenizer_config.json does not start with a line '{'"
cp -r "$TOK" "$S/tconfig"
with_template "$TOK/tokenizer_config.json" "$F/templates/chatml_generation.jinja" > "$S/tconfig/tokenizer_config.json"
cp -r "$S/tjinja" "$S/tboth"
with_template "$TOK/tokenizer_config.json" "$F/templates/llama3.jinja" > "$S/tboth/tokenizer_config.json"
for case in "tjinja:--tokenizer $S/tjinja:$S/tjinja/chat_template.jinja" \
            "tconfig:--tokenizer $S/tconfig:$S/tconfig/tokenizer_config.json" \
            "tboth:--tokenizer $S/tboth:$S/tboth/chat_template.jinja" \
            "cdir:--tokenizer $TOK --chat-template $S/tconfig:$S/tconfig/tokenizer_config.json" \
            "cfile:--tokenizer $TOK --chat-template $S/tconfig/tokenizer_config.json:$S/tconfig/tokenizer_config.json"; do
    name=${case%%:*}; rest=${case#*:}; args=${rest%%:*}; origin=${rest#*:}
    # shellcheck disable=SC2086
    out=$(t "$AD" prepare $args --jsonl-field messages --context 4 --output "$S/$name.h5" "$F/sft_messages.jsonl") \
        || fail "prepare $args: $out"
    printf '%s\n' "$out" | grep -qF "conversations: rendered with $origin; trained: the assistant messages (the template's {% generation %} blocks)" \
        || fail "$args: the progress line does not name $origin: $out"
    same_as "$S/$name.h5" sft_messages.chatml_generation
done
pass "the tokenizer directory's chat_template.jinja, or its tokenizer_config.json \"chat_template\": the same ids and mask as --chat-template, the origin printed"

# 3. --train-on all: every token trained. The file has no loss mask at all (accel-tokens version 1,
# readable by versions without masks) rather than a mask of all ones; either form would do, the test
# takes whichever it finds. The ids are those of the assistant-masked file.
out=$(t "$AD" prepare --tokenizer "$TOK" --chat-template "$F/templates/chatml.jinja" --jsonl-field messages \
    --train-on all --context 16 --output "$S/all.h5" "$F/sft_messages.jsonl") || fail "prepare --train-on all: $out"
printf '%s\n' "$out" | grep -qF "conversations: rendered with $F/templates/chatml.jinja; trained: every token (--train-on all)" \
    || fail "--train-on all: the progress line: $out"
{ h5_values "$S/all.h5" /train/tokens u2; h5_values "$S/all.h5" /val/tokens u2; } > "$S/got_tok"
nums u4 < "$F/sft_messages.chatml.u32" | cmp -s - "$S/got_tok" || fail "--train-on all changes the token ids"
if t h5dump -H -d /train/loss_mask "$S/all.h5" > /dev/null 2>&1; then
    { h5_values "$S/all.h5" /train/loss_mask u1; h5_values "$S/all.h5" /val/loss_mask u1; } | grep -qv '^1$' \
        && fail "--train-on all: the mask has untrained tokens"
    form="a mask of all ones"
else
    t h5dump -H -d /val/loss_mask "$S/all.h5" > /dev/null 2>&1 && fail "--train-on all: /val has a mask, /train none"
    printf '%s\n' "$out" | grep -q "accel-tokens v1" || fail "--train-on all without a mask is not version 1: $out"
    t "$AD" info "$S/all.h5" > "$S/info" 2>&1 || fail "info: $(cat "$S/info")"
    grep -q "format: accel-tokens, version 1" "$S/info" || fail "info --train-on all: $(cat "$S/info")"
    grep -q "loss mask" "$S/info" && fail "info shows a loss mask in a file without one: $(cat "$S/info")"
    form="no mask, version 1"
fi
pass "--train-on all: all $(wc -l < "$S/got_tok") tokens trained ($form)"

# 5. Refusals: a non-zero exit, a message naming the problem, and no output file.
cp -r "$TOK" "$S/notemplate"
refused "sft_messages.jsonl:1|holds a conversation|no chat template|--chat-template" \
    "$AD" prepare --jsonl-field messages --context 2 --output "$O" "$F/sft_messages.jsonl"
refused "sft_messages.jsonl:1|$S/notemplate has no chat template|--chat-template" \
    "$AD" prepare --tokenizer "$S/notemplate" --jsonl-field messages --context 2 --output "$O" "$F/sft_messages.jsonl"
printf '%s\n' "{{- messages[0].content }}" "{% raw %}{{ x }}{% endraw %}" > "$S/raw.jinja"
refused "raw.jinja: line 2|{% raw %} is not supported" "$AD" prepare --tokenizer "$TOK" --chat-template "$S/raw.jinja" \
    --jsonl-field messages --context 2 --output "$O" "$F/sft_messages.jsonl"
printf '%s\n' "{% macro m() %}{{ caller() }}{% endmacro %}" "" "{% call m() %}x{% endcall %}" > "$S/call.jinja"
refused "call.jinja: line 3|{% call %} is not supported" "$AD" prepare --tokenizer "$TOK" --chat-template "$S/call.jinja" \
    --jsonl-field messages --context 2 --output "$O" "$F/sft_messages.jsonl"
{ head -1 "$F/sft_pc.jsonl"; echo '{"prompt": "What colour is the sky?", "completion": [{"role": "assistant", "content": "Blue."}]}'; } > "$S/strprompt.jsonl"
refused "strprompt.jsonl:2|\"prompt\") is a string|\"completion\") is an array" "$AD" prepare --tokenizer "$TOK" \
    --chat-template "$F/templates/chatml.jinja" --prompt-field prompt --jsonl-field completion --context 2 \
    --output "$O" "$S/strprompt.jsonl"
echo '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]}' > "$S/user.jsonl"
echo '{"messages": [{"role": "user", "content": "Still no answer"}]}' >> "$S/user.jsonl"
refused "no conversation has a token to train|--train-on all" "$AD" prepare --tokenizer "$TOK" \
    --chat-template "$F/templates/chatml.jinja" --jsonl-field messages --context 2 --output "$O" "$S/user.jsonl"
echo '{"messages": []}' > "$S/empty.jsonl"
refused "empty.jsonl:1|the conversation is empty" "$AD" prepare --tokenizer "$TOK" \
    --chat-template "$F/templates/chatml.jinja" --jsonl-field messages --context 2 --output "$O" "$S/empty.jsonl"
{ head -2 "$F/sft_messages.jsonl"; echo '{"messages": [{"content": "Hello"}, {"role": "assistant", "content": "Hi"}]}'; } > "$S/norole.jsonl"
refused "norole.jsonl:3|message 1 has no string \"role\"" "$AD" prepare --tokenizer "$TOK" \
    --chat-template "$F/templates/chatml.jinja" --jsonl-field messages --context 2 --output "$O" "$S/norole.jsonl"
refused "--chat-var 'enable_thinking' is not NAME=VALUE" "$AD" prepare --tokenizer "$TOK" \
    --chat-template "$F/templates/chatml.jinja" --chat-var enable_thinking --jsonl-field messages --context 2 \
    --output "$O" "$F/sft_messages.jsonl"
refused "--train-on 'everything' is not assistant or all" "$AD" prepare --tokenizer "$TOK" \
    --chat-template "$F/templates/chatml.jinja" --train-on everything --jsonl-field messages --context 2 \
    --output "$O" "$F/sft_messages.jsonl"
# A template that shows the reasoning of the assistant's turns after the last user message only (as
# Qwen3's does): the first turn renders differently once the second follows, so it is trained from
# its generation prompt to the end of its turn (<|im_end|>\n) in the whole conversation. A template
# that writes nothing after a turn cannot be split so, and is refused naming the message.
cat > "$S/think.jinja" <<'EOF'
{%- set ns = namespace(last_user=-1) %}
{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last_user = loop.index0 %}{%- endif %}{%- endfor %}
{%- for m in messages %}
    {{- '<|im_start|>' + m.role + '\n' }}
    {%- if m.role == 'assistant' and loop.index0 > ns.last_user and m.reasoning_content is defined %}
        {{- '<think>\n' + m.reasoning_content + '\n</think>\n\n' }}
    {%- endif %}
    {{- m.content + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
EOF
sed "s/ + '<|im_end|>\\\\n'//" "$S/think.jinja" > "$S/bare.jinja"
grep -q "im_end" "$S/bare.jinja" && fail "bare.jinja still ends turns: $(cat "$S/bare.jinja")"
echo '{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello", "reasoning_content": "greet back"}, {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Goodbye", "reasoning_content": "say farewell"}]}' > "$S/think.jsonl"
out=$(t "$AD" prepare --tokenizer "$TOK" --chat-template "$S/think.jinja" --jsonl-field messages --context 2 \
    --val-fraction 0.2 --output "$S/think.h5" "$S/think.jsonl") || fail "prepare with think.jinja: $out"
printf '%s\n' "$out" | grep -q "note: 1 assistant message(s) are rendered differently once later messages follow" \
    || fail "the end-of-turn rule is not reported: $out"
# trained: "Hello<|im_end|>\n" and the last turn's "<think>...</think>\n\nGoodbye<|im_end|>\n"
{ h5_values "$S/think.h5" /train/loss_mask u1; h5_values "$S/think.h5" /val/loss_mask u1; } > "$S/tm"
[ "$(grep -c 1 "$S/tm")" -gt 4 ] || fail "think.jinja: too few trained tokens"
refused "think.jsonl:1|bare.jinja renders the conversation before message 2 (assistant) differently once later messages follow|writes nothing after an assistant's turn|--train-on all" \
    "$AD" prepare --tokenizer "$TOK" --chat-template "$S/bare.jinja" --jsonl-field messages --context 2 \
    --output "$O" "$S/think.jsonl"
out=$(t "$AD" prepare --tokenizer "$TOK" --chat-template "$S/bare.jinja" --jsonl-field messages --train-on all \
    --context 2 --val-fraction 0.2 --output "$S/bare.h5" "$S/think.jsonl") || fail "--train-on all with bare.jinja: $out"
# the whole rendering, with the last turn's reasoning only (the template's own output)
n=$(t "$AD" info "$S/bare.h5" | sed -n 's/^\(train\|val\) *: \([0-9]*\) tokens.*/\2/p' | awk '{ s += $1 } END { print s + 0 }')
[ "$n" -gt 20 ] || fail "--train-on all with bare.jinja wrote $n tokens"
pass "refused with the problem named and no file left: no template (bytes, a tokenizer without one), {% raw %}, {% call %}, string prompt + list completion, no assistant message, empty conversation, no role, --chat-var without '=', bad --train-on, a turn rendered differently later with no end of turn (accepted with --train-on all: $n tokens); with an end of turn, it is trained to it"

# 6. Training on the chat dataset: the mask is read (the loss is the mean over the assistant's tokens),
# so step 1 differs from training on the same ids with every token trained (--train-on all, same
# seed and batches); both start near ln(600) = 6.4 per token.
t "$AD" prepare --tokenizer "$TOK" --chat-template "$F/templates/chatml_generation.jinja" --jsonl-field messages \
    --context 16 --output "$S/chat16.h5" "$F/sft_messages.jsonl" > "$S/out16" 2>&1 || fail "prepare --context 16: $(cat "$S/out16")"
args="model.name=gpt model.layers=2 model.heads=2 model.width=32 model.context=16 model.vocab=600 \
train.steps=6 train.global_batch=8 optim.lr=3e-3 train.eval_every=3 train.sample_tokens=0"
run_mpi 1 "$ACCEL_TRAIN" $args data.path="$S/chat16.h5" train.metrics="$S/m.jsonl" > "$S/o" 2>&1 \
    || fail "train on the chat dataset: $(tail -5 "$S/o")"
grep -q "data: a loss mask trains" "$S/o" || fail "accel_train does not say it reads the loss mask: $(grep 'data:' "$S/o")"
grep -q "step *6/6 *loss [0-9]" "$S/o" || fail "no loss printed for step 6: $(tail -5 "$S/o")"
grep -q "done: step 6 of 6" "$S/o" || fail "the run did not finish: $(tail -5 "$S/o")"
[ "$(grep -c '"kind": "train"' "$S/m.jsonl")" -eq 6 ] || fail "metrics: not 6 train steps: $(cat "$S/m.jsonl")"
run_mpi 1 "$ACCEL_TRAIN" $args data.path="$S/all.h5" train.metrics="$S/mall.jsonl" > "$S/oall" 2>&1 \
    || fail "train on the --train-on all dataset: $(tail -5 "$S/oall")"
grep -q "data: a loss mask" "$S/oall" && fail "a file without a mask is trained as masked: $(grep 'data:' "$S/oall")"
l1=$(grep -m1 '"kind": "train"' "$S/m.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
la=$(grep -m1 '"kind": "train"' "$S/mall.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
l6=$(grep '"kind": "train"' "$S/m.jsonl" | tail -1 | sed 's/.*"loss": \([^,]*\),.*/\1/')
awk -v a="$l1" -v b="$la" -v c="$l6" 'BEGIN { d = a - b; if (d < 0) d = -d;
    exit !(a > 5.5 && a < 7.5 && b > 5.5 && b < 7.5 && c > 0 && c < 7.5 && d > 1e-4) }' \
    || fail "step-1 loss $l1 (assistant tokens) vs $la (every token), step 6 $l6: not a masked mean near ln(600)"
pass "training on the chat dataset reads the mask: step-1 loss $l1 over the assistant's tokens ($la over every token), step 6 $l6"
exit 0
