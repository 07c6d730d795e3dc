/* Optimizers over flat fp32 vectors (AdamW, SGD with momentum) and learning-rate schedules counted
 * in optimizer steps of the global batch. The vector is the whole parameter arena (DDP) or the
 * concatenation of a rank's ZeRO slices; weight decay is marked per element from the tensor table. */
#ifndef ACCEL_OPTIM_H
#define ACCEL_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/status.h"

struct accel_devops;

typedef struct {
    const accel_optim_config_t *cfg;
    int total_steps;
    const struct accel_devops *ops; /* where m, v and the parameters live (src/train/devops.h) */
    float *m, *v;                   /* moments (AdamW: m and v; SGD: m = momentum buffer) */
    size_t n;                       /* elements updated */
    unsigned char *decay_mask;      /* host: 1 where weight decay applies */
    unsigned char *decay_dev;       /* the mask where the update runs (== decay_mask on the host) */
    bool mask_dirty;                /* marked since the last upload */
    long step;                      /* optimizer steps taken */
} accel_optim_t;

/* An optimizer for n elements in host memory; no element is decayed until accel_optim_mark_decay
 * says so. */
accel_status_t accel_optim_create(const accel_optim_config_t *cfg, int total_steps, size_t n,
                                  accel_optim_t *opt);
/* The same with its state in the memory of ops (the trainer's device operations). */
accel_status_t accel_optim_create_on(const accel_optim_config_t *cfg, int total_steps, size_t n,
                                     const struct accel_devops *ops, accel_optim_t *opt);
/* Elements [arena_begin, arena_end) of the parameter arena are stored at position local_offset of
 * the optimizer's vector: mark those belonging to tensors that take weight decay (not biases and
 * norms, never padding). */
void accel_optim_mark_decay(accel_optim_t *opt, const accel_layout_t *layout, size_t arena_begin,
                            size_t arena_end, size_t local_offset);
void accel_optim_destroy(accel_optim_t *opt);

/* Learning rate for optimizer step `step` (0-based). */
double accel_optim_lr(const accel_optim_config_t *cfg, int total_steps, long step);

/* One update of params[0..n) from the gradients grad_mul * grads[0..n) (the loss-scale and
 * clipping factor, applied inside the update rather than in a pass of its own), in the optimizer's
 * memory. The learning rate used goes to *lr. */
accel_status_t accel_optim_update(accel_optim_t *opt, float *params, const float *grads,
                                  float grad_mul, double *lr);
/* accel_optim_update for host memory; returns the learning rate used. */
double accel_optim_step(accel_optim_t *opt, float *params, const float *grads, float grad_mul);

#endif
