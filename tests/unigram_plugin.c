/* A language-model plugin that does not read loss masks (tests/train_loss_mask.sh): a unigram
 * model, one logit per token, trained on the next-token targets of every row. accel_train must
 * refuse masked data with it rather than train it on the prompts. */
#include <math.h>
#include <stdlib.h>

#include <accel/accel.h>

typedef struct {
    int V, T, logit;
} unigram_t;

static accel_status_t create(const accel_config_t *cfg, accel_layout_t *layout, void **state)
{
    unigram_t *m = calloc(1, sizeof *m);
    if (!m) return ACCEL_ERR_NOMEM;
    m->V = cfg->model.vocab;
    m->T = cfg->model.context;
    int64_t shape[1] = { m->V };
    accel_status_t st = accel_layout_add(layout, "logit", 1, shape, 0, ACCEL_TENSOR_NO_DECAY, 0.0f, &m->logit);
    if (st != ACCEL_OK) { free(m); return st; }
    *state = m;
    return ACCEL_OK;
}

/* Mean token loss of sample i; with grads, adds scale * its gradient. */
static double sample(const unigram_t *m, const float *z, float *g, const int32_t *row, float scale)
{
    double mx = z[0], s = 0, loss = 0;
    for (int v = 1; v < m->V; v++) mx = fmax(mx, z[v]);
    for (int v = 0; v < m->V; v++) s += exp(z[v] - mx);
    const double lse = mx + log(s);
    for (int t = 0; t < m->T; t++) {
        loss += lse - z[row[t + 1]];
        if (g) g[row[t + 1]] -= scale / (float)m->T;
    }
    for (int v = 0; g && v < m->V; v++) g[v] += scale * (float)exp(z[v] - lse);
    return loss / m->T;
}

static accel_status_t forward_backward(void *state, const accel_layout_t *layout, const float *params,
                                       float *grads, const accel_batch_t *batch, float grad_scale,
                                       double *loss_sum)
{
    const unigram_t *m = state;
    const size_t off = layout->tensors[m->logit].offset;
    *loss_sum = 0;
    for (int i = 0; i < batch->n; i++)
        *loss_sum += sample(m, params + off, grads + off, batch->tokens + (size_t)i * (m->T + 1), grad_scale);
    return ACCEL_OK;
}

static accel_status_t eval(void *state, const accel_layout_t *layout, const float *params,
                           const accel_batch_t *batch, float *loss, int *correct)
{
    const unigram_t *m = state;
    for (int i = 0; i < batch->n; i++) {
        loss[i] = (float)sample(m, params + layout->tensors[m->logit].offset, NULL,
                                batch->tokens + (size_t)i * (m->T + 1), 0.0f);
        if (correct) correct[i] = 0;
    }
    return ACCEL_OK;
}

static void destroy(void *state) { free(state); }

const accel_model_ops_t accel_model_plugin = {
    .abi = ACCEL_MODEL_ABI,
    .name = "unigram",
    .consumes_tokens = 1,
    .create = create,
    .forward_backward = forward_backward,
    .eval = eval,
    .destroy = destroy,
};
