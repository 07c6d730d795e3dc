/* The data-parallel training loop: each rank computes gradients of its share of every global batch
 * (scaled by 1/global_batch), one allreduce over the flat gradient arena sums them, then every rank
 * clips and applies the same update. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

struct accel_trainer {
    accel_runtime_t *rt;
    const accel_config_t *cfg;
    accel_model_t model;
    accel_comm_t *comm;
    float *params, *grads;
    float *scratch;                 /* per-micro-batch gradients (sync_each_batch) */
    accel_optim_t optim;
    accel_sampler_t sampler;
    int micro;                      /* samples per rank per micro-step */
    float *inputs;
    int32_t *targets;
    int32_t *tokens;                /* language models: micro x (context+1) token ids */
    int64_t *index;
    FILE *metrics;
};

void accel_trainer_destroy(accel_trainer_t *t)
{
    if (!t) return;
    if (t->metrics) fclose(t->metrics);
    free(t->inputs);
    free(t->targets);
    free(t->tokens);
    free(t->index);
    accel_sampler_free(&t->sampler);
    accel_optim_destroy(&t->optim);
    accel_arena_free(t->params);
    accel_arena_free(t->grads);
    accel_arena_free(t->scratch);
    accel_comm_destroy(t->comm);
    accel_model_destroy(&t->model);
    free(t);
}

