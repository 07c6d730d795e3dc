#!/bin/sh
# Chat-template unit tests (tests/check_chat.c) against transformers' renderings in
# tests/fixtures/chat/ (made by tests/make_chat_fixtures.sh).
. "${top_srcdir:-.}/tests/lib.sh"
PROG="$top_builddir/tests/check_chat"
FIX="$top_srcdir/tests/fixtures/chat"
[ -x "$PROG" ] || fail "$PROG is not built (make check builds it)"
[ -f "$FIX/expected.json" ] || fail "$FIX/expected.json is missing (sh tests/make_chat_fixtures.sh makes it)"
export ACCEL_CHAT_DIR="$FIX"
out=$(run_mpi 1 "$PROG" 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "check_chat exited $rc"
printf '%s\n' "$out" | grep -q '100%: Checks' || fail "check_chat did not pass all checks"
pass "check_chat"
