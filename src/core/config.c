/* Job configuration: the schema of every key, YAML loading (libyaml), overrides and ACCEL_* variables.
 * Adding a key = one line in g_schema (type, default, choices, help and, for a number, its valid
 * range) plus a field in accel_config_t. Input is untrusted: the reader refuses duplicate keys, a
 * second document, aliases, text that is not UTF-8 and inputs over 1 MiB, and what it accepts
 * prints back as YAML that reads to the same bytes (tests/fuzz/fuzz_config.c checks it). */
#include "build_config.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "accel/config.h"

extern char **environ;

/* KEY_COUNT: an int >= 0 or "auto" (stored as ACCEL_AUTO); KEY_BYTES: a size in bytes, written
 * plain or with a unit (KiB MiB GiB TiB, or KB MB GB TB in powers of 1000), stored as int64;
 * KEY_NUMBERS: a list of numbers, each as KEY_DOUBLE takes one (accel_numbers_t). */
typedef enum { KEY_INT, KEY_U64, KEY_INT64, KEY_DOUBLE, KEY_BOOL, KEY_STRING, KEY_COUNT, KEY_BYTES,
               KEY_NUMBERS } key_type_t;

typedef struct {
    const char *key;
    key_type_t type;
    size_t offset;
    size_t size;                    /* strings: buffer size */
    const char *def;
    const char *choices;            /* "a|b|c" for enumerations, NULL otherwise */
    const char *help;
    /* Numeric keys: the valid range [lo, hi], an end excluded when its RANGE_OPEN_* bit is set;
     * accel_config_set refuses a value outside it, naming the key, the value and the range. */
    double lo, hi;
    unsigned range;                 /* RANGE_SET | RANGE_OPEN_LO | RANGE_OPEN_HI */
} key_spec_t;

enum { RANGE_SET = 1, RANGE_OPEN_LO = 2, RANGE_OPEN_HI = 4 };
#define NO_RANGE 0, 0, 0
#define R(lo, hi) (double)(lo), (double)(hi), RANGE_SET
#define R_OPEN_LO(lo, hi) (double)(lo), (double)(hi), RANGE_SET | RANGE_OPEN_LO
#define R_OPEN_HI(lo, hi) (double)(lo), (double)(hi), RANGE_SET | RANGE_OPEN_HI
#define R_OPEN(lo, hi) (double)(lo), (double)(hi), RANGE_SET | RANGE_OPEN_LO | RANGE_OPEN_HI
/* Synthetic sample counts: global indices times the widest per-sample product (context + 1 tokens,
 * model.inputs features) must stay far inside int64 and size_t. */
#define SAMPLES_MAX (1LL << 40)

#define F(field) offsetof(accel_config_t, field), sizeof(((accel_config_t *)0)->field)

