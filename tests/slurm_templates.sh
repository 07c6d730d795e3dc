#!/bin/sh
# The sbatch templates in slurm/, submitted unchanged to a private 2-node cluster: cpu.sbatch trains,
# preflight.sbatch passes on both nodes, gpu-multinode.sbatch runs with ACCEL_DEVICE=cpu (the nodes
# advertise stand-in GPUs), a bad key fails the job, and preemptible.sbatch checkpoints on USR1,
# requeues itself and finishes with the same model as an uninterrupted run. Jobs are polled with
# squeue in a bounded loop; each job's output file is checked.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/slurm/cluster.sh"
LOCAL_SLURM_GPUS=2 slurm_cluster_up 2 4
S=$SCRATCH
T=$top_srcdir/slurm
PATH=$top_builddir:$PATH
export PATH

submit() {   # submit NAME SBATCH-ARGS...: job id into $NAME_job
    name=$1; shift
    id=$(timeout 30 sbatch --parsable -D "$S" "$@") || fail "sbatch $*"
    eval "${name}_job=$id"
}
# check_job ID STATE FILE PATTERN...: final state and lines in the output file
check_job() {
    id=$1 want=$2 file=$3; shift 3
    st=$(slurm_wait_job "$id")
    case $st in *"JobState=$want "*) ;; *) cat "$file" 2>/dev/null; fail "job $id ($file): $st, expected $want" ;; esac
    for pat in "$@"; do
        grep -q -- "$pat" "$file" || { cat "$file"; fail "$file lacks '$pat'"; }
    done
}

# The preemption flow with the real accel_train: a small GPT, long enough to be running when the
# signal comes; its final model must equal the one an uninterrupted run produces.
PRE_ARGS="model.name=gpt data.path=synthetic model.layers=2 model.width=32 model.heads=2 model.context=16
          train.global_batch=8 train.steps=2500 train.log_every=100 train.sample_tokens=0 data.eval_samples=8"

# The preemptible job goes first: its requeue delay then overlaps the other jobs.
submit preempt "$T/preemptible.sbatch" $PRE_ARGS
submit cpu "$T/cpu.sbatch" train.steps=20 train.metrics="$S/cpu.jsonl"
submit bad "$T/cpu.sbatch" train.stepz=20
ACCEL_TEST_MAX_MIB=1 ACCEL_TEST_DIR=$S submit pre "$T/preflight.sbatch"
ACCEL_DEVICE=cpu submit multi --ntasks-per-node=2 --gpus-per-node=2 --cpus-per-task=1 --time=5 \
    "$T/gpu-multinode.sbatch" train.steps=5

# Preemption: once training is under way, send the batch shell what --signal=B:USR1 would send.
i=0
while ! grep -q "step  *[0-9]*00/2500" "$S/accel-preemptible-$preempt_job.out" 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1; i=$((i + 1))
done
grep -q "step  *[0-9]*00/2500" "$S/accel-preemptible-$preempt_job.out" || { cat "$S"/accel-preemptible-*.out; fail "preemptible job never started training"; }
scancel --batch --signal=USR1 "$preempt_job" || fail "scancel --signal=USR1"
# The requeued job may start again after the credential lifetime (LOCAL_SLURM_CRED_EXPIRE, 10 s here).

check_job "$cpu_job" COMPLETED "$S/accel-cpu-$cpu_job.out" "2 ranks on 1 node, launched by srun" "cpu (2 threads)"
[ "$(grep -c '"kind": "train"' "$S/cpu.jsonl")" = 20 ] || fail "cpu.sbatch: expected 20 steps of metrics"
pass "cpu.sbatch: 2 ranks x 2 threads trained 20 steps"
check_job "$bad_job" FAILED "$S/accel-cpu-$bad_job.out" "unknown configuration key 'train.stepz'"
pass "cpu.sbatch with a bad key: job FAILED, the output names the key"
check_job "$pre_job" COMPLETED "$S/accel-preflight-$pre_job.out" "4 ranks on 2 nodes, launched by srun" \
    "accel test: PASSED" "preflight: PASSED" "^launcher *srun (PMIx)"
pass "preflight.sbatch: accel env and accel test on 2 nodes, PASSED"
check_job "$multi_job" COMPLETED "$S/accel-multinode-$multi_job.out" "4 ranks on 2 nodes, launched by srun" "step *5/5"
pass "gpu-multinode.sbatch (ACCEL_DEVICE=cpu): 4 ranks on 2 nodes trained"

check_job "$preempt_job" COMPLETED "$S/accel-preemptible-$preempt_job.out" \
    "stop requested by a signal" "requeueing job $preempt_job" "run 2 on" \
    "resumed from $S/ckpt-$preempt_job/step-" "done: step 2500 of 2500" "accel_train finished (exit 0)"
scontrol show job "$preempt_job" | grep -q "Restarts=1" || fail "preemptible job did not restart exactly once"
# The same training without interruption, same ranks and threads: the final models are identical.
run_srun --mpi=pmix -n 2 --cpus-per-task=2 "$ACCEL_TRAIN" $PRE_ARGS ckpt.dir="$S/ref" >"$S/ref.out" 2>&1 \
    || { cat "$S/ref.out"; fail "uninterrupted reference run"; }
"$top_builddir/accel_ckpt" diff "$S/ref/step-00002500.h5" "$S/ckpt-$preempt_job/step-00002500.h5" >"$S/diff.out" \
    || { tail -5 "$S/diff.out"; fail "the preempted run's final model differs from the uninterrupted run's"; }
pass "preemptible.sbatch: USR1 -> checkpoint -> requeue -> resume; final model identical to an uninterrupted run ($(tail -1 "$S/diff.out"))"
