/* Optimizers over flat fp32 arenas (AdamW, SGD with momentum) and learning-rate schedules counted
 * in optimizer steps of the global batch. Works on any [begin, end) element range, so a ZeRO shard
 * updates only its slice. */
#ifndef ACCEL_OPTIM_H
#define ACCEL_OPTIM_H

#include <stddef.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/status.h"

typedef struct {
    const accel_optim_config_t *cfg;
    int total_steps;
    float *m, *v;                   /* moments (AdamW: m and v; SGD: m = momentum buffer) */
    size_t begin, end;              /* element range this rank updates */
    unsigned char *decay_mask;      /* 1 where weight decay applies, per element in [begin, end) */
    long step;                      /* optimizer steps taken */
} accel_optim_t;

accel_status_t accel_optim_create(const accel_optim_config_t *cfg, int total_steps,
                                  const accel_layout_t *layout, size_t begin, size_t end,
                                  accel_optim_t *opt);
void accel_optim_destroy(accel_optim_t *opt);

/* Learning rate for optimizer step `step` (0-based). */
double accel_optim_lr(const accel_optim_config_t *cfg, int total_steps, long step);

/* One update of params[begin..end) from grads[begin..end); both arrays are indexed from the arena
 * start. Returns the learning rate used. */
double accel_optim_step(accel_optim_t *opt, float *params, const float *grads);

#endif