static const key_spec_t g_schema[] = {
    { "seed", KEY_U64, F(seed), "1234", NULL, "seed of all keyed randomness (weights, data order, dropout)", NO_RANGE },
    { "device", KEY_STRING, F(device), "auto", "auto|cpu|cuda", "where to compute: auto picks the node-local GPU when one is usable", NO_RANGE },
    { "precision", KEY_STRING, F(precision), "fp32", "fp32|bf16|fp16", "compute precision (master weights stay fp32)", NO_RANGE },
    { "threads", KEY_INT, F(threads), "0", NULL, "compute threads per rank; 0 = OMP_NUM_THREADS, else cores / ranks on the node", R(0, 1024) },

    { "model.name", KEY_STRING, F(model.name), "gpt", "mlp|gpt|llama", "built-in model: mlp, gpt (GPT-2) or llama (Llama 2/3, Mistral, Qwen2 family)", NO_RANGE },
    { "model.plugin", KEY_STRING, F(model.plugin), "", NULL, "shared library with a user model (overrides model.name)", NO_RANGE },
    { "model.inputs", KEY_INT, F(model.inputs), "32", NULL, "mlp: input features", R(1, 1 << 20) },
    { "model.hidden", KEY_INT, F(model.hidden), "128", NULL, "mlp: hidden width", R(1, 1 << 20) },
    { "model.classes", KEY_INT, F(model.classes), "10", NULL, "mlp: output classes", R(2, 1 << 20) },
    { "model.depth", KEY_INT, F(model.depth), "2", NULL, "mlp: hidden layers", R(0, 1024) },
    { "model.layers", KEY_INT, F(model.layers), "4", NULL, "gpt, llama: transformer blocks", R(1, 100000) },
    { "model.heads", KEY_INT, F(model.heads), "4", NULL, "gpt, llama: attention heads", R(1, 1 << 16) },
    { "model.width", KEY_INT, F(model.width), "128", NULL, "gpt, llama: embedding width", R(1, 1 << 20) },
    { "model.context", KEY_INT, F(model.context), "64", NULL, "gpt, llama: context length in tokens", R(1, ACCEL_CONTEXT_MAX) },
    { "model.vocab", KEY_INT, F(model.vocab), "256", NULL, "gpt, llama: vocabulary size (256 = bytes)", R(2, 1 << 26) },
    { "model.kv_heads", KEY_INT, F(model.kv_heads), "0", NULL, "llama: key/value heads (grouped-query attention; 1 = multi-query); 0 = model.heads", R(0, 1 << 16) },
    { "model.ffn_width", KEY_INT, F(model.ffn_width), "0", NULL, "llama: SwiGLU hidden width; 0 = 8/3 x width rounded up to a multiple of 64", R(0, 1 << 22) },
    { "model.rope_theta", KEY_DOUBLE, F(model.rope_theta), "10000", NULL, "llama: RoPE base frequency", R_OPEN_LO(1, 1e12) },
    { "model.rope_scaling", KEY_STRING, F(model.rope_scaling), "none", "none|llama3|yarn|linear|longrope|proportional", "llama: RoPE frequency scaling (llama3: Llama-3.1 style, the four keys below; yarn: YaRN, as transformers' rope_type yarn, with rope_factor, rope_original_context and the three rope_* keys after them; linear: every frequency divided by rope_factor, position interpolation, Gemma 3's full layers; longrope: Phi-3.5's and Phi-4-mini's LongRoPE, frequency i divided by rope_short_factor[i], or by rope_long_factor[i] when the sequence is longer than rope_original_context; proportional: Gemma 4's and LFM3's full layers, plain RoPE over the whole head whose frequencies past the first model.rope_proportion share are 0)", NO_RANGE },
    { "model.rope_proportion", KEY_DOUBLE, F(model.rope_proportion), "1", NULL, "llama: rope_scaling=proportional: the share of each head's pairs (i, i + head/2) that turn: the first floor(this x head / 2) at plain RoPE's frequencies, the others not at all (transformers' partial_rotary_factor of rope_type proportional)", R_OPEN_LO(0, 1) },
    { "model.rope_factor", KEY_DOUBLE, F(model.rope_factor), "8", NULL, "llama: rope_scaling=llama3, yarn or linear: low frequencies (linear: all of them) divided by this (the context extension); longrope: the extension that sets its default attention factor", R(1, 1e6) },
    { "model.rope_low_freq_factor", KEY_DOUBLE, F(model.rope_low_freq_factor), "1", NULL, "llama: rope_scaling=llama3: wavelengths above original_context / this are scaled", R_OPEN_LO(0, 1e6) },
    { "model.rope_high_freq_factor", KEY_DOUBLE, F(model.rope_high_freq_factor), "4", NULL, "llama: rope_scaling=llama3: wavelengths below original_context / this are kept", R_OPEN_LO(0, 1e6) },
    { "model.rope_original_context", KEY_INT, F(model.rope_original_context), "8192", NULL, "llama: rope_scaling=llama3, yarn or longrope: the context the model was pre-trained with", R(1, 1 << 24) },
    { "model.rope_beta_fast", KEY_DOUBLE, F(model.rope_beta_fast), "32", NULL, "llama: rope_scaling=yarn: frequencies turning more than this many times over the original context are kept", R_OPEN_LO(0, 1e6) },
    { "model.rope_beta_slow", KEY_DOUBLE, F(model.rope_beta_slow), "1", NULL, "llama: rope_scaling=yarn: frequencies turning fewer times than this are divided by rope_factor (a linear ramp between)", R_OPEN_LO(0, 1e6) },
    { "model.rope_dim", KEY_INT, F(model.rope_dim), "0", NULL, "llama: RoPE turns the first N values of each head (even, at most the head size) and the rest pass unturned (transformers' partial_rotary_factor x head size: GLM's half); 0 = all", R(0, 1 << 16) },
    { "model.kv_lora_rank", KEY_INT, F(model.kv_lora_rank), "0", NULL, "llama: multi-head latent attention (DeepSeek-V2/V3, Kimi K2): each token's keys and values come from one latent of this width (RMS-normed, then expanded per head), plus one RoPE key of model.rope_dim values shared by the heads; heads are model.head_dim wide (the RoPE part first); 0 = ordinary attention", R(0, 1 << 16) },
    { "model.q_lora_rank", KEY_INT, F(model.q_lora_rank), "0", NULL, "llama: with model.kv_lora_rank: the queries through a latent of this width too (RMS-normed); 0 = one projection", R(0, 1 << 16) },
    { "model.v_head_dim", KEY_INT, F(model.v_head_dim), "0", NULL, "llama: with model.kv_lora_rank: each value head's size (at most the head size); 0 = the head size", R(0, 1 << 16) },
    { "model.rope_truncate", KEY_BOOL, F(model.rope_truncate), "true", NULL, "llama: rope_scaling=yarn: the ramp's bounds are rounded outwards to whole dimensions (transformers' truncate, true unless the config says false; gpt-oss: false)", NO_RANGE },
    { "model.rope_attention_factor", KEY_DOUBLE, F(model.rope_attention_factor), "0", NULL, "llama: rope_scaling=yarn or longrope: RoPE's cos and sin are multiplied by this; 0 = YaRN's 0.1 ln(rope_factor) + 1, LongRoPE's sqrt(1 + ln(rope_factor) / ln(rope_original_context)) (1 when rope_factor is 1)", R(0, 1e6) },
    { "model.rope_short_factor", KEY_NUMBERS, F(model.rope_short_factor), "", NULL, "llama: rope_scaling=longrope: one number for each pair of values RoPE turns (model.rope_dim / 2, else head size / 2): frequency i is divided by the i-th while the sequence fits rope_original_context", R_OPEN_LO(0, 1e6) },
    { "model.rope_long_factor", KEY_NUMBERS, F(model.rope_long_factor), "", NULL, "llama: rope_scaling=longrope: as rope_short_factor, for sequences longer than rope_original_context (a generation that grows past it recomputes its cache with them, as transformers does)", R_OPEN_LO(0, 1e6) },
    { "model.rms_eps", KEY_DOUBLE, F(model.rms_eps), "1e-5", NULL, "llama: the norms' epsilon (RMSNorm, or LayerNorm with model.norm=layer)", R_OPEN(0, 1) },
    { "model.norm", KEY_STRING, F(model.norm), "rms", "rms|layer", "llama: rms = RMSNorm (Llama); layer = LayerNorm, mean taken out, with a bias unless model.norm_bias=false (StarCoder2, Jais2, GPT-NeoX; with model.norm_unit_offset: Nemotron's LayerNorm1P)", NO_RANGE },
    { "model.norm_bias", KEY_BOOL, F(model.norm_bias), "true", NULL, "llama: model.norm=layer: the LayerNorms' biases; false = none (Cohere)", NO_RANGE },
    { "model.tie_embeddings", KEY_BOOL, F(model.tie_embeddings), "true", NULL, "the LM head reuses the token embedding; false = a separate lm_head (llama; gpt is always tied)", NO_RANGE },
    { "model.attention_bias", KEY_BOOL, F(model.attention_bias), "false", NULL, "llama: biases on the q, k and v projections (Qwen2)", NO_RANGE },
    { "model.attention_out_bias", KEY_BOOL, F(model.attention_out_bias), "false", NULL, "llama: a bias on the attention's output projection (gpt-oss)", NO_RANGE },
    { "model.attention_sinks", KEY_BOOL, F(model.attention_sinks), "false", NULL, "llama: each head has a learned sink logit that joins its softmax's denominator and attends to nothing, so a query may give less than all its weight to the keys (gpt-oss's sinks)", NO_RANGE },
    { "model.head_dim", KEY_INT, F(model.head_dim), "0", NULL, "llama: size of each attention head (even); 0 = width / heads (Qwen3 and Gemma set it apart from the width)", R(0, 1 << 16) },
    { "model.qk_norm", KEY_BOOL, F(model.qk_norm), "false", NULL, "llama: RMSNorm over each query and key head before RoPE, with weights per head dimension (Qwen3)", NO_RANGE },
    { "model.qk_norm_after_rope", KEY_BOOL, F(model.qk_norm_after_rope), "false", NULL, "llama: model.qk_norm=true: the q and k norms take the heads after RoPE has turned them (Tencent's HunYuan), not before (Qwen3, OLMo)", NO_RANGE },
    { "model.qk_norm_weights", KEY_BOOL, F(model.qk_norm_weights), "true", NULL, "llama: model.qk_norm=true: the q and k norms have weights (h.L.attn.q_norm, k_norm); false: none, each head only divided by its RMS (Llama 4's L2Norm)", NO_RANGE },
    { "model.qk_norm_layers", KEY_STRING, F(model.qk_norm_layers), "all", "all|rope", "llama: model.qk_norm=true: all = every attention layer's q and k are normed; rope = only those of the layers with RoPE, not model.no_rope_pattern's (Llama 4's use_qk_norm)", NO_RANGE },
    { "model.qk_norm_scope", KEY_STRING, F(model.qk_norm_scope), "head", "head|all", "llama: model.qk_norm=true: head = one RMSNorm per head over head_dim, weights shared by the heads (Qwen3); all = over the whole q projection (heads x head_dim) and the whole k projection, weights of their widths (OLMo 2, OLMoE)", NO_RANGE },
    { "model.norm_position", KEY_STRING, F(model.norm_position), "pre", "pre|post|both", "llama: pre = RMSNorm before attention and before the MLP (Llama); post = none before them, their outputs RMS-normed before they join the residual (OLMo 2; gated delta-net layers keep theirs before, as OLMo Hybrid's); both = before them and on their outputs, four norms a block (Gemma 3)", NO_RANGE },
    { "model.norm_unit_offset", KEY_BOOL, F(model.norm_unit_offset), "false", NULL, "llama: every norm multiplies by 1 + its weight, the weights stored as offsets from 1 and initialised to 0 (Gemma; Nemotron's LayerNorm1P)", NO_RANGE },
    { "model.embed_scale", KEY_DOUBLE, F(model.embed_scale), "1", NULL, "llama: the token embeddings are multiplied by this (in fp32) before the first block; the tied LM head is not (Gemma: sqrt(width))", R_OPEN_LO(0, 1e6) },
    { "model.activation", KEY_STRING, F(model.activation), "silu", "silu|gelu_tanh|clamped_swiglu|relu2|gelu|xielu", "llama: the MLP's (and experts') activation: silu = SwiGLU (Llama); gelu_tanh = the tanh GELU (Gemma's GeGLU, StarCoder2's gelu_pytorch_tanh); clamped_swiglu = gpt-oss's (up + 1) g sigmoid(alpha g), gate clamped above at model.swiglu_limit, up to +-model.swiglu_limit; relu2 = max(x, 0)^2 (model.mlp=plain only: Nemotron, Arcee, Jais2); gelu = the exact GELU, x Phi(x) (model.mlp=plain only: GPT-NeoX, Pythia); xielu = Apertus's xIELU, x > 0 ? a_p x^2 + b x : a_n (expm1(min(x, eps)) - x) + b x with each layer's trained a_p, a_n (mlp.act.alpha_p, alpha_n, through softplus) and fixed b, eps (mlp.act.beta, eps: 0.5, -1e-6 new) (model.mlp=plain without experts only)", NO_RANGE },
    { "model.mlp", KEY_STRING, F(model.mlp), "gated", "gated|plain", "llama: gated = down(act(gate) * up) (SwiGLU, GeGLU: Llama, Gemma); plain = down(act(up)), one projection in, activation relu2, gelu_tanh, gelu or xielu (StarCoder2, Nemotron, Arcee, Jais2, GPT-NeoX, Apertus; with model.experts the experts too: Nemotron-H)", NO_RANGE },
    { "model.head_bias", KEY_BOOL, F(model.head_bias), "false", NULL, "llama: a bias on the LM head's logits (Phi-2, GPT-J); needs model.tie_embeddings=false", NO_RANGE },
    { "model.attention_head_gate", KEY_BOOL, F(model.attention_head_gate), "false", NULL, "llama: attention's output, head by head, times the sigmoid of one gate per head projected from the attention's input (LFM3's g_proj; its rows after v's in attn.qkv)", NO_RANGE },
    { "model.attention_output_gate", KEY_BOOL, F(model.attention_output_gate), "false", NULL, "llama: attention's output (before the output projection) times the sigmoid of a gate projected from the attention's input, value by value (Qwen3.5, Qwen3-Next: the gate half of q_proj)", NO_RANGE },
    { "model.linear_attention_pattern", KEY_INT, F(model.linear_attention_pattern), "0", NULL, "llama: every N-th layer (the N-th, 2N-th, ...) is full attention and the others are gated delta-net linear attention: a causal convolution, then a recurrent state per head that decays and is corrected token by token, with a gated RMSNorm (Qwen3.5, Qwen3-Next, OLMo Hybrid: 4, transformers' full_attention_interval / layer_types); 0: every layer is attention", R(0, 1 << 20) },
    { "model.linear_key_heads", KEY_INT, F(model.linear_key_heads), "0", NULL, "llama: the linear attention layers' query and key heads (linear_num_key_heads); 0 = model.heads", R(0, 1 << 16) },
    { "model.linear_value_heads", KEY_INT, F(model.linear_value_heads), "0", NULL, "llama: their value heads, a multiple of the key heads (linear_num_value_heads); 0 = the key heads", R(0, 1 << 16) },
    { "model.linear_key_dim", KEY_INT, F(model.linear_key_dim), "0", NULL, "llama: each of their query and key heads' size (linear_key_head_dim); 0 = the head size", R(0, 1 << 16) },
    { "model.linear_value_dim", KEY_INT, F(model.linear_value_dim), "0", NULL, "llama: each of their value heads' size (linear_value_head_dim); 0 = the head size", R(0, 1 << 16) },
    { "model.linear_conv_kernel", KEY_INT, F(model.linear_conv_kernel), "4", NULL, "llama: the width of their causal convolution over q, k and v (linear_conv_kernel_dim)", R(1, 64) },
    { "model.linear_allow_neg_eigval", KEY_BOOL, F(model.linear_allow_neg_eigval), "false", NULL, "llama: gated delta-net layers write with beta = 2 sigmoid(b), in (0, 2), so a token's update may flip the state's direction (OLMo Hybrid's linear_allow_neg_eigval); false: sigmoid(b) (Qwen3.5)", NO_RANGE },
    { "model.linear_norm_eps", KEY_DOUBLE, F(model.linear_norm_eps), "0", NULL, "llama: the epsilon of the gated delta-nets' gated RMSNorm (OLMo Hybrid's o_norm: 1e-5); 0 = model.rms_eps (Qwen3.5)", R(0, 1) },
    { "model.mamba_heads", KEY_INT, F(model.mamba_heads), "0", NULL, "llama: Mamba-2 selective state-space layers in place of attention on every layer model.attention_layers (and model.mlp_only_layers) does not name (Granite 4.0-H, Nemotron-H, Bamba: mamba_n_heads), with this many heads: the input projected to z|x|B|C|dt, a causal convolution and SiLU over x|B|C, a decaying state per head of model.mamba_state x model.mamba_head_dim, then rmsnorm(y silu(z)) per group; 0: every layer is attention", R(0, 1 << 16) },
    { "model.mamba_head_dim", KEY_INT, F(model.mamba_head_dim), "0", NULL, "llama: each Mamba-2 head's values (mamba_d_head); 0 = 2 x width / model.mamba_heads (mamba_expand 2)", R(0, 1 << 16) },
    { "model.mamba_state", KEY_INT, F(model.mamba_state), "128", NULL, "llama: the Mamba-2 state's size per head value (mamba_d_state); Mamba-1's per channel (state_size, 16 in Mamba)", R(1, 1 << 16) },
    { "model.mamba_groups", KEY_INT, F(model.mamba_groups), "1", NULL, "llama: the groups of heads sharing B and C, and the gated norm's groups (mamba_n_groups); must divide model.mamba_heads", R(1, 1 << 16) },
    { "model.mamba_conv_kernel", KEY_INT, F(model.mamba_conv_kernel), "4", NULL, "llama: the width of the Mamba-2 layers' causal convolution over x|B|C (mamba_d_conv), the Mamba-1 layers' over x (conv_kernel)", R(1, 64) },
    { "model.mamba_conv_bias", KEY_BOOL, F(model.mamba_conv_bias), "true", NULL, "llama: a bias on that convolution (mamba_conv_bias)", NO_RANGE },
    { "model.mamba1_width", KEY_INT, F(model.mamba1_width), "0", NULL, "llama: Mamba-1 selective state-space layers in place of attention on every layer model.attention_layers (and model.mlp_only_layers) does not name (Mamba, Falcon Mamba, Jamba), with this many channels (intermediate_size: mamba_expand x width): the input projected to x|z, a causal convolution of model.mamba_conv_kernel and SiLU over x, x_proj to dt|B|C, dt_proj and softplus, each channel's state of model.mamba_state values decaying by exp(-dt exp(A_log)) and fed dt x B, read by C, plus D x, times silu(z); 0 = none", R(0, 1 << 20) },
    { "model.mamba1_dt_rank", KEY_INT, F(model.mamba1_dt_rank), "0", NULL, "llama: the Mamba-1 layers' dt rank (time_step_rank): x_proj's dt rows, dt_proj's input; 0 = ceil(width / 16) (transformers' auto)", R(0, 1 << 16) },
    { "model.mamba1_norms", KEY_STRING, F(model.mamba1_norms), "none", "none|plain|weighted", "llama: RMS norms on the Mamba-1 layers' dt, B and C after x_proj: none (Mamba), plain, without weights (Falcon Mamba), weighted (Jamba: dt_layernorm, b_layernorm, c_layernorm)", NO_RANGE },
    { "model.mamba1_norm_eps", KEY_DOUBLE, F(model.mamba1_norm_eps), "1e-6", NULL, "llama: those norms' epsilon (Falcon Mamba's mixer_rms_eps, Jamba's rms_norm_eps)", R(1e-12, 1) },
    { "model.short_conv_kernel", KEY_INT, F(model.short_conv_kernel), "0", NULL, "llama: gated short convolutions in place of attention on every layer model.attention_layers does not name (LFM2's conv layers): the input projected to b|c|x, then c * (a causal depthwise convolution of this width over b * x), then the output projection (transformers' conv_L_cache: 3); 0: every layer is attention", R(0, 64) },
    { "model.attention_layers", KEY_NUMBERS, F(model.attention_layers), "", NULL, "llama: with model.short_conv_kernel, model.mamba_heads or model.mamba1_width, the layers that keep attention, numbered from 0 in increasing order (LFM2's full_attn_idxs, transformers' layer_types full_attention; e.g. [2, 5, 8, 10, 12, 14]); empty: none", R(0, 1 << 20) },
    { "model.mlp_only_layers", KEY_NUMBERS, F(model.mlp_only_layers), "", NULL, "llama: layers without a token mixer, numbered from 0 in increasing order: the block is its norm and MLP (or experts) alone, the residual passing the mixer's place untouched (Nemotron-H's mlp and moe layers); empty: none", R(0, 1 << 20) },
    { "model.mixer_only_layers", KEY_NUMBERS, F(model.mixer_only_layers), "", NULL, "llama: layers without an MLP, numbered from 0 in increasing order: the block is its norm and token mixer (attention, Mamba-2, ...) alone (Nemotron-H's mamba and attention layers); empty: none", R(0, 1 << 20) },
    { "model.parallel_block", KEY_STRING, F(model.parallel_block), "none", "none|two_norms|one_norm", "llama: none = the MLP reads attention's output (res + attn + mlp(norm2(res + attn))); two_norms = attention and the MLP both read the block's input, each through its own norm (GPT-NeoX, Pythia: use_parallel_residual); one_norm = ... both through norm1 (GPT-J, Phi-2, Falcon, Cohere)", NO_RANGE },
    { "model.mlp_bias", KEY_BOOL, F(model.mlp_bias), "false", NULL, "llama: model.mlp=plain: biases on the MLP's two projections (StarCoder2, Jais2)", NO_RANGE },
    { "model.swiglu_alpha", KEY_DOUBLE, F(model.swiglu_alpha), "1.702", NULL, "llama: activation=clamped_swiglu: the sigmoid's slope alpha (gpt-oss's swiglu_alpha)", R_OPEN_LO(0, 1e6) },
    { "model.swiglu_limit", KEY_DOUBLE, F(model.swiglu_limit), "7", NULL, "llama: activation=clamped_swiglu: the clamp's bound (gpt-oss's swiglu_limit)", R_OPEN_LO(0, 1e9) },
    { "model.attention_softcap", KEY_DOUBLE, F(model.attention_softcap), "0", NULL, "llama: attention scores (scaled) become c tanh(score / c) before the softmax; 0 = none (Gemma 2: 50, transformers' attn_logit_softcapping)", R(0, 1e9) },
    { "model.logit_softcap", KEY_DOUBLE, F(model.logit_softcap), "0", NULL, "llama: the LM head's logits become c tanh(logit / c); 0 = none (Gemma 2: 30, transformers' final_logit_softcapping)", R(0, 1e9) },
    { "model.attention_multiplier", KEY_DOUBLE, F(model.attention_multiplier), "0", NULL, "llama: attention scores are scaled by this instead of 1/sqrt(head size); 0 = that default (Granite's attention_multiplier)", R(0, 1e6) },
    { "model.query_scale_beta", KEY_DOUBLE, F(model.query_scale_beta), "0", NULL, "llama: queries at position p are multiplied by 1 + beta ln(1 + floor(p / model.query_scale_context)) after RoPE, a temperature for long contexts (Llama 4's; Ministral 3 and Mistral Small 4: llama_4_scaling_beta 0.1); 0 = none", R(0, 1e6) },
    { "model.query_scale_context", KEY_INT, F(model.query_scale_context), "0", NULL, "llama: the positions of each step of model.query_scale_beta (transformers: rope_parameters' original_max_position_embeddings); needed with it", R(0, INT_MAX) },
    { "model.query_scale_offset", KEY_INT, F(model.query_scale_offset), "0", NULL, "llama: model.query_scale_beta counts positions from this: the factor is 1 + beta ln(1 + floor((p + offset) / model.query_scale_context)) (Llama 4's attn_temperature_tuning: 1; Ministral 3: 0)", R(0, 1 << 24) },
    { "model.query_scale_layers", KEY_STRING, F(model.query_scale_layers), "all", "all|no_rope", "llama: model.query_scale_beta's layers: all (Ministral 3, Mistral Small 4), or no_rope = only model.no_rope_pattern's layers without RoPE (Llama 4)", NO_RANGE },
    { "model.residual_multiplier", KEY_DOUBLE, F(model.residual_multiplier), "1", NULL, "llama: attention's and the MLP's outputs are multiplied by this before they join the residual (Granite's residual_multiplier; with model.norm_position=post|both the normed outputs: HyperCLOVA X's)", R_OPEN_LO(0, 1e6) },
    { "model.logits_scaling", KEY_DOUBLE, F(model.logits_scaling), "1", NULL, "llama: the LM head's logits are divided by this (Granite's logits_scaling)", R_OPEN_LO(0, 1e9) },
    { "model.query_pre_attn_scalar", KEY_INT, F(model.query_pre_attn_scalar), "0", NULL, "llama: attention scores are scaled by 1/sqrt(this) instead of 1/sqrt(head size); 0 = the head size (Gemma 3's query_pre_attn_scalar)", R(0, 1 << 24) },
    { "model.sliding_window", KEY_INT, F(model.sliding_window), "0", NULL, "llama: each token attends to the last N positions only, itself included (Mistral v0.1's and Mixtral's sliding_window); 0, or N >= model.context: the whole causal context", R(0, 1 << 24) },
    { "model.sliding_layers", KEY_NUMBERS, F(model.sliding_layers), "", NULL, "llama: with model.sliding_window, the layers that slide, numbered from 0 in increasing order, attention layers all (transformers' layer_types sliding_attention where they are not all but every N-th: CWM, Granite SWA, LFM3); empty: model.sliding_window_pattern says", R(0, 1 << 20) },
    { "model.sliding_window_pattern", KEY_INT, F(model.sliding_window_pattern), "0", NULL, "llama: with model.sliding_window, every N-th layer (the N-th, 2N-th, ...) attends to the whole causal context and the others slide (OLMo 3: 4, Gemma 3: 6; transformers' layer_types); 0: every layer slides", R(0, 1 << 20) },
    { "model.sliding_chunked", KEY_BOOL, F(model.sliding_chunked), "false", NULL, "llama: with model.sliding_window = N, the sliding layers attend within fixed chunks of N positions (position p to the keys from N floor(p / N) to p: Llama 4's chunked attention, attention_chunk_size) instead of to the last N", NO_RANGE },
    { "model.no_rope_pattern", KEY_INT, F(model.no_rope_pattern), "0", NULL, "llama: every N-th layer (the N-th, 2N-th, ...) has no RoPE, its queries and keys enter attention unrotated (NoPE; SmolLM3: 4, transformers' no_rope_layers); 0: RoPE on every layer", R(0, 1 << 20) },
    { "model.sliding_rope", KEY_STRING, F(model.sliding_rope), "scaled", "scaled|plain", "llama: the sliding layers' RoPE with model.sliding_window_pattern: scaled = model.rope_scaling like the others'; plain = unscaled at model.sliding_rope_theta, the scaling is the full-attention layers' only (OLMo 3, Gemma 3)", NO_RANGE },
    { "model.sliding_rope_theta", KEY_DOUBLE, F(model.sliding_rope_theta), "0", NULL, "llama: model.sliding_rope=plain: the sliding layers' RoPE base frequency; 0 = model.rope_theta (Gemma 3: 10000 beside the full layers' 1000000)", R(0, 1e12) },
    { "model.experts", KEY_INT, F(model.experts), "0", NULL, "llama: mixture of experts: this many SwiGLU expert MLPs of model.ffn_width per block (with model.mlp=plain, plain ones: Nemotron-H's), a router picking model.experts_per_token of them for each token (Mixtral, Qwen3-MoE); 0 = one dense MLP", R(0, 4096) },
    { "model.experts_per_token", KEY_INT, F(model.experts_per_token), "2", NULL, "llama: model.experts > 0: how many experts each token is routed to (top-k of the router's softmax)", R(1, 4096) },
    { "model.router_norm_topk", KEY_BOOL, F(model.router_norm_topk), "true", NULL, "llama: model.experts > 0: the top-k routing weights are renormalized to sum to 1 (Mixtral; Qwen3-MoE's norm_topk_prob); false: the softmax probabilities as they are", NO_RANGE },
    { "model.router_aux_loss", KEY_DOUBLE, F(model.router_aux_loss), "0", NULL, "llama: model.experts > 0: coefficient of the load-balancing loss added to each sample's training loss (Switch Transformer, as transformers' router_aux_loss_coef with output_router_logits: E x sum over experts of their share of assignments x mean probability, over every block's tokens of a micro-batch; with a loss mask, scaled like the loss by the batch's targets over its trained targets); evaluation reports the cross-entropy alone; 0 = off", R(0, 1e6) },
    { "model.expert_bias", KEY_BOOL, F(model.expert_bias), "false", NULL, "llama: model.experts > 0: the router and every expert's two products have biases (gpt-oss)", NO_RANGE },
    { "model.expert_latent", KEY_INT, F(model.expert_latent), "0", NULL, "llama: model.experts > 0: the routed experts work in a latent of this width: each row projected down to it before them and their weighted sum projected back up after (Nemotron 3 Super's LatentMoE, moe_latent_size); the router and the shared expert read the row as it is; 0 = none, the experts read and write the model's width", R(0, 1 << 20) },
    { "model.shared_expert_ffn", KEY_INT, F(model.shared_expert_ffn), "0", NULL, "llama: model.experts > 0: a shared expert of this width (SwiGLU; with model.mlp=plain, plain) that every token also runs, its output scaled by the sigmoid of a learned gate (Qwen2-MoE's shared_expert_intermediate_size); 0 = none", R(0, 1 << 22) },
    { "model.shared_expert_gate", KEY_BOOL, F(model.shared_expert_gate), "true", NULL, "llama: model.shared_expert_ffn > 0: the shared expert's output is scaled by the sigmoid of a learned gate (Qwen2-MoE); false: added as it is (DeepSeek-V3, GLM-4.5: n_shared_experts x moe_intermediate_size wide)", NO_RANGE },
    { "model.router_scores", KEY_STRING, F(model.router_scores), "softmax", "softmax|sigmoid", "llama: model.experts > 0: the router's scores: softmax over the experts (Mixtral, Qwen3-MoE), or each logit's sigmoid (DeepSeek-V3, GLM-4.5: the chosen experts' weights are their scores, renormalized with model.router_norm_topk)", NO_RANGE },
    { "model.router_select_bias", KEY_BOOL, F(model.router_select_bias), "false", NULL, "llama: model.experts > 0: a per-expert bias (h.L.mlp.router.select_bias, DeepSeek-V3's e_score_correction_bias) is added to the scores to choose each token's experts, not to their weights; imported with the model and not trained (its gradient is zero)", NO_RANGE },
    { "model.router_groups", KEY_INT, F(model.router_groups), "1", NULL, "llama: model.experts > 0: group-limited routing: the experts in this many equal groups, each scored by its two best scores, a token's experts chosen from its model.router_topk_groups best groups (DeepSeek-V3's n_group); 1 = no groups", R(1, 4096) },
    { "model.router_group_score", KEY_STRING, F(model.router_group_score), "top2", "top2|max", "llama: model.router_groups > 1: a group's score: the sum of its two best experts' (top2: DeepSeek-V3, GLM-4.5, Mistral Small 4) or its best expert's (max: DeepSeek-V2's group_limited_greedy)", NO_RANGE },
    { "model.router_topk_groups", KEY_INT, F(model.router_topk_groups), "1", NULL, "llama: model.router_groups > 1: how many groups each token's experts come from (DeepSeek-V3's topk_group)", R(1, 4096) },
    { "model.router_norm_eps", KEY_DOUBLE, F(model.router_norm_eps), "0", NULL, "llama: model.router_scores=sigmoid with model.router_norm_topk: the chosen experts' weights are divided by their sum plus this (LFM2-MoE: 1e-6); 0 = DeepSeek-V3's 1e-20", R(0, 1) },
    { "model.router_scale", KEY_DOUBLE, F(model.router_scale), "1", NULL, "llama: model.experts > 0: the routed experts' weights are multiplied by this (DeepSeek-V3's and GLM-4.5's routed_scaling_factor)", R_OPEN_LO(0, 1e6) },
    { "model.dense_layers", KEY_INT, F(model.dense_layers), "0", NULL, "llama: model.experts > 0: the first N blocks have one dense SwiGLU MLP of model.dense_ffn_width instead of experts (DeepSeek-V3's and GLM-4.5's first_k_dense_replace); 0: experts in every block", R(0, 100000) },
    { "model.dense_ffn_width", KEY_INT, F(model.dense_ffn_width), "0", NULL, "llama: model.dense_layers > 0 or model.expert_layers: the dense blocks' MLP width (their intermediate_size; model.ffn_width is each expert's); 0 = 8/3 of model.width rounded up to 64", R(0, 1 << 22) },
    { "model.expert_layers", KEY_NUMBERS, F(model.expert_layers), "", NULL, "llama: model.experts > 0: the blocks with experts, numbered from 0 in increasing order (Llama 4's moe_layers, e.g. every second); the others have one dense MLP of model.dense_ffn_width; empty: every block after model.dense_layers", R(0, 1 << 20) },
    { "model.expert_input_scaled", KEY_BOOL, F(model.expert_input_scaled), "false", NULL, "llama: model.experts > 0: each chosen expert's weight multiplies the token's input to that expert instead of its output (Llama 4's routed_in)", NO_RANGE },

    { "data.path", KEY_STRING, F(data.path), "", NULL, "HDF5 dataset (accel_data); empty = built-in data: the synthetic task for classifiers, the Debian text corpus (prepared on first use) for language models; 'synthetic' = synthetic tokens", NO_RANGE },
    { "data.samples", KEY_INT64, F(data.samples), "65536", NULL, "size of the synthetic training set", R(1, SAMPLES_MAX) },
    { "data.eval_samples", KEY_INT64, F(data.eval_samples), "2048", NULL, "size of the synthetic validation set, 0 = no held-out evaluation (a dataset's val split is evaluated whole)", R(0, SAMPLES_MAX) },
    { "data.drop_last", KEY_BOOL, F(data.drop_last), "true", NULL, "drop an epoch's tail that does not fill a global batch (false: pad it with known duplicates)", NO_RANGE },
    { "data.document_mask", KEY_BOOL, F(data.document_mask), "false", NULL, "packed documents do not see each other: a token attends to its own document only, positions restart at each document, and a document's first token is not a target (the dataset must record document starts, as accel_data prepare does)", NO_RANGE },
    { "data.noise", KEY_DOUBLE, F(data.noise), "0.05", NULL, "fraction of random labels in the synthetic task", R(0, 1) },

    { "train.steps", KEY_INT, F(train.steps), "600", NULL, "optimizer steps", R(1, INT_MAX) },
    { "train.global_batch", KEY_INT, F(train.global_batch), "32", NULL, "samples per optimizer step over all ranks", R(1, 1 << 24) },
    { "train.grad_accum", KEY_INT, F(train.grad_accum), "1", NULL, "micro-batches accumulated per optimizer step", R(1, 1 << 24) },
    { "train.micro_batch", KEY_COUNT, F(train.micro_batch), "0", NULL, "samples per rank in one forward/backward pass: 0 = train.global_batch / (ranks x train.grad_accum); N = that many, train.grad_accum then making up the global batch; auto = the largest whose estimated peak memory fits train.memory_limit (no trial runs)", R(0, 1 << 24) },
    { "train.memory_limit", KEY_BYTES, F(train.memory_limit), "0", NULL, "bytes per rank train.micro_batch=auto plans for (e.g. 8GiB); 0 = the device's memory, or on CPUs the node's memory divided by its ranks", R(0, 1LL << 60) },
    { "train.recompute", KEY_STRING, F(train.recompute), "none", "none|mlp|block", "activation recompute (gpt, llama on CPUs): mlp = keep no MLP activations and recompute them in backward; block = keep only each block's input and recompute the block in backward", NO_RANGE },
    { "train.sync_each_batch", KEY_BOOL, F(train.sync_each_batch), "false", NULL, "all-reduce gradients after every micro-batch", NO_RANGE },
    { "train.clip", KEY_DOUBLE, F(train.clip), "1.0", NULL, "clip gradients to this global norm; 0 = off", R(0, 1e30) },
    { "train.loss_scale", KEY_DOUBLE, F(train.loss_scale), "65536", NULL, "fp16: initial dynamic loss scale (halved on overflow)", R_OPEN_LO(0, 1e30) },
    { "train.loss_scale_window", KEY_INT, F(train.loss_scale_window), "2000", NULL, "fp16: overflow-free steps before the loss scale doubles", R(1, INT_MAX) },
    { "train.peak_tflops", KEY_DOUBLE, F(train.peak_tflops), "0", NULL, "peak TFLOP/s of one rank's device in the training precision, the denominator of the MFU printed; 0 = auto: a table for known GPUs, a short matrix-product measurement on CPUs", R(0, 1e9) },
    { "train.log_every", KEY_INT, F(train.log_every), "25", NULL, "steps between progress lines", R(0, INT_MAX) },
    { "train.eval_every", KEY_INT, F(train.eval_every), "0", NULL, "optimizer steps between held-out evaluations (progress line and metrics row); 0 = only the final one", R(0, INT_MAX) },
    { "train.sample_tokens", KEY_INT, F(train.sample_tokens), "200", NULL, "language models: tokens of text generated at the end; 0 = none", R(0, 1 << 20) },
    { "train.sample_prompt", KEY_STRING, F(train.sample_prompt), "The ", NULL, "language models: prompt of the generated sample", NO_RANGE },
    { "train.init_from", KEY_STRING, F(train.init_from), "", NULL, "start training (step 0, fresh optimizer and schedule) from these weights: an accel checkpoint, weights exported by accel_ckpt (hdf5, safetensors, hf), an 'accel_ckpt import' file, a Hugging Face model directory or a PEFT LoRA adapter directory (merged into its base: docs/huggingface.md); the model keys come from the file; ignored when resume finds a checkpoint", NO_RANGE },
    { "train.metrics", KEY_STRING, F(train.metrics), "", NULL, "JSON-lines metrics file written by rank 0 (docs/metrics.md); a resume keeps its rows up to the checkpoint's step", NO_RANGE },
    { "train.tensorboard", KEY_STRING, F(train.tensorboard), "", NULL, "directory for TensorBoard event files written by rank 0 (docs/metrics.md); empty = none; a resume continues the same run", NO_RANGE },

    { "optim.name", KEY_STRING, F(optim.name), "adamw", "adamw|sgd", "optimizer", NO_RANGE },
    { "optim.lr", KEY_DOUBLE, F(optim.lr), "0.003", NULL, "peak learning rate", R_OPEN_LO(0, 1e3) },
    { "optim.beta1", KEY_DOUBLE, F(optim.beta1), "0.9", NULL, "AdamW beta1", R_OPEN_HI(0, 1) },
    { "optim.beta2", KEY_DOUBLE, F(optim.beta2), "0.999", NULL, "AdamW beta2", R_OPEN_HI(0, 1) },
    { "optim.eps", KEY_DOUBLE, F(optim.eps), "1e-8", NULL, "AdamW epsilon", R_OPEN_LO(0, 1) },
    { "optim.weight_decay", KEY_DOUBLE, F(optim.weight_decay), "0.01", NULL, "decoupled weight decay (not on biases and norms)", R(0, 1e3) },
    { "optim.momentum", KEY_DOUBLE, F(optim.momentum), "0.9", NULL, "SGD momentum", R_OPEN_HI(0, 1) },
    { "optim.schedule", KEY_STRING, F(optim.schedule), "cosine", "constant|linear|cosine", "learning-rate schedule over train.steps", NO_RANGE },
    { "optim.warmup", KEY_INT, F(optim.warmup), "30", NULL, "linear warm-up, in optimizer steps", R(0, INT_MAX) },
    { "optim.min_lr_ratio", KEY_DOUBLE, F(optim.min_lr_ratio), "0.1", NULL, "final learning rate as a fraction of optim.lr", R(0, 1) },
    { "optim.router_bias_update", KEY_DOUBLE, F(optim.router_bias_update), "0", NULL, "DeepSeek-V3's auxiliary-loss-free balancing: after each step every MoE block's selection bias (model.router_select_bias) moves by this much against its experts' load over the global batch, b_e -= rate sign(load_e - mean load) (DeepSeek-V3: 0.001); 0 = left as it is (fine-tuning)", R(0, 1) },

    { "lora.rank", KEY_INT, F(lora.rank), "0", NULL, "LoRA fine-tuning: the base weights stay frozen and low-rank adapters of this rank are trained on the lora.targets layers (W + scale B A, as PEFT's LoRA; docs/lora.md); needs train.init_from (the base: a model directory, an accel checkpoint, or a PEFT adapter to train further); checkpoints hold the adapters, 'accel_ckpt export --format peft' writes them; 0 = off, every weight trained", R(0, 1 << 16) },
    { "lora.alpha", KEY_DOUBLE, F(lora.alpha), "16", NULL, "LoRA: the adapters' scale is lora.alpha / lora.rank (PEFT's lora_alpha)", R_OPEN_LO(0, 1e6) },
    { "lora.targets", KEY_STRING, F(lora.targets), "all-linear", NULL, "LoRA: the layers adapted, as PEFT's target_modules: all-linear (every linear layer of the blocks: attention, MLP, shared experts; as PEFT, not the embeddings, the head, MoE routers or stacked experts), or module names, comma-separated (q_proj,v_proj); a name matches a module ending in it", NO_RANGE },
    { "lora.rslora", KEY_BOOL, F(lora.rslora), "false", NULL, "LoRA: scale lora.alpha / sqrt(lora.rank) (rank-stabilized LoRA, PEFT's use_rslora)", NO_RANGE },

    { "dist.strategy", KEY_STRING, F(dist.strategy), "ddp", "ddp|zero1|zero2|zero3", "data-parallel strategy", NO_RANGE },
    { "dist.hybrid", KEY_BOOL, F(dist.hybrid), "false", NULL, "shard within a node, replicate across nodes", NO_RANGE },
    { "dist.bucket_mb", KEY_DOUBLE, F(dist.bucket_mb), "0", NULL, "gradient bucket size in MiB; 0 = auto: 25, less for small models so backward overlaps 8 buckets", R(0, 1 << 20) },
    { "dist.comm_dtype", KEY_STRING, F(dist.comm_dtype), "fp32", "fp32|bf16|fp16", "type gradients travel in between ranks", NO_RANGE },
    { "dist.fake_nodes", KEY_INT, F(dist.fake_nodes), "0", NULL, "testing: group ranks into this many pretend nodes; 0 = real topology", R(0, 1 << 20) },
    { "dist.timeout", KEY_DOUBLE, F(dist.timeout), "600", NULL, "seconds any collective or I/O wait may take before the job aborts; 0 = forever", R(0, 1e9) },
    { "dist.trace_dir", KEY_STRING, F(dist.trace_dir), "accel-trace", NULL, "where each rank writes its flight recorder (its last collectives) when a wait passes dist.timeout or on SIGUSR2; the report of who never joined is printed from them (accel trace DIR)", NO_RANGE },

    { "log.level", KEY_STRING, F(log.level), "info", "error|warn|info|debug|trace", "log level (ACCEL_LOG_LEVEL)", NO_RANGE },
    { "log.all_ranks", KEY_BOOL, F(log.all_ranks), "false", NULL, "informational messages from every rank, not only rank 0", NO_RANGE },

    { "ckpt.dir", KEY_STRING, F(ckpt.dir), "", NULL, "directory of checkpoints (one parallel-HDF5 file each); empty = no checkpoints", NO_RANGE },
    { "ckpt.every", KEY_INT, F(ckpt.every), "0", NULL, "optimizer steps between checkpoints; 0 = only at the end and when stopped by a signal", R(0, INT_MAX) },
    { "ckpt.async", KEY_BOOL, F(ckpt.async), "false", NULL, "write checkpoints in the background: at the step boundary this rank's share of the state is copied to a snapshot (one more copy in memory) and a writer thread saves it while training goes on; one save in flight, the last one and a stop's are waited for (docs/checkpoint-format.md)", NO_RANGE },
    { "ckpt.keep_last", KEY_INT, F(ckpt.keep_last), "3", NULL, "checkpoints kept; older ones are removed only after a new one is complete; 0 = all", R(0, INT_MAX) },
    { "resume", KEY_STRING, F(resume), "", NULL, "continue from a checkpoint: auto (the newest in ckpt.dir, if any) or a file path", NO_RANGE },

    { "debug.stop_step", KEY_INT, F(debug.stop_step), "0", NULL, "testing: debug.stop_rank raises the stop trigger at this step; 0 = off", R(0, INT_MAX) },
    { "debug.stop_rank", KEY_INT, F(debug.stop_rank), "0", NULL, "testing: the rank that raises the stop trigger", R(0, INT_MAX) },
    { "debug.overflow_step", KEY_INT, F(debug.overflow_step), "0", NULL, "testing: debug.overflow_rank injects an inf gradient at this step; 0 = off", R(0, INT_MAX) },
    { "debug.overflow_rank", KEY_INT, F(debug.overflow_rank), "0", NULL, "testing: the rank that injects the overflow", R(0, INT_MAX) },
    { "debug.hang_at", KEY_STRING, F(debug.hang_at), "none", "none|startup|save|end", "testing: debug.hang_rank stops responding (sleeps until killed) at this point: before the start-up broadcasts, before the first checkpoint save, or before the end-of-run summaries", NO_RANGE },
    { "debug.hang_rank", KEY_INT, F(debug.hang_rank), "0", NULL, "testing: the rank that hangs at debug.hang_at", R(0, INT_MAX) },
};
#define NKEYS (sizeof g_schema / sizeof g_schema[0])

