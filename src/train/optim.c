/* AdamW (decoupled weight decay, bias-corrected moments) and SGD with momentum over a range of a
 * flat fp32 arena; learning-rate schedules in optimizer steps.
 *
 * The update loops are built for AVX-512, AVX2 and the baseline (target_clones, picked at load
 * time) without contracting a*b+c into FMAs, so every CPU computes the same bits; the sum of
 * squares keeps 16 partial sums combined in a fixed order for the same reason. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/optim.h"
#include "devops.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define OPTIM_CLONES \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define OPTIM_CLONES
#endif

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

OPTIM_CLONES
static void adamw_update(float *restrict p, const float *restrict g, float mul, float *restrict m,
                         float *restrict v, const unsigned char *restrict decay, size_t n, float b1,
                         float b2, float eps, float step_size, float inv_sqrt_bc2, float lr_wd)
{
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i] * mul;
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        float denom = sqrtf(v[i]) * inv_sqrt_bc2 + eps;
        p[i] -= step_size * m[i] / denom + (float)decay[i] * lr_wd * p[i];
    }
}

OPTIM_CLONES
static void sgd_update(float *restrict p, const float *restrict g, float mul, float *restrict buf,
                       const unsigned char *restrict decay, size_t n, float mu, float lr, float wd)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * mul + (float)decay[i] * wd * p[i];
        buf[i] = mu * buf[i] + gi;
        p[i] -= lr * buf[i];
    }
}

void accel_optim_adamw_host(float *p, const float *g, float *m, float *v, const unsigned char *decay,
                            size_t n, const accel_update_t *u)
{
    adamw_update(p, g, u->grad_mul, m, v, decay, n, u->beta1, u->beta2, u->eps, u->step_size,
                 u->inv_sqrt_bc2, u->lr_wd);
}

void accel_optim_sgd_host(float *p, const float *g, float *buf, const unsigned char *decay,
                          size_t n, const accel_update_t *u)
{
    sgd_update(p, g, u->grad_mul, buf, decay, n, u->momentum, u->lr, u->weight_decay);
}

double accel_optim_step(accel_optim_t *opt, float *params, const float *grads, float grad_mul)
{
    double lr = 0;
    accel_optim_update(opt, params, grads, grad_mul, &lr);     /* host memory cannot fail */
    return lr;
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

OPTIM_CLONES
double accel_sum_squares(const float *x, size_t n)
{
    enum { PARTS = 16 };
    double acc[PARTS] = { 0 };
    size_t i = 0;
    for (; i + PARTS <= n; i += PARTS)
        for (int k = 0; k < PARTS; k++) acc[k] += (double)x[i + k] * x[i + k];
    for (int k = 0; i + k < n; k++) acc[k] += (double)x[i + k] * x[i + k];
    for (int w = PARTS / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) acc[k] += acc[k + w];
    return acc[0];
}
