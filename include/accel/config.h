/* Job configuration: one YAML file, overridden by key.sub=value arguments, then by ACCEL_* variables
 * (ACCEL_TRAIN_STEPS overrides train.steps). Every key is declared once in a schema (src/core/config.c)
 * with its type, default and help, so unknown keys and wrong types are errors, and the effective
 * configuration can be printed and stored. */
#ifndef ACCEL_CONFIG_H
#define ACCEL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "accel/dtype.h"
#include "accel/status.h"

#define ACCEL_STR_MAX 256
/* The longest list of numbers a key takes (LongRoPE's factors: one per turned pair of a head). */
#define ACCEL_NUMBERS_MAX 128
/* The longest model.context accel takes (positions): rotary models whose files claim more
 * (Llama 4 Scout's 10,485,760) are imported at this, a choice the weights do not fix. */
#define ACCEL_CONTEXT_MAX (1 << 20)

/* A key's list of numbers (YAML [a, b, ...], or "a,b,..." on the command line); n = 0: none. */
typedef struct {
    int n;
    double v[ACCEL_NUMBERS_MAX];
} accel_numbers_t;

/* Whether a list of layer numbers (model.attention_layers, model.mlp_only_layers, ...) names layer l. */
bool accel_layer_listed(const accel_numbers_t *list, int l);

