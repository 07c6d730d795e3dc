/* Unit tests of the train layer (single process): learning-rate schedules, the AdamW step, the
 * gradient reductions behind clipping and the fp16 overflow check, and the FLOP count and peaks of
 * MFU. The multi-rank trainer is tested
 * end to end (tests/train_*.sh, zero_equivalence.sh). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/train/amp.h"
#include "accel/arena.h"
#include "../src/train/devops.h"
#include "../src/train/flops.h"
#include "accel/model.h"
#include "../src/train/optim.h"

/* ---------------------------------------------------------------- optimizer */
START_TEST(test_lr_schedules)
{
    accel_optim_config_t c = { .lr = 1.0, .warmup = 4, .min_lr_ratio = 0.1 };
    snprintf(c.schedule, sizeof c.schedule, "cosine");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 0), 0.25, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 3), 1.0, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 4), 1.0, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 0.1, 1e-12);
    snprintf(c.schedule, sizeof c.schedule, "linear");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 0.1, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 21, 12), 0.55, 1e-12);
    snprintf(c.schedule, sizeof c.schedule, "constant");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 1.0, 1e-12);
}
END_TEST

START_TEST(test_adamw_step)
{
    accel_layout_t l;
    accel_layout_init(&l);
    int64_t s[1] = { 2 };
    accel_layout_add(&l, "w", 1, s, 0, 0, 0, NULL);
    accel_layout_add(&l, "b", 1, s, 0, ACCEL_TENSOR_NO_DECAY, 0, NULL);
    accel_optim_config_t c = { .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                               .weight_decay = 0.5, .warmup = 0, .min_lr_ratio = 1.0 };
    snprintf(c.name, sizeof c.name, "adamw");
    snprintf(c.schedule, sizeof c.schedule, "constant");
    accel_optim_t opt;
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &opt), ACCEL_OK);
    accel_optim_mark_decay(&opt, &l, 0, l.numel, 0);
    float p[32] = { 0 }, g[32] = { 0 };
    p[0] = 1.0f; g[0] = 0.3f;      /* w[0]: decayed */
    p[16] = 1.0f; g[16] = 0.3f;    /* b[0]: not decayed */
    accel_optim_step(&opt, p, g, 1.0f);
    /* First Adam step moves by lr * sign(g) (bias-corrected m/sqrt(v) = 1), decay by lr*wd*p. */
    ck_assert_float_eq_tol(p[0], 1.0f - 0.1f - 0.1f * 0.5f * 1.0f, 1e-6f);
    ck_assert_float_eq_tol(p[16], 1.0f - 0.1f, 1e-6f);
    ck_assert_float_eq(p[1], 0.0f);
    /* The gradient multiplier applies inside the update: a second step on g/4 with grad_mul 4
     * equals one on g (exactly: powers of two), and differs from one on g/4. */
    accel_optim_t twin, quarter;
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &twin), ACCEL_OK);
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &quarter), ACCEL_OK);
    accel_optim_mark_decay(&twin, &l, 0, l.numel, 0);
    accel_optim_mark_decay(&quarter, &l, 0, l.numel, 0);
    float pt[32], pq[32], g4[32];
    memcpy(pt, p, sizeof p);
    memcpy(pq, p, sizeof p);
    for (int i = 0; i < 32; i++) g4[i] = g[i] / 4;
    const size_t bytes = sizeof(float) * l.numel;
    memcpy(twin.m, opt.m, bytes), memcpy(twin.v, opt.v, bytes);
    memcpy(quarter.m, opt.m, bytes), memcpy(quarter.v, opt.v, bytes);
    twin.step = quarter.step = opt.step;
    accel_optim_step(&opt, p, g, 1.0f);
    accel_optim_step(&twin, pt, g4, 4.0f);
    accel_optim_step(&quarter, pq, g4, 1.0f);
    ck_assert_float_eq(pt[0], p[0]);
    ck_assert_float_eq(pt[16], p[16]);
    ck_assert_float_ne(pq[0], p[0]);
    accel_optim_destroy(&twin);
    accel_optim_destroy(&quarter);
    accel_optim_destroy(&opt);
    accel_layout_free(&l);
}
END_TEST

/* The vectorised reductions behind clipping and the fp16 overflow check: every length (tails
 * shorter than the 16 partial sums included), and a non-finite value anywhere. */
