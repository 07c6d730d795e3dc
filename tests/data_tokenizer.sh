#!/bin/sh
# accel_data with a real Hugging Face tokenizer.json (tests/fixtures/data/tinybpe: a tiny byte-level
# BPE with a BOS token, made by tests/make_data_fixtures.sh with the `tokenizers` library, which
# also stored the ids it gives): prepare of JSON Lines and of a text file must give exactly those
# ids with BOS before every document; the dataset records the tokenizer's name and hash (xxh64 of
# tokenizer.json) and keeps its bytes; import --tokenizer records it for pre-tokenized input.
# Conversations (tests/fixtures/chat) keep the chat template they were rendered with, byte for
# byte; files without conversations keep none.
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data"
TD="$top_builddir/tests/token_dump"
F="$top_srcdir/tests/fixtures/data"
TOK="$F/tinybpe"
[ -x "$AD" ] && [ -x "$TD" ] || fail "accel_data or tests/token_dump is not built"
[ -f "$TOK/tokenizer.json" ] || fail "fixtures missing in $F (tests/make_data_fixtures.sh makes them)"
why=$("$TD" --tokenizer "$TOK") || fail "accel_tokenizer_load($TOK) failed: $why"
make_scratch
S=$SCRATCH
t() { timeout -k 5 60 "$@"; }
same_stream() {
    t "$TD" "$1" "$S/got.u32" > "$S/dump" 2>&1 || fail "token_dump $1: $(cat "$S/dump")"
    cmp "$S/got.u32" "$2" > "$S/cmp" 2>&1 || fail "$1 does not hold the ids of $(basename "$2"): $(cat "$S/cmp")"
}
hash=$(cat "$TOK/XXH64")

# JSON Lines: BOS (id 0) before every document, then the document's ids as HF encodes them
out=$(t "$AD" prepare --jsonl --tokenizer "$TOK" --output "$S/docs.h5" --context 4 --val-fraction 0.2 "$F/docs.jsonl") \
    || fail "prepare --jsonl --tokenizer: $out"
printf '%s\n' "$out" | grep -q 'each document is preceded by BOS (id 0)' || fail "separator rule not printed: $out"
same_stream "$S/docs.h5" "$F/docs.jsonl.tinybpe.u32"
grep -qi "vocab 400 tokenizer tinybpe hash $hash json 1" "$S/dump" || fail "tokenizer not recorded: $(cat "$S/dump") (hash $hash)"
t "$TD" --json "$S/docs.h5" "$S/kept.json" || fail "no tokenizer.json kept"
cmp "$S/kept.json" "$TOK/tokenizer.json" || fail "the kept tokenizer.json differs from the file"
info=$(t "$AD" info "$S/docs.h5") || fail "info: $info"
printf '%s\n' "$info" | grep -q "tokenizer: tinybpe, vocab 400, stored as 2-byte integers (uint16)" || fail "info: $info"
printf '%s\n' "$info" | grep -qi "tokenizer hash: $hash" || fail "info hash: $info"
printf '%s\n' "$info" | grep -q "tokenizer.json: kept in the file ($(wc -c < "$TOK/tokenizer.json") bytes" || fail "info json: $info"
pass "JSON Lines + tokenizer.json: HF ids with BOS per document; name, hash, bytes recorded"

# a text file is one document; the tokenizer file itself (not its directory) works too
t "$AD" prepare --tokenizer "$TOK/tokenizer.json" --output "$S/text.h5" --context 2 "$F/text.txt" > "$S/out" 2>&1 \
    || fail "prepare text --tokenizer: $(cat "$S/out")"
same_stream "$S/text.h5" "$F/text.txt.tinybpe.u32"
pass "text file + tokenizer.json: HF ids with BOS"

# pre-tokenized ids with --tokenizer: the stream kept, the tokenizer recorded
t "$AD" import --tokenizer "$TOK" --output "$S/ids.h5" --context 4 "$F/tinybpe_ids.npy" > "$S/out" 2>&1 \
    || fail "import --tokenizer: $(cat "$S/out")"
same_stream "$S/ids.h5" "$F/tinybpe_ids.npy.u32"
grep -qi "vocab 400 tokenizer tinybpe hash $hash json 1" "$S/dump" || fail "import: tokenizer not recorded: $(cat "$S/dump")"
expect_fail "is >= vocab 400" t "$AD" import --tokenizer "$TOK" --output "$S/x.h5" "$F/u16.npy"
expect_fail "--vocab 500 disagrees with tokenizer tinybpe (vocab 400)" t "$AD" import --tokenizer "$TOK" --vocab 500 --output "$S/x.h5" "$F/tinybpe_ids.npy"
# a text file that is not UTF-8 is refused where it breaks
printf 'valid start \377 then a bad byte\n' > "$S/latin1.txt"
expect_fail "invalid UTF-8 at byte offset 12" t "$AD" prepare --tokenizer "$TOK" --output "$S/x.h5" "$S/latin1.txt"
pass "import --tokenizer; token >= tokenizer vocab, invalid UTF-8 refused"

# conversations: the chat template travels with the data (then checkpoints and exports)
CF="$top_srcdir/tests/fixtures/chat"
CT="$CF/templates/chatml_generation.jinja"
t "$AD" prepare --tokenizer "$CF/tok" --chat-template "$CT" --jsonl-field messages --context 8 \
    --output "$S/chat.h5" "$CF/sft_messages.jsonl" > "$S/out" 2>&1 || fail "prepare of conversations: $(cat "$S/out")"
rm -f "$S/kept.jinja"
t "$TD" --chat-template "$S/chat.h5" "$S/kept.jinja" || fail "the conversations' dataset keeps no chat template"
cmp "$S/kept.jinja" "$CT" || fail "the kept chat template differs from $CT"
info=$(t "$AD" info "$S/chat.h5") || fail "info: $info"
printf '%s\n' "$info" | grep -q "chat template: kept in the file ($(wc -c < "$CT") bytes, dataset /chat_template)" ||
    fail "info does not say the chat template is kept: $info"
t "$TD" --chat-template "$S/docs.h5" "$S/none.jinja"; rc=$?
[ "$rc" -eq 3 ] || fail "a dataset without conversations: token_dump --chat-template exited $rc, not 3 (none kept)"
t "$AD" info "$S/docs.h5" | grep -q "chat template" && fail "info names a chat template for a file without one"
pass "conversations: the dataset keeps the chat template byte for byte; other files keep none"
exit 0
