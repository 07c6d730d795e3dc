/* The built-in decoder-only transformers for CPU training and inference, one engine for two
 * families that differ only in their building blocks:
 *   gpt    GPT-2: token + learned position embeddings, pre-LayerNorm blocks with biases, GELU MLP,
 *          LM head tied to the token embedding;
 *   llama  Llama 2/3, Mistral, Qwen2, Qwen3: token embedding, RMSNorm, rotary positions (RoPE,
 *          with Llama-3.1 frequency scaling), grouped-query attention (kv_heads <= heads), SwiGLU
 *          MLP without biases (optional q/k/v biases: Qwen2; RMSNorm on each q and k head and a
 *          head size apart from width / heads: Qwen3; a sliding attention window: Mistral v0.1),
 *          tied or separate LM head; with
 *          model.experts, the MLP is a mixture of experts (Mixtral, Qwen3-MoE: experts.c); with
 *          model.norm=layer, LayerNorm (StarCoder2, Nemotron); with model.mlp=plain, down(act(up))
 *          (StarCoder2's GELU, Nemotron's and Arcee's squared ReLU); with model.parallel_block,
 *          attention and the MLP side by side on the block's input (GPT-NeoX); with
 *          model.linear_attention_pattern, gated delta-net linear attention (gated_delta.c) in place
 *          of attention on all but every N-th block, and with model.attention_output_gate the
 *          attention's output gated (Qwen3.5, Qwen3-Next); with model.short_conv_kernel, gated
 *          short convolutions (short_conv.c) in place of attention on all blocks but
 *          model.attention_layers (LFM2; LFM3 adds norms after the sublayers, a gate per head
 *          with model.attention_head_gate, sliding layers by number with model.sliding_layers
 *          and proportional RoPE); with model.mamba_heads, Mamba-2 layers (mamba2.c) in place of
 *          attention on all blocks but model.attention_layers (Granite 4.0-H); with
 *          model.mamba1_width, Mamba-1 layers (mamba1.c) alike (Mamba, Falcon Mamba, Jamba).
 * Both end with softmax cross-entropy on next-token targets.
 *
 * The structure follows karpathy's llm.c (train_gpt2.c): every activation the backward pass needs
 * is stored once by the forward pass (or, with train.recompute, rebuilt by the backward pass from
 * the block's stored input: kept_pieces), matrix products go to BLAS through the precision-dispatching
 * accel_gemm_cpu (fp32, bf16 or emulated fp16 operands, fp32 accumulation), and everything else is
 * a fused single-threaded loop from kernels_cpu.c. Attention runs per (sample, head) with BLAS in
 * row blocks that skip the masked upper triangle; a query head reads the key/value head of its
 * group; only each attention row's log-sum-exp is stored, and the backward pass recomputes the
 * probabilities. Buffers are allocated once and grown only when a larger batch arrives.
 *
 * Inference keeps each layer's q|k|v rows of one sequence (the KV cache; a gated delta-net layer its
 * heads' states and its convolution's last inputs): a call that extends the previous sequence
 * computes only the new positions. */
#include "build_config.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/model.h"
#include "decoder.h"
#include "experts.h"
#include "gated_delta.h"
#include "gemm_cpu.h"
#include "kernels_cpu.h"
#include "mamba1.h"
#include "mamba2.h"
#include "short_conv.h"

#define ATT_BLOCK 32                /* attention row block: the causal mask skips whole blocks */

typedef struct {                    /* the building blocks of one family */
    bool rms;                       /* RMSNorm (no bias) instead of LayerNorm */
    bool rope;                      /* rotary positions instead of a learned wpe */
    bool swiglu;                    /* a gated MLP [gate | up] (activation: glu) instead of a plain one
                                     * (activation: plain_act) */
    bool mlp_bias;                  /* biases on the MLP's projections (gpt; llama with model.mlp_bias) */
    bool qkv_bias;                  /* biases on q, k, v (gpt; llama with attention_bias) */
    bool tied;                      /* LM head = wte */
    bool qk_norm;                   /* RMSNorm on each q and k head before RoPE (Qwen3) */
    bool qk_all;                    /* ... over the whole q and k projections instead (OLMo 2) */
    bool qk_after;                  /* ... on the heads after RoPE (HunYuan) */
    bool qk_unweighted;             /* ... without weights (Llama 4's L2Norm) */
    bool qk_rope_only;              /* ... on the layers with RoPE only (Llama 4) */
    bool post_norm;                 /* norms after attention and the MLP, none before (OLMo 2) */
    bool sandwich;                  /* norms before attention and the MLP and after (Gemma 3) */
    bool proj_bias;                 /* a bias on attention's output projection (gpt; gpt-oss) */
    bool sinks;                     /* a learned sink logit per head in each softmax (gpt-oss) */
    int parallel;                   /* PARALLEL_*: the MLP beside attention, reading the block's input */
    bool gate;                      /* attention's output times sigmoid(gate) (Qwen3.5) ... */
    bool head_gate;                 /* ... one gate per head (LFM3) */
} arch_t;

/* model.parallel_block: res + attn(norm1(res)) + mlp(norm2(res)) (two_norms: GPT-NeoX) or
 * mlp(norm1(res)) (one_norm: GPT-J, Phi-2); none: res2 = res + attn(..), res2 + mlp(norm2(res2)). */
enum { PARALLEL_NONE = 0, PARALLEL_TWO_NORMS, PARALLEL_ONE_NORM };

typedef struct {                    /* tensor indices of one block; -1: absent in this family */
    int ln1w, ln1b, qkvw, qkvb, qnw, knw, projw, projb, ln2w, ln2b, fcw, fcb, fcpw, fcpb;
    int routerw;                    /* experts: the router; fcw, fcpw hold every expert's weights */
    int sgu, sdown, sgate;          /* experts: the shared expert's gate|up and down, its gate */
    int pn1w, pn2w;                 /* sandwich: the norms on attention's and the MLP's outputs */
    int sinks;                      /* attention sinks: [NH] one logit per head */
    int routerb, fcb_e, fcpb_e;     /* expert_bias: the router's [E], the experts' [E 2F] and [E C] */
    int selectb;                    /* router_select_bias: [E] */
    int latin, latout;              /* model.expert_latent: the experts' rows down [Lat, C] and up [C, Lat] */
    /* multi-head latent attention (model.kv_lora_rank), in place of qkvw: the queries' latent
     * [Rq, C] and its norm, then [NH hs, Rq] (qbw alone, [NH hs, C], without q_lora_rank); the
     * keys' and values' latent with the shared RoPE key [Rkv + rd, C], its norm [Rkv], and the
     * per-head expansion [NH (hs - rd + dv), Rkv] */
    int qaw, qanw, qbw, kvaw, kvanw, kvbw;
    /* a gated delta-net layer (model.linear_attention_pattern), in place of qkvw and projw's
     * shape: the input projection [LP, C], the convolution [LCW, K], dt_bias and A_log [Hv], the
     * gated norm [dv], and the output projection (projw) [C, LO]; a short convolution layer
     * (model.short_conv_kernel) the input projection [3C, C], the convolution [C, K] and projw;
     * a Mamba-2 layer (model.mamba_heads) the input projection, the convolution [CW, K] and its
     * bias (convb), dt_bias, A_log and D [H], the gated norm [I] and projw [C, I]; a Mamba-1 layer
     * (model.mamba1_width) the input projection [2I, C], the convolution [I, K] and its bias, x_proj
     * [R + 2N, I], the norms on dt, B, C [R], [N], [N] (weighted), dt_proj [I, R], dt_bias [I],
     * A_log [I, N], D [I] and projw [C, I] */
    int linw, convw, dtb, alog, lnw, convb, skipd;
    int xprojw, dtprojw, dtnw, bnw, cnw;
    int xap, xan, xbeta, xeps;      /* model.activation=xielu: raw alpha_p, alpha_n; beta, eps (no gradient) [1] */
} gpt_block_t;

typedef struct {                    /* activations of one block, stored for the backward pass */
    float *ln1, *ln1_mean, *ln1_rstd; /* post_norm: ln1 holds the attention's projected output,
                                     * the norm's input (and ln2 the MLP's): the norm1 / norm2
                                     * outputs are added to the residual, not kept */
    float *qkv;                     /* [BT, QKV]: q heads | k heads | v heads, head h at h*hs */
    float *qkn, *qkn_rstd;          /* qk_norm: [BT, QKN] the q|k heads before their norm, and
                                     * [BT, NH + KVH] each head's 1/rms */
    float *lse;                     /* [B, NH, T] log-sum-exp of each attention row's scores: the
                                     * backward pass recomputes the probabilities from it */
    float *atty;                    /* [BT, QW] attention output before the projection */
    float *res2;                    /* [BT, C] residual after attention */
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch;                     /* [BT, FIN] first MLP product: gpt: gelu'(fc); llama: gate|up
                                     * (experts: [BT K, FIN], one row per assignment) */
    float *fch_gelu;                /* [BT, F] MLP hidden: GELU output or silu(gate) * up ([BT K, F]) */
    float *probs, *topw, *topi, *order, *moe_x, *moe_y;  /* experts: accel_moe_acts_t's arrays
                                     * (topi, order: int32; order's piece starts with the E + 1 starts) */
    float *sh, *shid, *sy, *sg;     /* the shared expert's (accel_moe_acts_t) */
    float *xl, *yl;                 /* model.expert_latent: [BT, Lat] the rows down, the experts' sum */
    float *res3;                    /* [BT, C] residual after the MLP = the block's output */
    float *pn1, *pn1_rstd, *pn2, *pn2_rstd;  /* sandwich: attention's and the MLP's outputs before
                                     * their post norms, and those norms' 1/rms */
    float *mla;                     /* latent attention, per row: the queries' latent before and
                                     * after its norm [Rq] [Rq] and its 1/rms, the keys' alike [Rkv]
                                     * [Rkv] and 1/rms (mla_acts) */
    float *gate, *atto;             /* the output gate: [BT, GW] the gate before its sigmoid, and
                                     * [BT, QW] the gated output (the projection's input) */
    float *lin;                     /* gated delta-net layers: [BT, accel_gdn_act_floats], short
                                     * convolution layers [BT, accel_sconv_act_floats] (their input
                                     * projection is in qkv, their output in atty) */
} gpt_acts_t;

typedef struct {
    int L, NH, KVH, hs, C, T, V;
    int rd;                         /* values of each head RoPE turns (model.rope_dim; hs: all) */
    int QKV;                        /* (NH + 2 KVH) hs: width of the q|k|v rows */
    int QW;                         /* NH hs: the attention output's width (C unless head_dim) */
    int QKN;                        /* (NH + KVH) hs with qk_norm (the normed q|k part), else 0 */
    int GW;                         /* the output gate's width: QW value by value, NH by head, else 0 */
    bool mla;                       /* multi-head latent attention (model.kv_lora_rank): KVH = NH */
    int Rq, Rkv, dv;                /* its latents' widths (Rq 0: direct queries), each value head's
                                     * size (v heads are stored hs wide, zero past dv) */
    int PW;                         /* the output projection's input: NH dv with MLA, else QW */
    int F, FIN;                     /* the dense MLP's hidden width; its first product's (F or 2F) */
    accel_moe_dims_t moe;           /* experts (moe.E = 0: a dense MLP): moe.F the experts' width */
    int dense_layers;               /* with experts, the first blocks with a dense MLP instead ... */
    accel_numbers_t expert_layers;  /* ... or all but these (model.expert_layers; n 0: none) */
    accel_gdn_dims_t lin;           /* gated delta-net layers' (lin_pattern > 0) */
    int lin_pattern;                /* model.linear_attention_pattern: every N-th layer attention */
    accel_sconv_dims_t sconv;       /* short convolution layers' (sconv.K > 0) */
    accel_mamba2_dims_t mamba;      /* Mamba-2 layers' (mamba.H > 0) */
    accel_mamba1_dims_t mamba1;     /* Mamba-1 layers' (mamba1.I > 0) */
    accel_numbers_t att_layers;     /* ... and model.attention_layers: the layers without one */
    accel_numbers_t mlp_only, mixer_only;  /* model.mlp_only_layers, model.mixer_only_layers */
    int LP, LO;                     /* their input projection's width, their output's (Hv dv; C) */
    accel_glu_t glu;                /* the gated MLP's activation (llama; the experts' too) */
    accel_act_kind_t plain_act;     /* the plain MLP's (gpt; llama with model.mlp=plain) ... */
    bool xielu;                     /* ... or xIELU, of each layer's parameters (Apertus) */
    float aux_coef;                 /* model.router_aux_loss */
    double *aux_count, *aux_psum;   /* [E] this pass's routing statistics, every block */
    float *aux_grad;                /* [E] d(loss)/d(probs) of the load-balancing loss */
    float *dmoe;                    /* experts backward scratch (accel_moe_scratch_floats) */
    float *dpost;                   /* [BT, C] post_norm: d(a sublayer's output before its norm) */
    arch_t arch;
    float eps;                      /* the norms' epsilon (gpt: ACCEL_LN_EPS) */
    bool norm_offset;               /* model.norm_unit_offset: norms multiply by 1 + weight */
    bool norm_bias;                 /* LayerNorms with a bias (gpt; llama: model.norm_bias) */
    float *offw;                    /* [3, offw_len] those weights plus 1, made at each use */
    float *unit;                    /* [offw_len] ones: the weights of unweighted q/k norms */
    size_t offw_len;
    float embed_scale;              /* model.embed_scale */
    float att_scale;                /* attention scores' scale: 1/sqrt(hs or query_pre_attn_scalar) */
    double qscale_beta;             /* model.query_scale_beta (0: none), its period, the offset of */
    int qscale_context, qscale_offset;  /* its positions, and whether only NoPE layers take it */
    bool qscale_nope;
    float att_cap, logit_cap;       /* model.attention_softcap, model.logit_softcap (0: none) */
    float res_mult;                 /* model.residual_multiplier (1: none) */
    float logits_div;               /* model.logits_scaling (1: none) */
    float *capt;                    /* [T, T] attention_softcap: tanh of one (sample, head)'s scores
                                     * in the backward pass; logit_softcap: [V] one row's */
    float *rope_cos, *rope_sin;     /* [T, hs/2] */
    float *long_cos, *long_sin;     /* [T, hs/2] LongRoPE's long factors' (rope_scaling=longrope and a
                                     * context past rope_original_context), else NULL */
    int rope_original;              /* longrope: sequences longer than this take the long tables */
    bool rope_long;                 /* the pass under way takes them (set by its forward) */
    bool cache_long;                /* ... and the KV cache was made with them */
    float *plain_cos, *plain_sin;   /* [T, hs/2] the sliding layers' unscaled RoPE (sliding_rope=plain
                                     * with a scaling), else NULL */
    accel_dtype_t precision;
    bool whole_head;                /* attention by whole heads (see att_native), read once */
    int window;                     /* model.sliding_window below the context, else 0 (none) */
    bool chunked;                   /* model.sliding_chunked: the window is chunks of that many */
    bool slides;                    /* model.sliding_window set: the model has sliding layers */
    int window_pattern;             /* model.sliding_window_pattern: every N-th layer full (0: none) */
    accel_numbers_t slide_layers;   /* model.sliding_layers: the sliding ones by number (n 0: none) */
    int no_rope_pattern;            /* model.no_rope_pattern: every N-th layer without RoPE (0: none) */
    accel_gemm_cpu_t gemm;
    accel_gemm_cpu_t gemm32;        /* fp32 products, for attention operands rounded beforehand */
    int wte, wpe, lnfw, lnfb, head; /* wpe, lnfb: -1 when absent; head: wte or lm_head */
    int headb;                      /* model.head_bias: [V] added to the logits; -1: none */
    gpt_block_t *blk;
    gpt_acts_t *act;                /* [L] per block; with recompute, some pieces point into one
                                     * set shared by every block (kept_pieces, reserve) */
    accel_recompute_t recompute;    /* train.recompute */
    float *x0;                      /* [BT, C] embeddings: the residual entering block 0 */
    float *lnf, *lnf_mean, *lnf_rstd;
    float *logits;                  /* [BT, V]; overwritten by d(loss)/d(logits) in training */
    float *dres, *dc, *d3c, *d4c;   /* backward scratch: [BT, C], [BT, max(C, QW)], [BT, QKV], [BT, FIN] */
    float *dqk;                     /* [QKN] qk_norm backward: one row's d(q|k before the norm) */
    float *dff;                     /* [BT, F] SwiGLU backward: d(hidden) */
    float *dp;                      /* [T, T] attention backward scratch for one (sample, head) */
    float *pr;                      /* [T, T] one (sample, head)'s attention probabilities */
    float *kt, *vt;                 /* [hs, T] one (sample, head)'s keys and values, transposed */
    float *dkv;                     /* [2, T, hs] one head's dK, dV before they join its group's */
    float *dmla;                    /* [BT, mla_scratch] latent attention's work rows (training) */
    float *dgate;                   /* [BT, GW] the output gate's: d(gate) */
    float *dlin;                    /* the recurrent mixers' scratch (lin_scratch) */
    float *mem;
    int capacity;                   /* samples (at full context) the buffers hold */
    const int32_t *pos;             /* [BT] this pass's positions (batch->positions: packed
                                     * documents); NULL: 0..T-1 in every sample */
    /* Inference (logits ops): one sequence, one set of block activations shared by every block
     * (nothing is kept for a backward pass) except each block's keys and values, the KV cache. */
    gpt_acts_t iact;
    float **kv;                     /* [L] -> [T, 2 KVH hs]: keys | values */
    float *ix0, *ilnf, *ilnf_mean, *ilnf_rstd, *ipr, *ikt, *imla, *ilin;
    float *imem;
    int cached;                     /* tokens whose q|k|v the cache holds (previous call's) */
} gpt_t;

/* Where a forward pass keeps its activations: block l uses act[l * act_step]. */
typedef struct {
    gpt_acts_t *act;
    int act_step;                   /* 1: one set per block (training), 0: one shared set */
    float **kv;                     /* inference: block l's k|v rows live in kv[l] (its q rows in
                                     * act->qkv); training: NULL */
    float *x0, *lnf, *lnf_mean, *lnf_rstd;
    float *pr;                      /* [T, T] scratch: one head's attention scores */
    float *kt;                      /* [hs, T] scratch: one head's keys, transposed */
    float *mla;                     /* [BT, mla_scratch] latent attention's work rows */
    float *lin;                     /* gated delta-net layers' scratch */
} gpt_fwd_t;

#define PARAM(idx) (params + layout->tensors[(idx)].offset)
#define GRAD(idx) (grads + layout->tensors[(idx)].offset)
#define PARAM_OPT(idx) ((idx) >= 0 ? PARAM(idx) : NULL)
#define GRAD_OPT(idx) ((idx) >= 0 ? GRAD(idx) : NULL)
/* A weight whose gradient nobody wants (ACCEL_TENSOR_FROZEN): its dW product is skipped. */
#define FROZEN(idx) ((layout->tensors[(idx)].flags & ACCEL_TENSOR_FROZEN) != 0)
#define GRAD_UNLESS_FROZEN(idx) ((idx) >= 0 && !FROZEN(idx) ? GRAD(idx) : NULL)
#define GEMM(...) ACCEL_CHECK(accel_gemm_cpu(&m->gemm, __VA_ARGS__))
/* block k's xIELU, as the parameters hold it */
#define XIELU_OF(k) { *PARAM((k)->xap), *PARAM((k)->xan), *PARAM((k)->xbeta), *PARAM((k)->xeps) }

static void gpt_destroy(void *state)
{
    gpt_t *m = state;
    if (!m) return;
    accel_gemm_cpu_free(&m->gemm);
    accel_gemm_cpu_free(&m->gemm32);
    free(m->mem);
    free(m->imem);
    free(m->kv);
    free(m->act);
    free(m->blk);
    free(m->rope_cos);
    free(m->long_cos);
    free(m->long_sin);
    free(m->rope_sin);
    free(m->plain_cos);
    free(m->plain_sin);
    free(m->offw);
    free(m->unit);
    free(m->aux_count);
    free(m->aux_grad);
    free(m);
}

static accel_status_t add(accel_layout_t *layout, const char *name, int ndim, int64_t d0, int64_t d1,
                          int layer, unsigned flags, float std, int *index)
{
    int64_t shape[2] = { d0, d1 };
    return accel_layout_add(layout, name, ndim, shape, layer, flags, std, index);
}

/* The SwiGLU width when model.ffn_width = 0: 8/3 of the width, rounded up to a multiple of 64. */
static int default_ffn_width(int width)
{
    int64_t f = ((int64_t)8 * width + 2) / 3;
    return (int)((f + 63) / 64 * 64);
}

/* The keys only the llama family reads, at their defaults: gpt refuses any other value rather
 * than ignore it. */
static accel_status_t refuse_llama_keys(const accel_model_config_t *c)
{
    const char *key = NULL;
    if (c->kv_heads != 0 && c->kv_heads != c->heads) key = "model.kv_heads";
    else if (c->ffn_width != 0 && c->ffn_width != 4 * c->width) key = "model.ffn_width";
    else if (c->rope_theta != 10000.0) key = "model.rope_theta";
    else if (strcmp(c->rope_scaling, "none")) key = "model.rope_scaling";
    else if (c->rope_short_factor.n) key = "model.rope_short_factor";
    else if (c->rope_long_factor.n) key = "model.rope_long_factor";
    else if (c->rope_attention_factor != 0.0) key = "model.rope_attention_factor";
    else if (c->rms_eps != 1e-5) key = "model.rms_eps";
    else if (strcmp(c->norm, "rms")) key = "model.norm";
    else if (strcmp(c->mlp, "gated")) key = "model.mlp";
    else if (c->mlp_bias) key = "model.mlp_bias";
    else if (strcmp(c->parallel_block, "none")) key = "model.parallel_block";
    else if (!c->norm_bias) key = "model.norm_bias";
    else if (c->head_bias) key = "model.head_bias";
    else if (!c->tie_embeddings) key = "model.tie_embeddings";
    else if (c->attention_bias) key = "model.attention_bias";
    else if (c->attention_out_bias) key = "model.attention_out_bias";
    else if (c->attention_sinks) key = "model.attention_sinks";
    else if (c->swiglu_alpha != 1.702) key = "model.swiglu_alpha";
    else if (c->swiglu_limit != 7.0) key = "model.swiglu_limit";
    else if (!c->rope_truncate) key = "model.rope_truncate";
    else if (c->rope_dim) key = "model.rope_dim";
    else if (c->expert_bias) key = "model.expert_bias";
    else if (c->head_dim != 0 && c->head_dim * c->heads != c->width) key = "model.head_dim";
    else if (c->qk_norm) key = "model.qk_norm";
    else if (c->sliding_window) key = "model.sliding_window";
    else if (c->sliding_window_pattern) key = "model.sliding_window_pattern";
    else if (strcmp(c->sliding_rope, "scaled")) key = "model.sliding_rope";
    else if (c->no_rope_pattern) key = "model.no_rope_pattern";
    else if (c->norm_unit_offset) key = "model.norm_unit_offset";
    else if (c->embed_scale != 1.0) key = "model.embed_scale";
    else if (strcmp(c->activation, "silu")) key = "model.activation";
    else if (c->query_pre_attn_scalar) key = "model.query_pre_attn_scalar";
    else if (c->sliding_rope_theta != 0.0) key = "model.sliding_rope_theta";
    else if (c->attention_softcap != 0.0) key = "model.attention_softcap";
    else if (c->logit_softcap != 0.0) key = "model.logit_softcap";
    else if (c->attention_multiplier != 0.0) key = "model.attention_multiplier";
    else if (c->query_scale_beta != 0.0) key = "model.query_scale_beta";
    else if (c->query_scale_context) key = "model.query_scale_context";
    else if (c->residual_multiplier != 1.0) key = "model.residual_multiplier";
    else if (c->logits_scaling != 1.0) key = "model.logits_scaling";
    else if (strcmp(c->qk_norm_scope, "head")) key = "model.qk_norm_scope";
    else if (c->qk_norm_after_rope) key = "model.qk_norm_after_rope";
    else if (strcmp(c->norm_position, "pre")) key = "model.norm_position";
    else if (c->experts) key = "model.experts";
    else if (c->shared_expert_ffn) key = "model.shared_expert_ffn";
    else if (!c->shared_expert_gate) key = "model.shared_expert_gate";
    else if (strcmp(c->router_scores, "softmax")) key = "model.router_scores";
    else if (c->router_select_bias) key = "model.router_select_bias";
    else if (c->router_groups != 1) key = "model.router_groups";
    else if (c->router_topk_groups != 1) key = "model.router_topk_groups";
    else if (strcmp(c->router_group_score, "top2")) key = "model.router_group_score";
    else if (c->router_scale != 1.0) key = "model.router_scale";
    else if (c->router_norm_eps != 0.0) key = "model.router_norm_eps";
    else if (c->dense_layers) key = "model.dense_layers";
    else if (c->dense_ffn_width) key = "model.dense_ffn_width";
    else if (c->kv_lora_rank) key = "model.kv_lora_rank";
    else if (c->q_lora_rank) key = "model.q_lora_rank";
    else if (c->v_head_dim) key = "model.v_head_dim";
    else if (c->attention_output_gate) key = "model.attention_output_gate";
    else if (c->attention_head_gate) key = "model.attention_head_gate";
    else if (c->sliding_layers.n) key = "model.sliding_layers";
    else if (c->rope_proportion != 1.0) key = "model.rope_proportion";
    else if (c->linear_attention_pattern) key = "model.linear_attention_pattern";
    else if (c->linear_key_heads) key = "model.linear_key_heads";
    else if (c->linear_value_heads) key = "model.linear_value_heads";
    else if (c->linear_key_dim) key = "model.linear_key_dim";
    else if (c->linear_value_dim) key = "model.linear_value_dim";
    else if (c->linear_conv_kernel != 4) key = "model.linear_conv_kernel";
    else if (c->short_conv_kernel) key = "model.short_conv_kernel";
    else if (c->mamba_heads) key = "model.mamba_heads";
    else if (c->mamba_head_dim) key = "model.mamba_head_dim";
    else if (c->mamba_state != 128) key = "model.mamba_state";
    else if (c->mamba_groups != 1) key = "model.mamba_groups";
    else if (c->mamba_conv_kernel != 4) key = "model.mamba_conv_kernel";
    else if (!c->mamba_conv_bias) key = "model.mamba_conv_bias";
    else if (c->mamba1_width) key = "model.mamba1_width";
    else if (c->mamba1_dt_rank) key = "model.mamba1_dt_rank";
    else if (strcmp(c->mamba1_norms, "none")) key = "model.mamba1_norms";
    else if (c->mamba1_norm_eps != 1e-6) key = "model.mamba1_norm_eps";
    else if (c->attention_layers.n) key = "model.attention_layers";
    else if (c->mlp_only_layers.n) key = "model.mlp_only_layers";
    else if (c->mixer_only_layers.n) key = "model.mixer_only_layers";
    else if (c->expert_latent) key = "model.expert_latent";
    else if (!c->qk_norm_weights) key = "model.qk_norm_weights";
    else if (strcmp(c->qk_norm_layers, "all")) key = "model.qk_norm_layers";
    else if (c->sliding_chunked) key = "model.sliding_chunked";
    else if (c->query_scale_offset) key = "model.query_scale_offset";
    else if (strcmp(c->query_scale_layers, "all")) key = "model.query_scale_layers";
    else if (c->expert_layers.n) key = "model.expert_layers";
    else if (c->expert_input_scaled) key = "model.expert_input_scaled";
    else if (c->linear_allow_neg_eigval) key = "model.linear_allow_neg_eigval";
    else if (c->linear_norm_eps != 0.0) key = "model.linear_norm_eps";
    if (!key) return ACCEL_OK;
    ACCEL_ERROR0("gpt: %s is a llama key (GPT-2 has learned positions, LayerNorm, a GELU MLP of 4 x "
                 "width, biases everywhere and a tied LM head)\n--> hint: use model.name=llama, or "
                 "leave %s at its default", key, key);
    return ACCEL_ERR_CONFIG;
}

