#!/bin/sh
# Check tests of the HDF5 layer (src/h5: attributes, atomic publication, signature probe), on 1 and
# 2 ranks (each rank in its own directory: the helpers are local, the runs must not collide).
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
export TMPDIR="$SCRATCH"
for np in 1 2; do
    run_mpi $np "$top_builddir/tests/check_h5" || fail "check_h5 on $np ranks"
    pass "check_h5 on $np ranks"
done
