#!/bin/sh
# accel under a real srun (private 1-node cluster): srun --mpi=pmix training gives exactly the
# losses of mpirun; accel env and accel test see the srun launch; srun --mpi=none fails with accel's
# own message, not a crash or a page from Open MPI alone.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/slurm/cluster.sh"
slurm_cluster_up 1 2
S=$SCRATCH

run_mpi 2 "$ACCEL_TRAIN" train.steps=30 train.metrics="$S/mpirun.jsonl" >"$S/mpirun.out" 2>&1 \
    || { cat "$S/mpirun.out"; fail "mpirun -np 2 accel_train"; }
run_srun --mpi=pmix -n 2 "$ACCEL_TRAIN" train.steps=30 train.metrics="$S/srun.jsonl" >"$S/srun.out" 2>&1 \
    || { cat "$S/srun.out"; fail "srun --mpi=pmix -n 2 accel_train"; }
grep -q "2 ranks on 1 node, launched by srun" "$S/srun.out" || { cat "$S/srun.out"; fail "srun run not seen as srun"; }
same_losses "$S/mpirun.jsonl" "$S/srun.jsonl" 30
pass "srun --mpi=pmix -n 2 accel_train: 30 steps, same losses and gradient norms as mpirun -np 2"

out=$(run_srun -n 2 "$ACCEL" env 2>&1) || { echo "$out"; fail "srun -n 2 accel env"; }
echo "$out" | grep -q "^launcher *srun (PMIx), Slurm job [0-9]*, SLURM_NTASKS=2" || { echo "$out"; fail "accel env: launcher line"; }
rows=$(echo "$out" | grep -cE '^  [0-9]+ +n1 +0 +[01] ')
[ "$rows" = 2 ] || { echo "$out"; fail "accel env: expected 2 rank rows on n1, got $rows"; }
pass "srun -n 2 accel env: launcher srun (MpiDefault=pmix), 2-row rank table"

out=$(run_srun --mpi=pmix -n 2 "$ACCEL" test --max-mib 1 --dir "$S" 2>&1) || { echo "$out"; fail "srun accel test"; }
echo "$out" | grep -q "accel test: PASSED" || { echo "$out"; fail "accel test did not pass"; }
pass "srun --mpi=pmix -n 2 accel test: PASSED"

expect_fail "did not join one MPI job" run_srun --mpi=none -n 2 "$ACCEL_TRAIN" train.steps=2
out=$(run_srun --mpi=none -n 2 "$ACCEL_TRAIN" train.steps=2 2>&1)
[ "$(echo "$out" | grep -c 'did not join one MPI job')" = 1 ] || { echo "$out"; fail "expected the message once (task 0)"; }
echo "$out" | grep -q "hint: launch with 'srun --mpi=pmix'" || { echo "$out"; fail "no hint"; }
echo "$out" | grep -q "OMPI was not built" && { echo "$out"; fail "Open MPI's abort came before accel's check"; }
pass "srun --mpi=none: accel's message once, with the hint, before MPI_Init"