/* Llama-3.1 frequency scaling: low frequencies (wavelength above original_context /
 * low_freq_factor) slowed down by `factor`, high ones (below original_context / high_freq_factor)
 * kept, a smooth blend between (transformers' _compute_llama3_parameters). */
static double llama3_inv_freq(const accel_model_config_t *c, double f)
{
    const double pi = 3.14159265358979323846;
    const double old = c->rope_original_context, lo = c->rope_low_freq_factor;
    const double hi = c->rope_high_freq_factor, wavelen = 2.0 * pi / f;
    if (wavelen < old / hi) return f;
    if (wavelen > old / lo) return f / c->rope_factor;
    if (hi == lo) return f;         /* equal factors (Llama 4 Scout's): a sharp cut, no blend */
    double smooth = (old / wavelen - lo) / (hi - lo);
    return (1.0 - smooth) * f / c->rope_factor + smooth * f;
}

/* YaRN (transformers' _compute_yarn_parameters): frequency i of a head of hs values is kept where
 * it turns more than beta_fast times over the original context, divided by the factor where it
 * turns fewer than beta_slow times, and blended linearly between (in dimension index, the bounds
 * rounded outwards unless model.rope_truncate=false, as gpt-oss). */
static double yarn_inv_freq(const accel_model_config_t *c, int hs, int i)
{
    const double pi = 3.14159265358979323846, base = c->rope_theta, old = c->rope_original_context;
    const double pos = pow(base, (double)(2 * i) / hs);
    const float extra = (float)(1.0 / pos), inter = (float)(1.0 / (c->rope_factor * pos));
#define CORRECTION_DIM(rot) (hs * log(old / ((rot) * 2 * pi)) / (2 * log(base)))
    double lo = CORRECTION_DIM(c->rope_beta_fast), hi = CORRECTION_DIM(c->rope_beta_slow);
#undef CORRECTION_DIM
    if (c->rope_truncate) { lo = floor(lo); hi = ceil(hi); }
    if (lo < 0) lo = 0;
    if (hi > hs - 1) hi = hs - 1;
    if (lo == hi) hi += 0.001;                      /* as transformers: no division by zero */
    float ramp = (float)(((float)i - (float)lo) / ((float)hi - (float)lo));
    ramp = ramp < 0.0f ? 0.0f : ramp > 1.0f ? 1.0f : ramp;
    const float keep = 1.0f - ramp;                 /* the extrapolation's share */
    return inter * (1.0f - keep) + extra * keep;
}

/* The scale of cos and sin: model.rope_attention_factor, else YaRN's 0.1 ln(factor) + 1 or
 * LongRoPE's sqrt(1 + ln(factor) / ln(original context)); 1 without a context extension. */
static double rope_attention_factor(const accel_model_config_t *c)
{
    if (c->rope_attention_factor > 0) return c->rope_attention_factor;
    if (c->rope_factor <= 1.0) return 1.0;
    if (!strcmp(c->rope_scaling, "longrope"))
        return sqrt(1.0 + log(c->rope_factor) / log((double)c->rope_original_context));
    return 0.1 * log(c->rope_factor) + 1.0;
}

void accel_decoder_rope_tables(const accel_model_config_t *c, int T, int hs, accel_rope_table_t which,
                               float *cos_t, float *sin_t)
{
    const int half = hs / 2;
    const bool plain = which == ACCEL_ROPE_PLAIN, yarn = !plain && !strcmp(c->rope_scaling, "yarn");
    const bool longrope = !plain && !strcmp(c->rope_scaling, "longrope");
    /* proportional: the first floor(proportion hs / 2) pairs turn (transformers' int(p * hs // 2)) */
    const int turned = !plain && !strcmp(c->rope_scaling, "proportional") ? (int)floor(c->rope_proportion * hs / 2.0)
                                                                         : half;
    const accel_numbers_t *ext = which == ACCEL_ROPE_LONG ? &c->rope_long_factor : &c->rope_short_factor;
    const float scale = yarn || longrope ? (float)rope_attention_factor(c) : 1.0f;
    const double theta = plain && c->sliding_rope_theta > 0 ? c->sliding_rope_theta : c->rope_theta;
    for (int i = 0; i < half; i++) {
        double f = (float)(1.0 / pow(theta, (double)(2 * i) / hs));
        if (!plain && !strcmp(c->rope_scaling, "llama3")) f = (float)llama3_inv_freq(c, f);
        if (!plain && !strcmp(c->rope_scaling, "linear")) f = (float)(f / c->rope_factor);
        if (yarn) f = (float)yarn_inv_freq(c, hs, i);
        if (longrope)               /* as transformers, in fp32: 1 / (factor theta^(2i/hs)) */
            f = 1.0f / ((float)ext->v[i] * (float)pow(theta, (double)(2 * i) / hs));
        if (i >= turned) f = 0.0;   /* proportional: unturned */
        for (int t = 0; t < T; t++) {
            cos_t[(size_t)t * half + i] = (float)cos((double)t * f) * scale;
            sin_t[(size_t)t * half + i] = (float)sin((double)t * f) * scale;
        }
    }
}

/* cos and sin of every (position, frequency) pair: [T, hs/2] each; a second pair for the sliding
 * layers when they take plain RoPE and it differs: the others' scaled (OLMo 3) or at another
 * theta (Gemma 3); LongRoPE's long pair when the context can pass the original one. */
static accel_status_t rope_tables(gpt_t *m, const accel_model_config_t *c)
{
    const size_t n = (size_t)m->T * (size_t)(m->rd / 2);
    m->rope_cos = malloc(sizeof(float) * n);
    m->rope_sin = malloc(sizeof(float) * n);
    if (!m->rope_cos || !m->rope_sin) return ACCEL_ERR_NOMEM;
    accel_decoder_rope_tables(c, m->T, m->rd, ACCEL_ROPE_SCALED, m->rope_cos, m->rope_sin);
    m->rope_original = c->rope_original_context;
    if (!strcmp(c->rope_scaling, "longrope") && m->T > m->rope_original) {
        m->long_cos = malloc(sizeof(float) * n);
        m->long_sin = malloc(sizeof(float) * n);
        if (!m->long_cos || !m->long_sin) return ACCEL_ERR_NOMEM;
        accel_decoder_rope_tables(c, m->T, m->rd, ACCEL_ROPE_LONG, m->long_cos, m->long_sin);
    }
    if (m->slides && !strcmp(c->sliding_rope, "plain") &&
        (strcmp(c->rope_scaling, "none") || (c->sliding_rope_theta && c->sliding_rope_theta != c->rope_theta))) {
        m->plain_cos = malloc(sizeof(float) * n);
        m->plain_sin = malloc(sizeof(float) * n);
        if (!m->plain_cos || !m->plain_sin) return ACCEL_ERR_NOMEM;
        accel_decoder_rope_tables(c, m->T, m->rd, ACCEL_ROPE_PLAIN, m->plain_cos, m->plain_sin);
    }
    return ACCEL_OK;
}

/* Whether block l is a sliding layer (transformers' layer_types "sliding_attention"): with
 * model.sliding_window, those model.sliding_layers names, else every layer but each
 * window_pattern-th. It takes the window (which may
 * cover the whole context) and, with sliding_rope=plain, the unscaled RoPE. */
static bool layer_slides(const gpt_t *m, int l)
{
    if (m->slide_layers.n) return m->slides && accel_layer_listed(&m->slide_layers, l);
    return m->slides && !(m->window_pattern && (l + 1) % m->window_pattern == 0);
}

/* The keys a layer's rows reach back to: n = 0, the whole causal context; else the last n
 * positions (a sliding window), or with chunks the positions of the row's own chunk of n
 * (Llama 4's chunked attention: position p sees n floor(p / n) .. p). */
typedef struct {
    int n;
    bool chunks;
} span_t;

/* Block l's attention span: its window or chunks (model.sliding_chunked); n 0: the whole causal
 * context. */
static span_t layer_window(const gpt_t *m, int l)
{
    return (span_t){ layer_slides(m, l) ? m->window : 0, m->chunked };
}

/* A head's size: model.head_dim, else width / heads. */
static int head_size(const accel_model_config_t *c) { return c->head_dim ? c->head_dim : c->width / c->heads; }

/* The pairs of values RoPE turns in each head: model.rope_dim / 2, else the head size / 2. */
static int rope_pairs(const accel_model_config_t *c) { return (c->rope_dim ? c->rope_dim : head_size(c)) / 2; }

/* Whether the model's recurrent layers are all but model.attention_layers: short convolutions,
 * Mamba-2 or Mamba-1 layers. */
static bool recurrent_but_listed(const accel_model_config_t *c)
{
    return c->short_conv_kernel || c->mamba_heads || c->mamba1_width;
}

/* The Mamba-1 layers' dt rank: model.mamba1_dt_rank, else ceil(width / 16) (transformers' "auto"). */
static int mamba1_dt_rank(const accel_model_config_t *c)
{
    return c->mamba1_dt_rank ? c->mamba1_dt_rank : (c->width + 15) / 16;
}

/* Each Mamba-2 head's values: model.mamba_head_dim, else 2 width / heads (transformers' "auto"). */
static int mamba_head_dim(const accel_model_config_t *c)
{
    return c->mamba_head_dim ? c->mamba_head_dim : c->mamba_heads ? 2 * c->width / c->mamba_heads : 0;
}

/* What is wrong with a list of layers (model.attention_layers, model.mlp_only_layers, ...; NULL:
 * nothing): whole layer numbers, increasing. */
static const char *layer_list_fault(const accel_model_config_t *c, const accel_numbers_t *a)
{
    for (int i = 0; i < a->n; i++) {
        if (a->v[i] != (double)(int)a->v[i]) return "must list whole layer numbers";
        if ((int)a->v[i] >= c->layers) return "names a layer past the last (they count from 0 to model.layers - 1)";
        if (i && a->v[i] <= a->v[i - 1]) return "must list each layer once, in increasing order";
    }
    return NULL;
}

/* What is wrong with model.mlp_only_layers and model.mixer_only_layers together (NULL: nothing):
 * blocks with norms before their sublayers one after the other, no layer in both lists, no
 * attention layer of a recurrent model without its mixer. */
static const char *one_sublayer_fault(const accel_model_config_t *c)
{
    const accel_numbers_t *mo = &c->mlp_only_layers, *xo = &c->mixer_only_layers;
    if (!mo->n && !xo->n) return NULL;
    if (!strcmp(c->norm_position, "post") || strcmp(c->parallel_block, "none"))
        return "leaves a sublayer out of its layers, which takes norms before the sublayers and the sublayers "
               "one after the other: not model.norm_position=post or model.parallel_block";
    for (int i = 0; i < mo->n; i++) {
        if (accel_layer_listed(xo, (int)mo->v[i]))
            return "and model.mixer_only_layers both name a layer: a block needs one sublayer";
        if (recurrent_but_listed(c) && accel_layer_listed(&c->attention_layers, (int)mo->v[i]))
            return "names a layer model.attention_layers says keeps attention";
    }
    return NULL;
}

/* What is wrong with model.sliding_layers (NULL: nothing): with a window, not with a pattern, whole
 * layer numbers, increasing, attention layers. */
static const char *sliding_layers_fault(const accel_model_config_t *c)
{
    const accel_numbers_t *s = &c->sliding_layers;
    if (!s->n) return NULL;
    if (!c->sliding_window) return "says which layers slide: set model.sliding_window";
    if (c->sliding_window_pattern) return "and model.sliding_window_pattern both say which layers slide: set one";
    for (int i = 0; i < s->n; i++) {
        const int l = (int)s->v[i];
        if (s->v[i] != (double)l) return "must list whole layer numbers";
        if (l >= c->layers) return "names a layer past the last (they count from 0 to model.layers - 1)";
        if (i && s->v[i] <= s->v[i - 1]) return "must list each layer once, in increasing order";
        if ((recurrent_but_listed(c) && !accel_layer_listed(&c->attention_layers, l)) ||
            (c->linear_attention_pattern && (l + 1) % c->linear_attention_pattern) ||
            accel_layer_listed(&c->mlp_only_layers, l))
            return "names a layer without attention (a recurrent one, or one of model.mlp_only_layers)";
    }
    return NULL;
}

/* The gated delta-net layers' heads (model.linear_*: 0 takes the attention's). */
static int lin_key_heads(const accel_model_config_t *c) { return c->linear_key_heads ? c->linear_key_heads : c->heads; }
static int lin_value_heads(const accel_model_config_t *c)
{
    return c->linear_value_heads ? c->linear_value_heads : lin_key_heads(c);
}

static accel_status_t validate(const accel_config_t *cfg, bool llama)
{
    const accel_model_config_t *c = &cfg->model;
    const char *name = llama ? "llama" : "gpt";
    if (c->layers < 1 || c->heads < 1 || c->width < 1 || c->context < 1 || c->vocab < 2) {
        ACCEL_ERROR0("%s needs model.layers >= 1, model.heads >= 1, model.width >= 1, "
                     "model.context >= 1 and model.vocab >= 2 (got layers=%d heads=%d width=%d "
                     "context=%d vocab=%d)", name, c->layers, c->heads, c->width, c->context,
                     c->vocab);
        return ACCEL_ERR_CONFIG;
    }
    if (c->width % c->heads && !(llama && c->head_dim)) {
        ACCEL_ERROR0("%s: model.width=%d is not divisible by model.heads=%d\n--> hint: choose a "
                     "width that is a multiple of the number of heads (e.g. width=%d)", name,
                     c->width, c->heads, (c->width / c->heads + 1) * c->heads);
        return ACCEL_ERR_CONFIG;
    }
    if (!llama) ACCEL_CHECK(refuse_llama_keys(c));
    const int kvh = c->kv_heads ? c->kv_heads : c->heads;
    const int ffn = !llama ? 4 * c->width : c->ffn_width ? c->ffn_width : default_ffn_width(c->width);
    const bool plain = !llama || !strcmp(c->mlp, "plain");     /* down(act(up)): one product in */
    if (llama) {
        const char *bad = NULL, *why = "";
        char pairs_why[256];
        snprintf(pairs_why, sizeof pairs_why, "must hold one number for each pair of values RoPE turns in "
                 "a head, %d (model.rope_dim / 2, else the head size / 2), not %d", rope_pairs(c),
                 c->rope_short_factor.n != rope_pairs(c) ? c->rope_short_factor.n : c->rope_long_factor.n);
        if (kvh < 1 || kvh > c->heads || c->heads % kvh)
            bad = "model.kv_heads", why = "must divide model.heads (each key/value head serves "
                                          "a whole group of query heads)";
        else if (c->head_dim % 2)
            bad = "model.head_dim", why = "is odd: RoPE turns pairs of values";
        else if (c->rope_dim % 2 || c->rope_dim > head_size(c))
            bad = "model.rope_dim", why = "must be even and at most the head size (model.head_dim, else width / "
                                          "heads): RoPE turns pairs of a head's values";
        else if (!c->head_dim && (c->width / c->heads) % 2)
            bad = "model.heads", why = "gives an odd head size (width / heads): RoPE turns pairs "
                                       "of values";
        else if (c->ffn_width < 0)
            bad = "model.ffn_width", why = "must be >= 1 (0 = the default)";
        else if (!(c->rope_theta > 1.0) || !isfinite(c->rope_theta))
            bad = "model.rope_theta", why = "must be a finite number > 1";
        else if (!(c->rms_eps > 0.0) || !(c->rms_eps < 1.0))
            bad = "model.rms_eps", why = "must be in (0, 1)";
        else if (!strcmp(c->rope_scaling, "llama3") && !(c->rope_factor >= 1.0 && isfinite(c->rope_factor)))
            bad = "model.rope_factor", why = "must be a finite number >= 1";
        else if (!strcmp(c->rope_scaling, "llama3") && !(c->rope_low_freq_factor > 0.0))
            bad = "model.rope_low_freq_factor", why = "must be > 0";
        else if (!strcmp(c->rope_scaling, "llama3") &&
                 !(c->rope_high_freq_factor >= c->rope_low_freq_factor && isfinite(c->rope_high_freq_factor)))
            bad = "model.rope_high_freq_factor", why = "must be finite and at least model.rope_low_freq_factor";
        else if (!strcmp(c->rope_scaling, "llama3") && c->rope_original_context < 1)
            bad = "model.rope_original_context", why = "must be >= 1";
        else if (!strcmp(c->rope_scaling, "yarn") && !(c->rope_factor >= 1.0 && isfinite(c->rope_factor)))
            bad = "model.rope_factor", why = "must be a finite number >= 1";
        else if (!strcmp(c->rope_scaling, "yarn") &&
                 !(c->rope_beta_fast > 0 && c->rope_beta_slow > 0 && isfinite(c->rope_beta_fast) &&
                   isfinite(c->rope_beta_slow)))
            bad = "model.rope_beta_fast", why = "and model.rope_beta_slow must be finite numbers > 0";
        else if (c->rope_attention_factor != 0.0 && strcmp(c->rope_scaling, "yarn") && strcmp(c->rope_scaling, "longrope"))
            bad = "model.rope_attention_factor", why = "scales model.rope_scaling=yarn or longrope only";
        else if ((c->rope_short_factor.n || c->rope_long_factor.n) && strcmp(c->rope_scaling, "longrope"))
            bad = c->rope_short_factor.n ? "model.rope_short_factor" : "model.rope_long_factor",
            why = "is LongRoPE's: it needs model.rope_scaling=longrope";
        else if (!strcmp(c->rope_scaling, "longrope") && (c->rope_short_factor.n != rope_pairs(c) ||
                                                          c->rope_long_factor.n != rope_pairs(c)))
            bad = c->rope_short_factor.n != rope_pairs(c) ? "model.rope_short_factor" : "model.rope_long_factor",
            why = pairs_why;
        else if (c->experts && (c->experts_per_token < 1 || c->experts_per_token > c->experts))
            bad = "model.experts_per_token", why = "must be 1..model.experts (each token's experts "
                                                   "are distinct)";
        else if (c->experts && !(c->router_aux_loss >= 0.0 && isfinite(c->router_aux_loss)))
            bad = "model.router_aux_loss", why = "must be a finite number >= 0";
        else if (!strcmp(c->qk_norm_scope, "all") && !c->qk_norm)
            bad = "model.qk_norm_scope", why = "is all, which needs model.qk_norm=true (it says what "
                                               "the q/k norms cover)";
        else if (c->qk_norm_after_rope && !c->qk_norm)
            bad = "model.qk_norm_after_rope", why = "places the q/k norms: it needs model.qk_norm=true";
        else if ((!c->qk_norm_weights || strcmp(c->qk_norm_layers, "all")) && !c->qk_norm)
            bad = !c->qk_norm_weights ? "model.qk_norm_weights" : "model.qk_norm_layers",
            why = "shapes the q/k norms: it needs model.qk_norm=true";
        else if (c->sliding_chunked && !c->sliding_window)
            bad = "model.sliding_chunked", why = "cuts the sliding layers' keys into chunks of model.sliding_window: "
                                                 "set that";
        else if (c->sliding_window_pattern && !c->sliding_window)
            bad = "model.sliding_window_pattern", why = "needs model.sliding_window (it says which layers "
                                                        "slide)";
        else if (strcmp(c->sliding_rope, "scaled") && !c->sliding_window)
            bad = "model.sliding_rope", why = "is plain, which needs model.sliding_window (it is the "
                                              "sliding layers' RoPE)";
        else if (c->sliding_rope_theta != 0.0 && strcmp(c->sliding_rope, "plain"))
            bad = "model.sliding_rope_theta", why = "needs model.sliding_rope=plain (it is the plain RoPE's "
                                                    "base frequency)";
        else if (c->experts && (!strcmp(c->norm_position, "both") || !strcmp(c->activation, "gelu_tanh")))
            bad = "model.experts", why = "are SwiGLU experts with norms before or after them, not with "
                                         "model.norm_position=both or model.activation=gelu_tanh (clamped_swiglu, "
                                         "gpt-oss's SwiGLU, is theirs too)";
        else if (plain && c->experts && c->expert_bias)
            bad = "model.expert_bias", why = "is gpt-oss's, whose experts are gated: not with model.mlp=plain";
        else if (c->expert_latent && (!c->experts || c->expert_bias))
            bad = "model.expert_latent", why = "is the routed experts' width (Nemotron 3 Super's latent): it needs "
                                               "model.experts, without model.expert_bias";
        else if (plain && strcmp(c->activation, "relu2") && strcmp(c->activation, "gelu_tanh") &&
                 strcmp(c->activation, "gelu") && strcmp(c->activation, "xielu"))
            bad = "model.activation", why = "of model.mlp=plain must be relu2, gelu_tanh, gelu or xielu (silu and "
                                            "clamped_swiglu are gated MLPs')";
        else if (!plain && (!strcmp(c->activation, "relu2") || !strcmp(c->activation, "gelu") ||
                            !strcmp(c->activation, "xielu")))
            bad = "model.activation", why = "is a plain MLP's activation (relu2, gelu, xielu): set model.mlp=plain";
        else if (!strcmp(c->activation, "xielu") && c->experts)
            bad = "model.activation", why = "is xielu, whose trained alphas are a dense MLP's (Apertus's): not with "
                                            "model.experts";
        else if (strcmp(c->parallel_block, "none") && (strcmp(c->norm_position, "pre") || c->experts ||
                                                       c->residual_multiplier != 1.0))
            bad = "model.parallel_block", why = "puts a dense MLP beside attention in pre-norm blocks: not with "
                                                "model.norm_position=post|both, experts or model.residual_multiplier";
        else if (c->mlp_bias && !plain)
            bad = "model.mlp_bias", why = "puts biases on a plain MLP's projections: set model.mlp=plain";
        else if (c->head_bias && c->tie_embeddings)
            bad = "model.head_bias", why = "needs model.tie_embeddings=false (the bias is the separate head's)";
        else if (!c->norm_bias && strcmp(c->norm, "layer"))
            bad = "model.norm_bias", why = "is false, which shapes model.norm=layer (RMSNorms have no bias)";
        else if (!strcmp(c->norm, "layer") && strcmp(c->norm_position, "pre"))
            bad = "model.norm", why = "is layer, which takes norms before the sublayers only (model.norm_position=pre): "
                                      "no model has LayerNorms after them";
        else if ((c->swiglu_alpha != 1.702 || c->swiglu_limit != 7.0) && strcmp(c->activation, "clamped_swiglu"))
            bad = "model.swiglu_alpha", why = "and model.swiglu_limit shape model.activation=clamped_swiglu "
                                              "(gpt-oss's): set that activation or leave them at 1.702 and 7";
        else if (c->expert_bias && !c->experts)
            bad = "model.expert_bias", why = "needs model.experts (it is the router's and the experts' biases)";
        else if (!c->rope_truncate && strcmp(c->rope_scaling, "yarn"))
            bad = "model.rope_truncate", why = "is false, which shapes model.rope_scaling=yarn only";
        else if (c->attention_out_bias && c->residual_multiplier != 1.0)
            bad = "model.attention_out_bias", why = "and model.residual_multiplier together are not supported "
                                                    "(no model has both)";
        else if (c->query_scale_beta > 0 && c->query_scale_context < 1)
            bad = "model.query_scale_beta", why = "needs model.query_scale_context, the positions of each of its steps";
        else if (c->query_scale_context && !(c->query_scale_beta > 0))
            bad = "model.query_scale_context", why = "is the period of model.query_scale_beta's steps: set that too";
        else if ((c->query_scale_offset || strcmp(c->query_scale_layers, "all")) && !(c->query_scale_beta > 0))
            bad = c->query_scale_offset ? "model.query_scale_offset" : "model.query_scale_layers",
            why = "shapes model.query_scale_beta's temperature: set that too";
        else if (!strcmp(c->query_scale_layers, "no_rope") && !c->no_rope_pattern)
            bad = "model.query_scale_layers", why = "is no_rope, the layers of model.no_rope_pattern: set that";
        else if (c->attention_multiplier != 0.0 && c->query_pre_attn_scalar)
            bad = "model.attention_multiplier", why = "and model.query_pre_attn_scalar both set the score "
                                                      "scale: set one";
        else if (c->shared_expert_ffn && !c->experts)
            bad = "model.shared_expert_ffn", why = "needs model.experts (a shared expert sits beside "
                                                   "routed ones)";
        else if (!c->shared_expert_gate && !c->shared_expert_ffn)
            bad = "model.shared_expert_gate", why = "is false, which shapes the shared expert: set "
                                                    "model.shared_expert_ffn";
        else if (strcmp(c->router_group_score, "top2") && c->router_groups < 2)
            bad = "model.router_group_score", why = "scores the groups of model.router_groups > 1";
        else if (!c->experts && (strcmp(c->router_scores, "softmax") || c->router_select_bias ||
                                 c->router_groups != 1 || c->router_topk_groups != 1 ||
                                 c->router_scale != 1.0 || c->dense_layers))
            bad = "model.router_scores", why = "(and the other model.router_* keys, model.dense_layers) "
                                               "shape a mixture of experts: set model.experts";
        else if (c->router_norm_eps > 0 && (strcmp(c->router_scores, "sigmoid") || !c->router_norm_topk))
            bad = "model.router_norm_eps", why = "shapes the renormalized weights of model.router_scores=sigmoid "
                                                 "with model.router_norm_topk: set those";
        else if (c->experts && c->experts % c->router_groups)
            bad = "model.router_groups", why = "must divide model.experts (equal groups)";
        else if (c->router_groups > 1 && c->experts / c->router_groups < 2 && strcmp(c->router_group_score, "max"))
            bad = "model.router_groups", why = "leaves groups of one expert: a group is scored by its "
                                               "two best experts";
        else if (c->router_topk_groups > c->router_groups)
            bad = "model.router_topk_groups", why = "must be 1..model.router_groups";
        else if (c->experts && c->experts_per_token > c->router_topk_groups * (c->experts / c->router_groups))
            bad = "model.experts_per_token", why = "exceeds the experts of model.router_topk_groups groups";
        else if (!strcmp(c->router_scores, "sigmoid") && c->router_aux_loss > 0)
            bad = "model.router_aux_loss", why = "is the softmax router's load-balancing loss (Switch "
                                                 "Transformer), not model.router_scores=sigmoid's";
        else if (c->dense_layers >= c->layers && c->experts)
            bad = "model.dense_layers", why = "must leave a block with experts (below model.layers)";
        else if (c->dense_ffn_width && !c->dense_layers && !c->expert_layers.n)
            bad = "model.dense_ffn_width", why = "is the width of the dense blocks' MLPs: set model.dense_layers "
                                                 "or model.expert_layers";
        else if ((c->expert_layers.n || c->expert_input_scaled) && !c->experts)
            bad = c->expert_layers.n ? "model.expert_layers" : "model.expert_input_scaled",
            why = "shapes a mixture of experts: set model.experts";
        else if (c->expert_layers.n && c->dense_layers)
            bad = "model.expert_layers", why = "and model.dense_layers both say which blocks have experts: set one";
        else if ((why = layer_list_fault(c, &c->expert_layers)))
            bad = "model.expert_layers";
        else if (!c->kv_lora_rank && (c->q_lora_rank || c->v_head_dim))
            bad = c->q_lora_rank ? "model.q_lora_rank" : "model.v_head_dim",
            why = "shapes latent attention: set model.kv_lora_rank";
        else if (c->kv_lora_rank && c->kv_heads && c->kv_heads != c->heads)
            bad = "model.kv_heads", why = "must be model.heads (or 0) with model.kv_lora_rank: latent attention "
                                          "expands a key and a value for every head";
        else if (c->kv_lora_rank && (c->attention_bias || c->attention_out_bias || c->qk_norm || c->attention_sinks ||
                                     c->norm_unit_offset))
            bad = "model.kv_lora_rank", why = "(latent attention) takes no attention biases, q/k norms, sinks or "
                                              "model.norm_unit_offset";
        else if (c->v_head_dim > head_size(c))
            bad = "model.v_head_dim", why = "must be at most the head size (model.head_dim, else width / heads)";
        else if (c->linear_attention_pattern && (!strcmp(c->norm_position, "both") || strcmp(c->parallel_block, "none") ||
                                                 c->kv_lora_rank))
            bad = "model.linear_attention_pattern", why = "puts gated delta-net layers in blocks with norms before "
                                                          "their sublayers (the attention layers' may follow them: "
                                                          "model.norm_position=post): not with "
                                                          "model.norm_position=both, model.parallel_block or "
                                                          "latent attention";
        else if (!c->linear_attention_pattern && (c->linear_key_heads || c->linear_value_heads || c->linear_key_dim ||
                                                  c->linear_value_dim || c->linear_conv_kernel != 4 ||
                                                  c->linear_allow_neg_eigval || c->linear_norm_eps != 0.0))
            bad = c->linear_allow_neg_eigval ? "model.linear_allow_neg_eigval"
                : c->linear_norm_eps != 0.0 ? "model.linear_norm_eps" : "model.linear_key_heads",
            why = "(and the other model.linear_* keys) shape gated delta-net layers: set model.linear_attention_pattern";
        else if (c->linear_attention_pattern && lin_value_heads(c) % lin_key_heads(c))
            bad = "model.linear_value_heads", why = "must be a multiple of model.linear_key_heads (each key head "
                                                    "serves a whole group of value heads)";
        else if (c->attention_output_gate && c->kv_lora_rank)
            bad = "model.attention_output_gate", why = "gates attention's heads: not with latent attention";
        else if (c->attention_head_gate && (c->attention_output_gate || c->kv_lora_rank))
            bad = "model.attention_head_gate", why = "gates attention's heads: not with model.attention_output_gate "
                                                     "(one gate or the other) or latent attention";
        else if (c->rope_proportion != 1.0 && strcmp(c->rope_scaling, "proportional"))
            bad = "model.rope_proportion", why = "shapes model.rope_scaling=proportional: set that";
        else if (!strcmp(c->rope_scaling, "proportional") && c->rope_dim)
            bad = "model.rope_dim", why = "turns part of each head by its own pairs: model.rope_scaling=proportional "
                                          "turns pairs over the whole head (model.rope_proportion says how many)";
        else if ((why = sliding_layers_fault(c)))
            bad = "model.sliding_layers";
        else if (c->short_conv_kernel && (c->linear_attention_pattern || !strcmp(c->norm_position, "post") ||
                                          strcmp(c->parallel_block, "none") || c->kv_lora_rank))
            bad = "model.short_conv_kernel", why = "puts short convolution layers in blocks with norms before their "
                                                   "sublayers (and after: model.norm_position=both): not with "
                                                   "model.linear_attention_pattern, model.norm_position=post, "
                                                   "model.parallel_block or latent attention";
        else if (c->mamba_heads && (c->short_conv_kernel || c->linear_attention_pattern || !strcmp(c->norm_position, "post") ||
                                    strcmp(c->parallel_block, "none") || c->kv_lora_rank))
            bad = "model.mamba_heads", why = "puts Mamba-2 layers in blocks with norms before their sublayers: not "
                                             "with model.short_conv_kernel, model.linear_attention_pattern, "
                                             "model.norm_position=post, model.parallel_block or latent attention";
        else if (c->mamba1_width && (c->mamba_heads || c->short_conv_kernel || c->linear_attention_pattern ||
                                     !strcmp(c->norm_position, "post") || strcmp(c->parallel_block, "none") ||
                                     c->kv_lora_rank))
            bad = "model.mamba1_width", why = "puts Mamba-1 layers in blocks with norms before their sublayers: not "
                                              "with model.mamba_heads, model.short_conv_kernel, "
                                              "model.linear_attention_pattern, model.norm_position=post, "
                                              "model.parallel_block or latent attention";
        else if (!c->mamba1_width && (c->mamba1_dt_rank || strcmp(c->mamba1_norms, "none") ||
                                      c->mamba1_norm_eps != 1e-6))
            bad = "model.mamba1_dt_rank", why = "(and model.mamba1_norms, model.mamba1_norm_eps) shape Mamba-1 layers: "
                                                "set model.mamba1_width";
        else if (!c->mamba_heads && !c->mamba1_width && (c->mamba_state != 128 || c->mamba_conv_kernel != 4 ||
                                                          !c->mamba_conv_bias))
            bad = "model.mamba_state", why = "(and model.mamba_conv_kernel, model.mamba_conv_bias) shape Mamba layers: "
                                             "set model.mamba_heads (Mamba-2) or model.mamba1_width (Mamba-1)";
        else if (!c->mamba_heads && (c->mamba_head_dim || c->mamba_groups != 1))
            bad = "model.mamba_head_dim", why = "(and model.mamba_groups) shape Mamba-2 layers: set model.mamba_heads";
        else if (c->mamba_heads && c->mamba_heads % c->mamba_groups)
            bad = "model.mamba_groups", why = "must divide model.mamba_heads (each group serves as many heads)";
        else if (c->mamba_heads && mamba_head_dim(c) < 1)
            bad = "model.mamba_head_dim", why = "is 0 and 2 x width is less than model.mamba_heads: set it";
        else if (!recurrent_but_listed(c) && c->attention_layers.n)
            bad = "model.attention_layers", why = "names the layers that keep attention among short convolution "
                                                  "or Mamba layers: set model.short_conv_kernel, model.mamba_heads or "
                                                  "model.mamba1_width";
        else if ((why = layer_list_fault(c, &c->attention_layers)))
            bad = "model.attention_layers";
        else if ((why = layer_list_fault(c, &c->mlp_only_layers)))
            bad = "model.mlp_only_layers";
        else if ((why = layer_list_fault(c, &c->mixer_only_layers)))
            bad = "model.mixer_only_layers";
        else if ((why = one_sublayer_fault(c)))
            bad = c->mlp_only_layers.n ? "model.mlp_only_layers" : "model.mixer_only_layers";
        if (bad) {
            ACCEL_ERROR0("llama: %s %s (model.heads=%d model.kv_heads=%d model.width=%d)", bad,
                         why, c->heads, c->kv_heads, c->width);
            return ACCEL_ERR_CONFIG;
        }
    }
    /* Matrix dimensions are ints for BLAS: each matrix (a dense MLP's, one expert's) holds at most
     * INT_MAX elements. A block's stacked experts may hold more (DeepSeek-V3: 7.5e9): the arena,
     * the collectives (the ring cuts its messages) and checkpoints count in 64 bits. */
    const int64_t mlp_rows = plain ? ffn : 2 * (int64_t)ffn;
    const int dense_ffn = c->dense_ffn_width ? c->dense_ffn_width : default_ffn_width(c->width);
    const int64_t experts = llama && c->experts ? c->experts : 1;
    const char *too_big = c->width > (1 << 20) ? "model.width (at most 1048576)"
                        : c->vocab > (1 << 26) ? "model.vocab (at most 67108864)"
                        : c->context > (1 << 20) ? "model.context (at most 1048576)"
                        : c->layers > 100000 ? "model.layers (at most 100000)"
                        : ffn > (1 << 22) ? "model.ffn_width (at most 4194304)"
                        : (int64_t)c->heads * c->head_dim > (1 << 20) ? "model.heads x model.head_dim (at most 1048576)"
                        : (int64_t)c->width * 2 * dense_ffn > INT_MAX || (int64_t)c->width * mlp_rows > INT_MAX
                        ? "an MLP's matrix, width x 2 x its width (at most 2^31 - 1 elements: BLAS counts in ints)"
                        : (int64_t)c->width * mlp_rows * experts > ((int64_t)1 << 40)
                        ? "a block's experts, width x 2 x model.ffn_width x model.experts (at most 2^40 elements)" : NULL;
    if (too_big) {
        ACCEL_ERROR0("%s: model size out of range: %s (layers=%d width=%d ffn_width=%d experts=%d context=%d "
                     "vocab=%d)", name, too_big, c->layers, c->width, ffn, c->experts, c->context, c->vocab);
        return ACCEL_ERR_CONFIG;
    }
    return ACCEL_OK;                                /* precision: checked by the config */
}

