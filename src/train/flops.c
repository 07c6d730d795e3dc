/* FLOP counting and device peaks for MFU (model FLOPs utilisation): achieved FLOP/s of the model's
 * nominal training FLOPs over the device's dense peak. The count is the model's, not the kernels':
 * recomputation, masked attention halves or padding never raise it, so MFU compares across codes. */
#include "build_config.h"

#include <stdlib.h>
#include <string.h>

#include "../nn/decoder.h"
#include "../nn/gemm_cpu.h"
#include "accel/timer.h"
#include "flops.h"

/* llm.c's convention (gpt2_estimate_mfu, after PaLM appendix B): 6N per token for the forward and
 * backward matrix products over all N parameters (llm.c counts the embeddings, PaLM does not: we
 * follow llm.c), plus 6LCT for the attention scores and their weighted sum, each 2·T·C per token
 * and layer forward, half of it under the causal mask, times three for forward + backward. The
 * Llama family counts the same with C the attention width heads x head_dim (the width unless
 * model.head_dim says otherwise): grouped-query attention still scores every query head. Models
 * without attention (mlp, plugins) count 6N per sample, or per token for a plugin reading tokens. */
double accel_flops_per_unit(const char *model, bool tokens_model, size_t nparams, int layers,
                            int att_width, int context)
{
    double flops = 6.0 * (double)nparams;
    if (tokens_model && (!strcmp(model, "gpt") || !strcmp(model, "llama")))
        flops += 6.0 * layers * (double)att_width * context;
    return flops;
}

size_t accel_flops_active_params(const accel_config_t *cfg, size_t nparams)
{
    if (strcmp(cfg->model.name, "llama") || cfg->model.plugin[0] || !cfg->model.experts) return nparams;
    accel_decoder_dims_t d;
    accel_decoder_dims(cfg, &d);
    const size_t mats = strcmp(cfg->model.mlp, "plain") ? 3 : 2;    /* gate, up, down; or up, down */
    const size_t width = cfg->model.expert_latent ? (size_t)cfg->model.expert_latent : (size_t)d.C;
    const size_t idle = (size_t)d.moe_layers * (size_t)(d.experts - d.experts_per_token) * mats *
                        (size_t)d.expert_F * width;
    return idle < nparams ? nparams - idle : nparams;
}

int accel_flops_attention_layers(const accel_config_t *cfg)
{
    const accel_model_config_t *m = &cfg->model;
    if (strcmp(m->name, "llama")) return m->layers;
    int n = 0;
    for (int l = 0; l < m->layers; l++)
        n += !accel_layer_listed(&m->mlp_only_layers, l) &&
             ((m->short_conv_kernel || m->mamba_heads || m->mamba1_width) ? accel_layer_listed(&m->attention_layers, l)
              : !m->linear_attention_pattern || (l + 1) % m->linear_attention_pattern == 0);
    return n;
}

double accel_flops_recurrence(const accel_config_t *cfg)
{
    const accel_model_config_t *m = &cfg->model;
    const int linear = m->layers - m->mlp_only_layers.n - accel_flops_attention_layers(cfg);
    if (!linear || m->heads < 1) return 0.0;
    if (m->short_conv_kernel) return 6.0 * linear * m->short_conv_kernel * (double)m->width;
    if (m->mamba1_width)            /* a channel's state: its decay, update and read, N values */
        return 18.0 * linear * m->mamba1_width * (double)m->mamba_state;
    if (m->mamba_heads) {           /* as a delta-net's: the state's update and read, N x P a head */
        const double P = m->mamba_head_dim ? m->mamba_head_dim : 2.0 * m->width / m->mamba_heads;
        return 18.0 * linear * m->mamba_heads * (double)m->mamba_state * P;
    }
    const int hs = m->head_dim ? m->head_dim : m->width / m->heads;
    const int hk = m->linear_key_heads ? m->linear_key_heads : m->heads;
    const double hv = m->linear_value_heads ? m->linear_value_heads : hk;
    const double dk = m->linear_key_dim ? m->linear_key_dim : hs, dv = m->linear_value_dim ? m->linear_value_dim : hs;
    return 18.0 * linear * hv * dk * dv;
}

/* Dense (no structured sparsity) peaks from NVIDIA's datasheets, TFLOP/s: fp32 is the non-tensor
 * figure (accel's fp32 path does not enable TF32), bf16 and fp16 the tensor cores'. The name is
 * matched on the model token after "NVIDIA " (A10 is not A100 nor A10G), then on a variant word;
 * variants whose clocks differ and that we have no reliable figure for (H100 NVL, H200 NVL)
 * stay unknown rather than borrowing the SXM figure. */