START_TEST(test_grad_reductions)
{
    enum { N = 1000 };
    float *x = malloc(sizeof(float) * N);
    ck_assert_ptr_nonnull(x);
    for (int i = 0; i < N; i++) x[i] = (float)((i * 37) % 101 - 50) * 0.01f;
    ck_assert(accel_sum_squares(x, 0) == 0.0);
    ck_assert(isfinite(accel_sum_squares(x, 0)));
    for (int n = 1; n <= N; n += (n < 40 ? 1 : 97)) {
        double ref = 0;
        for (int i = 0; i < n; i++) ref += (double)x[i] * x[i];
        ck_assert_double_eq_tol(accel_sum_squares(x, (size_t)n), ref, 1e-12 * (ref + 1));
        ck_assert(isfinite(accel_sum_squares(x, (size_t)n)));
        const float bad[3] = { NAN, INFINITY, -INFINITY };
        for (int b = 0; b < 3; b++)
            for (int at = 0; at < n; at += (n > 20 ? n / 7 + 1 : 1)) {
                float keep = x[at];
                x[at] = bad[b];
                /* the fp16 overflow check: a non-finite gradient makes the sum of squares non-finite */
                ck_assert_msg(!isfinite(accel_sum_squares(x, (size_t)n)), "n=%d, %g at %d not seen", n,
                              bad[b], at);
                x[at] = keep;
            }
    }
    free(x);
}
END_TEST

/* ---------------------------------------------------------------- MFU */

/* The model built from `sets` (key=value pairs) has `nparams` parameters and its FLOPs per token are
 * `flops` (both computed by hand in the caller). */
static void check_lm_flops(const char *const *sets, size_t nparams, double flops)
{
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    char err[256];
    for (int i = 0; sets[i]; i += 2)
        ck_assert_msg(accel_config_set(&cfg, sets[i], sets[i + 1], err, sizeof err) == ACCEL_OK, "%s", err);
    accel_model_t m;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    size_t n = accel_layout_params(&m.layout);
    ck_assert_uint_eq(n, nparams);
    ck_assert_double_eq(accel_flops_per_unit(cfg.model.name, true, n, cfg.model.layers, cfg.model.width,
                                             cfg.model.context), flops);
    accel_model_destroy(&m);
}