/* Enumerated keys parsed once, where the configuration is read: the value of each of the key's
 * choices (in the order of its "a|b|c"), stored in an int-sized enum field next to its text. */
static const int g_dtype_ids[] = { ACCEL_F32, ACCEL_BF16, ACCEL_F16 };   /* "fp32|bf16|fp16" */
static const int g_strategy_ids[] = { ACCEL_DDP, ACCEL_ZERO1, ACCEL_ZERO2, ACCEL_ZERO3 };
static const int g_recompute_ids[] = { ACCEL_RECOMPUTE_NONE, ACCEL_RECOMPUTE_MLP, ACCEL_RECOMPUTE_BLOCK };
static const struct {
    const char *key;
    const int *ids;
    size_t offset;
} g_enum_ids[] = {
    { "precision", g_dtype_ids, offsetof(accel_config_t, precision_id) },
    { "dist.strategy", g_strategy_ids, offsetof(accel_config_t, dist.strategy_id) },
    { "dist.comm_dtype", g_dtype_ids, offsetof(accel_config_t, dist.comm_dtype_id) },
    { "train.recompute", g_recompute_ids, offsetof(accel_config_t, train.recompute_id) },
};
_Static_assert(sizeof(accel_dtype_t) == sizeof(int) && sizeof(accel_strategy_t) == sizeof(int) &&
               sizeof(accel_recompute_t) == sizeof(int),
               "enumerated keys are stored as int");

