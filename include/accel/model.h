/* The model interface: one table of functions serves the built-in models and user plugins
 * (a shared library exporting `accel_model_plugin`, loaded with model.plugin=path.so). */
#ifndef ACCEL_MODEL_H
#define ACCEL_MODEL_H

#include <stdint.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/status.h"

/* Called by a model's backward pass as soon as every gradient of `layer` is final for the current
 * micro-batch, so that gradient communication overlaps the backward of earlier layers. */
typedef struct {
    void (*layer_done)(void *ctx, int layer);
    void *ctx;
} accel_grad_hook_t;

/* A micro-batch on one rank: n samples. Classification models read `inputs` (n x sample_dim floats)
 * and `targets` (n labels); language models read `tokens` (n x (context+1) ids). */
typedef struct {
    int n;
    const float *inputs;
    const int32_t *targets;
    const int32_t *tokens;
    const int64_t *index;           /* global sample index of each sample */
    const accel_grad_hook_t *hook;  /* may be NULL; see accel_batch_layer_done */
} accel_batch_t;

/* Models call this from backward when layer `layer` (the tensor table's layer id) is complete. */
static inline void accel_batch_layer_done(const accel_batch_t *batch, int layer)
{
    if (batch->hook) batch->hook->layer_done(batch->hook->ctx, layer);
}

typedef struct accel_model_ops accel_model_ops_t;

typedef struct {
    const accel_model_ops_t *ops;
    void *state;                    /* model-private */
    accel_layout_t layout;          /* parameter table */
} accel_model_t;

struct accel_model_ops {
    const char *name;
    /* Read sizes from cfg, register parameters into layout, allocate private state. */
    accel_status_t (*create)(const accel_config_t *cfg, accel_layout_t *layout, void **state);
    /* Forward and backward over a micro-batch: returns the SUM of per-sample losses in *loss_sum,
     * and ADDS grad_scale * d(loss_sum)/d(params) into grads (callers pass 1/global_batch). */
    accel_status_t (*forward_backward)(void *state, const accel_layout_t *layout,
                                       const float *params, float *grads,
                                       const accel_batch_t *batch, float grad_scale,
                                       double *loss_sum);
    /* Forward only: per-sample losses into loss[n] and, for classifiers, correct[n] (may be NULL). */
    accel_status_t (*eval)(void *state, const accel_layout_t *layout, const float *params,
                           const accel_batch_t *batch, float *loss, int *correct);
    void (*destroy)(void *state);
};

/* Built-in models by name ("mlp", "gpt"), or a plugin when cfg->model.plugin is set. */
accel_status_t accel_model_create(const accel_config_t *cfg, accel_model_t *model);
void accel_model_destroy(accel_model_t *model);

extern const accel_model_ops_t accel_model_mlp;

#endif