/* The dimensions and building blocks of cfg's model (validated). */
static void shape_of(gpt_t *m, const accel_config_t *cfg, bool llama)
{
    const accel_model_config_t *c = &cfg->model;
    m->L = c->layers;
    m->NH = c->heads;
    m->KVH = llama && c->kv_heads ? c->kv_heads : c->heads;
    m->C = c->width;
    m->hs = llama && c->head_dim ? c->head_dim : m->C / m->NH;
    m->rd = llama && c->rope_dim ? c->rope_dim : m->hs;
    m->QW = m->NH * m->hs;
    m->T = c->context;
    m->V = c->vocab;
    m->mla = llama && c->kv_lora_rank > 0;
    if (m->mla) m->KVH = m->NH;                     /* every head its own key and value */
    m->Rq = m->mla ? c->q_lora_rank : 0;
    m->Rkv = m->mla ? c->kv_lora_rank : 0;
    m->dv = m->mla && c->v_head_dim ? c->v_head_dim : m->hs;
    m->PW = m->mla ? m->NH * m->dv : m->QW;
    m->QKV = (m->NH + 2 * m->KVH) * m->hs;
    m->F = !llama ? 4 * m->C : c->ffn_width ? c->ffn_width : default_ffn_width(m->C);
    const int expert_F = m->F;
    m->dense_layers = llama && c->experts ? c->dense_layers : 0;
    if (llama && c->experts) m->expert_layers = c->expert_layers;
    if (m->dense_layers || m->expert_layers.n) m->F = c->dense_ffn_width ? c->dense_ffn_width : default_ffn_width(m->C);
    const bool plain = !llama || !strcmp(c->mlp, "plain");
    m->FIN = plain ? m->F : 2 * m->F;
    m->QKN = llama && c->qk_norm ? (m->NH + m->KVH) * m->hs : 0;
    m->lin_pattern = llama ? c->linear_attention_pattern : 0;
    if (m->lin_pattern) {
        m->lin = (accel_gdn_dims_t){ lin_key_heads(c), lin_value_heads(c), c->linear_key_dim ? c->linear_key_dim : m->hs,
                                     c->linear_value_dim ? c->linear_value_dim : m->hs, c->linear_conv_kernel,
                                     (float)(c->linear_norm_eps > 0 ? c->linear_norm_eps : c->rms_eps),
                                     c->linear_allow_neg_eigval ? 2.0f : 1.0f };
        m->LP = (int)accel_gdn_in_width(&m->lin);
        m->LO = m->lin.Hv * m->lin.dv;
    }
    if (llama) {
        m->att_layers = c->attention_layers;
        m->mlp_only = c->mlp_only_layers;
        m->mixer_only = c->mixer_only_layers;
    }
    if (llama && c->short_conv_kernel) {
        m->sconv = (accel_sconv_dims_t){ m->C, c->short_conv_kernel };
        m->LP = (int)accel_sconv_in_width(&m->sconv);
        m->LO = m->C;
    }
    if (llama && c->mamba_heads) {
        m->mamba = (accel_mamba2_dims_t){ c->mamba_heads, mamba_head_dim(c), c->mamba_groups, c->mamba_state,
                                          c->mamba_conv_kernel, (float)c->rms_eps };
        m->LP = (int)accel_mamba2_in_width(&m->mamba);
        m->LO = m->mamba.H * m->mamba.P;
    }
    if (llama && c->mamba1_width) {
        const accel_mamba1_norms_t norms = !strcmp(c->mamba1_norms, "plain") ? ACCEL_MAMBA1_NORMS_PLAIN
                                         : !strcmp(c->mamba1_norms, "weighted") ? ACCEL_MAMBA1_NORMS_WEIGHTED
                                         : ACCEL_MAMBA1_NORMS_NONE;
        m->mamba1 = (accel_mamba1_dims_t){ c->mamba1_width, c->mamba_state, mamba1_dt_rank(c), c->mamba_conv_kernel,
                                           norms, (float)c->mamba1_norm_eps };
        m->LP = (int)accel_mamba1_in_width(&m->mamba1);
        m->LO = m->mamba1.I;
    }
    const int E = llama ? c->experts : 0;
    m->glu = (accel_glu_t){ !strcmp(c->activation, "gelu_tanh") ? ACCEL_GLU_GELU_TANH
                            : !strcmp(c->activation, "clamped_swiglu") ? ACCEL_GLU_CLAMPED : ACCEL_GLU_SILU,
                            (float)c->swiglu_alpha, (float)c->swiglu_limit };
    m->moe = (accel_moe_dims_t){ E, E ? c->experts_per_token : 0, m->C, expert_F, c->router_norm_topk,
                                 E ? c->shared_expert_ffn : 0, m->glu, E && c->expert_bias,
                                 .sigmoid = E && !strcmp(c->router_scores, "sigmoid"),
                                 .select_bias = E && c->router_select_bias, .groups = c->router_groups,
                                 .topk_groups = c->router_topk_groups, .scale = (float)c->router_scale,
                                 .norm_eps = c->router_norm_eps > 0 ? (float)c->router_norm_eps : 1e-20f,
                                 .group_max = E && !strcmp(c->router_group_score, "max"),
                                 .loads = E && c->router_select_bias && cfg->optim.router_bias_update > 0,
                                 .shared_gate = c->shared_expert_gate,
                                 .input_scaled = E && c->expert_input_scaled };
    m->plain_act = !llama ? ACCEL_ACT_GELU_TANH : !strcmp(c->activation, "relu2") ? ACCEL_ACT_RELU2
                 : !strcmp(c->activation, "gelu") ? ACCEL_ACT_GELU : ACCEL_ACT_GELU_TANH;
    m->xielu = llama && !strcmp(c->activation, "xielu");
    m->moe.plain = E && plain;          /* down(act(up)) experts (Nemotron-H's) */
    m->moe.latent = E ? c->expert_latent : 0;
    m->moe.plain_act = m->plain_act;
    m->aux_coef = E ? (float)c->router_aux_loss : 0.0f;
    m->arch = llama ? (arch_t){ .rms = strcmp(c->norm, "layer") != 0, .rope = true, .swiglu = !plain,
                                .mlp_bias = c->mlp_bias,
                                .qkv_bias = c->attention_bias, .tied = c->tie_embeddings,
                                .qk_norm = c->qk_norm,
                                .qk_all = c->qk_norm && !strcmp(c->qk_norm_scope, "all"),
                                .qk_after = c->qk_norm && c->qk_norm_after_rope,
                                .qk_unweighted = c->qk_norm && !c->qk_norm_weights,
                                .qk_rope_only = c->qk_norm && !strcmp(c->qk_norm_layers, "rope"),
                                .post_norm = !strcmp(c->norm_position, "post"),
                                .sandwich = !strcmp(c->norm_position, "both"),
                                .proj_bias = c->attention_out_bias, .sinks = c->attention_sinks,
                                .parallel = !strcmp(c->parallel_block, "two_norms") ? PARALLEL_TWO_NORMS
                                          : !strcmp(c->parallel_block, "one_norm") ? PARALLEL_ONE_NORM
                                          : PARALLEL_NONE,
                                .gate = c->attention_output_gate || c->attention_head_gate,
                                .head_gate = c->attention_head_gate }
                    : (arch_t){ .rms = false, .rope = false, .swiglu = false, .mlp_bias = true,
                                .qkv_bias = true, .tied = true, .proj_bias = true };
    m->eps = llama ? (float)c->rms_eps : ACCEL_LN_EPS;
    m->norm_offset = llama && c->norm_unit_offset;
    m->norm_bias = !m->arch.rms && (!llama || c->norm_bias);
    m->offw_len = (size_t)(m->C > m->QW ? m->C : m->QW);
    m->embed_scale = llama ? (float)c->embed_scale : 1.0f;
    m->qscale_beta = llama ? c->query_scale_beta : 0.0;
    m->qscale_context = c->query_scale_context;
    m->qscale_offset = c->query_scale_offset;
    m->qscale_nope = llama && !strcmp(c->query_scale_layers, "no_rope");
    m->att_scale = llama && c->attention_multiplier > 0 ? (float)c->attention_multiplier
                 : 1.0f / sqrtf((float)(llama && c->query_pre_attn_scalar ? c->query_pre_attn_scalar : m->hs));
    m->res_mult = llama ? (float)c->residual_multiplier : 1.0f;
    m->logits_div = llama ? (float)c->logits_scaling : 1.0f;
    m->att_cap = llama ? (float)c->attention_softcap : 0.0f;
    m->logit_cap = llama ? (float)c->logit_softcap : 0.0f;
    m->window = llama && c->sliding_window < c->context ? c->sliding_window : 0;
    m->chunked = llama && c->sliding_chunked;
    m->slides = llama && c->sliding_window > 0;
    m->window_pattern = llama ? c->sliding_window_pattern : 0;
    if (llama) m->slide_layers = c->sliding_layers;
    m->GW = !m->arch.gate ? 0 : m->arch.head_gate ? m->NH : m->QW;
    m->no_rope_pattern = llama ? c->no_rope_pattern : 0;
    m->precision = cfg->precision_id;               /* fp32, bf16 or fp16 */
    m->recompute = cfg->train.recompute_id;
    /* ACCEL_ATT_WHOLE_HEAD=1 takes the whole-head way on any CPU (emulated products there), so
     * tests cover it where bf16 is not native. */
    const char *force = getenv("ACCEL_ATT_WHOLE_HEAD");
    m->whole_head = (m->precision == ACCEL_BF16 && accel_gemm_cpu_has_bf16()) ||
                    (force && !strcmp(force, "1"));
}

/* Whether block l has a token mixer (all but model.mlp_only_layers) and an MLP (all but
 * model.mixer_only_layers): a block without one passes its residual through that half. */
static bool layer_mixes(const gpt_t *m, int l) { return !accel_layer_listed(&m->mlp_only, l); }
static bool layer_has_mlp(const gpt_t *m, int l) { return !accel_layer_listed(&m->mixer_only, l); }

/* Whether block l is a gated delta-net layer (model.linear_attention_pattern: all but every N-th). */
static bool layer_linear(const gpt_t *m, int l)
{
    return m->lin_pattern && (l + 1) % m->lin_pattern != 0 && layer_mixes(m, l);
}

/* Whether block l is a short convolution layer (model.short_conv_kernel: all but
 * model.attention_layers). */
static bool layer_conv(const gpt_t *m, int l)
{
    return m->sconv.K && !accel_layer_listed(&m->att_layers, l) && layer_mixes(m, l);
}

/* Whether block l is a Mamba-2 layer (model.mamba_heads: all but model.attention_layers). */
static bool layer_mamba(const gpt_t *m, int l)
{
    return m->mamba.H && !accel_layer_listed(&m->att_layers, l) && layer_mixes(m, l);
}

/* Whether block l is a Mamba-1 layer (model.mamba1_width: all but model.attention_layers). */
static bool layer_mamba1(const gpt_t *m, int l)
{
    return m->mamba1.I && !accel_layer_listed(&m->att_layers, l) && layer_mixes(m, l);
}

/* Whether block l mixes tokens without attention: a delta-net's, a convolution's or a state
 * space's recurrence. */
static bool layer_recurrent(const gpt_t *m, int l)
{
    return layer_linear(m, l) || layer_conv(m, l) || layer_mamba(m, l) || layer_mamba1(m, l);
}

/* Whether the model has such layers: a generation's cache cannot go back to an earlier position. */
static bool has_recurrent(const gpt_t *m) { return m->lin_pattern || m->sconv.K || m->mamba.H || m->mamba1.I; }

/* Whether block l's attention has no RoPE (model.no_rope_pattern: every N-th layer). */
static bool layer_nope(const gpt_t *m, int l) { return m->no_rope_pattern && (l + 1) % m->no_rope_pattern == 0; }

/* Whether block l's queries and keys are normed: model.qk_norm on its attention, with
 * model.qk_norm_layers=rope only where it has RoPE (Llama 4). */
static bool layer_qk_norm(const gpt_t *m, int l)
{
    return m->arch.qk_norm && layer_mixes(m, l) && !layer_recurrent(m, l) && !(m->arch.qk_rope_only && layer_nope(m, l));
}

/* Whether block l's norms follow its sublayers (model.norm_position=post: OLMo 2's), not precede
 * them: a recurrent layer keeps its norms before (OLMo Hybrid's delta-net layers). */
static bool layer_post(const gpt_t *m, int l) { return m->arch.post_norm && !layer_recurrent(m, l); }

/* Whether block l's MLP is the experts (else a dense MLP: no experts, model.dense_layers, or a
 * block model.expert_layers leaves out). */
static bool layer_moe(const gpt_t *m, int l)
{
    if (!m->moe.E || !layer_has_mlp(m, l)) return false;
    return m->expert_layers.n ? accel_layer_listed(&m->expert_layers, l) : l >= m->dense_layers;
}

/* The blocks whose MLP is the experts. */
static int moe_blocks(const gpt_t *m)
{
    int n = 0;
    for (int l = 0; l < m->L; l++) n += layer_moe(m, l);
    return n;
}

void accel_decoder_dims(const accel_config_t *cfg, accel_decoder_dims_t *d)
{
    gpt_t m = { 0 };
    const bool llama = !strcmp(cfg->model.name, "llama");
    if (cfg->model.heads < 1 || cfg->model.width < 1) { memset(d, 0, sizeof *d); return; }
    shape_of(&m, cfg, llama);
    *d = (accel_decoder_dims_t){ m.L, m.NH, m.KVH, m.hs, m.C, m.T, m.V, m.QKV, m.F, m.FIN, llama,
                                 m.arch.qk_norm, m.moe.E, m.moe.K, m.moe.F, m.moe.E ? moe_blocks(&m) : 0 };
}