const char *accel_strategy_name(accel_strategy_t s)
{
    static const char *const names[] = { "ddp", "zero1", "zero2", "zero3" };
    return (unsigned)s < 4 ? names[s] : "?";
}

static void set_enum_id(accel_config_t *cfg, const char *key, int choice)
{
    for (size_t i = 0; i < sizeof g_enum_ids / sizeof g_enum_ids[0]; i++)
        if (!strcmp(g_enum_ids[i].key, key))
            *(int *)((char *)cfg + g_enum_ids[i].offset) = g_enum_ids[i].ids[choice];
}

static const key_spec_t *find_key(const char *key)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (!strcmp(g_schema[i].key, key)) return &g_schema[i];
    return NULL;
}

/* Suggest the closest known key for a typo: the one sharing the longest prefix. */
static const char *closest_key(const char *key)
{
    const char *best = NULL;
    size_t best_len = 2;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t n = 0;
        while (key[n] && key[n] == g_schema[i].key[n]) n++;
        const char *dot = strchr(key, '.'), *kdot = strchr(g_schema[i].key, '.');
        const char *leaf = dot ? dot + 1 : key, *kleaf = kdot ? kdot + 1 : g_schema[i].key;
        if (!strcmp(leaf, kleaf)) n += 8;          /* same leaf in another section */
        if (n > best_len) { best_len = n; best = g_schema[i].key; }
    }
    return best;
}

