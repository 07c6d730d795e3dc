/* Built-in MLP classifier: depth hidden layers of width `hidden` with ReLU, then a linear layer to
 * `classes` logits and softmax cross-entropy. Matrix products go to BLAS. */
#include "build_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/model.h"
#include "gemm_cpu.h"

typedef struct {
    int inputs, hidden, classes, depth;
    int *w, *b;                     /* tensor index of each layer's weight and bias */
    int capacity;                   /* batch size the buffers hold */
    float **act;                    /* act[l]: input of layer l (act[0] = batch inputs copy) */
    float *logits, *grad_a, *grad_b;
    accel_gemm_cpu_t gemm;          /* matrix products in the compute precision */
} mlp_t;

#define GEMM(...) accel_gemm_cpu(&m->gemm, __VA_ARGS__)

static int layer_in(const mlp_t *m, int l) { return l == 0 ? m->inputs : m->hidden; }
static int layer_out(const mlp_t *m, int l) { return l == m->depth ? m->classes : m->hidden; }

static void mlp_destroy(void *state)
{
    mlp_t *m = state;
    if (!m) return;
    if (m->act)
        for (int l = 0; l <= m->depth; l++) free(m->act[l]);
    free(m->act);
    free(m->logits);
    free(m->grad_a);
    free(m->grad_b);
    free(m->w);
    free(m->b);
    accel_gemm_cpu_free(&m->gemm);
    free(m);
}

static accel_status_t mlp_create(const accel_config_t *cfg, accel_layout_t *layout, void **state)
{
    const accel_model_config_t *c = &cfg->model;
    if (c->inputs < 1 || c->hidden < 1 || c->classes < 2) {
        ACCEL_ERROR0("mlp needs model.inputs >= 1, model.hidden >= 1 and model.classes >= 2 "
                     "(got %d, %d, %d)", c->inputs, c->hidden, c->classes);
        return ACCEL_ERR_CONFIG;
    }
    mlp_t *m = calloc(1, sizeof *m);
    if (!m) return ACCEL_ERR_NOMEM;
    m->inputs = c->inputs;
    m->hidden = c->hidden;
    m->classes = c->classes;
    m->depth = c->depth;
    if (accel_gemm_cpu_init(&m->gemm, cfg->precision_id) != ACCEL_OK) {
        free(m);
        return ACCEL_ERR_CONFIG;
    }
    m->w = calloc((size_t)m->depth + 1, sizeof(int));
    m->b = calloc((size_t)m->depth + 1, sizeof(int));
    m->act = calloc((size_t)m->depth + 1, sizeof(float *));
    if (!m->w || !m->b || !m->act) { mlp_destroy(m); return ACCEL_ERR_NOMEM; }
    for (int l = 0; l <= m->depth; l++) {
        char name[ACCEL_TENSOR_NAME_MAX];
        int64_t wshape[2] = { layer_out(m, l), layer_in(m, l) }, bshape[1] = { layer_out(m, l) };
        float std = (float)sqrt((l == m->depth ? 1.0 : 2.0) / layer_in(m, l));
        snprintf(name, sizeof name, "layers.%d.weight", l);
        accel_status_t st = accel_layout_add(layout, name, 2, wshape, l, 0, std, &m->w[l]);
        snprintf(name, sizeof name, "layers.%d.bias", l);
        if (st == ACCEL_OK)
            st = accel_layout_add(layout, name, 1, bshape, l, ACCEL_TENSOR_NO_DECAY, 0.0f, &m->b[l]);
        if (st != ACCEL_OK) { mlp_destroy(m); return st; }
    }
    *state = m;
    return ACCEL_OK;
}

static accel_status_t reserve(mlp_t *m, int n)
{
    if (n <= m->capacity) return ACCEL_OK;
    int widest = m->inputs > m->hidden ? m->inputs : m->hidden;
    if (m->classes > widest) widest = m->classes;
    for (int l = 0; l <= m->depth; l++) {
        free(m->act[l]);
        m->act[l] = malloc(sizeof(float) * (size_t)n * (size_t)layer_in(m, l));
        if (!m->act[l]) return ACCEL_ERR_NOMEM;
    }
    free(m->logits); free(m->grad_a); free(m->grad_b);
    m->logits = malloc(sizeof(float) * (size_t)n * (size_t)m->classes);
    m->grad_a = malloc(sizeof(float) * (size_t)n * (size_t)widest);
    m->grad_b = malloc(sizeof(float) * (size_t)n * (size_t)widest);
    if (!m->logits || !m->grad_a || !m->grad_b) return ACCEL_ERR_NOMEM;
    m->capacity = n;
    return ACCEL_OK;
}

/* out[n, o] = in[n, i] W^T + b, then ReLU unless it is the last layer. */
static accel_status_t forward(mlp_t *m, const accel_layout_t *layout, const float *params,
                              const accel_batch_t *batch, int n)
{
    for (int l = 0; l <= m->depth; l++) {
        accel_batch_layer_fetch(batch, l, 0);
        int in = layer_in(m, l), out = layer_out(m, l);
        const float *W = params + layout->tensors[m->w[l]].offset;
        const float *b = params + layout->tensors[m->b[l]].offset;
        float *y = l == m->depth ? m->logits : m->act[l + 1];
        for (int i = 0; i < n; i++) memcpy(y + (size_t)i * out, b, sizeof(float) * (size_t)out);
        ACCEL_CHECK(GEMM(false, true, n, out, in, 1.0f, m->act[l], in, W, in, 1.0f, y, out));
        if (l < m->depth)
            for (size_t k = 0; k < (size_t)n * out; k++) y[k] = y[k] > 0 ? y[k] : 0.0f;
        accel_batch_layer_release(batch, l);
    }
    return ACCEL_OK;
}

