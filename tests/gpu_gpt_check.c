/* GPU tests of the CUDA GPT engine against the CPU reference model (src/nn/gpt.c), tensor by
 * tensor. Exits 77 ("SKIP: no CUDA device: <why>") where no GPU is usable.
 *
 *   gradients   one forward+backward of a tiny GPT on the same weights and tokens: the loss, and
 *               for every tensor of the table the relative error ||g_gpu - g_cpu|| / ||g_cpu||
 *               (printed per tensor, worst first flagged), in fp32, bf16 and fp16
 *   eval        per-sample losses of a forward-only pass
 *   update      one AdamW and one SGD update from the same start: parameter changes agree
 *   step path   the trainer's sequence (forward_backward, finish_grads, step) under ddp and under
 *               zero1 (one rank: per-layer owned ranges): loss, gradient norm and update
 *
 * Built twice: as gpu_gpt_check (the real device) and, with ACCEL_GPU_MOCK=1, as gpu_mock_check
 * linked with tests/gpu_mock.c, an emulated device that checks the engine's host code without a GPU.
 *
 * Usage: gpu_gpt_check [--probe]   (--probe: exit 0 when a GPU is usable, 77 otherwise) */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

#define L_ 2
#define NH_ 4
#define C_ 64
#define T_ 32
#define V_ 100      /* not a multiple of 64: exercises the padded logits stride */
#define B_ 4

typedef struct {
    accel_config_t cfg;
    accel_model_t model;
    float *params, *grads;
    int32_t *tokens;
} ref_t;

static void ref_open(ref_t *r, const char *precision)
{
    memset(r, 0, sizeof *r);
    accel_config_defaults(&r->cfg);
    snprintf(r->cfg.model.name, sizeof r->cfg.model.name, "gpt");
    snprintf(r->cfg.precision, sizeof r->cfg.precision, "%s", precision);
    r->cfg.model.layers = L_;
    r->cfg.model.heads = NH_;
    r->cfg.model.width = C_;
    r->cfg.model.context = T_;
    r->cfg.model.vocab = V_;
    if (accel_model_create(&r->cfg, &r->model) != ACCEL_OK ||
        accel_arena_alloc(&r->model.layout, &r->params) != ACCEL_OK ||
        accel_arena_alloc(&r->model.layout, &r->grads) != ACCEL_OK) {
        fprintf(stderr, "cannot create the CPU reference model\n");
        exit(1);
    }
    accel_arena_init_params(&r->model.layout, r->params, 1234);
    r->tokens = malloc(sizeof(int32_t) * B_ * (T_ + 1));
    for (int i = 0; i < B_ * (T_ + 1); i++)
        r->tokens[i] = (int32_t)(accel_rng_uniform(77, ACCEL_RNG_DATA, 5, (uint64_t)i) * V_) % V_;
}

static void ref_close(ref_t *r)
{
    free(r->tokens);
    accel_arena_free(r->params);
    accel_arena_free(r->grads);
    accel_model_destroy(&r->model);
}

/* An engine on r's layout, owning the whole arena (ddp on one rank). */
static accel_gpt_cuda_t *engine_open(ref_t *r, const unsigned char *decay, int adam)
{
    accel_gpt_cuda_range_t range = { 0, r->model.layout.numel, 0 };
    accel_gpt_cuda_config_t gc = { .cfg = &r->cfg, .layout = &r->model.layout, .micro = B_,
                                   .grad_accum = 1, .sharded = 0, .ranges = &range, .nranges = 1,
                                   .owned_n = r->model.layout.numel, .decay_mask = decay,
                                   .adam = adam, .comm = MPI_COMM_WORLD };
    accel_gpt_cuda_t *g = NULL;
    if (accel_gpt_cuda_create(&gc, &g) != ACCEL_OK) return NULL;
    float *zeros = calloc(r->model.layout.numel, sizeof(float));
    accel_status_t st = accel_gpt_cuda_upload(g, r->params, zeros, zeros);
    free(zeros);
    if (st != ACCEL_OK) {
        accel_gpt_cuda_destroy(g);
        return NULL;
    }
    return g;
}

