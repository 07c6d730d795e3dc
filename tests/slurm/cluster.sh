# Shared helpers for the Slurm tests (sourced after tests/lib.sh): bring a private cluster up with
# tests/slurm/local-slurm.sh, tear it down on exit whatever happens, and bound every srun/sbatch.
#   slurm_cluster_up NODES CPUS     skips (77) when not root or the daemons are missing
#   run_srun ARGS...                timeout + srun -t 2
#   slurm_wait_job JOBID [SECONDS]  poll squeue until the job left it; prints its final state
#   losses FILE                     "step loss grad_norm" lines of a metrics file

LOCAL_SLURM=$top_srcdir/tests/slurm/local-slurm.sh
SLURM_STEP_TIMEOUT=${ACCEL_SLURM_TIMEOUT:-120}

slurm_cleanup() {
    rc=$?
    trap - EXIT INT TERM
    if [ -n "${LOCAL_SLURM_DIR:-}" ] && [ -d "$LOCAL_SLURM_DIR" ]; then
        if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
            echo "--- cluster logs (last lines) ---"
            tail -n 15 "$LOCAL_SLURM_DIR"/log/*.log 2>/dev/null
        fi
        "$LOCAL_SLURM" down
    fi
    [ -n "${SCRATCH:-}" ] && rm -rf "$SCRATCH"
    exit "$rc"
}

slurm_cluster_up() {
    [ "$(id -u)" = 0 ] || skip "the local Slurm cluster needs root (slurmd runs job steps as their user)"
    for b in slurmctld slurmd munged mungekey srun sbatch squeue; do
        command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] \
            || skip "$b not found (Debian: apt-get install slurm-wlm munge)"
    done
    # Not inside someone's allocation: our srun/salloc must talk to our cluster only.
    unset SLURM_JOB_ID SLURM_JOBID SLURM_NTASKS SLURM_NPROCS SLURM_NNODES SLURM_JOB_NUM_NODES \
        SLURM_CPUS_PER_TASK SLURM_STEP_ID SLURM_PROCID SLURM_NODELIST SLURM_JOB_NODELIST
    SCRATCH=$(mktemp -d /tmp/accel-slurm.XXXXXX)
    chmod 755 "$SCRATCH"
    LOCAL_SLURM_DIR=$SCRATCH/cluster
    export LOCAL_SLURM_DIR
    trap slurm_cleanup EXIT
    trap 'exit 130' INT TERM
    t0=$(date +%s%N)
    LOCAL_SLURM_NODES=$1 LOCAL_SLURM_CPUS=$2 "$LOCAL_SLURM" up || fail "local Slurm cluster did not come up"
    eval "$("$LOCAL_SLURM" env)"
    echo "cluster up ($1 node(s) x $2 CPUs) in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

run_srun() {
    timeout -k 5 "$SLURM_STEP_TIMEOUT" srun -t 2 "$@"
}

slurm_wait_job() {
    job=$1
    limit=${2:-$SLURM_STEP_TIMEOUT}
    i=0
    while [ "$i" -lt $((limit * 5)) ]; do
        state=$(squeue -h -j "$job" -o %T 2>/dev/null)
        [ -z "$state" ] && break
        sleep 0.2
        i=$((i + 1))
    done
    if [ -n "$state" ]; then
        scancel "$job"
        fail "job $job still $state after ${limit}s"
    fi
    scontrol show job "$job" 2>/dev/null | tr ' ' '\n' | grep -E '^(JobState|ExitCode)=' | tr '\n' ' '
}

losses() {
    sed -n 's/^{"step": \([0-9]*\), "kind": "train", "loss": \([^,]*\), "lr": [^,]*, "grad_norm": \([^,]*\),.*/\1 \2 \3/p' "$1"
}

# same_losses A B STEPS: both metrics files hold STEPS identical (step, loss, grad-norm) lines.
same_losses() {
    losses "$1" >"$1.l"
    losses "$2" >"$2.l"
    [ "$(wc -l <"$1.l")" = "$3" ] || fail "$1 holds $(wc -l <"$1.l") steps, expected $3"
    cmp -s "$1.l" "$2.l" || { diff "$1.l" "$2.l" | head -20; fail "losses differ: $1 vs $2"; }
}
