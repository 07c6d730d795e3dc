#!/bin/sh
# accel_generate --chat: the conversation is rendered with the chat template (the one a
# checkpoint of chat data keeps, or --chat-template) and tokenized without an added BOS, so a chat
# prompt feeds the model exactly the ids of the rendered text; only the reply is printed; the
# reply ends at an end-of-turn token (generation_config.json's eos_token_id, --stop); --messages
# and --system build the same conversation as the flags; a model without a template is refused.
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data"
G="$top_builddir/accel_generate"
CK="$top_builddir/accel_ckpt"
F="$top_srcdir/tests/fixtures/chat"
[ -x "$AD" ] && [ -x "$G" ] && [ -x "$CK" ] && [ -x "$ACCEL_TRAIN" ] || fail "accel_data, accel_generate, accel_ckpt or accel_train is not built"
make_scratch
S=$SCRATCH
t() { timeout -k 5 120 "$@"; }

# A tiny Llama trained a few steps on chat data (the fixture tokenizer, vocab 600), and one on text.
for k in 1 2 3 4 5 6 7 8; do cat "$F/sft_messages.jsonl"; done > "$S/chat.jsonl"
t "$AD" prepare --tokenizer "$F/tok" --chat-template "$F/templates/chatml_generation.jinja" \
    --jsonl-field messages --context 64 --output "$S/chat.h5" "$S/chat.jsonl" > "$S/p" 2>&1 || fail "prepare: $(cat "$S/p")"
awk 'BEGIN { for (i = 1; i <= 60; i++) printf "{\"text\": \"Line %d of plain text, no roles.\"}\n", i }' > "$S/text.jsonl"
t "$AD" prepare --tokenizer "$F/tok" --jsonl --context 8 --output "$S/text.h5" "$S/text.jsonl" > "$S/p" 2>&1 \
    || fail "prepare text: $(cat "$S/p")"
args="model.name=llama model.layers=2 model.heads=2 model.kv_heads=1 model.width=32 model.context=64 model.vocab=600 \
train.steps=3 train.global_batch=2 train.eval_every=0 train.sample_tokens=0"
run_mpi 1 "$ACCEL_TRAIN" $args data.path="$S/chat.h5" ckpt.dir="$S/ck" > "$S/o" 2>&1 || fail "training on chat data: $(tail -5 "$S/o")"
run_mpi 1 "$ACCEL_TRAIN" $args model.context=8 data.path="$S/text.h5" ckpt.dir="$S/ckt" > "$S/o" 2>&1 \
    || fail "training on text: $(tail -5 "$S/o")"

# The checkpoint keeps the template: a chat prompt's first logits are those of the rendered text
# given as a plain prompt. With a template that writes bos_token, the rendered text starts with
# <s>, which the plain prompt gets from the tokenizer: the same ids either way.
printf '%s' '{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}' > "$S/bos.jinja"
t "$G" "$S/ck" --chat --chat-template "$S/bos.jinja" --prompt "Hello there" -n 1 -q --logits-out "$S/chat.f32" \
    > "$S/reply" 2>"$S/err" || fail "--chat: $(cat "$S/err")"
t "$G" "$S/ck" --prompt "<|im_start|>user
Hello there<|im_end|>
<|im_start|>assistant
" -n 1 -q --logits-out "$S/plain.f32" > /dev/null 2>"$S/err" || fail "plain prompt: $(cat "$S/err")"
cmp -s "$S/chat.f32" "$S/plain.f32" || fail "a chat prompt does not feed the model the rendered text's ids"
grep -q "im_start" "$S/reply" && fail "--chat echoes the rendered prompt: $(cat "$S/reply")"
pass "--chat renders the conversation (BOS from the template, not added twice); only the reply is printed"

