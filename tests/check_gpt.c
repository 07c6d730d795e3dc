/* Unit tests of the built-in GPT (src/nn/gpt.c), its precision-dispatching GEMM and fused kernels,
 * text generation and the synthetic token task.
 *
 * The central test compares the analytic gradient of every parameter tensor with central finite
 * differences of the model's own fp32 forward pass. For that test the weights are drawn larger
 * than the GPT-2 init (std 0.3 instead of 0.02) so every tensor's gradient is well above the
 * float rounding noise of the loss; the loss sum is accumulated in double. */
#include "build_config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "../src/nn/gemm_cpu.h"
#include "../src/nn/kernels_cpu.h"

#define TL 2    /* tiny model: layers, heads, width, context, vocab, batch */
#define TNH 2
#define TC 8
#define TT 5
#define TV 11
#define TB 3

static accel_config_t make_cfg(int L, int NH, int C, int T, int V, const char *precision)
{
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.model.name, sizeof cfg.model.name, "gpt");
    ck_assert_int_eq(accel_config_set(&cfg, "precision", precision, NULL, 0), ACCEL_OK);
    cfg.model.layers = L;
    cfg.model.heads = NH;
    cfg.model.width = C;
    cfg.model.context = T;
    cfg.model.vocab = V;
    return cfg;
}

typedef struct {
    accel_config_t cfg;
    accel_model_t model;
    float *params, *grads;
    int32_t *tokens;
    int B, T, V;
    const int32_t *positions;       /* packed documents (test_documents); NULL: none */
    const uint8_t *loss_mask;
} fixture_t;

/* The model of cfg with the default init (seed 1234) and B rows of pseudo-random tokens. */
static void fixture_open_cfg(fixture_t *f, const accel_config_t *cfg, int B)
{
    memset(f, 0, sizeof *f);
    f->cfg = *cfg;
    ck_assert_int_eq(accel_model_create(&f->cfg, &f->model), ACCEL_OK);
    ck_assert_int_eq(accel_arena_alloc(&f->model.layout, &f->params), ACCEL_OK);
    ck_assert_int_eq(accel_arena_alloc(&f->model.layout, &f->grads), ACCEL_OK);
    accel_arena_init_params(&f->model.layout, f->params, 1234);
    f->B = B;
    f->T = cfg->model.context;
    f->V = cfg->model.vocab;
    f->tokens = malloc(sizeof(int32_t) * (size_t)B * (size_t)(f->T + 1));
    for (int i = 0; i < B * (f->T + 1); i++)
        f->tokens[i] = (int32_t)(accel_rng_uniform(77, ACCEL_RNG_DATA, 5, (uint64_t)i) * f->V) % f->V;
}

static void fixture_open(fixture_t *f, int L, int NH, int C, int T, int V, int B, const char *precision)
{
    accel_config_t cfg = make_cfg(L, NH, C, T, V, precision);
    fixture_open_cfg(f, &cfg, B);
}

/* With g_qwen3 the Llama fixtures get Qwen3's attention too: RMSNorm on every q and k head and a
 * head size apart from width / heads (model.qk_norm, model.head_dim = width / heads + 2). */
static bool g_qwen3;
/* With g_moe > 0 the Llama fixtures' MLPs are mixtures of experts: 1 = 4 experts, 2 per token,
 * renormalized, with the load-balancing loss (Mixtral); 2 = 3 experts, all 3 per token, as
 * they are (Qwen3-MoE with norm_topk_prob false), whose routing has no kinks; 3 = 4 experts, 2
 * per token, and a gated shared expert of 6 (Qwen2-MoE), with the load-balancing loss; 4 =
 * DeepSeek-V3's routing as GLM-4.5's: 4 experts in 2 groups, sigmoid scores with a selection bias,
 * 2 per token from the best group, renormalized and scaled by 2.5, an ungated shared expert of 6,
 * the first block a dense MLP of 10; 5 = 4 with all 4 experts for every token (no routing kinks,
 * the group code run on both groups). */
static int g_moe;
/* With g_window > 0 the Llama fixtures attend through a sliding window of that many keys; with
 * g_pattern too, every g_pattern-th layer attends to the whole context and the sliding layers
 * take plain RoPE (the others the fixture's Llama-3.1 scaling), as OLMo 3's. */
static int g_window, g_pattern;
/* With g_nope > 0 every g_nope-th layer of the Llama fixtures has no RoPE (SmolLM3's NoPE layers);
 * they then take Granite's multipliers too (scores by 0.3, sublayer outputs by 0.7, logits / 1.7),
 * and with g_qwen3 RoPE on the first head_dim - 2 values of each head (model.rope_dim, GLM's). */
static int g_nope;
/* g_gemma: Gemma 3's blocks: norms before and after attention and the MLP (all of them 1 + weight),
 * Qwen3's per-head q/k norms, GeGLU, embeddings scaled by 3, scores by 1/sqrt(5), and every 2nd
 * layer full while the others slide over 5 keys with plain RoPE of theta 50; with Gemma 2's soft
 * caps (scores at 4, logits at 3: into tanh's bend, where the finite differences still hold). */
static bool g_gemma;
/* g_olmo 1: OLMo 2's blocks (norms after attention and the MLP, q/k norms over the whole
 * projections); 2: OLMoE's q/k norms alone (blocks as Llama's). */
static int g_olmo;
/* g_oss: gpt-oss's blocks: attention sinks, an output projection bias, YaRN without truncation,
 * every 2nd layer full while the others slide, and (with g_moe) biased experts of clamped SwiGLU
 * with alpha 1.5 and limit g_oss_limit: 1 cuts gates and ups; the gradient check takes 100, which
 * cuts nothing (a clamp's kink under a finite difference would break it; test_kernels checks the
 * clamps). */
static bool g_oss;
static const char *g_oss_limit = "1";
/* g_longrope: Phi-4-mini's RoPE: LongRoPE over an original context of 8 (a sequence of 7 takes the
 * short factors, one of 40 the long ones) on 6 of each head's 8 values, its attention factor from
 * an extension of 4. */
static bool g_longrope;
/* g_exaone: EXAONE 4's blocks: norms after attention and the MLP, per-head q/k norms, every 2nd
 * layer full and without RoPE while the others slide over g_window keys. */
static bool g_exaone;
/* g_mla: DeepSeek-V3's multi-head latent attention: heads of 8 with RoPE on the first 4, keys and
 * values from a latent of 6 (values 6 wide), queries through a latent of 5 (g_mla == 2: directly). */
static int g_mla;
/* g_qscale: Llama 4's attention temperature (Ministral 3's, Mistral Small 4's): queries times
 * 1 + 0.1 ln(1 + floor(p / 2)) at position p (Mistral's beta, steps every 2 positions). */
static bool g_qscale;
/* g_qkafter: with g_qwen3, the q/k norms on the heads after RoPE (HunYuan's order). */
static bool g_qkafter;
/* g_plain: a plain MLP, down(act(up)), under LayerNorms with biases: 1 StarCoder2's (the tanh GELU,
 * biases on the MLP and on attention's output, a sliding window), 2 Nemotron's (squared ReLU,
 * LayerNorm1P's 1 + weight, RoPE on 6 of each head's 8 values); 3 Arcee's (squared ReLU under
 * RMSNorms); 4 GPT-NeoX's (the exact GELU, biases, RoPE on 6 of 8, the MLP beside attention with a
 * norm of its own); 5 the MLP beside attention reading norm1's output and a bias on the LM head
 * (GPT-J's, Phi-2's); 6 Apertus's (xIELU under RMSNorms, Qwen3's q/k norms). */
static int g_plain;
/* g_cohere: Cohere 2's blocks: LayerNorms without biases, SwiGLU beside attention through norm1, logits
 * scaled by 1/4, every 2nd layer full and without RoPE while the others slide over 5 keys. */
static bool g_cohere;
/* g_qwen35: Qwen3.5's blocks: every 2nd layer attention (per-head q/k norms, RoPE on 4 of each head's
 * 8 values, its output gated by sigmoid(gate)), the others gated delta-nets (2 key heads of 6, 4
 * value heads of 5, a convolution of width 3), norms by 1 + weight. */
static bool g_qwen35;
/* g_lfm2: 1 LFM2's blocks: layer 1 attention (per-head q/k norms, no biases), every other layer (all
 * of a one-layer model) a gated short convolution of width 3; 2 LFM3's: norms before and after
 * every sublayer, attention gated head by head, proportional RoPE on half of each head's pairs
 * (theta 1e6) in the full layers, plain RoPE (theta 1e4) and a window of 5 in the sliding ones:
 * two layers attention, layer 0 sliding; three or more layers 1 (sliding) and 2; the rest
 * convolutions. */
static int g_lfm2;
/* g_mamba: Granite 4.0-H's mixers: layer 1 attention, every other layer (all of a one-layer model)
 * Mamba-2 with 4 heads (2 x width / 4 values each) in 2 groups of B and C, a state of 3, a
 * convolution of 3 with its bias; norms' epsilon 1e-2: a group of y silu(z) near 0 (a head's D
 * near 0 at these random weights) puts the gated norm near its pole, where finite differences
 * cannot follow it (1e-5: errors of 2% at steps of 5e-3). */
static bool g_mamba;
/* g_mamba1: Mamba-1's mixers, 20 channels (a block of 16 and one of 4), a state of 8, dt rank 2, a
 * convolution of 3 with its bias: 1 with layer 1 attention (Jamba's kind, without norms on dt, B,
 * C), 2 every layer a mixer alone with Falcon Mamba's unweighted norms on dt, B and C, 3 with
 * Jamba's weighted ones and layer 1 attention. */
static int g_mamba1;
/* g_nemh: Nemotron-H's layers of one sublayer each, squared-ReLU MLPs (2: plain experts, 3 of
 * them all chosen, DeepSeek-V3's sigmoid routing and an ungated shared expert; 3: the same in a
 * latent of 6, Nemotron 3 Super's): one layer, a
 * Mamba-2 alone; two, Mamba-2 alone then the MLP alone; three, the MLP alone (on the embeddings),
 * attention alone, then a whole block (Mamba-2 and the MLP). Mamba-2 as g_mamba's. */
static int g_nemh;
/* g_llama4: Llama 4's blocks: every 2nd layer without RoPE, its queries times Llama 4's temperature
 * (1 + 0.1 ln(1 + floor((p + 1) / 2))), the others' attention in chunks of 3 positions (5 past 7
 * tokens) with unweighted q/k norms after RoPE; layer 1 (of one, layer 0) with 3 sigmoid-routed
 * experts, all chosen, whose weights scale their input, beside an ungated shared expert; the
 * others a dense MLP of 10. */
static bool g_llama4;
/* g_olmoh: OLMo Hybrid's blocks: every 2nd layer attention with OLMo 2's norms after the sublayers
 * and q/k norms over the whole projections, the others gated delta-nets (2 key heads of 16, 4
 * value heads of 5, a convolution of 3) with their norms before, beta = 2 sigmoid(b) and a gated
 * norm's epsilon of 1e-5. */
static bool g_olmoh;
/* g_res_mult: model.residual_multiplier on g_gemma's norms after the sublayers (HyperCLOVA X's
 * kind: y = res + r post_norm(x)); 0: none. */
static double g_res_mult;

/* A Llama with every optional part on: grouped-query attention (NH heads, NH/2 kv heads), an untied
 * head, q/k/v biases, Llama-3.1 RoPE scaling with frequencies in all three bands, odd SwiGLU width. */