static bool parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false", "no", "off", "0" };
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) { *out = true; return true; }
        if (!strcasecmp(v, no[i])) { *out = false; return true; }
    }
    return false;
}

accel_status_t accel_parse_bytes(const char *text, size_t *bytes)
{
    if (!text) return ACCEL_ERR_INVALID;
    while (isspace((unsigned char)*text)) text++;
    if (!isdigit((unsigned char)*text) && *text != '.') return ACCEL_ERR_INVALID;
    errno = 0;
    char *end;
    double v = strtod(text, &end);
    if (errno || end == text || v < 0) return ACCEL_ERR_INVALID;
    while (isspace((unsigned char)*end)) end++;
    static const struct { const char *suffix; double mult; } units[] = {
        { "", 1 }, { "b", 1 },
        { "k", 1024.0 }, { "kib", 1024.0 }, { "kb", 1e3 },
        { "m", 1048576.0 }, { "mib", 1048576.0 }, { "mb", 1e6 },
        { "g", 1073741824.0 }, { "gib", 1073741824.0 }, { "gb", 1e9 },
        { "t", 1099511627776.0 }, { "tib", 1099511627776.0 }, { "tb", 1e12 },
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcasecmp(end, units[i].suffix)) {
            double b = v * units[i].mult;
            if (b >= 1.8e19) return ACCEL_ERR_INVALID;
            *bytes = (size_t)(b + 0.5);
            return ACCEL_OK;
        }
    return ACCEL_ERR_INVALID;
}

/* A size key's value: accel_parse_bytes, within int64. */
static bool parse_bytes(const char *v, int64_t *out)
{
    size_t bytes;
    if (accel_parse_bytes(v, &bytes) != ACCEL_OK || bytes > (size_t)INT64_MAX) return false;
    *out = (int64_t)bytes;
    return true;
}

