#!/bin/sh
# Every collective, dtype and operation on 4 ranks (oversubscribed), and 2 pretend nodes.
. "$top_srcdir/tests/lib.sh"
run_mpi 4 "$top_builddir/tests/check_comm" || fail "collective tests on 4 ranks"
