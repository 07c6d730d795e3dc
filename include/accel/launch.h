/* How this process was launched (srun with PMIx, mpirun, or a plain singleton), decided from the
 * environment alone so it can be tested with any given environment. */
#ifndef ACCEL_LAUNCH_H
#define ACCEL_LAUNCH_H

#include "accel/status.h"

typedef enum {
    ACCEL_LAUNCH_SINGLETON = 0,     /* ./accel_train, no launcher */
    ACCEL_LAUNCH_MPIRUN,            /* Open MPI's mpirun/mpiexec (PRRTE/ORTE) */
    ACCEL_LAUNCH_SRUN,              /* Slurm's srun (PMIx, or PMI2) */
} accel_launcher_t;

typedef struct {
    accel_launcher_t launcher;
    int expected_size;              /* world size the launcher promised, -1 if unknown */
    int expected_rank;              /* this process's rank per the launcher, -1 if unknown */
    int slurm_ntasks;               /* SLURM_NTASKS (or SLURM_NPROCS), -1 if unset */
    int slurm_cpus_per_task;        /* SLURM_CPUS_PER_TASK, -1 if unset */
    int slurm_nnodes;               /* SLURM_JOB_NUM_NODES / SLURM_NNODES, -1 if unset */
    long slurm_job_id;              /* SLURM_JOB_ID, -1 if unset */
    int in_slurm_allocation;        /* SLURM_JOB_ID set (inside salloc/sbatch), even without srun */
    int pmix;                       /* PMIX_RANK / PMIX_NAMESPACE present */
} accel_launch_t;

/* Decide from envp ("KEY=VALUE" strings, NULL-terminated; NULL = the process environment). */
accel_status_t accel_launch_detect(char *const envp[], accel_launch_t *out);

const char *accel_launcher_name(accel_launcher_t launcher);

#endif
