#!/bin/sh
# accel launch inside a Slurm allocation (salloc on a private 2-node cluster): it builds
# srun --mpi=pmix with the allocation's tasks, honours -n/--nodes, and passes the exit status through.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/slurm/cluster.sh"
slurm_cluster_up 2 2
S=$SCRATCH
run_salloc() { timeout -k 5 "$SLURM_STEP_TIMEOUT" salloc -t 2 "$@"; }

out=$(run_salloc -n 3 "$ACCEL" launch --dry-run -- "$ACCEL_TRAIN" train.steps=5 2>"$S/err") \
    || { cat "$S/err"; fail "salloc accel launch --dry-run"; }
[ "$out" = "srun --mpi=pmix -n 3 $ACCEL_TRAIN train.steps=5" ] || fail "--dry-run in an allocation printed '$out'"
out=$(run_salloc -n 2 -c 2 "$ACCEL" launch --dry-run --nodes 2 -- x 2>"$S/err") || { cat "$S/err"; fail "salloc -c 2"; }
[ "$out" = "srun --mpi=pmix -n 2 -N 2 --cpus-per-task=2 x" ] || fail "--dry-run with -c 2 printed '$out'"
pass "--dry-run in an allocation: srun --mpi=pmix with the allocation's tasks and CPUs per task"

run_salloc -N 2 -n 4 "$ACCEL" launch -- "$ACCEL" env >"$S/env4.out" 2>&1 || { cat "$S/env4.out"; fail "accel launch accel env"; }
grep -q "^accel launch: srun --mpi=pmix -n 4 " "$S/env4.out" || { cat "$S/env4.out"; fail "command not printed"; }
grep -q "4 ranks on 2 nodes, launched by srun" "$S/env4.out" || { cat "$S/env4.out"; fail "not 4 ranks on 2 nodes"; }
pass "salloc -N 2 -n 4 accel launch accel env: 4 ranks on 2 nodes through srun"

run_salloc -N 2 -n 4 "$ACCEL" launch -n 2 --nodes 2 -- "$ACCEL_TRAIN" train.steps=5 train.metrics="$S/m.jsonl" \
    >"$S/train.out" 2>&1 || { cat "$S/train.out"; fail "accel launch -n 2 --nodes 2 accel_train"; }
grep -q "2 ranks on 2 nodes, launched by srun" "$S/train.out" || { cat "$S/train.out"; fail "not 2 ranks on 2 nodes"; }
[ "$(grep -c '"kind": "train"' "$S/m.jsonl")" = 5 ] || fail "expected 5 steps of metrics"
pass "accel launch -n 2 --nodes 2 accel_train inside a 4-task allocation: 2 ranks, one per node"

# From a shell inside a one-task step (like srun --pty bash): --overlap, else srun would wait forever.
run_salloc -n 2 srun -n 1 "$ACCEL" launch -n 2 -- "$ACCEL" env >"$S/step.out" 2>&1 || { cat "$S/step.out"; fail "launch inside a step"; }
grep -q "^accel launch: srun --mpi=pmix --overlap -n 2 " "$S/step.out" || { cat "$S/step.out"; fail "no --overlap inside a step"; }
grep -q "2 ranks on 1 node, launched by srun" "$S/step.out" || { cat "$S/step.out"; fail "inside a step: not 2 ranks"; }
expect_fail "one of the 2 tasks of a job step" run_salloc -n 2 srun -n 2 "$ACCEL" launch -n 2 -- true
pass "inside a job step: --overlap; under a multi-task srun: refused"

run_salloc -n 1 "$ACCEL" launch -- sh -c 'exit 5' >/dev/null 2>&1; rc=$?
[ "$rc" = 5 ] || fail "exit status 5 came back as $rc"
pass "exit status passes through srun and salloc"