static void fixture_open_llama(fixture_t *f, int L, int NH, int C, int T, int V, int B,
                               const char *precision)
{
    accel_config_t cfg = make_cfg(L, NH, C, T, V, precision);
    const char *kv[][2] = { { "model.name", "llama" }, { "model.ffn_width", "13" },
                            { "model.tie_embeddings", "false" }, { "model.attention_bias", "true" },
                            { "model.rope_scaling", "llama3" }, { "model.rope_original_context", "8" },
                            { "model.rope_theta", "500" }, { "model.rms_eps", "1e-6" } };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        ck_assert_int_eq(accel_config_set(&cfg, kv[i][0], kv[i][1], NULL, 0), ACCEL_OK);
    cfg.model.kv_heads = NH > 1 ? NH / 2 : 1;
    if (g_qwen3) {
        cfg.model.qk_norm = true;
        cfg.model.head_dim = C / NH + 2;
    }
    if (g_moe) {
        cfg.model.experts = g_moe == 2 ? 3 : 4;
        cfg.model.experts_per_token = g_moe == 2 ? 3 : g_moe == 5 ? 4 : 2;
        cfg.model.router_norm_topk = g_moe == 1 || g_moe >= 4;
        cfg.model.router_aux_loss = g_moe == 2 || g_moe >= 4 ? 0.0 : 0.5;
        cfg.model.shared_expert_ffn = g_moe == 3 || g_moe >= 4 ? 6 : 0;
    }
    if (g_moe >= 4) {
        const char *dk[][2] = { { "model.router_scores", "sigmoid" }, { "model.router_select_bias", "true" },
                                { "model.router_groups", "2" }, { "model.router_topk_groups", g_moe == 5 ? "2" : "1" },
                                { "model.router_scale", "2.5" }, { "model.shared_expert_gate", "false" },
                                { "model.dense_layers", "1" }, { "model.dense_ffn_width", "10" } };
        for (size_t i = 0; i < sizeof dk / sizeof dk[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, dk[i][0], dk[i][1], NULL, 0), ACCEL_OK);
        if (L == 1) cfg.model.dense_layers = cfg.model.dense_ffn_width = 0;    /* experts somewhere */
    }
    cfg.model.sliding_window = g_window;
    cfg.model.no_rope_pattern = g_nope;
    if (g_nope) {
        if (g_qwen3) cfg.model.rope_dim = cfg.model.head_dim - 2;     /* partial RoPE (GLM's) */
        cfg.model.attention_multiplier = 0.3;
        cfg.model.residual_multiplier = 0.7;
        cfg.model.logits_scaling = 1.7;
    }
    if (g_window && g_pattern) {
        cfg.model.sliding_window_pattern = g_pattern;
        ck_assert_int_eq(accel_config_set(&cfg, "model.sliding_rope", "plain", NULL, 0), ACCEL_OK);
    }
    if (g_gemma) {
        const char *gk[][2] = { { "model.norm_position", "both" }, { "model.norm_unit_offset", "true" },
                                { "model.activation", "gelu_tanh" }, { "model.embed_scale", "3" },
                                { "model.query_pre_attn_scalar", "5" }, { "model.qk_norm", "true" },
                                { "model.sliding_window", "5" }, { "model.sliding_window_pattern", "2" },
                                { "model.sliding_rope", "plain" }, { "model.sliding_rope_theta", "50" },
                                { "model.attention_softcap", "4" }, { "model.logit_softcap", "3" } };
        for (size_t i = 0; i < sizeof gk / sizeof gk[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, gk[i][0], gk[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_res_mult) cfg.model.residual_multiplier = g_res_mult;
    if (g_oss) {
        const char *ok[][2] = { { "model.attention_sinks", "true" }, { "model.attention_out_bias", "true" },
                                { "model.rope_scaling", "yarn" }, { "model.rope_factor", "4" },
                                { "model.rope_original_context", "4" }, { "model.rope_truncate", "false" },
                                { "model.activation", "clamped_swiglu" }, { "model.swiglu_limit", g_oss_limit },
                                { "model.swiglu_alpha", "1.5" },
                                { "model.expert_bias", g_moe ? "true" : "false" },
                                { "model.sliding_window", "3" }, { "model.sliding_window_pattern", "2" } };
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, ok[i][0], ok[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_mla) {
        const char *mk[][2] = { { "model.kv_lora_rank", "6" }, { "model.q_lora_rank", g_mla == 2 ? "0" : "5" },
                                { "model.v_head_dim", "6" }, { "model.head_dim", "8" }, { "model.rope_dim", "4" },
                                { "model.attention_bias", "false" } };
        for (size_t i = 0; i < sizeof mk / sizeof mk[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, mk[i][0], mk[i][1], NULL, 0), ACCEL_OK);
        cfg.model.kv_heads = 0;
    }
    cfg.model.qk_norm_after_rope = g_qkafter;
    if (g_qscale) {
        cfg.model.query_scale_beta = 0.1;
        cfg.model.query_scale_context = 2;
    }
    if (g_exaone) {
        const char *ek[][2] = { { "model.norm_position", "post" }, { "model.qk_norm", "true" },
                                { "model.sliding_window_pattern", "2" }, { "model.no_rope_pattern", "2" } };
        for (size_t i = 0; i < sizeof ek / sizeof ek[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, ek[i][0], ek[i][1], NULL, 0), ACCEL_OK);
        if (!g_window) cfg.model.sliding_window = 3;
    }
    if (g_longrope) {
        const char *lk[][2] = { { "model.rope_scaling", "longrope" }, { "model.rope_factor", "4" },
                                { "model.rope_original_context", "8" }, { "model.head_dim", "8" },
                                { "model.rope_dim", "6" }, { "model.rope_short_factor", "1,1.5,3" },
                                { "model.rope_long_factor", "[1.2, 4, 9]" } };
        for (size_t i = 0; i < sizeof lk / sizeof lk[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, lk[i][0], lk[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_plain) {
        const bool neox = g_plain == 4;
        const char *pk[][2] = { { "model.mlp", "plain" },
                                { "model.activation", g_plain == 1 || g_plain == 5 ? "gelu_tanh" : neox ? "gelu"
                                                      : g_plain == 6 ? "xielu" : "relu2" },
                                { "model.norm", g_plain == 3 || g_plain >= 5 ? "rms" : "layer" },
                                { "model.qk_norm", g_plain == 6 ? "true" : "false" },
                                { "model.mlp_bias", g_plain == 1 || neox ? "true" : "false" },
                                { "model.attention_out_bias", g_plain == 1 || neox ? "true" : "false" },
                                { "model.sliding_window", g_plain == 1 ? "5" : "0" },
                                { "model.norm_unit_offset", g_plain == 2 ? "true" : "false" },
                                { "model.head_dim", g_plain == 2 || neox ? "8" : "0" },
                                { "model.rope_dim", g_plain == 2 || neox ? "6" : "0" },
                                { "model.parallel_block", neox ? "two_norms" : g_plain == 5 ? "one_norm" : "none" },
                                { "model.head_bias", g_plain == 5 ? "true" : "false" } };
        for (size_t i = 0; i < sizeof pk / sizeof pk[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, pk[i][0], pk[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_cohere) {
        const char *ck[][2] = { { "model.norm", "layer" }, { "model.norm_bias", "false" },
                                { "model.parallel_block", "one_norm" }, { "model.logits_scaling", "4" },
                                { "model.sliding_window", "5" }, { "model.sliding_window_pattern", "2" },
                                { "model.no_rope_pattern", "2" } };
        for (size_t i = 0; i < sizeof ck / sizeof ck[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, ck[i][0], ck[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_qwen35) {
        const char *qk[][2] = { { "model.linear_attention_pattern", "2" }, { "model.attention_output_gate", "true" },
                                { "model.qk_norm", "true" }, { "model.norm_unit_offset", "true" },
                                { "model.head_dim", "8" }, { "model.rope_dim", "4" }, { "model.attention_bias", "false" },
                                { "model.linear_key_heads", "2" }, { "model.linear_value_heads", "4" },
                                { "model.linear_key_dim", "16" }, { "model.linear_value_dim", "5" },
                                { "model.linear_conv_kernel", "3" } };
        for (size_t i = 0; i < sizeof qk / sizeof qk[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, qk[i][0], qk[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_lfm2) {
        const char *att = g_lfm2 == 1 ? (L > 1 ? "[1]" : "[]") : L == 1 ? "[]" : L == 2 ? "[0, 1]" : "[1, 2]";
        const char *lf[][2] = { { "model.short_conv_kernel", "3" }, { "model.attention_layers", att },
                                { "model.qk_norm", "true" }, { "model.attention_bias", "false" } };
        for (size_t i = 0; i < sizeof lf / sizeof lf[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, lf[i][0], lf[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_mamba) {
        const char *mb[][2] = { { "model.mamba_heads", "4" }, { "model.mamba_groups", "2" }, { "model.mamba_state", "3" },
                                { "model.mamba_conv_kernel", "3" }, { "model.attention_layers", L > 1 ? "[1]" : "[]" },
                                { "model.rms_eps", "1e-2" } };
        for (size_t i = 0; i < sizeof mb / sizeof mb[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, mb[i][0], mb[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_mamba1) {
        const char *att = L > 1 && g_mamba1 != 2 ? "[1]" : "[]";
        const char *only = L == 1 ? "[0]" : L == 2 ? "[0, 1]" : "[0, 1, 2]";
        const char *mb[][2] = { { "model.mamba1_width", "20" }, { "model.mamba_state", "8" },
                                { "model.mamba1_dt_rank", "2" }, { "model.mamba_conv_kernel", "3" },
                                { "model.attention_layers", att },
                                { "model.mamba1_norms", g_mamba1 == 1 ? "none" : g_mamba1 == 2 ? "plain" : "weighted" },
                                { "model.mamba1_norm_eps", "1e-2" },
                                { "model.mixer_only_layers", g_mamba1 == 2 ? only : "[]" } };
        for (size_t i = 0; i < sizeof mb / sizeof mb[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, mb[i][0], mb[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_nemh) {
        const char *att = L == 3 ? "[1]" : "[]", *mixer = L == 1 ? "[0]" : L == 2 ? "[0]" : "[1]";
        const char *mlp = L == 1 ? "[]" : L == 2 ? "[1]" : "[0]";
        const char *nh[][2] = { { "model.mamba_heads", "4" }, { "model.mamba_groups", "2" }, { "model.mamba_state", "3" },
                                { "model.mamba_conv_kernel", "3" }, { "model.attention_layers", att },
                                { "model.mixer_only_layers", mixer }, { "model.mlp_only_layers", mlp },
                                { "model.rms_eps", "1e-2" }, { "model.mlp", "plain" }, { "model.activation", "relu2" },
                                { "model.attention_bias", "false" }, { "model.rope_scaling", "none" },
                                { "model.no_rope_pattern", "1" } };     /* attention without RoPE */
        for (size_t i = 0; i < sizeof nh / sizeof nh[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, nh[i][0], nh[i][1], NULL, 0), ACCEL_OK);
        if (g_nemh == 3) ck_assert_int_eq(accel_config_set(&cfg, "model.expert_latent", "6", NULL, 0), ACCEL_OK);
        if (g_nemh >= 2) {
            const char *ex[][2] = { { "model.experts", "3" }, { "model.experts_per_token", "3" },
                                    { "model.router_scores", "sigmoid" }, { "model.router_select_bias", "true" },
                                    { "model.router_norm_topk", "true" }, { "model.router_scale", "2.5" },
                                    { "model.shared_expert_ffn", "6" }, { "model.shared_expert_gate", "false" } };
            for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++)
                ck_assert_int_eq(accel_config_set(&cfg, ex[i][0], ex[i][1], NULL, 0), ACCEL_OK);
        }
    }
    if (g_lfm2 == 2) {
        const char *l3[][2] = { { "model.norm_position", "both" }, { "model.attention_head_gate", "true" },
                                { "model.rope_scaling", "proportional" }, { "model.rope_proportion", "0.5" },
                                { "model.rope_theta", "1000000" } };
        for (size_t i = 0; i < sizeof l3 / sizeof l3[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, l3[i][0], l3[i][1], NULL, 0), ACCEL_OK);
        if (L > 1) {
            const char *sw[][2] = { { "model.sliding_window", "5" }, { "model.sliding_layers", L == 2 ? "[0]" : "[1]" },
                                    { "model.sliding_rope", "plain" }, { "model.sliding_rope_theta", "10000" } };
            for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++)
                ck_assert_int_eq(accel_config_set(&cfg, sw[i][0], sw[i][1], NULL, 0), ACCEL_OK);
        }
    }
    if (g_olmoh) {
        const char *oh[][2] = { { "model.linear_attention_pattern", "2" }, { "model.qk_norm", "true" },
                                { "model.qk_norm_scope", "all" }, { "model.norm_position", "post" },
                                { "model.attention_bias", "false" }, { "model.linear_key_heads", "2" },
                                { "model.linear_value_heads", "4" }, { "model.linear_key_dim", "16" },
                                { "model.linear_value_dim", "5" }, { "model.linear_conv_kernel", "3" },
                                { "model.linear_allow_neg_eigval", "true" }, { "model.linear_norm_eps", "1e-5" } };
        for (size_t i = 0; i < sizeof oh / sizeof oh[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, oh[i][0], oh[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_llama4) {
        const char *l4[][2] = { { "model.no_rope_pattern", "2" }, { "model.attention_bias", "false" },
                                { "model.qk_norm", "true" }, { "model.qk_norm_weights", "false" },
                                { "model.qk_norm_after_rope", "true" }, { "model.qk_norm_layers", "rope" },
                                { "model.query_scale_beta", "0.1" }, { "model.query_scale_context", "2" },
                                { "model.query_scale_offset", "1" }, { "model.query_scale_layers", "no_rope" },
                                { "model.sliding_window", T > 7 ? "5" : "3" }, { "model.sliding_window_pattern", "2" },
                                { "model.sliding_chunked", "true" },
                                { "model.experts", "3" }, { "model.experts_per_token", "3" },
                                { "model.router_scores", "sigmoid" }, { "model.expert_input_scaled", "true" },
                                { "model.shared_expert_ffn", "6" }, { "model.shared_expert_gate", "false" },
                                { "model.expert_layers", L == 1 ? "[0]" : "[1]" }, { "model.dense_ffn_width", "10" } };
        for (size_t i = 0; i < sizeof l4 / sizeof l4[0]; i++)
            ck_assert_int_eq(accel_config_set(&cfg, l4[i][0], l4[i][1], NULL, 0), ACCEL_OK);
    }
    if (g_olmo) {
        cfg.model.qk_norm = true;
        ck_assert_int_eq(accel_config_set(&cfg, "model.qk_norm_scope", "all", NULL, 0), ACCEL_OK);
        if (g_olmo == 1) ck_assert_int_eq(accel_config_set(&cfg, "model.norm_position", "post", NULL, 0), ACCEL_OK);
    }
    fixture_open_cfg(f, &cfg, B);
}

static void fixture_close(fixture_t *f)
{
    free(f->tokens);
    accel_arena_free(f->params);
    accel_arena_free(f->grads);
    accel_model_destroy(&f->model);
}

/* Larger weights for the gradient check: matrices N(0, 0.3^2), norm gains 1 + N(0, 0.1^2),
 * biases N(0, 0.1^2). */
static void big_init(fixture_t *f)
{
    const accel_layout_t *lay = &f->model.layout;
    for (int i = 0; i < lay->ntensors; i++) {
        const accel_tensor_t *t = &lay->tensors[i];
        float *p = f->params + t->offset;
        bool gain = (strstr(t->name, "ln") || strstr(t->name, "norm")) && strstr(t->name, ".weight");
        accel_rng_fill_normal(p, t->numel, t->ndim == 2 ? 0.3f : 0.1f, 99, ACCEL_RNG_INIT, (uint64_t)i, 0);
        if (gain)
            for (size_t k = 0; k < t->numel; k++) p[k] += 1.0f;
        if (t->flags & ACCEL_TENSOR_FIXED) accel_arena_init_range(lay, p, t->offset, t->offset + t->numel, 0);
    }
}

static accel_batch_t batch_of(const fixture_t *f)
{
    return (accel_batch_t){ .n = f->B, .tokens = f->tokens, .positions = f->positions,
                            .loss_mask = f->loss_mask };
}

static double loss_of(fixture_t *f)
{
    accel_batch_t b = batch_of(f);
    double loss = 0;
    ck_assert_int_eq(f->model.ops->forward_backward(f->model.state, &f->model.layout, f->params,
                                                    f->grads, &b, 0.0f, &loss), ACCEL_OK);
    return loss;
}

static void grads_of(fixture_t *f, float scale, double *loss)
{
    accel_batch_t b = batch_of(f);
    ck_assert_int_eq(f->model.ops->forward_backward(f->model.state, &f->model.layout, f->params,
                                                    f->grads, &b, scale, loss), ACCEL_OK);
}

START_TEST(test_layout)
{
    fixture_t f;
    fixture_open(&f, TL, TNH, TC, TT, TV, TB, "fp32");
    const accel_layout_t *lay = &f.model.layout;
    ck_assert_str_eq(f.model.ops->name, "gpt");
    ck_assert_int_eq(lay->ntensors, 2 + 12 * TL + 2);
    ck_assert_int_eq(lay->nlayers, TL + 2);
    size_t expect = (size_t)TV * TC + (size_t)TT * TC + (size_t)TL * (12 * TC * TC + 13 * TC) + 2 * TC;
    ck_assert_uint_eq(accel_layout_params(lay), expect);
    /* Layer ids never decrease, so each layer's tensors are contiguous. */
    for (int i = 1; i < lay->ntensors; i++)
        ck_assert_int_ge(lay->tensors[i].layer, lay->tensors[i - 1].layer);
    const accel_tensor_t *t = accel_layout_find(lay, "h.1.attn.qkv.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->layer, 2);
    ck_assert_int_eq(t->shape[0], 3 * TC);
    ck_assert_int_eq(t->shape[1], TC);
    ck_assert_float_eq_tol(t->init_std, 0.02f, 1e-7f);
    t = accel_layout_find(lay, "h.0.mlp.proj.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->shape[0], TC);
    ck_assert_int_eq(t->shape[1], 4 * TC);
    ck_assert_float_eq_tol(t->init_std, 0.02f / sqrtf(2.0f * TL), 1e-7f);
    ck_assert_float_eq_tol(accel_layout_find(lay, "h.0.attn.proj.weight")->init_std,
                           0.02f / sqrtf(2.0f * TL), 1e-7f);
    ck_assert_int_eq(accel_layout_find(lay, "wte")->layer, 0);
    ck_assert_int_eq(accel_layout_find(lay, "wpe")->layer, 0);
    ck_assert_int_eq(accel_layout_find(lay, "lnf.bias")->layer, TL + 1);
    for (int i = 0; i < lay->ntensors; i++) {
        const accel_tensor_t *x = &lay->tensors[i];
        bool nodecay = (x->flags & ACCEL_TENSOR_NO_DECAY) != 0;
        ck_assert_msg(nodecay == (x->ndim == 1), "%s: decay flag", x->name);
        if (strstr(x->name, "ln") && strstr(x->name, ".weight")) {
            ck_assert_float_eq(x->init_std, -1.0f);
            ck_assert_float_eq(f.params[x->offset], 1.0f);
        } else if (x->ndim == 1) {
            ck_assert_float_eq(x->init_std, 0.0f);
        }
    }
    ck_assert_ptr_nonnull(f.model.ops->logits);
    ck_assert_int_eq(f.model.vocab, TV);
    ck_assert_int_eq(f.model.context, TT);
    fixture_close(&f);
}
END_TEST

START_TEST(test_bad_config)
{
    accel_model_t m;
    accel_config_t cfg = make_cfg(2, 3, 8, 5, 11, "fp32");      /* 8 % 3 != 0 */
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_ERR_CONFIG);
    cfg = make_cfg(0, 2, 8, 5, 11, "fp32");
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_ERR_CONFIG);
    cfg = make_cfg(2, 2, 8, 0, 11, "fp32");
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_ERR_CONFIG);
    cfg = make_cfg(2, 2, 8, 5, 1, "fp32");
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_ERR_CONFIG);
    /* an unknown precision never reaches the model: the config refuses it where it is read */
    cfg = make_cfg(2, 2, 8, 5, 11, "fp32");
    ck_assert_int_eq(accel_config_set(&cfg, "precision", "int8", NULL, 0), ACCEL_ERR_CONFIG);
    ck_assert_int_eq(cfg.precision_id, ACCEL_F32);
}
END_TEST

/* At init the logits are tiny, so every token's loss is close to ln(V). */
START_TEST(test_init_loss)
{
    fixture_t f;
    fixture_open(&f, TL, TNH, TC, TT, TV, TB, "fp32");
    double sum = loss_of(&f);
    ck_assert_double_eq_tol(sum / TB, log((double)TV), 0.02);
    float loss[TB];
    int correct[TB] = { 7, 7, 7 };
    accel_batch_t b = batch_of(&f);
    ck_assert_int_eq(f.model.ops->eval(f.model.state, &f.model.layout, f.params, &b, loss, correct),
                     ACCEL_OK);
    double esum = 0;
    for (int i = 0; i < TB; i++) {
        esum += loss[i];
        ck_assert_int_eq(correct[i], 0);
    }
    ck_assert_double_eq_tol(esum, sum, 1e-5);
    ck_assert_int_eq(f.model.ops->eval(f.model.state, &f.model.layout, f.params, &b, loss, NULL),
                     ACCEL_OK);
    fixture_close(&f);
}
END_TEST

/* Central differences on up to `per_tensor` elements of every tensor (first, last, and keyed
 * random ones). Pass: |analytic - numeric| <= ATOL + RTOL * max(|analytic|, |numeric|). With
 * h = 1e-2 the float rounding noise of the loss contributes ~5e-5 and the O(h^2) truncation a few
 * 1e-5 here, so ATOL = 3e-4, RTOL = 1e-2 leaves margin while a missing term fails by far. */
#define FD_H 1e-2
#define FD_ATOL 3e-4
#define FD_RTOL 1e-2
/* The Llama's SwiGLU and rotated q/k curve more: its truncation error at h = 1e-2 reaches 2.6e-3
 * on a q/k/v weight (it falls 11x at h = 3e-3: O(h^2), not a wrong gradient), so it uses 5e-3. */
static double fd_h = FD_H;
/* Qwen3.5's delta-nets curve more still: the L2 norm of a q or k head that comes out of the
 * convolution short bends the loss sharply (a convolution weight's central difference is 35% off
 * at h = 5e-3, 1% at 6e-4, where the loss's rounding noise nears the bound on small gradients).
 * fd_order4 takes the fourth-order difference (8 (f(x+h) - f(x-h)) - f(x+2h) + f(x-2h)) / 12h at
 * h = 2e-3: O(h^4) truncation; its noise, 1.5 / h times the loss's, is 3.75 times the Llama check's
 * central one at 5e-3, so the absolute part of the bound is 4 times FD_ATOL. */
static bool fd_order4;

static void gradcheck(fixture_t *f, int per_tensor, const char *only)
{
    const accel_layout_t *lay = &f->model.layout;
    memset(f->grads, 0, sizeof(float) * lay->numel);
    double loss;
    grads_of(f, 1.0f, &loss);
    double worst = 0;
    char worst_at[ACCEL_TENSOR_NAME_MAX + 24] = "";
    int checked = 0;
    for (int i = 0; i < lay->ntensors; i++) {
        const accel_tensor_t *t = &lay->tensors[i];
        if (only && !strstr(t->name, only)) continue;
        if (t->flags & ACCEL_TENSOR_FIXED) {    /* a fixed buffer (xIELU's beta, eps): no gradient */
            for (size_t e = 0; e < t->numel; e++)
                ck_assert_msg(f->grads[t->offset + e] == 0, "%s: gradient %g", t->name, f->grads[t->offset + e]);
            continue;
        }
        int n = (int)t->numel < per_tensor ? (int)t->numel : per_tensor;
        double gmax = 0;
        for (int s = 0; s < n; s++) {
            size_t e = s == 0 ? 0 : s == 1 ? t->numel - 1
                     : (size_t)(accel_rng_uniform(5, ACCEL_RNG_DATA, (uint64_t)i, (uint64_t)s) * t->numel) % t->numel;
            float *p = f->params + t->offset + e;
            float orig = *p;
            *p = orig + (float)fd_h;
            double up = loss_of(f);
            *p = orig - (float)fd_h;
            double down = loss_of(f);
            double numeric = (up - down) / (2 * fd_h);
            if (fd_order4) {
                *p = orig + 2 * (float)fd_h;
                const double up2 = loss_of(f);
                *p = orig - 2 * (float)fd_h;
                const double down2 = loss_of(f);
                numeric = (8 * (up - down) - (up2 - down2)) / (12 * fd_h);
            }
            *p = orig;
            double analytic = f->grads[t->offset + e];
            double err = fabs(analytic - numeric);
            double bound = FD_ATOL * (fd_order4 ? 4 : 1) + FD_RTOL * fmax(fabs(analytic), fabs(numeric));
            ck_assert_msg(err <= bound, "%s[%zu]: analytic %.6g, numeric %.6g (error %.3g > %.3g)",
                          t->name, e, analytic, numeric, err, bound);
            if (err / bound > worst) {
                worst = err / bound;
                snprintf(worst_at, sizeof worst_at, "%s[%zu]", t->name, e);
            }
            if (fabs(analytic) > gmax) gmax = fabs(analytic);
            checked++;
        }
        /* A gradient that is zero everywhere checked would make the comparison vacuous; the
         * routers' selection bias only chooses experts: its gradient is zero by design (and, with
         * every expert chosen, its numeric one too, checked above). */
        if (strstr(t->name, "select_bias")) ck_assert_msg(gmax == 0, "%s: gradient %g", t->name, gmax);
        else ck_assert_msg(gmax > 10 * FD_ATOL, "%s: gradient too small to check (%.3g)", t->name, gmax);
    }
    ck_assert_int_gt(checked, 0);
    printf("gradcheck: %d elements, worst error %.2f of the bound (%s)\n", checked, worst, worst_at);
}

START_TEST(test_gradcheck_all_tensors)
{
    fixture_t f;
    fixture_open(&f, TL, TNH, TC, TT, TV, TB, "fp32");
    big_init(&f);
    gradcheck(&f, 8, NULL);
    fixture_close(&f);
}
END_TEST

/* A context longer than one attention row block (32) exercises the block-causal products. */
START_TEST(test_gradcheck_long_context)
{
    fixture_t f;
    fixture_open(&f, 1, 2, 8, 40, TV, 2, "fp32");
    big_init(&f);
    gradcheck(&f, 6, "attn");
    gradcheck(&f, 6, "wpe");
    fixture_close(&f);
}
END_TEST

/* The Llama's every tensor (GQA, untied head, q/k/v biases, scaled RoPE; with _i = 1 Qwen3's q/k
 * norms and head size too), and a context past one attention row block. Equality with
 * transformers' LlamaForCausalLM and Qwen3ForCausalLM is tests/check_llama.c and hf_import.sh. */
START_TEST(test_gradcheck_llama)
{
    fixture_t f;
    g_qwen3 = _i == 1 || _i == 3;
    g_moe = _i >= 2 && _i <= 4 ? _i - 1 : 0;    /* 4: Qwen2-MoE's shared expert */
    g_window = _i == 5 ? 3 : 0;                 /* 5: a sliding window (37 past the first block) */
    g_pattern = _i == 5 ? 2 : 0;                /*    on layer 0 of 2, with plain RoPE there */
    g_nope = _i == 1 ? 2 : 0;                   /* 1: layer 1 of 2 without RoPE too */
    g_olmo = _i == 6 ? 1 : _i == 7 ? 2 : 0;     /* 6: OLMo 2, 7: OLMoE's q/k norms with experts */
    g_gemma = _i == 8 || _i == 36;              /* 8: Gemma 3; 36: with a residual multiplier after its norms */
    g_res_mult = _i == 36 ? 0.6 : 0;
    g_oss = _i == 9;                            /* 9: gpt-oss, every expert for every token */
    g_oss_limit = "100";
    if (_i == 1 || _i == 7 || _i == 9) g_moe = 2;   /* every expert for every token: no routing kinks
                                                     * (1: Granite's multipliers with experts) */
    if (_i == 10) g_moe = 5, g_qwen3 = true;    /* 10: GLM-4.5's (DeepSeek-V3's routing), every expert */
    g_longrope = _i == 11;                      /* 11: LongRoPE, short factors at 7 tokens, long at 40 */
    g_exaone = _i == 12;                        /* 12: EXAONE 4 */
    g_mla = _i == 13 ? 1 : _i == 14 ? 2 : 0;    /* 13, 14: latent attention, with and without a q latent */
    if (_i == 14) g_moe = 4;                    /*     14: with GLM-4.5's (DeepSeek-V3's) experts too */
    g_qscale = _i == 13 || _i == 15;            /* 13 (Mistral Small 4's) and 15: query temperature */
    if (_i == 16) g_qwen3 = g_qkafter = true;   /* 16: Qwen3's norms after RoPE (HunYuan) */
    g_plain = _i >= 17 && _i <= 21 ? _i - 16 : _i == 32 ? 6 : 0;   /* 17-21: StarCoder2, Nemotron, Arcee,
                                                                 * GPT-NeoX, GPT-J; 32: Apertus */
    g_cohere = _i == 22;                        /* 22: Cohere 2 */
    g_qwen35 = _i == 23;                        /* 23: Qwen3.5 (40 tokens: past a recurrence chunk) */
    g_lfm2 = _i == 24 ? 1 : _i == 25 ? 2 : 0;   /* 24: LFM2 (its b x c cubic: fourth-order differences),
                                                 * 25: LFM3 */
    g_mamba = _i == 26;                         /* 26: Mamba-2 (40 tokens: past a recurrence chunk) */
    g_nemh = _i >= 27 && _i <= 29 ? _i - 26 : 0; /* 27: Nemotron-H, 28: with plain experts, 29: in a
                                                 * latent (and three layers: attention too) */
    g_llama4 = _i == 30;                        /* 30: Llama 4 */
    g_olmoh = _i == 31;                         /* 31: OLMo Hybrid (40 tokens: past a recurrence chunk) */
    g_mamba1 = _i >= 33 && _i <= 35 ? _i - 32 : 0;  /* 33-35: Mamba-1, Falcon Mamba's norms, Jamba's */
    fd_h = g_mamba || g_qwen35 || g_nemh || g_olmoh || g_mamba1 ? 2e-3 : 5e-3;
    fd_order4 = g_qwen35 || g_lfm2 || g_mamba || g_nemh || g_olmoh || g_mamba1;
    fixture_open_llama(&f, TL, 4, 16, 7, TV, TB, "fp32");
    big_init(&f);
    gradcheck(&f, 8, NULL);
    fixture_close(&f);
    if (g_nemh) {
        fixture_open_llama(&f, 3, 4, 16, 7, TV, TB, "fp32");
        big_init(&f);
        gradcheck(&f, 8, NULL);
        fixture_close(&f);
    }
    if (g_window) g_window = 37;
    /* Mamba-1's A_log has a gradient per channel and state value, each small at width 8 */
    fixture_open_llama(&f, 1, 2, g_mamba1 ? 16 : 8, 40, TV, 2, "fp32");
    big_init(&f);
    gradcheck(&f, 6, "attn");
    fixture_close(&f);
    if (g_window) g_window = 9;
    /* The whole-head attention (native bf16 CPUs take it) with grouped-query heads, forced here so
     * that it is checked on every CPU: gradients equal the row-block way's. */
    fixture_t w;
    fixture_open_llama(&f, TL, 4, 16, 40, TV, 2, "fp32");
    big_init(&f);
    setenv("ACCEL_ATT_WHOLE_HEAD", "1", 1);
    fixture_open_llama(&w, TL, 4, 16, 40, TV, 2, "fp32");
    unsetenv("ACCEL_ATT_WHOLE_HEAD");
    memcpy(w.params, f.params, sizeof(float) * f.model.layout.numel);
    memset(f.grads, 0, sizeof(float) * f.model.layout.numel);
    memset(w.grads, 0, sizeof(float) * w.model.layout.numel);
    double lf, lw;
    grads_of(&f, 1.0f, &lf);
    grads_of(&w, 1.0f, &lw);
    ck_assert_double_eq_tol(lf, lw, 1e-5 * fabs(lf));
    for (int i = 0; i < f.model.layout.ntensors; i++) {
        const accel_tensor_t *t = &f.model.layout.tensors[i];
        double dmax = 0, gmax = 0;
        for (size_t e = 0; e < t->numel; e++) {
            dmax = fmax(dmax, fabs(f.grads[t->offset + e] - w.grads[t->offset + e]));
            gmax = fmax(gmax, fabs(f.grads[t->offset + e]));
        }
        ck_assert_msg(dmax <= 1e-4 * gmax, "%s: whole-head and row-block gradients differ by %g "
                      "(max %g)", t->name, dmax, gmax);
    }
    fixture_close(&w);
    fixture_close(&f);
    fd_h = FD_H;
    fd_order4 = false;
    g_qwen3 = false;
    g_moe = 0;
    g_window = g_pattern = g_nope = 0;
    g_olmo = 0;
    g_gemma = g_oss = g_longrope = g_exaone = false;
    g_mla = g_plain = 0;
    g_qscale = g_qkafter = g_cohere = g_qwen35 = g_mamba = g_llama4 = g_olmoh = false;
    g_lfm2 = g_nemh = g_mamba1 = 0;
    g_res_mult = 0;
    g_oss_limit = "1";
}
END_TEST

/* model.sliding_window=W: a token sees itself and the W-1 before it. RoPE scores depend on the
 * distance only, so in one layer position t's logits are those of tokens t-W+1..t run alone. */
START_TEST(test_sliding_window)
{
    enum { T = 40, W = 5, V = 13 };
    fixture_t f, one;
    g_window = W;
    fixture_open_llama(&f, 1, 4, 16, T, V, 1, "fp32");
    g_window = 0;
    fixture_open_llama(&one, 1, 4, 16, T, V, 1, "fp32");
    big_init(&f);
    memcpy(one.params, f.params, sizeof(float) * f.model.layout.numel);
    float *all = malloc(sizeof(float) * T * V), alone[V];
    ck_assert_int_eq(f.model.ops->logits_range(f.model.state, &f.model.layout, f.params, f.tokens, T, 0,
                                               all, NULL), ACCEL_OK);
    double worst = 0, apart = 0;
    for (int t = 0; t < T; t++) {
        const int s = t >= W - 1 ? t - W + 1 : 0;
        ck_assert_int_eq(one.model.ops->logits(one.model.state, &one.model.layout, one.params, f.tokens + s,
                                               t + 1 - s, alone), ACCEL_OK);
        for (int v = 0; v < V; v++) worst = fmax(worst, fabs(all[t * V + v] - alone[v]));
    }
    /* and without the window the later positions differ */
    ck_assert_int_eq(one.model.ops->logits(one.model.state, &one.model.layout, one.params, f.tokens, T,
                                           alone), ACCEL_OK);
    for (int v = 0; v < V; v++) apart = fmax(apart, fabs(all[(T - 1) * V + v] - alone[v]));
    printf("sliding window %d: every position's logits as its window alone within %.2e (whole context: %.2e)\n",
           W, worst, apart);
    ck_assert_msg(worst < 1e-4, "windowed logits differ from the window run alone by %g", worst);
    ck_assert_msg(apart > 1e-2, "the window changes nothing (%g)", apart);
    free(all);
    fixture_close(&f);
    fixture_close(&one);
}
END_TEST

/* model.router_aux_loss is training's: forward_backward's loss carries B x coefficient x the
 * balance term (E sum_e f_e P_e: K = 2 when balanced, up to E), evaluation reports the
 * cross-entropy alone, the same with the term on or off. */
START_TEST(test_experts_aux)
{
    fixture_t on, off;
    g_moe = 1;                                  /* router_aux_loss = 0.5 */
    fixture_open_llama(&on, TL, 4, 16, 7, TV, TB, "fp32");
    fixture_open_llama(&off, TL, 4, 16, 7, TV, TB, "fp32");
    g_moe = 0;
    off.cfg.model.router_aux_loss = 0.0;
    accel_model_destroy(&off.model);
    ck_assert_int_eq(accel_model_create(&off.cfg, &off.model), ACCEL_OK);
    big_init(&on);
    memcpy(off.params, on.params, sizeof(float) * on.model.layout.numel);
    const double with = loss_of(&on), without = loss_of(&off);
    const double term = (with - without) / (TB * 0.5);
    ck_assert_msg(term > 1.5 && term < 4.0, "load-balancing term %g (with %g, without %g)", term, with,
                  without);
    float le[TB], lo[TB];
    accel_batch_t b = batch_of(&on);
    ck_assert_int_eq(on.model.ops->eval(on.model.state, &on.model.layout, on.params, &b, le, NULL), ACCEL_OK);
    ck_assert_int_eq(off.model.ops->eval(off.model.state, &off.model.layout, off.params, &b, lo, NULL), ACCEL_OK);
    double sum = 0;
    for (int i = 0; i < TB; i++) {
        ck_assert_msg(le[i] == lo[i], "sample %d: evaluation %g with the term, %g without", i, le[i], lo[i]);
        sum += le[i];
    }
    ck_assert_double_eq_tol(sum, without, 1e-5 * without);
    printf("experts: load-balancing term %.4f (K = 2 balanced), evaluation without it\n", term);
    fixture_close(&on);
    fixture_close(&off);
}
END_TEST

/* The KV cache: growing a sequence one token at a time through logits_cached gives the logits of
 * the whole-window pass (within 1e-5 in fp32; bf16 and fp16 within their rounding), for both
 * families and past one attention row block; a cache that does not hold the claimed tokens is
 * refused. */
/* The variant the flags above make, for messages. */
static const char *variant(bool llama)
{
    return g_mamba1 ? "mamba1" : g_plain == 6 ? "apertus" : g_olmoh ? "olmo-hybrid" : g_llama4 ? "llama4" : g_nemh ? "nemotron-h" : g_mamba ? "mamba2" : g_lfm2 == 2 ? "lfm3" : g_lfm2 ? "lfm2" : g_qwen35 ? "qwen3.5" : g_qkafter ? "qk-after-rope" : g_qscale ? (g_mla ? "mla+qscale" : "qscale")
           : g_mla ? "mla" : g_exaone ? "exaone4" : g_longrope ? "longrope" : g_oss ? "gpt-oss" : g_gemma ? "gemma3"
           : g_olmo ? "olmo2" : g_window ? "window" : g_moe ? "experts" : g_qwen3 ? "qwen3" : llama ? "llama" : "gpt";
}

static void kv_case(bool llama, const char *precision, double tol)
{
    enum { T = 40, V = 13 };
    fixture_t f;
    if (llama) fixture_open_llama(&f, 2, 4, 16, T, V, 1, precision);
    else fixture_open(&f, 2, 2, 16, T, V, 1, precision);
    big_init(&f);
    const accel_model_ops_t *ops = f.model.ops;
    ck_assert_ptr_nonnull(ops->logits_cached);
    float a[V], b[V];
    double worst = 0;
    for (int n = 1; n <= T; n++) {
        int cached = n == 1 ? 0 : n == 20 ? 12 : n - 1;     /* also a call reusing only a part */
        ck_assert_int_eq(ops->logits_cached(f.model.state, &f.model.layout, f.params, f.tokens, n,
                                            cached, a, NULL), ACCEL_OK);
        for (int v = 0; v < V; v++) b[v] = a[v];
        /* the reference pass resets the cache; the next cached call must start over from it */
        ck_assert_int_eq(ops->logits_range(f.model.state, &f.model.layout, f.params, f.tokens, n,
                                           n - 1, a, NULL), ACCEL_OK);
        for (int v = 0; v < V; v++) {
            double d = fabs((double)a[v] - b[v]);
            if (d > worst) worst = d;
            ck_assert_msg(d <= tol * (1 + fabs(a[v])), "%s %s: %d tokens, logit %d: cached %g, "
                          "whole window %g", variant(llama), precision, n, v, b[v], a[v]);
        }
    }
    printf("kv cache %s %s: %d tokens, max |cached - whole window| %.2e\n",
           variant(llama), precision, T, worst);
    /* The cache holds T tokens now: claiming more, or no new token, is refused. */
    ck_assert_int_eq(ops->logits_cached(f.model.state, &f.model.layout, f.params, f.tokens, 5, 5,
                                        a, NULL), ACCEL_ERR_INVALID);
    ck_assert_int_eq(ops->logits_cached(f.model.state, &f.model.layout, f.params, f.tokens, 3, 2,
                                        a, NULL), ACCEL_OK);
    ck_assert_int_eq(ops->logits_cached(f.model.state, &f.model.layout, f.params, f.tokens, 10, 4,
                                        a, NULL), ACCEL_ERR_INVALID);
    fixture_close(&f);
}

START_TEST(test_kv_cache)
{
    for (int llama = 0; llama < 28; llama++) {  /* 2: with Qwen3's attention, 3: experts, 4: shared,
                                                 * 5: a sliding window, 6: OLMo 2, 7: Gemma 3,
                                                 * 8: gpt-oss, 9: GLM-4.5's experts, 10: LongRoPE
                                                 * (the cache recomputed past 8 tokens), 11: EXAONE 4,
                                                 * 12: latent attention, 12 and 13: query temperature,
                                                 * 14: q/k norms after RoPE, 15: Qwen3.5 (a delta-net's
                                                 * state and convolution tail; the call reusing a
                                                 * part of the cache recomputes its sequence),
                                                 * 16: LFM2 (a convolution's tail), 17: LFM3,
                                                 * 18: Mamba-2 (its heads' states and tail),
                                                 * 19-21: Nemotron-H's (a Mamba-2 layer, then
                                                 * an MLP or plain experts alone, in a latent),
                                                 * 22: Llama 4's (chunks, temperature),
                                                 * 23: OLMo Hybrid's, 24: Apertus's xIELU,
                                                 * 25-27: Mamba-1's (its channels' states and
                                                 * tail; Falcon Mamba's, Jamba's norms) */
        g_qwen3 = llama == 2 || llama == 14;
        g_qkafter = llama == 14;
        g_nope = llama == 2 ? 2 : 0;            /* layer 1 of 2 without RoPE */
        g_moe = llama == 3 || llama == 8 ? 1 : llama == 4 ? 3 : llama == 9 ? 4 : 0;
        g_oss = llama == 8;
        g_window = llama == 5 ? 7 : 0;
        g_pattern = llama == 5 ? 2 : 0;         /* layer 0 slides (plain RoPE), layer 1 not */
        g_olmo = llama == 6;
        g_gemma = llama == 7;
        g_longrope = llama == 10;
        g_exaone = llama == 11;
        g_mla = llama == 12;
        g_qscale = llama >= 12 && llama <= 14;
        g_qwen35 = llama == 15;
        g_lfm2 = llama == 16 ? 1 : llama == 17 ? 2 : 0;
        g_mamba = llama == 18;
        g_nemh = llama >= 19 && llama <= 21 ? llama - 18 : 0;
        g_llama4 = llama == 22;
        g_olmoh = llama == 23;
        g_plain = llama == 24 ? 6 : 0;
        g_mamba1 = llama >= 25 && llama <= 27 ? llama - 24 : 0;
        kv_case(llama, "fp32", 1e-5);
        kv_case(llama, "bf16", 2e-2);
        /* fp16's rounding of a product's operands turns a last-bit difference of the two ways into
         * an fp16 ulp (1e-3); the delta-nets' L2 and gated norms magnify it further (Qwen3.5: up to
         * 1.2e-2 on a logit of 1.4, 0.5 of its bound; fp32 within 6e-6), as LFM3's norms after
         * every sublayer do (3.8e-3 on a logit of 0.41), as Nemotron-H's Mamba-2 gated norms
         * feeding an MLP alone (1.95e-3 here; fp32 within 1.8e-6), as Mamba-1's decays exp(dt A) of
         * dt from two fp16 products in a row (x_proj, dt_proj: up to 2.3e-3; fp32 within 9e-6) */
        kv_case(llama, "fp16", g_qwen35 || g_lfm2 == 2 || g_nemh || g_olmoh || g_mamba1 ? 1e-2 : 2e-3);
    }
    g_qwen3 = false;
    g_moe = 0;
    g_window = 0;
    g_olmo = 0;
    g_gemma = g_oss = g_longrope = g_exaone = g_qscale = g_qkafter = g_qwen35 = g_mamba = g_llama4 = g_olmoh = false;
    g_mla = g_lfm2 = g_nemh = g_plain = g_mamba1 = 0;
    g_res_mult = 0;
}
END_TEST

/* Gradients are ADDED (never overwritten) and scale linearly with grad_scale. */
START_TEST(test_accumulate_and_scale)
{
    fixture_t f;
    fixture_open(&f, TL, TNH, TC, TT, TV, TB, "fp32");
    big_init(&f);
    size_t n = f.model.layout.numel;
    float *g1 = malloc(sizeof(float) * n), *base = malloc(sizeof(float) * n);
    double l1, l2;
    memset(f.grads, 0, sizeof(float) * n);
    grads_of(&f, 0.25f, &l1);
    memcpy(g1, f.grads, sizeof(float) * n);
    /* Start from arbitrary gradients: the pass must add to them. */
    for (size_t i = 0; i < n; i++) base[i] = f.grads[i] = (float)((i % 7) * 0.5 - 1.0);
    grads_of(&f, 0.25f, &l2);
    ck_assert_double_eq(l1, l2);
    double maxg = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_float_eq_tol(f.grads[i] - base[i], g1[i], 1e-6f + 1e-5f * fabsf(g1[i]));
        if (fabsf(g1[i]) > maxg) maxg = fabsf(g1[i]);
    }
    ck_assert_double_gt(maxg, 1e-3);
    /* Scale 0.5 gives twice the gradient of scale 0.25. */
    memset(f.grads, 0, sizeof(float) * n);
    grads_of(&f, 0.5f, &l2);
    for (size_t i = 0; i < n; i++)
        ck_assert_float_eq_tol(f.grads[i], 2.0f * g1[i], 1e-6f + 1e-5f * fabsf(g1[i]));
    /* Two passes accumulate to twice one pass. */
    memset(f.grads, 0, sizeof(float) * n);
    grads_of(&f, 0.25f, &l2);
    grads_of(&f, 0.25f, &l2);
    for (size_t i = 0; i < n; i++)
        ck_assert_float_eq_tol(f.grads[i], 2.0f * g1[i], 1e-6f + 1e-5f * fabsf(g1[i]));
    free(g1);
    free(base);
    fixture_close(&f);
}
END_TEST

/* The loss mask (prompt/completion data): a masked-out target adds nothing, so the loss and every
 * gradient are linear in the mask: for any mask they equal the sum of the single-target passes it
 * selects (per target t of sample b, the pass whose mask is 1 at (b, t) alone). A mask of ones is
 * bitwise no mask, one of zeros gives 0, and eval's sample losses add up to the same loss
 * (gpt and llama: _i = 0, 1). */
START_TEST(test_loss_mask)
{
    fixture_t f;
    if (_i == 0) fixture_open(&f, TL, TNH, TC, TT, TV, TB, "fp32");
    else fixture_open_llama(&f, TL, TNH, TC, TT, TV, TB, "fp32");
    big_init(&f);
    const size_t n = f.model.layout.numel, row = (size_t)TT + 1, cells = (size_t)TB * row;
    float *g_none = malloc(sizeof(float) * n), *g_sum = calloc(n, sizeof(float));
    float *g_one = malloc(sizeof(float) * n * (size_t)TB * TT);
    double *l_one = malloc(sizeof(double) * (size_t)TB * TT);
    uint8_t *mask = malloc(cells);
    accel_batch_t b = batch_of(&f);
    double l_none, l;
    memset(f.grads, 0, sizeof(float) * n);
    grads_of(&f, 0.5f, &l_none);
    memcpy(g_none, f.grads, sizeof(float) * n);
    /* ones: bitwise no mask */
    memset(mask, 1, cells);
    b.loss_mask = mask;
    memset(f.grads, 0, sizeof(float) * n);
    ck_assert_int_eq(f.model.ops->forward_backward(f.model.state, &f.model.layout, f.params, f.grads,
                                                   &b, 0.5f, &l), ACCEL_OK);
    ck_assert(l == l_none);
    ck_assert_int_eq(memcmp(f.grads, g_none, sizeof(float) * n), 0);
    /* zeros: nothing */
    memset(mask, 0, cells);
    memset(f.grads, 0, sizeof(float) * n);
    ck_assert_int_eq(f.model.ops->forward_backward(f.model.state, &f.model.layout, f.params, f.grads,
                                                   &b, 0.5f, &l), ACCEL_OK);
    ck_assert(l == 0.0);
    for (size_t i = 0; i < n; i++) ck_assert(f.grads[i] == 0.0f);
    /* one target at a time */
    for (int k = 0; k < TB * TT; k++) {
        memset(mask, 0, cells);
        mask[(size_t)(k / TT) * row + (size_t)(k % TT) + 1] = 1;
        memset(f.grads, 0, sizeof(float) * n);
        ck_assert_int_eq(f.model.ops->forward_backward(f.model.state, &f.model.layout, f.params,
                                                       f.grads, &b, 0.5f, &l_one[k]), ACCEL_OK);
        ck_assert_double_gt(l_one[k], 0.0);
        memcpy(g_one + (size_t)k * n, f.grads, sizeof(float) * n);
    }
    /* a mixed mask (token 0 of each row is never a target: its value must not matter) */
    double l_want = 0;
    for (size_t c = 0; c < cells; c++) mask[c] = c % row == 0 ? 1 : (uint8_t)((c * 7 + 3) % 5 < 2);
    for (int k = 0; k < TB * TT; k++) {
        if (!mask[(size_t)(k / TT) * row + (size_t)(k % TT) + 1]) continue;
        l_want += l_one[k];
        for (size_t i = 0; i < n; i++) g_sum[i] += g_one[(size_t)k * n + i];
    }
    ck_assert_double_gt(l_want, 0.0);
    ck_assert_double_lt(l_want, l_none);
    memset(f.grads, 0, sizeof(float) * n);
    ck_assert_int_eq(f.model.ops->forward_backward(f.model.state, &f.model.layout, f.params, f.grads,
                                                   &b, 0.5f, &l), ACCEL_OK);
    ck_assert_double_eq_tol(l, l_want, 1e-9 * l_want);
    double maxg = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_float_eq_tol(f.grads[i], g_sum[i], 1e-6f + 1e-5f * fabsf(g_sum[i]));
        if (fabsf(g_sum[i]) > maxg) maxg = fabsf(g_sum[i]);
    }
    ck_assert_double_gt(maxg, 1e-3);
    float loss[TB];
    ck_assert_int_eq(f.model.ops->eval(f.model.state, &f.model.layout, f.params, &b, loss, NULL), ACCEL_OK);
    ck_assert_double_eq_tol((double)loss[0] + loss[1] + loss[2], l_want, 1e-6 * l_want);
    free(g_none); free(g_sum); free(g_one); free(l_one); free(mask);
    fixture_close(&f);
}
END_TEST

/* train.recompute: mlp and block rebuild what they drop with the forward pass's own products, so the
 * loss and every gradient are bitwise those of recompute=none (gpt and llama, fp32 and bf16, two
 * passes: the second accumulates onto the first and finds the shared buffers as the first left
 * them), while the activation memory shrinks none > mlp > block. */
START_TEST(test_recompute_bitwise)
{
    static const char *const modes[] = { "none", "mlp", "block" };
    const bool llama = _i / 2;                  /* _i / 2 == 2: with Qwen3's attention, 3: experts,
                                                 * 4: with a shared expert, 5: OLMo 2, 6: OLMoE,
                                                 * 7: Gemma 3, 8: gpt-oss, 9: GLM-4.5's experts,
                                                 * 10: latent attention with the query
                                                 * temperature, 11: Qwen3's norms after RoPE,
                                                 * 12: StarCoder2's LayerNorms and plain MLP,
                                                 * 13, 14: the MLP beside attention (GPT-NeoX's,
                                                 * GPT-J's), 15: Cohere 2's, 16: Qwen3.5's,
                                                 * 17: LFM2's, 18: LFM3's, 19: Mamba-2's,
                                                 * 20-22: Nemotron-H's (an MLP alone on the
                                                 * embeddings, attention alone, a whole block;
                                                 * plain experts, in a latent), 23: Llama 4's,
                                                 * 24: OLMo Hybrid's, 25: Apertus's xIELU,
                                                 * 26, 27: Mamba-1's (Jamba's norms) */
    const char *precision = _i % 2 ? "bf16" : "fp32";
    g_qwen3 = _i / 2 == 2 || _i / 2 == 11;
    g_qkafter = _i / 2 == 11;
    g_moe = _i / 2 == 3 || _i / 2 == 6 || _i / 2 == 8 ? 1 : _i / 2 == 4 ? 3 : _i / 2 == 9 ? 4 : 0;
    g_oss = _i / 2 == 8;
    g_olmo = _i / 2 == 5 ? 1 : _i / 2 == 6 ? 1 : 0;
    g_gemma = _i / 2 == 7;
    g_mla = _i / 2 == 10;
    g_qscale = g_mla;
    g_plain = _i / 2 == 12 ? 1 : _i / 2 == 13 || _i / 2 == 14 ? _i / 2 - 9 : _i / 2 == 25 ? 6 : 0;
    g_mamba1 = _i / 2 == 26 ? 1 : _i / 2 == 27 ? 3 : 0;
    g_cohere = _i / 2 == 15;
    g_qwen35 = _i / 2 == 16;
    g_lfm2 = _i / 2 == 17 ? 1 : _i / 2 == 18 ? 2 : 0;
    g_mamba = _i / 2 == 19;
    g_nemh = _i / 2 >= 20 && _i / 2 <= 22 ? _i / 2 - 19 : 0;
    g_llama4 = _i / 2 == 23;
    g_olmoh = _i / 2 == 24;
    float *ref = NULL;
    double ref_loss = 0;
    size_t bytes[3];
    for (int r = 0; r < 3; r++) {
        fixture_t f;
        if (llama) fixture_open_llama(&f, 3, 4, 16, 7, TV, TB, precision);
        else fixture_open(&f, 3, TNH, TC, TT, TV, TB, precision);
        ck_assert_int_eq(accel_config_set(&f.cfg, "train.recompute", modes[r], NULL, 0), ACCEL_OK);
        accel_model_destroy(&f.model);          /* rebuilt with the mode (same layout and weights) */
        ck_assert_int_eq(accel_model_create(&f.cfg, &f.model), ACCEL_OK);
        bytes[r] = f.model.ops->activation_bytes(&f.cfg, 4);
        if (g_nemh) {   /* layers of one sublayer keep only their half's activations (block keeps none) */
            accel_config_t whole = f.cfg;
            memset(&whole.model.mlp_only_layers, 0, sizeof whole.model.mlp_only_layers);
            memset(&whole.model.mixer_only_layers, 0, sizeof whole.model.mixer_only_layers);
            const size_t full = f.model.ops->activation_bytes(&whole, 4);
            ck_assert_msg(r < 2 ? bytes[r] < full : bytes[r] <= full, "recompute=%s: %zu bytes of activations with "
                          "one-sublayer layers, %zu with whole blocks", modes[r], bytes[r], full);
        }
        big_init(&f);
        const size_t n = f.model.layout.numel;
        double loss, loss2;
        memset(f.grads, 0, sizeof(float) * n);
        grads_of(&f, 0.5f, &loss);
        grads_of(&f, 0.5f, &loss2);
        ck_assert(loss == loss2);
        if (r == 0) {
            ref = malloc(sizeof(float) * n);
            memcpy(ref, f.grads, sizeof(float) * n);
            ref_loss = loss;
        } else {
            ck_assert_msg(loss == ref_loss, "%s %s recompute=%s: loss %.17g, none %.17g",
                          g_qwen3 ? "qwen3" : llama ? "llama" : "gpt", precision, modes[r], loss, ref_loss);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(memcmp(&f.grads[i], &ref[i], sizeof(float)) == 0,
                              "%s %s recompute=%s: gradient %zu is %.9g, none gives %.9g",
                              g_qwen3 ? "qwen3" : llama ? "llama" : "gpt", precision, modes[r], i, f.grads[i], ref[i]);
        }
        fixture_close(&f);
    }
    ck_assert_uint_gt(bytes[0], bytes[1]);
    ck_assert_uint_gt(bytes[1], bytes[2]);
    free(ref);
    g_qwen3 = false;
    g_moe = 0;
    g_olmo = 0;
    g_gemma = g_oss = g_qscale = g_qkafter = g_cohere = g_qwen35 = g_mamba = g_llama4 = g_olmoh = false;
    g_mla = g_plain = g_lfm2 = g_nemh = g_mamba1 = 0;
}
END_TEST

static double xent(const float *z, int V, int y)
{
    double m = z[0], s = 0;
    for (int v = 1; v < V; v++) m = fmax(m, z[v]);
    for (int v = 0; v < V; v++) s += exp(z[v] - m);
    return m + log(s) - z[y];
}

/* Causality: the training forward's loss equals the sum of per-position losses computed from
 * prefixes only (the logits op sees tokens 0..t and nothing after), and changing a future token
 * leaves the logits of every earlier position unchanged. */
START_TEST(test_causality)
{
    fixture_t f;
    const int T = 37, V = TV;
    fixture_open(&f, TL, TNH, TC, T, V, 1, "fp32");
    big_init(&f);
    float z[TV], z2[TV];
    const accel_model_ops_t *ops = f.model.ops;
    double from_prefixes = 0;
    for (int t = 0; t < T; t++) {
        ck_assert_int_eq(ops->logits(f.model.state, &f.model.layout, f.params, f.tokens, t + 1, z),
                         ACCEL_OK);
        from_prefixes += xent(z, V, f.tokens[t + 1]);
    }
    from_prefixes /= T;
    float loss;
    accel_batch_t b = batch_of(&f);
    ck_assert_int_eq(ops->eval(f.model.state, &f.model.layout, f.params, &b, &loss, NULL), ACCEL_OK);
    ck_assert_double_eq_tol(loss, from_prefixes, 1e-5 * from_prefixes);
    /* Change token 20: the logits after tokens 0..19 must not move; those after 0..20 must. */
    int32_t *alt = malloc(sizeof(int32_t) * (T + 1));
    memcpy(alt, f.tokens, sizeof(int32_t) * (T + 1));
    alt[20] = (alt[20] + 3) % V;
    for (int t = 0; t < T; t++) {
        ck_assert_int_eq(ops->logits(f.model.state, &f.model.layout, f.params, f.tokens, t + 1, z),
                         ACCEL_OK);
        ck_assert_int_eq(ops->logits(f.model.state, &f.model.layout, f.params, alt, t + 1, z2),
                         ACCEL_OK);
        double diff = 0;
        for (int v = 0; v < V; v++) diff = fmax(diff, fabs(z[v] - z2[v]));
        if (t < 20) ck_assert_msg(diff == 0.0, "position %d changed by %g", t, diff);
        else ck_assert_msg(diff > 1e-4, "position %d did not see token 20", t);
    }
    /* In the batched training pass: the loss of a sequence whose tail differs after position 20
     * differs only through positions 19.. (target 20 and later), which the prefix sums confirm. */
    memcpy(f.tokens, alt, sizeof(int32_t) * (T + 1));
    double alt_prefixes = 0;
    for (int t = 0; t < T; t++) {
        ops->logits(f.model.state, &f.model.layout, f.params, f.tokens, t + 1, z);
        alt_prefixes += xent(z, V, f.tokens[t + 1]);
    }
    ck_assert_int_eq(ops->eval(f.model.state, &f.model.layout, f.params, &b, &loss, NULL), ACCEL_OK);
    ck_assert_double_eq_tol(loss, alt_prefixes / T, 1e-5 * alt_prefixes / T);
    free(alt);
    fixture_close(&f);
}
END_TEST

/* Packed documents (accel_batch_t.positions, data.document_mask): each sample's loss is that of
 * its documents run one at a time, each on its own from position 0, over the targets that do not
 * start a document (the trainer leaves those out with the loss mask); the gradients pass the
 * finite-difference check. Rows of 40 tokens (past one attention row block) hold documents of 1 to
 * 25 tokens, one row starting mid-document. _i: gpt, llama, llama with Qwen3's attention, Qwen3.5's
 * blocks (a gated delta-net's convolution and state restart with each document), LFM2's and LFM3's
 * (a short convolution's too), Mamba-2's (its states and convolution), Nemotron-H's (Mamba-2 alone, then plain experts alone); odd _i take the whole-head
 * attention. */
START_TEST(test_documents)
{
    enum { T = 40, B = 2 };
    static const int starts[B][6] = { { 0, 7, 8, 33, -1 }, { 0, 19, 20, 21, 40, -1 } };
    fixture_t f;
    g_qwen3 = g_qscale = _i / 2 == 2;           /* with the query temperature (per document) too */
    g_qwen35 = _i / 2 == 3;
    g_lfm2 = _i / 2 == 4 ? 1 : _i / 2 == 5 ? 2 : 0;
    g_mamba = _i / 2 == 6;
    g_nemh = _i / 2 == 7 ? 2 : 0;
    g_llama4 = _i / 2 == 8;                     /* chunks and temperature by document position */
    g_olmoh = _i / 2 == 9;
    g_mamba1 = _i / 2 == 10 ? 1 : 0;            /* its channels' states restart with each document */
    if (_i % 2) setenv("ACCEL_ATT_WHOLE_HEAD", "1", 1);
    if (_i / 2 == 0) fixture_open(&f, TL, TNH, TC, T, TV, B, "fp32");
    else fixture_open_llama(&f, TL, 4, 16, T, TV, B, "fp32");
    unsetenv("ACCEL_ATT_WHOLE_HEAD");
    big_init(&f);
    int32_t pos[B * T];
    uint8_t mask[B * (T + 1)], start[B * (T + 1)];
    memset(start, 0, sizeof start);
    for (int b = 0; b < B; b++)
        for (int k = 0; starts[b][k] >= 0; k++) start[b * (T + 1) + starts[b][k]] = 1;
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= T; t++) {
            if (t < T) pos[b * T + t] = t == 0 || start[b * (T + 1) + t] ? 0 : pos[b * T + t - 1] + 1;
            mask[b * (T + 1) + t] = !start[b * (T + 1) + t];
        }
    f.positions = pos;
    f.loss_mask = mask;
    /* the expected sample losses, document by document through the one-sequence logits */
    const accel_model_ops_t *ops = f.model.ops;
    float z[TV], loss[B];
    accel_batch_t packed = batch_of(&f);
    ck_assert_int_eq(ops->eval(f.model.state, &f.model.layout, f.params, &packed, loss, NULL), ACCEL_OK);
    for (int b = 0; b < B; b++) {
        double want = 0;
        for (int t = 0; t < T; t++) {
            if (!mask[b * (T + 1) + t + 1]) continue;
            const int lo = t - pos[b * T + t];
            const int32_t *row = f.tokens + (size_t)b * (T + 1);
            ck_assert_int_eq(ops->logits(f.model.state, &f.model.layout, f.params, row + lo, t - lo + 1, z),
                             ACCEL_OK);
            want += xent(z, TV, row[t + 1]);
        }
        want /= T;
        ck_assert_msg(fabs(loss[b] - want) <= 1e-5 * want, "sample %d: packed loss %.9g, documents one "
                      "at a time %.9g", b, loss[b], want);
    }
    /* without the positions the documents see each other: the loss moves */
    f.positions = NULL;
    float whole[B];
    accel_batch_t b0 = batch_of(&f);
    ck_assert_int_eq(ops->eval(f.model.state, &f.model.layout, f.params, &b0, whole, NULL), ACCEL_OK);
    ck_assert(fabs(whole[0] - loss[0]) > 1e-4 * loss[0]);
    f.positions = pos;
    fd_h = g_mamba || g_qwen35 || g_nemh || g_olmoh || g_mamba1 ? 2e-3 : 5e-3;
    fd_order4 = g_qwen35 || g_mamba || g_nemh || g_olmoh || g_mamba1;
    gradcheck(&f, 6, NULL);
    fd_h = FD_H;
    fd_order4 = false;
    /* positions that do not count up from a restart are refused */
    pos[5] = 9;
    double l;
    accel_batch_t bad = batch_of(&f);
    ck_assert_int_eq(ops->forward_backward(f.model.state, &f.model.layout, f.params, f.grads, &bad, 1.0f, &l),
                     ACCEL_ERR_INVALID);
    g_qwen3 = g_qscale = g_qwen35 = g_mamba = g_llama4 = g_olmoh = false;
    g_lfm2 = g_nemh = g_mamba1 = 0;
    fixture_close(&f);
}
END_TEST

/* bf16 and fp16 products change the loss by rounding only: within 2e-3 relative of fp32 at the
 * default init (measured: ~1e-4), and the gradients point the same way (cosine > 0.999). The
 * difference must not be exactly zero, or the reduced precision was never applied. Every
 * parameter tensor's gradient stays within a relative error of fp32's (a 5% error in one
 * attention product gives 5e-2, next to 6e-3 from bf16 rounding). Two shapes:
 * the small one has only tiny products (emulated); the larger one's attention blocks (32 rows,
 * head size 64) are big enough for the native bf16 kernel where the CPU has one. */
START_TEST(test_precision)
{
    const char *names[] = { "bf16", "fp16" };
    const double tensor_tol[] = { 2e-2, 2e-3 };         /* measured worst: 5.8e-3, 8.0e-4 */
    const int shapes[][3] = { { TNH, 32, 16 }, { 1, 64, 64 } };     /* heads, width, context */
    for (int s = 0; s < 2; s++) {
        const int nh = shapes[s][0], c = shapes[s][1], t = shapes[s][2];
        fixture_t ref;
        fixture_open(&ref, TL, nh, c, t, 50, TB, "fp32");
        size_t n = ref.model.layout.numel;
        double l32;
        memset(ref.grads, 0, sizeof(float) * n);
        grads_of(&ref, 1.0f, &l32);
        for (int k = 0; k < 2; k++) {
            fixture_t f;
            fixture_open(&f, TL, nh, c, t, 50, TB, names[k]);
            double l;
            memset(f.grads, 0, sizeof(float) * n);
            grads_of(&f, 1.0f, &l);
            double dot = 0, na = 0, nb = 0;
            for (size_t i = 0; i < n; i++) {
                dot += (double)f.grads[i] * ref.grads[i];
                na += (double)f.grads[i] * f.grads[i];
                nb += (double)ref.grads[i] * ref.grads[i];
            }
            double cosine = dot / sqrt(na * nb);
            /* Per tensor: a product with a wrong scale in one tensor's gradient barely moves the
             * overall cosine, but it shows in that tensor's relative error. */
            double worst = 0;
            const char *worst_name = "";
            for (int i = 0; i < ref.model.layout.ntensors; i++) {
                const accel_tensor_t *x = &ref.model.layout.tensors[i];
                double d2 = 0, r2 = 0;
                for (size_t j = x->offset; j < x->offset + x->numel; j++) {
                    d2 += ((double)f.grads[j] - ref.grads[j]) * ((double)f.grads[j] - ref.grads[j]);
                    r2 += (double)ref.grads[j] * ref.grads[j];
                }
                if (r2 > 0 && sqrt(d2 / r2) > worst) worst = sqrt(d2 / r2), worst_name = x->name;
            }
            printf("%s, width %d, context %d: loss %.7f vs fp32 %.7f (relative %.2e), gradient "
                   "cosine %.6f, worst tensor %s (relative error %.2e)\n", names[k], c, t, l, l32,
                   fabs(l - l32) / l32, cosine, worst_name, worst);
            ck_assert_double_le(fabs(l - l32), 2e-3 * l32);
            ck_assert_double_ne(l, l32);
            ck_assert_double_gt(cosine, 0.999);
            ck_assert_double_lt(worst, tensor_tol[k]);
            fixture_close(&f);
        }
        fixture_close(&ref);
    }
}
END_TEST

START_TEST(test_bad_tokens)
{
    fixture_t f;
    fixture_open(&f, TL, TNH, TC, TT, TV, TB, "fp32");
    accel_batch_t b = batch_of(&f);
    double loss;
    float l[TB];
    const int32_t bad[] = { -1, TV, 1 << 30 };
    for (int k = 0; k < 3; k++) {
        int32_t keep = f.tokens[TT + 1 + 2];
        f.tokens[TT + 1 + 2] = bad[k];
        ck_assert_int_eq(f.model.ops->forward_backward(f.model.state, &f.model.layout, f.params,
                                                       f.grads, &b, 1.0f, &loss), ACCEL_ERR_INVALID);
        ck_assert_int_eq(f.model.ops->eval(f.model.state, &f.model.layout, f.params, &b, l, NULL),
                         ACCEL_ERR_INVALID);
        f.tokens[TT + 1 + 2] = keep;
    }
    /* The target (last id of a row) is checked too. */
    f.tokens[TT] = TV;
    ck_assert_int_eq(f.model.ops->eval(f.model.state, &f.model.layout, f.params, &b, l, NULL),
                     ACCEL_ERR_INVALID);
    b.tokens = NULL;
    ck_assert_int_eq(f.model.ops->eval(f.model.state, &f.model.layout, f.params, &b, l, NULL),
                     ACCEL_ERR_INVALID);
    float z[TV];
    int32_t prompt[2] = { 1, TV + 4 };
    ck_assert_int_eq(f.model.ops->logits(f.model.state, &f.model.layout, f.params, prompt, 2, z),
                     ACCEL_ERR_INVALID);
    ck_assert_int_eq(f.model.ops->logits(f.model.state, &f.model.layout, f.params, prompt, 0, z),
                     ACCEL_ERR_INVALID);
    int32_t out[4];
    ck_assert_int_eq(accel_model_generate(&f.model, f.params, prompt, 2, 4, 0.0f, 0, 1, out),
                     ACCEL_ERR_INVALID);
    fixture_close(&f);
}
END_TEST

START_TEST(test_generate)
{
    fixture_t f;
    fixture_open(&f, TL, TNH, TC, TT, TV, 1, "fp32");
    big_init(&f);
    const int32_t prompt[] = { 3, 1, 4, 1, 5, 9, 2 };   /* longer than the context: sliding window */
    const int np = 7, nn = 12;
    int32_t a[12], b[12], c[12], g[12];
    /* Greedy: each token is the argmax of the logits of the (windowed) sequence so far. */
    ck_assert_int_eq(accel_model_generate(&f.model, f.params, prompt, np, nn, 0.0f, 0, 1, g), ACCEL_OK);
    int32_t seq[32];
    memcpy(seq, prompt, sizeof prompt);
    for (int i = 0; i < nn; i++) {
        float z[TV];
        int len = np + i, w = len < TT ? len : TT;
        ck_assert_int_eq(f.model.ops->logits(f.model.state, &f.model.layout, f.params, seq + len - w,
                                             w, z), ACCEL_OK);
        int best = 0;
        for (int v = 1; v < TV; v++)
            if (z[v] > z[best]) best = v;
        ck_assert_int_eq(g[i], best);
        seq[len] = best;
    }
    /* Sampling: the same seed gives the same tokens, another seed other tokens. */
    ck_assert_int_eq(accel_model_generate(&f.model, f.params, prompt, np, nn, 1.5f, 0, 42, a), ACCEL_OK);
    ck_assert_int_eq(accel_model_generate(&f.model, f.params, prompt, np, nn, 1.5f, 0, 42, b), ACCEL_OK);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert_int_eq(accel_model_generate(&f.model, f.params, prompt, np, nn, 1.5f, 0, 43, c), ACCEL_OK);
    ck_assert_int_ne(memcmp(a, c, sizeof a), 0);
    for (int i = 0; i < nn; i++) ck_assert(a[i] >= 0 && a[i] < TV);
    /* top_k = 1 is greedy whatever the temperature and seed. */
    ck_assert_int_eq(accel_model_generate(&f.model, f.params, prompt, np, nn, 2.0f, 1, 7, c), ACCEL_OK);
    ck_assert_int_eq(memcmp(c, g, sizeof g), 0);
    /* top_k = 3 only ever picks one of the 3 most likely tokens (checked on the first step). */
    float z[TV];
    f.model.ops->logits(f.model.state, &f.model.layout, f.params, prompt + np - TT, TT, z);
    for (uint64_t s = 0; s < 20; s++) {
        ck_assert_int_eq(accel_model_generate(&f.model, f.params, prompt, np, 1, 5.0f, 3, s, c), ACCEL_OK);
        int above = 0;
        for (int v = 0; v < TV; v++) above += z[v] > z[c[0]];
        ck_assert_int_lt(above, 3);
    }
    /* Models without a logits op cannot generate. */
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.model.name, sizeof cfg.model.name, "mlp");
    accel_model_t mlp;
    ck_assert_int_eq(accel_model_create(&cfg, &mlp), ACCEL_OK);
    ck_assert_ptr_null(mlp.ops->logits);
    ck_assert_int_eq(accel_model_generate(&mlp, f.params, prompt, np, 1, 0.0f, 0, 1, c),
                     ACCEL_ERR_UNSUPPORTED);
    accel_model_destroy(&mlp);
    fixture_close(&f);
}
END_TEST

/* The dispatching GEMM against a double reference on the rounded operands, for every transpose
 * combination, leading dimensions wider than the rows, and beta 0, 0.5 and 1. The small shape runs
 * the emulated path; the large one (odd sizes, K over several blocks) the AVX512-BF16 kernel on
 * CPUs that have it, and in fp32 oneDNN's sgemm where accel is built with it (130 x 150 x 300 is
 * past the size it takes over from OpenBLAS at). Rounded operands multiply exactly in fp32, so only the fp32 accumulation
 * differs from the reference: |error| <= 2e-6 * K * max|a b| covers it with a wide margin, and a
 * misplaced or unconverted element costs O(1). */
static void gemm_case(accel_dtype_t type, int M, int N, int K)
{
    const int ld = (M > N ? M : N) + (K > 0 ? K : 0) + 3;
    float *A = malloc(sizeof(float) * ld * ld), *B = malloc(sizeof(float) * ld * ld);
    float *C = malloc(sizeof(float) * M * ld), *C0 = malloc(sizeof(float) * M * ld);
    accel_rng_fill_normal(A, (uint64_t)ld * ld, 1.0f, 3, ACCEL_RNG_DATA, 1, 0);
    accel_rng_fill_normal(B, (uint64_t)ld * ld, 1.0f, 3, ACCEL_RNG_DATA, 2, 0);
    accel_rng_fill_normal(C0, (uint64_t)M * ld, 1.0f, 3, ACCEL_RNG_DATA, 3, 0);
    const float betas[] = { 0.0f, 0.5f, 1.0f };
    accel_gemm_cpu_t g;
    ck_assert_int_eq(accel_gemm_cpu_init(&g, type), ACCEL_OK);
    for (int tr = 0; tr < 12; tr++) {
        bool ta = tr & 1, tb = tr & 2;
        float beta = betas[tr / 4];
        memcpy(C, C0, sizeof(float) * M * ld);
        ck_assert_int_eq(accel_gemm_cpu(&g, ta, tb, M, N, K, 0.75f, A, ld, B, ld, beta, C, ld),
                         ACCEL_OK);
        double worst = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < K; k++) {
                    float a = ta ? A[k * ld + i] : A[i * ld + k];
                    float b = tb ? B[j * ld + k] : B[k * ld + j];
                    if (type == ACCEL_BF16) {
                        a = accel_bf16_to_f32(accel_f32_to_bf16(a));
                        b = accel_bf16_to_f32(accel_f32_to_bf16(b));
                    } else if (type == ACCEL_F16) {
                        a = accel_f16_to_f32(accel_f32_to_f16(a));
                        b = accel_f16_to_f32(accel_f32_to_f16(b));
                    }
                    s += (double)a * b;
                }
                double want = 0.75 * s + beta * C0[i * ld + j];
                worst = fmax(worst, fabs(C[i * ld + j] - want));
            }
        ck_assert_msg(worst < 2e-6 * K * 16, "%s %dx%dx%d trans %d%d beta %g: error %g",
                      accel_dtype_name(type), M, N, K, ta, tb, beta, worst);
    }
    accel_gemm_cpu_free(&g);
    free(A);
    free(B);
    free(C);
    free(C0);
}

static float round_to(accel_dtype_t type, float x)
{
    if (type == ACCEL_BF16) return accel_bf16_to_f32(accel_f32_to_bf16(x));
    if (type == ACCEL_F16) return accel_f16_to_f32(accel_f32_to_f16(x));
    return x;
}

/* The causal-attention products (lower triangle of A B^T; L B and L^T B with L lower triangular)
 * against a double reference on rounded operands, as gemm_case. T 19 is a full product on every
 * path; 77 (odd, partial tiles) and 128 run the triangle-only bf16 kernel where the CPU has it. */
static void tri_case(accel_dtype_t type, int T, int K)
{
    const int ld = T + K + 5;
    float *A = malloc(sizeof(float) * T * ld), *B = malloc(sizeof(float) * T * ld);
    float *L = malloc(sizeof(float) * T * ld), *C = malloc(sizeof(float) * T * ld);
    accel_rng_fill_normal(A, (uint64_t)T * ld, 1.0f, 3, ACCEL_RNG_DATA, 1, 0);
    accel_rng_fill_normal(B, (uint64_t)T * ld, 1.0f, 3, ACCEL_RNG_DATA, 2, 0);
    accel_rng_fill_normal(L, (uint64_t)T * ld, 1.0f, 3, ACCEL_RNG_DATA, 4, 0);
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++) L[i * ld + j] = 0.0f;
    accel_gemm_cpu_t g;
    ck_assert_int_eq(accel_gemm_cpu_init(&g, type), ACCEL_OK);
    ck_assert_int_eq(accel_gemm_cpu_lower_nt(&g, T, K, 0.75f, A, ld, B, ld, C, ld), ACCEL_OK);
    double worst = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)round_to(type, A[i * ld + k]) * round_to(type, B[j * ld + k]);
            worst = fmax(worst, fabs(C[i * ld + j] - 0.75 * s));
        }
    ck_assert_msg(worst < 2e-6 * K * 16, "%s lower_nt T %d K %d: error %g", accel_dtype_name(type),
                  T, K, worst);
    for (int tr = 0; tr < 2; tr++) {
        for (int i = 0; i < T; i++)
            for (int j = 0; j < ld; j++) C[i * ld + j] = NAN;        /* C is overwritten */
        ck_assert_int_eq(accel_gemm_cpu_trmm(&g, tr, T, K, 0.75f, L, ld, B, ld, C, ld), ACCEL_OK);
        worst = 0;
        for (int i = 0; i < T; i++)
            for (int j = 0; j < K; j++) {
                double s = 0;
                for (int k = 0; k < T; k++)
                    s += (double)round_to(type, tr ? L[k * ld + i] : L[i * ld + k]) *
                         round_to(type, B[k * ld + j]);
                worst = fmax(worst, fabs(C[i * ld + j] - 0.75 * s));
            }
        ck_assert_msg(worst < 2e-6 * T * 16, "%s trmm trans %d T %d N %d: error %g",
                      accel_dtype_name(type), tr, T, K, worst);
    }
    accel_gemm_cpu_free(&g);
    free(A);
    free(B);
    free(L);
    free(C);
}

START_TEST(test_tri_gemm)
{
    const accel_dtype_t types[] = { ACCEL_F32, ACCEL_BF16, ACCEL_F16 };
    for (int ti = 0; ti < 3; ti++) {
        tri_case(types[ti], 19, 8);
        tri_case(types[ti], 77, 37);
        tri_case(types[ti], 128, 64);
    }
}
END_TEST

START_TEST(test_gemm)
{
    const accel_dtype_t types[] = { ACCEL_F32, ACCEL_BF16, ACCEL_F16 };
    for (int ti = 0; ti < 3; ti++) {
        gemm_case(types[ti], 19, 23, 37);
        gemm_case(types[ti], 77, 70, 801);
        gemm_case(types[ti], 1, 70, 37);    /* one row (a KV-cached token): the sgemv path */
    }
    gemm_case(ACCEL_F32, 130, 150, 300);
    gemm_case(ACCEL_BF16, 64, 96, 256);
    gemm_case(ACCEL_BF16, 20, 24, 72);      /* attention-sized: partial panels, k tail */
    accel_gemm_cpu_t g;
    ck_assert_int_eq(accel_gemm_cpu_init(&g, ACCEL_I32), ACCEL_ERR_INVALID);
    accel_bf16_path_t path;
    ck_assert_int_eq(accel_gemm_bf16_path(&path), ACCEL_OK);
    printf("bf16 products: %s (%s)\n", accel_gemm_cpu_has_bf16() ? "native" : "emulated",
           accel_gemm_bf16_path_name(path));
}
END_TEST

START_TEST(test_kernels)
{
    /* exp: relative error below 1e-6 over the range softmax uses. */
    float x[201], y[201];
    for (int i = 0; i <= 200; i++) x[i] = -80.0f + 0.8f * (float)i;
    accel_cpu_exp(y, x, 201);
    for (int i = 0; i <= 200; i++)
        ck_assert_msg(fabs(y[i] - exp((double)x[i])) <= 1e-6 * exp((double)x[i]), "exp(%g)", x[i]);
    /* Bias + GELU against the formula in double (3 rows x 67 columns); the derivative it leaves in
     * x against central differences; the backward pass multiplies by it and sums the bias gradient. */
    float g[201], d[201], v0[201], bias[67], dbias[67];
    for (int c = 0; c < 67; c++) bias[c] = 0.01f * (float)c, dbias[c] = 0.5f;
    for (int i = 0; i <= 200; i++) v0[i] = -10.0f + 0.1f * (float)i, x[i] = v0[i] - bias[i % 67];
    accel_cpu_bias_act_forward(ACCEL_ACT_GELU_TANH, x, g, bias, 3, 67);
    for (int i = 0; i <= 200; i++) d[i] = 2.0f;
    accel_cpu_act_backward(d, x, dbias, 3, 67);
    for (int c = 0; c < 67; c++)
        ck_assert_msg(fabs(dbias[c] - (0.5 + d[c] + d[67 + c] + d[134 + c])) < 1e-6, "dbias[%d]", c);
    for (int i = 0; i <= 200; i++) {
        double v = v0[i];
        double want = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        ck_assert_msg(fabs(g[i] - want) < 2e-6 * (1 + fabs(want)), "gelu(%g) = %g, want %g", v, g[i], want);
        double h = 1e-4;
        double up = 0.5 * (v + h) * (1 + tanh(sqrt(2 / M_PI) * ((v + h) + 0.044715 * pow(v + h, 3))));
        double dn = 0.5 * (v - h) * (1 + tanh(sqrt(2 / M_PI) * ((v - h) + 0.044715 * pow(v - h, 3))));
        ck_assert_msg(fabs(x[i] - (up - dn) / (2 * h)) < 1e-5, "gelu'(%g) = %g", v, x[i]);
        ck_assert_msg(d[i] == 2.0f * x[i], "backward: d[%d] = %g, want 2 gelu' = %g", i, d[i], 2 * x[i]);
    }
    /* Squared ReLU without a bias: max(v, 0)^2, its derivative 2 max(v, 0) left in x; no bias
     * gradient asked for. */
    for (int i = 0; i <= 200; i++) x[i] = v0[i], d[i] = 2.0f;
    accel_cpu_bias_act_forward(ACCEL_ACT_RELU2, x, g, NULL, 3, 67);
    accel_cpu_act_backward(d, x, NULL, 3, 67);
    for (int i = 0; i <= 200; i++) {
        double p = v0[i] > 0 ? v0[i] : 0;
        ck_assert_msg(fabs(g[i] - p * p) <= 1e-6 * (1 + p * p), "relu2(%g) = %g", v0[i], g[i]);
        ck_assert_msg(x[i] == (float)(2 * p) && d[i] == 2.0f * x[i], "relu2'(%g) = %g", v0[i], x[i]);
    }
    /* The exact GELU with a bias: v Phi(v) against erf in double, its derivative against central
     * differences. */
    for (int i = 0; i <= 200; i++) x[i] = v0[i] - bias[i % 67];
    accel_cpu_bias_act_forward(ACCEL_ACT_GELU, x, g, bias, 3, 67);
    for (int i = 0; i <= 200; i++) {
        double v = v0[i], h = 1e-4, want = 0.5 * v * (1 + erf(v / sqrt(2)));
        double up = 0.5 * (v + h) * (1 + erf((v + h) / sqrt(2))), dn = 0.5 * (v - h) * (1 + erf((v - h) / sqrt(2)));
        ck_assert_msg(fabs(g[i] - want) < 2e-6 * (1 + fabs(want)), "gelu(%g) = %g, want %g", v, g[i], want);
        ck_assert_msg(fabs(x[i] - (up - dn) / (2 * h)) < 1e-5, "gelu'(%g) = %g", v, x[i]);
    }
    /* Softmax sums to one and returns log-sum-exp. */
    float z[37], p[37];
    double s = 0;
    for (int i = 0; i < 37; i++) {
        z[i] = (float)(i % 5) - 2.5f * (float)(i % 3);
        s += exp(z[i]);
    }
    float lse = accel_cpu_softmax(p, z, 37);
    ck_assert_double_eq_tol(lse, log(s), 1e-5);
    double ps = 0;
    for (int i = 0; i < 37; i++) ps += p[i];
    ck_assert_double_eq_tol(ps, 1.0, 1e-6);
    /* LayerNorm backward against its formula in double, on rows wider than one vector of lanes
     * with a tail (the tiny models' rows are all tail); dx, dw and db accumulate. */
    enum { LR = 3, LC = 37 };
    float lx[LR * LC], lw[LC], lb[LC], lo[LR * LC], lmean[LR], lrstd[LR], ld[LR * LC];
    float ldx[LR * LC], ldw[LC], ldb[LC];
    for (int i = 0; i < LR * LC; i++) {
        lx[i] = sinf(0.7f * (float)i) * (1.0f + (float)(i % 3));
        ld[i] = cosf(0.3f * (float)i);
        ldx[i] = 0.25f;
    }
    for (int c = 0; c < LC; c++) {
        lw[c] = 0.5f + 0.01f * (float)c;
        lb[c] = 0.1f;
        ldw[c] = ldb[c] = 1.0f;
    }
    accel_cpu_layernorm_forward(lo, lmean, lrstd, lx, lw, lb, LR, LC, ACCEL_LN_EPS);
    accel_cpu_layernorm_backward(ldx, ldw, ldb, ld, lx, lmean, lrstd, lw, LR, LC);
    double want_dw[LC] = { 0 }, want_db[LC] = { 0 };
    for (int r = 0; r < LR; r++) {
        const float *xr = lx + r * LC, *dr = ld + r * LC;
        double m = 0, var = 0, mg = 0, mgx = 0;
        for (int c = 0; c < LC; c++) m += xr[c] / (double)LC;
        for (int c = 0; c < LC; c++) var += (xr[c] - m) * (xr[c] - m) / LC;
        double rs = 1 / sqrt(var + ACCEL_LN_EPS);
        for (int c = 0; c < LC; c++) {
            mg += dr[c] * lw[c] / LC;
            mgx += dr[c] * lw[c] * (xr[c] - m) * rs / LC;
        }
        for (int c = 0; c < LC; c++) {
            double xh = (xr[c] - m) * rs;
            double want = 0.25 + rs * (dr[c] * lw[c] - mg - xh * mgx);
            ck_assert_msg(fabs(ldx[r * LC + c] - want) < 1e-5 * (1 + fabs(want)),
                          "layernorm dx[%d][%d] = %g, want %g", r, c, ldx[r * LC + c], want);
            want_dw[c] += dr[c] * xh;
            want_db[c] += dr[c];
        }
    }
    for (int c = 0; c < LC; c++) {
        ck_assert_msg(fabs(ldw[c] - 1 - want_dw[c]) < 1e-5 * (1 + fabs(want_dw[c])), "dw[%d]", c);
        ck_assert_msg(fabs(ldb[c] - 1 - want_db[c]) < 1e-5 * (1 + fabs(want_db[c])), "db[%d]", c);
    }
    /* gpt-oss's clamped SwiGLU (alpha 1.702, limit 2) against its formula in double on gates and
     * ups from -3 to 3 (both clamps cut): h = (clamp(u) + 1) min(g, 2) sigmoid(1.702 min(g, 2)),
     * and its backward against central differences, zero where a clamp holds the value. */
    enum { GF = 61 };
    const accel_glu_t oss = { ACCEL_GLU_CLAMPED, 1.702f, 2.0f };
    float gu[2 * GF], gh[GF], gd[GF], dgu[2 * GF];
    for (int c = 0; c < GF; c++) {
        gu[c] = -3.0f + 0.1f * (float)c + 0.013f;  /* gates: none exactly at the limit */
        gu[GF + c] = 3.0f - 0.1f * (float)c - 0.017f;  /* ups */
        gd[c] = 1.0f + 0.01f * (float)c;
    }
    accel_cpu_glu_forward(&oss, gh, gu, 1, GF);
    accel_cpu_glu_backward(&oss, dgu, gd, gu, 1, GF);
#define OSS_H(g, u) ((fmax(fmin((u), 2.0), -2.0) + 1) * fmin((g), 2.0) / (1 + exp(-1.702 * fmin((g), 2.0))))
    for (int c = 0; c < GF; c++) {
        const double gv = gu[c], uv = gu[GF + c], e = 1e-4, want = OSS_H(gv, uv);
        const double dg = gd[c] * (OSS_H(gv + e, uv) - OSS_H(gv - e, uv)) / (2 * e);
        const double du = gd[c] * (OSS_H(gv, uv + e) - OSS_H(gv, uv - e)) / (2 * e);
        ck_assert_msg(fabs(gh[c] - want) < 2e-6 * (1 + fabs(want)), "clamped swiglu(%g, %g) = %g, want %g", gv, uv,
                      gh[c], want);
        ck_assert_msg(fabs(dgu[c] - dg) < 1e-4 * (1 + fabs(dg)), "d gate at (%g, %g) = %g, want %g", gv, uv, dgu[c], dg);
        ck_assert_msg(fabs(dgu[GF + c] - du) < 1e-4 * (1 + fabs(du)), "d up at (%g, %g) = %g, want %g", gv, uv,
                      dgu[GF + c], du);
    }
#undef OSS_H
    /* Transpose of a strided block whose sides are not multiples of the 16 x 16 tiles. */
    enum { ROWS = 37, COLS = 19, LD = 23 };
    float src[ROWS * LD], dst[COLS * ROWS];
    for (int i = 0; i < ROWS * LD; i++) src[i] = (float)i;
    accel_cpu_transpose(dst, src, ROWS, COLS, LD);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            ck_assert_msg(dst[c * ROWS + r] == src[r * LD + c], "transpose (%d, %d)", r, c);
}
END_TEST

START_TEST(test_synthetic_tokens)
{
    const int V = 50, T = 64;
    int32_t a[65], b[65], c[65];
    accel_synthetic_tokens(9, V, T, 12345, a);
    accel_synthetic_tokens(9, V, T, 12345, b);
    accel_synthetic_tokens(9, V, T, 12346, c);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert_int_ne(memcmp(a, c, sizeof a), 0);
    /* Learnable: most tokens are one of four successors of the token before them. */
    int follows = 0, total = 0;
    for (int64_t s = 0; s < 200; s++) {
        accel_synthetic_tokens(9, V, T, s, a);
        for (int t = 0; t <= T; t++) ck_assert(a[t] >= 0 && a[t] < V);
        for (int t = 2; t <= T; t++) {
            int hit = 0;
            for (int j = 0; j < 4; j++) {
                hit |= a[t] == (int32_t)(accel_rng_uniform(9, ACCEL_RNG_DATA, (1ull << 60) - 1,
                                                           (uint64_t)a[t - 1] * 4 + j) * V);
            }
            follows += hit;
            total++;
        }
    }
    ck_assert_double_gt((double)follows / total, 0.88);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("gpt");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_bad_config);
    tcase_add_test(tc, test_init_loss);
    tcase_add_test(tc, test_gradcheck_all_tensors);
    tcase_add_test(tc, test_gradcheck_long_context);
    tcase_add_loop_test(tc, test_gradcheck_llama, 0, 37);
    tcase_add_test(tc, test_sliding_window);
    tcase_add_test(tc, test_experts_aux);
    tcase_add_test(tc, test_kv_cache);
    tcase_add_test(tc, test_accumulate_and_scale);
    tcase_add_loop_test(tc, test_loss_mask, 0, 2);
    tcase_add_loop_test(tc, test_recompute_bitwise, 0, 56);
    tcase_add_test(tc, test_causality);
    tcase_add_loop_test(tc, test_documents, 0, 22);
    tcase_add_test(tc, test_precision);
    tcase_add_test(tc, test_bad_tokens);
    tcase_add_test(tc, test_generate);
    suite_add_tcase(s, tc);
    TCase *tk = tcase_create("kernels");
    tcase_add_test(tk, test_gemm);
    tcase_add_test(tk, test_tri_gemm);
    tcase_add_test(tk, test_kernels);
    tcase_add_test(tk, test_synthetic_tokens);
    suite_add_tcase(s, tk);
    return s;
}

#include "check_main.h"
