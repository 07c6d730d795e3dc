#!/bin/sh
# accel launch outside Slurm: unit tests of the command building, --help, --dry-run, and real runs
# through mpirun (2 ranks, and 3 ranks on fewer cores) with the exit status passed through.
. "$top_srcdir/tests/lib.sh"
make_scratch
S=$SCRATCH
# Outside any allocation, whatever the machine running make check is.
unset SLURM_JOB_ID SLURM_JOBID SLURM_NTASKS SLURM_NPROCS SLURM_CPUS_PER_TASK SLURM_STEP_ID SLURM_PROCID

"$top_builddir/tests/check_launch" >"$S/unit.out" 2>&1 || { cat "$S/unit.out"; fail "check_launch"; }
tail -1 "$S/unit.out"

"$ACCEL" launch --help | grep -q "srun --mpi=pmix" || fail "accel launch --help does not mention srun"
expect_fail "no command to launch" "$ACCEL" launch
expect_fail "needs a Slurm allocation" "$ACCEL" launch --nodes 2 -- true

root=""; [ "$(id -u)" = 0 ] && root=" --allow-run-as-root"
out=$("$ACCEL" launch --dry-run -n 1 -- "$ACCEL_TRAIN" train.steps=3 "a b") || fail "--dry-run"
[ "$out" = "mpirun -np 1$root $ACCEL_TRAIN train.steps=3 'a b'" ] || fail "--dry-run printed '$out'"
out=$("$ACCEL" launch --dry-run -n 64 -- x) || fail "--dry-run -n 64"
case $out in "mpirun -np 64 --oversubscribe$root x") ;; *) fail "--dry-run -n 64 printed '$out'" ;; esac
pass "--dry-run prints the mpirun command (oversubscribed beyond the cores, as root: $([ -n "$root" ] && echo yes || echo no))"

# Real runs. accel launch adds --allow-run-as-root itself: drop the variables lib.sh set for mpirun.
unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
timeout -k 10 120 "$ACCEL" launch -n 2 -- "$ACCEL_TRAIN" train.steps=5 train.metrics="$S/m.jsonl" >"$S/run.out" 2>&1 \
    || { cat "$S/run.out"; fail "accel launch -n 2 accel_train"; }
grep -q "^accel launch: mpirun -np 2" "$S/run.out" || { cat "$S/run.out"; fail "command not printed"; }
grep -q "2 ranks on 1 node, launched by mpirun" "$S/run.out" || { cat "$S/run.out"; fail "not 2 ranks under mpirun"; }
[ "$(grep -c '"kind": "train"' "$S/m.jsonl")" = 5 ] || fail "expected 5 steps of metrics"
pass "accel launch -n 2 accel_train: ran under mpirun"

cores=$(nproc)
timeout -k 10 120 "$ACCEL" launch -n $((cores + 1)) -- "$ACCEL" env >"$S/env.out" 2>&1 \
    || { cat "$S/env.out"; fail "accel launch -n $((cores + 1)) accel env"; }
grep -q "$((cores + 1)) ranks on 1 node" "$S/env.out" || { cat "$S/env.out"; fail "oversubscribed run"; }
pass "accel launch -n $((cores + 1)) on $cores cores: oversubscribed run works"

timeout -k 10 60 "$ACCEL" launch -n 1 -- sh -c 'exit 7' 2>/dev/null; rc=$?
[ "$rc" = 7 ] || fail "exit status 7 came back as $rc"
timeout -k 10 60 "$ACCEL" launch -n 1 -- /nonexistent/program >/dev/null 2>&1; rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "a missing program gave exit $rc"
ACCEL_MPIRUN=/nonexistent/mpirun "$ACCEL" launch -n 1 -- true 2>"$S/err"; rc=$?
[ "$rc" = 127 ] && grep -q "cannot run '/nonexistent/mpirun'" "$S/err" || fail "missing launcher: exit $rc, $(cat "$S/err")"
pass "exit status passes through (7; missing program non-zero; missing launcher 127)"