typedef struct {
    char name[32];                  /* model.name: mlp | gpt | llama */
    char plugin[ACCEL_STR_MAX];     /* model.plugin: shared library with a user model */
    /* mlp */
    int inputs, hidden, classes, depth;
    /* gpt and llama */
    int layers, heads, width, context, vocab;
    bool tie_embeddings;            /* model.tie_embeddings: LM head = token embedding */
    /* llama */
    int kv_heads;                   /* model.kv_heads: 0 = heads */
    int ffn_width;                  /* model.ffn_width: 0 = 8/3 width rounded up to 64 */
    double rope_theta, rms_eps;
    char rope_scaling[16];          /* model.rope_scaling: none | llama3 | yarn | linear | longrope */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_context;
    double rope_beta_fast, rope_beta_slow; /* yarn: the ramp's bounds, in rotations */
    double rope_attention_factor;   /* yarn: cos and sin scaled by it; 0 = 0.1 ln(factor) + 1 */
    bool rope_truncate;             /* yarn: the ramp's bounds rounded to whole dimensions */
    accel_numbers_t rope_short_factor, rope_long_factor; /* longrope: each frequency divided by its
                                     * factor, the long ones past rope_original_context */
    int rope_dim;                   /* model.rope_dim: values of each head RoPE turns; 0 = all */
    double rope_proportion;         /* model.rope_proportion: rope_scaling=proportional's share */
    /* Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): keys and values from a shared latent */
    int kv_lora_rank;               /* model.kv_lora_rank: the latent's width; 0 = no MLA */
    int q_lora_rank;                /* model.q_lora_rank: queries through a latent too; 0 = direct */
    int v_head_dim;                 /* model.v_head_dim: each value head's size; 0 = the head size */
    bool attention_bias;            /* model.attention_bias: q, k, v biases (Qwen2) */
    bool attention_out_bias;        /* model.attention_out_bias: the output projection's (gpt-oss) */
    bool attention_sinks;           /* model.attention_sinks: a learned sink logit per head (gpt-oss) */
    int head_dim;                   /* model.head_dim: 0 = width / heads */
    bool qk_norm;                   /* model.qk_norm: RMSNorm on each q and k head (Qwen3) */
    int sliding_window;             /* model.sliding_window: keys a token attends to; 0 = all */
    int sliding_window_pattern;     /* model.sliding_window_pattern: every N-th layer full; 0 = none */
    accel_numbers_t sliding_layers; /* model.sliding_layers: the layers that slide (n 0: the pattern's) */
    char sliding_rope[8];           /* model.sliding_rope: scaled | plain (OLMo 3) */
    double sliding_rope_theta;      /* model.sliding_rope_theta: plain's base; 0 = rope_theta */
    int no_rope_pattern;            /* model.no_rope_pattern: every N-th layer without RoPE; 0 = none */
    char qk_norm_scope[8];          /* model.qk_norm_scope: head | all (OLMo 2, OLMoE) */
    bool qk_norm_after_rope;        /* model.qk_norm_after_rope: the q/k norms on rotated heads (HunYuan) */
    bool qk_norm_weights;           /* model.qk_norm_weights: false = unweighted (Llama 4's L2Norm) */
    char qk_norm_layers[8];         /* model.qk_norm_layers: all | rope (Llama 4: not its NoPE layers) */
    bool sliding_chunked;           /* model.sliding_chunked: chunks of sliding_window, not a window (Llama 4) */
    char norm[8];                   /* model.norm: rms | layer (LayerNorm) */
    bool norm_bias;                 /* model.norm_bias: the LayerNorms' biases */
    char norm_position[8];          /* model.norm_position: pre | post (OLMo 2) | both (Gemma 3) */
    bool norm_unit_offset;          /* model.norm_unit_offset: RMSNorm by 1 + weight (Gemma) */
    double embed_scale;             /* model.embed_scale: token embeddings times this (Gemma) */
    char activation[16];            /* model.activation: silu | gelu_tanh (Gemma's GeGLU) |
                                     * clamped_swiglu (gpt-oss) | relu2 | gelu | xielu (plain MLPs) */
    char mlp[8];                    /* model.mlp: gated | plain (down(act(up))) */
    bool mlp_bias;                  /* model.mlp_bias: the plain MLP's biases */
    char parallel_block[12];        /* model.parallel_block: none | two_norms | one_norm */
    bool head_bias;                 /* model.head_bias: the LM head's bias */
    bool attention_output_gate;     /* model.attention_output_gate: output times sigmoid(gate) (Qwen3.5) */
    bool attention_head_gate;       /* model.attention_head_gate: ... one gate per head (LFM3) */
    /* llama: gated delta-net linear attention layers (Qwen3.5, Qwen3-Next) */
    int linear_attention_pattern;   /* model.linear_attention_pattern: every N-th layer full; 0 = none */
    int linear_key_heads, linear_value_heads;   /* 0 = heads */
    int linear_key_dim, linear_value_dim;       /* 0 = the head size */
    int linear_conv_kernel;         /* model.linear_conv_kernel: the causal convolution's width */
    bool linear_allow_neg_eigval;   /* model.linear_allow_neg_eigval: beta = 2 sigmoid(b) (OLMo Hybrid) */
    double linear_norm_eps;         /* model.linear_norm_eps: the gated norm's epsilon; 0 = rms_eps */
    /* llama: Mamba-2 layers (Granite 4.0-H, Bamba) */
    int mamba_heads;                /* model.mamba_heads: their heads; 0 = none */
    int mamba_head_dim;             /* model.mamba_head_dim: each head's values; 0 = 2 width / heads */
    int mamba_state;                /* model.mamba_state: the state's size per head and value */
    int mamba_groups;               /* model.mamba_groups: groups of B and C */
    int mamba_conv_kernel;          /* model.mamba_conv_kernel: the convolution's width */
    bool mamba_conv_bias;           /* model.mamba_conv_bias: the convolution's bias */
    int mamba1_width;               /* model.mamba1_width: Mamba-1 layers' channels; 0 = none */
    int mamba1_dt_rank;             /* model.mamba1_dt_rank: dt's rank; 0 = ceil(width / 16) */
    char mamba1_norms[12];          /* model.mamba1_norms: none | plain | weighted, on dt, B and C */
    double mamba1_norm_eps;         /* model.mamba1_norm_eps: their epsilon */
    /* llama: gated short convolution layers (LFM2) */
    int short_conv_kernel;          /* model.short_conv_kernel: their convolution's width; 0 = none */
    accel_numbers_t attention_layers; /* model.attention_layers: the layers keeping attention */
    /* llama: layers of one sublayer (Nemotron-H's: each layer a mixer or an MLP) */
    accel_numbers_t mlp_only_layers;  /* model.mlp_only_layers: no token mixer, only the MLP */
    accel_numbers_t mixer_only_layers; /* model.mixer_only_layers: no MLP, only the token mixer */
    double swiglu_alpha, swiglu_limit; /* clamped_swiglu's slope and bound */
    int query_pre_attn_scalar;      /* model.query_pre_attn_scalar: scores / sqrt(this); 0 = hs */
    double attention_softcap;       /* model.attention_softcap: c tanh(score / c); 0 = none (Gemma 2) */
    double logit_softcap;           /* model.logit_softcap: c tanh(logit / c); 0 = none (Gemma 2) */
    double attention_multiplier;    /* model.attention_multiplier: the score scale; 0 = 1/sqrt(hs) */
    double query_scale_beta;        /* model.query_scale_beta: Llama 4's attention temperature; 0 = none */
    int query_scale_context;        /* model.query_scale_context: its steps' period, in positions */
    int query_scale_offset;         /* model.query_scale_offset: added to the positions (Llama 4: 1) */
    char query_scale_layers[8];     /* model.query_scale_layers: all | no_rope (Llama 4) */
    double residual_multiplier;     /* model.residual_multiplier: sublayer outputs times this (Granite) */
    double logits_scaling;          /* model.logits_scaling: logits divided by this (Granite) */
    /* llama: mixture of experts (Mixtral, Qwen3-MoE) */
    int experts;                    /* model.experts: expert MLPs per block; 0 = one dense MLP */
    int experts_per_token;          /* model.experts_per_token: top-k experts each token uses */
    bool router_norm_topk;          /* model.router_norm_topk: the k weights renormalized to sum 1 */
    double router_aux_loss;         /* model.router_aux_loss: load-balancing loss coefficient */
    int shared_expert_ffn;          /* model.shared_expert_ffn: a shared expert's width (Qwen2-MoE) */
    bool expert_bias;               /* model.expert_bias: router and expert biases (gpt-oss) */
    int expert_latent;              /* model.expert_latent: the routed experts' width (0: the model's) */
    /* DeepSeek-V3's routing (GLM-4.5): sigmoid scores, a fixed bias for choosing experts only,
     * group-limited choice, scaled weights; its ungated shared expert and leading dense blocks */
    char router_scores[16];         /* model.router_scores: softmax | sigmoid */
    bool router_select_bias;        /* model.router_select_bias: e_score_correction_bias */
    int router_groups;              /* model.router_groups: n_group */
    int router_topk_groups;         /* model.router_topk_groups: topk_group */
    char router_group_score[8];     /* model.router_group_score: top2 (DeepSeek-V3) | max (DeepSeek-V2) */
    double router_scale;            /* model.router_scale: routed_scaling_factor */
    double router_norm_eps;         /* model.router_norm_eps: added to the renormalizing sum (0: 1e-20) */
    bool shared_expert_gate;        /* model.shared_expert_gate: Qwen2-MoE's sigmoid gate */
    int dense_layers;               /* model.dense_layers: first_k_dense_replace */
    int dense_ffn_width;            /* model.dense_ffn_width: their MLP's width (0 = default) */
    accel_numbers_t expert_layers;  /* model.expert_layers: the blocks with experts (n 0: dense_layers says) */
    bool expert_input_scaled;       /* model.expert_input_scaled: weights scale the experts' input (Llama 4) */
} accel_model_config_t;

