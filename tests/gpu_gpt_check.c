/* GPU tests of the CUDA decoder engine against the CPU reference model (src/nn/decoder.c), tensor
 * by tensor, for a GPT and for Llamas (grouped-query and multi-query attention, tied and separate
 * heads, q/k/v biases, Llama-3.1 RoPE scaling). Exits 77 ("SKIP: no CUDA device: <why>") where no
 * GPU is usable.
 *
 *   gradients   one forward+backward of a tiny GPT on the same weights and tokens: the loss, and
 *               for every tensor of the table the relative error ||g_gpu - g_cpu|| / ||g_cpu||
 *               (printed per tensor, worst first flagged), in fp32, bf16 and fp16
 *   eval        per-sample losses of a forward-only pass
 *   update      one AdamW and one SGD update from the same start, with the trainer's device
 *               operations (src/train/devops.h) on device memory: parameter changes agree
 * (The trainer's step sequence under every strategy is tests/gpu_mock.sh's and gpu_train.sh's.)
 *
 * Built twice: as gpu_gpt_check (the real device) and, with ACCEL_GPU_MOCK=1, as gpu_mock_check
 * linked with tests/gpu_mock.c, an emulated device that checks the model's host code without a GPU.
 *
 * Usage: gpu_gpt_check [--probe]   (--probe: exit 0 when a GPU is usable, 77 otherwise) */
#include "build_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "../src/train/devops.h"
#include "../src/train/optim.h"

#define B_ 4

/* One model configuration: dimensions, then any other keys ("key=value ..."). */
typedef struct {
    const char *label;
    int L, NH, C, T, V;             /* V not a multiple of 64: exercises the padded logits stride */
    const char *keys;
} spec_t;

static const spec_t k_gpt = { "gpt", 2, 4, 64, 32, 100, "model.name=gpt" };
/* grouped-query attention (2 query heads per kv head), tied head */
static const spec_t k_llama_gqa = { "llama gqa", 2, 4, 64, 32, 100,
                                    "model.name=llama model.kv_heads=2 model.ffn_width=96" };
/* separate LM head, q/k/v biases, Llama-3.1 RoPE scaling, a context of 23 */
static const spec_t k_llama_untied = { "llama untied+bias", 2, 4, 64, 23, 100,
                                       "model.name=llama model.kv_heads=2 model.tie_embeddings=false "
                                       "model.attention_bias=true model.rope_scaling=llama3 "
                                       "model.rope_theta=500000 model.rope_original_context=16 "
                                       "model.rope_factor=4 model.rms_eps=1e-6" };
/* multi-query attention (one kv head), tied, default SwiGLU width, a context of 19 */
static const spec_t k_llama_mqa = { "llama mqa", 3, 4, 48, 19, 77,
                                    "model.name=llama model.kv_heads=1" };
/* Qwen3's attention: q/k norms, 4 heads of 24 over a width of 64 (attention wider than the width) */
static const spec_t k_qwen3 = { "qwen3", 2, 4, 64, 32, 100,
                                "model.name=llama model.kv_heads=2 model.head_dim=24 model.qk_norm=true "
                                "model.ffn_width=96 model.rope_theta=1000000 model.rms_eps=1e-6" };
static const spec_t *cur = &k_gpt;

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
    accel_config_set(&r->cfg, "precision", precision, NULL, 0);
    r->cfg.model.layers = cur->L;
    r->cfg.model.heads = cur->NH;
    r->cfg.model.width = cur->C;
    r->cfg.model.context = cur->T;
    r->cfg.model.vocab = cur->V;
    char keys[512], *save = NULL;
    snprintf(keys, sizeof keys, "%s", cur->keys);
    for (char *kv = strtok_r(keys, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '='), why[256];
        *eq = '\0';
        if (accel_config_set(&r->cfg, kv, eq + 1, why, sizeof why) != ACCEL_OK) {
            fprintf(stderr, "bad test key %s: %s\n", kv, why);
            exit(1);
        }
    }
    const int T_ = cur->T, V_ = cur->V;
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

/* The CUDA model on r's layout, with r's parameters in device memory and zeroed device gradients. */
typedef struct {
    const accel_devops_t *ops;
    accel_model_t model;
    float *params, *grads;          /* device memory */
} gpu_t;

static void gpu_close(gpu_t *g)
{
    if (g->ops) {
        if (g->params) g->ops->arena_free(&g->model.layout, false, g->params);
        if (g->grads) g->ops->arena_free(&g->model.layout, false, g->grads);
    }
    accel_model_destroy(&g->model);
    memset(g, 0, sizeof *g);
}

