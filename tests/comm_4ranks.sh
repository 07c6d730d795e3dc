#!/bin/sh
# Every collective, dtype and operation (and again with the ring's blocks cut small) on 4 ranks (oversubscribed), and 2 pretend nodes.
. "$top_srcdir/tests/lib.sh"
run_mpi 4 "$top_builddir/tests/check_comm" || fail "collective tests on 4 ranks"
# Every collective through the ring, each block cut into messages of 24 bytes (a block past 1 GiB
# travels as several: MPI counts are ints): the same results.
ACCEL_RING_MIN_BYTES=0 ACCEL_RING_MAX_MESSAGE=24 run_mpi 4 "$top_builddir/tests/check_comm" ||
    fail "collective tests on 4 ranks, ring messages of 24 bytes"
pass "collectives on 4 ranks with the ring's blocks in 24-byte messages"