static double norm_diff(const float *a, const float *b, size_t n, double *ref_norm)
{
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a[i] - (double)b[i];
        d += e * e;
        r += (double)b[i] * b[i];
    }
    *ref_norm = sqrt(r);
    return sqrt(d);
}

/* The GPU pass runs with grad_scale = loss_scale / B (fp16 needs a loss scale, as in training,
 * or small gradients underflow) and its gradients are divided by loss_scale before comparing. */
static int check_gradients(const char *precision, double tol, double loss_tol, float loss_scale)
{
    ref_t r;
    ref_open(&r, "fp32");                           /* the reference is always fp32 */
    snprintf(r.cfg.precision, sizeof r.cfg.precision, "%s", precision);   /* the engine's */
    const accel_layout_t *lay = &r.model.layout;
    accel_batch_t b = { .n = B_, .tokens = r.tokens };
    double loss_cpu = 0, loss_gpu = 0;
    int fails = 0;
    if (r.model.ops->forward_backward(r.model.state, lay, r.params, r.grads, &b, 1.0f / B_,
                                      &loss_cpu) != ACCEL_OK) {
        printf("FAIL: CPU forward_backward\n");
        ref_close(&r);
        return 1;
    }
    unsigned char *decay = calloc(lay->numel, 1);
    accel_gpt_cuda_t *g = engine_open(&r, decay, 1);
    float *gg = calloc(lay->numel, sizeof(float));
    if (!g || accel_gpt_cuda_gradients(g, r.tokens, B_, loss_scale / B_, gg, &loss_gpu) != ACCEL_OK) {
        printf("FAIL: %s: GPU engine gradients (see the error above)\n", precision);
        fails = 1;
        goto done;
    }
    for (size_t i = 0; i < lay->numel; i++) gg[i] /= loss_scale;
    double lrel = fabs(loss_gpu - loss_cpu) / fabs(loss_cpu);
    printf("%s: loss CPU fp32 %.7f  GPU %.7f  relative difference %.2e (tolerance %.0e)\n", precision,
           loss_cpu, loss_gpu, lrel, loss_tol);
    if (!(lrel <= loss_tol)) fails++;
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < lay->ntensors; i++) {
        const accel_tensor_t *t = &lay->tensors[i];
        double rn, d = norm_diff(gg + t->offset, r.grads + t->offset, t->numel, &rn);
        double rel = rn > 0 ? d / rn : d;
        int bad = !(rel <= tol);
        printf("  %-22s |g_cpu| %.4e  |g_gpu - g_cpu| %.4e  relative %.2e%s\n", t->name, rn, d, rel,
               bad ? "  <-- above tolerance" : "");
        if (!(rel <= worst)) { worst = rel; worst_name = t->name; }
        fails += bad;
    }
    printf("%s: worst relative gradient error %.2e in %s (tolerance %.0e): %s\n", precision, worst,
           worst_name, tol, fails ? "FAIL" : "ok");
done:
    free(gg);
    free(decay);
    accel_gpt_cuda_destroy(g);
    ref_close(&r);
    return fails;
}

static int check_eval(const char *precision, double tol)
{
    ref_t r;
    ref_open(&r, "fp32");
    snprintf(r.cfg.precision, sizeof r.cfg.precision, "%s", precision);
    accel_batch_t b = { .n = B_, .tokens = r.tokens };
    float lc[B_], lg[B_];
    int fails = 0;
    if (r.model.ops->eval(r.model.state, &r.model.layout, r.params, &b, lc, NULL) != ACCEL_OK) fails++;
    unsigned char *decay = calloc(r.model.layout.numel, 1);
    accel_gpt_cuda_t *g = engine_open(&r, decay, 1);
    if (!g || accel_gpt_cuda_eval(g, r.tokens, B_, lg) != ACCEL_OK) fails++;
    for (int i = 0; !fails && i < B_; i++) {
        double rel = fabs((double)lg[i] - lc[i]) / fabs((double)lc[i]);
        printf("%s eval: sample %d loss CPU %.6f GPU %.6f relative %.2e\n", precision, i, lc[i], lg[i], rel);
        if (!(rel <= tol)) fails++;
    }
    printf("%s eval: %s\n", precision, fails ? "FAIL" : "ok");
    free(decay);
    accel_gpt_cuda_destroy(g);
    ref_close(&r);
    return fails;
}

