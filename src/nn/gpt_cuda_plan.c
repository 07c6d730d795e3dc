/* Host-side planning for the CUDA GPT: device buffer layout, launch geometry and the check that
 * decides whether a job can train on the GPU. Plain C with no CUDA
 * dependency, so it is built and unit tested on every machine (tests/check_gpt_cuda.c). */
#include "build_config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "accel/dtype.h"
#include "decoder.h"
#include "gpt_cuda.h"

static size_t align_up(size_t n) { return (n + ACCEL_GPT_CUDA_ALIGN - 1) / ACCEL_GPT_CUDA_ALIGN * ACCEL_GPT_CUDA_ALIGN; }

/* Take `bytes` from the running offset *p; return where the piece starts. */
static size_t take(size_t *p, size_t bytes)
{
    size_t at = *p;
    *p = align_up(*p + bytes);
    return at;
}

accel_status_t accel_gpt_cuda_plan(int L, int NH, int C, int T, int V, int B, size_t act_size,
                                   accel_gpt_cuda_plan_t *plan)
{
    if (C > INT_MAX / 4 || NH < 1 || C % NH) {
        memset(plan, 0, sizeof *plan);
        return ACCEL_ERR_INVALID;
    }
    const accel_decoder_dims_t d = { .L = L, .NH = NH, .KVH = NH, .hs = C / NH, .C = C, .T = T, .V = V,
                                     .QKV = 3 * C, .F = 4 * C, .FIN = 4 * C };
    return accel_gpt_cuda_plan_dims(&d, B, act_size, plan);
}