static accel_status_t create(const accel_config_t *cfg, bool llama, accel_layout_t *layout,
                             void **state)
{
    ACCEL_CHECK(validate(cfg, llama));
    gpt_t *m = calloc(1, sizeof *m);
    if (!m) return ACCEL_ERR_NOMEM;
    shape_of(m, cfg, llama);
    accel_status_t st = accel_gemm_cpu_init(&m->gemm, m->precision);
    if (st == ACCEL_OK) st = accel_gemm_cpu_init(&m->gemm32, ACCEL_F32);
    m->blk = calloc((size_t)m->L, sizeof *m->blk);
    m->act = calloc((size_t)m->L, sizeof *m->act);
    m->kv = calloc((size_t)m->L, sizeof *m->kv);
    if (st == ACCEL_OK && (!m->blk || !m->act || !m->kv)) st = ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK && m->moe.E) {
        m->aux_count = calloc(2 * (size_t)m->moe.E, sizeof *m->aux_count);
        m->aux_psum = m->aux_count ? m->aux_count + m->moe.E : NULL;
        m->aux_grad = calloc((size_t)m->moe.E, sizeof *m->aux_grad);
        if (!m->aux_count || !m->aux_grad) st = ACCEL_ERR_NOMEM;
    }
    if (st == ACCEL_OK && m->arch.rope) st = rope_tables(m, &cfg->model);
    if (st == ACCEL_OK && m->norm_offset && !(m->offw = malloc(sizeof(float) * 3 * m->offw_len))) st = ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK && m->arch.qk_unweighted) {
        if (!(m->unit = malloc(sizeof(float) * m->offw_len))) st = ACCEL_ERR_NOMEM;
        for (size_t i = 0; m->unit && i < m->offw_len; i++) m->unit[i] = 1.0f;
    }
    if (st != ACCEL_OK) { gpt_destroy(m); return st; }

    const int64_t C = m->C, L = m->L;
    const arch_t *ar = &m->arch;
    /* GPT-2 scales the residual projections' init by 1/sqrt(2L); Llama inits every matrix alike. */
    const float std = 0.02f, res_std = llama ? std : (float)(0.02 / sqrt(2.0 * (double)L));
    const unsigned nd = ACCEL_TENSOR_NO_DECAY;
    const float ones = m->norm_offset ? 0.0f : -1.0f;  /* norm weights: 1, or offsets from 1 of 0 */
    const char *n1 = llama ? "norm1" : "ln1", *n2 = llama ? "norm2" : "ln2", *nf = llama ? "normf" : "lnf";
    const char *fc = ar->swiglu ? "mlp.gate_up" : llama ? "mlp.up" : "mlp.fc", *fcp = llama ? "mlp.down" : "mlp.proj";
    /* Each layer's tensors are registered contiguously: ZeRO-3 gathers one layer at a time.
     * Layer 0: embeddings; 1..L: blocks; L+1: final norm (and a separate LM head). */
    m->wpe = m->lnfb = m->head = m->headb = -1;
    ACCEL_CHECK_GOTO(add(layout, "wte", 2, m->V, C, 0, 0, std, &m->wte), st, fail);
    if (!ar->rope) ACCEL_CHECK_GOTO(add(layout, "wpe", 2, m->T, C, 0, 0, std, &m->wpe), st, fail);
    for (int l = 0; l < m->L; l++) {
        gpt_block_t *b = &m->blk[l];
        memset(b, 0xff, sizeof *b);     /* every index -1: absent */
        char name[ACCEL_TENSOR_NAME_MAX];
#define ADD(part, suffix, ndim, d0, d1, flags, s, idx)                                      \
        snprintf(name, sizeof name, "h.%d.%s." suffix, l, part);                            \
        ACCEL_CHECK_GOTO(add(layout, name, ndim, d0, d1, l + 1, flags, s, idx), st, fail)
        if (layer_mixes(m, l)) {        /* norm1 and the token mixer */
            ADD(n1, "weight", 1, C, 0, nd, ones, &b->ln1w);
            if (m->norm_bias) { ADD(n1, "bias", 1, C, 0, nd, 0.0f, &b->ln1b); }
            if (layer_linear(m, l)) {       /* a gated delta-net: HF's A_log ~ log U(0, 16): here 0 (A = 1) */
                ADD("attn.in", "weight", 2, m->LP, C, 0, std, &b->linw);
                ADD("attn.conv", "weight", 2, (int64_t)accel_gdn_conv_width(&m->lin), m->lin.K, 0, std, &b->convw);
                snprintf(name, sizeof name, "h.%d.attn.dt_bias", l);
                ACCEL_CHECK_GOTO(add(layout, name, 1, m->lin.Hv, 0, l + 1, nd, -1.0f, &b->dtb), st, fail);
                snprintf(name, sizeof name, "h.%d.attn.A_log", l);
                ACCEL_CHECK_GOTO(add(layout, name, 1, m->lin.Hv, 0, l + 1, nd, 0.0f, &b->alog), st, fail);
                ADD("attn.norm", "weight", 1, m->lin.dv, 0, nd, -1.0f, &b->lnw);
                ADD("attn.proj", "weight", 2, C, m->LO, 0, res_std, &b->projw);
            } else if (layer_mamba1(m, l)) {    /* Mamba-1: HF's A_log = log(1..N) each channel, D = 1, dt_bias
                                                 * softplus^-1 of U(1e-3, 0.1): here A = 1, D = 1, dt_bias 0 */
                const int64_t I = m->mamba1.I, N = m->mamba1.N, Rk = m->mamba1.R;
                ADD("attn.in", "weight", 2, m->LP, C, 0, std, &b->linw);
                ADD("attn.conv", "weight", 2, I, m->mamba1.K, 0, std, &b->convw);
                if (cfg->model.mamba_conv_bias) { ADD("attn.conv", "bias", 1, I, 0, nd, 0.0f, &b->convb); }
                ADD("attn.x_proj", "weight", 2, (int64_t)accel_mamba1_dbc_width(&m->mamba1), I, 0, std, &b->xprojw);
                if (m->mamba1.norms == ACCEL_MAMBA1_NORMS_WEIGHTED) {
                    ADD("attn.dt_norm", "weight", 1, Rk, 0, nd, -1.0f, &b->dtnw);
                    ADD("attn.b_norm", "weight", 1, N, 0, nd, -1.0f, &b->bnw);
                    ADD("attn.c_norm", "weight", 1, N, 0, nd, -1.0f, &b->cnw);
                }
                ADD("attn.dt_proj", "weight", 2, I, Rk, 0, std, &b->dtprojw);
                snprintf(name, sizeof name, "h.%d.attn.dt_bias", l);
                ACCEL_CHECK_GOTO(add(layout, name, 1, I, 0, l + 1, nd, 0.0f, &b->dtb), st, fail);
                snprintf(name, sizeof name, "h.%d.attn.A_log", l);
                ACCEL_CHECK_GOTO(add(layout, name, 2, I, N, l + 1, nd, 0.0f, &b->alog), st, fail);
                snprintf(name, sizeof name, "h.%d.attn.D", l);
                ACCEL_CHECK_GOTO(add(layout, name, 1, I, 0, l + 1, nd, -1.0f, &b->skipd), st, fail);
                ADD("attn.proj", "weight", 2, C, m->LO, 0, res_std, &b->projw);
            } else if (layer_mamba(m, l)) { /* Mamba-2: HF's A_log = log(1..H), D = 1: here A = 1, D = 1 */
                const int64_t CW = (int64_t)accel_mamba2_conv_width(&m->mamba), Hm = m->mamba.H;
                ADD("attn.in", "weight", 2, m->LP, C, 0, std, &b->linw);
                ADD("attn.conv", "weight", 2, CW, m->mamba.K, 0, std, &b->convw);
                if (cfg->model.mamba_conv_bias) { ADD("attn.conv", "bias", 1, CW, 0, nd, 0.0f, &b->convb); }
                snprintf(name, sizeof name, "h.%d.attn.dt_bias", l);
                ACCEL_CHECK_GOTO(add(layout, name, 1, Hm, 0, l + 1, nd, -1.0f, &b->dtb), st, fail);
                snprintf(name, sizeof name, "h.%d.attn.A_log", l);
                ACCEL_CHECK_GOTO(add(layout, name, 1, Hm, 0, l + 1, nd, 0.0f, &b->alog), st, fail);
                snprintf(name, sizeof name, "h.%d.attn.D", l);
                ACCEL_CHECK_GOTO(add(layout, name, 1, Hm, 0, l + 1, nd, -1.0f, &b->skipd), st, fail);
                ADD("attn.norm", "weight", 1, m->LO, 0, nd, -1.0f, &b->lnw);
                ADD("attn.proj", "weight", 2, C, m->LO, 0, res_std, &b->projw);
            } else if (layer_conv(m, l)) {  /* a short convolution: b | c | x, the taps, the output */
                ADD("attn.in", "weight", 2, m->LP, C, 0, std, &b->linw);
                ADD("attn.conv", "weight", 2, C, m->sconv.K, 0, std, &b->convw);
                ADD("attn.proj", "weight", 2, C, m->LO, 0, res_std, &b->projw);
            } else if (m->mla) {            /* the latents and their expansions (mla_forward) */
                const int64_t QH = (int64_t)m->NH * m->hs, KVB = (int64_t)m->NH * (m->hs - m->rd + m->dv);
                if (m->Rq) {
                    ADD("attn.q_a", "weight", 2, m->Rq, C, 0, std, &b->qaw);
                    ADD("attn.q_a_norm", "weight", 1, m->Rq, 0, nd, ones, &b->qanw);
                    ADD("attn.q_b", "weight", 2, QH, m->Rq, 0, std, &b->qbw);
                } else {
                    ADD("attn.q", "weight", 2, QH, C, 0, std, &b->qbw);
                }
                ADD("attn.kv_a", "weight", 2, (int64_t)m->Rkv + m->rd, C, 0, std, &b->kvaw);
                ADD("attn.kv_a_norm", "weight", 1, m->Rkv, 0, nd, ones, &b->kvanw);
                ADD("attn.kv_b", "weight", 2, KVB, m->Rkv, 0, std, &b->kvbw);
            } else {
                /* attention_output_gate: the gate's rows after v's, [QKV + QW, C] */
                ADD("attn.qkv", "weight", 2, m->QKV + m->GW, C, 0, std, &b->qkvw);
                if (ar->qkv_bias) { ADD("attn.qkv", "bias", 1, m->QKV, 0, nd, 0.0f, &b->qkvb); }
            }
            if (layer_qk_norm(m, l) && !ar->qk_unweighted) {   /* per head, or over the whole projections */
                ADD("attn.q_norm", "weight", 1, ar->qk_all ? m->QW : m->hs, 0, nd, ones, &b->qnw);
                ADD("attn.k_norm", "weight", 1, ar->qk_all ? (int64_t)m->KVH * m->hs : m->hs, 0, nd, ones, &b->knw);
            }
            if (!layer_recurrent(m, l)) { ADD("attn.proj", "weight", 2, C, m->PW, 0, res_std, &b->projw); }
            if (ar->proj_bias && !layer_recurrent(m, l)) { ADD("attn.proj", "bias", 1, C, 0, nd, 0.0f, &b->projb); }
            if (ar->sinks && !layer_recurrent(m, l)) {                /* logit 0: a sink weighs as one key of score 0 */
                snprintf(name, sizeof name, "h.%d.attn.sinks", l);
                ACCEL_CHECK_GOTO(add(layout, name, 1, m->NH, 0, l + 1, nd, 0.0f, &b->sinks), st, fail);
            }
            if (ar->sandwich) { ADD("post_norm1", "weight", 1, C, 0, nd, ones, &b->pn1w); }
        }
        if (!layer_has_mlp(m, l)) continue;
        if (ar->parallel != PARALLEL_ONE_NORM) {    /* one_norm: the MLP reads norm1's output */
            ADD(n2, "weight", 1, C, 0, nd, ones, &b->ln2w);
            if (m->norm_bias) { ADD(n2, "bias", 1, C, 0, nd, 0.0f, &b->ln2b); }
        }
        if (layer_moe(m, l)) {          /* experts' weights stacked: [E 2F, W] (plain: [E F, W]), [E W, F] */
            const int64_t E = m->moe.E, EF = m->moe.F, EFIN = accel_moe_in_width(&m->moe);
            const int64_t W = accel_moe_width(&m->moe);  /* C, or the latent's */
            const char *up = m->moe.plain ? "mlp.experts.up" : "mlp.experts.gate_up";
            ADD("mlp.router", "weight", 2, E, C, 0, std, &b->routerw);
            if (m->moe.bias) { ADD("mlp.router", "bias", 1, E, 0, nd, 0.0f, &b->routerb); }
            if (m->moe.latent) { ADD("mlp.latent_in", "weight", 2, W, C, 0, std, &b->latin); }
            ADD(up, "weight", 2, E * EFIN, W, 0, std, &b->fcw);
            if (m->moe.bias) { ADD(up, "bias", 1, E * EFIN, 0, nd, 0.0f, &b->fcb_e); }
            ADD("mlp.experts.down", "weight", 2, E * W, EF, 0, res_std, &b->fcpw);
            if (m->moe.bias) { ADD("mlp.experts.down", "bias", 1, E * W, 0, nd, 0.0f, &b->fcpb_e); }
            if (m->moe.latent) { ADD("mlp.latent_out", "weight", 2, C, W, 0, res_std, &b->latout); }
            /* zero gradient: AdamW leaves it as imported (no decay, no update) */
            if (m->moe.select_bias) {
                ADD("mlp.router", "select_bias", 1, E, 0, nd | (m->moe.loads ? ACCEL_TENSOR_LOADS : 0), 0.0f,
                    &b->selectb);
            }
            if (m->moe.S) {
                ADD(m->moe.plain ? "mlp.shared.up" : "mlp.shared.gate_up", "weight", 2,
                    (m->moe.plain ? 1 : 2) * (int64_t)m->moe.S, C, 0, std, &b->sgu);
                ADD("mlp.shared.down", "weight", 2, C, m->moe.S, 0, res_std, &b->sdown);
                if (m->moe.shared_gate) { ADD("mlp.shared_gate", "weight", 2, 1, C, 0, std, &b->sgate); }
            }
            continue;
        }
        ADD(fc, "weight", 2, m->FIN, C, 0, std, &b->fcw);
        if (ar->mlp_bias) { ADD(fc, "bias", 1, m->FIN, 0, nd, 0.0f, &b->fcb); }
        if (m->xielu) {                 /* transformers' XIELUActivation's start: alpha_p 0.8, alpha_n 0.8 */
            const unsigned v = nd | ACCEL_TENSOR_INIT_VALUE, fixed = v | ACCEL_TENSOR_FIXED;
            ADD("mlp.act", "alpha_p", 1, 1, 0, v, (float)log(expm1(0.8)), &b->xap);
            ADD("mlp.act", "alpha_n", 1, 1, 0, v, (float)log(expm1(0.8 - 0.5)), &b->xan);
            ADD("mlp.act", "beta", 1, 1, 0, fixed, 0.5f, &b->xbeta);
            ADD("mlp.act", "eps", 1, 1, 0, fixed, -1e-6f, &b->xeps);
        }
        ADD(fcp, "weight", 2, C, m->F, 0, res_std, &b->fcpw);
        if (ar->mlp_bias) { ADD(fcp, "bias", 1, C, 0, nd, 0.0f, &b->fcpb); }
        if (ar->sandwich) { ADD("post_norm2", "weight", 1, C, 0, nd, ones, &b->pn2w); }
#undef ADD
    }
    const int last = m->L + 1;
    char name[ACCEL_TENSOR_NAME_MAX];
    snprintf(name, sizeof name, "%s.weight", nf);
    ACCEL_CHECK_GOTO(add(layout, name, 1, C, 0, last, nd, ones, &m->lnfw), st, fail);
    snprintf(name, sizeof name, "%s.bias", nf);
    if (m->norm_bias) ACCEL_CHECK_GOTO(add(layout, name, 1, C, 0, last, nd, 0.0f, &m->lnfb), st, fail);
    if (ar->tied) m->head = m->wte;
    else ACCEL_CHECK_GOTO(add(layout, "lm_head.weight", 2, m->V, C, last, 0, std, &m->head), st, fail);
    if (llama && cfg->model.head_bias)
        ACCEL_CHECK_GOTO(add(layout, "lm_head.bias", 1, m->V, 0, last, nd, 0.0f, &m->headb), st, fail);
    *state = m;
    return ACCEL_OK;
fail:
    gpt_destroy(m);
    return st;
}

static accel_status_t gpt_create(const accel_config_t *cfg, accel_layout_t *layout, void **state)
{
    return create(cfg, false, layout, state);
}

static accel_status_t llama_create(const accel_config_t *cfg, accel_layout_t *layout, void **state)
{
    return create(cfg, true, layout, state);
}

/* The layer whose parameters the LM head reads: wte's (0) when tied, else the last one's. */
static int head_layer(const gpt_t *m) { return m->arch.tied ? 0 : m->L + 1; }

/* Room for B samples at full context. One allocation, carved into 64-byte aligned pieces. */
#define PIECE(n) (((n) + 15) / 16 * 16)

/* The pieces of one block's activations, in the order they are carved. */
enum { A_LN1, A_LN1_MEAN, A_LN1_RSTD, A_QKV, A_QKN, A_QKN_RSTD, A_LSE, A_ATTY, A_RES2, A_LN2,
       A_LN2_MEAN, A_LN2_RSTD, A_FCH, A_FCH_GELU, A_RES3,
       A_PROBS, A_TOPW, A_TOPI, A_ORDER, A_MOE_X, A_MOE_Y,     /* experts only */
       A_SH, A_SHID, A_SY, A_SG,                               /* their shared expert */
       A_XL, A_YL,                                             /* their latent */
       A_PN1, A_PN1_RSTD, A_PN2, A_PN2_RSTD,                   /* sandwich norms only */
       A_MLA,                                                  /* latent attention only */
       A_GATE, A_ATTO,                                         /* attention_output_gate only */
       A_LIN,                                                  /* gated delta-net layers only */
       A_PIECES };
typedef uint64_t piece_mask_t;       /* a set of pieces: bit i for piece i */
#define BIT(i) ((piece_mask_t)1 << (i))
#define ALL_PIECES (BIT(A_PIECES) - 1)
/* The token mixer's pieces (norm1 to the output gate), and the MLP's (norm2 to the experts'). */
#define MIXER_PIECES (BIT(A_LN1) | BIT(A_LN1_MEAN) | BIT(A_LN1_RSTD) | BIT(A_QKV) | BIT(A_QKN) | \
                      BIT(A_QKN_RSTD) | BIT(A_LSE) | BIT(A_ATTY) | BIT(A_PN1) | BIT(A_PN1_RSTD) | \
                      BIT(A_MLA) | BIT(A_GATE) | BIT(A_ATTO) | BIT(A_LIN))
#define MLP_PIECES (BIT(A_LN2) | BIT(A_LN2_MEAN) | BIT(A_LN2_RSTD) | BIT(A_FCH) | BIT(A_FCH_GELU) | \
                    BIT(A_PROBS) | BIT(A_TOPW) | BIT(A_TOPI) | BIT(A_ORDER) | BIT(A_MOE_X) | BIT(A_MOE_Y) | \
                    BIT(A_SH) | BIT(A_SHID) | BIT(A_SY) | BIT(A_SG) | BIT(A_XL) | BIT(A_YL) | BIT(A_PN2) | \
                    BIT(A_PN2_RSTD))

/* Activation recompute: the pieces each block keeps for its backward pass. The others live in one
 * set shared by every block and are rebuilt from the block's stored input just before its backward
 * pass (recompute_block): none keeps everything; mlp drops the MLP's (norm2 and the first
 * product's two results: over half of a GPT block's floats at short context); block keeps only the block's
 * output, which is the next block's input. */
static piece_mask_t kept_pieces(accel_recompute_t r)
{
    /* The experts' gathered input rows are a copy of norm2's: always shared, the backward pass
     * gathers them again (K x width floats per token and block saved for one copy). */
    const piece_mask_t copy = BIT(A_MOE_X);
    if (r == ACCEL_RECOMPUTE_MLP) return ALL_PIECES & ~MLP_PIECES;
    if (r == ACCEL_RECOMPUTE_BLOCK) return BIT(A_RES3);
    return ALL_PIECES & ~copy;
}

/* The pieces block l has: a block without a token mixer (model.mlp_only_layers) has none of the
 * mixer's, one without an MLP none of the MLP's, and neither has a res2 of its own: reserve points
 * it at the block's input or output (the half left out adds nothing to the residual). */
static piece_mask_t layer_pieces(const gpt_t *m, int l)
{
    piece_mask_t p = ALL_PIECES;
    if (!layer_mixes(m, l)) p &= ~(MIXER_PIECES | BIT(A_RES2));
    if (!layer_has_mlp(m, l)) p &= ~(MLP_PIECES | BIT(A_RES2));
    return p;
}

static size_t larger(size_t a, size_t b) { return a > b ? a : b; }

/* Floats of each piece for B sequences of T tokens. */
static void piece_floats(const gpt_t *m, size_t B, size_t T, size_t sizes[A_PIECES])
{
    const size_t BT = B * T, C = (size_t)m->C, E = (size_t)m->moe.E, BTK = BT * (size_t)m->moe.K;
    const size_t S = (size_t)m->moe.S, EF = (size_t)m->moe.F, EW = E ? (size_t)accel_moe_width(&m->moe) : C;
    /* The MLP's hidden pieces: the dense MLP's [BT, FIN] and [BT, F], or the experts' [BT K, 2 EF]
     * and [BT K, EF], whichever is larger where a model has both. */
    const size_t dense_rows = !E || m->dense_layers || m->expert_layers.n ? BT : 0;
    const size_t fch = larger(dense_rows * (size_t)m->FIN, BTK * (E ? accel_moe_in_width(&m->moe) : 0)),
                 hid = larger(dense_rows * (size_t)m->F, BTK * EF);
    const size_t gate = BT * (size_t)m->GW, atto = m->arch.gate ? BT * (size_t)m->QW : 0;
    const size_t s[A_PIECES] = { BT * C, BT, BT, BT * larger((size_t)m->QKV, (size_t)m->LP), BT * (size_t)m->QKN,
                                 m->QKN ? BT * (size_t)(m->NH + m->KVH) : 0, B * (size_t)m->NH * T,
                                 BT * larger((size_t)m->QW, (size_t)m->LO), BT * C, BT * C, BT, BT,
                                 fch, hid,
                                 BT * C, BT * E, BTK, BTK, E ? BTK + E + 1 : 0, BTK * EW, BTK * EW,
                                 BT * (m->moe.plain ? 1 : 2) * S, BT * S, S ? BT * C : 0, S ? BT : 0,
                                 BT * (size_t)m->moe.latent, BT * (size_t)m->moe.latent,
                                 m->arch.sandwich ? BT * C : 0, m->arch.sandwich ? BT : 0,
                                 m->arch.sandwich ? BT * C : 0, m->arch.sandwich ? BT : 0,
                                 m->mla ? BT * (2 * (size_t)m->Rq + 2 * (size_t)m->Rkv + 2) : 0,
                                 gate, atto,
                                 m->lin_pattern ? BT * accel_gdn_act_floats(&m->lin)
                                 : m->sconv.K ? BT * accel_sconv_act_floats(&m->sconv)
                                 : m->mamba.H ? BT * accel_mamba2_act_floats(&m->mamba)
                                 : m->mamba1.I ? BT * accel_mamba1_act_floats(&m->mamba1) : 0 };
    memcpy(sizes, s, sizeof s);
}

/* Floats of the pieces in `mask` of one block's activations (laid out by carve_block). */
static size_t block_floats(const gpt_t *m, size_t B, size_t T, piece_mask_t mask)
{
    size_t sizes[A_PIECES], n = 0;
    piece_floats(m, B, T, sizes);
    for (int i = 0; i < A_PIECES; i++)
        if (mask & BIT(i)) n += PIECE(sizes[i]);
    return n;
}

/* The soft caps' tanh scratch: one (sample, head)'s scores, or one row of logits. */
static size_t cap_floats(const gpt_t *m)
{
    const size_t att = m->att_cap > 0 ? (size_t)m->T * (size_t)m->T : 0, head = m->logit_cap > 0 ? (size_t)m->V : 0;
    return att > head ? att : head;
}

/* Latent attention's work floats per row: the heads' expanded keys and values (forward), or
 * their gradients (backward), which also hold the compact [NH dv] attention outputs; then the
 * latents' gradients before and after their norms, and the RoPE key's. */
static size_t mla_scratch(const gpt_t *m)
{
    if (!m->mla) return 0;
    return (size_t)m->NH * (size_t)(m->hs - m->rd + m->dv) + 2 * (size_t)m->Rkv + (size_t)m->rd + 2 * (size_t)m->Rq;
}

/* The backward scratch dc's width (d of the norm's output, of attention's or the gated delta-net's
 * output) and d3c's (d of the q|k|v rows or of the gated delta-net's input projection). */
static size_t dc_width(const gpt_t *m) { return larger((size_t)m->C, larger((size_t)m->QW, (size_t)m->LO)); }
static size_t d3c_width(const gpt_t *m) { return larger((size_t)m->QKV, (size_t)m->LP); }

/* The recurrent mixers' scratch (dlin, ilin). */
static size_t lin_scratch(const gpt_t *m, size_t B, size_t T)
{
    return m->lin_pattern ? accel_gdn_scratch_floats(&m->lin, B, T)
           : m->sconv.K ? accel_sconv_scratch_floats(&m->sconv, B * T)
           : m->mamba.H ? accel_mamba2_scratch_floats(&m->mamba, B, T)
           : m->mamba1.I ? accel_mamba1_scratch_floats(&m->mamba1, B, T) : 0;
}

/* Floats of activations and work buffers for a micro-batch of B samples (laid out by reserve):
 * the blocks' kept pieces, the shared set of the others, and the rest. */
static size_t activation_floats(const gpt_t *m, size_t B)
{
    const size_t T = (size_t)m->T, BT = B * T, C = (size_t)m->C;
    const piece_mask_t keep = kept_pieces(m->recompute);
    size_t blocks = 0;
    for (int l = 0; l < m->L; l++) blocks += block_floats(m, B, T, keep & layer_pieces(m, l));
    return blocks + block_floats(m, B, T, ALL_PIECES & ~keep) +
           2 * PIECE(BT * C) + 2 * PIECE(BT) +
           PIECE(BT * (size_t)m->V) + PIECE(BT * C) + PIECE(BT * dc_width(m)) + PIECE(BT * d3c_width(m)) +
           PIECE((size_t)m->QKN) +
           PIECE(BT * (size_t)m->FIN) + PIECE(m->arch.swiglu ? BT * (size_t)m->F : 0) +
           2 * PIECE(T * T) + 2 * PIECE((size_t)m->hs * T) + PIECE(2 * T * (size_t)m->hs) +
           PIECE(m->moe.E ? accel_moe_scratch_floats(&m->moe, BT) : 0) +
           PIECE(m->arch.post_norm || m->arch.sandwich || m->res_mult != 1.0f || m->arch.parallel ? BT * C : 0) +
           PIECE(cap_floats(m)) + PIECE(BT * mla_scratch(m)) + PIECE(BT * (size_t)m->GW) +
           PIECE(lin_scratch(m, B, T));
}

static size_t activation_bytes(const accel_config_t *cfg, bool llama, int micro_batch)
{
    gpt_t m = { 0 };
    shape_of(&m, cfg, llama);
    return sizeof(float) * activation_floats(&m, (size_t)micro_batch) + accel_gemm_cpu_workspace_bytes();
}

static size_t gpt_activation_bytes(const accel_config_t *cfg, int micro_batch)
{
    return activation_bytes(cfg, false, micro_batch);
}