/* The position of v among "a|b|c", or -1. */
static int choice_index(const char *choices, const char *v)
{
    size_t n = strlen(v);
    int i = 0;
    for (const char *p = choices; p && *p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return i;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

/* A range end as people write it: 1024, 1099511627776, 0.5, 1e+30. */
static void format_bound(double x, char *out, size_t outlen)
{
    if (x == (double)INT_MAX) snprintf(out, outlen, "%d", INT_MAX);
    else if (x == floor(x) && fabs(x) < 1e15) snprintf(out, outlen, "%.0f", x);
    else snprintf(out, outlen, "%g", x);
}

static bool in_range(const key_spec_t *k, double v)
{
    if (!(k->range & RANGE_SET)) return true;
    bool lo_ok = k->range & RANGE_OPEN_LO ? v > k->lo : v >= k->lo;
    bool hi_ok = k->range & RANGE_OPEN_HI ? v < k->hi : v <= k->hi;
    return lo_ok && hi_ok;
}

/* One number as KEY_DOUBLE takes it, from s up to *end: 1 read, 0 not a number (or a subnormal,
 * which may not print and read back the same), -1 negative. */
static int parse_number(const char *s, char **end, double *out)
{
    errno = 0;
    double v = strtod(s, end);
    if (*end == s || errno || !isfinite(v) || (v != 0 && fabs(v) < DBL_MIN)) return 0;
    if (v < 0) return -1;
    *out = v == 0 ? 0.0 : v;                        /* -0 prints as "-0" */
    return 1;
}

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

/* The first byte of s that is not part of well-formed UTF-8 (no overlong forms, no surrogates,
 * nothing above U+10FFFF), or -1 when s is valid. */
static long utf8_invalid_at(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (p[i]) {
        unsigned c = p[i];
        int n = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
        if (n < 0) return (long)i;
        unsigned lo = 0x80, hi = 0xBF;              /* the allowed range of the second byte */
        if (c == 0xE0) lo = 0xA0;
        else if (c == 0xED) hi = 0x9F;
        else if (c == 0xF0) lo = 0x90;
        else if (c == 0xF4) hi = 0x8F;
        for (int j = 1; j <= n; j++) {
            unsigned b = p[i + j];
            if (b < (j == 1 ? lo : 0x80) || b > (j == 1 ? hi : 0xBF)) return (long)i;
        }
        i += (size_t)n + 1;
    }
    return -1;
}

accel_status_t accel_config_set(accel_config_t *cfg, const char *key, const char *value, char *err,
                                size_t errlen)
{
    char dummy[8];
    if (!err) { err = dummy; errlen = sizeof dummy; }
    const key_spec_t *k = find_key(key);
    if (!k) {
        const char *hint = closest_key(key);
        if (hint)
            snprintf(err, errlen, "unknown configuration key '%s'\n--> hint: did you mean '%s'? "
                     "('accel config --defaults' lists every key)", key, hint);
        else
            snprintf(err, errlen, "unknown configuration key '%s'\n--> hint: "
                     "'accel config --defaults' lists every key", key);
        return ACCEL_ERR_CONFIG;
    }
    char *field = (char *)cfg + k->offset;
    char *end = NULL;
    double as_double = 0;                           /* the parsed number, for the range check */
    /* strto* skip leading blanks, and strtoull reads " -1" as 2^64 - 1: numbers start at once. */
    if (k->type != KEY_STRING && isspace((unsigned char)value[0])) goto bad_type;
    errno = 0;
    switch (k->type) {
    case KEY_INT: {
        long v = strtol(value, &end, 10);
        if (!*value || *end || errno || v < INT_MIN || v > INT_MAX) goto bad_type;
        if (v < 0) goto negative;
        as_double = (double)v;
        if (!in_range(k, as_double)) goto out_of_range;
        *(int *)field = (int)v;
        break;
    }
    case KEY_INT64: {
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || errno) goto bad_type;
        if (v < 0) goto negative;
        as_double = (double)v;
        if (!in_range(k, as_double)) goto out_of_range;
        *(int64_t *)field = v;
        break;
    }
    case KEY_U64: {
        if (value[0] == '-') goto negative;
        unsigned long long v = strtoull(value, &end, 10);
        if (!*value || *end || errno) goto bad_type;
        *(uint64_t *)field = v;
        break;
    }
    case KEY_DOUBLE: {
        double v;
        int got = parse_number(value, &end, &v);
        if (got == 0 || *end) goto bad_type;
        if (got < 0) goto negative;
        as_double = v;
        if (!in_range(k, as_double)) goto out_of_range;
        *(double *)field = v;
        break;
    }
    case KEY_NUMBERS: {             /* "a,b,c" or "[a, b, c]"; "" and "[]" are the empty list */
        accel_numbers_t list;
        memset(&list, 0, sizeof list);              /* equal values, equal bytes */
        const bool bracket = value[0] == '[';
        const char *p = skip_blanks(value + bracket);
        while (*p && *p != ']') {
            double v;
            int got = parse_number(p, &end, &v);
            if (got == 0) goto bad_type;
            if (got < 0) goto negative;
            if (!in_range(k, v)) goto out_of_range;
            if (list.n == ACCEL_NUMBERS_MAX) {
                snprintf(err, errlen, "configuration key '%s' takes at most %d numbers", key, ACCEL_NUMBERS_MAX);
                return ACCEL_ERR_CONFIG;
            }
            list.v[list.n++] = v;
            p = skip_blanks(end);
            if (*p != ',') break;
            p = skip_blanks(p + 1);
            if (!*p || *p == ']') goto bad_type;    /* a trailing comma */
        }
        if (bracket != (*p == ']') || (bracket && *skip_blanks(p + 1))) goto bad_type;
        if (!bracket && *p) goto bad_type;
        *(accel_numbers_t *)field = list;
        break;
    }
    case KEY_BOOL:
        if (!parse_bool(value, (bool *)field)) goto bad_type;
        break;
    case KEY_COUNT: {
        if (!strcmp(value, "auto")) { *(int *)field = ACCEL_AUTO; break; }
        long v = strtol(value, &end, 10);
        if (!*value || *end || errno || v > INT_MAX) goto bad_type;
        if (v < 0) goto negative;
        as_double = (double)v;
        if (!in_range(k, as_double)) goto out_of_range;
        *(int *)field = (int)v;
        break;
    }
    case KEY_BYTES: {
        if (value[0] == '-') goto negative;
        int64_t v;
        if (!parse_bytes(value, &v)) goto bad_type;
        as_double = (double)v;
        if (!in_range(k, as_double)) goto out_of_range;
        *(int64_t *)field = v;
        break;
    }
    case KEY_STRING: {
        /* The configuration is printed as YAML and stored in checkpoints; YAML is Unicode. */
        long bad = utf8_invalid_at(value);
        if (bad >= 0) {
            snprintf(err, errlen, "configuration key '%s': value is not valid UTF-8 (byte %ld is 0x%02x)"
                     "\n--> hint: write the value in UTF-8 (e.g. convert a Latin-1 path with iconv)",
                     key, bad, (unsigned char)value[bad]);
            return ACCEL_ERR_CONFIG;
        }
        int choice = k->choices ? choice_index(k->choices, value) : -1;
        if (k->choices && choice < 0) {
            snprintf(err, errlen, "configuration key '%s' has value '%s'; expected one of %s",
                     key, value, k->choices);
            return ACCEL_ERR_CONFIG;
        }
        size_t len = strlen(value);
        if (len >= k->size) {
            snprintf(err, errlen, "configuration key '%s': value is longer than %zu characters",
                     key, k->size - 1);
            return ACCEL_ERR_CONFIG;
        }
        memset(field, 0, k->size);                  /* equal values, equal bytes */
        memcpy(field, value, len);
        if (choice >= 0) set_enum_id(cfg, k->key, choice);
        break;
    }
    }
    return ACCEL_OK;
bad_type:
    snprintf(err, errlen, "configuration key '%s' expects %s, got '%s'", key,
             k->type == KEY_BOOL ? "true or false"
             : k->type == KEY_DOUBLE ? "a number"
             : k->type == KEY_COUNT ? "an integer or auto"
             : k->type == KEY_BYTES ? "a size in bytes, optionally with a unit (e.g. 512MiB, 8GiB, 2GB)"
             : k->type == KEY_NUMBERS ? "a list of numbers (e.g. [1, 1.5, 2.25], or 1,1.5,2.25)"
             : "an integer", value);
    return ACCEL_ERR_CONFIG;
negative:
    snprintf(err, errlen, "configuration key '%s' must not be negative, got '%s'", key, value);
    return ACCEL_ERR_CONFIG;
out_of_range: {
    char lo[32], hi[32];
    format_bound(k->lo, lo, sizeof lo);
    format_bound(k->hi, hi, sizeof hi);
    snprintf(err, errlen, "configuration key '%s' has value '%s', outside its range %c%s, %s%c\n"
             "--> hint: %s takes %c%s, %s%c (%s)", key, value,
             k->range & RANGE_OPEN_LO ? '(' : '[', lo, hi, k->range & RANGE_OPEN_HI ? ')' : ']',
             key, k->range & RANGE_OPEN_LO ? '(' : '[', lo, hi, k->range & RANGE_OPEN_HI ? ')' : ']',
             k->help);
    return ACCEL_ERR_CONFIG;
}
}

bool accel_layer_listed(const accel_numbers_t *list, int l)
{
    for (int i = 0; i < list->n; i++)
        if ((int)list->v[i] == l) return true;
    return false;
}

void accel_config_defaults(accel_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NKEYS; i++)
        (void)accel_config_set(cfg, g_schema[i].key, g_schema[i].def, NULL, 0);
}

/* Hostile input stays cheap: a configuration is a few KiB, and nests at most "section: key: value"
 * (a mapping deeper than this is refused at once, before libyaml reads further). */
#define CONFIG_MAX_BYTES ((size_t)1 << 20)
#define CONFIG_MAX_DEPTH 32

/* One YAML text being read: libyaml's events, walked as they come, so that the first problem stops
 * the parse (a document tree would be built whole first, slowly for deep nesting). */
typedef struct {
    accel_config_t *cfg;
    yaml_parser_t parser;
    const char *path;
    const unsigned char *text;      /* the input, size bytes */
    size_t size;
    char *err;
    size_t errlen;
    struct { char key[64]; unsigned long line; } seen[NKEYS * 2];   /* keys and sections given */
    size_t nseen;
} yaml_reader_t;

static unsigned long line_of(const yaml_event_t *e) { return (unsigned long)e->start_mark.line + 1; }

static accel_status_t next_event(yaml_reader_t *r, yaml_event_t *e)
{
    if (yaml_parser_parse(&r->parser, e)) return ACCEL_OK;
    if (r->parser.error == YAML_READER_ERROR) {     /* libyaml knows the byte, we count the line */
        size_t at = r->parser.problem_offset < r->size ? r->parser.problem_offset : r->size;
        unsigned long line = 1;
        for (size_t i = 0; i < at; i++) line += r->text[i] == '\n';
        snprintf(r->err, r->errlen, "%s:%lu: byte %zu (0x%02x): %s\n--> hint: a configuration is UTF-8 "
                 "text without control characters (convert a Latin-1 file with iconv)", r->path, line, at,
                 at < r->size ? r->text[at] : 0u, r->parser.problem ? r->parser.problem : "not UTF-8 text");
        return ACCEL_ERR_CONFIG;
    }
    snprintf(r->err, r->errlen, "%s:%lu:%lu: malformed YAML: %s%s%s", r->path,
             (unsigned long)r->parser.problem_mark.line + 1, (unsigned long)r->parser.problem_mark.column + 1,
             r->parser.problem ? r->parser.problem : "parse error", r->parser.context ? " " : "",
             r->parser.context ? r->parser.context : "");
    return ACCEL_ERR_CONFIG;
}

/* "model" for "model.name": a prefix of some key, followed by a dot. */
static bool is_section(const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < NKEYS; i++)
        if (!strncmp(g_schema[i].key, name, len) && g_schema[i].key[len] == '.') return true;
    return false;
}

static accel_status_t load_mapping(yaml_reader_t *r, const char *prefix, unsigned long line, int depth);