/* One optimizer update from the same parameters: the GPU's parameter change (from its own fp32
 * gradients) against the CPU optimizer's (from the CPU gradients). A large AdamW eps keeps the
 * update proportional to the gradient, so tiny gradient differences cannot flip whole steps. */
static int check_update(int adam)
{
    ref_t r;
    ref_open(&r, "fp32");
    r.cfg.optim.lr = 1e-2;
    r.cfg.optim.eps = 1e-3;
    r.cfg.optim.weight_decay = 0.1;
    r.cfg.optim.momentum = 0.9;
    r.cfg.optim.warmup = 0;
    snprintf(r.cfg.optim.name, sizeof r.cfg.optim.name, "%s", adam ? "adamw" : "sgd");
    const accel_layout_t *lay = &r.model.layout;
    const size_t n = lay->numel;
    int fails = 0;
    accel_batch_t b = { .n = B_, .tokens = r.tokens };
    double loss;
    accel_optim_t opt;
    float *p0 = malloc(n * sizeof(float)), *pc = malloc(n * sizeof(float)), *pg = malloc(n * sizeof(float));
    float *gg = malloc(n * sizeof(float));
    memcpy(p0, r.params, n * sizeof(float));
    if (r.model.ops->forward_backward(r.model.state, lay, r.params, r.grads, &b, 1.0f / B_, &loss) ||
        accel_optim_create(&r.cfg.optim, 10, n, &opt)) {
        printf("FAIL: CPU reference update\n");
        return 1;
    }
    accel_optim_mark_decay(&opt, lay, 0, n, 0);
    accel_gpt_cuda_t *g = engine_open(&r, opt.decay_mask, adam);
    memcpy(pc, p0, n * sizeof(float));
    double lr = accel_optim_step(&opt, pc, r.grads, 1.0f);
    accel_gpt_cuda_update_t u = { .lr = (float)lr, .beta1 = (float)r.cfg.optim.beta1,
                                  .beta2 = (float)r.cfg.optim.beta2, .eps = (float)r.cfg.optim.eps,
                                  .weight_decay = (float)r.cfg.optim.weight_decay,
                                  .momentum = (float)r.cfg.optim.momentum,
                                  .bias_corr1 = (float)(1.0 - r.cfg.optim.beta1),
                                  .bias_corr2 = (float)(1.0 - r.cfg.optim.beta2), .grad_mul = 1.0f };
    if (!g || accel_gpt_cuda_gradients(g, r.tokens, B_, 1.0f / B_, gg, &loss) != ACCEL_OK ||
        accel_gpt_cuda_step(g, &u) != ACCEL_OK || accel_gpt_cuda_download(g, pg, NULL, NULL, NULL) != ACCEL_OK) {
        printf("FAIL: %s update on the GPU (see the error above)\n", adam ? "AdamW" : "SGD");
        fails = 1;
    } else {
        for (size_t i = 0; i < n; i++) {
            pc[i] -= p0[i];
            pg[i] -= p0[i];
        }
        double rn, d = norm_diff(pg, pc, n, &rn);
        fails = !(d <= 1e-3 * rn);
        printf("%s update: |dp_cpu| %.4e  |dp_gpu - dp_cpu| %.4e  relative %.2e (tolerance 1e-3): %s\n",
               adam ? "AdamW" : "SGD", rn, d, rn > 0 ? d / rn : d, fails ? "FAIL" : "ok");
    }
    accel_gpt_cuda_destroy(g);
    accel_optim_destroy(&opt);
    free(p0); free(pc); free(pg); free(gg);
    ref_close(&r);
    return fails;
}