static size_t llama_activation_bytes(const accel_config_t *cfg, int micro_batch)
{
    return activation_bytes(cfg, true, micro_batch);
}

/* The pieces in `mask` of one block's activations for B sequences of T tokens, carved from p (the
 * others are left as they are); returns what follows. */
static float *carve_block(const gpt_t *m, gpt_acts_t *a, float *p, size_t B, size_t T, piece_mask_t mask)
{
    float **const order[A_PIECES] = { &a->ln1, &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->qkn,
                                      &a->qkn_rstd, &a->lse, &a->atty, &a->res2, &a->ln2,
                                      &a->ln2_mean, &a->ln2_rstd, &a->fch, &a->fch_gelu, &a->res3,
                                      &a->probs, &a->topw, &a->topi, &a->order, &a->moe_x, &a->moe_y,
                                      &a->sh, &a->shid, &a->sy, &a->sg, &a->xl, &a->yl, &a->pn1, &a->pn1_rstd, &a->pn2,
                                      &a->pn2_rstd, &a->mla, &a->gate, &a->atto, &a->lin };
    size_t sizes[A_PIECES];
    piece_floats(m, B, T, sizes);
    for (int i = 0; i < A_PIECES; i++)
        if (mask & BIT(i)) {
            *order[i] = p;
            p += PIECE(sizes[i]);
        }
    return p;
}

/* The largest pair of operands any product of n rows converts (bf16/fp16): an activation-sized
 * and a weight-sized one, or two activation-sized ones in the weight gradients. */
static size_t gemm_elements(const gpt_t *m, size_t rows)
{
    size_t wide = (size_t)m->V;
    if ((size_t)m->FIN > wide) wide = (size_t)m->FIN;
    if (2 * (size_t)m->moe.F > wide) wide = 2 * (size_t)m->moe.F;
    if ((size_t)m->moe.E > wide) wide = (size_t)m->moe.E;
    if (d3c_width(m) > wide) wide = d3c_width(m);
    size_t other = rows > wide ? rows : wide;
    const size_t F = larger((size_t)m->F, (size_t)m->moe.F);
    if (F > other) other = F;
    /* the inner widths: the model's, the MLP's, latent attention's latents */
    const size_t inner = larger(larger(larger(dc_width(m), F), (size_t)m->moe.latent),
                                larger((size_t)m->Rq, (size_t)m->Rkv + (size_t)m->rd));
    return rows * wide + other * inner + 2 * (size_t)m->T * (size_t)m->T + 64;
}

static accel_status_t reserve(gpt_t *m, int B)
{
    if (B <= m->capacity) return ACCEL_OK;
    const size_t C = (size_t)m->C, T = (size_t)m->T, V = (size_t)m->V;
    const size_t BT = (size_t)B * T;
    size_t wide = V > (size_t)m->FIN ? V : (size_t)m->FIN;
    if (wide < d3c_width(m)) wide = d3c_width(m);
    if (BT > INT_MAX / wide) {
        ACCEL_ERROR("%s: a micro-batch of %d samples x %zu tokens is too large for one pass\n"
                    "--> hint: lower the micro-batch (raise train.grad_accum)",
                    m->arch.rope ? "llama" : "gpt", B, T);
        return ACCEL_ERR_INVALID;
    }
    size_t total = activation_floats(m, (size_t)B);
    void *mem = NULL;
    if (posix_memalign(&mem, 64, total * sizeof(float))) {
        ACCEL_ERROR("%s: cannot allocate %.1f MiB of activations for a micro-batch of %d samples\n"
                    "--> hint: lower the micro-batch (raise train.grad_accum)",
                    m->arch.rope ? "llama" : "gpt", total * 4.0 / 1048576.0, B);
        return ACCEL_ERR_NOMEM;
    }
    free(m->mem);
    m->mem = mem;
    float *p = mem;
#define TAKE(ptr, n) do { (ptr) = p; p += PIECE(n); } while (0)
    /* The shared set first (recompute), then each block's own pieces. */
    const piece_mask_t keep = kept_pieces(m->recompute);
    gpt_acts_t shared = { 0 };
    p = carve_block(m, &shared, p, (size_t)B, T, ALL_PIECES & ~keep);
    for (int l = 0; l < m->L; l++) {
        m->act[l] = shared;
        p = carve_block(m, &m->act[l], p, (size_t)B, T, keep & layer_pieces(m, l));
    }
    TAKE(m->x0, BT * C);
    TAKE(m->lnf, BT * C);
    TAKE(m->lnf_mean, BT);
    TAKE(m->lnf_rstd, BT);
    TAKE(m->logits, BT * V);
    TAKE(m->dres, BT * C);
    TAKE(m->dc, BT * dc_width(m));
    TAKE(m->d3c, BT * d3c_width(m));
    TAKE(m->d4c, BT * (size_t)m->FIN);
    TAKE(m->dff, m->arch.swiglu ? BT * (size_t)m->F : 0);
    TAKE(m->dp, T * T);
    TAKE(m->pr, T * T);
    TAKE(m->kt, (size_t)m->hs * T);
    TAKE(m->vt, (size_t)m->hs * T);
    TAKE(m->dkv, 2 * T * (size_t)m->hs);
    TAKE(m->dqk, (size_t)m->QKN);
    TAKE(m->dmoe, m->moe.E ? accel_moe_scratch_floats(&m->moe, BT) : 0);
    TAKE(m->dpost, m->arch.post_norm || m->arch.sandwich || m->res_mult != 1.0f || m->arch.parallel ? BT * C : 0);
    TAKE(m->capt, cap_floats(m));
    TAKE(m->dmla, BT * mla_scratch(m));
    TAKE(m->dgate, BT * (size_t)m->GW);
    TAKE(m->dlin, lin_scratch(m, (size_t)B, T));
#undef TAKE
    for (int l = 0; l < m->L; l++) {    /* a one-sublayer block's res2: its input, or its output */
        if (!layer_mixes(m, l)) m->act[l].res2 = l ? m->act[l - 1].res3 : m->x0;
        if (!layer_has_mlp(m, l)) m->act[l].res2 = m->act[l].res3;
    }
    m->capacity = B;
    return accel_gemm_cpu_reserve(&m->gemm, gemm_elements(m, BT));
}

accel_status_t accel_gpt_check_tokens(const int32_t *tokens, int B, int n_per_row, int stride, int V)
{
    if (!tokens) {
        ACCEL_ERROR("gpt needs token batches, but the batch has no tokens\n--> hint: feed "
                    "accel_batch_t.tokens with rows of model.context+1 token ids");
        return ACCEL_ERR_INVALID;
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < n_per_row; t++) {
            int32_t id = tokens[(size_t)b * stride + t];
            if (id < 0 || id >= V) {
                ACCEL_ERROR("gpt: sample %d, position %d has token id %d, outside the vocabulary "
                            "0..%d\n--> hint: the data's tokenizer must match model.vocab=%d", b, t,
                            id, V - 1, V);
                return ACCEL_ERR_INVALID;
            }
        }
    return ACCEL_OK;
}

accel_status_t accel_gpt_check_positions(const int32_t *positions, int B, int T)
{
    for (int b = 0; positions && b < B; b++)
        for (int t = 0; t < T; t++) {
            const int32_t p = positions[(size_t)b * T + t];
            if (p != 0 && (t == 0 || p != positions[(size_t)b * T + t - 1] + 1)) {
                ACCEL_ERROR("sample %d, position %d has position id %d: a sample's position ids restart "
                            "at 0 where a document begins and count up by one within it", b, t, (int)p);
                return ACCEL_ERR_INVALID;
            }
        }
    return ACCEL_OK;
}

/* Attention runs one (sample, head) at a time, on its T x T lower triangle, one of two ways:
 * - where bf16 products are native, each product covers the whole head (the triangular products
 *   of gemm_cpu.h, m->gemm), or with packed documents (m->pos) a whole document, each on its own
 *   triangle: the kernel packs every operand once, rounding it as it goes, and skips the masked
 *   half tile by tile;
 * - elsewhere (fp32, fp16, emulated bf16), in row blocks of ATT_BLOCK, which skip the masked half
 *   block by block, and with packed documents the columns before a block's first document (and
 *   in the backward pass the rows after a column block's last document). An operand would be
 *   rounded again for every block it takes part in, so every operand is rounded once, where it
 *   is made, and the products run in fp32 (m->gemm32): the same "operands rounded, fp32
 *   accumulation" products. q, k and v are only ever product operands,
 *   so they are rounded in place (as are dY and dS in the backward pass); P also feeds the
 *   softmax backward in full precision, so its rounded copy goes to a scratch buffer.
 * Inference rows after the first (the KV cache's new positions) always take the row-block way,
 * and inference's q, k and v are always rounded in place, so both ways read the same values.
 * Query head h reads key/value head h / G (G = NH / KVH query heads share one: grouped-query
 * attention; G = 1 for gpt). ACCEL_ATT_WHOLE_HEAD=1 forces the first way (for tests). */
static bool att_native(const gpt_t *m) { return m->whole_head; }

#define GEMM32(...) ACCEL_CHECK(accel_gemm_cpu(&m->gemm32, __VA_ARGS__))

/* Round a rows x cols block (leading dimension ld) to the model's precision, into dst (leading
 * dimension cols; dst == src rounds in place when ld == cols); fp32: nothing to do. */
static void round_to(const gpt_t *m, float *dst, const float *src, size_t rows, size_t cols,
                     size_t ld)
{
    if (m->precision == ACCEL_BF16) accel_cpu_pack_bf16_round(dst, src, rows, cols, ld);
    else if (m->precision == ACCEL_F16) accel_cpu_pack_f16_round(dst, src, rows, cols, ld);
}

/* fp32 sgemm runs the small NT products Q K^T and dY V^T well below the same blocks in NN form
 * (OpenBLAS 0.3.21, in the step: 37-58 against 50-89 GFLOP/s), so the second operand (one head's
 * keys or values) is transposed once per (sample, head) into xt ([hs, T]) and every row block
 * runs NN: S[rows x cols] = alpha * A X^T. */
static accel_status_t gemm_nt(gpt_t *m, int rows, int cols, int hs, int T, float alpha,
                              const float *A, int lda, const float *xt, float *S)
{
    return accel_gemm_cpu(&m->gemm32, false, false, rows, cols, hs, alpha, A, lda, xt, T, 0.0f, S,
                          T);
}

/* The first key row t attends to: 0, or with packed documents (pos: one sample's positions) the
 * first token of its document, and with a span none before its window or chunk (a chunk counts
 * positions within the document). It never decreases with t, so a block of rows sees no column
 * before its first row's. */
static inline int key_start(const int32_t *pos, span_t w, int t)
{
    const int p = pos ? pos[t] : t, doc = pos ? t - pos[t] : 0;
    const int near = !w.n ? 0 : w.chunks ? t - p % w.n : t - w.n + 1;
    return doc > near ? doc : near;
}

/* One past the last row that sees column c under the span (T: none stops it before the end). */
static inline int span_end(const int32_t *pos, span_t w, int c, int T)
{
    const int end = !w.n ? T : w.chunks ? c - (pos ? pos[c] : c) % w.n + w.n : c + w.n;
    return end < T ? end : T;
}

/* The end of the document holding position t: the next position 0 after t, or T (without pos:
 * T, the sample is one sequence). Packed documents partition a sample into triangles of their own. */
static inline int document_end(const int32_t *pos, int t, int T)
{
    for (t++; pos && t < T && pos[t] != 0; t++) {}
    return pos ? t : T;
}

/* model.attention_softcap (Gemma 2): scores x become cap tanh(x / cap), as transformers caps them
 * before the mask and the softmax; tanh into th when given (the backward pass's derivative). */
static void soft_cap(float *x, int n, float cap, float *th)
{
    for (int i = 0; i < n; i++) {
        const float t = tanhf(x[i] / cap);
        if (th) th[i] = t;
        x[i] = cap * t;
    }
}

/* Score rows r0..r1-1 (row t at S + (t - r0) ld) become softmax rows over their causal prefix
 * (row t: columns key_start..t, w the layer's span), zero elsewhere up to column cols (the
 * products read P as lower triangular); lse[t] keeps row t's log-sum-exp. cap > 0: the scores
 * are soft-capped first. sink (NULL: none): the head's sink logit joins every row's denominator
 * (gpt-oss), so a row sums to 1 - exp(sink - lse); lse counts it, and P = exp(S - lse) stays
 * true for causal_probs. */
static void causal_softmax(float *S, size_t ld, int cols, int r0, int r1, float *lse,
                           const int32_t *pos, span_t w, float cap, const float *sink)
{
    for (int t = r0; t < r1; t++) {
        float *row = S + (size_t)(t - r0) * ld;
        const int k0 = key_start(pos, w, t);
        if (cap > 0) soft_cap(row + k0, t + 1 - k0, cap, NULL);
        lse[t] = accel_cpu_softmax(row + k0, row + k0, t + 1 - k0);
        if (sink) {                 /* log(e^lse + e^sink), and each p scaled by e^(old - new) */
            const float hi = fmaxf(lse[t], *sink), both = hi + log1pf(expf(-fabsf(lse[t] - *sink)));
            const float f = expf(lse[t] - both);
            for (int k = k0; k <= t; k++) row[k] *= f;
            lse[t] = both;
        }
        memset(row, 0, sizeof(float) * (size_t)k0);
        memset(row + t + 1, 0, sizeof(float) * (size_t)(cols - t - 1));
    }
}

/* causal_softmax again in the backward pass, from the log-sum-exp it kept: P = exp(S - lse) (with
 * cap > 0 of the capped scores, their tanh kept in th, laid out as S). */
static void causal_probs(float *S, size_t ld, int cols, int r0, int r1, const float *lse,
                         const int32_t *pos, span_t w, float cap, float *th)
{
    for (int t = r0; t < r1; t++) {
        float *row = S + (size_t)(t - r0) * ld;
        const int k0 = key_start(pos, w, t);
        if (cap > 0) soft_cap(row + k0, t + 1 - k0, cap, th + (size_t)(t - r0) * ld + k0);
        accel_cpu_softmax_from_lse(row + k0, row + k0, t + 1 - k0, lse[t]);
        memset(row, 0, sizeof(float) * (size_t)k0);
        memset(row + t + 1, 0, sizeof(float) * (size_t)(cols - t - 1));
    }
}

/* A head's attention sink in the backward pass: its logit, the rows' log-sum-exp (indexed as the
 * rows) and the sum its gradient gathers. */
typedef struct {
    float logit;
    const float *lse;
    double grad;
} sink_grad_t;

/* Rows r0..r1-1 of dP (in dS) become dS = softmax backward through P, zero outside the keys the
 * row attends to (unscaled: the dQ and dK products apply the score scale); with cap > 0 through
 * the soft cap too, d(cap tanh(x / cap)) = 1 - tanh^2 (th: the tanh, laid out as P). With a sink
 * (NULL: none), whose value is 0: dS keeps its form, dS_k = P_k (dP_k - sum_j P_j dP_j), and the
 * sink's logit gathers -P_sink sum_j P_j dP_j, P_sink = exp(sink - lse). */
static void causal_softmax_backward(float *dS, const float *P, int T, int r0, int r1,
                                    const int32_t *pos, span_t w, float cap, const float *th,
                                    sink_grad_t *sink)
{
    for (int t = r0; t < r1; t++) {
        float *row = dS + (size_t)t * T;
        const int k0 = key_start(pos, w, t);
        if (sink)
            sink->grad -= (double)expf(sink->logit - sink->lse[t]) *
                          accel_cpu_dot(P + (size_t)t * T + k0, row + k0, t + 1 - k0);
        accel_cpu_softmax_backward(row + k0, P + (size_t)t * T + k0, row + k0, t + 1 - k0, 1.0f);
        for (int k = k0; cap > 0 && k <= t; k++) {
            const float h = th[(size_t)t * T + k];
            row[k] *= 1.0f - h * h;
        }
        memset(row, 0, sizeof(float) * (size_t)k0);
        memset(row + t + 1, 0, sizeof(float) * (size_t)(T - t - 1));
    }
}

/* Where attention reads its rows: q rows (ld ldq) and k|v rows (ld ldkv). Training: both in one
 * q|k|v buffer; inference: this call's q rows in a scratch, the sequence's k|v rows in the block's
 * cache (only keys and values are kept). */
typedef struct {
    float *q, *kv;
    size_t ldq, ldkv;
} qkv_view_t;

static qkv_view_t qkv_rows(const gpt_t *m, float *qkv)
{
    return (qkv_view_t){ qkv, qkv + (size_t)m->NH * m->hs, (size_t)m->QKV, (size_t)m->QKV };
}

/* Column offsets of query head h's key and value heads in a k|v row. */
static size_t k_col(const gpt_t *m, int h) { return (size_t)(h / (m->NH / m->KVH)) * m->hs; }
static size_t v_col(const gpt_t *m, int h) { return k_col(m, h) + (size_t)m->KVH * m->hs; }

/* round_to in place on rows of cols values at leading dimension ld. */
static void round_rows(const gpt_t *m, float *x, size_t rows, size_t cols, size_t ld)
{
    if (ld == cols) round_to(m, x, x, rows, cols, cols);
    else for (size_t r = 0; r < rows; r++) round_to(m, x + r * ld, x + r * ld, 1, cols, cols);
}

/* Causal self-attention of one block for query rows p0..T-1 of each sequence (p0 > 0: inference
 * with the KV cache, B = 1): per (sample, head), S = Q K^T / sqrt(hs) on the lower triangle,
 * P = softmax(S), Y = P V. S and P live in a scratch (fw->pr) only while their head or row block
 * is worked on; a->lse keeps each row's log-sum-exp, from which attention_backward recomputes P
 * (FlashAttention's trade: T floats per head and row block instead of T x T, for one more
 * product in the backward pass). */
static accel_status_t attention_forward(gpt_t *m, gpt_acts_t *a, const gpt_fwd_t *fw,
                                        const qkv_view_t *x, int B, int T, int p0, span_t window,
                                        const float *sinks)
{
    const bool native = att_native(m) && p0 == 0;
    float *S = fw->pr, *kt = fw->kt;
    const int QW = m->QW, NH = m->NH, hs = m->hs;
    const int ldq = (int)x->ldq, ldkv = (int)x->ldkv;
    const float scale = m->att_scale;
    if (!native || fw->kv) {
        const size_t rows = (size_t)B * T - (size_t)p0;
        round_rows(m, x->q + (size_t)p0 * ldq, rows, (size_t)NH * hs, x->ldq);
        round_rows(m, x->kv + (size_t)p0 * ldkv, rows, 2 * (size_t)m->KVH * hs, x->ldkv);
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *q = x->q + (size_t)b * T * ldq + (size_t)h * hs;
            const float *k = x->kv + (size_t)b * T * ldkv + k_col(m, h);
            const float *v = x->kv + (size_t)b * T * ldkv + v_col(m, h);
            float *lse = a->lse + ((size_t)b * NH + h) * T;
            float *y = a->atty + (size_t)b * T * QW + (size_t)h * hs;
            const int32_t *pos = m->pos ? m->pos + (size_t)b * T : NULL;
            if (native) {   /* each document [s, e) on its own triangle (one: the whole sample) */
                for (int s = 0, e; s < T; s = e) {
                    e = document_end(pos, s, T);
                    const int n = e - s;
                    ACCEL_CHECK(accel_gemm_cpu_lower_nt(&m->gemm, n, hs, scale, q + (size_t)s * ldq, ldq,
                                                        k + (size_t)s * ldkv, ldkv, S, n));
                    causal_softmax(S, (size_t)n, n, 0, n, lse + s, NULL, window, m->att_cap,
                                   sinks ? sinks + h : NULL);
                    ACCEL_CHECK(accel_gemm_cpu_trmm(&m->gemm, false, n, hs, 1.0f, S, n, v + (size_t)s * ldkv,
                                                    ldkv, y + (size_t)s * QW, QW));
                }
                continue;
            }
            if (h % (NH / m->KVH) == 0)     /* once per key head: its group's heads follow */
                accel_cpu_transpose(kt, k, (size_t)T, (size_t)hs, (size_t)ldkv);
            for (int r0 = p0; r0 < T; r0 += ATT_BLOCK) {    /* rows r0..r1-1 see columns c0..r1-1 */
                const int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, c0 = key_start(pos, window, r0);
                /* the block's scores at the scratch's start, leading dimension T (packed documents,
                 * a sliding window: none of these rows sees a column before its first row's) */
                ACCEL_CHECK(gemm_nt(m, r1 - r0, r1 - c0, hs, T, scale, q + (size_t)r0 * ldq, ldq, kt + c0,
                                    S + c0));
                causal_softmax(S, (size_t)T, r1, r0, r1, lse, pos, window, m->att_cap, sinks ? sinks + h : NULL);
                round_rows(m, S + c0, (size_t)(r1 - r0), (size_t)(r1 - c0), (size_t)T);
                GEMM32(false, false, r1 - r0, hs, r1 - c0, 1.0f, S + c0, T, v + (size_t)c0 * ldkv, ldkv, 0.0f,
                       y + (size_t)r0 * QW, QW);
            }
        }
    return ACCEL_OK;
}

/* dst[r, 0:hs] (+)= src[r, 0:hs] for T rows: a head's dK or dV joins its group's. */
static void add_head(float *dst, size_t ld, const float *src, int T, int hs)
{
    for (int t = 0; t < T; t++)
        for (int i = 0; i < hs; i++) dst[(size_t)t * ld + i] += src[(size_t)t * hs + i];
}

/* Backward of attention_forward: dY (m->dc, [BT, QW]) into d(qkv) (m->d3c, [BT, QKV], overwritten):
 * P again (S by the forward pass's products, then exp(S - lse)), dP = dY V^T, dS = softmax
 * backward, dQ = scale dS K, dV = P^T dY, dK = scale dS^T Q (scale: m->att_scale, 1/sqrt(hs)
 * unless model.query_pre_attn_scalar).
 * The query heads of a group add their dK and dV: the first writes them, the others add theirs
 * (through m->dkv where the product cannot accumulate). */
static accel_status_t attention_backward(gpt_t *m, const gpt_acts_t *a, int B, int T, span_t window,
                                         const float *sinks, float *dsinks)
{
    const bool native = att_native(m), rounded = m->precision != ACCEL_F32 && !native;
    const int QW = m->QW, NH = m->NH, hs = m->hs, QKV = m->QKV, G = m->NH / m->KVH;
    const float scale = m->att_scale;
    float *P = m->pr, *dS = m->dp;
    /* dY (m->dc) is only a product operand here and is overwritten right after: round in place.
     * q, k and v were rounded in place by the forward pass. */
    if (!native) round_to(m, m->dc, m->dc, (size_t)B * T, (size_t)QW, (size_t)QW);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const bool first = h % G == 0;          /* of its group: writes dK, dV */
            const size_t qoff = (size_t)b * T * QKV + (size_t)h * hs;
            const size_t koff = (size_t)b * T * QKV + (size_t)NH * hs + k_col(m, h);
            const size_t voff = (size_t)b * T * QKV + (size_t)NH * hs + v_col(m, h);
            const float *q = a->qkv + qoff, *k = a->qkv + koff, *v = a->qkv + voff;
            float *dq = m->d3c + qoff, *dk = m->d3c + koff, *dv = m->d3c + voff;
            const float *lse = a->lse + ((size_t)b * NH + h) * T;
            const float *dy = m->dc + (size_t)b * T * QW + (size_t)h * hs;
            const int32_t *pos = m->pos ? m->pos + (size_t)b * T : NULL;
            sink_grad_t sg = { sinks ? sinks[h] : 0.0f, lse, 0.0 }, *sink = sinks ? &sg : NULL;
            if (native) {   /* document by document, as the forward pass */
                accel_gemm_cpu_t *g = &m->gemm;
                float *dkh = first ? dk : m->dkv, *dvh = first ? dv : m->dkv + (size_t)T * hs;
                const int ldkv = first ? QKV : hs;
                for (int s = 0, e; s < T; s = e) {
                    e = document_end(pos, s, T);
                    const int n = e - s;
                    const size_t rq = (size_t)s * QKV, ry = (size_t)s * QW, rkv = (size_t)s * ldkv;
                    ACCEL_CHECK(accel_gemm_cpu_lower_nt(g, n, hs, scale, q + rq, QKV, k + rq, QKV, P, n));
                    causal_probs(P, (size_t)n, n, 0, n, lse + s, NULL, window, m->att_cap, m->capt);
                    ACCEL_CHECK(accel_gemm_cpu_lower_nt(g, n, hs, 1.0f, dy + ry, QW, v + rq, QKV, dS, n));
                    sg.lse = lse + s;
                    causal_softmax_backward(dS, P, n, 0, n, NULL, window, m->att_cap, m->capt, sink);
                    ACCEL_CHECK(accel_gemm_cpu_trmm(g, false, n, hs, scale, dS, n, k + rq, QKV, dq + rq, QKV));
                    ACCEL_CHECK(accel_gemm_cpu_trmm(g, true, n, hs, 1.0f, P, n, dy + ry, QW, dvh + rkv, ldkv));
                    ACCEL_CHECK(accel_gemm_cpu_trmm(g, true, n, hs, scale, dS, n, q + rq, QKV, dkh + rkv, ldkv));
                }
                if (!first) {
                    add_head(dk, (size_t)QKV, dkh, T, hs);
                    add_head(dv, (size_t)QKV, dvh, T, hs);
                }
                if (sink) dsinks[h] += (float)sg.grad;
                continue;
            }
            accel_cpu_transpose(m->kt, k, (size_t)T, (size_t)hs, (size_t)QKV);
            accel_cpu_transpose(m->vt, v, (size_t)T, (size_t)hs, (size_t)QKV);
            for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
                /* rows r0..r1-1 see columns c0..r1-1 (as in the forward pass); the rows of P and dS
                 * are whole after the softmax steps, which zero every other column */
                const int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, c0 = key_start(pos, window, r0);
                /* P's rows as the forward pass made them, then dP = dY V^T */
                ACCEL_CHECK(gemm_nt(m, r1 - r0, r1 - c0, hs, T, scale, q + (size_t)r0 * QKV, QKV, m->kt + c0,
                                    P + (size_t)r0 * T + c0));
                causal_probs(P + (size_t)r0 * T, (size_t)T, T, r0, r1, lse, pos, window, m->att_cap,
                             m->capt + (size_t)r0 * T);
                ACCEL_CHECK(gemm_nt(m, r1 - r0, r1 - c0, hs, T, 1.0f, dy + (size_t)r0 * QW, QW, m->vt + c0,
                                    dS + (size_t)r0 * T + c0));
                causal_softmax_backward(dS, P, T, r0, r1, pos, window, m->att_cap, m->capt, sink);
                /* dS is only a product operand from here on */
                round_to(m, dS + (size_t)r0 * T, dS + (size_t)r0 * T, (size_t)(r1 - r0),
                         (size_t)T, (size_t)T);
                /* dQ rows r0..r1-1 = scale * dS[r0:r1, c0:r1] K[c0:r1] */
                GEMM32(false, false, r1 - r0, hs, r1 - c0, scale, dS + (size_t)r0 * T + c0, T,
                       k + (size_t)c0 * QKV, QKV, 0.0f, dq + (size_t)r0 * QKV, QKV);
            }
            if (rounded) round_to(m, P, P, (size_t)T, (size_t)T, (size_t)T);  /* an operand now */
            /* Column blocks c0..c1-1 of P and dS are non-zero only in rows c0..t1-1 (t1 = T, or with
             * packed documents the end of the document holding column c1-1, and with a window or
             * chunks no later than the last row that still sees column c1-1):
             * dV[c0:c1] = P[c0:t1, c0:c1]^T dY[c0:t1], dK[c0:c1] = scale * dS[c0:t1, c0:c1]^T Q[c0:t1]. */
            const float beta = first ? 0.0f : 1.0f;
            for (int c0 = 0; c0 < T; c0 += ATT_BLOCK) {
                const int c1 = c0 + ATT_BLOCK < T ? c0 + ATT_BLOCK : T;
                int t1 = document_end(pos, c1 - 1, T);
                const int seen = span_end(pos, window, c1 - 1, T);
                if (seen < t1) t1 = seen;
                GEMM32(true, false, c1 - c0, hs, t1 - c0, 1.0f, P + (size_t)c0 * T + c0, T,
                       dy + (size_t)c0 * QW, QW, beta, dv + (size_t)c0 * QKV, QKV);
                GEMM32(true, false, c1 - c0, hs, t1 - c0, scale, dS + (size_t)c0 * T + c0, T,
                       q + (size_t)c0 * QKV, QKV, beta, dk + (size_t)c0 * QKV, QKV);
            }
            if (sink) dsinks[h] += (float)sg.grad;
        }
    return ACCEL_OK;
}