static const struct {
    const char *model, *variant;    /* variant: a later word of the name; NULL = any other */
    const char *label;
    double fp32, bf16;              /* fp16 dense = bf16 dense on these parts */
} g_gpus[] = {
    { "H100", "PCIe", "H100 PCIe", 51.2, 756.0 },
    { "H100", "NVL", NULL, 0, 0 },
    { "H100", NULL, "H100 SXM", 66.9, 989.4 },
    { "H200", "NVL", NULL, 0, 0 },
    { "H200", NULL, "H200 SXM", 66.9, 989.4 },
    { "A100", NULL, "A100", 19.5, 312.0 },
    { "L40S", NULL, "L40S", 91.6, 362.0 },
    { "L4", NULL, "L4", 30.3, 121.0 },
    { "A10", NULL, "A10", 31.2, 125.0 },
};

/* The word of `name` starting at `p`, up to a space or '-' ("A100-SXM4-80GB" -> "A100"). */
static bool word_is(const char *p, const char *word)
{
    size_t n = strlen(word);
    return !strncmp(p, word, n) && (p[n] == '\0' || p[n] == ' ' || p[n] == '-');
}

static bool has_word(const char *name, const char *word)
{
    for (const char *p = name; *p; p++)
        if ((p == name || p[-1] == ' ' || p[-1] == '-') && word_is(p, word)) return true;
    return false;
}

double accel_flops_gpu_peak(const char *device_name, accel_dtype_t dtype, const char **label)
{
    if (label) *label = NULL;
    const char *p = device_name;
    if (!strncmp(p, "NVIDIA ", 7)) p += 7;
    for (size_t i = 0; i < sizeof g_gpus / sizeof g_gpus[0]; i++) {
        if (!word_is(p, g_gpus[i].model)) continue;
        if (g_gpus[i].variant && !has_word(p, g_gpus[i].variant)) continue;
        if (!g_gpus[i].label) return 0;
        if (label) *label = g_gpus[i].label;
        return dtype == ACCEL_F32 ? g_gpus[i].fp32 : g_gpus[i].bf16;
    }
    return 0;
}

/* A measurement rather than cores x clock x FLOPs/cycle: clocks under load, the vector units a
 * BLAS really uses and the emulated bf16/fp16 paths are not knowable from the ISA, and a shared or
 * oversubscribed node gives less than its nominal share. 256^3 reaches a BLAS's steady rate on one
 * or two threads (on Zen 4 it beats 1024^3, bench/gemm_peak.c) in 0.75 MiB, which adds nothing
 * to the trainer's peak-memory report; more threads get 512^3 to share. Small enough to repeat many
 * times in a fraction of a second: the best repetition discards warm-up and interruptions. */
accel_status_t accel_flops_cpu_peak(accel_dtype_t dtype, int threads, double seconds, double *tflops,
                                    int *size, int *reps)
{
    const int S = threads > 2 ? 512 : 256;
    *tflops = 0;
    if (size) *size = S;
    accel_gemm_cpu_t g;
    ACCEL_CHECK(accel_gemm_cpu_init(&g, dtype));
    accel_status_t st = accel_gemm_cpu_reserve(&g, 2 * (size_t)S * S);
    float *a = malloc(sizeof(float) * (size_t)S * S * 3);
    if (!a) st = ACCEL_ERR_NOMEM;
    int n = 0;
    double best = 0;
    if (st == ACCEL_OK) {
        float *b = a + (size_t)S * S, *c = b + (size_t)S * S;
        for (size_t i = 0; i < (size_t)S * S; i++) {
            a[i] = (float)(i % 7) * 0.1f;
            b[i] = (float)(i % 5) * 0.1f;
        }
        double start = accel_now();
        while (st == ACCEL_OK && (n < 3 || accel_now() - start < seconds)) {
            double t0 = accel_now();
            st = accel_gemm_cpu(&g, false, false, S, S, S, 1.0f, a, S, b, S, 0.0f, c, S);
            double dt = accel_now() - t0;
            if (dt > 0 && 2.0 * S * S * S / dt > best) best = 2.0 * S * S * S / dt;
            n++;
        }
    }
    free(a);
    accel_gemm_cpu_free(&g);
    *tflops = best / 1e12;
    if (reps) *reps = n;
    return st;
}
