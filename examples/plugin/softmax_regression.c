/* A user model as a plugin: multinomial logistic regression (one weight matrix and a bias).
 *
 * Build it as a shared library and point accel_train at it:
 *   mpicc -shared -fPIC -O2 $(pkg-config --cflags accel) -o softmax.so softmax_regression.c
 *   mpirun -np 2 accel_train model.plugin=$PWD/softmax.so
 *
 * A plugin exports one symbol, `accel_model_plugin`, a table of functions (include/accel/model.h):
 *   create            read sizes from the configuration, register parameters by name and shape
 *   forward_backward  loss SUM over the micro-batch; ADD grad_scale * d(loss)/d(params) to grads
 *   eval              per-sample loss (and correctness) without gradients
 *   destroy           free what create allocated
 * accel owns the parameter, gradient and optimizer buffers (flat arenas), the data order, the
 * gradient averaging across ranks, the optimizer and checkpointing; the model only computes.
 * This one reuses the built-in classification data: model.inputs features, model.classes classes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

typedef struct {
    int inputs, classes;
    int weight, bias;       /* tensor indices in the layout */
    float *logits;          /* scratch, one row */
} softmax_t;

static accel_status_t create(const accel_config_t *cfg, accel_layout_t *layout, void **state)
{
    softmax_t *m = calloc(1, sizeof *m);
    if (!m) return ACCEL_ERR_NOMEM;
    m->inputs = cfg->model.inputs;
    m->classes = cfg->model.classes;
    m->logits = malloc(sizeof(float) * (size_t)m->classes);
    int64_t wshape[2] = { m->classes, m->inputs }, bshape[1] = { m->classes };
    /* Layer 0 holds both tensors; weights start at N(0, 0.01^2), biases at zero and undecayed. */
    accel_status_t st = accel_layout_add(layout, "linear.weight", 2, wshape, 0, 0, 0.01f, &m->weight);
    if (st == ACCEL_OK)
        st = accel_layout_add(layout, "linear.bias", 1, bshape, 0, ACCEL_TENSOR_NO_DECAY, 0.0f, &m->bias);
    if (st != ACCEL_OK || !m->logits) {
        free(m->logits);
        free(m);
        return st != ACCEL_OK ? st : ACCEL_ERR_NOMEM;
    }
    *state = m;
    return ACCEL_OK;
}

/* Logits of one sample, then its loss; with grads, also the gradient of scale * loss. */
static double sample(softmax_t *m, const accel_layout_t *layout, const float *params, float *grads,
                     const float *x, int label, float scale, int *correct)
{
    const float *W = params + layout->tensors[m->weight].offset;
    const float *b = params + layout->tensors[m->bias].offset;
    float zmax = -INFINITY;
    int best = 0;
    for (int c = 0; c < m->classes; c++) {
        float z = b[c];
        for (int f = 0; f < m->inputs; f++) z += W[c * m->inputs + f] * x[f];
        m->logits[c] = z;
        if (z > zmax) { zmax = z; best = c; }
    }
    double sum = 0;
    for (int c = 0; c < m->classes; c++) sum += exp(m->logits[c] - zmax);
    double lse = zmax + log(sum);
    if (correct) *correct = best == label;
    if (grads) {
        float *dW = grads + layout->tensors[m->weight].offset;
        float *db = grads + layout->tensors[m->bias].offset;
        for (int c = 0; c < m->classes; c++) {
            float d = scale * (float)(exp(m->logits[c] - lse) - (c == label));
            db[c] += d;
            for (int f = 0; f < m->inputs; f++) dW[c * m->inputs + f] += d * x[f];
        }
    }
    return lse - m->logits[label];
}

static accel_status_t forward_backward(void *state, const accel_layout_t *layout, const float *params,
                                       float *grads, const accel_batch_t *batch, float grad_scale,
                                       double *loss_sum)
{
    softmax_t *m = state;
    *loss_sum = 0;
    for (int i = 0; i < batch->n; i++)
        *loss_sum += sample(m, layout, params, grads, batch->inputs + (size_t)i * m->inputs,
                            batch->targets[i], grad_scale, NULL);
    accel_batch_layer_done(batch, 0);   /* lets accel start reducing the gradients */
    return ACCEL_OK;
}

static accel_status_t eval(void *state, const accel_layout_t *layout, const float *params,
                           const accel_batch_t *batch, float *loss, int *correct)
{
    softmax_t *m = state;
    for (int i = 0; i < batch->n; i++)
        loss[i] = (float)sample(m, layout, params, NULL, batch->inputs + (size_t)i * m->inputs,
                                batch->targets[i], 0.0f, correct ? &correct[i] : NULL);
    return ACCEL_OK;
}

static void destroy(void *state)
{
    softmax_t *m = state;
    free(m->logits);
    free(m);
}

const accel_model_ops_t accel_model_plugin = {
    .abi = ACCEL_MODEL_ABI,
    .name = "softmax_regression",
    .create = create,
    .forward_backward = forward_backward,
    .eval = eval,
    .destroy = destroy,
};
