/* The training loop behind accel_train: data-parallel steps with gradient accumulation, gradient
 * averaging over one flat buffer, clipping, the optimizer and progress/metrics output. */
#ifndef ACCEL_TRAINER_H
#define ACCEL_TRAINER_H

#include "accel/config.h"
#include "accel/runtime.h"
#include "accel/status.h"

typedef struct accel_trainer accel_trainer_t;

/* Exit status of accel_train after SIGUSR1/SIGTERM stopped it and the checkpoint was written:
 * "requeue me" for the sbatch templates (resume=auto continues from that checkpoint). */
#define ACCEL_EXIT_REQUEUE 3

typedef struct {
    int steps;                      /* optimizer steps taken */
    double last_loss;               /* mean training loss of the last step */
    double first_loss;
    double seconds;
    long skipped;                   /* fp16 steps skipped for overflow */
    bool stopped;                   /* a stop trigger or signal ended training early */
    bool signalled;                 /* ... and it was SIGUSR1/SIGTERM (preemption, time limit) */
    bool checkpoint_failed;         /* the final checkpoint could not be written */
    double peak_bytes;              /* peak resident memory above start-up, max over ranks */
    double bytes_per_step;          /* model-state bytes this rank sent per step */
} accel_train_result_t;

/* train.init_from: take the model keys (model.*) from the configuration stored with those weights
 * (checkpoint, export, import, or a Hugging Face config.json). A model key the job set to something
 * else is refused naming the key and both values (err receives the message); a llama's
 * model.context is the job's choice. Local: call it on every rank before accel_trainer_create,
 * which then loads the weights (unless resume finds a checkpoint: resume wins, with a note). */
accel_status_t accel_trainer_init_config(accel_config_t *cfg, char *err, size_t errlen);

/* The micro-batch (src/train/plan.c): train.micro_batch=N sets train.grad_accum to make up the
 * global batch; train.micro_batch=auto picks the largest micro-batch whose estimated peak memory
 * (accel estimate-memory's) fits train.memory_limit (default: the GPU's memory, or the node's
 * divided by its ranks), prints the choice, and sets train.micro_batch and train.grad_accum.
 * Collective; call it on every rank after accel_device_setup and before accel_trainer_create. */
accel_status_t accel_trainer_plan_batch(const accel_runtime_t *rt, accel_config_t *cfg);

accel_status_t accel_trainer_create(accel_runtime_t *rt, const accel_config_t *cfg,
                                    accel_trainer_t **out);
accel_status_t accel_trainer_run(accel_trainer_t *trainer, accel_train_result_t *result);
void accel_trainer_destroy(accel_trainer_t *trainer);

/* Raise the stop trigger from this rank (e.g. early stopping): every rank stops together at the
 * end of the current step, without deadlock. SIGUSR1 and SIGTERM raise it too. */
void accel_trainer_request_stop(accel_trainer_t *trainer);

#endif
