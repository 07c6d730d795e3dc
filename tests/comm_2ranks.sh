#!/bin/sh
# Every collective, dtype and operation (and again with the ring's blocks cut small) on 2 ranks, plus the timeout abort.
. "$top_srcdir/tests/lib.sh"
run_mpi 2 "$top_builddir/tests/check_comm" || fail "collective tests on 2 ranks"
# Every collective through the ring, each block cut into messages of 24 bytes (a block past 1 GiB
# travels as several: MPI counts are ints): the same results.
ACCEL_RING_MIN_BYTES=0 ACCEL_RING_MAX_MESSAGE=24 run_mpi 2 "$top_builddir/tests/check_comm" ||
    fail "collective tests on 2 ranks, ring messages of 24 bytes"
pass "collectives on 2 ranks with the ring's blocks in 24-byte messages"
# A rank that never joins: the others report the collective and abort the job (exit != 0) quickly.
start=$(date +%s)
out=$(run_mpi 2 "$top_builddir/tests/check_comm" --hang 2>&1); rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || fail "the hang demo exited 0"
echo "$out" | grep -q "timed out after .* in barrier" || fail "no timeout message naming the barrier: $out"
[ "$elapsed" -lt 50 ] || fail "timeout took ${elapsed}s to abort the job"
pass "timeout: job aborted after ${elapsed}s with: $(echo "$out" | grep 'timed out' | head -1)"