# The template kept with the checkpoint (chatml_generation), and --messages/--system agree with it.
t "$G" "$S/ck" --chat --system "Be brief." --prompt "Hi" -n 4 -q --logits-out "$S/a.f32" > "$S/ra" 2>"$S/err" \
    || fail "--chat with the kept template: $(cat "$S/err")"
printf '%s\n' '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]' > "$S/conv.json"
t "$G" "$S/ck" --messages "$S/conv.json" -n 4 -q --logits-out "$S/b.f32" > "$S/rb" 2>"$S/err" \
    || fail "--messages: $(cat "$S/err")"
cmp -s "$S/a.f32" "$S/b.f32" && cmp -s "$S/ra" "$S/rb" || fail "--messages and --system/--prompt give different prompts"
printf '%s\n' '[{"role": "system", "content": "Be brief."}]' > "$S/sys.json"
t "$G" "$S/ck" --messages "$S/sys.json" --prompt "Hi" -n 4 -q --logits-out "$S/c.f32" > /dev/null 2>"$S/err" \
    || fail "--messages with --prompt: $(cat "$S/err")"
cmp -s "$S/a.f32" "$S/c.f32" || fail "--messages then --prompt is not the same conversation"
t "$G" "$S/ck" --chat --prompt "Hi" -n 1 > /dev/null 2>"$S/err" || fail "--chat: $(cat "$S/err")"
grep -q "chat: the conversation rendered with .*; the reply ends at.* <|im_end|> (id [0-9]*)" "$S/err" \
    || fail "the template's end of turn <|im_end|> is not a stop token: $(grep chat: "$S/err")"
pass "the checkpoint's template, its end of turn (<|im_end|>) a stop token; --messages FILE, --system and --prompt build the same conversation"

# End of turn: the first greedy token made an end-of-turn token ends the reply before it is
# printed (the output is the final newline alone), from generation_config.json's eos_token_id (an
# HF export) and from --stop.
first=$(od -An -v -f "$S/chat.f32" | tr -s ' ' '\n' | sed '/^$/d' |
        awk 'NR == 1 || $1 > m { m = $1; i = NR - 1 } END { print i }')
[ -n "$first" ] || fail "cannot read the first logits"
t "$CK" export "$S/ck/$(cat "$S/ck/latest")" --format hf --output "$S/hf" > "$S/e" 2>&1 || fail "export hf: $(cat "$S/e")"
t "$G" "$S/hf" --chat --chat-template "$S/bos.jinja" --prompt "Hello there" -n 5 -q > "$S/r1" 2>"$S/err" \
    || fail "--chat on the export: $(cat "$S/err")"
[ "$(wc -c < "$S/r1")" -gt 1 ] || fail "no reply before the stop token is set"
printf '{"eos_token_id": [3, %s]}\n' "$first" > "$S/hf/generation_config.json"
t "$G" "$S/hf" --chat --chat-template "$S/bos.jinja" --prompt "Hello there" -n 5 -q > "$S/r2" 2>"$S/err" \
    || fail "--chat with eos_token_id: $(cat "$S/err")"
[ "$(wc -c < "$S/r2")" -eq 1 ] || fail "the reply did not end at eos_token_id $first: '$(od -c "$S/r2")'"
pass "the reply ends at generation_config.json's eos_token_id (id $first), not printed"
t "$G" "$S/ck" --chat --prompt "Hi" --stop "<nope>" -n 2 -q > /dev/null 2>"$S/err" && fail "--stop with an unknown token accepted"
grep -q "is not a token of tokenizer" "$S/err" || fail "--stop <nope>: $(cat "$S/err")"
t "$G" "$S/ck" --chat --prompt "Hi" --stop "<|im_end|>" -n 2 -q > /dev/null 2>"$S/err" || fail "--stop <|im_end|>: $(cat "$S/err")"