/* The trainer's call sequence on one rank, ddp (one range) or zero1 (one range per layer). */
static int check_step_path(int sharded)
{
    ref_t r;
    ref_open(&r, "fp32");
    r.cfg.optim.lr = 1e-2;
    r.cfg.optim.eps = 1e-3;
    r.cfg.optim.weight_decay = 0.1;
    r.cfg.optim.warmup = 0;
    const accel_layout_t *lay = &r.model.layout;
    const size_t n = lay->numel;
    const int nl = lay->nlayers;
    int fails = 0, nr = 0;
    accel_gpt_cuda_range_t *ranges = calloc((size_t)nl + 1, sizeof *ranges);
    size_t *b = calloc((size_t)nl, sizeof *b), *e = calloc((size_t)nl, sizeof *e), owned_n = 0;
    if (!sharded) {
        ranges[nr++] = (accel_gpt_cuda_range_t){ 0, n, 0 };
        owned_n = n;
    } else {
        accel_gpt_cuda_plan_layer_spans(lay, ACCEL_ARENA_ALIGN, b, e);  /* one rank: slice = layer */
        for (int l = 0; l < nl; l++) {
            ranges[nr++] = (accel_gpt_cuda_range_t){ b[l], e[l], owned_n };
            owned_n += e[l] - b[l];
        }
    }
    accel_batch_t bt = { .n = B_, .tokens = r.tokens };
    double loss_cpu, sumsq_cpu = 0;
    accel_optim_t opt, opt_ref;
    float *p0 = malloc(n * sizeof(float)), *pc = malloc(n * sizeof(float)), *pg = malloc(n * sizeof(float));
    float *zeros = calloc(owned_n, sizeof(float));
    memcpy(p0, r.params, n * sizeof(float));
    memcpy(pc, p0, n * sizeof(float));
    r.model.ops->forward_backward(r.model.state, lay, r.params, r.grads, &bt, 1.0f / B_, &loss_cpu);
    for (size_t i = 0; i < n; i++) sumsq_cpu += (double)r.grads[i] * r.grads[i];
    accel_optim_create(&r.cfg.optim, 10, n, &opt_ref);
    accel_optim_mark_decay(&opt_ref, lay, 0, n, 0);
    double lr = accel_optim_step(&opt_ref, pc, r.grads, 1.0f);
    accel_optim_create(&r.cfg.optim, 10, owned_n, &opt);
    for (int i = 0; i < nr; i++) accel_optim_mark_decay(&opt, lay, ranges[i].begin, ranges[i].end, ranges[i].owned);
    accel_gpt_cuda_config_t gc = { .cfg = &r.cfg, .layout = lay, .micro = B_, .grad_accum = 1,
                                   .sharded = sharded, .ranges = ranges, .nranges = nr,
                                   .owned_n = owned_n, .decay_mask = opt.decay_mask, .adam = 1,
                                   .comm = MPI_COMM_WORLD };
    accel_gpt_cuda_t *g = NULL;
    double loss = 0, sumsq = 0;
    int replicas = 0, finite = 0;
    accel_gpt_cuda_update_t u = { .lr = (float)lr, .beta1 = (float)r.cfg.optim.beta1,
                                  .beta2 = (float)r.cfg.optim.beta2, .eps = (float)r.cfg.optim.eps,
                                  .weight_decay = (float)r.cfg.optim.weight_decay,
                                  .bias_corr1 = (float)(1.0 - r.cfg.optim.beta1),
                                  .bias_corr2 = (float)(1.0 - r.cfg.optim.beta2), .grad_mul = 1.0f };
    const char *what = sharded ? "zero1" : "ddp";
    size_t estimate = 0;
    accel_gpt_cuda_estimate_bytes(&r.cfg, B_, n, owned_n, sharded, &estimate);
    if (accel_gpt_cuda_create(&gc, &g) != ACCEL_OK || accel_gpt_cuda_upload(g, p0, zeros, zeros) != ACCEL_OK ||
        accel_gpt_cuda_forward_backward(g, r.tokens, B_, 0, 1, 1.0f / B_) != ACCEL_OK ||
        accel_gpt_cuda_finish_grads(g, &loss, &sumsq, &replicas, &finite) != ACCEL_OK ||
        accel_gpt_cuda_step(g, &u) != ACCEL_OK || accel_gpt_cuda_download(g, pg, NULL, NULL, NULL) != ACCEL_OK) {
        printf("FAIL: %s step path on the GPU (see the error above)\n", what);
        fails = 1;
    } else {
        double lrel = fabs(loss - loss_cpu) / fabs(loss_cpu), srel = fabs(sumsq - sumsq_cpu) / sumsq_cpu;
        for (size_t i = 0; i < n; i++) {
            pc[i] -= p0[i];
            pg[i] -= p0[i];
        }
        double rn, d = norm_diff(pg, pc, n, &rn);
        fails = !(lrel <= 1e-5) + !(srel <= 1e-3) + !(d <= 1e-3 * rn) + (finite != 1) + (replicas != 1);
        if (estimate != accel_gpt_cuda_device_bytes(g)) {
            printf("%s: device memory estimate %zu bytes, the engine allocated %zu\n", what, estimate,
                   accel_gpt_cuda_device_bytes(g));
            fails++;
        }
        printf("%s step path (%d owned range%s): loss rel %.2e, grad sumsq rel %.2e, update rel %.2e, "
               "finite %d, replicas %d: %s\n", what, nr, nr == 1 ? "" : "s", lrel, srel, rn > 0 ? d / rn : d,
               finite, replicas, fails ? "FAIL" : "ok");
    }
    accel_gpt_cuda_destroy(g);
    accel_optim_destroy(&opt);
    accel_optim_destroy(&opt_ref);
    free(p0); free(pc); free(pg); free(zeros); free(ranges); free(b); free(e);
    ref_close(&r);
    return fails;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    accel_mpi_defaults();
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    accel_log_set_identity(rank, size, "gpu_gpt_check");
    setvbuf(stdout, NULL, _IOLBF, 0);   /* keep our lines in order with the log (stderr) */
#if ACCEL_GPU_MOCK
    (void)argc; (void)argv;
#if !ACCEL_HAVE_CUDA
    printf("SKIP: accel was built without CUDA: no GPU engine to check\n");
    MPI_Finalize();
    return 77;
#endif
    printf("device: emulated on the host (tests/gpu_mock.c): checks the engine's host code\n");
#else
    const char *why = NULL;
    int ndev = accel_device_cuda_count(&why);
    if (ndev == 0) {
        printf("SKIP: no CUDA device: %s\n", why ? why : "unknown reason");
        MPI_Finalize();
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) {
        printf("%d CUDA device(s)\n", ndev);
        MPI_Finalize();
        return 0;
    }
    accel_device_t dev;
    if (accel_device_select("cuda", 0, &dev) != ACCEL_OK) {
        MPI_Finalize();
        return 1;
    }
    printf("device: %s\n", dev.name);
#endif
    int fails = 0;
    fails += check_gradients("fp32", 1e-3, 1e-5, 1.0f);
    fails += check_gradients("bf16", 5e-2, 1e-2, 1.0f);
    fails += check_gradients("fp16", 5e-2, 1e-2, 1024.0f);
    fails += check_eval("fp32", 1e-5);
    fails += check_eval("bf16", 1e-2);
    fails += check_update(1);
    fails += check_update(0);
    fails += check_step_path(0);
    fails += check_step_path(1);
    printf("%s: %d check(s) failed\n", fails ? "FAIL" : "PASS", fails);
    MPI_Finalize();
    return fails ? 1 : 0;
}