accel_status_t accel_trainer_create(accel_runtime_t *rt, const accel_config_t *cfg,
                                    accel_trainer_t **out)
{
    *out = NULL;
    if (cfg->data.path[0]) {
        ACCEL_ERROR0("data.path is set ('%s') but this version trains only on the built-in synthetic "
                     "task\n--> hint: leave data.path empty", cfg->data.path);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (strcmp(cfg->precision, "fp32")) {
        ACCEL_ERROR0("precision=%s is not available yet; use precision=fp32", cfg->precision);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (strcmp(cfg->dist.strategy, "ddp")) {
        ACCEL_ERROR0("dist.strategy=%s is not available yet; use dist.strategy=ddp", cfg->dist.strategy);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (cfg->train.steps < 1) {
        ACCEL_ERROR0("train.steps must be at least 1 (got %d)", cfg->train.steps);
        return ACCEL_ERR_CONFIG;
    }
    accel_trainer_t *t = calloc(1, sizeof *t);
    if (!t) return ACCEL_ERR_NOMEM;
    t->rt = rt;
    t->cfg = cfg;
    accel_status_t st;
    char err[512] = "";
    ACCEL_CHECK_GOTO(accel_model_create(cfg, &t->model), st, fail);
    ACCEL_CHECK_GOTO(accel_arena_alloc(&t->model.layout, &t->params), st, fail);
    ACCEL_CHECK_GOTO(accel_arena_alloc(&t->model.layout, &t->grads), st, fail);
    if (cfg->train.sync_each_batch && cfg->train.grad_accum > 1)
        ACCEL_CHECK_GOTO(accel_arena_alloc(&t->model.layout, &t->scratch), st, fail);
    accel_arena_init_params(&t->model.layout, t->params, cfg->seed);
    ACCEL_CHECK_GOTO(accel_optim_create(&cfg->optim, cfg->train.steps, &t->model.layout, 0,
                                        t->model.layout.numel, &t->optim), st, fail);
    ACCEL_CHECK_GOTO(accel_comm_create(rt->world, ACCEL_COMM_MPI, cfg->dist.timeout, &t->comm), st, fail);
    st = accel_sampler_init(&t->sampler, cfg->seed, cfg->data.samples, cfg->train.global_batch,
                            cfg->train.grad_accum, rt->size, rt->rank, true, err, sizeof err);
    if (st != ACCEL_OK) {
        ACCEL_ERROR0("%s", err);
        goto fail;
    }
    t->micro = accel_sampler_micro_batch(&t->sampler);
    t->inputs = malloc(sizeof(float) * (size_t)t->micro * (size_t)cfg->model.inputs);
    t->targets = malloc(sizeof(int32_t) * (size_t)t->micro);
    t->index = malloc(sizeof(int64_t) * (size_t)t->micro);
    if (!t->inputs || !t->targets || !t->index) { st = ACCEL_ERR_NOMEM; goto fail; }
    if (t->model.ops->logits) {     /* a language model: feed it synthetic token rows */
        t->tokens = malloc(sizeof(int32_t) * (size_t)t->micro * ((size_t)cfg->model.context + 1));
        if (!t->tokens) { st = ACCEL_ERR_NOMEM; goto fail; }
    }
    if (rt->rank == 0 && cfg->train.metrics[0]) {
        t->metrics = fopen(cfg->train.metrics, "w");
        if (!t->metrics) ACCEL_WARN("cannot write metrics to '%s'", cfg->train.metrics);
    }
    *out = t;
    return ACCEL_OK;
fail:
    accel_trainer_destroy(t);
    return st;
}

static void load_batch(accel_trainer_t *t, const int64_t *index, int n)
{
    const accel_config_t *cfg = t->cfg;
    if (t->tokens) {
        for (int i = 0; i < n; i++)
            accel_synthetic_tokens(cfg->seed, cfg->model.vocab, cfg->model.context, index[i],
                                   t->tokens + (size_t)i * ((size_t)cfg->model.context + 1));
        return;
    }
    for (int i = 0; i < n; i++)
        accel_synthetic_sample(cfg->seed, cfg->model.inputs, cfg->model.classes, cfg->data.noise,
                               index[i], t->inputs + (size_t)i * cfg->model.inputs, &t->targets[i]);
}

static double grad_norm(const float *g, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
    return sqrt(s);
}

/* Held-out evaluation on samples the training set never uses, shared evenly across ranks. */
static accel_status_t evaluate(accel_trainer_t *t, double *loss, double *accuracy)
{
    const accel_config_t *cfg = t->cfg;
    const int total = 2048, chunk = t->micro;
    double sums[2] = { 0, 0 };
    float *l = malloc(sizeof(float) * (size_t)chunk);
    int *c = malloc(sizeof(int) * (size_t)chunk);
    if (!l || !c) { free(l); free(c); return ACCEL_ERR_NOMEM; }
    int lo = (int)((int64_t)total * t->rt->rank / t->rt->size);
    int hi = (int)((int64_t)total * (t->rt->rank + 1) / t->rt->size);
    accel_status_t st = ACCEL_OK;
    for (int s = lo; s < hi && st == ACCEL_OK; s += chunk) {
        int n = hi - s < chunk ? hi - s : chunk;
        for (int i = 0; i < n; i++) t->index[i] = cfg->data.samples + s + i;
        load_batch(t, t->index, n);
        accel_batch_t b = { .n = n, .inputs = t->inputs, .targets = t->targets, .tokens = t->tokens,
                            .index = t->index };
        st = t->model.ops->eval(t->model.state, &t->model.layout, t->params, &b, l, c);
        for (int i = 0; i < n && st == ACCEL_OK; i++) { sums[0] += l[i]; sums[1] += c[i]; }
    }
    free(l);
    free(c);
    ACCEL_CHECK(st);
    double global[2];
    MPI_Allreduce(sums, global, 2, MPI_DOUBLE, MPI_SUM, accel_comm_mpi(t->comm));
    *loss = global[0] / total;
    *accuracy = global[1] / total;
    return ACCEL_OK;
}

static void print_header(const accel_trainer_t *t)
{
    const accel_config_t *cfg = t->cfg;
    const accel_runtime_t *rt = t->rt;
    size_t nparams = accel_layout_params(&t->model.layout);
    ACCEL_INFO("model %s: %zu parameters (%.2f MiB fp32) in %d tensors", t->model.ops->name, nparams,
               nparams * 4.0 / 1048576.0, t->model.layout.ntensors);
    ACCEL_INFO("global batch %d = %d ranks x %d grad_accum x %d micro-batch; %d optimizer steps; "
               "%s lr %.3g, %s schedule, %d warm-up steps", cfg->train.global_batch, rt->size,
               cfg->train.grad_accum, t->micro, cfg->train.steps, cfg->optim.name, cfg->optim.lr,
               cfg->optim.schedule, cfg->optim.warmup);
}

accel_status_t accel_trainer_run(accel_trainer_t *t, accel_train_result_t *result)
{
    const accel_config_t *cfg = t->cfg;
    const accel_layout_t *layout = &t->model.layout;
    const float scale = 1.0f / (float)cfg->train.global_batch;
    memset(result, 0, sizeof *result);
    print_header(t);
    double t0 = accel_now(), last_log = t0;
    long samples_since_log = 0;
    for (int step = 0; step < cfg->train.steps; step++) {
        memset(t->grads, 0, sizeof(float) * layout->numel);
        double loss_local = 0;
        /* Gradients travel once, at the accumulation boundary, unless sync_each_batch asks for a
         * reduction after every micro-batch (then each one is computed apart and summed). */
        bool sync_each = cfg->train.sync_each_batch && cfg->train.grad_accum > 1;
        for (int k = 0; k < cfg->train.grad_accum; k++) {
            float *target = sync_each ? t->scratch : t->grads;
            if (sync_each) memset(t->scratch, 0, sizeof(float) * layout->numel);
            accel_sampler_indices(&t->sampler, k, t->index);
            load_batch(t, t->index, t->micro);
            accel_batch_t b = { .n = t->micro, .inputs = t->inputs, .targets = t->targets,
                                .tokens = t->tokens, .index = t->index };
            double l = 0;
            ACCEL_CHECK(t->model.ops->forward_backward(t->model.state, layout, t->params, target, &b,
                                                       scale, &l));
            loss_local += l;
            if (sync_each) {
                ACCEL_CHECK(accel_comm_allreduce(t->comm, t->scratch, t->scratch, layout->numel,
                                                 ACCEL_F32, ACCEL_SUM, NULL));
                for (size_t i = 0; i < layout->numel; i++) t->grads[i] += t->scratch[i];
            }
        }
        accel_sampler_advance(&t->sampler);
        if (!sync_each)
            ACCEL_CHECK(accel_comm_allreduce(t->comm, t->grads, t->grads, layout->numel, ACCEL_F32,
                                             ACCEL_SUM, NULL));
        double loss_global = 0;
        MPI_Allreduce(&loss_local, &loss_global, 1, MPI_DOUBLE, MPI_SUM, accel_comm_mpi(t->comm));
        double loss = loss_global / cfg->train.global_batch;
        if (!isfinite(loss)) {
            ACCEL_ERROR0("the training loss became %g at step %d\n--> hint: lower optim.lr or set "
                         "train.clip", loss, step + 1);
            return ACCEL_ERR_INVALID;
        }
        double norm = grad_norm(t->grads, layout->numel);
        if (cfg->train.clip > 0 && norm > cfg->train.clip) {
            float c = (float)(cfg->train.clip / (norm + 1e-6));
            for (size_t i = 0; i < layout->numel; i++) t->grads[i] *= c;
        }
        double lr = accel_optim_step(&t->optim, t->params, t->grads);
        if (step == 0) result->first_loss = loss;
        result->last_loss = loss;
        result->steps = step + 1;
        samples_since_log += cfg->train.global_batch;
        if (t->metrics)
            fprintf(t->metrics, "{\"step\": %d, \"loss\": %.9g, \"lr\": %.6g, \"grad_norm\": %.6g, "
                    "\"time\": %.4f}\n", step + 1, loss, lr, norm, accel_now() - t0);
        bool last = step + 1 == cfg->train.steps;
        if ((cfg->train.log_every > 0 && (step + 1) % cfg->train.log_every == 0) || last || step == 0) {
            double now = accel_now();
            double rate = samples_since_log / (now - last_log > 1e-9 ? now - last_log : 1e-9);
            double per_step = (now - t0) / (step + 1);
            ACCEL_INFO("step %5d/%d  loss %.4f  lr %.3e  grad-norm %.3f  %.0f samples/s  %.1f s left",
                       step + 1, cfg->train.steps, loss, lr, norm, rate,
                       per_step * (cfg->train.steps - step - 1));
            last_log = now;
            samples_since_log = 0;
        }
    }
    result->seconds = accel_now() - t0;
    double eval_loss, accuracy;
    ACCEL_CHECK(evaluate(t, &eval_loss, &accuracy));
    ACCEL_INFO("done: %d steps in %.2f s; train loss %.4f -> %.4f; held-out loss %.4f, accuracy %.1f%%",
               result->steps, result->seconds, result->first_loss, result->last_loss, eval_loss,
               100.0 * accuracy);
    if (t->metrics) {
        fprintf(t->metrics, "{\"eval_loss\": %.9g, \"eval_accuracy\": %.6g}\n", eval_loss, accuracy);
        fflush(t->metrics);
    }
    return ACCEL_OK;
}