START_TEST(test_flops_per_token)
{
    /* GPT-2, L=2, C=64, T=32, V=256: wte 256*64 = 16384, wpe 32*64 = 2048, per block ln1 128 +
     * qkv 64*192+192 = 12480 + proj 4096+64 = 4160 + ln2 128 + fc 64*256+256 = 16640 + fc proj
     * 256*64+64 = 16448 = 49984, twice = 99968, lnf 128: N = 118528.
     * 6N + 6LCT = 711168 + 6*2*64*32 = 711168 + 24576 = 735744. */
    const char *const gpt[] = { "model.name", "gpt", "model.layers", "2", "model.width", "64",
                                "model.context", "32", "model.vocab", "256", "model.heads", "4", NULL };
    check_lm_flops(gpt, 118528, 735744.0);
    /* Llama, L=2, C=64, T=32, V=256, 4 heads of 16, 2 kv heads (k, v 32 wide), SwiGLU 192 (8/3 x 64
     * up to a multiple of 64), separate LM head: wte 16384 + head 16384, per block norm1 64 + q 4096
     * + k 2048 + v 2048 + o 4096 + norm2 64 + gate, up, down 3 x 12288 = 49280, twice = 98560,
     * normf 64: N = 131392. 6N + 6LCT = 788352 + 24576 = 812928. */
    const char *const llama[] = { "model.name", "llama", "model.layers", "2", "model.width", "64",
                                  "model.context", "32", "model.vocab", "256", "model.heads", "4",
                                  "model.kv_heads", "2", "model.tie_embeddings", "false", NULL };
    check_lm_flops(llama, 131392, 812928.0);
    /* Qwen3.5's layers 1-3 of 4 gated delta-nets (no attention term; 18 x 2 value heads x 16 x 16
     * each for the recurrence), layer 4 attention (4 heads of 16). */
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    const char *const q35[] = { "model.name", "llama", "model.layers", "4", "model.width", "64", "model.heads", "4",
                                "model.linear_attention_pattern", "4", "model.linear_key_heads", "2", NULL };
    for (int i = 0; q35[i]; i += 2) ck_assert_int_eq(accel_config_set(&cfg, q35[i], q35[i + 1], NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_flops_attention_layers(&cfg), 1);
    ck_assert_double_eq(accel_flops_recurrence(&cfg), 18.0 * 3 * 2 * 16 * 16);
    ck_assert_int_eq(accel_config_set(&cfg, "model.linear_attention_pattern", "0", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "model.linear_key_heads", "0", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_flops_attention_layers(&cfg), 4);
    ck_assert_double_eq(accel_flops_recurrence(&cfg), 0.0);
    /* LFM2's: layers 1 and 3 of 4 attention, the other two short convolutions of width 3 (6 x 3 x 64
     * each for the convolution forward and backward). */
    ck_assert_int_eq(accel_config_set(&cfg, "model.short_conv_kernel", "3", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "model.attention_layers", "1,3", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_flops_attention_layers(&cfg), 2);
    ck_assert_double_eq(accel_flops_recurrence(&cfg), 6.0 * 2 * 3 * 64);
    /* Granite 4.0-H's: the same layers Mamba-2 with 8 heads of 2 x 64 / 8 values, a state of 16. */
    ck_assert_int_eq(accel_config_set(&cfg, "model.short_conv_kernel", "0", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "model.mamba_heads", "8", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "model.mamba_state", "16", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_flops_attention_layers(&cfg), 2);
    ck_assert_double_eq(accel_flops_recurrence(&cfg), 18.0 * 2 * 8 * 16 * 16);
    /* Nemotron-H's: layer 0 an MLP alone (no mixer: neither term), 1 attention alone, 2 and 3
     * Mamba-2 (one of them alone) */
    ck_assert_int_eq(accel_config_set(&cfg, "model.attention_layers", "1", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "model.mlp_only_layers", "0", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "model.mixer_only_layers", "1,2", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_flops_attention_layers(&cfg), 1);
    ck_assert_double_eq(accel_flops_recurrence(&cfg), 18.0 * 2 * 8 * 16 * 16);
    /* ... and without Mamba-2, every mixer attends */
    ck_assert_int_eq(accel_config_set(&cfg, "model.mamba_heads", "0", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "model.attention_layers", "", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_flops_attention_layers(&cfg), 3);
    ck_assert_double_eq(accel_flops_recurrence(&cfg), 0.0);
    /* Active parameters: each experts' layer leaves E - K experts idle, of 3 matrices F x C (gated)
     * or 2 (plain); a layer without an MLP has none. */
    accel_config_t moe;
    accel_config_defaults(&moe);
    const char *const ex[] = { "model.name", "llama", "model.layers", "3", "model.width", "64", "model.heads", "4",
                               "model.experts", "4", "model.experts_per_token", "1", "model.ffn_width", "16", NULL };
    for (int i = 0; ex[i]; i += 2) ck_assert_int_eq(accel_config_set(&moe, ex[i], ex[i + 1], NULL, 0), ACCEL_OK);
    ck_assert_uint_eq(accel_flops_active_params(&moe, 1000000), 1000000 - 3 * 3 * 3 * 16 * 64);
    ck_assert_int_eq(accel_config_set(&moe, "model.mlp", "plain", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&moe, "model.activation", "relu2", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&moe, "model.mixer_only_layers", "1", NULL, 0), ACCEL_OK);
    ck_assert_uint_eq(accel_flops_active_params(&moe, 1000000), 1000000 - 2 * 3 * 2 * 16 * 64);
    ck_assert_int_eq(accel_config_set(&moe, "model.expert_latent", "8", NULL, 0), ACCEL_OK);   /* in a latent */
    ck_assert_uint_eq(accel_flops_active_params(&moe, 1000000), 1000000 - 2 * 3 * 2 * 16 * 8);
    /* No attention term for classifiers and plugins: 6N per sample, or per token. */
    ck_assert_double_eq(accel_flops_per_unit("mlp", false, 1000, 2, 64, 32), 6000.0);
    ck_assert_double_eq(accel_flops_per_unit("my_plugin", true, 1000, 2, 64, 32), 6000.0);
}
END_TEST

START_TEST(test_gpu_peaks)
{
    const char *label;
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA H100 80GB HBM3", ACCEL_BF16, &label), 989.4);
    ck_assert_str_eq(label, "H100 SXM");
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA H100 80GB HBM3", ACCEL_F32, NULL), 66.9);
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA H100 PCIe", ACCEL_F16, NULL), 756.0);
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA H200", ACCEL_BF16, NULL), 989.4);
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA A100-SXM4-80GB", ACCEL_BF16, NULL), 312.0);
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA A100-PCIE-40GB", ACCEL_F32, NULL), 19.5);
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA A10", ACCEL_BF16, NULL), 125.0);
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA L4", ACCEL_BF16, NULL), 121.0);
    /* Unknown, never a neighbour's figure: A10G is not A10, H100 NVL not H100 SXM. */
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA A10G", ACCEL_BF16, &label), 0);
    ck_assert_ptr_null(label);
    ck_assert_double_eq(accel_flops_gpu_peak("NVIDIA H100 NVL", ACCEL_BF16, NULL), 0);
    ck_assert_double_eq(accel_flops_gpu_peak("Tesla V100-SXM2-16GB", ACCEL_F32, NULL), 0);
    ck_assert_double_eq(accel_flops_gpu_peak("mock", ACCEL_F32, NULL), 0);
}
END_TEST

START_TEST(test_cpu_peak_measured)
{
    double tf = 0;
    int reps = 0, size = 0;
    ck_assert_int_eq(accel_flops_cpu_peak(ACCEL_F32, 1, 0.02, &tf, &size, &reps), ACCEL_OK);
    ck_assert_int_ge(reps, 3);
    ck_assert_int_eq(size, 256);
    ck_assert(tf > 0 && tf < 100);          /* a positive, plausible per-thread-group rate */
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_add_test(tc, test_lr_schedules);
    tcase_add_test(tc, test_adamw_step);
    tcase_add_test(tc, test_grad_reductions);
    tcase_add_test(tc, test_flops_per_token);
    tcase_add_test(tc, test_gpu_peaks);
    tcase_add_test(tc, test_cpu_peak_measured);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"
