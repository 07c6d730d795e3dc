#!/bin/sh
# `accel env` reports versions, launcher, a rank table from every rank, environment and file system.
. "$top_srcdir/tests/lib.sh"
out=$("$ACCEL" env 2>&1) || fail "accel env (singleton): $out"
for want in "MPI  " "HDF5 " "parallel: yes" "PMIx " "NCCL " "CUDA " "launcher         singleton" "working dir" " on "; do
    echo "$out" | grep -qF -- "$want" || fail "accel env lacks '$want': $out"
done
out=$(run_mpi 2 "$ACCEL" env 2>&1) || fail "accel env on 2 ranks: $out"
echo "$out" | grep -q "launcher         mpirun" || fail "launcher not detected as mpirun: $out"
echo "$out" | grep -q "accel: 2 ranks on 1 node" || fail "no 2-rank table: $out"
echo "$out" | grep -qE "^  1 +[^ ]+ +0 +1 " || fail "rank 1 missing from the table: $out"
echo "$out" | grep -q "OMPI_COMM_WORLD_SIZE=2" || fail "OMPI_* variables not listed"
CUDA_VISIBLE_DEVICES=3 "$ACCEL" env | grep -q "CUDA_VISIBLE_DEVICES=3" || fail "CUDA_VISIBLE_DEVICES not listed"
"$ACCEL" --help | grep -q "env" || fail "accel --help"
expect_fail "unknown command 'bogus'" "$ACCEL" bogus
pass "accel env"
