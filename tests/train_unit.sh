#!/bin/sh
# Unit tests of the train layer (tests/check_train.c), as a singleton MPI process.
. "$top_srcdir/tests/lib.sh"
exec timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/tests/check_train"