accel_status_t accel_gpt_cuda_plan_dims(const accel_decoder_dims_t *d, int B, size_t act_size,
                                        accel_gpt_cuda_plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    const int L = d->L, NH = d->NH, KVH = d->KVH, C = d->C, F = d->F, FIN = d->FIN, T = d->T, V = d->V;
    if (L < 1 || NH < 1 || C < 1 || T < 1 || V < 2 || B < 1 || d->hs < 1 || KVH < 1 || NH % KVH ||
        F < 1 || FIN < F || (act_size != 2 && act_size != 4) || (long long)NH * d->hs > INT_MAX)
        return ACCEL_ERR_INVALID;
    /* cuBLAS takes int dimensions and leading dimensions; strided-batch strides are 64-bit. */
    const long long BT = (long long)B * T, Vpl = ((long long)V + 63) / 64 * 64;
    const long long QKV = (long long)(NH + 2 * KVH) * d->hs, QW = (long long)NH * d->hs;
    long long wide = QKV > FIN ? QKV : FIN;         /* the widest activation row */
    if (wide < C) wide = C;
    if (BT > INT_MAX / 4 || Vpl > INT_MAX || wide > INT_MAX ||
        (long long)B * NH > INT_MAX || (long long)B * NH * T > INT_MAX)
        return ACCEL_ERR_INVALID;
    /* The element-wise kernels index their buffers with 32-bit arithmetic. */
    if (BT * wide > INT_MAX || BT * Vpl > INT_MAX || (long long)B * NH * T * T > INT_MAX)
        return ACCEL_ERR_INVALID;
    const int Vp = (int)Vpl;
    plan->L = L; plan->NH = NH; plan->C = C; plan->T = T; plan->V = V; plan->B = B;
    plan->KVH = KVH; plan->QKV = (int)QKV; plan->F = F; plan->FIN = FIN;
    plan->hs = d->hs; plan->QW = (int)QW; plan->qk_norm = d->qk_norm;
    plan->Vp = Vp;
    plan->act_size = act_size;
    const size_t a = act_size, f = sizeof(float), bt = (size_t)BT, c = (size_t)C;
    const size_t qkv = (size_t)QKV, qw = (size_t)QW, fin = (size_t)FIN, ff = (size_t)F;
    const size_t dc = c > qw ? c : qw;
    const size_t qkn = d->qk_norm ? (size_t)(NH + KVH) * (size_t)d->hs : 0;  /* per token */
    const size_t qkn_rows = d->qk_norm ? (size_t)(NH + KVH) : 0;
    const size_t tt = (size_t)B * (size_t)NH * (size_t)T * (size_t)T;

    size_t p = 0;
    accel_gpt_cuda_layer_plan_t *lp = &plan->layer;
    lp->ln1 = take(&p, a * bt * c);
    lp->ln1_mean = take(&p, f * bt);
    lp->ln1_rstd = take(&p, f * bt);
    lp->qkvp = take(&p, a * bt * qkv);
    lp->qkn = take(&p, a * bt * qkn);
    lp->qkn_rstd = take(&p, f * bt * qkn_rows);
    lp->att = take(&p, a * tt);
    lp->atty = take(&p, a * bt * qw);
    lp->res2 = take(&p, a * bt * c);
    lp->ln2 = take(&p, a * bt * c);
    lp->ln2_mean = take(&p, f * bt);
    lp->ln2_rstd = take(&p, f * bt);
    lp->fch = take(&p, a * bt * fin);
    lp->fch_gelu = take(&p, a * bt * ff);
    lp->res3 = take(&p, a * bt * c);
    plan->layer_bytes = p;

    p = 0;
    plan->layers_base = take(&p, plan->layer_bytes * (size_t)L);
    plan->x0 = take(&p, a * bt * c);
    plan->lnf = take(&p, a * bt * c);
    plan->lnf_mean = take(&p, f * bt);
    plan->lnf_rstd = take(&p, f * bt);
    plan->logits = take(&p, a * bt * (size_t)Vp);
    plan->s_qkv = take(&p, a * bt * qkv);
    plan->s_c = take(&p, a * bt * dc);
    plan->s_4c = take(&p, a * bt * fin);
    plan->s_yp = take(&p, a * bt * qw);
    plan->s_dqkn = take(&p, a * bt * qkn);
    plan->s_dqkvp = take(&p, a * bt * qkv);
    plan->s_att32 = take(&p, f * tt);
    plan->s_datt = take(&p, a * tt);
    plan->dres = take(&p, a * bt * c);
    plan->losses = take(&p, f * bt);
    plan->s_dh = take(&p, FIN != F ? a * bt * ff : 0);
    plan->total = p;
    return ACCEL_OK;
}

accel_status_t accel_gpt_cuda_estimate_bytes(const accel_config_t *cfg, int micro, size_t numel,
                                             size_t owned_n, int sharded, size_t *bytes)
{
    const accel_model_config_t *m = &cfg->model;
    size_t asz = cfg->precision_id == ACCEL_F32 ? 4 : 2;
    accel_gpt_cuda_plan_t plan;
    accel_decoder_dims_t d;
    *bytes = 0;
    accel_decoder_dims(cfg, &d);
    ACCEL_CHECK(accel_gpt_cuda_plan_dims(&d, micro, asz, &plan));
    /* the trainer's state (src/train/dist.c, optim.c; device arenas are allocated whole) and the
     * model's buffers (src/nn/gpt_cuda.c) */
    const size_t on = owned_n ? owned_n : 1;
    const int adam = !strcmp(cfg->optim.name, "adamw");
    size_t b = 2 * numel * 4;                        /* fp32 parameters and gradients */
    if (asz == 2) b += numel * 2;                    /* 16-bit weight copy */
    b += on * 4 * (adam ? 2 : 1) + on;               /* moments, weight-decay mask */
    if (sharded) b += 2 * on * 4;                    /* parameter and gradient shards */
    b += plan.total;                                 /* activations */
    b += 2 * 4 * (size_t)micro * ((size_t)m->context + 1) + sizeof(double);  /* tokens, norm */
    *bytes = b;
    return ACCEL_OK;
}