/* A norm's weights as the kernels take them: w itself, or with model.norm_unit_offset (Gemma)
 * 1 + w, made in scratch slot `slot` (0: a width-wide norm, 1 and 2: the q and k norms) at each
 * use (n floats: cheap beside the norm itself), as transformers computes 1.0 + weight in fp32. */
static const float *norm_weights(const gpt_t *m, const float *w, size_t n, int slot)
{
    if (!m->norm_offset) return w;
    float *o = m->offw + (size_t)slot * m->offw_len;
    for (size_t i = 0; i < n; i++) o[i] = 1.0f + w[i];
    return o;
}

/* The building blocks that differ between the families. */
static void norm_forward(const gpt_t *m, float *out, float *mean, float *rstd, const float *x,
                         const float *w, const float *b, size_t rows)
{
    if (m->arch.rms) accel_cpu_rmsnorm_forward(out, rstd, x, norm_weights(m, w, (size_t)m->C, 0), rows, m->C, m->eps);
    else accel_cpu_layernorm_forward(out, mean, rstd, x, norm_weights(m, w, (size_t)m->C, 0), b, rows, m->C, m->eps);
}

static void norm_backward(const gpt_t *m, float *dx, float *dw, float *db, const float *dout,
                          const float *x, const float *mean, const float *rstd, const float *w,
                          size_t rows)
{
    if (m->arch.rms) accel_cpu_rmsnorm_backward(dx, dw, dout, x, rstd, norm_weights(m, w, (size_t)m->C, 0), rows, m->C);
    else accel_cpu_layernorm_backward(dx, dw, db, dout, x, mean, rstd, norm_weights(m, w, (size_t)m->C, 0), rows, m->C);
}

/* y = b (+ res) for rows x cols, b may be NULL: the start of a product that adds into y. */
static void start_rows(float *y, const float *b, const float *res, size_t rows, int cols)
{
    if (b) accel_cpu_bias_rows(y, b, res, rows, cols);
    else if (res) memcpy(y, res, sizeof(float) * rows * (size_t)cols);
    else memset(y, 0, sizeof(float) * rows * (size_t)cols);
}

/* accel_cpu_rope on n heads of rows at x: the whole head, or with model.rope_dim its first rd
 * values (each head's turned pairs are (i, i + rd/2); the rest pass). */
static void rope_heads(const gpt_t *m, float *x, size_t rows, size_t ld, int n, const float *cos_t,
                       const float *sin_t, int T, int pos0, int inverse)
{
    if (m->rd == m->hs) {
        accel_cpu_rope(x, rows, ld, n, m->hs, cos_t, sin_t, T, pos0, inverse);
        return;
    }
    for (int h = 0; h < n; h++)
        accel_cpu_rope(x + (size_t)h * m->hs, rows, ld, 1, m->rd, cos_t, sin_t, T, pos0, inverse);
}

/* Rotary positions on block l's q and k heads of `rows` rows from row p0 of x, the first at
 * position p0 of sequences of T tokens, or each at its m->pos (inverse: the backward pass, on
 * their gradients); the table is the sliding layers' plain one where it applies, LongRoPE's long
 * one when the pass takes it (m->rope_long), and NoPE layers (model.no_rope_pattern) have none. */
static void rope(const gpt_t *m, int l, const qkv_view_t *x, size_t rows, int T, int p0, int inverse)
{
    if (layer_nope(m, l)) return;
    const bool plain = m->plain_cos && layer_slides(m, l);
    const float *cos_t = plain ? m->plain_cos : m->rope_long ? m->long_cos : m->rope_cos;
    const float *sin_t = plain ? m->plain_sin : m->rope_long ? m->long_sin : m->rope_sin;
    if (m->pos) {                   /* packed documents: row r at its document's position */
        for (size_t r = (size_t)p0; r < (size_t)p0 + rows; r++) {
            rope_heads(m, x->q + r * x->ldq, 1, x->ldq, m->NH, cos_t, sin_t, T, m->pos[r], inverse);
            rope_heads(m, x->kv + r * x->ldkv, 1, x->ldkv, m->KVH, cos_t, sin_t, T, m->pos[r], inverse);
        }
        return;
    }
    rope_heads(m, x->q + (size_t)p0 * x->ldq, rows, x->ldq, m->NH, cos_t, sin_t, T, p0, inverse);
    rope_heads(m, x->kv + (size_t)p0 * x->ldkv, rows, x->ldkv, m->KVH, cos_t, sin_t, T, p0, inverse);
}

/* Llama 4's attention temperature (model.query_scale_beta): the queries of `rows` rows from row
 * p0 of x times 1 + beta ln(1 + floor((p + offset) / model.query_scale_context)), p each row's
 * position as rope() reads it, on every layer or (model.query_scale_layers=no_rope) block l's only
 * if it has no RoPE; the backward pass scales the queries' gradients alike. Rows before the first
 * step are left as they are (the factor is 1). */
static void scale_queries(const gpt_t *m, int l, const qkv_view_t *x, size_t rows, int T, int p0)
{
    if (!(m->qscale_beta > 0) || (m->qscale_nope && !layer_nope(m, l))) return;
    for (size_t r = (size_t)p0; r < (size_t)p0 + rows; r++) {
        const int p = (m->pos ? m->pos[r] : (int)(r % (size_t)T)) + m->qscale_offset;
        if (p < m->qscale_context) continue;
        const float s = (float)(1.0 + m->qscale_beta * log1p((double)(p / m->qscale_context)));
        float *q = x->q + r * x->ldq;
        for (int i = 0; i < m->QW; i++) q[i] *= s;
    }
}

/* qk_norm (Qwen3): each q head and k head of rows p0.. RMS-normed over its hs values with the
 * weights qn (queries) and kn (keys), in place; the values before the norm and each head's 1/rms
 * are kept in a->qkn, a->qkn_rstd for the backward pass. */
static void qk_norm_forward(const gpt_t *m, const qkv_view_t *x, gpt_acts_t *a, const float *qn,
                            const float *kn, size_t rows, int p0)
{
    const size_t QW = (size_t)m->QW, KW = (size_t)m->KVH * m->hs, QKN = (size_t)m->QKN;
    qn = qn ? norm_weights(m, qn, m->arch.qk_all ? QW : (size_t)m->hs, 1) : m->unit;
    kn = kn ? norm_weights(m, kn, m->arch.qk_all ? KW : (size_t)m->hs, 2) : m->unit;
    for (size_t r = (size_t)p0; r < (size_t)p0 + rows; r++) {
        float *q = x->q + r * x->ldq, *k = x->kv + r * x->ldkv;
        float *pre = a->qkn + r * QKN, *rstd = a->qkn_rstd + r * (size_t)(m->NH + m->KVH);
        memcpy(pre, q, sizeof(float) * QW);
        memcpy(pre + QW, k, sizeof(float) * KW);
        if (m->arch.qk_all) {       /* one norm over q, one over k */
            accel_cpu_rmsnorm_forward(q, rstd, pre, qn, 1, (int)QW, m->eps);
            accel_cpu_rmsnorm_forward(k, rstd + 1, pre + QW, kn, 1, (int)KW, m->eps);
            continue;
        }
        accel_cpu_rmsnorm_forward(q, rstd, pre, qn, (size_t)m->NH, m->hs, m->eps);
        accel_cpu_rmsnorm_forward(k, rstd + m->NH, pre + QW, kn, (size_t)m->KVH, m->hs, m->eps);
    }
}

/* Backward of qk_norm_forward over B T rows: d(q|k after the norm) in d3c becomes d(q|k before
 * it); the norms' weight gradients are added to dqn, dkn. */
static void qk_norm_backward(gpt_t *m, const gpt_acts_t *a, const float *qn, const float *kn,
                             float *dqn, float *dkn, size_t rows)
{
    const size_t QW = (size_t)m->QW, QKN = (size_t)m->QKN, QKV = (size_t)m->QKV;
    qn = qn ? norm_weights(m, qn, m->arch.qk_all ? QW : (size_t)m->hs, 1) : m->unit;
    kn = kn ? norm_weights(m, kn, m->arch.qk_all ? QKN - QW : (size_t)m->hs, 2) : m->unit;
    for (size_t r = 0; r < rows; r++) {
        float *d = m->d3c + r * QKV;        /* q heads, then k heads: QKN values */
        const float *pre = a->qkn + r * QKN, *rstd = a->qkn_rstd + r * (size_t)(m->NH + m->KVH);
        memset(m->dqk, 0, sizeof(float) * QKN);
        if (m->arch.qk_all) {
            accel_cpu_rmsnorm_backward(m->dqk, dqn, d, pre, rstd, qn, 1, (int)QW);
            accel_cpu_rmsnorm_backward(m->dqk + QW, dkn, d + QW, pre + QW, rstd + 1, kn, 1, (int)(QKN - QW));
        } else {
            accel_cpu_rmsnorm_backward(m->dqk, dqn, d, pre, rstd, qn, (size_t)m->NH, m->hs);
            accel_cpu_rmsnorm_backward(m->dqk + QW, dkn, d + QW, pre + QW, rstd + m->NH, kn,
                                       (size_t)m->KVH, m->hs);
        }
        memcpy(d, m->dqk, sizeof(float) * QKN);
    }
}

/* y += x over n floats: a residual joins its sublayer's output, or its gradient the one through
 * the sublayer. */