/* The items of a list of numbers whose start event (on `line`) was just read, up to its end event,
 * set as "a,b,c" (accel_config_set checks each). */
static accel_status_t load_numbers(yaml_reader_t *r, const char *key, unsigned long line)
{
    size_t len = 0, cap = 256;
    char *joined = malloc(cap);
    accel_status_t st = joined ? ACCEL_OK : ACCEL_ERR_NOMEM;
    while (st == ACCEL_OK) {
        yaml_event_t e;
        if ((st = next_event(r, &e)) != ACCEL_OK) break;
        if (e.type == YAML_SEQUENCE_END_EVENT) { yaml_event_delete(&e); break; }
        const size_t n = e.type == YAML_SCALAR_EVENT ? e.data.scalar.length : 0;
        if (e.type != YAML_SCALAR_EVENT || !n || strlen((const char *)e.data.scalar.value) != n ||
            memchr(e.data.scalar.value, ',', n)) {
            snprintf(r->err, r->errlen, "%s:%lu: key '%s' takes a list of numbers; item %s is not one",
                     r->path, line_of(&e), key, e.type == YAML_SCALAR_EVENT ? (const char *)e.data.scalar.value : "(a list or mapping)");
            st = ACCEL_ERR_CONFIG;
        } else if (len + n + 2 > cap) {
            char *grown = realloc(joined, (cap = 2 * (len + n + 2)));
            if (!grown) st = ACCEL_ERR_NOMEM;
            else joined = grown;
        }
        if (st == ACCEL_OK) {
            if (len) joined[len++] = ',';
            memcpy(joined + len, e.data.scalar.value, n);
            len += n;
        }
        yaml_event_delete(&e);
    }
    if (st == ACCEL_OK) {
        joined[len] = '\0';
        char msg[768];
        st = accel_config_set(r->cfg, key, joined, msg, sizeof msg);
        if (st != ACCEL_OK) snprintf(r->err, r->errlen, "%s:%lu: %s", r->path, line, msg);
    }
    free(joined);
    return st;
}

/* The value event e of key `prefix` (empty: the document's root). */
static accel_status_t load_value(yaml_reader_t *r, yaml_event_t *e, const char *prefix, int depth)
{
    const unsigned long line = line_of(e);
    switch (e->type) {
    case YAML_MAPPING_START_EVENT:
        return load_mapping(r, prefix, line, depth + 1);
    case YAML_SEQUENCE_START_EVENT:
        if (*prefix && find_key(prefix) && find_key(prefix)->type == KEY_NUMBERS)    /* a key's list */
            return load_numbers(r, prefix, line);
        if (!*prefix)
            snprintf(r->err, r->errlen, "%s:%lu: expected a mapping of configuration keys, found a list",
                     r->path, line);
        else
            snprintf(r->err, r->errlen, "%s:%lu: key '%s' has a list value; every key takes a single value",
                     r->path, line, prefix);
        return ACCEL_ERR_CONFIG;
    case YAML_ALIAS_EVENT:
        snprintf(r->err, r->errlen, "%s:%lu: key '%s' is an alias (*%s)\n--> hint: write the value "
                 "itself; a configuration takes no anchors and aliases", r->path, line, prefix,
                 (const char *)e->data.alias.anchor);
        return ACCEL_ERR_CONFIG;
    case YAML_SCALAR_EVENT: {
        const char *v = (const char *)e->data.scalar.value;
        if (!*prefix) {
            if (e->data.scalar.length == 0) return ACCEL_OK;   /* an empty document */
            snprintf(r->err, r->errlen, "%s:%lu: expected a mapping of configuration keys, found '%.64s'",
                     r->path, line, v);
            return ACCEL_ERR_CONFIG;
        }
        if (strlen(v) != e->data.scalar.length) {
            snprintf(r->err, r->errlen, "%s:%lu: the value of key '%s' holds a NUL character (\\0)",
                     r->path, line, prefix);
            return ACCEL_ERR_CONFIG;
        }
        char msg[768];
        accel_status_t st = accel_config_set(r->cfg, prefix, v, msg, sizeof msg);
        if (st != ACCEL_OK) snprintf(r->err, r->errlen, "%s:%lu: %s", r->path, line, msg);
        return st;
    }
    default:
        snprintf(r->err, r->errlen, "%s:%lu: unexpected YAML structure", r->path, line);
        return ACCEL_ERR_CONFIG;
    }
}

/* key (a section, a key, or section.key written flat) with its value event ve. */
static accel_status_t load_pair(yaml_reader_t *r, const char *key, unsigned long kline, yaml_event_t *ve,
                                int depth)
{
    const bool leaf = find_key(key) != NULL, section = !leaf && is_section(key);
    if (!leaf && !section) {
        char msg[512];
        (void)accel_config_set(r->cfg, key, "", msg, sizeof msg);    /* the unknown-key message */
        snprintf(r->err, r->errlen, "%s:%lu: %s", r->path, kline, msg);
        return ACCEL_ERR_CONFIG;
    }
    if (leaf && ve->type == YAML_MAPPING_START_EVENT) {
        snprintf(r->err, r->errlen, "%s:%lu: key '%s' takes a single value, not a mapping", r->path,
                 line_of(ve), key);
        return ACCEL_ERR_CONFIG;
    }
    if (section && ve->type == YAML_SCALAR_EVENT) {
        for (size_t i = 0; i < NKEYS; i++)
            if (!strncmp(g_schema[i].key, key, strlen(key)) && g_schema[i].key[strlen(key)] == '.') {
                snprintf(r->err, r->errlen, "%s:%lu: '%s' is a section (e.g. '%s'), not a value", r->path,
                         kline, key, g_schema[i].key);
                break;
            }
        return ACCEL_ERR_CONFIG;
    }
    /* The same key twice (in one mapping, or once nested and once written flat) is a mistake
     * either way round: refuse it rather than let the later one win silently. */
    for (size_t i = 0; i < r->nseen; i++)
        if (!strcmp(r->seen[i].key, key)) {
            snprintf(r->err, r->errlen, "%s:%lu: key '%s' is given twice, on line %lu and on line %lu\n"
                     "--> hint: keep one of them", r->path, kline, key, r->seen[i].line, kline);
            return ACCEL_ERR_CONFIG;
        }
    const size_t len = strlen(key);
    if (r->nseen < sizeof r->seen / sizeof r->seen[0] && len < sizeof r->seen[0].key) {
        memcpy(r->seen[r->nseen].key, key, len + 1);
        r->seen[r->nseen++].line = kline;
    }
    return load_value(r, ve, key, depth);
}

/* The pairs of a mapping whose start event (on `line`) was just read, up to its end event. */
static accel_status_t load_mapping(yaml_reader_t *r, const char *prefix, unsigned long line, int depth)
{
    if (depth > CONFIG_MAX_DEPTH) {
        snprintf(r->err, r->errlen, "%s:%lu: mappings nested more than %d deep\n--> hint: a "
                 "configuration nests at most 'section: key: value'", r->path, line, CONFIG_MAX_DEPTH);
        return ACCEL_ERR_CONFIG;
    }
    for (;;) {
        yaml_event_t ke, ve;
        accel_status_t st = next_event(r, &ke);
        if (st != ACCEL_OK) return st;
        if (ke.type == YAML_MAPPING_END_EVENT) { yaml_event_delete(&ke); return ACCEL_OK; }
        const unsigned long kline = line_of(&ke);
        char key[256];
        if (ke.type != YAML_SCALAR_EVENT || strlen((const char *)ke.data.scalar.value) != ke.data.scalar.length) {
            snprintf(r->err, r->errlen, "%s:%lu: mapping keys must be plain names", r->path, kline);
            yaml_event_delete(&ke);
            return ACCEL_ERR_CONFIG;
        }
        int n = snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", (const char *)ke.data.scalar.value);
        yaml_event_delete(&ke);
        if (n >= (int)sizeof key) {
            snprintf(r->err, r->errlen, "%s:%lu: key too long", r->path, kline);
            return ACCEL_ERR_CONFIG;
        }
        if ((st = next_event(r, &ve)) != ACCEL_OK) return st;
        st = load_pair(r, key, kline, &ve, depth);
        yaml_event_delete(&ve);
        if (st != ACCEL_OK) return st;
    }
}

/* The one loader: size bytes of YAML text (a file's, or a configuration stored in a checkpoint),
 * applied to cfg over what it holds; path names the text in messages. */
static accel_status_t load_text(accel_config_t *cfg, const char *text, size_t size, const char *path,
                                char *err, size_t errlen)
{
    if (size > CONFIG_MAX_BYTES) {
        snprintf(err, errlen, "%s: %zu bytes is too large for a configuration (the limit is %zu)\n"
                 "--> hint: is this the right file?", path, size, CONFIG_MAX_BYTES);
        return ACCEL_ERR_CONFIG;
    }
    yaml_reader_t *r = calloc(1, sizeof *r);
    if (!r) return ACCEL_ERR_NOMEM;
    *r = (yaml_reader_t){ .cfg = cfg, .path = path, .text = (const unsigned char *)text, .size = size,
                          .err = err, .errlen = errlen };
    yaml_parser_initialize(&r->parser);
    yaml_parser_set_input_string(&r->parser, (const unsigned char *)text, size);
    yaml_event_t e;
    accel_status_t st;
    bool have_doc = false;
    while ((st = next_event(r, &e)) == ACCEL_OK) {
        const yaml_event_type_t type = e.type;
        const unsigned long line = line_of(&e);
        if (type == YAML_DOCUMENT_START_EVENT && have_doc) {
            snprintf(err, errlen, "%s:%lu: a second YAML document ('---'); a configuration is one "
                     "document\n--> hint: merge the two, or remove the '---' line", path, line);
            st = ACCEL_ERR_CONFIG;
        } else if (type == YAML_DOCUMENT_START_EVENT) {
            have_doc = true;
            yaml_event_t root;
            if ((st = next_event(r, &root)) == ACCEL_OK) {
                st = load_value(r, &root, "", 0);
                yaml_event_delete(&root);
            }
        }
        yaml_event_delete(&e);
        if (st != ACCEL_OK || type == YAML_STREAM_END_EVENT) break;
    }
    yaml_parser_delete(&r->parser);
    free(r);
    return st;
}

static accel_status_t load_file(accel_config_t *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open configuration file '%s': %s", path, strerror(errno));
        return errno == ENOENT ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_IO;
    }
    /* One byte beyond the limit tells a too-large file (a FIFO or /dev/zero has no size to stat). */
    char *text = malloc(CONFIG_MAX_BYTES + 1);
    size_t n = text ? fread(text, 1, CONFIG_MAX_BYTES + 1, f) : 0;
    int read_error = ferror(f);
    fclose(f);
    if (!text) return ACCEL_ERR_NOMEM;
    accel_status_t st;
    if (read_error) {
        snprintf(err, errlen, "cannot read configuration file '%s'", path);
        st = ACCEL_ERR_IO;
    } else if (n > CONFIG_MAX_BYTES) {
        snprintf(err, errlen, "%s: larger than %zu bytes, too large for a configuration\n"
                 "--> hint: is this the right file?", path, CONFIG_MAX_BYTES);
        st = ACCEL_ERR_CONFIG;
    } else {
        st = load_text(cfg, text, n, path, err, errlen);
    }
    free(text);
    return st;
}

