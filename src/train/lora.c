/* LoRA fine-tuning: the two maps between the adapters and the model's arenas (lora.h says why the
 * trainer works this way). Which linear layers are adapted, where their rows sit in accel's tensors
 * (fused q|k|v, permuted RoPE pairs, ...) and the adapters' tensors come from the Hugging Face
 * mapping (accel_hf_linears, accel_hf_lora_layout), so an adapter is PEFT's, module for module. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/hf.h"
#include "accel/log.h"
#include "lora.h"

typedef struct {
    const accel_hf_linear_t *lin;
    size_t w;                       /* the accel tensor's offset in the model's arena */
    int a, b;                       /* A's and B's tensors in the adapters' layout (their offsets move
                                     * when the dist pads it for ZeRO) */
    float *w0;                      /* its base rows [out, in], in module order */
} target_t;

struct accel_lora {
    accel_layout_t layout;          /* the adapters */
    accel_hf_linear_t *lin;
    int nlin;
    target_t *t;                    /* one per module of lin */
    int rank;
    float scale;
    const accel_layout_t *model;    /* the model's tensor table */
    float *params, *grads;          /* the model's arenas (grads reserved: pages resident as touched) */
    float *w0;                      /* every target's base rows */
    float *scratch;                 /* [out, in] of the largest target */
};

/* Offsets of a target's A and B in the adapters' arena. */
static size_t a_at(const accel_lora_t *l, const target_t *t) { return l->layout.tensors[t->a].offset; }
static size_t b_at(const accel_lora_t *l, const target_t *t) { return l->layout.tensors[t->b].offset; }

accel_status_t accel_lora_create(const accel_config_t *cfg, accel_layout_t *model, accel_lora_t **out)
{
    *out = NULL;
    if (strcmp(cfg->model.name, "gpt") && strcmp(cfg->model.name, "llama")) {
        ACCEL_ERROR0("lora.rank=%d: LoRA adapts the built-in language models (model.name gpt or llama), "
                     "not model.name=%s", cfg->lora.rank, cfg->model.name);
        return ACCEL_ERR_CONFIG;
    }
    accel_lora_t *l = calloc(1, sizeof *l);
    if (!l) return ACCEL_ERR_NOMEM;
    accel_layout_init(&l->layout);
    accel_status_t st = ACCEL_OK;
    char err[1024] = "";
    l->nlin = accel_hf_linears(&cfg->model, cfg->lora.targets, &l->lin, err, sizeof err);
    if (l->nlin < 0) {
        st = l->nlin;
        l->nlin = 0;
        ACCEL_ERROR("lora.targets=%s: %s", cfg->lora.targets, err);
        goto fail;
    }
    l->rank = cfg->lora.rank;
    l->scale = (float)accel_hf_lora_scale(cfg);
    if ((st = accel_hf_lora_layout(cfg, model, &l->layout, err, sizeof err)) != ACCEL_OK) {
        ACCEL_ERROR("LoRA: %s", err);
        goto fail;
    }
    l->t = calloc((size_t)l->nlin + 1, sizeof *l->t);
    if (!l->t) { st = ACCEL_ERR_NOMEM; goto fail; }
    size_t w0 = 0, largest = 0;
    for (int i = 0; i < l->nlin; i++) {     /* the layout holds each module's A and B, in this order */
        const accel_hf_linear_t *x = &l->lin[i];
        target_t *t = &l->t[i];
        t->lin = x;
        t->w = accel_layout_find(model, x->accel)->offset;
        t->a = 2 * i;
        t->b = 2 * i + 1;
        w0 += x->out * x->in;
        if (x->out * x->in > largest) largest = x->out * x->in;
    }
    /* Only the adapted weights' gradients are wanted (the adapters' come from them): the model
     * skips the other weights' products. */
    for (int i = 0; i < model->ntensors; i++) model->tensors[i].flags |= ACCEL_TENSOR_FROZEN;
    for (int i = 0; i < l->nlin; i++)
        model->tensors[accel_layout_find(model, l->lin[i].accel) - model->tensors].flags &= ~(unsigned)ACCEL_TENSOR_FROZEN;
    l->model = model;
    if ((st = accel_arena_alloc(model, &l->params)) != ACCEL_OK ||
        (st = accel_arena_alloc_virtual(model, &l->grads)) != ACCEL_OK)
        goto fail;
    l->w0 = malloc(sizeof(float) * w0);
    l->scratch = malloc(sizeof(float) * largest);
    if (!l->w0 || !l->scratch) { st = ACCEL_ERR_NOMEM; goto fail; }
    float *p = l->w0;
    for (int i = 0; i < l->nlin; i++) {
        l->t[i].w0 = p;
        p += l->t[i].lin->out * l->t[i].lin->in;
    }
    *out = l;
    return ACCEL_OK;
fail:
    accel_lora_destroy(l);
    return st;
}

void accel_lora_destroy(accel_lora_t *l)
{
    if (!l) return;
    accel_layout_free(&l->layout);
    accel_hf_linears_free(l->lin, l->nlin);
    free(l->t);
    accel_arena_free(l->params);
    if (l->grads) accel_arena_free_virtual(l->model, l->grads);
    free(l->w0);
    free(l->scratch);
    free(l);
}

accel_layout_t *accel_lora_layout(accel_lora_t *l) { return &l->layout; }
float *accel_lora_params(accel_lora_t *l) { return l->params; }
float *accel_lora_grads(accel_lora_t *l) { return l->grads; }
float accel_lora_scale(const accel_lora_t *l) { return l->scale; }

