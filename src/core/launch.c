/* Launcher detection from environment variables alone (testable with a made-up environment).
 * srun exports SLURM_STEP_ID/SLURM_PROCID per task; Open MPI's mpirun exports OMPI_COMM_WORLD_*;
 * both export PMIX_RANK when PMIx is the wire-up. Being inside an allocation (SLURM_JOB_ID) but
 * started by mpirun counts as mpirun. */
#include "build_config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "accel/launch.h"

extern char **environ;

static const char *lookup(char *const envp[], const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* Integer value of the variable, or -1 when unset or not a number. SLURM_* counts like
 * SLURM_JOB_NUM_NODES are plain integers; SLURM_TASKS_PER_NODE ("2(x3)") is not read here. */
static long lookup_long(char *const envp[], const char *name)
{
    const char *v = lookup(envp, name);
    if (!v || !*v) return -1;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? -1 : x;
}

accel_status_t accel_launch_detect(char *const envp[], accel_launch_t *out)
{
    if (!out) return ACCEL_ERR_INVALID;
    if (!envp) envp = environ;
    memset(out, 0, sizeof *out);
    out->expected_size = -1;
    out->expected_rank = -1;
    out->slurm_job_id = lookup_long(envp, "SLURM_JOB_ID");
    if (out->slurm_job_id < 0) out->slurm_job_id = lookup_long(envp, "SLURM_JOBID");
    out->in_slurm_allocation = out->slurm_job_id >= 0;
    out->slurm_ntasks = (int)lookup_long(envp, "SLURM_NTASKS");
    if (out->slurm_ntasks < 0) out->slurm_ntasks = (int)lookup_long(envp, "SLURM_NPROCS");
    out->slurm_cpus_per_task = (int)lookup_long(envp, "SLURM_CPUS_PER_TASK");
    out->slurm_nnodes = (int)lookup_long(envp, "SLURM_JOB_NUM_NODES");
    if (out->slurm_nnodes < 0) out->slurm_nnodes = (int)lookup_long(envp, "SLURM_NNODES");
    out->pmix = lookup(envp, "PMIX_RANK") != NULL || lookup(envp, "PMIX_NAMESPACE") != NULL;

    long ompi_size = lookup_long(envp, "OMPI_COMM_WORLD_SIZE");
    long slurm_procid = lookup_long(envp, "SLURM_PROCID");
    bool srun_step = lookup(envp, "SLURM_STEP_ID") != NULL || lookup(envp, "SLURM_STEPID") != NULL;

    if (ompi_size > 0) {
        out->launcher = ACCEL_LAUNCH_MPIRUN;
        out->expected_size = (int)ompi_size;
        out->expected_rank = (int)lookup_long(envp, "OMPI_COMM_WORLD_RANK");
    } else if (srun_step && slurm_procid >= 0) {
        out->launcher = ACCEL_LAUNCH_SRUN;
        out->expected_rank = (int)slurm_procid;
        long step_tasks = lookup_long(envp, "SLURM_STEP_NUM_TASKS");
        out->expected_size = (int)(step_tasks > 0 ? step_tasks : out->slurm_ntasks);
    } else {
        out->launcher = ACCEL_LAUNCH_SINGLETON;
    }
    return ACCEL_OK;
}

const char *accel_launcher_name(accel_launcher_t launcher)
{
    switch (launcher) {
    case ACCEL_LAUNCH_SINGLETON: return "singleton";
    case ACCEL_LAUNCH_MPIRUN: return "mpirun";
    case ACCEL_LAUNCH_SRUN: return "srun";
    }
    return "?";
}