unsigned accel_gpt_cuda_grid(size_t n, unsigned block, unsigned max_blocks)
{
    if (block == 0) block = 1;
    size_t blocks = (n + block - 1) / block;
    if (blocks > max_blocks) blocks = max_blocks;
    return blocks ? (unsigned)blocks : 1u;
}

accel_status_t accel_gpt_cuda_check_config(const accel_config_t *cfg, char *why, size_t whylen,
                                           char *note, size_t notelen)
{
    if (note && notelen) note[0] = '\0';
    if (cfg->model.plugin[0]) {
        snprintf(why, whylen, "device=cuda: the plugin model '%s' has no GPU path (accel trains "
                 "only the built-in gpt and llama on the GPU)\n--> hint: use device=cpu for this model",
                 cfg->model.plugin);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (strcmp(cfg->model.name, "gpt") && strcmp(cfg->model.name, "llama")) {
        snprintf(why, whylen, "device=cuda: model '%s' has no GPU path (accel trains only the "
                 "built-in gpt and llama on the GPU)\n--> hint: use device=cpu for model.name=%s",
                 cfg->model.name, cfg->model.name);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(cfg->model.name, "llama") && cfg->model.sliding_window &&
        cfg->model.sliding_window < cfg->model.context) {
        snprintf(why, whylen, "device=cuda: model.sliding_window=%d below model.context=%d: the GPU "
                 "engine attends to the whole context (the CPU decoder keeps the window)\n--> hint: "
                 "use device=cpu, or model.context=%d (a window as long as the context is none)",
                 cfg->model.sliding_window, cfg->model.context, cfg->model.sliding_window);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(cfg->model.name, "llama") && cfg->model.no_rope_pattern) {
        snprintf(why, whylen, "device=cuda: model.no_rope_pattern=%d: the GPU engine rotates every layer's "
                 "queries and keys (the CPU decoder has NoPE layers)\n--> hint: use device=cpu for this "
                 "model", cfg->model.no_rope_pattern);
        return ACCEL_ERR_UNSUPPORTED;
    }
    const accel_model_config_t *mc = &cfg->model;
    if (!strcmp(mc->name, "llama") && mc->sliding_window && !strcmp(mc->sliding_rope, "plain") &&
        (strcmp(mc->rope_scaling, "none") || (mc->sliding_rope_theta && mc->sliding_rope_theta != mc->rope_theta))) {
        snprintf(why, whylen, "device=cuda: model.sliding_rope=plain with model.rope_scaling=%s, "
                 "model.sliding_rope_theta=%g: the GPU engine has one RoPE for every layer (the CPU decoder "
                 "gives the sliding layers the plain one)\n--> hint: use device=cpu for this model",
                 mc->rope_scaling, mc->sliding_rope_theta);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(mc->name, "llama") && mc->kv_lora_rank) {
        snprintf(why, whylen, "device=cuda: model.kv_lora_rank=%d: the GPU engine has no latent attention (the CPU "
                 "decoder has)\n--> hint: use device=cpu for this model", mc->kv_lora_rank);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(mc->name, "llama") && !strcmp(mc->rope_scaling, "longrope")) {
        snprintf(why, whylen, "device=cuda: model.rope_scaling=longrope: the GPU engine has one RoPE table (the "
                 "CPU decoder switches LongRoPE's short and long factors with the sequence's length)\n--> hint: "
                 "use device=cpu for this model");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* Gemma's, Granite's and gpt-oss's building blocks: the CPU decoder's only. */
    const char *cpu_only = mc->norm_unit_offset ? "model.norm_unit_offset=true"
                      : strcmp(mc->norm, "rms") ? "model.norm=layer"
                      : strcmp(mc->mlp, "gated") ? "model.mlp=plain"
                      : mc->mlp_bias ? "model.mlp_bias=true"
                      : strcmp(mc->parallel_block, "none") ? "model.parallel_block"
                      : mc->head_bias ? "model.head_bias=true"
                      : mc->attention_sinks ? "model.attention_sinks=true"
                      : mc->rope_dim ? "model.rope_dim"
                      : mc->attention_out_bias ? "model.attention_out_bias=true"
                      : mc->embed_scale != 1.0 ? "model.embed_scale"
                      : strcmp(mc->activation, "silu") ? "model.activation"
                      : mc->query_pre_attn_scalar ? "model.query_pre_attn_scalar"
                      : mc->attention_softcap > 0 ? "model.attention_softcap"
                      : mc->logit_softcap > 0 ? "model.logit_softcap"
                      : mc->attention_multiplier > 0 ? "model.attention_multiplier"
                      : mc->query_scale_beta > 0 ? "model.query_scale_beta"
                      : mc->qk_norm_after_rope ? "model.qk_norm_after_rope"
                      : !mc->qk_norm_weights ? "model.qk_norm_weights=false"
                      : strcmp(mc->qk_norm_layers, "all") ? "model.qk_norm_layers"
                      : mc->residual_multiplier != 1.0 ? "model.residual_multiplier"
                      : mc->logits_scaling != 1.0 ? "model.logits_scaling"
                      : mc->attention_output_gate ? "model.attention_output_gate=true"
                      : mc->attention_head_gate ? "model.attention_head_gate=true"
                      : mc->linear_attention_pattern ? "model.linear_attention_pattern"
                      : mc->short_conv_kernel ? "model.short_conv_kernel"
                      : mc->mamba_heads ? "model.mamba_heads"
                      : mc->mamba1_width ? "model.mamba1_width"
                      : mc->mlp_only_layers.n ? "model.mlp_only_layers"
                      : mc->mixer_only_layers.n ? "model.mixer_only_layers" : NULL;
    if (!strcmp(mc->name, "llama") && cpu_only) {
        snprintf(why, whylen, "device=cuda: %s: the GPU engine has Llama's and Qwen3's blocks only (the CPU "
                 "decoder trains Gemma's, Granite's, gpt-oss's, GLM's, Ministral 3's, Llama 4's, StarCoder2's, Nemotron's, Nemotron-H's, Qwen3.5's and LFM2's)\n--> hint: use device=cpu for this model", cpu_only);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(cfg->model.name, "llama") &&
        (strcmp(cfg->model.norm_position, "pre") || (cfg->model.qk_norm && strcmp(cfg->model.qk_norm_scope, "head")))) {
        snprintf(why, whylen, "device=cuda: %s%s: the GPU engine has Llama's and Qwen3's blocks only (the CPU "
                 "decoder trains OLMo's and Gemma's)\n--> hint: use device=cpu for this model",
                 strcmp(mc->norm_position, "pre") ? "model.norm_position=" : "model.qk_norm_scope=all",
                 strcmp(mc->norm_position, "pre") ? mc->norm_position : "");
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(cfg->model.name, "llama") && cfg->model.experts) {
        snprintf(why, whylen, "device=cuda: model.experts=%d: the GPU engine has no mixture-of-experts "
                 "path yet (the CPU decoder trains it)\n--> hint: use device=cpu for Mixtral and "
                 "Qwen3-MoE models", cfg->model.experts);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (cfg->train.recompute_id != ACCEL_RECOMPUTE_NONE) {
        snprintf(why, whylen, "device=cuda: train.recompute=%s: the GPU engine keeps every "
                 "activation (recompute runs in the CPU decoder)\n--> hint: use train.recompute=none "
                 "on the GPU, or a smaller train.micro_batch", cfg->train.recompute);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (note && notelen && cfg->dist.comm_dtype_id != ACCEL_F32)
        snprintf(note, notelen, "dist.comm_dtype=%s is ignored on the GPU: gradients are reduced "
                 "in fp32", cfg->dist.comm_dtype);
    return ACCEL_OK;
}