void accel_lora_zero_grads(accel_lora_t *l)
{
    for (int i = 0; i < l->model->ntensors; i++)
        if (!(l->model->tensors[i].flags & ACCEL_TENSOR_FROZEN))
            memset(l->grads + l->model->tensors[i].offset, 0, sizeof(float) * l->model->tensors[i].numel);
}

size_t accel_lora_targets(const accel_lora_t *l, size_t *elements)
{
    *elements = 0;
    for (int i = 0; i < l->nlin; i++) *elements += l->t[i].lin->out * l->t[i].lin->in;
    return (size_t)l->nlin;
}

typedef struct {
    accel_lora_t *l;
    float *adapters;
    bool *seen;
    char err[512];
} read_ctx_t;

static accel_status_t take_factors(void *vctx, const char *module, int rank, double alpha, double scale,
                                   const float *a, const float *b, uint64_t out, uint64_t in)
{
    read_ctx_t *c = vctx;
    const accel_lora_t *l = c->l;
    int i = 0;
    while (i < l->nlin && strcmp(l->t[i].lin->module, module)) i++;
    if (i == l->nlin) {
        snprintf(c->err, sizeof c->err, "it adapts %s, which lora.targets does not choose\n--> hint: lora.targets "
                 "must name the adapter's modules (its target_modules)", module);
        return ACCEL_ERR_CONFIG;
    }
    const target_t *t = &l->t[i];
    if (rank != l->rank || fabs(scale - l->scale) > 1e-6 * fabs(scale)) {
        snprintf(c->err, sizeof c->err, "its %s has rank %d and scale %g where lora.rank and lora.alpha give %d and "
                 "%g\n--> hint: lora.rank=%d lora.alpha=%g, as the adapter was trained", module, rank, scale,
                 l->rank, (double)l->scale, rank, alpha);
        return ACCEL_ERR_CONFIG;
    }
    if (out != t->lin->out || in != t->lin->in) {
        snprintf(c->err, sizeof c->err, "its %s is %llu x %llu where the model's is %llu x %llu", module,
                 (unsigned long long)out, (unsigned long long)in, (unsigned long long)t->lin->out,
                 (unsigned long long)t->lin->in);
        return ACCEL_ERR_SHAPE;
    }
    memcpy(c->adapters + a_at(l, t), a, sizeof(float) * (size_t)rank * in);
    memcpy(c->adapters + b_at(l, t), b, sizeof(float) * out * (size_t)rank);
    c->seen[i] = true;
    return ACCEL_OK;
}

accel_status_t accel_lora_read_adapter(accel_lora_t *l, const char *dir, float *adapters)
{
    read_ctx_t c = { .l = l, .adapters = adapters, .seen = calloc((size_t)l->nlin, sizeof(bool)) };
    if (!c.seen) return ACCEL_ERR_NOMEM;
    accel_status_t st = accel_hf_adapter_factors(dir, take_factors, &c, c.err, sizeof c.err);
    for (int i = 0; st == ACCEL_OK && i < l->nlin; i++)
        if (!c.seen[i]) {
            snprintf(c.err, sizeof c.err, "it has no factors for %s, which lora.targets chooses\n--> hint: "
                     "lora.targets must name the adapter's modules (its target_modules)", l->t[i].lin->module);
            st = ACCEL_ERR_CONFIG;
        }
    if (st != ACCEL_OK) ACCEL_ERROR("train.init_from=%s: cannot train this adapter further: %s", dir, c.err);
    free(c.seen);
    return st;
}

/* Rows of the model arena's tensor in module order into dst [out, in], and back. */
static void gather_rows(const target_t *t, const float *arena, float *dst)
{
    const uint64_t in = t->lin->in;
    for (uint64_t r = 0; r < t->lin->out; r++)
        memcpy(dst + r * in, arena + t->w + t->lin->rows[r] * in, sizeof(float) * in);
}

static void scatter_rows(const target_t *t, const float *src, float *arena)
{
    const uint64_t in = t->lin->in;
    for (uint64_t r = 0; r < t->lin->out; r++)
        memcpy(arena + t->w + t->lin->rows[r] * in, src + r * in, sizeof(float) * in);
}

accel_status_t accel_lora_base_loaded(accel_lora_t *l)
{
    for (int i = 0; i < l->nlin; i++) gather_rows(&l->t[i], l->params, l->t[i].w0);
    return ACCEL_OK;
}

void accel_lora_merge(accel_lora_t *l, const float *adapters)
{
    for (int i = 0; i < l->nlin; i++) {
        const target_t *t = &l->t[i];
        scatter_rows(t, t->w0, l->params);
        accel_hf_linear_add(t->lin, l->rank, l->scale, adapters + a_at(l, t), adapters + b_at(l, t), l->params + t->w, l->scratch);
    }
}

void accel_lora_project(accel_lora_t *l, const float *adapters, float *adapter_grads)
{
    const int r = l->rank;
    for (int i = 0; i < l->nlin; i++) {
        const target_t *t = &l->t[i];
        const int out = (int)t->lin->out, in = (int)t->lin->in;
        gather_rows(t, l->grads, l->scratch);              /* dW [out, in] */
        /* dA [r, in] += scale B^T dW;  dB [out, r] += scale dW A^T */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, in, out, l->scale, adapters + b_at(l, t), r,
                    l->scratch, in, 1.0f, adapter_grads + a_at(l, t), in);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, out, r, in, l->scale, l->scratch, in,
                    adapters + a_at(l, t), in, 1.0f, adapter_grads + b_at(l, t), r);
    }
}