/* Softmax cross-entropy per sample; optionally the gradient of the scaled loss sum into dlogits. */
static double softmax_xent(const mlp_t *m, const int32_t *targets, int n, float *loss, int *correct,
                           float *dlogits, float scale)
{
    double total = 0;
    for (int i = 0; i < n; i++) {
        const float *z = m->logits + (size_t)i * m->classes;
        float zmax = z[0];
        int argmax = 0;
        for (int c = 1; c < m->classes; c++)
            if (z[c] > zmax) { zmax = z[c]; argmax = c; }
        double sum = 0;
        for (int c = 0; c < m->classes; c++) sum += exp((double)(z[c] - zmax));
        double lse = zmax + log(sum);
        double li = lse - z[targets[i]];
        total += li;
        if (loss) loss[i] = (float)li;
        if (correct) correct[i] = argmax == targets[i];
        if (dlogits)
            for (int c = 0; c < m->classes; c++) {
                double p = exp((double)z[c] - lse);
                dlogits[(size_t)i * m->classes + c] = scale * (float)(p - (c == targets[i]));
            }
    }
    return total;
}

static accel_status_t check_batch(const mlp_t *m, const accel_batch_t *batch)
{
    for (int i = 0; i < batch->n; i++)
        if (batch->targets[i] < 0 || batch->targets[i] >= m->classes) {
            ACCEL_ERROR("sample %d has label %d, outside 0..%d", i, batch->targets[i], m->classes - 1);
            return ACCEL_ERR_INVALID;
        }
    return ACCEL_OK;
}

static accel_status_t mlp_forward_backward(void *state, const accel_layout_t *layout,
                                           const float *params, float *grads,
                                           const accel_batch_t *batch, float grad_scale,
                                           double *loss_sum)
{
    mlp_t *m = state;
    int n = batch->n;
    ACCEL_CHECK(check_batch(m, batch));
    ACCEL_CHECK(reserve(m, n));
    memcpy(m->act[0], batch->inputs, sizeof(float) * (size_t)n * (size_t)m->inputs);
    ACCEL_CHECK(forward(m, layout, params, batch, n));
    float *dy = m->grad_a, *dx = m->grad_b;
    *loss_sum = softmax_xent(m, batch->targets, n, NULL, NULL, dy, grad_scale);
    for (int l = m->depth; l >= 0; l--) {
        int in = layer_in(m, l), out = layer_out(m, l);
        accel_batch_layer_fetch(batch, l, 1);
        const float *W = params + layout->tensors[m->w[l]].offset;
        float *dW = grads + layout->tensors[m->w[l]].offset;
        float *db = grads + layout->tensors[m->b[l]].offset;
        ACCEL_CHECK(GEMM(true, false, out, in, n, 1.0f, dy, out, m->act[l], in, 1.0f, dW, in));
        for (int i = 0; i < n; i++)
            for (int o = 0; o < out; o++) db[o] += dy[(size_t)i * out + o];
        accel_batch_layer_done(batch, l);
        if (l > 0) ACCEL_CHECK(GEMM(false, false, n, in, out, 1.0f, dy, out, W, in, 0.0f, dx, in));
        accel_batch_layer_release(batch, l);
        if (l == 0) break;
        const float *a = m->act[l];              /* ReLU output: gradient passes where a > 0 */
        for (size_t k = 0; k < (size_t)n * in; k++)
            if (a[k] <= 0) dx[k] = 0.0f;
        float *t = dy; dy = dx; dx = t;
    }
    return ACCEL_OK;
}

static accel_status_t mlp_eval(void *state, const accel_layout_t *layout, const float *params,
                               const accel_batch_t *batch, float *loss, int *correct)
{
    mlp_t *m = state;
    ACCEL_CHECK(check_batch(m, batch));
    ACCEL_CHECK(reserve(m, batch->n));
    memcpy(m->act[0], batch->inputs, sizeof(float) * (size_t)batch->n * (size_t)m->inputs);
    ACCEL_CHECK(forward(m, layout, params, batch, batch->n));
    softmax_xent(m, batch->targets, batch->n, loss, correct, NULL, 0.0f);
    return ACCEL_OK;
}

/* Mirrors reserve(): each layer's input, the logits and two gradient buffers of the widest layer;
 * and the product libraries' workspace. */
static size_t mlp_activation_bytes(const accel_config_t *cfg, int n)
{
    const accel_model_config_t *c = &cfg->model;
    size_t widest = (size_t)(c->inputs > c->hidden ? c->inputs : c->hidden);
    if ((size_t)c->classes > widest) widest = (size_t)c->classes;
    size_t floats = (size_t)c->inputs + (size_t)c->depth * (size_t)c->hidden + (size_t)c->classes + 2 * widest;
    return sizeof(float) * (size_t)n * floats + accel_gemm_cpu_workspace_bytes();
}

const accel_model_ops_t accel_model_mlp = {
    .abi = ACCEL_MODEL_ABI,
    .name = "mlp",
    .fetches_layers = 1,
    .create = mlp_create,
    .forward_backward = mlp_forward_backward,
    .eval = mlp_eval,
    .destroy = mlp_destroy,
    .activation_bytes = mlp_activation_bytes,
};
