/* accel_train: the main job. Launched as a singleton, with mpirun -np N, or with srun.
 *   accel_train [config.yaml] [key=value ...] */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: accel_train [options] [config.yaml] [key=value ...]\n"
            "\n"
            "Train a model data-parallel over the MPI ranks it was launched with:\n"
            "  accel_train                                   one process, built-in defaults\n"
            "  mpirun -np 4 accel_train job.yaml             four ranks on this machine\n"
            "  srun --mpi=pmix accel_train job.yaml          the tasks of a Slurm allocation\n"
            "\n"
            "The configuration is the YAML file, then key=value overrides (train.steps=500),\n"
            "then ACCEL_* variables (ACCEL_TRAIN_STEPS=500). 'accel config --defaults' prints\n"
            "every key with its default and meaning.\n"
            "\n"
            "options:\n"
            "  -h, --help          this help\n"
            "  -V, --version       print the version\n"
            "  --print-config      print the effective configuration and exit\n"
            "\n"
            "exit status: 0 done; 2 bad configuration or input; 3 stopped by SIGUSR1/SIGTERM after\n"
            "writing a checkpoint (requeue and run again with resume=auto); 1 any other failure\n");
}

int main(int argc, char **argv)
{
    accel_blas_fixup(argc, argv);
    const char *path = NULL;
    bool print_only = false;
    char **overrides = calloc((size_t)argc + 1, sizeof *overrides);
    int noverrides = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
            printf("accel_train (accel) %s\n", accel_version());
            return 0;
        }
        if (!strcmp(argv[i], "--print-config")) { print_only = true; continue; }
        if (argv[i][0] == '-') {
            fprintf(stderr, "accel_train: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (accel_config_is_override(argv[i])) overrides[noverrides++] = argv[i];
        else if (!path) path = argv[i];
        else {
            fprintf(stderr, "accel_train: more than one configuration file ('%s' and '%s')\n", path, argv[i]);
            return 2;
        }
    }

    accel_runtime_t *rt = NULL;
    accel_train_result_t result = { 0 };
    accel_status_t st = accel_init(&argc, &argv, &rt);
    accel_config_t cfg;
    char err[1024];
    if (st == ACCEL_OK) {
        st = accel_config_load(&cfg, path, noverrides, overrides, NULL, err, sizeof err);
        /* Every rank reads the same inputs and fails the same way; one message is enough. */
        if (st != ACCEL_OK) ACCEL_ERROR0("%s", err);
    }
    /* train.init_from: the model keys come from the weights' stored configuration. */
    if (st == ACCEL_OK && cfg.train.init_from[0]) {
        st = accel_trainer_init_config(&cfg, err, sizeof err);
        if (st != ACCEL_OK) ACCEL_ERROR0("%s", err);
    }
    if (st == ACCEL_OK && print_only) {
        if (rt->rank == 0) accel_config_print(&cfg, stdout);
        goto out;
    }
    if (st == ACCEL_OK) st = accel_runtime_configure(rt, &cfg);
    if (st == ACCEL_OK) st = accel_device_setup(rt, &cfg);
    if (st == ACCEL_OK) st = accel_trainer_plan_batch(rt, &cfg);
    if (st == ACCEL_OK) {
        if (rt->rank == 0) {
            printf("accel %s: effective configuration%s%s\n", accel_version(), path ? " from " : "",
                   path ? path : " (built-in defaults)");
            accel_config_print(&cfg, stdout);
            fflush(stdout);
        }
        st = accel_runtime_print_table(rt, stdout);
    }
    accel_trainer_t *trainer = NULL;
    if (st == ACCEL_OK) st = accel_trainer_create(rt, &cfg, &trainer);
    if (st == ACCEL_OK) {
        st = accel_trainer_run(trainer, &result);
        /* A failure inside the loop may be on this rank alone while the others wait in a
         * collective: take the whole job down rather than leave them hanging. */
        if (st != ACCEL_OK && rt->size > 1) {
            ACCEL_ERROR("training failed on this rank: %s; aborting the job", accel_status_str(st));
            accel_abort(accel_status_exit_code(st));
        }
    }
    accel_trainer_destroy(trainer);
out:
    if (st != ACCEL_OK) ACCEL_ERROR0("accel_train failed: %s", accel_status_str(st));
    free(overrides);
    accel_finalize(rt);
    if (st == ACCEL_OK && result.checkpoint_failed) return 1;
    /* Stopped by Slurm's warning signal with the state saved: ask the job script to requeue. */
    if (st == ACCEL_OK && result.signalled && cfg.ckpt.dir[0]) return ACCEL_EXIT_REQUEUE;
    return accel_status_exit_code(st);
}