typedef struct {
    char path[ACCEL_STR_MAX];       /* data.path: HDF5 dataset; empty = built-in data */
    int64_t samples;                /* data.samples: synthetic training set size */
    int64_t eval_samples;           /* data.eval_samples: synthetic validation set size */
    bool drop_last;                 /* data.drop_last */
    double noise;                   /* data.noise: label noise of the synthetic task */
    bool document_mask;             /* data.document_mask: attention and positions per document */
} accel_data_config_t;

/* Enumerated keys are parsed once, where the configuration is read: each keeps its text (for
 * printing and checkpoints) and its value, set together by accel_config_set. */
typedef enum { ACCEL_RECOMPUTE_NONE = 0, ACCEL_RECOMPUTE_MLP, ACCEL_RECOMPUTE_BLOCK } accel_recompute_t;

/* A count key set to "auto" (train.micro_batch). */
#define ACCEL_AUTO (-1)

typedef struct {
    int steps;                      /* train.steps: optimizer steps */
    int global_batch;               /* train.global_batch: samples per optimizer step, all ranks */
    int grad_accum;                 /* train.grad_accum: micro-batches per optimizer step */
    int micro_batch;                /* train.micro_batch: 0 = derived, N, or ACCEL_AUTO (memory plan) */
    int64_t memory_limit;           /* train.memory_limit: bytes per rank for the plan, 0 = auto */
    char recompute[16];             /* train.recompute: none | mlp | block */
    accel_recompute_t recompute_id; /* ... parsed */
    bool sync_each_batch;           /* train.sync_each_batch */
    double clip;                    /* train.clip: max global gradient norm, 0 = off */
    double loss_scale;              /* train.loss_scale: initial fp16 loss scale */
    int loss_scale_window;          /* train.loss_scale_window: good steps before it doubles */
    double peak_tflops;             /* train.peak_tflops: per-rank peak for MFU, 0 = auto */
    int log_every;                  /* train.log_every */
    int eval_every;                 /* train.eval_every: steps between evaluations, 0 = final only */
    char init_from[ACCEL_STR_MAX];  /* train.init_from: weights to start from (step 0) */
    char metrics[ACCEL_STR_MAX];    /* train.metrics: JSON-lines file written by rank 0 */
    char tensorboard[ACCEL_STR_MAX];/* train.tensorboard: event file directory (rank 0) */
    int sample_tokens;              /* train.sample_tokens: generated at the end (language models) */
    char sample_prompt[ACCEL_STR_MAX]; /* train.sample_prompt */
} accel_train_config_t;

