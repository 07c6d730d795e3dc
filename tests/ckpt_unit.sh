#!/bin/sh
# Check tests of the checkpoint library (decomposition, in-process save/load, refusals,
# find_latest, keep_last) on 1 and 2 ranks.
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
export TMPDIR="$SCRATCH"
for np in 1 2; do
    run_mpi $np "$top_builddir/tests/check_ckpt" || fail "check_ckpt on $np ranks"
    pass "check_ckpt on $np ranks"
done
