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

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define OPTIM_CLONES \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define OPTIM_CLONES
#endif

accel_status_t accel_optim_create(const accel_optim_config_t *cfg, int total_steps, size_t n,
                                  accel_optim_t *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->cfg = cfg;
    opt->total_steps = total_steps;
    opt->n = n;
    bool adam = !strcmp(cfg->name, "adamw");
    opt->m = calloc(n ? n : 1, sizeof(float));
    opt->v = adam ? calloc(n ? n : 1, sizeof(float)) : NULL;
    opt->decay_mask = calloc(n ? n : 1, 1);
    if (!opt->m || !opt->decay_mask || (adam && !opt->v)) {
        accel_optim_destroy(opt);
        ACCEL_ERROR("cannot allocate optimizer state for %zu parameters", n);
        return ACCEL_ERR_NOMEM;
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
}

void accel_optim_destroy(accel_optim_t *opt)
{
    free(opt->m);
    free(opt->v);
    free(opt->decay_mask);
    opt->m = opt->v = NULL;
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

double accel_optim_step(accel_optim_t *opt, float *params, const float *grads,
                        float grad_mul)
{
    const accel_optim_config_t *c = opt->cfg;
    double lr = accel_optim_lr(c, opt->total_steps, opt->step);
    opt->step++;
    const float flr = (float)lr, wd = (float)c->weight_decay;
    if (opt->v) {
        const float bc1 = (float)(1.0 - pow(c->beta1, (double)opt->step));
        const float bc2 = (float)(1.0 - pow(c->beta2, (double)opt->step));
        adamw_update(params, grads, grad_mul, opt->m, opt->v, opt->decay_mask, opt->n,
                     (float)c->beta1, (float)c->beta2, (float)c->eps, flr / bc1, 1.0f / sqrtf(bc2),
                     flr * wd);
    } else {
        sgd_update(params, grads, grad_mul, opt->m, opt->decay_mask, opt->n, (float)c->momentum,
                   flr, wd);
    }
    return lr;
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