static void add_to(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* post_norm: y = res + r norm(x) for R rows of x (the sublayer's output, kept for the backward
 * pass) with the norm's weights w, its 1/rms into rstd; r model.residual_multiplier. */
static void post_norm_add(const gpt_t *m, float *y, float *rstd, const float *x, const float *w,
                          const float *res, size_t R)
{
    accel_cpu_rmsnorm_forward(y, rstd, x, norm_weights(m, w, (size_t)m->C, 0), R, m->C, m->eps);
    const float r = m->res_mult;        /* model.residual_multiplier (HyperCLOVA X: after its norms) */
    if (r != 1.0f)
        for (size_t i = 0; i < R * (size_t)m->C; i++) y[i] = r * y[i] + res[i];
    else add_to(y, res, R * (size_t)m->C);
}

/* Multi-head latent attention (DeepSeek-V2/V3), as the one attention kernel takes it: each head
 * hs = rd + dn wide, its RoPE part first (model.rope_dim turns it), every head its own key and
 * value (KVH = NH), values stored hs wide and zero past dv. The latents' norms use DeepSeek's
 * fixed epsilon. */
#define MLA_EPS 1e-6f

typedef struct {                    /* a->mla's arrays for `rows` rows */
    float *qa_in, *qa, *qa_rstd;    /* [rows, Rq] the queries' latent, normed, [rows] its 1/rms */
    float *kv_in, *kv, *kv_rstd;    /* [rows, Rkv] the keys' and values' latent alike */
} mla_acts_t;

static mla_acts_t mla_acts(const gpt_t *m, float *base, size_t rows)
{
    mla_acts_t v;
    v.qa_in = base;
    v.qa = v.qa_in + rows * (size_t)m->Rq;
    v.qa_rstd = v.qa + rows * (size_t)m->Rq;
    v.kv_in = v.qa_rstd + rows;
    v.kv = v.kv_in + rows * (size_t)m->Rkv;
    v.kv_rstd = v.kv + rows * (size_t)m->Rkv;
    return v;
}

/* Rows p0.. of q (x->q) and of the heads' keys and values (x->kv) from `in` [R, C] (norm1's output):
 *   q = q_b(norm(q_a in)) (or q in), per head [RoPE part | the rest];
 *   [latent | RoPE key] = kv_a in; e = kv_b norm(latent), per head [key's rest (dn) | value (dv)];
 *   each head's key = [RoPE key | its dn], value = [its dv | 0]. `rows` is the a->mla arrays' row
 * count; the expansion goes through the scratch (fw->mla). */
static accel_status_t mla_forward(gpt_t *m, const accel_layout_t *layout, const float *params,
                                  const gpt_block_t *k, gpt_acts_t *a, const gpt_fwd_t *fw, const float *in,
                                  const qkv_view_t *x, size_t rows, size_t R, int p0)
{
    const int C = m->C, NH = m->NH, hs = m->hs, rd = m->rd, dn = hs - rd, dv = m->dv;
    const int Rq = m->Rq, Rkv = m->Rkv, KVB = dn + dv, QH = NH * hs;
    const mla_acts_t v = mla_acts(m, a->mla, rows);
    float *q = x->q + (size_t)p0 * x->ldq;
    if (Rq) {
        float *qi = v.qa_in + (size_t)p0 * Rq, *qa = v.qa + (size_t)p0 * Rq;
        GEMM(false, true, (int)R, Rq, C, 1.0f, in, C, PARAM(k->qaw), C, 0.0f, qi, Rq);
        accel_cpu_rmsnorm_forward(qa, v.qa_rstd + p0, qi, PARAM(k->qanw), R, Rq, MLA_EPS);
        GEMM(false, true, (int)R, QH, Rq, 1.0f, qa, Rq, PARAM(k->qbw), Rq, 0.0f, q, (int)x->ldq);
    } else {
        GEMM(false, true, (int)R, QH, C, 1.0f, in, C, PARAM(k->qbw), C, 0.0f, q, (int)x->ldq);
    }
    float *ki = v.kv_in + (size_t)p0 * Rkv, *lat = v.kv + (size_t)p0 * Rkv;
    float *e = fw->mla, *kpe = e + R * (size_t)NH * KVB;        /* [R, NH KVB], [R, rd] */
    GEMM(false, true, (int)R, Rkv, C, 1.0f, in, C, PARAM(k->kvaw), C, 0.0f, ki, Rkv);
    GEMM(false, true, (int)R, rd, C, 1.0f, in, C, PARAM(k->kvaw) + (size_t)Rkv * C, C, 0.0f, kpe, rd);
    accel_cpu_rmsnorm_forward(lat, v.kv_rstd + p0, ki, PARAM(k->kvanw), R, Rkv, MLA_EPS);
    GEMM(false, true, (int)R, NH * KVB, Rkv, 1.0f, lat, Rkv, PARAM(k->kvbw), Rkv, 0.0f, e, NH * KVB);
    for (size_t r = 0; r < R; r++) {
        float *kr = x->kv + ((size_t)p0 + r) * x->ldkv, *vr = kr + (size_t)NH * hs;
        const float *er = e + r * (size_t)NH * KVB;
        for (int h = 0; h < NH; h++) {
            memcpy(kr + (size_t)h * hs, kpe + r * (size_t)rd, sizeof(float) * (size_t)rd);
            memcpy(kr + (size_t)h * hs + rd, er + (size_t)h * KVB, sizeof(float) * (size_t)dn);
            memcpy(vr + (size_t)h * hs, er + (size_t)h * KVB + dn, sizeof(float) * (size_t)dv);
            memset(vr + (size_t)h * hs + dv, 0, sizeof(float) * (size_t)(hs - dv));
        }
    }
    return ACCEL_OK;
}

/* The heads' outputs [R, QW] (each hs wide, zero past dv) as the projection's input [R, NH dv]
 * (expand: back, for its gradient, zeros past dv). */
static void mla_values(const gpt_t *m, float *compact, const float *heads, size_t R, bool expand)
{
    const size_t NH = (size_t)m->NH, hs = (size_t)m->hs, dv = (size_t)m->dv;
    float *wide = (float *)heads;
    for (size_t r = 0; r < R; r++)
        for (size_t h = 0; h < NH; h++) {
            float *c = compact + (r * NH + h) * dv, *w = wide + r * NH * hs + h * hs;
            if (!expand) { memcpy(c, w, sizeof(float) * dv); continue; }
            memcpy(w, c, sizeof(float) * dv);
            memset(w + dv, 0, sizeof(float) * (hs - dv));
        }
}

/* Backward of mla_forward over BT rows: d(q|k|v) in m->d3c (RoPE undone) into the weights'
 * gradients and d(in) into m->dc [BT, C] (overwritten). The RoPE key's gradient is the sum of
 * the heads'. */
static accel_status_t mla_backward(gpt_t *m, const accel_layout_t *layout, const float *params, float *grads,
                                   const gpt_block_t *k, const gpt_acts_t *a, const float *in, size_t BT)
{
    const int C = m->C, NH = m->NH, hs = m->hs, rd = m->rd, dn = hs - rd, dv = m->dv, QKV = m->QKV;
    const int Rq = m->Rq, Rkv = m->Rkv, KVB = dn + dv, QH = NH * hs, bt = (int)BT;
    const mla_acts_t v = mla_acts(m, a->mla, BT);
    const float *dq = m->d3c, *dk = m->d3c + QH, *dval = dk + QH;
    float *de = m->dmla, *dlat = de + BT * (size_t)NH * KVB, *dki = dlat + BT * (size_t)Rkv;
    float *dkpe = dki + BT * (size_t)Rkv, *dqa = dkpe + BT * (size_t)rd, *dqi = dqa + BT * (size_t)Rq;
    for (size_t r = 0; r < BT; r++) {
        const float *kr = dk + r * (size_t)QKV, *vr = dval + r * (size_t)QKV;
        float *er = de + r * (size_t)NH * KVB, *pr = dkpe + r * (size_t)rd;
        memset(pr, 0, sizeof(float) * (size_t)rd);
        for (int h = 0; h < NH; h++) {
            for (int i = 0; i < rd; i++) pr[i] += kr[(size_t)h * hs + i];
            memcpy(er + (size_t)h * KVB, kr + (size_t)h * hs + rd, sizeof(float) * (size_t)dn);
            memcpy(er + (size_t)h * KVB + dn, vr + (size_t)h * hs, sizeof(float) * (size_t)dv);
        }
    }
    if (!FROZEN(k->kvbw)) GEMM(true, false, NH * KVB, Rkv, bt, 1.0f, de, NH * KVB, v.kv, Rkv, 1.0f, GRAD(k->kvbw), Rkv);
    GEMM(false, false, bt, Rkv, NH * KVB, 1.0f, de, NH * KVB, PARAM(k->kvbw), Rkv, 0.0f, dlat, Rkv);
    memset(dki, 0, sizeof(float) * BT * (size_t)Rkv);
    accel_cpu_rmsnorm_backward(dki, GRAD(k->kvanw), dlat, v.kv_in, v.kv_rstd, PARAM(k->kvanw), BT, Rkv);
    if (!FROZEN(k->kvaw)) {
        GEMM(true, false, Rkv, C, bt, 1.0f, dki, Rkv, in, C, 1.0f, GRAD(k->kvaw), C);
        GEMM(true, false, rd, C, bt, 1.0f, dkpe, rd, in, C, 1.0f, GRAD(k->kvaw) + (size_t)Rkv * C, C);
    }
    GEMM(false, false, bt, C, Rkv, 1.0f, dki, Rkv, PARAM(k->kvaw), C, 0.0f, m->dc, C);
    GEMM(false, false, bt, C, rd, 1.0f, dkpe, rd, PARAM(k->kvaw) + (size_t)Rkv * C, C, 1.0f, m->dc, C);
    if (!Rq) {
        if (!FROZEN(k->qbw)) GEMM(true, false, QH, C, bt, 1.0f, dq, QKV, in, C, 1.0f, GRAD(k->qbw), C);
        GEMM(false, false, bt, C, QH, 1.0f, dq, QKV, PARAM(k->qbw), C, 1.0f, m->dc, C);
        return ACCEL_OK;
    }
    if (!FROZEN(k->qbw)) GEMM(true, false, QH, Rq, bt, 1.0f, dq, QKV, v.qa, Rq, 1.0f, GRAD(k->qbw), Rq);
    GEMM(false, false, bt, Rq, QH, 1.0f, dq, QKV, PARAM(k->qbw), Rq, 0.0f, dqa, Rq);
    memset(dqi, 0, sizeof(float) * BT * (size_t)Rq);
    accel_cpu_rmsnorm_backward(dqi, GRAD(k->qanw), dqa, v.qa_in, v.qa_rstd, PARAM(k->qanw), BT, Rq);
    if (!FROZEN(k->qaw)) GEMM(true, false, Rq, C, bt, 1.0f, dqi, Rq, in, C, 1.0f, GRAD(k->qaw), C);
    GEMM(false, false, bt, C, Rq, 1.0f, dqi, Rq, PARAM(k->qaw), C, 1.0f, m->dc, C);
    return ACCEL_OK;
}

static accel_gdn_weights_t lin_weights(const gpt_block_t *k, const accel_layout_t *layout, const float *params)
{
    return (accel_gdn_weights_t){ PARAM(k->convw), PARAM(k->dtb), PARAM(k->alog), PARAM(k->lnw) };
}

static accel_mamba2_weights_t mamba_weights(const gpt_block_t *k, const accel_layout_t *layout, const float *params)
{
    return (accel_mamba2_weights_t){ PARAM(k->convw), PARAM_OPT(k->convb), PARAM(k->dtb), PARAM(k->alog),
                                     PARAM(k->skipd), PARAM(k->lnw) };
}

static accel_mamba1_weights_t mamba1_weights(const gpt_block_t *k, const accel_layout_t *layout, const float *params)
{
    return (accel_mamba1_weights_t){ PARAM(k->convw), PARAM_OPT(k->convb), PARAM(k->xprojw), PARAM_OPT(k->dtnw),
                                     PARAM_OPT(k->bnw), PARAM_OPT(k->cnw), PARAM(k->dtprojw), PARAM(k->dtb),
                                     PARAM(k->alog), PARAM(k->skipd) };
}

static accel_gdn_acts_t lin_acts(const gpt_t *m, const gpt_acts_t *a, size_t rows)
{
    accel_gdn_acts_t v;
    accel_gdn_carve(&m->lin, &v, a->lin, rows);
    return v;
}

/* Block l's recurrent half (a gated delta-net or a short convolution) for the rows from p0: norm1,
 * the input projection into a->qkv, the token mixer (gated_delta.c, short_conv.c) into a->atty,
 * and res2 = res + its output projected (sandwich: res2 = res + post_norm1(that)). Inference (one sequence) continues from the layer's cache
 * in fw->kv[l] (a delta-net's heads' states, the convolution's last inputs), as attention from its
 * keys and values. */
static accel_status_t block_linear(gpt_t *m, const gpt_fwd_t *fw, const accel_layout_t *layout,
                                   const float *params, int l, gpt_acts_t *a, const float *res, int B, int T,
                                   int p0)
{
    const int C = m->C, LP = m->LP, LO = m->LO;
    const size_t R = (size_t)B * T - (size_t)p0, o = (size_t)p0 * C;
    const gpt_block_t *k = &m->blk[l];
    norm_forward(m, a->ln1 + o, a->ln1_mean + p0, a->ln1_rstd + p0, res + o, PARAM(k->ln1w), PARAM_OPT(k->ln1b), R);
    GEMM(false, true, (int)R, LP, C, 1.0f, a->ln1 + o, C, PARAM(k->linw), C, 0.0f, a->qkv + (size_t)p0 * LP, LP);
    if (layer_mamba1(m, l)) {
        accel_mamba1_weights_t w = mamba1_weights(k, layout, params);
        accel_mamba1_acts_t ma;
        accel_mamba1_carve(&m->mamba1, &ma, a->lin, (size_t)B * T);
        if (fw->kv)
            ACCEL_CHECK(accel_mamba1_extend(&m->gemm, &m->mamba1, &w, a->qkv, (size_t)LP, p0, T, fw->kv[l], &ma,
                                            a->atty, fw->lin));
        else ACCEL_CHECK(accel_mamba1_forward(&m->gemm, &m->mamba1, &w, a->qkv, (size_t)LP, B, T, m->pos, &ma, a->atty,
                                              fw->lin));
    } else if (layer_mamba(m, l)) {
        accel_mamba2_weights_t w = mamba_weights(k, layout, params);
        accel_mamba2_acts_t ma;
        accel_mamba2_carve(&m->mamba, &ma, a->lin, (size_t)B * T);
        if (fw->kv) accel_mamba2_extend(&m->mamba, &w, a->qkv, (size_t)LP, p0, T, fw->kv[l], &ma, a->atty, fw->lin);
        else accel_mamba2_forward(&m->mamba, &w, a->qkv, (size_t)LP, B, T, m->pos, &ma, a->atty, fw->lin);
    } else if (layer_conv(m, l)) {
        if (fw->kv) accel_sconv_extend(&m->sconv, PARAM(k->convw), a->qkv, (size_t)LP, p0, T, fw->kv[l], a->lin,
                                       a->atty, fw->lin);
        else accel_sconv_forward(&m->sconv, PARAM(k->convw), a->qkv, (size_t)LP, B, T, m->pos, a->lin, a->atty,
                                 fw->lin);
    } else {
        accel_gdn_weights_t w = lin_weights(k, layout, params);
        accel_gdn_acts_t ga = lin_acts(m, a, (size_t)B * T);
        if (fw->kv) accel_gdn_extend(&m->lin, &w, a->qkv, (size_t)LP, p0, T, fw->kv[l], &ga, a->atty, fw->lin);
        else accel_gdn_forward(&m->lin, &w, a->qkv, (size_t)LP, B, T, m->pos, &ga, a->atty, fw->lin);
    }
    if (m->arch.sandwich) {             /* res2 = res + post_norm1(its output projected) */
        GEMM(false, true, (int)R, C, LO, 1.0f, a->atty + (size_t)p0 * LO, LO, PARAM(k->projw), LO, 0.0f,
             a->pn1 + o, C);
        post_norm_add(m, a->res2 + o, a->pn1_rstd + p0, a->pn1 + o, PARAM(k->pn1w), res + o, R);
        return ACCEL_OK;
    }
    start_rows(a->res2 + o, NULL, res + o, R, C);
    GEMM(false, true, (int)R, C, LO, m->res_mult, a->atty + (size_t)p0 * LO, LO, PARAM(k->projw), LO, 1.0f,
         a->res2 + o, C);
    return ACCEL_OK;
}

/* A block's missing half: its output rows from p0 are its input's (in training the same array,
 * reserve's doing; the inference set, shared by every block, copies them). */
static accel_status_t pass_through(const gpt_t *m, float *out, const float *in, size_t BT, int p0)
{
    const size_t o = (size_t)p0 * m->C;
    if (out != in) memcpy(out + o, in + o, sizeof(float) * (BT * m->C - o));
    return ACCEL_OK;
}

/* The gate (of a row's GW) of attention output value i (of the rows' QW): its own, or its head's. */
static inline size_t gate_index(const gpt_t *m, size_t i)
{
    if (!m->arch.head_gate) return i;
    const size_t QW = (size_t)m->QW;
    return i / QW * (size_t)m->NH + i % QW / (size_t)m->hs;
}

/* Block l's attention half for the rows from p0 (R = B T - p0): norm1, the q|k|v rows (rotated),
 * attention, and res2 = res + bias + the attention output projected (post_norm: no norm1 before,
 * res2 = res + norm1(the projected output); sandwich: norm1 before and res2 = res +
 * post_norm1(the projected output)). */
static accel_status_t block_attention(gpt_t *m, const gpt_fwd_t *fw, const accel_layout_t *layout,
                                      const float *params, int l, gpt_acts_t *a, const float *res,
                                      int B, int T, int p0)
{
    if (!layer_mixes(m, l)) return pass_through(m, a->res2, res, (size_t)B * T, p0);
    if (layer_recurrent(m, l)) return block_linear(m, fw, layout, params, l, a, res, B, T, p0);
    const int C = m->C, QKV = m->QKV;
    const size_t R = (size_t)B * T - (size_t)p0, o = (size_t)p0 * C;
    const gpt_block_t *k = &m->blk[l];
    const bool post = layer_post(m, l);
    if (!post)
        norm_forward(m, a->ln1 + o, a->ln1_mean + p0, a->ln1_rstd + p0, res + o, PARAM(k->ln1w),
                     PARAM_OPT(k->ln1b), R);
    const float *in = post ? res + o : a->ln1 + o;  /* what q, k and v are made from */
    qkv_view_t x = qkv_rows(m, a->qkv);
    if (fw->kv) x = (qkv_view_t){ a->qkv, fw->kv[l], (size_t)m->QW, (size_t)(QKV - m->QW) };
    if (m->mla) {                                   /* from the latents */
        ACCEL_CHECK(mla_forward(m, layout, params, k, a, fw, in, &x, fw->kv ? (size_t)m->T : (size_t)B * T, R, p0));
    } else if (!fw->kv) {                           /* one product: the q|k|v rows */
        float *qkv = a->qkv + (size_t)p0 * QKV;
        start_rows(qkv, PARAM_OPT(k->qkvb), NULL, R, QKV);
        GEMM(false, true, (int)R, QKV, C, 1.0f, in, C, PARAM(k->qkvw), C, 1.0f, qkv, QKV);
    } else {                                        /* q rows to the scratch, k|v to the cache */
        const int QW = m->NH * m->hs, KVW = QKV - QW;
        const float *bias = PARAM_OPT(k->qkvb);
        float *q = x.q + (size_t)p0 * QW, *kv = x.kv + (size_t)p0 * KVW;
        start_rows(q, bias, NULL, R, QW);
        start_rows(kv, bias ? bias + QW : NULL, NULL, R, KVW);
        GEMM(false, true, (int)R, QW, C, 1.0f, in, C, PARAM(k->qkvw), C, 1.0f, q, QW);
        GEMM(false, true, (int)R, KVW, C, 1.0f, in, C, PARAM(k->qkvw) + (size_t)QW * C,
             C, 1.0f, kv, KVW);
    }
    if (m->arch.gate)                               /* the gate's rows, before their sigmoid */
        GEMM(false, true, (int)R, m->GW, C, 1.0f, in, C, PARAM(k->qkvw) + (size_t)QKV * C, C, 0.0f,
             a->gate + (size_t)p0 * m->GW, m->GW);
    const bool qk = layer_qk_norm(m, l);
    if (qk && !m->arch.qk_after) qk_norm_forward(m, &x, a, PARAM_OPT(k->qnw), PARAM_OPT(k->knw), R, p0);
    if (m->arch.rope) rope(m, l, &x, R, T, p0, 0);
    if (qk && m->arch.qk_after) qk_norm_forward(m, &x, a, PARAM_OPT(k->qnw), PARAM_OPT(k->knw), R, p0);
    scale_queries(m, l, &x, R, T, p0);
    ACCEL_CHECK(attention_forward(m, a, fw, &x, B, T, p0, layer_window(m, l), PARAM_OPT(k->sinks)));
    const int PW = m->PW;           /* the projection's input: the heads' outputs (MLA: compacted) */
    const float *att = a->atty + (size_t)p0 * m->QW;
    if (m->mla) {
        mla_values(m, fw->mla, att, R, false);
        att = fw->mla;
    }
    if (m->arch.gate) {                             /* atto = atty sigmoid(gate), value by value or by head */
        const size_t off = (size_t)p0 * m->QW, n = R * (size_t)m->QW;
        const float *g = a->gate + (size_t)p0 * m->GW;
        for (size_t i = 0; i < n; i++) a->atto[off + i] = att[i] / (1.0f + expf(-g[gate_index(m, i)]));
        att = a->atto + off;
    }
    if (post || m->arch.sandwich) {                 /* res2 = res + norm(proj) */
        float *y = post ? a->ln1 : a->pn1, *rstd = post ? a->ln1_rstd : a->pn1_rstd;
        start_rows(y + o, PARAM_OPT(k->projb), NULL, R, C);
        GEMM(false, true, (int)R, C, PW, 1.0f, att, PW, PARAM(k->projw), PW, 1.0f, y + o, C);
        post_norm_add(m, a->res2 + o, rstd + p0, y + o, PARAM(post ? k->ln1w : k->pn1w), res + o, R);
        return ACCEL_OK;
    }
    start_rows(a->res2 + o, PARAM_OPT(k->projb), res + o, R, C);      /* residual + bias + proj */
    GEMM(false, true, (int)R, C, PW, m->res_mult, att, PW, PARAM(k->projw), PW, 1.0f, a->res2 + o, C);
    return ACCEL_OK;
}

/* The experts' view of a block's stored activations, for rows from p0 (the per-row arrays start
 * at row p0, the assignments of those rows at 0). */
static accel_moe_acts_t moe_acts(const gpt_t *m, const gpt_acts_t *a, int p0)
{
    const size_t E = (size_t)m->moe.E, K = (size_t)m->moe.K;
    int32_t *starts = (int32_t *)a->order;          /* [E + 1], then the assignments */
    const size_t S = (size_t)m->moe.S, C = (size_t)m->C;
    const size_t Lat = (size_t)m->moe.latent;
    accel_moe_acts_t v = { .probs = a->probs + (size_t)p0 * E, .weight = a->topw + (size_t)p0 * K,
                           .expert = (int32_t *)a->topi + (size_t)p0 * K, .order = starts + E + 1, .start = starts,
                           .xs = a->moe_x, .h = a->fch, .hid = a->fch_gelu, .ys = a->moe_y };
    if (Lat) {
        v.xl = a->xl + (size_t)p0 * Lat;
        v.yl = a->yl + (size_t)p0 * Lat;
    }
    if (S) {
        v.sh = a->sh + (size_t)p0 * accel_moe_shared_in_width(&m->moe);
        v.shid = a->shid + (size_t)p0 * S;
        v.sy = a->sy + (size_t)p0 * C;
        v.sg = a->sg + p0;
    }
    return v;
}

static accel_moe_weights_t moe_weights(const gpt_block_t *k, const accel_layout_t *layout,
                                       const float *params)
{
    return (accel_moe_weights_t){ PARAM(k->routerw), PARAM(k->fcw), PARAM(k->fcpw), PARAM_OPT(k->sgu),
                                  PARAM_OPT(k->sdown), PARAM_OPT(k->sgate), PARAM_OPT(k->routerb),
                                  PARAM_OPT(k->fcb_e), PARAM_OPT(k->fcpb_e), PARAM_OPT(k->selectb),
                                  PARAM_OPT(k->latin), PARAM_OPT(k->latout) };
}

/* Block l's MLP half for rows p0..BT-1: norm2, the first product and the hidden activation, and
 * with `output` res3 = res2 + bias + the second product (its backward pass needs no res3, so a
 * recompute skips that product; the experts' backward needs their outputs, so they always run).
 * post_norm: the MLP reads res2 itself, its output goes to ln2 (always: norm2's backward reads
 * it), and res3 = res2 + norm2(that) (without `output`, into the dpost scratch); sandwich: it
 * reads norm2(res2), its output goes to pn2 and res3 = res2 + post_norm2(that) alike;
 * model.parallel_block: it reads norm2(res_in), the block's input (two_norms), or attention's
 * ln1 (one_norm), and res3 = res2 + its output as before. */
static accel_status_t block_mlp(gpt_t *m, const accel_layout_t *layout, const float *params, int l,
                                gpt_acts_t *a, const float *res_in, size_t BT, int p0, bool output)
{
    const int C = m->C, F = m->F, FIN = m->FIN;
    const size_t R = BT - (size_t)p0, o = (size_t)p0 * C;
    const gpt_block_t *k = &m->blk[l];
    const bool post = layer_post(m, l), one_norm = m->arch.parallel == PARALLEL_ONE_NORM;
    if (!layer_has_mlp(m, l)) return output ? pass_through(m, a->res3, a->res2, BT, p0) : ACCEL_OK;
    if (!post && !one_norm)             /* norm2 of res2, or beside attention of the block's input */
        norm_forward(m, a->ln2 + o, a->ln2_mean + p0, a->ln2_rstd + p0, (m->arch.parallel ? res_in : a->res2) + o,
                     PARAM(k->ln2w), PARAM_OPT(k->ln2b), R);
    const float *in = post ? a->res2 + o : one_norm ? a->ln1 + o : a->ln2 + o;
    float *post_out = output ? a->res3 + o : m->dpost;
    if (layer_moe(m, l)) {
        accel_moe_acts_t ma = moe_acts(m, a, p0);
        accel_moe_weights_t w = moe_weights(k, layout, params);
        float *y = post ? a->ln2 + o : output ? a->res3 + o : NULL;
        ACCEL_CHECK(accel_moe_forward(&m->gemm, &m->moe, &w, &ma, in, R, y));
        if (post) post_norm_add(m, post_out, a->ln2_rstd + p0, y, PARAM(k->ln2w), a->res2 + o, R);
        else for (size_t i = 0; y && i < R * (size_t)C; i++) y[i] = m->res_mult * y[i] + a->res2[o + i];  /* + residual */
        return ACCEL_OK;
    }
    float *fch = a->fch + (size_t)p0 * FIN, *hid = a->fch_gelu + (size_t)p0 * F;
    GEMM(false, true, (int)R, FIN, C, 1.0f, in, C, PARAM(k->fcw), C, 0.0f, fch, FIN);
    if (m->arch.swiglu) accel_cpu_glu_forward(&m->glu, hid, fch, R, F);
    else if (m->xielu) accel_cpu_xielu_forward(&(accel_xielu_t)XIELU_OF(k), fch, hid, PARAM_OPT(k->fcb), R, F);
    else accel_cpu_bias_act_forward(m->plain_act, fch, hid, PARAM_OPT(k->fcb), R, F);
    if (post || m->arch.sandwich) {                 /* res3 = res2 + norm(down(hid)) */
        float *y = post ? a->ln2 : a->pn2, *rstd = post ? a->ln2_rstd : a->pn2_rstd;
        GEMM(false, true, (int)R, C, F, 1.0f, hid, F, PARAM(k->fcpw), F, 0.0f, y + o, C);
        post_norm_add(m, post_out, rstd + p0, y + o, PARAM(post ? k->ln2w : k->pn2w), a->res2 + o, R);
        return ACCEL_OK;
    }
    if (!output) return ACCEL_OK;
    start_rows(a->res3 + o, PARAM_OPT(k->fcpb), a->res2 + o, R, C);
    GEMM(false, true, (int)R, C, F, m->res_mult, hid, F, PARAM(k->fcpw), F, 1.0f, a->res3 + o, C);
    return ACCEL_OK;
}

/* Forward through the final norm for B rows of T input tokens (row stride `stride`); with p0 > 0
 * (inference, B = 1) only positions p0..T-1 are computed: the keys and values before them are the
 * cache's, and only rows p0.. of the other buffers are written. */
static accel_status_t forward(gpt_t *m, const gpt_fwd_t *fw, const accel_layout_t *layout,
                              const float *params, const int32_t *tokens, int stride, int B, int T,
                              int p0, const accel_batch_t *hb)
{
    const int C = m->C;
    const size_t BT = (size_t)B * T, R = BT - (size_t)p0;    /* rows computed, from row p0 */
    const size_t o = (size_t)p0 * C;                         /* ... at this offset in [., C] */
    accel_batch_layer_fetch(hb, 0, 0);              /* embeddings: layer 0 */
    const float *wte = PARAM(m->wte), *wpe = PARAM_OPT(m->wpe);
    for (int b = 0; b < B; b++)
        for (int t = p0; t < T; t++) {
            const float *e = wte + (size_t)tokens[(size_t)b * stride + t] * C;
            float *x = fw->x0 + ((size_t)b * T + t) * C;
            if (wpe) {
                const float *p = wpe + (size_t)(m->pos ? m->pos[(size_t)b * T + t] : t) * C;
                for (int c = 0; c < C; c++) x[c] = e[c] + p[c];
            } else if (m->embed_scale != 1.0f) {
                for (int c = 0; c < C; c++) x[c] = e[c] * m->embed_scale;
            } else {
                memcpy(x, e, sizeof(float) * (size_t)C);
            }
        }
    accel_batch_layer_release(hb, 0);
    const bool aux = m->aux_coef > 0 && fw->act_step == 1;      /* training's load balancing */
    if (aux) memset(m->aux_count, 0, sizeof(double) * 2 * (size_t)m->moe.E);   /* and aux_psum */
    const float *res = fw->x0;
    for (int l = 0; l < m->L; l++) {
        gpt_acts_t *a = &fw->act[l * fw->act_step];
        accel_batch_layer_fetch(hb, l + 1, 0);      /* block l: layer l+1 */
        ACCEL_CHECK(block_attention(m, fw, layout, params, l, a, res, B, T, p0));
        ACCEL_CHECK(block_mlp(m, layout, params, l, a, res, BT, p0, true));
        if (aux && layer_moe(m, l)) {
            accel_moe_acts_t ma = moe_acts(m, a, 0);
            accel_moe_route_stats(&m->moe, &ma, BT, m->aux_count, m->aux_psum);
        }
        accel_batch_layer_release(hb, l + 1);
        res = a->res3;
    }
    accel_batch_layer_fetch(hb, m->L + 1, 0);       /* final norm: layer L+1 */
    norm_forward(m, fw->lnf + o, fw->lnf_mean + p0, fw->lnf_rstd + p0, res + o, PARAM(m->lnfw),
                 PARAM_OPT(m->lnfb), R);
    accel_batch_layer_release(hb, m->L + 1);
    return ACCEL_OK;
}

/* The training buffers: every block's activations are kept for the backward pass. */
static gpt_fwd_t train_fwd(gpt_t *m)
{
    return (gpt_fwd_t){ m->act, 1, NULL, m->x0, m->lnf, m->lnf_mean, m->lnf_rstd, m->pr, m->kt, m->dmla, m->dlin };
}

/* LM head and cross-entropy: per-sample loss (trained targets' token losses over T: the mean
 * token loss without a mask) into loss[B] (may be NULL), their sum through *sum. When dscale != 0
 * the logits are replaced by dscale * d(sum of per-sample losses)/d(logits): 0 for a target the
 * batch's loss mask leaves out. Leaves the head's layer fetched (the backward pass starts with it;
 * the caller releases it otherwise). */
static accel_status_t head_loss(gpt_t *m, const accel_layout_t *layout, const float *params,
                                const int32_t *tokens, int stride, int B, int T, float *loss,
                                float dscale, double *sum, const accel_batch_t *hb)
{
    const int C = m->C, V = m->V;
    const size_t BT = (size_t)B * T;
    accel_batch_layer_fetch(hb, head_layer(m), 1);
    const bool biased = m->headb >= 0;         /* model.head_bias: the product adds to it */
    if (biased) start_rows(m->logits, PARAM(m->headb), NULL, BT, V);
    GEMM(false, true, (int)BT, V, C, 1.0f, m->lnf, C, PARAM(m->head), C, biased ? 1.0f : 0.0f, m->logits, V);
    const float g = dscale / (float)T;   /* each token counts 1/T of its sample's loss */
    const uint8_t *mask = hb ? hb->loss_mask : NULL;
    double total = 0;
    for (int b = 0; b < B; b++) {
        double acc = 0;
        for (int t = 0; t < T; t++) {
            float *z = m->logits + ((size_t)b * T + t) * V;
            if (mask && !mask[(size_t)b * stride + t + 1]) {    /* context: no loss, no gradient */
                if (dscale != 0.0f) memset(z, 0, sizeof *z * (size_t)V);
                continue;
            }
            int32_t y = tokens[(size_t)b * stride + t + 1];
            float *th = dscale != 0.0f ? m->capt : NULL;    /* tanh, for the cap's derivative */
            if (m->logits_div != 1.0f) for (int v = 0; v < V; v++) z[v] /= m->logits_div;
            if (m->logit_cap > 0) soft_cap(z, V, m->logit_cap, th);
            float zy = z[y];
            float lse = accel_cpu_softmax(z, z, V);
            acc += (double)lse - (double)zy;
            if (dscale != 0.0f) {
                for (int v = 0; v < V; v++) z[v] *= g;
                z[y] -= g;
                for (int v = 0; m->logit_cap > 0 && v < V; v++) z[v] *= 1.0f - th[v] * th[v];
                for (int v = 0; m->logits_div != 1.0f && v < V; v++) z[v] /= m->logits_div;
            }
        }
        acc /= T;
        if (loss) loss[b] = (float)acc;
        total += acc;
    }
    *sum = total;
    return ACCEL_OK;
}

/* d(a pre-norm sublayer's output): m->dres, or with model.residual_multiplier r (Granite) r m->dres
 * in the m->dpost scratch. */
static const float *sublayer_grad(gpt_t *m, size_t rows)
{
    if (m->res_mult == 1.0f) return m->dres;
    for (size_t i = 0; i < rows * (size_t)m->C; i++) m->dpost[i] = m->res_mult * m->dres[i];
    return m->dpost;
}

/* post_norm's norm backward: m->dres (d of y = res + r norm(x), r model.residual_multiplier) into
 * m->dpost = d(x), adding the weights' gradient to dw (x: the sublayer's output, kept by the forward
 * pass). r m->dres goes through m->dc, which the sublayer's backward writes only after. */
static void post_norm_backward(gpt_t *m, const float *x, const float *rstd, const float *w, float *dw,
                               size_t rows)
{
    const size_t n = rows * (size_t)m->C;
    const float *dout = m->dres;
    if (m->res_mult != 1.0f) {
        for (size_t i = 0; i < n; i++) m->dc[i] = m->res_mult * m->dres[i];
        dout = m->dc;
    }
    memset(m->dpost, 0, sizeof(float) * n);
    accel_cpu_rmsnorm_backward(m->dpost, dw, dout, x, rstd, norm_weights(m, w, (size_t)m->C, 0), rows, m->C);
}

/* Backward of the MLP of block l: dout (d of its output) into m->dc (d of its input `in`: ln2, or
 * with post_norm res2, with model.parallel_block=one_norm ln1). */
static accel_status_t mlp_backward(gpt_t *m, int l, const gpt_acts_t *a,
                                   const accel_layout_t *layout, const float *params, float *grads,
                                   const accel_batch_t *hb, int bt, const float *dout, const float *in)
{
    const int C = m->C, F = m->F, FIN = m->FIN;
    const gpt_block_t *k = &m->blk[l];
    if (layer_moe(m, l)) {
        accel_moe_acts_t ma = moe_acts(m, a, 0);
        accel_moe_weights_t w = moe_weights(k, layout, params);
        accel_moe_grads_t dw = { GRAD_UNLESS_FROZEN(k->routerw), GRAD_UNLESS_FROZEN(k->fcw),
                                 GRAD_UNLESS_FROZEN(k->fcpw), GRAD_UNLESS_FROZEN(k->sgu),
                                 GRAD_UNLESS_FROZEN(k->sdown), GRAD_OPT(k->sgate), GRAD_OPT(k->routerb),
                                 GRAD_OPT(k->fcb_e), GRAD_OPT(k->fcpb_e), GRAD_OPT(k->selectb),
                                 GRAD_UNLESS_FROZEN(k->latin), GRAD_UNLESS_FROZEN(k->latout) };
        ACCEL_CHECK(accel_moe_backward(&m->gemm, &m->moe, &w, &ma, in, (size_t)bt, dout,
                                       m->aux_coef > 0 ? m->aux_grad : NULL, m->dc, &dw, m->dmoe));
        accel_batch_progress(hb);
        return ACCEL_OK;
    }
    float *dhid = m->arch.swiglu ? m->dff : m->d4c;     /* d(hidden) [BT, F] */
    GEMM(false, false, bt, F, C, 1.0f, dout, C, PARAM(k->fcpw), F, 0.0f, dhid, F);
    if (!FROZEN(k->fcpw)) GEMM(true, false, C, F, bt, 1.0f, dout, C, a->fch_gelu, F, 1.0f, GRAD(k->fcpw), F);
    accel_batch_progress(hb);
    if (k->fcpb >= 0) accel_cpu_colsum_add(GRAD(k->fcpb), dout, (size_t)bt, C);
    if (m->arch.swiglu) accel_cpu_glu_backward(&m->glu, m->d4c, dhid, a->fch, (size_t)bt, F);
    else if (m->xielu)                  /* beta and eps keep no gradient: fixed, as transformers' buffers */
        accel_cpu_xielu_backward(&(accel_xielu_t)XIELU_OF(k), m->d4c, a->fch, GRAD_OPT(k->fcb), GRAD(k->xap),
                                 GRAD(k->xan), (size_t)bt, F);
    else accel_cpu_act_backward(m->d4c, a->fch, GRAD_OPT(k->fcb), (size_t)bt, F);
    GEMM(false, false, bt, C, FIN, 1.0f, m->d4c, FIN, PARAM(k->fcw), C, 0.0f, m->dc, C);
    if (!FROZEN(k->fcw)) GEMM(true, false, FIN, C, bt, 1.0f, m->d4c, FIN, in, C, 1.0f, GRAD(k->fcw), C);
    accel_batch_progress(hb);
    return ACCEL_OK;
}

/* Activation recompute: rebuild the pieces block l did not keep (kept_pieces) from its stored
 * input, with the products and loops of the forward pass in the same order on the same operands,
 * so the backward pass reads bitwise the values a run that kept everything reads (fp32 losses
 * match exactly). The MLP's second product is skipped: the block's output is kept. */
static accel_status_t recompute_block(gpt_t *m, const accel_layout_t *layout, const float *params,
                                      int l, gpt_acts_t *a, const float *res_in, int B, int T)
{
    if (m->recompute == ACCEL_RECOMPUTE_NONE) return ACCEL_OK;
    if (m->recompute == ACCEL_RECOMPUTE_BLOCK) {
        gpt_fwd_t fw = train_fwd(m);
        ACCEL_CHECK(block_attention(m, &fw, layout, params, l, a, res_in, B, T, 0));
    }
    return block_mlp(m, layout, params, l, a, res_in, (size_t)B * T, 0, false);
}

/* Back through block l's recurrent half (block_linear), from d(res2) (m->dres, with the
 * MLP's part added) into m->dres = d(res_in). */
static accel_status_t linear_backward(gpt_t *m, const accel_layout_t *layout, const float *params, float *grads,
                                      int l, const gpt_acts_t *a, const float *res_in, int B, int T,
                                      const accel_batch_t *hb)
{
    const int C = m->C, LP = m->LP, LO = m->LO, bt = B * T;
    const size_t BT = (size_t)bt;
    const gpt_block_t *k = &m->blk[l];
    if (m->arch.sandwich) post_norm_backward(m, a->pn1, a->pn1_rstd, PARAM(k->pn1w), GRAD(k->pn1w), BT);
    const float *dproj = m->arch.sandwich ? m->dpost : sublayer_grad(m, BT);
    GEMM(false, false, bt, LO, C, 1.0f, dproj, C, PARAM(k->projw), LO, 0.0f, m->dc, LO);
    if (!FROZEN(k->projw)) GEMM(true, false, C, LO, bt, 1.0f, dproj, C, a->atty, LO, 1.0f, GRAD(k->projw), LO);
    accel_batch_progress(hb);
    if (layer_mamba1(m, l)) {
        accel_mamba1_weights_t w = mamba1_weights(k, layout, params);
        accel_mamba1_grads_t g = { GRAD(k->convw), GRAD_OPT(k->convb), GRAD(k->xprojw), GRAD_OPT(k->dtnw),
                                   GRAD_OPT(k->bnw), GRAD_OPT(k->cnw), GRAD(k->dtprojw), GRAD(k->dtb), GRAD(k->alog),
                                   GRAD(k->skipd) };
        accel_mamba1_acts_t ma;
        accel_mamba1_carve(&m->mamba1, &ma, a->lin, BT);
        ACCEL_CHECK(accel_mamba1_backward(&m->gemm, &m->mamba1, &w, &g, a->qkv, (size_t)LP, B, T, m->pos, &ma, m->dc,
                                          m->d3c, m->dlin));
    } else if (layer_mamba(m, l)) {
        accel_mamba2_weights_t w = mamba_weights(k, layout, params);
        accel_mamba2_grads_t g = { GRAD(k->convw), GRAD_OPT(k->convb), GRAD(k->dtb), GRAD(k->alog), GRAD(k->skipd),
                                   GRAD(k->lnw) };
        accel_mamba2_acts_t ma;
        accel_mamba2_carve(&m->mamba, &ma, a->lin, BT);
        accel_mamba2_backward(&m->mamba, &w, &g, a->qkv, (size_t)LP, B, T, m->pos, &ma, m->dc, m->d3c, m->dlin);
    } else if (layer_conv(m, l)) {
        accel_sconv_backward(&m->sconv, PARAM(k->convw), GRAD(k->convw), a->qkv, (size_t)LP, B, T, m->pos, a->lin,
                             m->dc, m->d3c, m->dlin);
    } else {
        accel_gdn_weights_t w = lin_weights(k, layout, params);
        accel_gdn_grads_t g = { GRAD(k->convw), GRAD(k->dtb), GRAD(k->alog), GRAD(k->lnw) };
        accel_gdn_acts_t ga = lin_acts(m, a, BT);
        accel_gdn_backward(&m->lin, &w, &g, a->qkv, (size_t)LP, B, T, m->pos, &ga, m->dc, m->d3c, m->dlin);
    }
    GEMM(false, false, bt, C, LP, 1.0f, m->d3c, LP, PARAM(k->linw), C, 0.0f, m->dc, C);
    if (!FROZEN(k->linw)) GEMM(true, false, LP, C, bt, 1.0f, m->d3c, LP, a->ln1, C, 1.0f, GRAD(k->linw), C);
    accel_batch_progress(hb);
    norm_backward(m, m->dres, GRAD(k->ln1w), GRAD_OPT(k->ln1b), m->dc, res_in, a->ln1_mean, a->ln1_rstd,
                  PARAM(k->ln1w), BT);
    return ACCEL_OK;
}

static accel_status_t backward(gpt_t *m, const accel_layout_t *layout, const float *params,
                               float *grads, const int32_t *tokens, int stride, int B, int T,
                               const accel_batch_t *hb)
{
    const int C = m->C, V = m->V, QKV = m->QKV;
    const size_t BT = (size_t)B * T;
    const int bt = (int)BT;
    /* LM head: dlnf = dlogits W, dW += dlogits^T lnf (W = wte when tied). */
    GEMM(false, false, bt, C, V, 1.0f, m->logits, V, PARAM(m->head), C, 0.0f, m->dc, C);
    if (!FROZEN(m->head)) GEMM(true, false, V, C, bt, 1.0f, m->logits, V, m->lnf, C, 1.0f, GRAD(m->head), C);
    if (m->headb >= 0) accel_cpu_colsum_add(GRAD(m->headb), m->logits, BT, V);
    if (m->arch.tied) {                             /* wte's layer, then the final norm's */
        accel_batch_layer_release(hb, 0);
        accel_batch_layer_fetch(hb, m->L + 1, 1);
    }
    memset(m->dres, 0, sizeof(float) * BT * C);
    const float *last = m->L ? m->act[m->L - 1].res3 : m->x0;
    norm_backward(m, m->dres, GRAD(m->lnfw), GRAD_OPT(m->lnfb), m->dc, last, m->lnf_mean,
                  m->lnf_rstd, PARAM(m->lnfw), BT);
    accel_batch_layer_release(hb, m->L + 1);
    accel_batch_layer_done(hb, m->L + 1);
    /* m->dres carries d(loss)/d(residual) down through the blocks; accel_batch_progress after each
     * weight product keeps the reductions of the blocks already done moving. */
    for (int l = m->L - 1; l >= 0; l--) {
        const gpt_block_t *k = &m->blk[l];
        gpt_acts_t *a = &m->act[l];
        const float *res_in = l ? m->act[l - 1].res3 : m->x0;
        accel_batch_layer_fetch(hb, l + 1, 1);
        ACCEL_CHECK(recompute_block(m, layout, params, l, a, res_in, B, T));
        const bool post = layer_post(m, l), sandwich = m->arch.sandwich;
        /* MLP: res3 = res2 + mlp(norm2(res2)); post_norm: res3 = res2 + norm2(mlp(res2));
         * sandwich: res3 = res2 + post_norm2(mlp(norm2(res2))); none (model.mixer_only_layers):
         * res3 = res2, d(res2) = d(res3) */
        if (!layer_has_mlp(m, l)) {
        } else if (sandwich) {
            post_norm_backward(m, a->pn2, a->pn2_rstd, PARAM(k->pn2w), GRAD(k->pn2w), BT);
            ACCEL_CHECK(mlp_backward(m, l, a, layout, params, grads, hb, bt, m->dpost, a->ln2));
            norm_backward(m, m->dres, GRAD(k->ln2w), NULL, m->dc, a->res2, a->ln2_mean, a->ln2_rstd,
                          PARAM(k->ln2w), BT);
        } else if (post) {
            post_norm_backward(m, a->ln2, a->ln2_rstd, PARAM(k->ln2w), GRAD(k->ln2w), BT);
            ACCEL_CHECK(mlp_backward(m, l, a, layout, params, grads, hb, bt, m->dpost, a->res2));
            add_to(m->dres, m->dc, BT * (size_t)C);
        } else if (m->arch.parallel) {  /* res3 = res_in + attn(..) + mlp(norm(res_in)) */
            const bool one = m->arch.parallel == PARALLEL_ONE_NORM;
            ACCEL_CHECK(mlp_backward(m, l, a, layout, params, grads, hb, bt, m->dres, one ? a->ln1 : a->ln2));
            memcpy(m->dpost, m->dres, sizeof(float) * BT * C);    /* d(attention's output), before the
                                                                   * MLP's norm adds to m->dres */
            if (one) norm_backward(m, m->dres, GRAD(k->ln1w), GRAD_OPT(k->ln1b), m->dc, res_in, a->ln1_mean,
                                   a->ln1_rstd, PARAM(k->ln1w), BT);
            else norm_backward(m, m->dres, GRAD(k->ln2w), GRAD_OPT(k->ln2b), m->dc, res_in, a->ln2_mean,
                               a->ln2_rstd, PARAM(k->ln2w), BT);
        } else {
            ACCEL_CHECK(mlp_backward(m, l, a, layout, params, grads, hb, bt, sublayer_grad(m, BT), a->ln2));
            norm_backward(m, m->dres, GRAD(k->ln2w), GRAD_OPT(k->ln2b), m->dc, a->res2, a->ln2_mean,
                          a->ln2_rstd, PARAM(k->ln2w), BT);
        }
        if (layer_recurrent(m, l) || !layer_mixes(m, l)) {   /* no mixer: res2 = res_in */
            if (layer_mixes(m, l)) ACCEL_CHECK(linear_backward(m, layout, params, grads, l, a, res_in, B, T, hb));
            accel_batch_layer_release(hb, l + 1);
            accel_batch_layer_done(hb, l + 1);
            continue;
        }
        /* Attention: res2 = res_in + attn(rope(norm1(res_in) qkv^T + qkvb)) proj^T + projb
         * (post_norm: res2 = res_in + norm1(attn(rope(res_in qkv^T)) proj^T); sandwich:
         * res2 = res_in + post_norm1(attn(rope(norm1(res_in) qkv^T)) proj^T)) */
        if (post) post_norm_backward(m, a->ln1, a->ln1_rstd, PARAM(k->ln1w), GRAD(k->ln1w), BT);
        if (sandwich) post_norm_backward(m, a->pn1, a->pn1_rstd, PARAM(k->pn1w), GRAD(k->pn1w), BT);
        const float *dproj = post || sandwich || m->arch.parallel ? m->dpost : sublayer_grad(m, BT);
        if (m->mla) {               /* through the compacted outputs: [BT, NH dv] */
            const int PW = m->PW;
            mla_values(m, m->dmla, a->atty, BT, false);
            if (!FROZEN(k->projw)) GEMM(true, false, C, PW, bt, 1.0f, dproj, C, m->dmla, PW, 1.0f, GRAD(k->projw), PW);
            GEMM(false, false, bt, PW, C, 1.0f, dproj, C, PARAM(k->projw), PW, 0.0f, m->dmla, PW);
            mla_values(m, m->dmla, m->dc, BT, true);
        } else {
            GEMM(false, false, bt, m->QW, C, 1.0f, dproj, C, PARAM(k->projw), m->QW, 0.0f, m->dc, m->QW);
            if (!FROZEN(k->projw))
                GEMM(true, false, C, m->QW, bt, 1.0f, dproj, C, m->arch.gate ? a->atto : a->atty, m->QW, 1.0f,
                     GRAD(k->projw), m->QW);
        }
        if (m->arch.gate) {             /* atto = atty s, s = sigmoid(gate): d(atty) = d(atto) s */
            memset(m->dgate, 0, sizeof(float) * BT * (size_t)m->GW);
            for (size_t i = 0; i < BT * (size_t)m->QW; i++) {
                const size_t gi = gate_index(m, i);
                const float sg = 1.0f / (1.0f + expf(-a->gate[gi]));
                m->dgate[gi] += m->dc[i] * a->atty[i] * sg * (1.0f - sg);
                m->dc[i] *= sg;
            }
        }
        if (k->projb >= 0) accel_cpu_colsum_add(GRAD(k->projb), dproj, BT, C);
        accel_batch_progress(hb);
        ACCEL_CHECK(attention_backward(m, a, B, T, layer_window(m, l), PARAM_OPT(k->sinks), GRAD_OPT(k->sinks)));
        qkv_view_t dx = qkv_rows(m, m->d3c);
        scale_queries(m, l, &dx, BT, T, 0);
        const bool qk = layer_qk_norm(m, l);
        if (qk && m->arch.qk_after)     /* the norms came after RoPE: undone first */
            qk_norm_backward(m, a, PARAM_OPT(k->qnw), PARAM_OPT(k->knw), GRAD_OPT(k->qnw), GRAD_OPT(k->knw), BT);
        if (m->arch.rope) rope(m, l, &dx, BT, T, 0, 1);
        if (qk && !m->arch.qk_after)
            qk_norm_backward(m, a, PARAM_OPT(k->qnw), PARAM_OPT(k->knw), GRAD_OPT(k->qnw), GRAD_OPT(k->knw), BT);
        accel_batch_progress(hb);
        if (m->mla) {
            ACCEL_CHECK(mla_backward(m, layout, params, grads, k, a, post ? res_in : a->ln1, BT));
        } else {
            GEMM(false, false, bt, C, QKV, 1.0f, m->d3c, QKV, PARAM(k->qkvw), C, 0.0f, m->dc, C);
            if (!FROZEN(k->qkvw))
                GEMM(true, false, QKV, C, bt, 1.0f, m->d3c, QKV, post ? res_in : a->ln1, C, 1.0f, GRAD(k->qkvw), C);
            if (k->qkvb >= 0) accel_cpu_colsum_add(GRAD(k->qkvb), m->d3c, BT, QKV);
        }
        if (m->arch.gate) {             /* the gate's product, from the same input as q|k|v */
            GEMM(false, false, bt, C, m->GW, 1.0f, m->dgate, m->GW, PARAM(k->qkvw) + (size_t)QKV * C, C, 1.0f, m->dc, C);
            if (!FROZEN(k->qkvw))
                GEMM(true, false, m->GW, C, bt, 1.0f, m->dgate, m->GW, post ? res_in : a->ln1, C, 1.0f,
                     GRAD(k->qkvw) + (size_t)QKV * C, C);
        }
        if (post) add_to(m->dres, m->dc, BT * (size_t)C);
        else norm_backward(m, m->dres, GRAD(k->ln1w), GRAD_OPT(k->ln1b), m->dc, res_in, a->ln1_mean,
                           a->ln1_rstd, PARAM(k->ln1w), BT);
        accel_batch_layer_release(hb, l + 1);
        accel_batch_layer_done(hb, l + 1);
    }
    float *dwte = GRAD(m->wte), *dwpe = GRAD_OPT(m->wpe);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = m->dres + ((size_t)b * T + t) * C;
            float *e = dwte + (size_t)tokens[(size_t)b * stride + t] * C;
            for (int c = 0; c < C; c++) e[c] += m->embed_scale * d[c];
            if (dwpe) {
                float *p = dwpe + (size_t)(m->pos ? m->pos[(size_t)b * T + t] : t) * C;
                for (int c = 0; c < C; c++) p[c] += d[c];
            }
        }
    accel_batch_layer_done(hb, 0);                  /* wte has both its head and embedding parts */
    return ACCEL_OK;
}

