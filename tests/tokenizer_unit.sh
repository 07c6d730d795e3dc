#!/bin/sh
# Tokenizer unit tests (tests/check_tokenizer.c) against the Hugging Face `tokenizers` reference in
# tests/fixtures/tokenizer/ (made by tests/make_tokenizer_fixtures.sh): the fixtures are unpacked
# here (gzip), each tokenizer.json into a directory named after it, as models ship them.
. "${top_srcdir:-.}/tests/lib.sh"
PROG="$top_builddir/tests/check_tokenizer"
FIX="$top_srcdir/tests/fixtures/tokenizer"
[ -x "$PROG" ] || fail "$PROG is not built (make check builds it)"
[ -f "$FIX/text.txt.gz" ] || fail "$FIX/text.txt.gz is missing (sh tests/make_tokenizer_fixtures.sh makes it)"
rm -rf tok && mkdir tok || fail "cannot make $TEST_DIR/tok"
gzip -dc "$FIX/text.txt.gz" > tok/text.txt || fail "cannot unpack $FIX/text.txt.gz"
for f in "$FIX"/*.json.gz; do
    name=$(basename "$f" .json.gz)
    mkdir -p "tok/$name" && gzip -dc "$f" > "tok/$name/tokenizer.json" || fail "cannot unpack $f"
done
cp "$FIX"/*.expect "$FIX/cases.json" "$FIX/variants.json" tok/ || fail "cannot copy the expected ids"
cp tok/gpt2/tokenizer.json tok/gpt2-copy.json
export ACCEL_TOK_DIR="$TEST_DIR/tok"
out=$(run_mpi 1 "$PROG" 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "check_tokenizer exited $rc"
printf '%s\n' "$out" | grep -q '100%: Checks' || fail "check_tokenizer did not pass all checks"
pass "check_tokenizer"