# --interactive: each line a user message. The first turn is the one-shot chat's; /reset starts
# over; a second turn sees the first reply (its logits differ from the same message alone); a
# message that does not fit the context is dropped and the conversation goes on.
t "$G" "$S/ck" --chat --prompt "Hello there" -n 3 -q --logits-out "$S/one.f32" > /dev/null 2>"$S/err" || fail "one-shot: $(cat "$S/err")"
t "$G" "$S/ck" --chat --prompt "Bye" -n 3 -q --logits-out "$S/bye.f32" > /dev/null 2>"$S/err" || fail "one-shot: $(cat "$S/err")"
printf 'Hello there\n' | t "$G" "$S/ck" --interactive -n 3 -q --logits-out "$S/i1.f32" > /dev/null 2>"$S/err" \
    || fail "--interactive: $(cat "$S/err")"
cmp -s "$S/i1.f32" "$S/one.f32" || fail "--interactive's first turn is not the one-shot chat"
printf 'Hello there' > "$S/first.txt"
t "$G" "$S/ck" --interactive --prompt-file "$S/first.txt" -n 3 -q --logits-out "$S/pf.f32" < /dev/null > /dev/null 2>"$S/err" \
    || fail "--interactive --prompt-file: $(cat "$S/err")"
cmp -s "$S/pf.f32" "$S/one.f32" || fail "--interactive --prompt-file: the file is not the first message"
printf 'Hi\n/reset\nHello there\n' | t "$G" "$S/ck" --interactive -n 3 -q --logits-out "$S/i2.f32" > /dev/null 2>"$S/err" \
    || fail "--interactive /reset: $(cat "$S/err")"
tail -c "$(wc -c < "$S/one.f32")" "$S/i2.f32" | cmp -s - "$S/one.f32" || fail "/reset does not start a new conversation"
printf 'Hi\nBye\n' | t "$G" "$S/ck" --interactive -n 3 -q --logits-out "$S/i3.f32" > /dev/null 2>"$S/err" \
    || fail "--interactive two turns: $(cat "$S/err")"
tail -c "$(wc -c < "$S/bye.f32")" "$S/i3.f32" | cmp -s - "$S/bye.f32" && fail "the second turn does not see the first"
long=$(awk 'BEGIN { for (i = 0; i < 200; i++) printf "word%d ", i }')
printf '%s\nHello there\n' "$long" | t "$G" "$S/ck" --interactive -n 3 -q --logits-out "$S/i4.f32" > /dev/null 2>"$S/err" \
    || fail "--interactive with a long message: $(cat "$S/err")"
grep -q "the message is dropped" "$S/err" || fail "a message past the context is not dropped: $(cat "$S/err")"
cmp -s "$S/i4.f32" "$S/one.f32" || fail "after a dropped message the conversation is not as before"
pass "--interactive: first turn = one-shot chat, /reset, the second turn sees the first, a message past the context dropped"

# Refusals: no template, a bad conversation file, --chat without a message, --chat with --score.
t "$G" "$S/ckt" --chat --prompt "Hi" -n 2 -q model.context=64 > /dev/null 2>"$S/err" && fail "--chat without a template accepted"
grep -q "keeps no chat template" "$S/err" && grep -q -- "--chat-template" "$S/err" || fail "no template: $(cat "$S/err")"
printf '{"role": "user"}\n' > "$S/bad.json"
t "$G" "$S/ck" --messages "$S/bad.json" -n 2 -q > /dev/null 2>"$S/err" && fail "--messages with an object accepted"
grep -q "not a list" "$S/err" || fail "--messages object: $(cat "$S/err")"
t "$G" "$S/ck" --chat -n 2 -q > /dev/null 2>"$S/err" && fail "--chat without a message accepted"
grep -q "needs the user's message" "$S/err" || fail "--chat alone: $(cat "$S/err")"
t "$G" "$S/ck" --chat --score "$S/bad.json" -q > /dev/null 2>"$S/err" && fail "--chat --score accepted"
pass "refused: no chat template (names --chat-template), --messages not a list, --chat without a message, --chat --score"