static int gpu_open(ref_t *r, gpu_t *g)
{
    memset(g, 0, sizeof *g);
    if (accel_devops_for(ACCEL_DEVICE_CUDA, &g->ops) != ACCEL_OK ||
        accel_model_create_on(&r->cfg, ACCEL_DEVICE_CUDA, &g->model) != ACCEL_OK ||
        g->model.layout.numel != r->model.layout.numel ||
        g->ops->arena_alloc(&g->model.layout, false, &g->params) != ACCEL_OK ||
        g->ops->arena_alloc(&g->model.layout, false, &g->grads) != ACCEL_OK ||
        g->ops->upload(g->params, r->params, sizeof(float) * r->model.layout.numel) != ACCEL_OK) {
        gpu_close(g);
        return -1;
    }
    return 0;
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

/* The loss mask the checks' batches carry (NULL: none): prompt/completion data. */
static uint8_t g_mask[B_ * (64 + 1)];      /* the specs' contexts are at most 64 */
static const uint8_t *cur_mask;
/* Packed documents (data.document_mask): positions restarting at each document (NULL: none), and
 * the loss mask that leaves out the targets that begin a document, made for cur's context. */
static int32_t g_pos[B_ * 64];
static const int32_t *cur_pos;

static void pack_documents(int T)
{
    for (int b = 0; b < B_; b++)
        for (int t = 0; t <= T; t++) {
            const bool start = t == 0 || (t * 5 + b * 3) % 7 == 0 || t == 2;     /* documents of 1 to 7 */
            if (t < T) g_pos[b * T + t] = start ? 0 : g_pos[b * T + t - 1] + 1;
            g_mask[b * (T + 1) + t] = !start;
        }
    cur_pos = g_pos;
    cur_mask = g_mask;
}

/* The GPU pass runs with grad_scale = loss_scale / B (fp16 needs a loss scale, as in training,
 * or small gradients underflow) and its gradients are divided by loss_scale before comparing. */
static int check_gradients(const char *precision, double tol, double loss_tol, float loss_scale)
{
    ref_t r;
    ref_open(&r, "fp32");                           /* the reference is always fp32 */
    accel_config_set(&r.cfg, "precision", precision, NULL, 0);    /* the GPU model's */
    const accel_layout_t *lay = &r.model.layout;
    accel_batch_t b = { .n = B_, .tokens = r.tokens, .loss_mask = cur_mask, .positions = cur_pos };
    double loss_cpu = 0, loss_gpu = 0;
    int fails = 0;
    if (r.model.ops->forward_backward(r.model.state, lay, r.params, r.grads, &b, 1.0f / B_,
                                      &loss_cpu) != ACCEL_OK) {
        printf("FAIL: CPU forward_backward\n");
        ref_close(&r);
        return 1;
    }
    gpu_t g;
    float *gg = calloc(lay->numel, sizeof(float));
    if (gpu_open(&r, &g) ||
        g.model.ops->forward_backward(g.model.state, &g.model.layout, g.params, g.grads, &b,
                                      loss_scale / B_, &loss_gpu) != ACCEL_OK ||
        g.ops->download(gg, g.grads, sizeof(float) * lay->numel) != ACCEL_OK) {
        printf("FAIL: %s: GPU model gradients (see the error above)\n", precision);
        fails = 1;
        goto done;
    }
    for (size_t i = 0; i < lay->numel; i++) gg[i] /= loss_scale;
    double lrel = fabs(loss_gpu - loss_cpu) / fabs(loss_cpu);
    printf("%s %s: loss CPU fp32 %.7f  GPU %.7f  relative difference %.2e (tolerance %.0e)\n",
           cur->label, precision, loss_cpu, loss_gpu, lrel, loss_tol);
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
    printf("%s %s: worst relative gradient error %.2e in %s (tolerance %.0e): %s\n", cur->label,
           precision, worst, worst_name, tol, fails ? "FAIL" : "ok");
done:
    free(gg);
    gpu_close(&g);
    ref_close(&r);
    return fails;
}

static int check_eval(const char *precision, double tol)
{
    ref_t r;
    ref_open(&r, "fp32");
    accel_config_set(&r.cfg, "precision", precision, NULL, 0);
    accel_batch_t b = { .n = B_, .tokens = r.tokens, .loss_mask = cur_mask, .positions = cur_pos };
    float lc[B_], lg[B_];
    int fails = 0;
    if (r.model.ops->eval(r.model.state, &r.model.layout, r.params, &b, lc, NULL) != ACCEL_OK) fails++;
    gpu_t g;
    if (gpu_open(&r, &g) ||
        g.model.ops->eval(g.model.state, &g.model.layout, g.params, &b, lg, NULL) != ACCEL_OK) fails++;
    for (int i = 0; !fails && i < B_; i++) {
        double rel = fabs((double)lg[i] - lc[i]) / fabs((double)lc[i]);
        printf("%s %s eval: sample %d loss CPU %.6f GPU %.6f relative %.2e\n", cur->label, precision, i,
               lc[i], lg[i], rel);
        if (!(rel <= tol)) fails++;
    }
    printf("%s %s eval: %s\n", cur->label, precision, fails ? "FAIL" : "ok");
    gpu_close(&g);
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
    memcpy(pc, p0, n * sizeof(float));
    double lr = accel_optim_step(&opt, pc, r.grads, 1.0f), lr_gpu = 0;
    gpu_t g;
    accel_optim_t opt_gpu;
    int have_opt = 0;
    if (gpu_open(&r, &g) ||
        g.model.ops->forward_backward(g.model.state, &g.model.layout, g.params, g.grads, &b, 1.0f / B_,
                                      &loss) != ACCEL_OK ||
        accel_optim_create_on(&r.cfg.optim, 10, n, g.ops, &opt_gpu) != ACCEL_OK || !(have_opt = 1) ||
        (accel_optim_mark_decay(&opt_gpu, lay, 0, n, 0), 0) ||
        accel_optim_update(&opt_gpu, g.params, g.grads, 1.0f, &lr_gpu) != ACCEL_OK ||
        g.ops->download(pg, g.params, n * sizeof(float)) != ACCEL_OK || lr_gpu != lr) {
        printf("FAIL: %s update on the GPU (see the error above)\n", adam ? "AdamW" : "SGD");
        fails = 1;
    } else {
        for (size_t i = 0; i < n; i++) {
            pc[i] -= p0[i];
            pg[i] -= p0[i];
        }
        double rn, d = norm_diff(pg, pc, n, &rn);
        fails = !(d <= 1e-3 * rn);
        printf("%s %s update: |dp_cpu| %.4e  |dp_gpu - dp_cpu| %.4e  relative %.2e (tolerance 1e-3): %s\n",
               cur->label, adam ? "AdamW" : "SGD", rn, d, rn > 0 ? d / rn : d, fails ? "FAIL" : "ok");
    }
    if (have_opt) accel_optim_destroy(&opt_gpu);
    gpu_close(&g);
    accel_optim_destroy(&opt);
    free(p0); free(pc); free(pg); free(gg);
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
    printf("SKIP: accel was built without CUDA: no GPU model to check\n");
    MPI_Finalize();
    return 77;
#endif
    printf("device: emulated on the host (tests/gpu_mock.c): checks the model's host code\n");
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
    /* the llama's building blocks: fp32 tight, bf16 loose */
    const spec_t *llamas[] = { &k_llama_gqa, &k_llama_untied, &k_llama_mqa, &k_qwen3 };
    for (int i = 0; i < 4; i++) {
        cur = llamas[i];
        fails += check_gradients("fp32", 1e-3, 1e-5, 1.0f);
        fails += check_gradients("bf16", 5e-2, 1e-2, 1.0f);
        fails += check_eval("fp32", 1e-5);
    }
    cur = &k_llama_untied;
    fails += check_gradients("fp16", 5e-2, 1e-2, 1024.0f);
    fails += check_eval("bf16", 1e-2);
    fails += check_update(1);
    fails += check_update(0);
    /* a loss mask (a third of the targets trained) on the GPT and a Llama */
    for (size_t i = 0; i < sizeof g_mask; i++) g_mask[i] = (uint8_t)((i * 7 + 3) % 5 < 2);
    cur_mask = g_mask;
    const spec_t *masked[] = { &k_gpt, &k_llama_gqa, &k_qwen3 };
    for (int i = 0; i < 3; i++) {
        cur = masked[i];
        printf("with a loss mask:\n");
        fails += check_gradients("fp32", 1e-3, 1e-5, 1.0f);
        fails += check_gradients("bf16", 5e-2, 1e-2, 1.0f);
        fails += check_eval("fp32", 1e-5);
    }
    /* packed documents: attention within each, positions restarting (wpe; RoPE) */
    const spec_t *packed[] = { &k_gpt, &k_llama_gqa, &k_qwen3 };
    for (int i = 0; i < 3; i++) {
        cur = packed[i];
        pack_documents(cur->T);
        printf("with packed documents:\n");
        fails += check_gradients("fp32", 1e-3, 1e-5, 1.0f);
        fails += check_gradients("bf16", 5e-2, 1e-2, 1.0f);
        fails += check_eval("fp32", 1e-5);
    }
    cur_mask = NULL;
    cur_pos = NULL;
    printf("%s: %d check(s) failed\n", fails ? "FAIL" : "PASS", fails);
    MPI_Finalize();
    return fails ? 1 : 0;
}