accel_status_t accel_config_from_yaml_buffer(accel_config_t *cfg, const void *yaml, size_t size,
                                             const char *what, char *err, size_t errlen)
{
    char dummy[8];
    if (!err) { err = dummy; errlen = sizeof dummy; }
    err[0] = '\0';
    accel_config_defaults(cfg);
    return load_text(cfg, yaml, size, what, err, errlen);
}

accel_status_t accel_config_from_yaml(accel_config_t *cfg, const char *yaml, const char *what, char *err,
                                      size_t errlen)
{
    return accel_config_from_yaml_buffer(cfg, yaml, strlen(yaml), what, err, errlen);
}

bool accel_config_is_override(const char *text)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text) return false;
    for (const char *p = text; p < eq; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_') return false;
    return true;
}

/* ACCEL_TRAIN_GLOBAL_BATCH <-> train.global_batch */
static void env_name(const char *key, char *out, size_t outlen)
{
    size_t n = (size_t)snprintf(out, outlen, "ACCEL_");
    for (const char *p = key; *p && n + 1 < outlen; p++)
        out[n++] = *p == '.' ? '_' : (char)toupper((unsigned char)*p);
    out[n] = '\0';
}

static const char *env_lookup(char *const envp[], const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

accel_status_t accel_config_load(accel_config_t *cfg, const char *path, int noverrides,
                                 char *const overrides[], char *const envp[], char *err,
                                 size_t errlen)
{
    char dummy[8];
    if (!err) { err = dummy; errlen = sizeof dummy; }
    err[0] = '\0';
    accel_config_defaults(cfg);
    if (path) {
        accel_status_t st = load_file(cfg, path, err, errlen);
        if (st != ACCEL_OK) return st;
    }
    for (int i = 0; i < noverrides; i++) {
        const char *eq = strchr(overrides[i], '=');
        if (!accel_config_is_override(overrides[i])) {
            snprintf(err, errlen, "argument '%s' is not a key=value override", overrides[i]);
            return ACCEL_ERR_CONFIG;
        }
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - overrides[i]), overrides[i]);
        char msg[512];
        accel_status_t st = accel_config_set(cfg, key, eq + 1, msg, sizeof msg);
        if (st != ACCEL_OK) {
            snprintf(err, errlen, "command line: %s", msg);
            return st;
        }
    }
    if (!envp) envp = environ;
    for (size_t i = 0; i < NKEYS; i++) {
        char name[128];
        env_name(g_schema[i].key, name, sizeof name);
        const char *v = env_lookup(envp, name);
        if (!v) continue;
        char msg[512];
        accel_status_t st = accel_config_set(cfg, g_schema[i].key, v, msg, sizeof msg);
        if (st != ACCEL_OK) {
            snprintf(err, errlen, "environment variable %s: %s", name, msg);
            return st;
        }
    }
    return ACCEL_OK;
}

/* The longest printed value: a string of ACCEL_STR_MAX - 1 bytes, each escaped as \xNN, quoted, or
 * a full list of numbers (each at most 24 characters and ", "). */
#define STRING_VALUE_MAX (4 * ACCEL_STR_MAX + 8)
#define NUMBERS_VALUE_MAX (26 * ACCEL_NUMBERS_MAX + 4)
#define VALUE_MAX (STRING_VALUE_MAX > NUMBERS_VALUE_MAX ? STRING_VALUE_MAX : NUMBERS_VALUE_MAX)

/* Characters a plain YAML scalar may hold anywhere without changing meaning (a space only inside). */
static bool plain_yaml(const char *s)
{
    size_t n = strlen(s);
    if (!n || !(isalnum((unsigned char)s[0]) || strchr("/_.", s[0])) || s[n - 1] == ' ') return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._/+- ", *p)) return false;
    return true;
}

/* The code point of the UTF-8 sequence at s (valid: accel_config_set checked it); *len its bytes. */
static unsigned utf8_decode(const unsigned char *s, int *len)
{
    if (s[0] < 0x80) { *len = 1; return s[0]; }
    if (s[0] < 0xE0) { *len = 2; return (s[0] & 0x1Fu) << 6 | (s[1] & 0x3Fu); }
    if (s[0] < 0xF0) { *len = 3; return (s[0] & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu); }
    *len = 4;
    return (s[0] & 0x07u) << 18 | (s[1] & 0x3Fu) << 12 | (s[2] & 0x3Fu) << 6 | (s[3] & 0x3Fu);
}

/* A double-quoted YAML scalar libyaml reads back to the same bytes: \\, \", \n, \t, and \x, \u or
 * \U escapes for every character a YAML reader refuses or folds (controls, C1, NEL, the line and
 * paragraph separators, BOM, U+FFFE/U+FFFF). */
static void quote_yaml(const char *s, char *out, size_t outlen)
{
    size_t n = 0;
    out[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p && n + 12 < outlen;) {
        int len;
        unsigned c = utf8_decode(p, &len);
        if (c == '"' || c == '\\') { out[n++] = '\\'; out[n++] = (char)c; }
        else if (c == '\n') { out[n++] = '\\'; out[n++] = 'n'; }
        else if (c == '\t') { out[n++] = '\\'; out[n++] = 't'; }
        else if (c < 0x20 || (c >= 0x7F && c < 0xA0)) n += (size_t)snprintf(out + n, outlen - n, "\\x%02X", c);
        else if (c == 0x2028 || c == 0x2029 || c == 0xFEFF || c == 0xFFFE || c == 0xFFFF)
            n += (size_t)snprintf(out + n, outlen - n, "\\u%04X", c);
        else { memcpy(out + n, p, (size_t)len); n += (size_t)len; }
        p += len;
    }
    out[n++] = '"';
    out[n] = '\0';
}

/* The shortest of %.15g, %.16g, %.17g that reads back as the same double. */
static void format_double(double x, char *out, size_t outlen)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, outlen, "%.*g", prec, x);
        if (strtod(out, NULL) == x) return;
    }
}

static void format_value(const accel_config_t *cfg, const key_spec_t *k, char *out, size_t outlen)
{
    const char *field = (const char *)cfg + k->offset;
    switch (k->type) {
    case KEY_INT: snprintf(out, outlen, "%d", *(const int *)field); break;
    case KEY_INT64: snprintf(out, outlen, "%lld", (long long)*(const int64_t *)field); break;
    case KEY_U64: snprintf(out, outlen, "%llu", (unsigned long long)*(const uint64_t *)field); break;
    case KEY_DOUBLE: format_double(*(const double *)field, out, outlen); break;
    case KEY_BOOL: snprintf(out, outlen, "%s", *(const bool *)field ? "true" : "false"); break;
    case KEY_COUNT:
        if (*(const int *)field == ACCEL_AUTO) snprintf(out, outlen, "auto");
        else snprintf(out, outlen, "%d", *(const int *)field);
        break;
    case KEY_BYTES: snprintf(out, outlen, "%lld", (long long)*(const int64_t *)field); break;
    case KEY_NUMBERS: {             /* a YAML flow list: [a, b, c] */
        const accel_numbers_t *list = (const accel_numbers_t *)field;
        size_t n = (size_t)snprintf(out, outlen, "[");
        for (int i = 0; i < list->n && n < outlen; i++) {
            char x[32];
            format_double(list->v[i], x, sizeof x);
            n += (size_t)snprintf(out + n, outlen - n, "%s%s", i ? ", " : "", x);
        }
        if (n < outlen) snprintf(out + n, outlen - n, "]");
        break;
    }
    case KEY_STRING: {
        char s[ACCEL_STR_MAX];
        snprintf(s, sizeof s, "%.*s", (int)(k->size - 1), field);
        if (plain_yaml(s)) snprintf(out, outlen, "%s", s);
        else quote_yaml(s, out, outlen);
        break;
    }
    }
}

/* Print keys nested by section; the schema is grouped by section so one pass suffices. */
static void emit_yaml(const accel_config_t *cfg, FILE *out, bool comments)
{
    char section[64] = "";
    for (size_t i = 0; i < NKEYS; i++) {
        const key_spec_t *k = &g_schema[i];
        const char *dot = strchr(k->key, '.');
        char value[VALUE_MAX];
        format_value(cfg, k, value, sizeof value);
        if (dot) {
            size_t len = (size_t)(dot - k->key);
            if (strlen(section) != len || strncmp(section, k->key, len)) {
                snprintf(section, sizeof section, "%.*s", (int)len, k->key);
                fprintf(out, "%s:\n", section);
            }
            if (comments)
                fprintf(out, "  # %s%s%s\n", k->help, k->choices ? ": " : "", k->choices ? k->choices : "");
            fprintf(out, "  %s: %s\n", dot + 1, value);
        } else {
            section[0] = '\0';
            if (comments)
                fprintf(out, "# %s%s%s\n", k->help, k->choices ? ": " : "", k->choices ? k->choices : "");
            fprintf(out, "%s: %s\n", k->key, value);
        }
    }
}

void accel_config_print(const accel_config_t *cfg, FILE *out) { emit_yaml(cfg, out, false); }

void accel_config_print_commented(const accel_config_t *cfg, FILE *out) { emit_yaml(cfg, out, true); }

char *accel_config_to_yaml(const accel_config_t *cfg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    emit_yaml(cfg, f, false);
    fclose(f);
    return buf;
}

accel_status_t accel_config_adopt_model(accel_config_t *cfg, const accel_config_t *from, const char *what,
                                        const char *const *free_keys, char *err, size_t errlen)
{
    accel_config_t defaults;
    accel_config_defaults(&defaults);
    for (size_t i = 0; i < NKEYS; i++) {
        const key_spec_t *k = &g_schema[i];
        if (strncmp(k->key, "model.", 6) || !strcmp(k->key, "model.plugin")) continue;
        bool is_free = false;
        for (const char *const *fk = free_keys; fk && *fk; fk++) is_free |= !strcmp(*fk, k->key);
        char mine[VALUE_MAX], theirs[VALUE_MAX], def[VALUE_MAX];
        format_value(cfg, k, mine, sizeof mine);
        format_value(from, k, theirs, sizeof theirs);
        format_value(&defaults, k, def, sizeof def);
        bool user_set = strcmp(mine, def) != 0;
        if (is_free && user_set) continue;          /* the user's choice, the file does not fix it */
        if (user_set && strcmp(mine, theirs)) {
            snprintf(err, errlen, "%s=%s contradicts %s, which holds a model with %s=%s\n--> hint: drop "
                     "%s from the command line and configuration (the model comes from the file)",
                     k->key, mine, what, k->key, theirs, k->key);
            return ACCEL_ERR_CONFIG;
        }
        memcpy((char *)cfg + k->offset, (const char *)from + k->offset, k->size);
    }
    return ACCEL_OK;
}