/* A batch's forward pass through the final norm, every block's activations kept (training and
 * evaluation alike): its tokens checked, the buffers grown to its size. */
static accel_status_t batch_forward(gpt_t *m, const accel_layout_t *layout, const float *params,
                                    const accel_batch_t *batch)
{
    const int B = batch->n, T = m->T, stride = T + 1;
    ACCEL_CHECK(accel_gpt_check_tokens(batch->tokens, B, stride, stride, m->V));
    ACCEL_CHECK(accel_gpt_check_positions(batch->positions, B, T));
    ACCEL_CHECK(reserve(m, B));
    m->pos = batch->positions;
    /* LongRoPE as transformers chooses: the long factors when the batch's last position is past
     * the original context */
    int longest = T;
    if (m->pos) {
        longest = 0;
        for (size_t r = 0; r < (size_t)B * T; r++) longest = m->pos[r] + 1 > longest ? m->pos[r] + 1 : longest;
    }
    m->rope_long = m->long_cos && longest > m->rope_original;
    gpt_fwd_t fw = train_fwd(m);
    return forward(m, &fw, layout, params, batch->tokens, stride, B, T, 0, batch);
}

/* The load-balancing loss of the pass just made, times model.router_aux_loss, as transformers'
 * load_balancing_loss_func over the N = L B T rows of the L blocks with experts: E sum_e f_e P_e, f_e the share of
 * assignments routed to expert e, P_e its mean probability. Each sample's loss gets it once; its
 * gradient with respect to any row's probability of e, E f_e / N, goes to m->aux_grad scaled as
 * that sample's loss (B samples, grad_scale). */
static double load_balancing(gpt_t *m, int B, float grad_scale)
{
    const int E = m->moe.E;
    const double N = (double)moe_blocks(m) * B * m->T;     /* the experts' blocks' rows */
    double aux = 0;
    for (int e = 0; e < E; e++) {
        aux += m->aux_count[e] / N * (m->aux_psum[e] / N);
        m->aux_grad[e] = (float)((double)grad_scale * B * m->aux_coef * E * m->aux_count[e] / (N * N));
    }
    return m->aux_coef * E * aux;
}

static accel_status_t gpt_forward_backward(void *state, const accel_layout_t *layout,
                                           const float *params, float *grads,
                                           const accel_batch_t *batch, float grad_scale,
                                           double *loss_sum)
{
    gpt_t *m = state;
    const int B = batch->n, T = m->T, stride = T + 1;
    *loss_sum = 0;
    if (B <= 0) return ACCEL_OK;
    ACCEL_CHECK(batch_forward(m, layout, params, batch));
    ACCEL_CHECK(head_loss(m, layout, params, batch->tokens, stride, B, T, NULL, grad_scale,
                          loss_sum, batch));
    if (m->aux_coef > 0) *loss_sum += B * load_balancing(m, B, grad_scale);
    if (grad_scale == 0.0f) {   /* nothing to add to the gradients (the logits are not dlogits) */
        accel_batch_layer_release(batch, head_layer(m));
        return ACCEL_OK;
    }
    return backward(m, layout, params, grads, batch->tokens, stride, B, T, batch);
}

static accel_status_t gpt_eval(void *state, const accel_layout_t *layout, const float *params,
                               const accel_batch_t *batch, float *loss, int *correct)
{
    gpt_t *m = state;
    const int B = batch->n, T = m->T, stride = T + 1;
    if (B <= 0) return ACCEL_OK;
    ACCEL_CHECK(batch_forward(m, layout, params, batch));
    double sum;
    ACCEL_CHECK(head_loss(m, layout, params, batch->tokens, stride, B, T, loss, 0.0f, &sum, batch));
    accel_batch_layer_release(batch, head_layer(m));
    if (correct) memset(correct, 0, sizeof(int) * (size_t)B);
    return ACCEL_OK;
}

/* Block l's inference cache: its k|v rows of the sequence, a delta-net's state (gated_delta.h) or a
 * convolution's last inputs (short_conv.h). */
static size_t cache_floats(const gpt_t *m, int l)
{
    if (!layer_mixes(m, l)) return 0;
    if (layer_linear(m, l)) return accel_gdn_cache_floats(&m->lin);
    if (layer_conv(m, l)) return accel_sconv_cache_floats(&m->sconv);
    if (layer_mamba(m, l)) return accel_mamba2_cache_floats(&m->mamba);
    if (layer_mamba1(m, l)) return accel_mamba1_cache_floats(&m->mamba1);
    return (size_t)m->T * (size_t)(m->QKV - m->NH * m->hs);
}

/* Floats of the inference buffers: one sequence at full context, one shared block set (its q|k|v
 * piece holds the q rows) and every block's cache. */
static size_t infer_floats(const gpt_t *m)
{
    const size_t T = (size_t)m->T, C = (size_t)m->C;
    size_t cache = 0;
    for (int l = 0; l < m->L; l++) cache += PIECE(cache_floats(m, l));
    return block_floats(m, 1, T, ALL_PIECES) + cache + 2 * PIECE(T * C) +
           2 * PIECE(T) + PIECE(T * T) + PIECE((size_t)m->hs * T) + PIECE(T * mla_scratch(m)) +
           PIECE(lin_scratch(m, 1, T));
}

static size_t logits_bytes(const accel_config_t *cfg, bool llama)
{
    gpt_t m = { 0 };
    shape_of(&m, cfg, llama);
    size_t bytes = sizeof(float) * infer_floats(&m);
    if (cfg->precision_id != ACCEL_F32)   /* converted operands (upper bound) */
        bytes += sizeof(float) * gemm_elements(&m, (size_t)m.T) + 128;
    return bytes;
}

static size_t gpt_logits_bytes(const accel_config_t *cfg) { return logits_bytes(cfg, false); }
static size_t llama_logits_bytes(const accel_config_t *cfg) { return logits_bytes(cfg, true); }

static accel_status_t reserve_infer(gpt_t *m)
{
    if (m->imem) return ACCEL_OK;
    const size_t C = (size_t)m->C, T = (size_t)m->T;
    void *mem = NULL;
    size_t total = infer_floats(m);
    if (posix_memalign(&mem, 64, total * sizeof(float))) {
        ACCEL_ERROR("%s: cannot allocate %.1f MiB of inference buffers for a context of %d positions\n--> hint: "
                    "they grow with model.context (a whole-context prefill, the KV cache): %s",
                    m->arch.rope ? "llama" : "gpt", total * 4.0 / 1048576.0, m->T,
                    m->arch.rope ? "give a shorter one, e.g. model.context=8192 (a rotary model's context is not in "
                                   "its weights)"
                                 : "a GPT's context is its learned position table's: a smaller budget (--max-memory) "
                                   "or a larger machine");
        return ACCEL_ERR_NOMEM;
    }
    m->imem = mem;
    float *p = mem;
#define TAKE(ptr, n) do { (ptr) = p; p += PIECE(n); } while (0)
    p = carve_block(m, &m->iact, p, 1, T, ALL_PIECES); /* its qkv piece takes the q rows */
    for (int l = 0; l < m->L; l++) TAKE(m->kv[l], cache_floats(m, l));   /* keys and values, or a delta-net's state */
    TAKE(m->ix0, T * C);
    TAKE(m->ilnf, T * C);
    TAKE(m->ilnf_mean, T);
    TAKE(m->ilnf_rstd, T);
    TAKE(m->ipr, T * T);
    TAKE(m->ikt, (size_t)m->hs * T);
    TAKE(m->imla, T * mla_scratch(m));
    TAKE(m->ilin, lin_scratch(m, 1, T));
#undef TAKE
    m->cached = 0;
    return accel_gemm_cpu_reserve(&m->gemm, gemm_elements(m, T));
}

/* The logits of positions first..ntokens-1 of one sequence, computing positions from p0 on (the
 * keys and values of positions before p0 are the cache's). One shared block set works because block
 * l only reads the residual res3 of block l-1 before it overwrites res3 (norm1 and res2 = res +
 * attention are computed first). */
static accel_status_t infer(gpt_t *m, const accel_layout_t *layout, const float *params,
                            const int32_t *tokens, int ntokens, int p0, int first,
                            float *out_logits, const accel_layer_hooks_t *hooks)
{
    const char *name = m->arch.rope ? "llama" : "gpt";
    if (ntokens < 1 || ntokens > m->T || first < 0 || first >= ntokens) {
        ACCEL_ERROR("%s: logits need 1..%d tokens of context and a first position inside them "
                    "(got %d tokens, first %d)\n--> hint: pass at most model.context tokens (the "
                    "most recent ones)", name, m->T, ntokens, first);
        return ACCEL_ERR_INVALID;
    }
    ACCEL_CHECK(accel_gpt_check_tokens(tokens, 1, ntokens, ntokens, m->V));
    ACCEL_CHECK(reserve_infer(m));
    if (p0 < 0 || p0 > m->cached || p0 >= ntokens) {
        ACCEL_ERROR("%s: %d cached tokens asked for, the KV cache holds %d of this sequence and "
                    "at least the last of the %d tokens must be new", name, p0, m->cached,
                    ntokens);
        return ACCEL_ERR_INVALID;
    }
    accel_batch_t hb = { .hooks = hooks };
    m->pos = NULL;                      /* one sequence */
    /* LongRoPE: the long factors for a sequence past the original context; a cache made with the
     * other ones is recomputed (as transformers' Phi-3 does when generation crosses it) */
    m->rope_long = m->long_cos && ntokens > m->rope_original;
    if (m->rope_long != m->cache_long) p0 = 0;
    if (has_recurrent(m) && p0 != m->cached) p0 = 0;  /* a recurrence's state cannot go back */
    gpt_fwd_t fw = { &m->iact, 0, m->kv, m->ix0, m->ilnf, m->ilnf_mean, m->ilnf_rstd, m->ipr, m->ikt, m->imla,
                     m->ilin };
    m->cached = 0;                      /* until this pass completes, the cache is not whole */
    ACCEL_CHECK(forward(m, &fw, layout, params, tokens, ntokens, 1, ntokens, p0, &hb));
    m->cached = ntokens;
    m->cache_long = m->rope_long;
    const int h = head_layer(m);
    accel_batch_layer_fetch(&hb, h, 0);
    if (m->headb >= 0) start_rows(out_logits, PARAM(m->headb), NULL, (size_t)(ntokens - first), m->V);
    accel_status_t st = accel_gemm_cpu(&m->gemm, false, true, ntokens - first, m->V, m->C, 1.0f,
                                       fw.lnf + (size_t)first * m->C, m->C, PARAM(m->head), m->C,
                                       m->headb >= 0 ? 1.0f : 0.0f, out_logits, m->V);
    for (int t = first; st == ACCEL_OK && (m->logit_cap > 0 || m->logits_div != 1.0f) && t < ntokens; t++) {
        float *z = out_logits + (size_t)(t - first) * m->V;
        for (int v = 0; m->logits_div != 1.0f && v < m->V; v++) z[v] /= m->logits_div;
        if (m->logit_cap > 0) soft_cap(z, m->V, m->logit_cap, NULL);
    }
    accel_batch_layer_release(&hb, h);
    return st;
}

static accel_status_t gpt_logits_range(void *state, const accel_layout_t *layout,
                                       const float *params, const int32_t *tokens, int ntokens,
                                       int first, float *out_logits,
                                       const accel_layer_hooks_t *hooks)
{
    return infer(state, layout, params, tokens, ntokens, 0, first, out_logits, hooks);
}

static accel_status_t gpt_logits(void *state, const accel_layout_t *layout, const float *params,
                                 const int32_t *tokens, int ntokens, float *out_logits)
{
    return infer(state, layout, params, tokens, ntokens, 0, ntokens - 1, out_logits, NULL);
}

static accel_status_t gpt_logits_cached(void *state, const accel_layout_t *layout,
                                        const float *params, const int32_t *tokens, int ntokens,
                                        int cached, float *out_logits,
                                        const accel_layer_hooks_t *hooks)
{
    return infer(state, layout, params, tokens, ntokens, cached, ntokens - 1, out_logits, hooks);
}

/* The two families share every op but create and the size queries. */
#define DECODER_OPS(family)                                                                     \
    {                                                                                           \
        .abi = ACCEL_MODEL_ABI, .name = #family, .fetches_layers = 1, .consumes_tokens = 1,     \
        .create = family##_create, .forward_backward = gpt_forward_backward, .eval = gpt_eval,  \
        .destroy = gpt_destroy, .logits = gpt_logits, .logits_range = gpt_logits_range,         \
        .logits_bytes = family##_logits_bytes, .activation_bytes = family##_activation_bytes,   \
        .logits_cached = gpt_logits_cached, .reads_loss_mask = 1,                               \
    }

const accel_model_ops_t accel_model_gpt = DECODER_OPS(gpt);
const accel_model_ops_t accel_model_llama = DECODER_OPS(llama);
