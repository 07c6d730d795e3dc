/* AdamW (decoupled weight decay, bias-corrected moments) and SGD with momentum over a flat fp32
 * vector, and learning-rate schedules in optimizer steps. The update's constants are computed here
 * once; the update itself is the device operations' (src/train/devops.c: the CPU loops, the CUDA
 * kernels). */
#include "build_config.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "optim.h"
#include "devops.h"


accel_status_t accel_optim_create(const accel_optim_config_t *cfg, int total_steps, size_t n,
                                  accel_optim_t *opt)
{
    return accel_optim_create_on(cfg, total_steps, n, NULL, opt);
}

accel_status_t accel_optim_create_on(const accel_optim_config_t *cfg, int total_steps, size_t n,
                                     const accel_devops_t *ops, accel_optim_t *opt)
{
    memset(opt, 0, sizeof *opt);
    if (!ops) ACCEL_CHECK(accel_devops_for(ACCEL_DEVICE_CPU, &ops));
    opt->cfg = cfg;
    opt->total_steps = total_steps;
    opt->ops = ops;
    opt->n = n;
    const size_t bytes = sizeof(float) * (n ? n : 1);
    bool adam = !strcmp(cfg->name, "adamw");
    accel_status_t st = ops->alloc(bytes, (void **)&opt->m);
    if (st == ACCEL_OK && adam) st = ops->alloc(bytes, (void **)&opt->v);
    opt->decay_mask = calloc(n ? n : 1, 1);
    if (st == ACCEL_OK && !opt->decay_mask) st = ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK && ops->host) opt->decay_dev = opt->decay_mask;
    else if (st == ACCEL_OK) st = ops->alloc(n ? n : 1, (void **)&opt->decay_dev);
    if (st != ACCEL_OK) {
        accel_optim_destroy(opt);
        ACCEL_ERROR("cannot allocate optimizer state for %zu parameters", n);
        return st;
    }
    return ACCEL_OK;
}

void accel_optim_mark_decay(accel_optim_t *opt, const accel_layout_t *layout, size_t arena_begin,
                            size_t arena_end, size_t local_offset)
{
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        if (t->flags & ACCEL_TENSOR_NO_DECAY) continue;
        size_t lo = t->offset > arena_begin ? t->offset : arena_begin;
        size_t hi = t->offset + t->numel < arena_end ? t->offset + t->numel : arena_end;
        if (lo < hi) memset(opt->decay_mask + local_offset + (lo - arena_begin), 1, hi - lo);
    }
    opt->mask_dirty = true;
}

void accel_optim_destroy(accel_optim_t *opt)
{
    if (opt->ops) {
        opt->ops->free(opt->m);
        opt->ops->free(opt->v);
        if (opt->decay_dev != opt->decay_mask) opt->ops->free(opt->decay_dev);
    }
    free(opt->decay_mask);
    opt->m = opt->v = NULL;
    opt->decay_dev = NULL;
    opt->decay_mask = NULL;
}

double accel_optim_lr(const accel_optim_config_t *cfg, int total_steps, long step)
{
    double peak = cfg->lr, floor_lr = cfg->lr * cfg->min_lr_ratio;
    if (step < cfg->warmup) return peak * (double)(step + 1) / (double)cfg->warmup;
    if (!strcmp(cfg->schedule, "constant")) return peak;
    long decay_steps = total_steps - cfg->warmup;
    double progress = decay_steps > 1 ? (double)(step - cfg->warmup) / (double)(decay_steps - 1) : 1.0;
    if (progress > 1.0) progress = 1.0;
    if (!strcmp(cfg->schedule, "linear")) return peak + (floor_lr - peak) * progress;
    return floor_lr + 0.5 * (peak - floor_lr) * (1.0 + cos(M_PI * progress));
}

accel_status_t accel_optim_update(accel_optim_t *opt, float *params, const float *grads,
                                  float grad_mul, double *lr)
{
    const accel_optim_config_t *c = opt->cfg;
    if (opt->mask_dirty && opt->decay_dev != opt->decay_mask)
        ACCEL_CHECK(opt->ops->upload(opt->decay_dev, opt->decay_mask, opt->n));
    opt->mask_dirty = false;
    *lr = accel_optim_lr(c, opt->total_steps, opt->step);
    opt->step++;
    /* Single-precision constants, computed once here for every device. */
    const float flr = (float)*lr, wd = (float)c->weight_decay;
    const float bc1 = (float)(1.0 - pow(c->beta1, (double)opt->step));
    const float bc2 = (float)(1.0 - pow(c->beta2, (double)opt->step));
    accel_update_t u = {
        .grad_mul = grad_mul, .beta1 = (float)c->beta1, .beta2 = (float)c->beta2,
        .eps = (float)c->eps, .step_size = flr / bc1, .inv_sqrt_bc2 = 1.0f / sqrtf(bc2),
        .lr_wd = flr * wd, .lr = flr, .weight_decay = wd, .momentum = (float)c->momentum,
    };
    if (opt->v) return opt->ops->adamw(params, grads, opt->m, opt->v, opt->decay_dev, opt->n, &u);
    return opt->ops->sgd(params, grads, opt->m, opt->decay_dev, opt->n, &u);
}

double accel_optim_step(accel_optim_t *opt, float *params, const float *grads, float grad_mul)
{
    double lr = 0;
    accel_optim_update(opt, params, grads, grad_mul, &lr);     /* host memory cannot fail */
    return lr;
}