typedef struct {
    char name[16];                  /* optim.name: adamw | sgd */
    double lr, beta1, beta2, eps, weight_decay, momentum;
    char schedule[16];              /* optim.schedule: constant | linear | cosine */
    int warmup;                     /* optim.warmup: optimizer steps */
    double min_lr_ratio;            /* optim.min_lr_ratio */
    double router_bias_update;      /* optim.router_bias_update: DeepSeek-V3's balancing rate */
} accel_optim_config_t;

typedef enum { ACCEL_DDP = 0, ACCEL_ZERO1, ACCEL_ZERO2, ACCEL_ZERO3 } accel_strategy_t;
/* accel_strategy_t -> "ddp", "zero1", ... */
const char *accel_strategy_name(accel_strategy_t strategy);

typedef struct {
    char strategy[16];              /* dist.strategy: ddp | zero1 | zero2 | zero3 */
    accel_strategy_t strategy_id;   /* ... parsed */
    bool hybrid;                    /* dist.hybrid */
    double bucket_mb;               /* dist.bucket_mb */
    char comm_dtype[16];            /* dist.comm_dtype: fp32 | bf16 | fp16 gradient traffic */
    accel_dtype_t comm_dtype_id;    /* ... parsed */
    int fake_nodes;                 /* dist.fake_nodes: test only, group ranks into N pretend nodes */
    double timeout;                 /* dist.timeout: seconds any wait may take before the job aborts */
    char trace_dir[ACCEL_STR_MAX];  /* dist.trace_dir: flight recorder rings on a timeout */
} accel_dist_config_t;

typedef struct {
    char dir[ACCEL_STR_MAX];        /* ckpt.dir: where checkpoints go; empty = none */
    int every;                      /* ckpt.every: steps between checkpoints; 0 = only at the end/stop */
    int keep_last;                  /* ckpt.keep_last: older ones are removed after a new one is complete */
    bool async;                     /* ckpt.async: a writer thread saves a snapshot while training goes on */
} accel_ckpt_config_t;

/* Fault injection for tests: a rank raises a stop trigger or an fp16 overflow at a given step, or
 * stops responding at a point of the run (the others' collectives must time out and report it). */
typedef struct {
    int stop_step, stop_rank;       /* debug.stop_step (0 = off), debug.stop_rank */
    int overflow_step, overflow_rank; /* debug.overflow_step (0 = off), debug.overflow_rank */
    char hang_at[16];               /* debug.hang_at: none | startup | save | end */
    int hang_rank;                  /* debug.hang_rank */
} accel_debug_config_t;

