#!/bin/sh
# Unit tests of the arena layer (tests/check_arena.c), as a singleton MPI process.
. "$top_srcdir/tests/lib.sh"
exec timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/tests/check_arena"
