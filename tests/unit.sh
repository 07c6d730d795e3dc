#!/bin/sh
# Unit tests of the core layer, as a singleton MPI process.
. "$top_srcdir/tests/lib.sh"
exec timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/tests/check_core"