typedef struct {
    char level[16];                 /* log.level */
    bool all_ranks;                 /* log.all_ranks */
} accel_log_config_t;

/* LoRA fine-tuning (src/train/lora.c): the base model frozen, low-rank adapters trained. */
typedef struct {
    int rank;                       /* lora.rank: the adapters' rank; 0 = off (every weight trained) */
    double alpha;                   /* lora.alpha: their scale is alpha / rank */
    char targets[ACCEL_STR_MAX];    /* lora.targets: all-linear | module names, comma-separated */
    bool rslora;                    /* lora.rslora: scale alpha / sqrt(rank) */
} accel_lora_config_t;

typedef struct {
    uint64_t seed;                  /* seed */
    char device[16];                /* device: auto | cpu | cuda */
    char precision[16];             /* precision: fp32 | bf16 | fp16 */
    accel_dtype_t precision_id;     /* ... parsed */
    int threads;                    /* threads: BLAS/OpenMP threads per rank, 0 = auto */
    accel_model_config_t model;
    accel_data_config_t data;
    accel_train_config_t train;
    accel_optim_config_t optim;
    accel_dist_config_t dist;
    accel_log_config_t log;
    accel_ckpt_config_t ckpt;
    char resume[ACCEL_STR_MAX];     /* resume: "" | auto | PATH */
    accel_debug_config_t debug;
    accel_lora_config_t lora;       /* last, so that plugins built before it read the rest alike */
} accel_config_t;

/* Parse a size: "64MiB", "1.5GiB", "800MB", "4096", "0" (B, KB, MB, GB, TB: powers of 1000;
 * K/KiB, M/MiB, G/GiB, T/TiB: powers of 1024; case-insensitive). Size keys (train.memory_limit)
 * and accel_generate --max-memory read sizes with it. */
accel_status_t accel_parse_bytes(const char *text, size_t *bytes);

/* Fill cfg with the schema defaults. */
void accel_config_defaults(accel_config_t *cfg);

/* Load: defaults, then the YAML file (path may be NULL), then "key=value" overrides, then ACCEL_*
 * variables from envp (NULL = the process environment). On error, *err (if not NULL) receives a
 * message naming the file, line, key and value; the caller prints it. */
accel_status_t accel_config_load(accel_config_t *cfg, const char *path, int noverrides,
                                 char *const overrides[], char *const envp[], char *err,
                                 size_t errlen);

/* Defaults, then the YAML text (a configuration stored in a file); `what` names it in messages. */
accel_status_t accel_config_from_yaml(accel_config_t *cfg, const char *yaml, const char *what, char *err,
                                      size_t errlen);

/* Same, from size bytes of YAML text (need not end in a NUL): the one loader the files use too, so
 * it refuses what they refuse (duplicate keys, a second document, aliases, over 1 MiB). */
accel_status_t accel_config_from_yaml_buffer(accel_config_t *cfg, const void *yaml, size_t size,
                                             const char *what, char *err, size_t errlen);

/* Take the model.* keys (not model.plugin) of `from` (the configuration stored with weights named
 * `what`). A key the user set (a value other than the default) that differs from the file's is
 * refused, naming the key and both values; keys listed in free_keys (NULL-terminated, may be NULL)
 * keep the user's value when set, since the weights do not fix them. */
accel_status_t accel_config_adopt_model(accel_config_t *cfg, const accel_config_t *from, const char *what,
                                        const char *const *free_keys, char *err, size_t errlen);

/* Set one key from text, with type checking ("train.steps", "100"). */
accel_status_t accel_config_set(accel_config_t *cfg, const char *key, const char *value,
                                char *err, size_t errlen);

/* Print the effective configuration as YAML (nested, with every key). */
void accel_config_print(const accel_config_t *cfg, FILE *out);
/* Same, into a malloc'ed string (stored in checkpoints). */
char *accel_config_to_yaml(const accel_config_t *cfg);

/* Same, with each key's meaning as a comment above it (accel config). */
void accel_config_print_commented(const accel_config_t *cfg, FILE *out);

/* True when text looks like a "key=value" override rather than a file name. */
bool accel_config_is_override(const char *text);

#endif
