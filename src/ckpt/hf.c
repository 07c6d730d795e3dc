/* Hugging Face models <-> accel weights (include/accel/hf.h). One table (g_map) says which
 * Hugging Face tensor holds which rows of which accel tensor, and how it lays them out (the same
 * order; transposed, as GPT-2's Conv1D; every expert in one [E, in, out] tensor, gate and up
 * interleaved, or in MXFP4, as gpt-oss); import, inference and export all walk it, so a name or
 * layout is written down once. config.json is translated key by key; what accel's decoder cannot
 * compute (another activation, sliding windows on some layers only, rope types other than llama3,
 * biases it has no place for, ...) is refused naming the key. JSON through jansson. */
#include "build_config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "accel/file.h"
#include "accel/hf.h"
#include "accel/log.h"
#include "accel/safetensors.h"
#include "accel/timer.h"
#include "accel/version.h"
#include "../h5/h5util.h"
#include "peft.h"

#define MAX_SHARDS 4096

enum { P_ALL, P_Q, P_K, P_V, P_GATE, P_UP, P_SHARED_GATE, P_SHARED_UP,
       P_QGATE,                     /* attention_output_gate: q's rows and the gate's (L_QGATE) */
       P_HGATE,                     /* attention_head_gate: the gate's rows after v's */
       P_LQKV, P_LZ, P_LB, P_LA,    /* a gated delta-net's input projection: q|k|v, z, b, a */
       P_LQKVZ, P_LBA,              /* ... Qwen3-Next's: q|k|v|z and b|a, each grouped by key head */
       P_LQ, P_LK, P_LV };          /* ... OLMo Hybrid's q, k, v apart */
/* Which tensors of the table a model has (map_t.flags): one bit per part or naming, 128 of them
 * (GCC's and Clang's unsigned __int128: 64 were spent). */
typedef unsigned __int128 hf_flags_t;
#define FLAG(n) ((hf_flags_t)1 << (n))
#define F_GPT FLAG(0)
#define F_LLAMA FLAG(1)
#define F_BLOCK FLAG(2)
#define F_QKVB FLAG(3)
#define F_UNTIED FLAG(4)
#define F_QKNORM FLAG(5)
#define F_DENSE FLAG(6)          /* the dense MLP's (llama without experts) */
#define F_MIXTRAL FLAG(7)        /* experts named as Mixtral's (llama experts without q/k norms) */
#define F_QWEN_MOE FLAG(8)       /* experts named as Qwen3-MoE's, Qwen2-MoE's (q/k norms, shared) */
#define F_EXPERT FLAG(9)         /* one Hugging Face tensor per expert: "%d" twice (block, expert) */
#define F_SHARED FLAG(10)        /* Qwen2-MoE's shared expert */
#define F_SPLIT FLAG(11)         /* q, k, v in tensors of their own (all but Phi-3) */
#define F_PHI3 FLAG(12)          /* Phi-3: qkv_proj and gate_up_proj, fused as accel's */
#define F_PRE FLAG(13)           /* norms before attention and the MLP (all but OLMo 2) */
#define F_POST FLAG(14)          /* OLMo 2's norms after them */
#define F_SANDWICH FLAG(15)      /* Gemma 3's norms before and after them */
#define F_NO_SANDWICH FLAG(16)   /* Llama's names where Gemma 3's differ */
#define F_OSS FLAG(17)           /* experts named and laid out as gpt-oss's */
#define F_OBIAS FLAG(18)         /* the attention output projection's bias (gpt-oss) */
#define F_SINKS FLAG(19)         /* attention sinks (gpt-oss) */
#define F_GLU_SPLIT FLAG(20)     /* the dense MLP's gate and up in tensors of their own */
#define F_GLU_FUSED FLAG(21)     /* ... in one gate_up_proj (Phi-3, GLM) */
#define F_GLM_SANDWICH FLAG(22)  /* GLM-4's names of the norms after the sublayers */
#define F_GRANITE_MOE FLAG(23)   /* experts named and stacked as Granite's */
#define F_DS FLAG(24)            /* GLM-4.5's (DeepSeek-V3's) shared experts and selection bias */
#define F_SELECT FLAG(25)        /* the router's selection bias */
#define F_MLA FLAG(26)           /* DeepSeek-V3's latent attention */
#define F_QLORA FLAG(27)         /* ... with its queries through a latent */
#define F_QDIRECT FLAG(28)       /* ... with one query projection */
#define F_FUSED FLAG(29)         /* experts named as Qwen's, stacked as transformers 5 keeps them */
#define F_ERNIE FLAG(30)         /* ERNIE 4.5's name for the selection bias */
#define F_HUNYUAN FLAG(31)       /* HunYuan's names for the q/k norms (after RoPE) */
#define F_EXAONE_MOE FLAG(32)    /* K-EXAONE's name for the selection bias */
#define F_LN FLAG(33)            /* LayerNorm's biases (model.norm=layer) */
#define F_PLAIN FLAG(34)         /* the plain MLP's up projection (model.mlp=plain) */
#define F_MLPB FLAG(35)          /* the plain MLP's biases (model.mlp_bias) */
#define F_PROJ FLAG(36)          /* the dense MLP's up_proj / down_proj names (all but StarCoder2) */
#define F_SC2 FLAG(37)           /* ... StarCoder2's c_fc / c_proj */
#define F_NEOX FLAG(38)          /* GPT-NeoX's names */
#define F_PHI FLAG(39)           /* Phi-1/2's names */
#define F_GPTJ FLAG(40)          /* GPT-J's names */
#define F_LFM2 FLAG(45)          /* LFM2's names */
#define F_NEMH FLAG(55)          /* Nemotron-H's names (every layer a norm and one mixer) */
/* a family's own names: llama entries without them are the others' */
#define F_NAMES (F_NEOX | F_PHI | F_GPTJ | F_LFM2 | F_NEMH | F_BAMBA | F_EXAONE3)
#define F_HEADB FLAG(41)         /* the LM head's bias (model.head_bias) */
#define F_GDN FLAG(42)           /* a gated delta-net layer's (Qwen3.5: the linear_attention layers) */
#define F_QGATE FLAG(43)         /* q_proj holding each head's query and gate (Qwen3.5) */
#define F_GDN_NEXT FLAG(44)      /* ... its input projections as Qwen3-Next's (else Qwen3.5's) */
#define F_SCONV FLAG(46)         /* a gated short convolution layer's (LFM2's conv layers) */
#define F_LFM2_MOE FLAG(47)      /* LFM2-MoE's experts */
#define F_LFM2A FLAG(48)         /* LFM2's own attention names (not LFM3's) */
#define F_LFM3 FLAG(49)          /* LFM3's (Qwen3's attention names, norms after the sublayers) */
#define F_HGATE FLAG(50)         /* attention's gate per head (LFM3's gate_proj) */
#define F_AFTER FLAG(51)         /* norms after the sublayers (LFM3's use_sandwich_norm) */
#define F_MAMBA FLAG(52)         /* a Mamba-2 layer's (Granite 4.0-H's mamba layers) */
#define F_MCONVB FLAG(53)        /* ... its convolution's bias */
#define F_GSHARED FLAG(54)       /* Granite 4.0-H's shared_mlp: the MLP, or beside the experts */
#define F_NEMH_MOE FLAG(56)      /* Nemotron-H's router and plain experts */
#define F_LATENT FLAG(57)        /* ... their latent's projections (Nemotron 3 Super) */
#define F_BAMBA FLAG(58)         /* Bamba's names (Mamba-2 or attention, then its feed_forward) */
#define F_LLAMA4 FLAG(59)        /* Llama 4's MLP names (feed_forward.: dense, or experts as x @ W) */
#define F_GDN_QWEN FLAG(60)      /* a gated delta-net's Qwen3.5 / Qwen3-Next names (projections, norm) */
#define F_GDN_OLMO FLAG(61)      /* ... OLMo Hybrid's (q, k, v, g, a, b, o projections and the
                                  * convolution apart; o_norm), and its block norms' names */
#define F_APERTUS FLAG(62)       /* Apertus's block norms' names, its xIELU's alphas and buffers */
#define F_MAMBA1 FLAG(63)        /* a Mamba-1 layer's (Mamba's, Falcon Mamba's mixers) */
#define F_VAULT FLAG(64)         /* VaultGemma's name for the norm before the MLP, without norms after */
#define F_CLOVAX FLAG(65)        /* HyperCLOVA X's norms after the sublayers (post_norm1, post_norm2) */
#define F_EXAONE3 FLAG(66)       /* EXAONE 3.0 / 3.5's names (Llama's blocks; transformers renames them) */
#define F_HY_MOE FLAG(67)        /* HunYuan-MoE's router (gate.wg) and shared_mlp names */

/* How a Hugging Face tensor's elements sit against accel's. accel stacks experts as [E out, in]
 * with each expert's gated rows [gate | up]. */
enum { L_ROWS,                      /* the same order (rows [r0, r1) of the accel tensor) */
       L_T,                         /* stored [in, out] (GPT-2's Conv1D) */
       L_EXPERTS,                   /* [E, in, out]: every expert's x @ W (gpt-oss's down_proj) */
       L_EXPERTS_GLU,               /* ... with gate and up interleaved along out (gate_up_proj) */
       L_EXPERT_BIAS,               /* [E, n]: accel's [E n] */
       L_EXPERT_GLU_BIAS,           /* [E, 2F], gate and up interleaved */
       L_MXFP4,                     /* L_EXPERTS as MXFP4 (gpt-oss on the hub): name_blocks
                                     * [E, out, in/32, 16] two 4-bit values a byte, name_scales
                                     * [E, out, in/32] a power of two each, exponent + 127 */
       L_MXFP4_GLU,                 /* L_EXPERTS_GLU as MXFP4 */
       L_STACKED,                   /* [E, out, in]: accel's [E out, in] as it is (Granite's experts) */
       L_ROPE_PAIRS,                /* q or k heads whose RoPE pairs are interleaved (GLM: values 2i
                                     * and 2i + 1 turn together) where accel's are (i, i + rd/2) */
       L_MLA_Q,                     /* latent attention's query heads: [the rest | RoPE part] where
                                     * accel's are [RoPE part | the rest], the RoPE pairs interleaved
                                     * (rope_interleave) */
       L_MLA_KV,                    /* its [latent | RoPE key], the key's pairs interleaved alike */
       L_ROW_MATRIX,                /* [1, n]: accel's [n] (ERNIE 4.5's selection bias) */
       L_HEADS_QKV,                 /* q, k, v rows by head, [head, q|k|v, head size] (GPT-NeoX's
                                     * query_key_value), where accel's are [q | k | v] */
       L_QGATE,                     /* [head, query|gate, head size] (Qwen3.5's q_proj), where accel's
                                     * query rows open attn.qkv and its gate rows close it */
       L_CONV,                      /* [n, 1, K]: accel's [n, K] (a depthwise convolution's weight) */
       L_QKVZ,                      /* Qwen3-Next's in_proj_qkvz: per key head [q | k | its value heads'
                                     * v | their z] where accel's are [q | k | v | z] */
       L_BA,                        /* ... in_proj_ba: per key head [its value heads' b | their a] */
       L_SCALAR };                  /* []: accel's [1] (xIELU's beta and eps buffers) */

typedef struct {
    const char *accel, *hf;         /* "%d" = block index */
    int part;                       /* which rows of the accel tensor (fused q|k|v, gate|up) */
    int layout;                     /* L_*: how the Hugging Face tensor stores them */
    hf_flags_t flags;
} map_t;

static const map_t g_map[] = {
    { "wte", "transformer.wte.weight", P_ALL, L_ROWS, F_GPT },
    { "wpe", "transformer.wpe.weight", P_ALL, L_ROWS, F_GPT },
    { "h.%d.ln1.weight", "transformer.h.%d.ln_1.weight", P_ALL, L_ROWS, F_GPT | F_BLOCK },
    { "h.%d.ln1.bias", "transformer.h.%d.ln_1.bias", P_ALL, L_ROWS, F_GPT | F_BLOCK },
    { "h.%d.attn.qkv.weight", "transformer.h.%d.attn.c_attn.weight", P_ALL, L_T, F_GPT | F_BLOCK },
    { "h.%d.attn.qkv.bias", "transformer.h.%d.attn.c_attn.bias", P_ALL, L_ROWS, F_GPT | F_BLOCK },
    { "h.%d.attn.proj.weight", "transformer.h.%d.attn.c_proj.weight", P_ALL, L_T, F_GPT | F_BLOCK },
    { "h.%d.attn.proj.bias", "transformer.h.%d.attn.c_proj.bias", P_ALL, L_ROWS, F_GPT | F_BLOCK },
    { "h.%d.ln2.weight", "transformer.h.%d.ln_2.weight", P_ALL, L_ROWS, F_GPT | F_BLOCK },
    { "h.%d.ln2.bias", "transformer.h.%d.ln_2.bias", P_ALL, L_ROWS, F_GPT | F_BLOCK },
    { "h.%d.mlp.fc.weight", "transformer.h.%d.mlp.c_fc.weight", P_ALL, L_T, F_GPT | F_BLOCK },
    { "h.%d.mlp.fc.bias", "transformer.h.%d.mlp.c_fc.bias", P_ALL, L_ROWS, F_GPT | F_BLOCK },
    { "h.%d.mlp.proj.weight", "transformer.h.%d.mlp.c_proj.weight", P_ALL, L_T, F_GPT | F_BLOCK },
    { "h.%d.mlp.proj.bias", "transformer.h.%d.mlp.c_proj.bias", P_ALL, L_ROWS, F_GPT | F_BLOCK },
    { "lnf.weight", "transformer.ln_f.weight", P_ALL, L_ROWS, F_GPT },
    { "lnf.bias", "transformer.ln_f.bias", P_ALL, L_ROWS, F_GPT },

    { "wte", "model.embed_tokens.weight", P_ALL, L_ROWS, F_LLAMA },
    { "h.%d.norm1.weight", "model.layers.%d.input_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_PRE },
    { "h.%d.norm1.weight", "model.layers.%d.post_attention_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_POST },
    { "h.%d.norm1.bias", "model.layers.%d.input_layernorm.bias", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_PRE | F_LN },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.q_proj.weight", P_Q, L_ROWS, F_LLAMA | F_BLOCK | F_SPLIT },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.q_proj.weight", P_QGATE, L_QGATE,
      F_LLAMA | F_BLOCK | F_SPLIT | F_QGATE },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.k_proj.weight", P_K, L_ROWS, F_LLAMA | F_BLOCK | F_SPLIT },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.v_proj.weight", P_V, L_ROWS, F_LLAMA | F_BLOCK | F_SPLIT },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.qkv_proj.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_PHI3 },
    { "h.%d.attn.q_a.weight", "model.layers.%d.self_attn.q_a_proj.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_QLORA },
    { "h.%d.attn.q_a_norm.weight", "model.layers.%d.self_attn.q_a_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_QLORA },
    { "h.%d.attn.q_b.weight", "model.layers.%d.self_attn.q_b_proj.weight", P_ALL, L_MLA_Q, F_LLAMA | F_BLOCK | F_QLORA },
    { "h.%d.attn.q.weight", "model.layers.%d.self_attn.q_proj.weight", P_ALL, L_MLA_Q, F_LLAMA | F_BLOCK | F_QDIRECT },
    { "h.%d.attn.kv_a.weight", "model.layers.%d.self_attn.kv_a_proj_with_mqa.weight", P_ALL, L_MLA_KV, F_LLAMA | F_BLOCK | F_MLA },
    { "h.%d.attn.kv_a_norm.weight", "model.layers.%d.self_attn.kv_a_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_MLA },
    { "h.%d.attn.kv_b.weight", "model.layers.%d.self_attn.kv_b_proj.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_MLA },
    { "h.%d.attn.qkv.bias", "model.layers.%d.self_attn.q_proj.bias", P_Q, L_ROWS, F_LLAMA | F_BLOCK | F_QKVB },
    { "h.%d.attn.qkv.bias", "model.layers.%d.self_attn.k_proj.bias", P_K, L_ROWS, F_LLAMA | F_BLOCK | F_QKVB },
    { "h.%d.attn.qkv.bias", "model.layers.%d.self_attn.v_proj.bias", P_V, L_ROWS, F_LLAMA | F_BLOCK | F_QKVB },
    { "h.%d.attn.q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_QKNORM },
    { "h.%d.attn.k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_QKNORM },
    { "h.%d.attn.q_norm.weight", "model.layers.%d.self_attn.query_layernorm.weight", P_ALL, L_ROWS,
      F_LLAMA | F_BLOCK | F_QKNORM | F_HUNYUAN },
    { "h.%d.attn.k_norm.weight", "model.layers.%d.self_attn.key_layernorm.weight", P_ALL, L_ROWS,
      F_LLAMA | F_BLOCK | F_QKNORM | F_HUNYUAN },
    /* Qwen3.5's gated delta-net layers, in place of self_attn's */
#define GDN (F_LLAMA | F_BLOCK | F_GDN)
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.in_proj_qkv.weight", P_LQKV, L_ROWS, GDN | F_GDN_QWEN },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.in_proj_z.weight", P_LZ, L_ROWS, GDN | F_GDN_QWEN },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.in_proj_b.weight", P_LB, L_ROWS, GDN | F_GDN_QWEN },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.in_proj_a.weight", P_LA, L_ROWS, GDN | F_GDN_QWEN },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.in_proj_qkvz.weight", P_LQKVZ, L_QKVZ,
      GDN | F_GDN_QWEN | F_GDN_NEXT },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.in_proj_ba.weight", P_LBA, L_BA, GDN | F_GDN_QWEN | F_GDN_NEXT },
    /* ... OLMo Hybrid's: q, k, v, the gate (g_proj: z), a and b apart */
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.q_proj.weight", P_LQ, L_ROWS, GDN | F_GDN_OLMO },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.k_proj.weight", P_LK, L_ROWS, GDN | F_GDN_OLMO },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.v_proj.weight", P_LV, L_ROWS, GDN | F_GDN_OLMO },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.g_proj.weight", P_LZ, L_ROWS, GDN | F_GDN_OLMO },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.b_proj.weight", P_LB, L_ROWS, GDN | F_GDN_OLMO },
    { "h.%d.attn.in.weight", "model.layers.%d.linear_attn.a_proj.weight", P_LA, L_ROWS, GDN | F_GDN_OLMO },
    { "h.%d.attn.conv.weight", "model.layers.%d.linear_attn.conv1d.weight", P_ALL, L_CONV, GDN | F_GDN_QWEN },
    { "h.%d.attn.conv.weight", "model.layers.%d.linear_attn.q_conv1d.weight", P_LQ, L_CONV, GDN | F_GDN_OLMO },
    { "h.%d.attn.conv.weight", "model.layers.%d.linear_attn.k_conv1d.weight", P_LK, L_CONV, GDN | F_GDN_OLMO },
    { "h.%d.attn.conv.weight", "model.layers.%d.linear_attn.v_conv1d.weight", P_LV, L_CONV, GDN | F_GDN_OLMO },
    { "h.%d.attn.dt_bias", "model.layers.%d.linear_attn.dt_bias", P_ALL, L_ROWS, GDN },
    { "h.%d.attn.A_log", "model.layers.%d.linear_attn.A_log", P_ALL, L_ROWS, GDN },
    { "h.%d.attn.norm.weight", "model.layers.%d.linear_attn.norm.weight", P_ALL, L_ROWS, GDN | F_GDN_QWEN },
    { "h.%d.attn.proj.weight", "model.layers.%d.linear_attn.out_proj.weight", P_ALL, L_ROWS, GDN | F_GDN_QWEN },
    { "h.%d.attn.norm.weight", "model.layers.%d.linear_attn.o_norm.weight", P_ALL, L_ROWS, GDN | F_GDN_OLMO },
    { "h.%d.attn.proj.weight", "model.layers.%d.linear_attn.o_proj.weight", P_ALL, L_ROWS, GDN | F_GDN_OLMO },
#undef GDN
    /* OLMo Hybrid's norms, as its files name them: before a delta-net and its MLP
     * (attention_layer_norm, feedforward_layer_norm), after attention and its MLP
     * (feedforward_layer_norm, post_feedforward_layernorm) */
#define OLMOH (F_LLAMA | F_BLOCK | F_GDN_OLMO)
    { "h.%d.norm1.weight", "model.layers.%d.attention_layer_norm.weight", P_ALL, L_ROWS, OLMOH | F_PRE },
    { "h.%d.norm2.weight", "model.layers.%d.feedforward_layer_norm.weight", P_ALL, L_ROWS, OLMOH | F_PRE },
    { "h.%d.norm1.weight", "model.layers.%d.feedforward_layer_norm.weight", P_ALL, L_ROWS, OLMOH | F_POST },
    { "h.%d.norm2.weight", "model.layers.%d.post_feedforward_layernorm.weight", P_ALL, L_ROWS, OLMOH | F_POST },
#undef OLMOH
    /* Apertus: Llama's attention (Qwen3's q/k norms), its own norm names, xIELU in the plain MLP */
#define APERTUS (F_LLAMA | F_BLOCK | F_APERTUS)
    { "h.%d.norm1.weight", "model.layers.%d.attention_layernorm.weight", P_ALL, L_ROWS, APERTUS | F_PRE },
    { "h.%d.norm2.weight", "model.layers.%d.feedforward_layernorm.weight", P_ALL, L_ROWS, APERTUS | F_PRE },
    { "h.%d.mlp.act.alpha_p", "model.layers.%d.mlp.act_fn.alpha_p", P_ALL, L_ROWS, APERTUS | F_DENSE },
    { "h.%d.mlp.act.alpha_n", "model.layers.%d.mlp.act_fn.alpha_n", P_ALL, L_ROWS, APERTUS | F_DENSE },
    { "h.%d.mlp.act.beta", "model.layers.%d.mlp.act_fn.beta", P_ALL, L_SCALAR, APERTUS | F_DENSE },
    { "h.%d.mlp.act.eps", "model.layers.%d.mlp.act_fn.eps", P_ALL, L_SCALAR, APERTUS | F_DENSE },
#undef APERTUS
    { "h.%d.attn.proj.weight", "model.layers.%d.self_attn.o_proj.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK },
    { "h.%d.attn.proj.bias", "model.layers.%d.self_attn.o_proj.bias", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_OBIAS },
    { "h.%d.attn.sinks", "model.layers.%d.self_attn.sinks", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_SINKS },
    { "h.%d.post_norm1.weight", "model.layers.%d.post_attention_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_SANDWICH },
    { "h.%d.post_norm1.weight", "model.layers.%d.post_self_attn_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_GLM_SANDWICH },
    { "h.%d.norm2.weight", "model.layers.%d.post_attention_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_PRE | F_NO_SANDWICH },
    { "h.%d.norm2.bias", "model.layers.%d.post_attention_layernorm.bias", P_ALL, L_ROWS,
      F_LLAMA | F_BLOCK | F_PRE | F_NO_SANDWICH | F_LN },
    { "h.%d.norm2.weight", "model.layers.%d.pre_feedforward_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_SANDWICH },
    { "h.%d.norm2.weight", "model.layers.%d.pre_feedforward_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_PRE | F_VAULT },
    { "h.%d.norm2.weight", "model.layers.%d.post_feedforward_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_POST },
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.mlp.gate_proj.weight", P_GATE, L_ROWS, F_LLAMA | F_BLOCK | F_DENSE | F_GLU_SPLIT },
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.mlp.up_proj.weight", P_UP, L_ROWS, F_LLAMA | F_BLOCK | F_DENSE | F_GLU_SPLIT },
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.mlp.gate_up_proj.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_DENSE | F_GLU_FUSED },
    /* the plain MLP, down(act(up)) (Nemotron, Arcee, Jais2; StarCoder2's names) */
#define PLAIN (F_LLAMA | F_BLOCK | F_DENSE | F_PLAIN)
    { "h.%d.mlp.up.weight", "model.layers.%d.mlp.up_proj.weight", P_ALL, L_ROWS, PLAIN | F_PROJ },
    { "h.%d.mlp.up.bias", "model.layers.%d.mlp.up_proj.bias", P_ALL, L_ROWS, PLAIN | F_PROJ | F_MLPB },
    { "h.%d.mlp.up.weight", "model.layers.%d.mlp.c_fc.weight", P_ALL, L_ROWS, PLAIN | F_SC2 },
    { "h.%d.mlp.up.bias", "model.layers.%d.mlp.c_fc.bias", P_ALL, L_ROWS, PLAIN | F_SC2 | F_MLPB },
#undef PLAIN
    { "h.%d.mlp.down.weight", "model.layers.%d.mlp.down_proj.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_DENSE | F_PROJ },
    { "h.%d.mlp.down.bias", "model.layers.%d.mlp.down_proj.bias", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_DENSE | F_PROJ | F_MLPB },
    { "h.%d.mlp.down.weight", "model.layers.%d.mlp.c_proj.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_DENSE | F_SC2 },
    { "h.%d.mlp.down.bias", "model.layers.%d.mlp.c_proj.bias", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_DENSE | F_SC2 | F_MLPB },
    { "h.%d.post_norm2.weight", "model.layers.%d.post_feedforward_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_SANDWICH },
    { "h.%d.post_norm2.weight", "model.layers.%d.post_mlp_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_GLM_SANDWICH },
    { "h.%d.post_norm1.weight", "model.layers.%d.post_norm1.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_CLOVAX },
    { "h.%d.post_norm2.weight", "model.layers.%d.post_norm2.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_CLOVAX },
    /* Experts: accel stacks them ([E 2F, C] and [E C, F]); the hub's files keep one tensor each. */
#define MIXTRAL (F_LLAMA | F_BLOCK | F_MIXTRAL)
    { "h.%d.mlp.router.weight", "model.layers.%d.block_sparse_moe.gate.weight", P_ALL, L_ROWS, MIXTRAL },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.block_sparse_moe.experts.%d.w1.weight", P_GATE, L_ROWS, MIXTRAL | F_EXPERT },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.block_sparse_moe.experts.%d.w3.weight", P_UP, L_ROWS, MIXTRAL | F_EXPERT },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.block_sparse_moe.experts.%d.w2.weight", P_ALL, L_ROWS, MIXTRAL | F_EXPERT },
    /* MiniMax-M2: Mixtral's names with DeepSeek-V3's selection bias */
    { "h.%d.mlp.router.select_bias", "model.layers.%d.block_sparse_moe.e_score_correction_bias", P_ALL, L_ROWS,
      MIXTRAL | F_SELECT },
#define QWEN_MOE (F_LLAMA | F_BLOCK | F_QWEN_MOE)
    { "h.%d.mlp.router.weight", "model.layers.%d.mlp.gate.weight", P_ALL, L_ROWS, QWEN_MOE },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.mlp.experts.%d.gate_proj.weight", P_GATE, L_ROWS, QWEN_MOE | F_EXPERT },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.mlp.experts.%d.up_proj.weight", P_UP, L_ROWS, QWEN_MOE | F_EXPERT },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.mlp.experts.%d.down_proj.weight", P_ALL, L_ROWS, QWEN_MOE | F_EXPERT },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.mlp.shared_expert.gate_proj.weight", P_SHARED_GATE, L_ROWS, QWEN_MOE | F_SHARED },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.mlp.shared_expert.up_proj.weight", P_SHARED_UP, L_ROWS, QWEN_MOE | F_SHARED },
    { "h.%d.mlp.shared.down.weight", "model.layers.%d.mlp.shared_expert.down_proj.weight", P_ALL, L_ROWS, QWEN_MOE | F_SHARED },
    { "h.%d.mlp.shared_gate.weight", "model.layers.%d.mlp.shared_expert_gate.weight", P_ALL, L_ROWS, QWEN_MOE | F_SHARED },
    /* ... every expert in one tensor, [E, 2F, C] (gate | up) and [E, C, F]: the files of families
     * transformers 5 keeps no per-expert names for (Mistral Small 4) */
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.mlp.experts.gate_up_proj", P_ALL, L_STACKED, QWEN_MOE | F_FUSED },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.mlp.experts.down_proj", P_ALL, L_STACKED, QWEN_MOE | F_FUSED },
    /* HunYuan-MoE (Hunyuan-A13B): Qwen's experts, its own router and ungated shared MLP names */
    { "h.%d.mlp.router.weight", "model.layers.%d.mlp.gate.wg.weight", P_ALL, L_ROWS, F_LLAMA | F_BLOCK | F_HY_MOE },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.mlp.shared_mlp.gate_proj.weight", P_SHARED_GATE, L_ROWS,
      F_LLAMA | F_BLOCK | F_HY_MOE | F_SHARED },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.mlp.shared_mlp.up_proj.weight", P_SHARED_UP, L_ROWS,
      F_LLAMA | F_BLOCK | F_HY_MOE | F_SHARED },
    { "h.%d.mlp.shared.down.weight", "model.layers.%d.mlp.shared_mlp.down_proj.weight", P_ALL, L_ROWS,
      F_LLAMA | F_BLOCK | F_HY_MOE | F_SHARED },
    /* GLM-4.5: Qwen's router and experts, DeepSeek-V3's selection bias and ungated shared experts */
#define DS (F_LLAMA | F_BLOCK | F_DS)
    { "h.%d.mlp.router.select_bias", "model.layers.%d.mlp.gate.e_score_correction_bias", P_ALL, L_ROWS, DS | F_SELECT },
    { "h.%d.mlp.router.select_bias", "model.layers.%d.mlp.moe_statics.e_score_correction_bias", P_ALL, L_ROW_MATRIX,
      DS | F_SELECT | F_ERNIE },
    { "h.%d.mlp.router.select_bias", "model.layers.%d.mlp.e_score_correction_bias", P_ALL, L_ROWS,
      DS | F_SELECT | F_EXAONE_MOE },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.mlp.shared_experts.gate_proj.weight", P_SHARED_GATE, L_ROWS, DS | F_SHARED },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.mlp.shared_experts.up_proj.weight", P_SHARED_UP, L_ROWS, DS | F_SHARED },
    { "h.%d.mlp.shared.down.weight", "model.layers.%d.mlp.shared_experts.down_proj.weight", P_ALL, L_ROWS, DS | F_SHARED },
    /* gpt-oss: every expert in one tensor [E, in, out] (x @ W), gate and up interleaved */
#define OSS (F_LLAMA | F_BLOCK | F_OSS)
    { "h.%d.mlp.router.weight", "model.layers.%d.mlp.router.weight", P_ALL, L_ROWS, OSS },
    { "h.%d.mlp.router.bias", "model.layers.%d.mlp.router.bias", P_ALL, L_ROWS, OSS },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.mlp.experts.gate_up_proj", P_ALL, L_EXPERTS_GLU, OSS },
    { "h.%d.mlp.experts.gate_up.bias", "model.layers.%d.mlp.experts.gate_up_proj_bias", P_ALL, L_EXPERT_GLU_BIAS, OSS },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.mlp.experts.down_proj", P_ALL, L_EXPERTS, OSS },
    { "h.%d.mlp.experts.down.bias", "model.layers.%d.mlp.experts.down_proj_bias", P_ALL, L_EXPERT_BIAS, OSS },
    /* Granite's experts: every expert in one tensor, [E, 2F, C] (gate | up) and [E, C, F] */
#define GRANITE_MOE (F_LLAMA | F_BLOCK | F_GRANITE_MOE)
    { "h.%d.mlp.router.weight", "model.layers.%d.block_sparse_moe.router.layer.weight", P_ALL, L_ROWS, GRANITE_MOE },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.block_sparse_moe.input_linear.weight", P_ALL, L_STACKED, GRANITE_MOE },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.block_sparse_moe.output_linear.weight", P_ALL, L_STACKED, GRANITE_MOE },
    /* ... as transformers 5 keeps them (GraniteMoeSWA's files: no older form to convert from) */
    { "h.%d.mlp.router.weight", "model.layers.%d.block_sparse_moe.router.weight", P_ALL, L_ROWS, GRANITE_MOE | F_FUSED },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.block_sparse_moe.experts.gate_up_proj", P_ALL, L_STACKED,
      GRANITE_MOE | F_FUSED },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.block_sparse_moe.experts.down_proj", P_ALL, L_STACKED,
      GRANITE_MOE | F_FUSED },
    /* Granite 4.0-H: Mamba-2 layers, its shared MLP (the whole dense MLP, or the experts' shared one).
     * A Mamba-2 mixer's tensors under a family's prefix: */
#define MAMBA2(prefix, flags)                                                                              \
    { "h.%d.attn.in.weight", prefix "in_proj.weight", P_ALL, L_ROWS, (flags) | F_MAMBA },                  \
    { "h.%d.attn.conv.weight", prefix "conv1d.weight", P_ALL, L_CONV, (flags) | F_MAMBA },                 \
    { "h.%d.attn.conv.bias", prefix "conv1d.bias", P_ALL, L_ROWS, (flags) | F_MAMBA | F_MCONVB },          \
    { "h.%d.attn.dt_bias", prefix "dt_bias", P_ALL, L_ROWS, (flags) | F_MAMBA },                           \
    { "h.%d.attn.A_log", prefix "A_log", P_ALL, L_ROWS, (flags) | F_MAMBA },                               \
    { "h.%d.attn.D", prefix "D", P_ALL, L_ROWS, (flags) | F_MAMBA },                                       \
    { "h.%d.attn.norm.weight", prefix "norm.weight", P_ALL, L_ROWS, (flags) | F_MAMBA },                   \
    { "h.%d.attn.proj.weight", prefix "out_proj.weight", P_ALL, L_ROWS, (flags) | F_MAMBA }
    MAMBA2("model.layers.%d.mamba.", F_LLAMA | F_BLOCK),
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.shared_mlp.input_linear.weight", P_ALL, L_ROWS,
      F_LLAMA | F_BLOCK | F_DENSE | F_GSHARED },
    { "h.%d.mlp.down.weight", "model.layers.%d.shared_mlp.output_linear.weight", P_ALL, L_ROWS,
      F_LLAMA | F_BLOCK | F_DENSE | F_GSHARED },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.shared_mlp.input_linear.weight", P_ALL, L_ROWS,
      GRANITE_MOE | F_GSHARED | F_SHARED },
    { "h.%d.mlp.shared.down.weight", "model.layers.%d.shared_mlp.output_linear.weight", P_ALL, L_ROWS,
      GRANITE_MOE | F_GSHARED | F_SHARED },
    /* Llama 4: feed_forward.'s dense MLP, or its router, experts stacked as x @ W ([E, in, out], gate
     * | up) and shared expert */
#define LLAMA4 (F_LLAMA | F_BLOCK | F_LLAMA4)
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.feed_forward.gate_proj.weight", P_GATE, L_ROWS, LLAMA4 | F_DENSE },
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.feed_forward.up_proj.weight", P_UP, L_ROWS, LLAMA4 | F_DENSE },
    { "h.%d.mlp.down.weight", "model.layers.%d.feed_forward.down_proj.weight", P_ALL, L_ROWS, LLAMA4 | F_DENSE },
    { "h.%d.mlp.router.weight", "model.layers.%d.feed_forward.router.weight", P_ALL, L_ROWS, LLAMA4 },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.feed_forward.experts.gate_up_proj", P_ALL, L_EXPERTS, LLAMA4 },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.feed_forward.experts.down_proj", P_ALL, L_EXPERTS, LLAMA4 },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.feed_forward.shared_expert.gate_proj.weight", P_SHARED_GATE,
      L_ROWS, LLAMA4 | F_SHARED },
    { "h.%d.mlp.shared.gate_up.weight", "model.layers.%d.feed_forward.shared_expert.up_proj.weight", P_SHARED_UP,
      L_ROWS, LLAMA4 | F_SHARED },
    { "h.%d.mlp.shared.down.weight", "model.layers.%d.feed_forward.shared_expert.down_proj.weight", P_ALL, L_ROWS,
      LLAMA4 | F_SHARED },
#undef LLAMA4
#undef MIXTRAL
#undef QWEN_MOE
#undef OSS
#undef GRANITE_MOE
#undef DS
    { "normf.weight", "model.norm.weight", P_ALL, L_ROWS, F_LLAMA },
    { "normf.bias", "model.norm.bias", P_ALL, L_ROWS, F_LLAMA | F_LN },
    { "lm_head.weight", "lm_head.weight", P_ALL, L_ROWS, F_LLAMA | F_UNTIED },
    /* GPT-NeoX (Pythia): LayerNorms, q, k, v fused by head, biases, the plain MLP */
#define LFM2 (F_LLAMA | F_BLOCK | F_LFM2)
    { "wte", "model.embed_tokens.weight", P_ALL, L_ROWS, F_LLAMA | F_LFM2 },
    { "h.%d.norm1.weight", "model.layers.%d.operator_norm.weight", P_ALL, L_ROWS, LFM2 },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.q_proj.weight", P_Q, L_ROWS, LFM2 },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.k_proj.weight", P_K, L_ROWS, LFM2 },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.v_proj.weight", P_V, L_ROWS, LFM2 },
    { "h.%d.attn.q_norm.weight", "model.layers.%d.self_attn.q_layernorm.weight", P_ALL, L_ROWS,
      LFM2 | F_LFM2A | F_QKNORM },
    { "h.%d.attn.k_norm.weight", "model.layers.%d.self_attn.k_layernorm.weight", P_ALL, L_ROWS,
      LFM2 | F_LFM2A | F_QKNORM },
    { "h.%d.attn.proj.weight", "model.layers.%d.self_attn.out_proj.weight", P_ALL, L_ROWS, LFM2 | F_LFM2A },
    /* LFM3: Qwen3's attention names, a gate per head, norms after the sublayers */
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.gate_proj.weight", P_HGATE, L_ROWS, LFM2 | F_LFM3 | F_HGATE },
    { "h.%d.attn.q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", P_ALL, L_ROWS, LFM2 | F_LFM3 | F_QKNORM },
    { "h.%d.attn.k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", P_ALL, L_ROWS, LFM2 | F_LFM3 | F_QKNORM },
    { "h.%d.attn.proj.weight", "model.layers.%d.self_attn.o_proj.weight", P_ALL, L_ROWS, LFM2 | F_LFM3 },
    { "h.%d.post_norm1.weight", "model.layers.%d.post_operator_norm.weight", P_ALL, L_ROWS, LFM2 | F_LFM3 | F_AFTER },
    { "h.%d.post_norm2.weight", "model.layers.%d.post_ffn_norm.weight", P_ALL, L_ROWS, LFM2 | F_LFM3 | F_AFTER },
    { "h.%d.attn.in.weight", "model.layers.%d.conv.in_proj.weight", P_ALL, L_ROWS, LFM2 | F_SCONV },
    { "h.%d.attn.conv.weight", "model.layers.%d.conv.conv.weight", P_ALL, L_CONV, LFM2 | F_SCONV },
    { "h.%d.attn.proj.weight", "model.layers.%d.conv.out_proj.weight", P_ALL, L_ROWS, LFM2 | F_SCONV },
    { "h.%d.norm2.weight", "model.layers.%d.ffn_norm.weight", P_ALL, L_ROWS, LFM2 },
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.feed_forward.w1.weight", P_GATE, L_ROWS, LFM2 | F_DENSE },
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.feed_forward.w3.weight", P_UP, L_ROWS, LFM2 | F_DENSE },
    { "h.%d.mlp.down.weight", "model.layers.%d.feed_forward.w2.weight", P_ALL, L_ROWS, LFM2 | F_DENSE },
    /* LFM2-MoE: the router, its selection bias, the experts one tensor each as the hub has them, or
     * stacked as transformers 5 keeps them */
    { "h.%d.mlp.router.weight", "model.layers.%d.feed_forward.gate.weight", P_ALL, L_ROWS, LFM2 | F_LFM2_MOE },
    { "h.%d.mlp.router.select_bias", "model.layers.%d.feed_forward.expert_bias", P_ALL, L_ROWS,
      LFM2 | F_LFM2_MOE | F_SELECT },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.feed_forward.experts.%d.w1.weight", P_GATE, L_ROWS,
      LFM2 | F_LFM2_MOE | F_EXPERT },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.feed_forward.experts.%d.w3.weight", P_UP, L_ROWS,
      LFM2 | F_LFM2_MOE | F_EXPERT },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.feed_forward.experts.%d.w2.weight", P_ALL, L_ROWS,
      LFM2 | F_LFM2_MOE | F_EXPERT },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.feed_forward.experts.gate_up_proj", P_ALL, L_STACKED,
      LFM2 | F_LFM2_MOE | F_FUSED },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.feed_forward.experts.down_proj", P_ALL, L_STACKED,
      LFM2 | F_LFM2_MOE | F_FUSED },
#undef LFM2
    { "normf.weight", "model.embedding_norm.weight", P_ALL, L_ROWS, F_LLAMA | F_LFM2 },
    { "lm_head.weight", "lm_head.weight", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_LFM2 },
    /* Nemotron-H (its files' names, under backbone.): each layer one norm and one "mixer", Mamba-2,
     * attention, the plain MLP or the experts; the norm is accel's norm1 before a token mixer,
     * norm2 before an MLP (layer_has keeps the one the layer has) */
#define NEMH (F_LLAMA | F_BLOCK | F_NEMH)
    { "wte", "backbone.embeddings.weight", P_ALL, L_ROWS, F_LLAMA | F_NEMH },
    { "h.%d.norm1.weight", "backbone.layers.%d.norm.weight", P_ALL, L_ROWS, NEMH },
    MAMBA2("backbone.layers.%d.mixer.", NEMH),
    /* Mamba, Falcon Mamba: Nemotron-H's names, every layer a norm and a Mamba-1 mixer (its weighted
     * norms on dt, B, C: Jamba's alone) */
#define MAMBA1(prefix, flags)                                                                              \
    { "h.%d.attn.in.weight", prefix "in_proj.weight", P_ALL, L_ROWS, (flags) | F_MAMBA1 },                 \
    { "h.%d.attn.conv.weight", prefix "conv1d.weight", P_ALL, L_CONV, (flags) | F_MAMBA1 },                \
    { "h.%d.attn.conv.bias", prefix "conv1d.bias", P_ALL, L_ROWS, (flags) | F_MAMBA1 | F_MCONVB },         \
    { "h.%d.attn.x_proj.weight", prefix "x_proj.weight", P_ALL, L_ROWS, (flags) | F_MAMBA1 },              \
    { "h.%d.attn.dt_norm.weight", prefix "dt_layernorm.weight", P_ALL, L_ROWS, (flags) | F_MAMBA1 },       \
    { "h.%d.attn.b_norm.weight", prefix "b_layernorm.weight", P_ALL, L_ROWS, (flags) | F_MAMBA1 },         \
    { "h.%d.attn.c_norm.weight", prefix "c_layernorm.weight", P_ALL, L_ROWS, (flags) | F_MAMBA1 },         \
    { "h.%d.attn.dt_proj.weight", prefix "dt_proj.weight", P_ALL, L_ROWS, (flags) | F_MAMBA1 },            \
    { "h.%d.attn.dt_bias", prefix "dt_proj.bias", P_ALL, L_ROWS, (flags) | F_MAMBA1 },                     \
    { "h.%d.attn.A_log", prefix "A_log", P_ALL, L_ROWS, (flags) | F_MAMBA1 },                              \
    { "h.%d.attn.D", prefix "D", P_ALL, L_ROWS, (flags) | F_MAMBA1 },                                      \
    { "h.%d.attn.proj.weight", prefix "out_proj.weight", P_ALL, L_ROWS, (flags) | F_MAMBA1 }
    MAMBA1("backbone.layers.%d.mixer.", NEMH),
    { "h.%d.attn.qkv.weight", "backbone.layers.%d.mixer.q_proj.weight", P_Q, L_ROWS, NEMH },
    { "h.%d.attn.qkv.weight", "backbone.layers.%d.mixer.k_proj.weight", P_K, L_ROWS, NEMH },
    { "h.%d.attn.qkv.weight", "backbone.layers.%d.mixer.v_proj.weight", P_V, L_ROWS, NEMH },
    { "h.%d.attn.proj.weight", "backbone.layers.%d.mixer.o_proj.weight", P_ALL, L_ROWS, NEMH },
    { "h.%d.norm2.weight", "backbone.layers.%d.norm.weight", P_ALL, L_ROWS, NEMH },
    { "h.%d.mlp.up.weight", "backbone.layers.%d.mixer.up_proj.weight", P_ALL, L_ROWS, NEMH | F_DENSE | F_PLAIN },
    { "h.%d.mlp.down.weight", "backbone.layers.%d.mixer.down_proj.weight", P_ALL, L_ROWS, NEMH | F_DENSE },
    { "h.%d.mlp.router.weight", "backbone.layers.%d.mixer.gate.weight", P_ALL, L_ROWS, NEMH | F_NEMH_MOE },
    { "h.%d.mlp.router.select_bias", "backbone.layers.%d.mixer.gate.e_score_correction_bias", P_ALL, L_ROWS,
      NEMH | F_NEMH_MOE | F_SELECT },
    { "h.%d.mlp.experts.up.weight", "backbone.layers.%d.mixer.experts.%d.up_proj.weight", P_ALL, L_ROWS,
      NEMH | F_NEMH_MOE | F_EXPERT },
    { "h.%d.mlp.experts.down.weight", "backbone.layers.%d.mixer.experts.%d.down_proj.weight", P_ALL, L_ROWS,
      NEMH | F_NEMH_MOE | F_EXPERT },
    { "h.%d.mlp.latent_in.weight", "backbone.layers.%d.mixer.fc1_latent_proj.weight", P_ALL, L_ROWS,
      NEMH | F_NEMH_MOE | F_LATENT },
    { "h.%d.mlp.latent_out.weight", "backbone.layers.%d.mixer.fc2_latent_proj.weight", P_ALL, L_ROWS,
      NEMH | F_NEMH_MOE | F_LATENT },
    { "h.%d.mlp.shared.up.weight", "backbone.layers.%d.mixer.shared_experts.up_proj.weight", P_ALL, L_ROWS,
      NEMH | F_NEMH_MOE | F_SHARED },
    { "h.%d.mlp.shared.down.weight", "backbone.layers.%d.mixer.shared_experts.down_proj.weight", P_ALL, L_ROWS,
      NEMH | F_NEMH_MOE | F_SHARED },
#undef NEMH
    { "normf.weight", "backbone.norm_f.weight", P_ALL, L_ROWS, F_LLAMA | F_NEMH },
    { "lm_head.weight", "lm_head.weight", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_NEMH },
    /* Bamba: Granite 4.0-H's blocks under Llama's attention names and its own for the rest */
#define BAMBA (F_LLAMA | F_BLOCK | F_BAMBA)
    { "wte", "model.embed_tokens.weight", P_ALL, L_ROWS, F_LLAMA | F_BAMBA },
    { "h.%d.norm1.weight", "model.layers.%d.input_layernorm.weight", P_ALL, L_ROWS, BAMBA },
    MAMBA2("model.layers.%d.mamba.", BAMBA),
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.q_proj.weight", P_Q, L_ROWS, BAMBA },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.k_proj.weight", P_K, L_ROWS, BAMBA },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.v_proj.weight", P_V, L_ROWS, BAMBA },
    { "h.%d.attn.proj.weight", "model.layers.%d.self_attn.o_proj.weight", P_ALL, L_ROWS, BAMBA },
    { "h.%d.norm2.weight", "model.layers.%d.pre_ff_layernorm.weight", P_ALL, L_ROWS, BAMBA },
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.feed_forward.gate_proj.weight", P_GATE, L_ROWS, BAMBA | F_DENSE },
    { "h.%d.mlp.gate_up.weight", "model.layers.%d.feed_forward.up_proj.weight", P_UP, L_ROWS, BAMBA | F_DENSE },
    { "h.%d.mlp.down.weight", "model.layers.%d.feed_forward.down_proj.weight", P_ALL, L_ROWS, BAMBA | F_DENSE },
    /* Jamba: Bamba's names with Mamba-1 mixers and Mixtral's routing (experts one tensor each, as
     * the hub's files and transformers 5's saves hold them) */
    MAMBA1("model.layers.%d.mamba.", BAMBA),
    { "h.%d.mlp.router.weight", "model.layers.%d.feed_forward.router.weight", P_ALL, L_ROWS, BAMBA | F_MIXTRAL },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.feed_forward.experts.%d.gate_proj.weight", P_GATE, L_ROWS,
      BAMBA | F_MIXTRAL | F_EXPERT },
    { "h.%d.mlp.experts.gate_up.weight", "model.layers.%d.feed_forward.experts.%d.up_proj.weight", P_UP, L_ROWS,
      BAMBA | F_MIXTRAL | F_EXPERT },
    { "h.%d.mlp.experts.down.weight", "model.layers.%d.feed_forward.experts.%d.down_proj.weight", P_ALL, L_ROWS,
      BAMBA | F_MIXTRAL | F_EXPERT },
#undef BAMBA
#undef MAMBA2
    { "normf.weight", "model.final_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_BAMBA },
    { "lm_head.weight", "lm_head.weight", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_BAMBA },
#define NEOX (F_LLAMA | F_BLOCK | F_NEOX)
    { "wte", "gpt_neox.embed_in.weight", P_ALL, L_ROWS, F_LLAMA | F_NEOX },
    { "h.%d.norm1.weight", "gpt_neox.layers.%d.input_layernorm.weight", P_ALL, L_ROWS, NEOX },
    { "h.%d.norm1.bias", "gpt_neox.layers.%d.input_layernorm.bias", P_ALL, L_ROWS, NEOX | F_LN },
    { "h.%d.attn.qkv.weight", "gpt_neox.layers.%d.attention.query_key_value.weight", P_ALL, L_HEADS_QKV, NEOX },
    { "h.%d.attn.qkv.bias", "gpt_neox.layers.%d.attention.query_key_value.bias", P_ALL, L_HEADS_QKV, NEOX | F_QKVB },
    { "h.%d.attn.proj.weight", "gpt_neox.layers.%d.attention.dense.weight", P_ALL, L_ROWS, NEOX },
    { "h.%d.attn.proj.bias", "gpt_neox.layers.%d.attention.dense.bias", P_ALL, L_ROWS, NEOX | F_OBIAS },
    { "h.%d.norm2.weight", "gpt_neox.layers.%d.post_attention_layernorm.weight", P_ALL, L_ROWS, NEOX },
    { "h.%d.norm2.bias", "gpt_neox.layers.%d.post_attention_layernorm.bias", P_ALL, L_ROWS, NEOX | F_LN },
    { "h.%d.mlp.up.weight", "gpt_neox.layers.%d.mlp.dense_h_to_4h.weight", P_ALL, L_ROWS, NEOX | F_PLAIN },
    { "h.%d.mlp.up.bias", "gpt_neox.layers.%d.mlp.dense_h_to_4h.bias", P_ALL, L_ROWS, NEOX | F_PLAIN | F_MLPB },
    { "h.%d.mlp.down.weight", "gpt_neox.layers.%d.mlp.dense_4h_to_h.weight", P_ALL, L_ROWS, NEOX },
    { "h.%d.mlp.down.bias", "gpt_neox.layers.%d.mlp.dense_4h_to_h.bias", P_ALL, L_ROWS, NEOX | F_MLPB },
#undef NEOX
    { "normf.weight", "gpt_neox.final_layer_norm.weight", P_ALL, L_ROWS, F_LLAMA | F_NEOX },
    { "normf.bias", "gpt_neox.final_layer_norm.bias", P_ALL, L_ROWS, F_LLAMA | F_NEOX | F_LN },
    { "lm_head.weight", "embed_out.weight", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_NEOX },
    /* EXAONE 3.0, 3.5: Llama's blocks under the names of its own code (transformers renames them) */
#define EXAONE3 (F_LLAMA | F_BLOCK | F_EXAONE3)
    { "wte", "transformer.wte.weight", P_ALL, L_ROWS, F_LLAMA | F_EXAONE3 },
    { "h.%d.norm1.weight", "transformer.h.%d.ln_1.weight", P_ALL, L_ROWS, EXAONE3 },
    { "h.%d.attn.qkv.weight", "transformer.h.%d.attn.attention.q_proj.weight", P_Q, L_ROWS, EXAONE3 },
    { "h.%d.attn.qkv.weight", "transformer.h.%d.attn.attention.k_proj.weight", P_K, L_ROWS, EXAONE3 },
    { "h.%d.attn.qkv.weight", "transformer.h.%d.attn.attention.v_proj.weight", P_V, L_ROWS, EXAONE3 },
    { "h.%d.attn.proj.weight", "transformer.h.%d.attn.attention.out_proj.weight", P_ALL, L_ROWS, EXAONE3 },
    { "h.%d.norm2.weight", "transformer.h.%d.ln_2.weight", P_ALL, L_ROWS, EXAONE3 },
    { "h.%d.mlp.gate_up.weight", "transformer.h.%d.mlp.c_fc_0.weight", P_GATE, L_ROWS, EXAONE3 },
    { "h.%d.mlp.gate_up.weight", "transformer.h.%d.mlp.c_fc_1.weight", P_UP, L_ROWS, EXAONE3 },
    { "h.%d.mlp.down.weight", "transformer.h.%d.mlp.c_proj.weight", P_ALL, L_ROWS, EXAONE3 },
#undef EXAONE3
    { "normf.weight", "transformer.ln_f.weight", P_ALL, L_ROWS, F_LLAMA | F_EXAONE3 },
    { "lm_head.weight", "lm_head.weight", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_EXAONE3 },
    /* Phi-1, Phi-1.5, Phi-2: LayerNorms, biases everywhere, the plain MLP beside attention */
#define PHI (F_LLAMA | F_BLOCK | F_PHI)
    { "wte", "model.embed_tokens.weight", P_ALL, L_ROWS, F_LLAMA | F_PHI },
    { "h.%d.norm1.weight", "model.layers.%d.input_layernorm.weight", P_ALL, L_ROWS, PHI },
    { "h.%d.norm1.bias", "model.layers.%d.input_layernorm.bias", P_ALL, L_ROWS, PHI | F_LN },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.q_proj.weight", P_Q, L_ROWS, PHI },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.k_proj.weight", P_K, L_ROWS, PHI },
    { "h.%d.attn.qkv.weight", "model.layers.%d.self_attn.v_proj.weight", P_V, L_ROWS, PHI },
    { "h.%d.attn.qkv.bias", "model.layers.%d.self_attn.q_proj.bias", P_Q, L_ROWS, PHI | F_QKVB },
    { "h.%d.attn.qkv.bias", "model.layers.%d.self_attn.k_proj.bias", P_K, L_ROWS, PHI | F_QKVB },
    { "h.%d.attn.qkv.bias", "model.layers.%d.self_attn.v_proj.bias", P_V, L_ROWS, PHI | F_QKVB },
    { "h.%d.attn.proj.weight", "model.layers.%d.self_attn.dense.weight", P_ALL, L_ROWS, PHI },
    { "h.%d.attn.proj.bias", "model.layers.%d.self_attn.dense.bias", P_ALL, L_ROWS, PHI | F_OBIAS },
    { "h.%d.mlp.up.weight", "model.layers.%d.mlp.fc1.weight", P_ALL, L_ROWS, PHI | F_PLAIN },
    { "h.%d.mlp.up.bias", "model.layers.%d.mlp.fc1.bias", P_ALL, L_ROWS, PHI | F_PLAIN | F_MLPB },
    { "h.%d.mlp.down.weight", "model.layers.%d.mlp.fc2.weight", P_ALL, L_ROWS, PHI },
    { "h.%d.mlp.down.bias", "model.layers.%d.mlp.fc2.bias", P_ALL, L_ROWS, PHI | F_MLPB },
#undef PHI
    { "normf.weight", "model.final_layernorm.weight", P_ALL, L_ROWS, F_LLAMA | F_PHI },
    { "normf.bias", "model.final_layernorm.bias", P_ALL, L_ROWS, F_LLAMA | F_PHI | F_LN },
    { "lm_head.weight", "lm_head.weight", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_PHI },
    { "lm_head.bias", "lm_head.bias", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_PHI | F_HEADB },
    /* GPT-J: LayerNorms, no attention biases, the plain MLP beside attention, RoPE pairs interleaved */
#define GPTJ (F_LLAMA | F_BLOCK | F_GPTJ)
    { "wte", "transformer.wte.weight", P_ALL, L_ROWS, F_LLAMA | F_GPTJ },
    { "h.%d.norm1.weight", "transformer.h.%d.ln_1.weight", P_ALL, L_ROWS, GPTJ },
    { "h.%d.norm1.bias", "transformer.h.%d.ln_1.bias", P_ALL, L_ROWS, GPTJ | F_LN },
    { "h.%d.attn.qkv.weight", "transformer.h.%d.attn.q_proj.weight", P_Q, L_ROWS, GPTJ },
    { "h.%d.attn.qkv.weight", "transformer.h.%d.attn.k_proj.weight", P_K, L_ROWS, GPTJ },
    { "h.%d.attn.qkv.weight", "transformer.h.%d.attn.v_proj.weight", P_V, L_ROWS, GPTJ },
    { "h.%d.attn.proj.weight", "transformer.h.%d.attn.out_proj.weight", P_ALL, L_ROWS, GPTJ },
    { "h.%d.mlp.up.weight", "transformer.h.%d.mlp.fc_in.weight", P_ALL, L_ROWS, GPTJ | F_PLAIN },
    { "h.%d.mlp.up.bias", "transformer.h.%d.mlp.fc_in.bias", P_ALL, L_ROWS, GPTJ | F_PLAIN | F_MLPB },
    { "h.%d.mlp.down.weight", "transformer.h.%d.mlp.fc_out.weight", P_ALL, L_ROWS, GPTJ },
    { "h.%d.mlp.down.bias", "transformer.h.%d.mlp.fc_out.bias", P_ALL, L_ROWS, GPTJ | F_MLPB },
#undef GPTJ
    { "normf.weight", "transformer.ln_f.weight", P_ALL, L_ROWS, F_LLAMA | F_GPTJ },
    { "normf.bias", "transformer.ln_f.bias", P_ALL, L_ROWS, F_LLAMA | F_GPTJ | F_LN },
    { "lm_head.weight", "lm_head.weight", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_GPTJ },
    { "lm_head.bias", "lm_head.bias", P_ALL, L_ROWS, F_LLAMA | F_UNTIED | F_GPTJ | F_HEADB },
};
#define NMAP (sizeof g_map / sizeof g_map[0])

/* Buffers Hugging Face keeps in some files that carry no weights (GPT-2's causal mask, rotary
 * inverse frequencies of old Llama saves): skipped on import. */
static const char *const g_ignored_suffixes[] = { ".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq",
                                                   ".attention.bias", ".attention.masked_bias" };  /* GPT-NeoX's */

/* ------------------------------------------------------------------ sizes */

typedef struct {
    bool llama;
    int L, NH, KVH, hs, C, T, V, F; /* F: the MLP's width, with experts each expert's */
    bool qkv_bias, tied, qk_norm;
    int E;                          /* experts per block (0: a dense MLP) */
    int S;                          /* the shared expert's width (0: none) */
    int dense_layers, DF;           /* with experts, the leading blocks with a dense MLP, its width */
    accel_numbers_t expert_layers;  /* ... or the blocks with experts (model.expert_layers; n 0: none) */
    bool qk_unweighted;             /* q/k norms without weights (Llama 4's) */
    bool qk_rope_only;              /* ... on the layers with RoPE only */
    int nope;                       /* every N-th layer without RoPE (model.no_rope_pattern; 0: none) */
    bool llama4;                    /* experts weighing their input: Llama 4's (its names) */
    bool olmoh;                     /* gated delta-nets beside OLMo 2's attention: OLMo Hybrid's (its names) */
    bool ds;                        /* DeepSeek-V3's routing, shared experts, dense blocks (GLM-4.5) */
    bool select_bias;               /* ... the router's selection bias */
    bool phi3;                      /* Phi-3's fused names (export: LongRoPE's models; others go out
                                     * as Llama's) */
    bool qk_all, post;              /* q/k norms over whole projections; norms after sublayers */
    bool sandwich;                  /* norms before and after the sublayers (Gemma 3) */
    bool exaone3;                   /* Llama's blocks under EXAONE 3's names (import: its family says;
                                     * export: as the Llama it is) */
    bool clovax;                    /* Granite's scalars with norms after the sublayers too: HyperCLOVA
                                     * X's (its names; import: its family says) */
    bool vault;                     /* Gemma 2's blocks without the norms after: VaultGemma's (its
                                     * norm names; export: Gemma's parts with a window, score scale or
                                     * soft caps; import: its family says) */
    bool obias, sinks;              /* attention output bias, sinks (gpt-oss) */
    bool oss;                       /* experts as gpt-oss's (with biases) */
    bool granite_moe;               /* experts as Granite's (with its scalars) */
    bool mxfp4;                     /* ... their weights in MXFP4 (import only: export writes fp32/bf16) */
    int rd;                         /* values of each head RoPE turns (model.rope_dim, else hs) */
    bool glm;                       /* GLM's layout: interleaved RoPE pairs, a fused gate_up_proj, its
                                     * norm names (partial RoPE, or norms after the sublayers without
                                     * Gemma's 1 + weight) */
    bool mla;                       /* latent attention (model.kv_lora_rank): DeepSeek-V3's names */
    int Rq, Rkv, dv;                /* its latents' widths (Rq 0: one query projection), value heads */
    bool mla_pairs;                 /* its RoPE pairs interleaved in the files (rope_interleave) */
    bool fused;                     /* Qwen-named experts stacked in one tensor each (F_FUSED) */
    bool mistral4;                  /* latent attention with a softmax router whose top k is
                                     * renormalized or grouped, or with the query temperature:
                                     * Mistral Small 4's (export; its experts stacked) */
    bool ministral3;                /* Llama's dense blocks with the query temperature (export) */
    bool ernie;                     /* softmax scores with a selection bias, no latent attention:
                                     * ERNIE 4.5's experts (its names; export) */
    bool rope_pairs;                /* q and k with their RoPE pairs interleaved in the files (GLM's,
                                     * ERNIE 4.5's) */
    bool hunyuan;                   /* q/k norms after RoPE: HunYuan's names (export: its family) */
    bool hy_moe;                    /* ... with experts: HunYuan-MoE's router and shared MLP names */
    bool minimax;                   /* sigmoid experts with a selection bias under whole-projection
                                     * q/k norms: MiniMax-M2's (Mixtral's names; export) */
    bool mellum;                    /* Qwen3-MoE's experts and attention with leading dense blocks, a
                                     * window pattern or a RoPE per layer type: Mellum's (export) */
    bool ln, plain, mlp_bias;       /* LayerNorms; a plain MLP, down(act(up)); its biases */
    bool xielu;                     /* ... with xIELU: Apertus's (its names) */
    bool sc2;                       /* ... StarCoder2's names (LayerNorms and the tanh GELU; import: its
                                     * family says) */
    bool neox;                      /* ... GPT-NeoX's (LayerNorms and the exact GELU, or import: its family
                                     * says) */
    bool norm_bias, one_norm;       /* LayerNorms' biases; the MLP beside attention reading norm1 (no norm2) */
    bool head_bias;                 /* the LM head's bias */
    bool phi, gptj;                 /* ... Phi-1/2's names, GPT-J's (RoPE pairs interleaved in its files) */
    hf_flags_t names;               /* F_NEOX, F_PHI, F_GPTJ: the family's own names; 0: Llama's */
    bool cohere;                    /* LayerNorms without biases, SwiGLU beside attention through norm1:
                                     * Cohere's (RoPE pairs interleaved in its files) */
    bool exaone_moe;                /* DeepSeek-V3's experts under EXAONE 4's attention, window and
                                     * layers without RoPE, norms before: K-EXAONE's (its name for
                                     * the selection bias; import: its family says) */
    bool gate;                      /* attention's output gate: its rows after v's in attn.qkv */
    int lin_pattern;                /* gated delta-net layers: all but every N-th (0: none) */
    int Hk, Hv, dk, dvl, K;         /* their heads, head sizes and convolution width */
    bool qwen35;                    /* either: Qwen3.5's (export: its family) */
    bool next;                      /* ... Qwen3-Next's names (export: experts whose top k is not
                                     * renormalized; import: its family says) */
    bool lfm2;                      /* gated short convolution layers: LFM2's (its names) */
    bool lfm3;                      /* ... LFM3's (export: its parts; import: its family says) */
    bool head_gate;                 /* attention's gate per head (LFM3) */
    bool mamba;                     /* Mamba-2 layers: Granite 4.0-H's (its names) */
    int MH, MP, MG, MN, MK;         /* their heads, head values, groups, state, convolution width */
    bool mconv_bias;                /* ... the convolution's bias */
    int sconv_K;                    /* their convolution's width */
    accel_numbers_t att_layers;     /* the layers keeping attention among them */
    accel_numbers_t mlp_only, mixer_only;   /* layers of one sublayer (model.mlp_only_layers, ...) */
    bool nemh;                      /* ... every layer one: Nemotron-H's (its names) */
    int Lat;                        /* the routed experts' latent width (0: none) */
    bool mamba1;                    /* Mamba-1 layers (Mamba's, Falcon Mamba's mixers: Nemotron-H's names) */
    int M1I, M1R;                   /* their channels, dt rank (the state, convolution: MN, MK) */
    int M1norms;                    /* their norms on dt, B, C: 0 none, 1 plain (Falcon Mamba's), 2 weighted */
    bool jamba;                     /* ... in whole blocks: Jamba's (Bamba's names; import: its family says) */
    bool bamba;                     /* Mamba-2 in whole blocks with partial RoPE: Bamba's (its names) */
    bool granite_h;                 /* ... otherwise Granite 4.0-H's (its names) */
} dims_t;

/* model.ffn_width = 0 means this width in src/nn/decoder.c (which ckpt may not include). */
static int default_ffn_width(int width)
{
    int64_t f = ((int64_t)8 * width + 2) / 3;
    return (int)((f + 63) / 64 * 64);
}

/* Whether layer i attends through the window, as the decoder reads the keys: those
 * model.sliding_layers names, else all but every model.sliding_window_pattern-th. */
static bool config_layer_slides(const accel_model_config_t *m, int i)
{
    if (!m->sliding_window) return false;
    if (m->sliding_layers.n) return accel_layer_listed(&m->sliding_layers, i);
    return !(m->sliding_window_pattern && (i + 1) % m->sliding_window_pattern == 0);
}

static dims_t dims_of(const accel_model_config_t *m)
{
    dims_t d = { .llama = !strcmp(m->name, "llama"), .L = m->layers, .NH = m->heads, .C = m->width,
                 .T = m->context, .V = m->vocab };
    d.KVH = d.llama && m->kv_heads ? m->kv_heads : m->heads;
    d.mla = d.llama && m->kv_lora_rank > 0;
    d.Rq = d.mla ? m->q_lora_rank : 0;
    d.Rkv = d.mla ? m->kv_lora_rank : 0;
    d.mla_pairs = d.mla;            /* DeepSeek-V3's default (import: its rope_interleave) */
    if (d.mla) d.KVH = d.NH;
    d.hs = d.llama && m->head_dim ? m->head_dim : m->heads ? m->width / m->heads : 0;
    d.qk_norm = d.llama && m->qk_norm;
    d.F = !d.llama ? 4 * m->width : m->ffn_width ? m->ffn_width : default_ffn_width(m->width);
    d.qkv_bias = d.llama ? m->attention_bias : true;
    d.tied = d.llama ? m->tie_embeddings : true;
    d.E = d.llama ? m->experts : 0;
    d.S = d.E ? m->shared_expert_ffn : 0;
    d.qk_all = d.qk_norm && !strcmp(m->qk_norm_scope, "all");
    d.post = d.llama && !strcmp(m->norm_position, "post");
    d.sandwich = d.llama && !strcmp(m->norm_position, "both");
    d.vault = d.llama && m->norm_unit_offset && !strcmp(m->norm_position, "pre") && !strcmp(m->activation, "gelu_tanh") &&
              (m->sliding_window || m->query_pre_attn_scalar || m->attention_softcap > 0 || m->logit_softcap > 0);
    d.obias = d.llama && m->attention_out_bias;
    d.sinks = d.llama && m->attention_sinks;
    d.oss = d.E && m->expert_bias;
    d.granite_moe = d.E && !d.oss && !d.mla && (m->attention_multiplier > 0 || m->residual_multiplier != 1.0 ||
                                                m->logits_scaling != 1.0);
    d.rd = d.llama && m->rope_dim ? m->rope_dim : d.hs;
    d.dv = d.mla && m->v_head_dim ? m->v_head_dim : d.hs;
    d.dense_layers = d.E ? m->dense_layers : 0;
    if (d.E) d.expert_layers = m->expert_layers;
    d.DF = d.dense_layers || d.expert_layers.n ? (m->dense_ffn_width ? m->dense_ffn_width : default_ffn_width(m->width))
                                               : d.F;
    d.qk_unweighted = d.qk_norm && !m->qk_norm_weights;
    d.qk_rope_only = d.qk_norm && !strcmp(m->qk_norm_layers, "rope");
    d.nope = d.llama ? m->no_rope_pattern : 0;
    d.llama4 = d.E && m->expert_input_scaled;
    d.select_bias = d.E && m->router_select_bias;
    d.ds = d.E && (strcmp(m->router_scores, "softmax") || d.select_bias || d.dense_layers || (d.S && !m->shared_expert_gate) ||
                   m->router_groups > 1 || m->router_scale != 1.0 || d.mla);
    d.phi3 = d.llama && !strcmp(m->rope_scaling, "longrope");  /* import: the file's architecture says */
    d.ln = d.llama && !strcmp(m->norm, "layer");
    d.plain = d.llama && !strcmp(m->mlp, "plain");
    d.mlp_bias = d.plain && m->mlp_bias;
    d.xielu = d.plain && !strcmp(m->activation, "xielu");
    /* export: GPT-NeoX's the exact GELU, or the tanh one with parallel blocks or partial RoPE;
     * StarCoder2's the tanh GELU otherwise */
    const bool gelu = !strcmp(m->activation, "gelu"), gelu_tanh = !strcmp(m->activation, "gelu_tanh");
    d.neox = d.ln && d.plain && !m->norm_unit_offset &&
             (gelu || (gelu_tanh && (strcmp(m->parallel_block, "none") || d.rd < d.hs)));
    d.sc2 = d.ln && d.plain && gelu_tanh && !d.neox;
    d.norm_bias = d.ln && m->norm_bias;
    d.one_norm = d.llama && !strcmp(m->parallel_block, "one_norm");
    d.cohere = d.ln && !d.norm_bias && d.one_norm && !d.plain;
    d.head_bias = d.llama && m->head_bias;
    /* export: the tanh GELU beside attention through norm1 under LayerNorms with biases: Phi's with
     * attention biases, GPT-J's without */
    d.phi = d.ln && d.norm_bias && d.one_norm && d.plain && gelu_tanh && m->attention_bias;
    d.gptj = d.ln && d.norm_bias && d.one_norm && d.plain && gelu_tanh && !m->attention_bias;
    if (d.phi || d.gptj) d.neox = d.sc2 = false;
    d.lfm2 = d.llama && m->short_conv_kernel > 0;
    d.sconv_K = d.lfm2 ? m->short_conv_kernel : 0;
    d.att_layers = m->attention_layers;
    d.head_gate = d.llama && m->attention_head_gate;
    d.mamba = d.llama && m->mamba_heads > 0;
    d.MH = m->mamba_heads;
    d.MP = m->mamba_head_dim ? m->mamba_head_dim : m->mamba_heads ? 2 * m->width / m->mamba_heads : 0;
    d.MG = m->mamba_groups;
    d.MN = m->mamba_state;
    d.MK = m->mamba_conv_kernel;
    d.mconv_bias = m->mamba_conv_bias;
    d.mlp_only = m->mlp_only_layers;
    d.mixer_only = m->mixer_only_layers;
    d.nemh = d.llama && (d.mlp_only.n || d.mixer_only.n);
    d.mamba1 = d.llama && m->mamba1_width > 0;
    d.M1I = m->mamba1_width;
    d.M1R = m->mamba1_dt_rank ? m->mamba1_dt_rank : (m->width + 15) / 16;
    d.M1norms = !strcmp(m->mamba1_norms, "plain") ? 1 : !strcmp(m->mamba1_norms, "weighted") ? 2 : 0;
    /* export: whole Mamba-2 blocks with RoPE on half of each head and none of Granite's scalars are
     * Bamba's (import: its family says) */
    d.bamba = d.mamba && !d.nemh && !d.E && d.rd * 2 == d.hs && m->attention_multiplier == 0 &&
              m->residual_multiplier == 1.0 && m->logits_scaling == 1.0 && m->embed_scale == 1.0;
    d.granite_h = d.mamba && !d.nemh && !d.bamba;
    d.jamba = d.mamba1 && !d.nemh;
    d.Lat = d.E ? m->expert_latent : 0;

    d.lfm3 = d.lfm2 && (d.sandwich || d.head_gate || m->sliding_window || !strcmp(m->rope_scaling, "proportional"));
    d.names = d.neox ? F_NEOX : d.phi ? F_PHI : d.gptj ? F_GPTJ : d.lfm2 ? F_LFM2 : d.nemh ? F_NEMH
            : d.bamba || d.jamba ? F_BAMBA : 0;
    d.clovax = d.sandwich && !m->norm_unit_offset && m->attention_multiplier > 0 && !d.mla;
    d.glm = d.llama && !d.ds && !d.mla && !d.phi3 && !d.ln && !d.plain && !d.clovax &&
            (d.rd < d.hs || (d.sandwich && !m->norm_unit_offset));
    d.mistral4 = d.mla && d.E && !strcmp(m->router_scores, "softmax") &&
                 (m->router_norm_topk || (m->router_groups > 1 && strcmp(m->router_group_score, "max")) ||
                  m->query_scale_beta > 0);
    /* export: Mistral Small 4's experts, GraniteMoeSWA's, as transformers 5 names them (import: as the
     * files hold them) */
    d.fused = d.mistral4 || (d.granite_moe && d.sinks);
    d.ministral3 = d.llama && !d.mla && m->query_scale_beta > 0;
    d.ernie = d.E && !d.mla && !strcmp(m->router_scores, "softmax") && d.select_bias;
    d.rope_pairs = d.glm || d.ernie || d.cohere || d.gptj;    /* import: ERNIE 4.5's dense models too */
    d.hunyuan = d.qk_norm && m->qk_norm_after_rope && !d.qk_unweighted;
    d.hy_moe = d.hunyuan && d.E;
    d.minimax = d.ds && d.select_bias && !strcmp(m->router_scores, "sigmoid") && d.qk_all && !d.post && !d.S &&
                !d.mla && !d.dense_layers;
    d.mellum = d.E && !d.mla && !strcmp(m->router_scores, "softmax") && !d.select_bias && d.qk_norm && !d.qk_all &&
               !m->qk_norm_after_rope && !d.post && !d.sandwich && !d.S && m->router_groups <= 1 &&
               m->router_scale == 1.0 && (d.dense_layers || m->sliding_window_pattern || m->sliding_rope_theta > 0 ||
                                          strcmp(m->sliding_rope, "scaled"));
    d.exaone_moe = d.ds && d.select_bias && d.qk_norm && !d.qk_all && !d.post && !d.mla && m->sliding_window > 0 &&
                   m->sliding_window_pattern > 0 && m->no_rope_pattern == m->sliding_window_pattern;
    d.gate = d.llama && m->attention_output_gate;
    d.lin_pattern = d.llama ? m->linear_attention_pattern : 0;
    d.Hk = m->linear_key_heads ? m->linear_key_heads : m->heads;
    d.Hv = m->linear_value_heads ? m->linear_value_heads : d.Hk;
    d.dk = m->linear_key_dim ? m->linear_key_dim : d.hs;
    d.dvl = m->linear_value_dim ? m->linear_value_dim : d.hs;
    d.K = m->linear_conv_kernel;
    d.olmoh = d.lin_pattern && d.post;
    d.qwen35 = (d.gate || d.lin_pattern) && !d.olmoh;
    d.next = d.qwen35 && d.E && !m->router_norm_topk;
    if (d.qwen35) d.glm = d.rope_pairs = false;     /* its partial RoPE is rotate_half's */
    if (d.lfm2) d.glm = d.rope_pairs = false;       /* LFM3's norms after the sublayers are not GLM-4's */
    if (d.granite_h) d.granite_moe = d.E > 0;       /* Granite 4.0-H's experts are Granite's */
    if (d.nemh || d.bamba || d.jamba) d.glm = d.rope_pairs = d.neox = d.sc2 = false;   /* rotate_half's, or none */
    if (d.llama4) d.rope_pairs = true;              /* its complex RoPE turns neighbouring values */
    return d;
}

static bool map_applies(const map_t *e, const dims_t *d)
{
    if (!(e->flags & (d->llama ? F_LLAMA : F_GPT))) return false;
    if ((e->flags & F_GDN) && !d->lin_pattern) return false;
    if ((e->flags & F_LLAMA4) && !d->llama4) return false;
    if ((e->flags & F_GDN_QWEN) && d->olmoh) return false;
    if ((e->flags & F_GDN_OLMO) && !d->olmoh) return false;
    if (d->olmoh && (e->flags & (F_PRE | F_POST)) && !(e->flags & F_GDN_OLMO)) return false;    /* its own */
    if (d->llama4 && !strncmp(e->accel, "h.%d.mlp.", 9) && !(e->flags & F_LLAMA4)) return false;  /* its own */
    if ((e->flags & F_APERTUS) && !d->xielu) return false;
    if (d->xielu && (e->flags & (F_PRE | F_POST)) && !(e->flags & F_APERTUS)) return false;    /* its own */
    if ((e->flags & F_SCONV) && !d->lfm2) return false;
    if ((e->flags & F_MAMBA) && !d->mamba) return false;
    if ((e->flags & F_MAMBA1) && !d->mamba1) return false;
    if ((e->flags & F_MAMBA1) && strstr(e->accel, "_norm.") && d->M1norms != 2) return false;  /* weighted: Jamba's */
    if ((e->flags & F_MCONVB) && !d->mconv_bias) return false;
    if ((e->flags & F_GSHARED) && !d->granite_h && !(d->granite_moe && (e->flags & F_SHARED))) return false;
    if (d->granite_h && (e->flags & F_DENSE) && !(e->flags & F_GSHARED)) return false;   /* its shared_mlp instead */
    if (d->granite_h && (e->flags & F_DS)) return false;  /* its shared expert: shared_mlp's names */
    if ((e->flags & F_NEMH_MOE) && !d->E) return false;
    if ((e->flags & F_LATENT) && !d->Lat) return false;
    if ((e->flags & F_LFM2_MOE) && !(d->lfm2 && d->E)) return false;
    if ((e->flags & F_LFM2A) && d->lfm3) return false;
    if ((e->flags & F_LFM3) && !d->lfm3) return false;
    if ((e->flags & F_HGATE) && !d->head_gate) return false;
    if ((e->flags & F_AFTER) && !d->sandwich) return false;
    if ((e->flags & F_LFM2_MOE) && (e->flags & F_EXPERT) && d->fused) return false;
    if ((e->flags & F_GDN) && (e->part >= P_LQKV && e->part <= P_LBA) && ((e->flags & F_GDN_NEXT) != 0) != d->next)
        return false;
    if ((e->flags & F_QGATE) && !d->gate) return false;
    if (d->gate && e->part == P_Q && !(e->flags & F_QGATE)) return false;     /* q_proj holds the gate too */
    if (d->llama && (e->flags & F_NAMES) != d->names) return false;
    if ((e->flags & F_HEADB) && !d->head_bias) return false;
    if (d->mla && !strncmp(e->accel, "h.%d.attn.qkv.", 14)) return false;     /* the latents instead */
    if ((e->flags & F_MLA) && !d->mla) return false;
    if ((e->flags & F_QLORA) && !(d->mla && d->Rq)) return false;
    if ((e->flags & F_QDIRECT) && !(d->mla && !d->Rq)) return false;
    if ((e->flags & F_QKVB) && !d->qkv_bias) return false;
    if ((e->flags & F_UNTIED) && d->tied) return false;
    if ((e->flags & F_QKNORM) && (!d->qk_norm || d->qk_unweighted)) return false;
    if ((e->flags & F_QKNORM) && ((e->flags & F_HUNYUAN) != 0) != d->hunyuan) return false;
    if ((e->flags & F_DENSE) && d->E && !d->dense_layers && !d->expert_layers.n) return false;
    if ((e->flags & F_MIXTRAL) && !(d->E && !d->qk_norm && !d->S && !d->oss && !d->granite_moe && !d->ds) && !d->minimax)
        return false;
    if ((e->flags & F_QWEN_MOE) && !(d->E && (d->qk_norm || d->S || d->ds) && !d->oss && !d->granite_moe && !d->minimax))
        return false;
    if ((e->flags & F_QWEN_MOE) && (e->flags & F_SHARED) && d->ds) return false;
    if ((e->flags & F_QWEN_MOE) && (e->flags & F_EXPERT) && d->fused) return false;
    if ((e->flags & F_FUSED) && !d->fused) return false;
    if ((e->flags & F_DS) && (!d->ds || d->minimax || d->granite_moe || d->hy_moe)) return false;   /* theirs:
                                                                                                  * shared_mlp */
    if ((e->flags & F_HY_MOE) && !d->hy_moe) return false;
    if (d->hy_moe && (e->flags & F_QWEN_MOE) && !(e->flags & (F_EXPERT | F_FUSED))) return false;  /* its router */
    if ((e->flags & F_SELECT) && !d->select_bias) return false;
    if ((e->flags & F_SELECT) && ((e->flags & F_ERNIE) != 0) != d->ernie) return false;
    if ((e->flags & F_SELECT) && ((e->flags & F_EXAONE_MOE) != 0) != d->exaone_moe) return false;
    if ((e->flags & F_GRANITE_MOE) && !d->granite_moe) return false;
    if ((e->flags & F_GRANITE_MOE) && !(e->flags & (F_FUSED | F_SHARED)) && d->fused) return false;   /* the older names */
    if ((e->flags & F_OSS) && !d->oss) return false;
    if ((e->flags & F_OBIAS) && !d->obias) return false;
    if ((e->flags & F_SINKS) && !d->sinks) return false;
    if ((e->flags & F_SHARED) && !d->S) return false;
    if ((e->flags & F_SPLIT) && d->phi3) return false;
    if ((e->flags & F_PHI3) && !d->phi3) return false;
    if ((e->flags & F_PRE) && d->post && !d->lin_pattern) return false;   /* OLMo Hybrid: per layer (layer_has) */
    if ((e->flags & F_POST) && !d->post) return false;
    const bool gemma_names = d->sandwich && !d->glm && !d->clovax;
    if ((e->flags & F_CLOVAX) && !(d->sandwich && d->clovax)) return false;
    if ((e->flags & F_SANDWICH) && !gemma_names) return false;
    if ((e->flags & F_NO_SANDWICH) && (gemma_names || d->vault)) return false;
    if ((e->flags & F_VAULT) && !d->vault) return false;
    if ((e->flags & F_GLM_SANDWICH) && !(d->sandwich && d->glm)) return false;
    if ((e->flags & F_GLU_SPLIT) && (d->phi3 || d->glm || d->plain)) return false;
    if ((e->flags & F_GLU_FUSED) && (!(d->phi3 || d->glm) || d->plain)) return false;
    if ((e->flags & F_LN) && !d->norm_bias) return false;
    if (d->one_norm && !strncmp(e->accel, "h.%d.norm2.", 11)) return false;   /* the MLP reads norm1 */
    if ((e->flags & F_PLAIN) && !d->plain) return false;
    if ((e->flags & F_MLPB) && !d->mlp_bias) return false;
    if ((e->flags & F_PROJ) && d->sc2) return false;
    if ((e->flags & F_SC2) && !d->sc2) return false;
    return true;
}

/* Whether block l has the entry: with model.dense_layers the leading blocks have the dense MLP's,
 * the others the experts' (with model.expert_layers, those blocks the experts'); q/k norms on the
 * layers with RoPE only (model.qk_norm_layers=rope) are not on the others. */
static bool layer_has(const map_t *e, const dims_t *d, int l)
{
    if (e->flags & F_BLOCK) {           /* a layer of one sublayer has none of the other's */
        const char *p = e->accel + 5;   /* past "h.%d." */
        const bool mixer = !strncmp(p, "norm1.", 6) || !strncmp(p, "attn.", 5) || !strncmp(p, "post_norm1.", 11);
        const bool mlp = !strncmp(p, "norm2.", 6) || !strncmp(p, "mlp.", 4) || !strncmp(p, "post_norm2.", 11);
        if ((mixer && accel_layer_listed(&d->mlp_only, l)) || (mlp && accel_layer_listed(&d->mixer_only, l)))
            return false;
    }
    if ((d->mamba || d->mamba1 || d->lfm2) && (e->flags & F_BLOCK)) {   /* Mamba or short convolutions: all
                                                                          * but the attention layers */
        const bool recurrent = !accel_layer_listed(&d->att_layers, l);
        if (e->flags & (F_MAMBA | F_MAMBA1 | F_SCONV)) return recurrent;
        if (recurrent && !strncmp(e->accel, "h.%d.attn.", 10)) return false;
    }
    if (d->lin_pattern && (e->flags & F_BLOCK)) {   /* gated delta-nets: all but every N-th layer */
        const bool linear = (l + 1) % d->lin_pattern != 0;
        if (d->post && (e->flags & (F_PRE | F_POST)))   /* OLMo Hybrid: norms before the delta-nets, after attention */
            return (e->flags & F_PRE) ? linear : !linear;
        if (e->flags & F_GDN) return linear;
        if (linear && !strncmp(e->accel, "h.%d.attn.", 10)) return false;
    }
    if ((e->flags & F_QKNORM) && d->qk_rope_only && d->nope && (l + 1) % d->nope == 0) return false;
    if (!(e->flags & F_BLOCK) || (!d->dense_layers && !d->expert_layers.n)) return true;
    const bool moe = d->expert_layers.n ? accel_layer_listed(&d->expert_layers, l) : l >= d->dense_layers;
    if (e->flags & F_DENSE) return !moe;
    const bool experts = e->flags & (F_MIXTRAL | F_QWEN_MOE | F_OSS | F_GRANITE_MOE | F_DS | F_LFM2_MOE | F_NEMH_MOE |
                                     F_LLAMA4);
    return !experts || moe;
}

/* The accel tensor's shape from its (pattern) name, as src/nn/decoder.c registers it. */
static void accel_shape(const dims_t *d, const char *pattern, hf_flags_t flags, int *ndim, uint64_t dims[2])
{
    const uint64_t C = (uint64_t)d->C, QKV = (uint64_t)(d->NH + 2 * d->KVH) * (uint64_t)d->hs;
    const uint64_t F = (uint64_t)d->F, FIN = d->llama && !d->plain ? 2 * F : F;
    const char *p = strncmp(pattern, "h.%d.", 5) ? pattern : pattern + 5;
    const bool bias = strstr(p, ".bias") != NULL || !strcmp(p, "mlp.router.select_bias");
    uint64_t rows = C, cols = C;
    if (!strcmp(p, "wte") || !strncmp(p, "lm_head.", 8)) rows = (uint64_t)d->V;
    else if (!strcmp(p, "wpe")) rows = (uint64_t)d->T;
    else if (!strcmp(p, "attn.qkv.weight"))
        rows = QKV + (d->gate ? (uint64_t)d->NH * d->hs : 0) + (d->head_gate ? (uint64_t)d->NH : 0);
    else if (!strncmp(p, "attn.qkv.", 9)) rows = QKV;
    else if (flags & F_GDN) {           /* a gated delta-net's */
        const uint64_t CW = 2 * (uint64_t)d->Hk * d->dk + (uint64_t)d->Hv * d->dvl, VW = (uint64_t)d->Hv * d->dvl;
        if (!strcmp(p, "attn.in.weight")) rows = CW + VW + 2 * (uint64_t)d->Hv;
        else if (!strcmp(p, "attn.conv.weight")) rows = CW, cols = (uint64_t)d->K;
        else if (!strcmp(p, "attn.norm.weight")) rows = (uint64_t)d->dvl;
        else if (!strcmp(p, "attn.proj.weight")) cols = VW;
        else rows = (uint64_t)d->Hv;    /* dt_bias, A_log */
    }
    else if (flags & F_MAMBA1) {        /* a Mamba-1 layer's: in [2I, C], conv [I, K], x_proj [R + 2N, I], ... */
        const uint64_t I = (uint64_t)d->M1I, N = (uint64_t)d->MN, R = (uint64_t)d->M1R;
        if (!strcmp(p, "attn.in.weight")) rows = 2 * I;
        else if (!strcmp(p, "attn.conv.weight")) rows = I, cols = (uint64_t)d->MK;
        else if (!strcmp(p, "attn.x_proj.weight")) rows = R + 2 * N, cols = I;
        else if (!strcmp(p, "attn.dt_proj.weight")) rows = I, cols = R;
        else if (!strcmp(p, "attn.A_log")) rows = I, cols = N;
        else if (!strcmp(p, "attn.proj.weight")) cols = I;
        else if (!strcmp(p, "attn.dt_norm.weight")) rows = R;
        else if (!strcmp(p, "attn.b_norm.weight") || !strcmp(p, "attn.c_norm.weight")) rows = N;
        else rows = I;                  /* conv.bias, dt_bias, D */
    }
    else if (flags & F_MAMBA) {         /* a Mamba-2 layer's: in [I + CW + H, C], conv [CW, K], ... */
        const uint64_t I = (uint64_t)d->MH * d->MP, CW = I + 2 * (uint64_t)d->MG * d->MN;
        if (!strcmp(p, "attn.in.weight")) rows = I + CW + (uint64_t)d->MH;
        else if (!strcmp(p, "attn.conv.weight")) rows = CW, cols = (uint64_t)d->MK;
        else if (!strcmp(p, "attn.conv.bias")) rows = CW;
        else if (!strcmp(p, "attn.norm.weight")) rows = I;
        else if (!strcmp(p, "attn.proj.weight")) cols = I;
        else rows = (uint64_t)d->MH;    /* dt_bias, A_log, D */
    }
    else if (flags & F_SCONV) {         /* a short convolution's: in [3C, C], conv [C, K], proj [C, C] */
        if (!strcmp(p, "attn.in.weight")) rows = 3 * C;
        else if (!strcmp(p, "attn.conv.weight")) cols = (uint64_t)d->sconv_K;
    }
    else if (!strncmp(p, "mlp.fc.", 7)) rows = FIN;
    else if (!strcmp(p, "mlp.proj.weight")) cols = F;
    else if (!strncmp(p, "mlp.gate_up.", 12)) rows = 2 * (uint64_t)d->DF;  /* the dense MLP's */
    else if (!strncmp(p, "mlp.up.", 7)) rows = (uint64_t)d->DF;             /* the plain MLP's */
    else if (!strcmp(p, "mlp.down.weight")) cols = (uint64_t)d->DF;
    else if (!strncmp(p, "mlp.act.", 8)) rows = 1;                           /* xIELU's alphas, beta, eps */
    else if (!strncmp(p, "mlp.router.", 11)) rows = (uint64_t)d->E;
    else if (!strcmp(p, "mlp.experts.gate_up.bias")) rows = (uint64_t)d->E * FIN;
    else if (!strcmp(p, "mlp.experts.down.bias")) rows = (uint64_t)d->E * C;
    else if (!strcmp(p, "attn.sinks")) rows = (uint64_t)d->NH;
    else if (!strcmp(p, "mlp.experts.gate_up.weight") || !strcmp(p, "mlp.experts.up.weight"))
        rows = (uint64_t)d->E * FIN, cols = d->Lat ? (uint64_t)d->Lat : C;
    else if (!strcmp(p, "mlp.latent_in.weight")) rows = (uint64_t)d->Lat;
    else if (!strcmp(p, "mlp.latent_out.weight")) cols = (uint64_t)d->Lat;
    else if (!strcmp(p, "mlp.experts.down.weight")) rows = (uint64_t)d->E * (d->Lat ? (uint64_t)d->Lat : C), cols = F;
    else if (!strcmp(p, "mlp.shared.gate_up.weight")) rows = 2 * (uint64_t)d->S;
    else if (!strcmp(p, "mlp.shared.up.weight")) rows = (uint64_t)d->S;
    else if (!strcmp(p, "mlp.shared.down.weight")) cols = (uint64_t)d->S;
    else if (!strcmp(p, "mlp.shared_gate.weight")) rows = 1;
    else if (!strcmp(p, "attn.proj.weight")) cols = (uint64_t)d->NH * (d->mla ? d->dv : d->hs);
    else if (!strcmp(p, "attn.q_a.weight")) rows = (uint64_t)d->Rq;
    else if (!strcmp(p, "attn.q_a_norm.weight")) rows = (uint64_t)d->Rq;
    else if (!strcmp(p, "attn.q_b.weight")) rows = (uint64_t)d->NH * d->hs, cols = (uint64_t)d->Rq;
    else if (!strcmp(p, "attn.q.weight")) rows = (uint64_t)d->NH * d->hs;
    else if (!strcmp(p, "attn.kv_a.weight")) rows = (uint64_t)d->Rkv + d->rd;
    else if (!strcmp(p, "attn.kv_a_norm.weight")) rows = (uint64_t)d->Rkv;
    else if (!strcmp(p, "attn.kv_b.weight"))
        rows = (uint64_t)d->NH * (d->hs - d->rd + d->dv), cols = (uint64_t)d->Rkv;
    else if (strstr(p, "_norm.")) {     /* Qwen3's per-head q/k norms, or OLMo's whole ones */
        rows = (uint64_t)d->hs;
        if (d->qk_all) rows *= (uint64_t)(!strncmp(p, "attn.q_norm", 11) ? d->NH : d->KVH);
    }
    /* Vectors: biases and norm gains. */
    const bool vec = bias || !strncmp(p, "ln", 2) || !strncmp(p, "norm", 4) || !strncmp(p, "post_norm", 9) ||
                     strstr(p, "_norm.") || !strcmp(p, "attn.sinks") || !strcmp(p, "attn.dt_bias") ||
                     (!strcmp(p, "attn.A_log") && !(flags & F_MAMBA1)) || !strcmp(p, "attn.D") ||
                     !strcmp(p, "attn.norm.weight") || !strncmp(p, "mlp.act.", 8);    /* Mamba-1's A_log: [I, N] */
    *ndim = vec ? 1 : 2;
    dims[0] = rows;
    dims[1] = vec ? 0 : cols;
}

/* Rows [r0, r1) of the accel tensor a part covers (of expert `expert`'s rows when experts >= 1:
 * the tensor stacks `experts` equal slices). */
static void part_rows(const dims_t *d, int part, uint64_t rows, int expert, int experts, uint64_t *r0,
                      uint64_t *r1)
{
    const uint64_t q = (uint64_t)d->NH * d->hs, kv = (uint64_t)d->KVH * d->hs;
    if (experts) {
        rows /= (uint64_t)experts;
        part_rows(d, part, rows, 0, 0, r0, r1);
        *r0 += (uint64_t)expert * rows;
        *r1 += (uint64_t)expert * rows;
        return;
    }
    switch (part) {
    case P_Q: *r0 = 0; *r1 = q; break;
    case P_K: *r0 = q; *r1 = q + kv; break;
    case P_V: *r0 = q + kv; *r1 = q + 2 * kv; break;
    case P_GATE: *r0 = 0; *r1 = rows / 2; break;  /* rows [gate | up] */
    case P_UP: *r0 = rows / 2; *r1 = rows; break;
    case P_SHARED_GATE: *r0 = 0; *r1 = (uint64_t)d->S; break;
    case P_SHARED_UP: *r0 = (uint64_t)d->S; *r1 = 2 * (uint64_t)d->S; break;
    case P_QGATE: *r0 = 0; *r1 = 2 * q; break;     /* L_QGATE places them */
    case P_HGATE: *r0 = q + 2 * kv; *r1 = q + 2 * kv + (uint64_t)d->NH; break;
    case P_LQKV: case P_LZ: case P_LB: case P_LA: case P_LQKVZ: case P_LBA: case P_LQ: case P_LK: case P_LV: {
        const uint64_t CW = 2 * (uint64_t)d->Hk * d->dk + (uint64_t)d->Hv * d->dvl, VW = (uint64_t)d->Hv * d->dvl;
        const uint64_t start[] = { 0, CW, CW + VW, CW + VW + (uint64_t)d->Hv, rows };
        const uint64_t QW = (uint64_t)d->Hk * d->dk;
        if (part >= P_LQ) {         /* q, k, v apart: [0, QW), [QW, 2 QW), [2 QW, CW) */
            *r0 = part == P_LQ ? 0 : part == P_LK ? QW : 2 * QW;
            *r1 = part == P_LQ ? QW : part == P_LK ? 2 * QW : CW;
        } else if (part >= P_LQKVZ) {   /* q|k|v|z and b|a: L_QKVZ and L_BA place them */
            *r0 = part == P_LQKVZ ? 0 : CW + VW;
            *r1 = part == P_LQKVZ ? CW + VW : rows;
        } else {
            *r0 = start[part - P_LQKV];
            *r1 = start[part - P_LQKV + 1];
        }
        break;
    }
    default: *r0 = 0; *r1 = rows; break;
    }
}

/* One concrete (layer-substituted) mapping entry with its shapes. */
typedef struct {
    char accel[ACCEL_HF_NAME_MAX], hf[ACCEL_HF_NAME_MAX];
    int ndim;                       /* the accel tensor's */
    uint64_t dims[2];
    uint64_t r0, r1;                /* its rows this HF tensor holds */
    int layout;                     /* L_* */
    int hs, rd;                     /* L_ROPE_PAIRS: the head size, the values RoPE turns (L_MLA_Q
                                     * alike; L_MLA_KV: hs the latent's width) */
    bool pairs;                     /* L_MLA_*: the RoPE pairs interleaved */
    int hf_ndim;
    uint64_t hf_dims[4];            /* the HF tensor's shape (MXFP4: the blocks'; packed: the weight's) */
    bool packed;                    /* hf names compressed-tensors' X.weight_packed (dequantized as read) */
    int lora, full;                 /* a PEFT adapter's module merged into it, its tensor read instead
                                     * (index + 1 in accel_peft_module; 0: none) */
} entry_t;

/* The Hugging Face tensor's shape for x's rows [r0, r1) of its accel tensor. */
static void hf_shape(const dims_t *d, entry_t *x)
{
    const uint64_t rows = x->r1 - x->r0, cols = x->ndim == 2 ? x->dims[1] : 1, E = (uint64_t)d->E;
    uint64_t *h = x->hf_dims;
    x->hf_ndim = x->ndim;
    switch (x->layout) {
    case L_T: h[0] = cols; h[1] = rows; break;
    case L_EXPERTS: case L_EXPERTS_GLU:             /* [E, in, out] */
        x->hf_ndim = 3; h[0] = E; h[1] = cols; h[2] = rows / E; break;
    case L_MXFP4: case L_MXFP4_GLU:                 /* [E, out, in / 32, 16] */
        x->hf_ndim = 4; h[0] = E; h[1] = rows / E; h[2] = cols / 32; h[3] = 16; break;
    case L_STACKED:                                 /* [E, out, in] */
        x->hf_ndim = 3; h[0] = E; h[1] = rows / E; h[2] = cols; break;
    case L_CONV:                                    /* [n, 1, K] */
        x->hf_ndim = 3; h[0] = rows; h[1] = 1; h[2] = cols; break;
    case L_ROW_MATRIX:                              /* [1, n] */
        x->hf_ndim = 2; h[0] = 1; h[1] = rows; break;
    case L_EXPERT_BIAS: case L_EXPERT_GLU_BIAS:     /* [E, n] */
        x->hf_ndim = 2; h[0] = E; h[1] = rows / E; break;
    case L_SCALAR: x->hf_ndim = 0; break;           /* [] */
    default: h[0] = rows; h[1] = cols; break;
    }
}

/* An MXFP4 entry's scales: the name with _scales for _blocks. */
static void scales_name(const entry_t *x, char *name, size_t len)
{
    snprintf(name, len, "%.*s_scales", (int)(strlen(x->hf) - strlen("_blocks")), x->hf);
}

/* Every entry for the model, in accel registration order. *out malloc'ed; returns the count. */
static int entries_of(const dims_t *d, entry_t **out)
{
    size_t per_expert = 0;          /* map entries that repeat for every expert */
    for (size_t i = 0; i < NMAP; i++) per_expert += (g_map[i].flags & F_EXPERT) != 0;
    size_t cap = (NMAP + per_expert * (size_t)d->E) * (size_t)(d->L + 1), n = 0;
    entry_t *e = calloc(cap, sizeof *e);
    if (!e) return ACCEL_ERR_NOMEM;
    /* Layer 0, then the blocks, then the final entries, as src/nn/decoder.c registers them. */
    for (int pass = 0; pass < 3; pass++) {
        int lmax = pass == 1 ? d->L : 1;
        for (int l = 0; l < lmax; l++)
            for (size_t i = 0; i < NMAP; i++) {
                const map_t *m = &g_map[i];
                bool block = m->flags & F_BLOCK;
                bool first = !strcmp(m->accel, "wte") || !strcmp(m->accel, "wpe");
                if (!map_applies(m, d) || (pass == 1) != block || (pass == 0) != (first && !block) ||
                    !layer_has(m, d, l))
                    continue;
                const int experts = m->flags & F_EXPERT ? d->E : 0;
                for (int ex = 0; ex < (experts ? experts : 1); ex++) {
                    entry_t *x = &e[n++];
                    snprintf(x->accel, sizeof x->accel, m->accel, l);
                    snprintf(x->hf, sizeof x->hf, m->hf, l, ex);
                    accel_shape(d, m->accel, m->flags, &x->ndim, x->dims);
                    part_rows(d, m->part, x->dims[0], ex, experts, &x->r0, &x->r1);
                    x->layout = m->layout;
                    if (d->rope_pairs && (m->part == P_Q || m->part == P_K)) {   /* GLM's, ERNIE's pairs */
                        x->layout = L_ROPE_PAIRS;
                        x->hs = d->hs;
                        x->rd = d->rd;
                    }
                    if (x->layout == L_HEADS_QKV) x->hs = d->hs;
                    if (x->layout == L_QKVZ) {      /* a key head's q, k rows; its value heads' v rows */
                        x->hs = d->dk;
                        x->rd = d->Hv / d->Hk * d->dvl;
                    }
                    if (x->layout == L_BA) x->hs = d->Hv / d->Hk;   /* a key head's value heads */
                    if (x->layout == L_QGATE) {     /* the gate's rows start after q|k|v's */
                        x->hs = d->hs;
                        x->rd = (d->NH + 2 * d->KVH) * d->hs;
                    }
                    if (x->layout == L_MLA_Q || x->layout == L_MLA_KV) {   /* heads, or the latent */
                        x->hs = x->layout == L_MLA_Q ? d->hs : d->Rkv;
                        x->rd = d->rd;
                        x->pairs = d->mla_pairs;
                    }
                    if (d->mxfp4 && (x->layout == L_EXPERTS || x->layout == L_EXPERTS_GLU)) {
                        x->layout = x->layout == L_EXPERTS ? L_MXFP4 : L_MXFP4_GLU;
                        strncat(x->hf, "_blocks", sizeof x->hf - strlen(x->hf) - 1);
                    }
                    hf_shape(d, x);
                }
            }
    }
    *out = e;
    return (int)n;
}

int accel_hf_accel_tensors(const accel_model_config_t *m, accel_hf_tensor_t **out)
{
    *out = NULL;
    if (strcmp(m->name, "gpt") && strcmp(m->name, "llama")) return ACCEL_ERR_UNSUPPORTED;
    dims_t d = dims_of(m);
    entry_t *e;
    int ne = entries_of(&d, &e);
    if (ne < 0) return ne;
    accel_hf_tensor_t *t = calloc((size_t)ne + 1, sizeof *t);
    int n = 0;
    for (int i = 0; t && i < ne; i++) {
        if (n && !strcmp(t[n - 1].name, e[i].accel)) continue;
        snprintf(t[n].name, sizeof t[n].name, "%s", e[i].accel);
        t[n].ndim = e[i].ndim;
        t[n].dims[0] = e[i].dims[0];
        t[n].dims[1] = e[i].dims[1];
        n++;
    }
    free(e);
    if (!t) return ACCEL_ERR_NOMEM;
    *out = t;
    return n;
}

/* ------------------------------------------------------------------ config.json -> accel */

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* An integer key, or def when absent/null; -1 marks "not an integer". */
static long long jint(json_t *o, const char *k, long long def)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) return def;
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static double jnum(json_t *o, const char *k, double def)
{
    json_t *v = json_object_get(o, k);
    return v && json_is_number(v) ? json_number_value(v) : def;
}

/* Element i of array a as an integer, -1 when it is not one. */
static long long jint_at(json_t *a, size_t i)
{
    json_t *v = json_array_get(a, i);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* Whether v is the string s. */
static bool jstr_is(json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

static bool jbool(json_t *o, const char *k, bool def)
{
    json_t *v = json_object_get(o, k);
    return v && json_is_boolean(v) ? json_is_true(v) : def;
}

typedef struct {
    const char *arch, *model_type;
    bool llama;
} arch_info_t;

static const arch_info_t g_archs[] = {
    { "GPT2LMHeadModel", "gpt2", false },
    { "LlamaForCausalLM", "llama", true },
    { "Llama4ForCausalLM", "llama4_text", true },
    { "MistralForCausalLM", "mistral", true },
    { "Qwen2ForCausalLM", "qwen2", true },
    { "Qwen3ForCausalLM", "qwen3", true },
    { "MixtralForCausalLM", "mixtral", true },
    { "Qwen3MoeForCausalLM", "qwen3_moe", true },
    { "Qwen2MoeForCausalLM", "qwen2_moe", true },
    { "Phi3ForCausalLM", "phi3", true },
    { "Olmo2ForCausalLM", "olmo2", true },
    { "Olmo3ForCausalLM", "olmo3", true },
    { "SmolLM3ForCausalLM", "smollm3", true },
    { "GemmaForCausalLM", "gemma", true },
    { "GraniteForCausalLM", "granite", true },
    { "Gemma2ForCausalLM", "gemma2", true },
    { "Gemma3ForCausalLM", "gemma3_text", true },
    { "OlmoeForCausalLM", "olmoe", true },
    { "FlexOlmoForCausalLM", "flex_olmo", true },
    { "OlmoHybridForCausalLM", "olmo_hybrid", true },
    { "GptOssForCausalLM", "gpt_oss", true },
    { "SeedOssForCausalLM", "seed_oss", true },
    { "GlmForCausalLM", "glm", true },
    { "Glm4ForCausalLM", "glm4", true },
    { "GraniteMoeForCausalLM", "granitemoe", true },
    { "Glm4MoeForCausalLM", "glm4_moe", true },
    { "Dots1ForCausalLM", "dots1", true },
    { "Exaone4ForCausalLM", "exaone4", true },
    { "DeepseekV3ForCausalLM", "deepseek_v3", true },
    { "DeepseekV2ForCausalLM", "deepseek_v2", true },
    { "Glm4MoeLiteForCausalLM", "glm4_moe_lite", true },
    { "Mistral4ForCausalLM", "mistral4", true },
    { "Ministral3ForCausalLM", "ministral3", true },
    { "Ernie4_5ForCausalLM", "ernie4_5", true },
    { "Ernie4_5_MoeForCausalLM", "ernie4_5_moe", true },
    { "HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense", true },
    { "MiniMaxM2ForCausalLM", "minimax_m2", true },
    { "SolarOpenForCausalLM", "solar_open", true },
    { "HeliumForCausalLM", "helium", true },
    { "ExaoneMoeForCausalLM", "exaone_moe", true },
    { "YoutuForCausalLM", "youtu", true },
    { "MellumForCausalLM", "mellum", true },
    { "MinistralForCausalLM", "ministral", true },
    { "Starcoder2ForCausalLM", "starcoder2", true },
    { "NemotronForCausalLM", "nemotron", true },
    { "ArceeForCausalLM", "arcee", true },
    { "ApertusForCausalLM", "apertus", true },
    { "Jais2ForCausalLM", "jais2", true },
    { "StableLmForCausalLM", "stablelm", true },
    { "GPTNeoXForCausalLM", "gpt_neox", true },
    { "CohereForCausalLM", "cohere", true },
    { "Cohere2ForCausalLM", "cohere2", true },
    { "PhiForCausalLM", "phi", true },
    { "GPTJForCausalLM", "gptj", true },
    { "Qwen3_5ForCausalLM", "qwen3_5_text", true },
    { "Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", true },
    { "Qwen3NextForCausalLM", "qwen3_next", true },
    { "Lfm2ForCausalLM", "lfm2", true },
    { "Lfm2MoeForCausalLM", "lfm2_moe", true },
    { "Lfm3ForCausalLM", "lfm3", true },
    { "GraniteMoeHybridForCausalLM", "granitemoehybrid", true },
    { "NemotronHForCausalLM", "nemotron_h", true },
    { "MambaForCausalLM", "mamba", true },
    { "FalconMambaForCausalLM", "falcon_mamba", true },
    { "JambaForCausalLM", "jamba", true },
    { "BambaForCausalLM", "bamba", true },
    { "CwmForCausalLM", "cwm", true },
    { "VaultGemmaForCausalLM", "vaultgemma", true },
    { "GraniteMoeSharedForCausalLM", "granitemoeshared", true },
    { "GraniteSWAForCausalLM", "granite_swa", true },
    { "GraniteMoeSWAForCausalLM", "granitemoe_swa", true },
    { "HyperCLOVAXForCausalLM", "hyperclovax", true },
    { "ExaoneForCausalLM", "exaone", true },
    { "HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe", true },
};

/* Families transformers builds from Llama's classes under their own config class and name (their
 * releases say InternLM3ForCausalLM, ...): read as LlamaForCausalLM. */
static const arch_info_t g_llama_aliases[] = {
    { "InternLM3ForCausalLM", "internlm3", true },
    { "IQuestCoderForCausalLM", "iquestcoder", true },
};

/* Vision-language models whose language model accel imports: its family from text_config's
 * model_type (text_type, or none, means text_arch, with text_defaults where text_config lacks the
 * keys, at the top level and in its RoPE object alike), tied as the top level says where text_config does not (else tied); flat: the hub's
 * config.json may have the text keys at the top level instead (Qwen2-VL's, Qwen2.5-VL's). The
 * Qwen VLs' M-RoPE is plain RoPE on text, whose three position streams coincide. */
typedef struct {
    const char *arch, *text_arch, *text_type, *text_defaults;
    bool tied, flat;
} multimodal_t;

static const multimodal_t g_multimodal[] = {
    { "Gemma3ForConditionalGeneration", "Gemma3ForCausalLM", NULL, NULL, true, false },
    { "Mistral3ForConditionalGeneration", "MistralForCausalLM", NULL, NULL, false, false },
    { "Qwen3VLForConditionalGeneration", "Qwen3ForCausalLM", "qwen3_vl_text", NULL, false, false },
    /* its router always renormalizes the top k (no norm_topk_prob key) */
    { "Qwen3VLMoeForConditionalGeneration", "Qwen3MoeForCausalLM", "qwen3_vl_moe_text",
      "{\"norm_topk_prob\": true}", false, false },
    { "Qwen2_5_VLForConditionalGeneration", "Qwen2ForCausalLM", "qwen2_5_vl_text", NULL, false, true },
    { "Qwen2VLForConditionalGeneration", "Qwen2ForCausalLM", "qwen2_vl_text", NULL, false, true },
    /* GLM-4.5V, GLM-4.6V: GLM-4.5's without q/k norms, its q/k/v biases on by default */
    { "Glm4vMoeForConditionalGeneration", "Glm4MoeForCausalLM", "glm4v_moe_text",
      "{\"attention_bias\": true}", false, false },
    /* GLM-4.1V, GLM-4.6V-Flash: GLM-4's, RoPE on the whole head unless it says otherwise */
    { "Glm4vForConditionalGeneration", "Glm4ForCausalLM", "glm4v_text", "{\"partial_rotary_factor\": 1.0}",
      false, false },
    /* Qwen3.5: gated delta-net layers and gated attention; M-RoPE plain on text */
    { "Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM", "qwen3_5_text", NULL, false, false },
    { "Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", NULL, false, false },
    /* LFM2-VL, LFM3-VL: their language models beside a vision tower, tied unless the top level says not */
    { "Lfm2VlForConditionalGeneration", "Lfm2ForCausalLM", "lfm2", NULL, true, false },
    { "Lfm3VlForConditionalGeneration", "Lfm3ForCausalLM", "lfm3", NULL, true, false },
    /* Llama 4 Scout and Maverick: the language model beside a vision tower */
    { "Llama4ForConditionalGeneration", "Llama4ForCausalLM", "llama4_text", NULL, false, false },
    /* EXAONE 4.5: EXAONE 4's language model beside Qwen2.5-VL's kind of vision tower */
    { "Exaone4_5_ForConditionalGeneration", "Exaone4ForCausalLM", "exaone4", NULL, false, false },
    /* Granite Vision 4: Granite's language model beside a CLIP tower and its Q-Former projector (its
     * image features join only at image tokens: text runs the plain Granite) */
    { "Granite4VisionForConditionalGeneration", "GraniteForCausalLM", "granite4_vision_text", NULL, false, false },
    /* SmolVLM, SmolVLM2, Idefics3: a Llama beside a SigLIP tower and its connector (model.text_model.) */
    { "SmolVLMForConditionalGeneration", "LlamaForCausalLM", "llama", NULL, false, false },
    { "Idefics3ForConditionalGeneration", "LlamaForCausalLM", "llama", NULL, false, false },
    /* Granite-Docling: Granite beside a SigLIP tower (model.text_model.), tied unless it says not */
    { "GraniteDoclingForConditionalGeneration", "GraniteForCausalLM", "granite_docling_text", NULL, true, false },
    /* Kimi K2.5: Kimi K2's language model (DeepSeek-V3's; its INT4 experts quantized as the top
     * level says) beside a MoonViT tower and projector */
    { "Kimi_K25ForConditionalGeneration", "DeepseekV3ForCausalLM", "deepseek_v3", NULL, true, false },
    /* GLM-OCR: GLM-4.1V's kind without q, k, v biases, an MTP block after its layers */
    { "GlmOcrForConditionalGeneration", "Glm4ForCausalLM", "glm_ocr_text",
      "{\"partial_rotary_factor\": 1.0, \"attention_bias\": false}", false, false },
};

#define REFUSE(...) do { accel_errf(err, errlen, __VA_ARGS__); return ACCEL_ERR_UNSUPPORTED; } while (0)

/* mlp_layer_types ("dense" blocks first, then "sparse" ones), where config.json has it, into
 * *dense (left as it is without); other orders are refused. */
static accel_status_t leading_dense(json_t *root, const char *path, int layers, long long *dense, char *err,
                                    size_t errlen)
{
    json_t *types = json_object_get(root, "mlp_layer_types");
    if (!json_is_array(types)) return ACCEL_OK;
    size_t n = 0;
    while (n < json_array_size(types) && jstr_is(json_array_get(types, n), "dense")) n++;
    for (size_t i = n; i < json_array_size(types); i++)
        if (!jstr_is(json_array_get(types, i), "sparse"))
            REFUSE("%s: mlp_layer_types[%zu] is not \"sparse\" after the dense blocks: accel's dense blocks lead "
                   "(model.dense_layers)", path, i);
    if (json_array_size(types) != (size_t)layers)
        REFUSE("%s: mlp_layer_types has %zu entries for %d layers", path, json_array_size(types), layers);
    *dense = (long long)n;
    return ACCEL_OK;
}

/* Whether the Qwen MoE families' decoder_sparse_step and mlp_only_layers put experts in every
 * block, as accel's are; else false with the message in err. */
static bool experts_everywhere(json_t *root, const char *path, char *err, size_t errlen)
{
    json_t *dense = json_object_get(root, "mlp_only_layers");
    if (jint(root, "decoder_sparse_step", 1) == 1 && !(json_is_array(dense) && json_array_size(dense) > 0)) return true;
    accel_errf(err, errlen, "%s: decoder_sparse_step = %lld / mlp_only_layers with %zu layers: some blocks have a dense "
               "MLP, and accel's experts are in every block", path, jint(root, "decoder_sparse_step", 1),
               json_is_array(dense) ? json_array_size(dense) : 0);
    return false;
}

/* The mixture of experts of MixtralForCausalLM, Qwen3MoeForCausalLM, Qwen2MoeForCausalLM,
 * OlmoeForCausalLM, MellumForCausalLM (Qwen3-MoE's, its leading dense blocks from mlp_layer_types)
 * or GptOssForCausalLM (arch; gpt-oss's softmax over the top-k logits is the
 * renormalized top-k of the softmax) into m: every block sparse (decoder_sparse_step 1, no mlp_only_layers), no router
 * jitter; the load-balancing loss is on when transformers would add it (output_router_logits).
 * Qwen2-MoE's shared expert is read by the caller. Glm4MoeForCausalLM's and Dots1ForCausalLM's are
 * DeepSeek-V3's: sigmoid scores with a selection bias, grouped and scaled, n_shared_experts ungated
 * shared experts, the first first_k_dense_replace blocks dense (of intermediate_size), no
 * load-balancing loss (dots.llm1's config names every MoE size: transformers has no defaults).
 * Glm4MoeLiteForCausalLM (GLM-4.7-Flash) is GLM-4.5's experts with its dense blocks as
 * mlp_layer_types; Mistral4ForCausalLM's are DeepSeek-V3's under a softmax router (its top k
 * renormalized by default); SolarOpenForCausalLM's GLM-4.5's in every block; ExaoneMoeForCausalLM's
 * DeepSeek-V3's under its own key names. MiniMaxM2ForCausalLM's: Mixtral's keys, DeepSeek-V3's
 * sigmoid scores with the selection bias, renormalized. */
static accel_status_t translate_experts(json_t *root, const char *path, const char *arch, accel_model_config_t *m,
                                        char *err, size_t errlen)
{
    const bool qwen3_moe = !strcmp(arch, "Qwen3MoeForCausalLM"), qwen_moe = qwen3_moe || !strcmp(arch, "Qwen2MoeForCausalLM");
    const bool mellum = !strcmp(arch, "MellumForCausalLM");    /* Qwen3-MoE's, leading dense blocks */
    const bool flex = !strcmp(arch, "FlexOlmoForCausalLM");    /* OLMoE's experts under OLMo 2's blocks */
    const bool olmoe = flex || !strcmp(arch, "OlmoeForCausalLM"), oss = !strcmp(arch, "GptOssForCausalLM");
    const bool dots1 = !strcmp(arch, "Dots1ForCausalLM"), dsv3 = !strcmp(arch, "DeepseekV3ForCausalLM");
    const bool dsv2 = !strcmp(arch, "DeepseekV2ForCausalLM"), lite = !strcmp(arch, "Glm4MoeLiteForCausalLM");
    const bool mistral4 = !strcmp(arch, "Mistral4ForCausalLM"), solar = !strcmp(arch, "SolarOpenForCausalLM");
    const bool exaone = !strcmp(arch, "ExaoneMoeForCausalLM");     /* K-EXAONE: its own key names */
    const bool deepseek = dots1 || dsv3 || dsv2 || lite || mistral4 || solar || exaone ||
                          !strcmp(arch, "Glm4MoeForCausalLM");
    if (!strcmp(arch, "Ernie4_5_MoeForCausalLM")) {
        /* ERNIE 4.5: softmax probabilities plus a selection bias choose moe_k experts, their
         * probabilities renormalized; moe_num_shared_experts ungated shared experts; the blocks from
         * moe_layer_start_index on have experts (every one: interval 1, to the last layer) */
        m->experts = (int)jint(root, "moe_num_experts", 64);
        m->experts_per_token = (int)jint(root, "moe_k", 6);
        m->ffn_width = (int)jint(root, "moe_intermediate_size", 1536);
        const long long shared = jint(root, "moe_num_shared_experts", 2), start = jint(root, "moe_layer_start_index", 1);
        const long long end = jint(root, "moe_layer_end_index", -1), every = jint(root, "moe_layer_interval", 1);
        if (m->experts < 1 || m->experts > 4096 || m->experts_per_token < 1 || m->experts_per_token > m->experts ||
            m->ffn_width < 1 || m->ffn_width > (1 << 22) || shared < 0 || shared * m->ffn_width > (1 << 22))
            REFUSE("%s: moe_num_experts = %d, moe_k = %d, moe_intermediate_size = %d, moe_num_shared_experts = %lld: "
                   "accel needs 1..4096 experts, 1..experts a token, widths of 1..4194304", path, m->experts,
                   m->experts_per_token, m->ffn_width, shared);
        if (every != 1 || (end != -1 && end != m->layers - 1) || start < 0 || start >= m->layers)
            REFUSE("%s: moe_layer_start_index = %lld, moe_layer_end_index = %lld, moe_layer_interval = %lld: accel's "
                   "blocks with experts are every block after the leading dense ones (interval 1, to the last)",
                   path, start, end, every);
        m->dense_layers = (int)start;
        m->dense_ffn_width = start > 0 ? (int)jint(root, "intermediate_size", 12288) : 0;
        m->shared_expert_ffn = (int)(shared * m->ffn_width);
        m->shared_expert_gate = false;
        m->router_select_bias = true;
        m->router_norm_topk = true;     /* divided by their sum (at least moe_norm_min, 1e-12) */
        return ACCEL_OK;
    }
    if (!strcmp(arch, "Lfm2MoeForCausalLM")) {
        /* LFM2-MoE: sigmoid scores, a selection bias (use_expert_bias), the top k renormalized
         * (norm_topk_prob) over their sum + 1e-6 and scaled (routed_scaling_factor); the first
         * num_dense_layers blocks dense, of intermediate_size; no shared expert; transformers' defaults */
        m->experts = (int)jint(root, "num_experts", 32);
        m->experts_per_token = (int)jint(root, "num_experts_per_tok", 4);
        m->ffn_width = (int)jint(root, "moe_intermediate_size", 1792);
        const long long dense = jint(root, "num_dense_layers", 2), dff = jint(root, "intermediate_size", 7168);
        if (m->experts < 1 || m->experts > 4096 || m->experts_per_token < 1 || m->experts_per_token > m->experts ||
            m->ffn_width < 1 || m->ffn_width > (1 << 22) || dense < 0 || dense >= m->layers || dff < 1 ||
            dff > (1 << 22))
            REFUSE("%s: num_experts = %d, num_experts_per_tok = %d, moe_intermediate_size = %d, num_dense_layers = "
                   "%lld, intermediate_size = %lld: accel needs 1..4096 experts, 1..experts a token, widths of "
                   "1..4194304 and fewer dense blocks than layers", path, m->experts, m->experts_per_token,
                   m->ffn_width, dense, dff);
        const double scale = jnum(root, "routed_scaling_factor", 1.0);
        if (!(scale > 0 && scale <= 1e6)) REFUSE("%s: routed_scaling_factor = %g: accel needs (0, 1e6]", path, scale);
        m->dense_layers = (int)dense;
        m->dense_ffn_width = dense ? (int)dff : 0;
        snprintf(m->router_scores, sizeof m->router_scores, "sigmoid");
        m->router_select_bias = jbool(root, "use_expert_bias", true);
        m->router_norm_topk = jbool(root, "norm_topk_prob", true);
        m->router_norm_eps = m->router_norm_topk ? 1e-6 : 0.0;
        m->router_scale = scale;
        return ACCEL_OK;
    }
    const bool next = !strcmp(arch, "Qwen3NextForCausalLM");
    if (!strcmp(arch, "Qwen3_5MoeForCausalLM") || next) {
        /* Qwen3.5-MoE: softmax scores, the top k always renormalized, experts in every block beside a
         * shared expert gated by a sigmoid (Qwen2-MoE's); Qwen3-Next: the same, its norm_topk_prob
         * saying whether the top k is renormalized; transformers' defaults */
        m->experts = (int)jint(root, "num_experts", next ? 512 : 256);
        m->experts_per_token = (int)jint(root, "num_experts_per_tok", next ? 10 : 8);
        if (!experts_everywhere(root, path, err, errlen)) return ACCEL_ERR_UNSUPPORTED;
        m->ffn_width = (int)jint(root, "moe_intermediate_size", 512);
        const long long shared = jint(root, "shared_expert_intermediate_size", 512);
        if (m->experts < 1 || m->experts > 4096 || m->experts_per_token < 1 || m->experts_per_token > m->experts ||
            m->ffn_width < 1 || m->ffn_width > (1 << 22) || shared < 1 || shared > (1 << 22))
            REFUSE("%s: num_experts = %d, num_experts_per_tok = %d, moe_intermediate_size = %d, "
                   "shared_expert_intermediate_size = %lld: accel needs 1..4096 experts, 1..experts a token, widths "
                   "of 1..4194304", path, m->experts, m->experts_per_token, m->ffn_width, shared);
        m->shared_expert_ffn = (int)shared;
        m->router_norm_topk = !next || jbool(root, "norm_topk_prob", true);
        m->router_aux_loss = jbool(root, "output_router_logits", false) ? jnum(root, "router_aux_loss_coef", 0.001) : 0.0;
        return ACCEL_OK;
    }
    if (!strcmp(arch, "MiniMaxM2ForCausalLM")) {
        /* MiniMax-M2: every block's experts chosen by sigmoid score plus a selection bias, their
         * scores renormalized (its router always does), no shared expert; transformers' defaults */
        m->experts = (int)jint(root, "num_local_experts", 256);
        m->experts_per_token = (int)jint(root, "num_experts_per_tok", 8);
        m->ffn_width = (int)jint(root, "intermediate_size", 1536);
        if (m->experts < 1 || m->experts > 4096 || m->experts_per_token < 1 || m->experts_per_token > m->experts)
            REFUSE("%s: %d experts with num_experts_per_tok = %d: accel needs 1..4096 experts and 1..experts per "
                   "token", path, m->experts, m->experts_per_token);
        if (jnum(root, "router_jitter_noise", 0.0) != 0.0)
            REFUSE("%s: router_jitter_noise = %g: accel's router takes the hidden states as they are", path,
                   jnum(root, "router_jitter_noise", 0.0));
        if (jbool(root, "output_router_logits", false))
            REFUSE("%s: output_router_logits = true: transformers then adds Mixtral's load-balancing loss over a "
                   "softmax of the router's logits, which accel's sigmoid router does not compute\n--> hint: set it "
                   "to false (MiniMax-M2's release does); optim.router_bias_update balances the experts instead",
                   path);
        snprintf(m->router_scores, sizeof m->router_scores, "sigmoid");
        m->router_select_bias = m->router_norm_topk = true;
        return ACCEL_OK;
    }
    static const char *const dots1_keys[] = { "n_routed_experts", "num_experts_per_tok", "n_shared_experts" };
    for (size_t i = 0; dots1 && i < sizeof dots1_keys / sizeof *dots1_keys; i++)
        if (jint(root, dots1_keys[i], -2) == -2)
            REFUSE("%s: %s is missing (Dots1ForCausalLM has no default for it)", path, dots1_keys[i]);
    /* transformers' defaults where a key is missing */
    m->experts = (int)jint(root, exaone ? "num_experts" : deepseek ? "n_routed_experts"
                                 : (qwen_moe || olmoe || mellum) && json_object_get(root, "num_experts") ? "num_experts"
                                 : "num_local_experts",
                           dsv3 ? 256 : dsv2 || lite || exaone || mellum ? 64 : qwen3_moe || oss || deepseek ? 128
                           : qwen_moe ? 60 : flex ? 7 : olmoe ? 64 : 8);
    m->experts_per_token = (int)jint(root, "num_experts_per_tok", lite || mistral4 ? 4 : flex ? 5
                                                                  : qwen3_moe || olmoe || deepseek || mellum ? 8
                                                                  : qwen_moe || oss ? 4 : 2);
    if (m->experts < 1 || m->experts > 4096 || m->experts_per_token < 1 || m->experts_per_token > m->experts)
        REFUSE("%s: %d experts with num_experts_per_tok = %d: accel needs 1..4096 experts and 1..experts per "
               "token", path, m->experts, m->experts_per_token);
    m->router_norm_topk = qwen_moe || olmoe || mellum ? jbool(root, "norm_topk_prob", mellum)
                        : deepseek ? jbool(root, "norm_topk_prob", !dots1) : true;
    if (deepseek) {
        /* transformers' defaults: DeepSeek-V3's, else GLM-4.5's (dots.llm1: no dense blocks) */
        long long dense = solar ? 0     /* Solar Open: experts in every block, whatever the key says */
                        : jint(root, "first_k_dense_replace", dots1 || dsv2 || mistral4 ? 0 : dsv3 ? 3 : 1);
        if (lite || exaone) {
            accel_status_t st = leading_dense(root, path, m->layers, &dense, err, errlen);
            if (st != ACCEL_OK) return st;
        }
        const long long shared = jint(root, exaone ? "num_shared_experts" : "n_shared_experts", dsv2 ? 2 : 1);
        const long long groups = jint(root, "n_group", dsv3 ? 8 : 1), topk_groups = jint(root, "topk_group", dsv3 ? 4 : 1);
        const char *scoring = jstr(root, "scoring_func");
        if (dsv3 && scoring && strcmp(scoring, "sigmoid"))
            REFUSE("%s: scoring_func = %s: accel's DeepSeek-V3 router scores by sigmoid", path, scoring);
        m->dense_ffn_width = dense > 0 ? (int)jint(root, "intermediate_size", dsv3 ? 18432 : lite ? 10240
                                                                              : mistral4 ? 12288 : exaone ? 16384
                                                                              : 10944) : 0;
        m->ffn_width = (int)jint(root, "moe_intermediate_size", dsv3 || mistral4 ? 2048 : dsv2 ? 1407 : lite ? 1536
                                                                : solar ? 1280 : exaone ? 1024 : 1408);
        if (dense < 0 || dense >= m->layers)
            REFUSE("%s: first_k_dense_replace = %lld of %d layers: accel needs experts in at least one block", path,
                   dense, m->layers);
        if (m->ffn_width < 1 || m->ffn_width > (1 << 22) || shared < 1 || shared * m->ffn_width > (1 << 22))
            REFUSE("%s: moe_intermediate_size = %d with n_shared_experts = %lld: accel needs a width of 1..4194304 "
                   "and 1.. shared experts as wide together", path, m->ffn_width, shared);
        if (groups < 1 || m->experts % groups || (groups > 1 && m->experts / groups < 2 && !dsv2) || topk_groups < 1 ||
            topk_groups > groups || m->experts_per_token > topk_groups * (m->experts / groups))
            REFUSE("%s: n_group = %lld, topk_group = %lld for %d experts, %d a token: accel needs equal groups of two "
                   "or more experts, 1..n_group of them chosen, holding the token's experts", path, groups,
                   topk_groups, m->experts, m->experts_per_token);
        m->dense_layers = (int)dense;
        m->shared_expert_ffn = (int)(shared * m->ffn_width);   /* one MLP as wide as them all */
        m->shared_expert_gate = false;
        snprintf(m->router_scores, sizeof m->router_scores, "sigmoid");
        m->router_select_bias = true;
        m->router_groups = (int)groups;
        m->router_topk_groups = (int)topk_groups;
        m->router_scale = jnum(root, "routed_scaling_factor", dsv3 || exaone ? 2.5 : lite ? 1.8 : 1.0);
        if (!(m->router_scale > 0 && m->router_scale <= 1e6))
            REFUSE("%s: routed_scaling_factor = %g: accel needs a number in (0, 1e6]", path, m->router_scale);
        if (dsv2) {                 /* a softmax over the experts, the top k's probabilities as they are;
                                     * group_limited_greedy: groups scored by their best (V2, V2.5) */
            const char *method = jstr(root, "topk_method");
            const bool grouped = method && !strcmp(method, "group_limited_greedy") && groups > 1;
            if (method && strcmp(method, "greedy") && strcmp(method, "group_limited_greedy"))
                REFUSE("%s: topk_method = %s: accel routes DeepSeek-V2 by greedy or group_limited_greedy", path, method);
            if (jbool(root, "mlp_bias", false)) REFUSE("%s: mlp_bias = true: accel's experts have no biases", path);
            snprintf(m->router_scores, sizeof m->router_scores, "softmax");
            m->router_select_bias = false;
            m->router_norm_topk = false;        /* transformers' DeepSeek-V2 router never renormalizes */
            if (grouped) snprintf(m->router_group_score, sizeof m->router_group_score, "max");
            else m->router_groups = m->router_topk_groups = 1;
        }
        if (mistral4) {             /* softmax probabilities, their groups and top k as DeepSeek-V3's */
            snprintf(m->router_scores, sizeof m->router_scores, "softmax");
            m->router_select_bias = false;
        }
        return ACCEL_OK;            /* transformers adds no load-balancing loss */
    }
    if (mellum) {                   /* the leading dense blocks of intermediate_size */
        long long dense = 0;
        accel_status_t st = leading_dense(root, path, m->layers, &dense, err, errlen);
        if (st != ACCEL_OK) return st;
        if (dense >= m->layers)
            REFUSE("%s: mlp_layer_types has no \"sparse\" block: accel needs experts in at least one", path);
        m->dense_layers = (int)dense;
        m->dense_ffn_width = dense > 0 ? (int)jint(root, "intermediate_size", 7168) : 0;
        m->ffn_width = (int)jint(root, "moe_intermediate_size", 896);
    }
    if (qwen_moe) {
        m->ffn_width = (int)jint(root, "moe_intermediate_size", qwen3_moe ? 768 : 1408);
        if (!experts_everywhere(root, path, err, errlen)) return ACCEL_ERR_UNSUPPORTED;
    }
    if (jnum(root, "router_jitter_noise", 0.0) != 0.0)
        REFUSE("%s: router_jitter_noise = %g: accel's router takes the hidden states as they are", path,
               jnum(root, "router_jitter_noise", 0.0));
    m->router_aux_loss = jbool(root, "output_router_logits", false)
                         ? jnum(root, "router_aux_loss_coef", olmoe ? 0.01 : 0.001) : 0.0;
    return ACCEL_OK;
}

/* YaRN's magnitude scale, as transformers' yarn_get_mscale. */
static double yarn_get_mscale(double scale, double mscale)
{
    return scale <= 1.0 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

/* DeepSeek-V3's multi-head latent attention into the model.kv_lora_rank keys: heads of
 * qk_nope_head_dim + qk_rope_head_dim with RoPE on the latter (model.rope_dim), value heads of
 * v_head_dim, the latents (q_lora_rank null: one query projection); with YaRN's mscale_all_dim
 * the scores' scale (model.attention_multiplier) is mscale(factor, mscale_all_dim)^2 / sqrt(head). */
static accel_status_t translate_mla(json_t *root, const char *path, const char *arch, accel_model_config_t *m,
                                    double mscale_all, char *err, size_t errlen)
{
    /* transformers' defaults: DeepSeek-V3's, GLM-4.7-Flash's, Mistral Small 4's */
    const bool lite = !strcmp(arch, "Glm4MoeLiteForCausalLM"), mistral4 = !strcmp(arch, "Mistral4ForCausalLM");
    const long long dn = jint(root, "qk_nope_head_dim", lite ? 192 : mistral4 ? 64 : 128);
    const long long dr = jint(root, "qk_rope_head_dim", 64);
    const long long dv = jint(root, "v_head_dim", lite ? 256 : 128);
    const long long rkv = jint(root, "kv_lora_rank", mistral4 ? 256 : 512);
    json_t *rq = json_object_get(root, "q_lora_rank");
    const long long q = !rq ? (lite ? 768 : mistral4 ? 1024 : 1536)
                      : json_is_null(rq) ? 0 : json_is_integer(rq) ? (long long)json_integer_value(rq) : -1;
    if (dn < 0 || dr < 2 || dr % 2 || dn + dr > 65536 || dv < 1 || dv > dn + dr || rkv < 1 || rkv > 65536 || q < 0 ||
        q > 65536)
        REFUSE("%s: qk_nope_head_dim = %lld, qk_rope_head_dim = %lld, v_head_dim = %lld, kv_lora_rank = %lld, "
               "q_lora_rank = %lld: accel's latent attention needs an even RoPE part of 2 or more, value heads no "
               "wider than qk_nope_head_dim + qk_rope_head_dim, latents of 1..65536 (q_lora_rank may be null)",
               path, dn, dr, dv, rkv, q);
    const int hs = (int)(dn + dr);
    m->head_dim = hs * m->heads != m->width ? hs : 0;
    m->rope_dim = dn ? (int)dr : 0;
    m->v_head_dim = dv == hs ? 0 : (int)dv;
    m->kv_lora_rank = (int)rkv;
    m->q_lora_rank = (int)q;
    m->kv_heads = 0;                /* every head its own key and value */
    if (mscale_all && !strcmp(m->rope_scaling, "yarn")) {
        const double g = yarn_get_mscale(m->rope_factor, mscale_all);
        m->attention_multiplier = g * g / sqrt((double)hs);
    }
    return ACCEL_OK;
}

/* EXAONE 4's attention (per-head q/k norms, its window pattern, full layers without RoPE): EXAONE
 * 4.0's and K-EXAONE's. */
static bool exaone_attention(const char *arch)
{
    return !strcmp(arch, "Exaone4ForCausalLM") || !strcmp(arch, "ExaoneMoeForCausalLM");
}

/* Whether layer i of L is a sliding one (transformers' layer_types "sliding_attention"): as
 * layer_types says, else by the family's default: OLMo 3 all but every 4th, Gemma 2 every other
 * one, Gemma 3 all but every sliding_window_pattern-th (6), the Qwen family and dots.llm1 from
 * max_window_layers on. */
static bool hf_layer_slides(json_t *root, const char *arch, int i)
{
    json_t *types = json_object_get(root, "layer_types");
    if (json_is_array(types)) {
        const char *t = json_string_value(json_array_get(types, (size_t)i));
        return t && !strcmp(t, "sliding_attention");
    }
    if (!strcmp(arch, "Olmo3ForCausalLM")) return (i + 1) % 4 != 0;
    if (!strcmp(arch, "Gemma2ForCausalLM") || !strcmp(arch, "VaultGemmaForCausalLM") || !strcmp(arch, "GptOssForCausalLM"))
        return (i + 1) % 2 != 0;
    if (!strcmp(arch, "Gemma3ForCausalLM")) {
        const long long p = jint(root, "sliding_window_pattern", 6);
        return p > 0 && (i + 1) % p != 0;
    }
    if (exaone_attention(arch)) {                   /* an integer N (every N-th full) or "LLLG" */
        const char *p = jstr(root, "sliding_window_pattern");
        if (p && *p) return p[(size_t)i % strlen(p)] == 'L';
        const long long n = jint(root, "sliding_window_pattern", 4);
        return n > 0 && (i + 1) % n != 0;
    }
    if (!strcmp(arch, "MinistralForCausalLM")) return true;    /* without layer_types, all slide */
    if (!strcmp(arch, "CwmForCausalLM") || !strcmp(arch, "GraniteSWAForCausalLM") ||
        !strcmp(arch, "GraniteMoeSWAForCausalLM"))
        return i % 4 != 0;                          /* ... all but every 4th from the first */
    if (!strcmp(arch, "Cohere2ForCausalLM")) {     /* transformers 4's sliding_window_pattern */
        const long long p = jint(root, "sliding_window_pattern", 4);
        return p > 0 && (i + 1) % p != 0;
    }
    return i >= jint(root, "max_window_layers", !strcmp(arch, "Dots1ForCausalLM") ? 62 : 28);
}

/* The sliding attention windows into m->sliding_window and m->sliding_window_pattern. Mistral,
 * Mixtral, Phi-3 and StarCoder2: every layer slides when sliding_window is a number; Qwen3-MoE too, with
 * use_sliding_window. OLMo 3 and the rest of the Qwen family (with use_sliding_window): the
 * sliding layers of hf_layer_slides; accel's are all of them, or all but every N-th (OLMo 3's),
 * so any other choice is refused. Llama has none. */
static accel_status_t translate_window(json_t *root, const char *path, const char *arch, accel_model_config_t *m,
                                       char *err, size_t errlen)
{
    json_t *sw = json_object_get(root, "sliding_window");
    long long w = json_is_integer(sw) ? (long long)json_integer_value(sw) : 0;
    m->sliding_window = m->sliding_window_pattern = 0;
    if (!strcmp(arch, "MistralForCausalLM") || !strcmp(arch, "MixtralForCausalLM") || !strcmp(arch, "Phi3ForCausalLM") ||
        !strcmp(arch, "Starcoder2ForCausalLM")) {
        if (w < 0 || w > (1 << 24)) REFUSE("%s: sliding_window = %lld: accel needs 1..16777216 (or null)", path, w);
        m->sliding_window = (int)w;
        return ACCEL_OK;
    }
    const bool typed = !strcmp(arch, "Olmo3ForCausalLM") || !strcmp(arch, "Gemma3ForCausalLM") ||
                       !strcmp(arch, "Gemma2ForCausalLM") || !strcmp(arch, "GptOssForCausalLM") ||
                       !strcmp(arch, "VaultGemmaForCausalLM") || !strcmp(arch, "GraniteSWAForCausalLM") ||
                       !strcmp(arch, "GraniteMoeSWAForCausalLM") ||
                       !strcmp(arch, "MellumForCausalLM") || !strcmp(arch, "MinistralForCausalLM") ||
                       !strcmp(arch, "Cohere2ForCausalLM") || !strcmp(arch, "CwmForCausalLM") || exaone_attention(arch);
    const bool dots1 = !strcmp(arch, "Dots1ForCausalLM");  /* the Qwen rule without use_sliding_window */
    if (strncmp(arch, "Qwen", 4) && !typed && !dots1) return ACCEL_OK;
    if (typed && !sw)                   /* their configs' default */
        w = !strcmp(arch, "GptOssForCausalLM") ? 128 : !strcmp(arch, "MellumForCausalLM") ? 1024
          : !strcmp(arch, "CwmForCausalLM") ? 8192 : !strncmp(arch, "GraniteMoeSWA", 13) || !strncmp(arch, "GraniteSWA", 10) ? 128
          : 4096;
    if (dots1 && !sw) w = 4096;
    if (!typed && !dots1 && !jbool(root, "use_sliding_window", false)) w = 0; /* transformers drops it then */
    if (w == 0) return ACCEL_OK;
    if (w < 0 || w > (1 << 24)) REFUSE("%s: sliding_window = %lld: accel needs 1..16777216 (or null)", path, w);
    if (!strcmp(arch, "Qwen3MoeForCausalLM")) {     /* its attention has no layer types */
        m->sliding_window = (int)w;
        return ACCEL_OK;
    }
    const int L = m->layers;
    json_t *types = json_object_get(root, "layer_types");
    if (json_is_array(types) && json_array_size(types) != (size_t)L)
        REFUSE("%s: layer_types has %zu entries for num_hidden_layers = %d", path, json_array_size(types), L);
    int first_full = -1, sliding = 0;
    for (int i = 0; i < L; i++) {
        const bool slides = hf_layer_slides(root, arch, i);
        sliding += slides;
        if (!slides && first_full < 0) first_full = i;
    }
    if (sliding == 0) return ACCEL_OK;
    const int every = first_full < 0 ? 0 : first_full + 1;          /* 0: every layer slides */
    bool patterned = true;
    for (int i = 0; i < L; i++) patterned &= hf_layer_slides(root, arch, i) == !(every && (i + 1) % every == 0);
    m->sliding_window = (int)w;
    if (patterned) {
        m->sliding_window_pattern = every;
        return ACCEL_OK;
    }
    /* any other choice: the sliding layers by number (EXAONE 4's and Command R7B's full layers go
     * without RoPE by the pattern: they keep it) */
    if (sliding > ACCEL_NUMBERS_MAX || exaone_attention(arch) || !strcmp(arch, "Cohere2ForCausalLM"))
        REFUSE("%s: %d of %d layers attend through a sliding window of %lld (layer_types / max_window_layers), not "
               "all but every N-th: accel lists such layers by number (model.sliding_layers), %d at most, "
               "and only for families whose full layers keep their RoPE", path, sliding, L, w, ACCEL_NUMBERS_MAX);
    m->sliding_layers.n = 0;
    for (int i = 0; i < L; i++)
        if (hf_layer_slides(root, arch, i)) m->sliding_layers.v[m->sliding_layers.n++] = i;
    return ACCEL_OK;
}

/* Whether a time_step_limit's upper bound is +inf: null (bare Infinity, load_python_json's),
 * absent, or transformers 5's {"__float__": "Infinity"}. */
static bool unbounded(json_t *v)
{
    const char *f = jstr(v, "__float__");
    return !v || json_is_null(v) || (f && (!strcmp(f, "Infinity") || !strcmp(f, "inf")));
}

/* Granite 4.0-H's and Bamba's Mamba-2 layers into m->mamba_* and m->attention_layers: layer_types
 * (or layers_block_type) "mamba" / "linear_attention" and "attention" / "full_attention", Bamba's
 * attn_layer_indices (without them, every layer Mamba-2, transformers' default); mamba_n_heads,
 * mamba_d_head ("auto": mamba_expand x width / heads), mamba_d_state, mamba_n_groups, mamba_d_conv,
 * mamba_conv_bias. Biased projections (mamba_proj_bias) and a time_step_limit other than (0, inf)
 * are refused. */
static accel_status_t translate_mamba(json_t *root, const char *path, accel_model_config_t *m, char *err,
                                      size_t errlen)
{
    const int L = m->layers;
    const long long H = jint(root, "mamba_n_heads", 128), G = jint(root, "mamba_n_groups", 1);
    const long long N = jint(root, "mamba_d_state", 256), K = jint(root, "mamba_d_conv", 4);
    const long long expand = jint(root, "mamba_expand", 2);
    const long long P = json_is_integer(json_object_get(root, "mamba_d_head")) ? jint(root, "mamba_d_head", 0)
                      : H > 0 ? expand * m->width / H : 0;
    if (H < 1 || H > (1 << 16) || G < 1 || H % G || N < 1 || N > (1 << 16) || K < 1 || K > 64 || P < 1 ||
        P > (1 << 16) || expand < 1 || H * P != expand * m->width)
        REFUSE("%s: mamba_n_heads = %lld, mamba_n_groups = %lld, mamba_d_state = %lld, mamba_d_conv = %lld, "
               "mamba_d_head = %lld, mamba_expand = %lld: accel needs heads x head values = mamba_expand x "
               "hidden_size, groups dividing the heads, a convolution of 1..64", path, H, G, N, K, P, expand);
    if (jbool(root, "mamba_proj_bias", false))
        REFUSE("%s: mamba_proj_bias = true: accel's Mamba-2 projections have no biases", path);
    json_t *limit = json_object_get(root, "time_step_limit");
    if (json_is_array(limit) && (json_array_size(limit) != 2 || json_number_value(json_array_get(limit, 0)) != 0.0 ||
                                 !unbounded(json_array_get(limit, 1))))
        REFUSE("%s: time_step_limit other than [0, inf]: accel does not clamp Mamba-2's steps", path);
    m->mamba_heads = (int)H;
    m->mamba_head_dim = P * H == 2 * (long long)m->width ? 0 : (int)P;
    m->mamba_groups = (int)G;
    m->mamba_state = (int)N;
    m->mamba_conv_kernel = (int)K;
    m->mamba_conv_bias = jbool(root, "mamba_conv_bias", true);
    json_t *types = json_object_get(root, "layer_types");
    if (!json_is_array(types)) types = json_object_get(root, "layers_block_type");
    if (json_is_array(types) && json_array_size(types) != (size_t)L)
        REFUSE("%s: layer_types has %zu entries for num_hidden_layers = %d", path, json_array_size(types), L);
    accel_numbers_t *att = &m->attention_layers;
    memset(att, 0, sizeof *att);
    json_t *indices = json_object_get(root, "attn_layer_indices");    /* Bamba's */
    for (size_t i = 0; !json_is_array(types) && json_is_array(indices) && i < json_array_size(indices); i++) {
        const long long l = jint_at(indices, i);
        if (l < 0 || l >= L || (att->n && l <= att->v[att->n - 1]) || att->n == ACCEL_NUMBERS_MAX)
            REFUSE("%s: attn_layer_indices[%zu] = %lld: accel needs layer numbers below num_hidden_layers = %d, "
                   "increasing", path, i, l, L);
        att->v[att->n++] = (double)l;
    }
    for (int i = 0; json_is_array(types) && i < L; i++) {
        json_t *t = json_array_get(types, (size_t)i);
        const bool mamba = jstr_is(t, "mamba") || jstr_is(t, "linear_attention");
        if (!mamba && !jstr_is(t, "attention") && !jstr_is(t, "full_attention"))
            REFUSE("%s: layer_types[%d] = %s: Granite 4.0-H's layers are mamba or attention", path, i,
                   json_is_string(t) ? json_string_value(t) : "(not a string)");
        if (mamba) continue;
        if (att->n == ACCEL_NUMBERS_MAX)
            REFUSE("%s: more than %d attention layers: accel's model.attention_layers lists at most %d", path,
                   ACCEL_NUMBERS_MAX, ACCEL_NUMBERS_MAX);
        att->v[att->n++] = i;
    }
    return ACCEL_OK;
}

/* Nemotron-H's layer types: layers_block_type (transformers 5), else hybrid_override_pattern (the
 * hub's releases: M Mamba-2, * attention, - MLP, E experts), as 'M', '*', '-', 'E' into types[]
 * (ACCEL_NUMBERS_MAX at most); the count, or -1 with err set. */
static int nemotron_h_types(json_t *root, const char *path, char *types, char *err, size_t errlen)
{
    json_t *list = json_object_get(root, "layers_block_type");
    const char *pattern = jstr(root, "hybrid_override_pattern");
    if (!json_is_array(list) && !pattern) {
        accel_errf(err, errlen, "%s: neither layers_block_type nor hybrid_override_pattern says the layers", path);
        return -1;
    }
    const size_t n = json_is_array(list) ? json_array_size(list) : strlen(pattern);
    if (n < 1 || n > ACCEL_NUMBERS_MAX) {
        accel_errf(err, errlen, "%s: %zu layers: accel's layer lists hold 1..%d", path, n, ACCEL_NUMBERS_MAX);
        return -1;
    }
    static const char *const names[] = { "linear_attention", "full_attention", "mlp", "moe" };
    static const char codes[] = "M*-E";
    for (size_t i = 0; i < n; i++) {
        char c = 0;
        if (json_is_array(list)) {
            for (int k = 0; k < 4; k++) c = jstr_is(json_array_get(list, i), names[k]) ? codes[k] : c;
        } else {
            c = strchr(codes, pattern[i]) ? pattern[i] : 0;
        }
        if (!c) {
            accel_errf(err, errlen, "%s: layer %zu's type is not Mamba-2, attention, an MLP or experts "
                       "(linear_attention, full_attention, mlp, moe; M, *, -, E)", path, i);
            return -1;
        }
        types[i] = c;
    }
    return (int)n;
}

/* The config.json keys of a family's Mamba-1 mixers. */
typedef struct {
    const char *expand, *state, *conv, *rank, *conv_bias, *proj_bias;
} mamba1_keys_t;

/* A Mamba-1 mixer's sizes (expand x hidden_size channels, as transformers sets intermediate_size;
 * the rank "auto": ceil(hidden_size / 16)) into m's model.mamba1_* and model.mamba_* keys; the
 * projections' biases and an activation but SiLU are refused. */
static accel_status_t translate_mamba1_mixer(json_t *root, const char *path, const mamba1_keys_t *k,
                                             accel_model_config_t *m, char *err, size_t errlen)
{
    const long long I = (long long)(jnum(root, k->expand, 2.0) * m->width);
    const long long N = jint(root, k->state, 16), K = jint(root, k->conv, 4);
    json_t *rank = json_object_get(root, k->rank);
    if (rank && !json_is_integer(rank) && !jstr_is(rank, "auto"))
        REFUSE("%s: %s is neither an integer nor \"auto\"", path, k->rank);
    const long long R = json_is_integer(rank) ? json_integer_value(rank) : (m->width + 15) / 16;
    if (m->width < 1 || I < 1 || I > (1 << 20) || N < 1 || N > (1 << 16) || K < 1 || K > 64 || R < 1 || R > (1 << 16))
        REFUSE("%s: hidden_size = %d, %s x it = %lld, %s = %lld, %s = %lld, %s = %lld: accel needs channels 1..2^20, a "
               "state and a rank 1..65536, a convolution of 1..64", path, m->width, k->expand, I, k->state, N, k->conv,
               K, k->rank, R);
    const char *act = jstr(root, "hidden_act");
    if (act && strcmp(act, "silu"))
        REFUSE("%s: hidden_act = %s: accel's Mamba-1 takes SiLU after its convolution and on its gate", path, act);
    if (jbool(root, k->proj_bias, false))
        REFUSE("%s: %s = true: accel's Mamba-1 projections have no biases", path, k->proj_bias);
    m->mamba1_width = (int)I;
    m->mamba1_dt_rank = (int)R;
    m->mamba_state = (int)N;
    m->mamba_conv_kernel = (int)K;
    m->mamba_conv_bias = jbool(root, k->conv_bias, true);
    return ACCEL_OK;
}

/* Mamba (MambaForCausalLM: the mamba-*-hf models) and Falcon Mamba (FalconMambaForCausalLM): every
 * layer a norm and a Mamba-1 mixer, no MLP (model.mixer_only_layers all), Nemotron-H's names:
 * expand x hidden_size channels (MambaConfig's intermediate_size), state_size, conv_kernel, use_conv_bias,
 * time_step_rank ("auto": ceil(hidden_size / 16)); Falcon Mamba's unweighted norms on dt, B and C
 * at mixer_rms_eps. use_bias (the projections' biases) and another hidden_act are refused; the one
 * attention head accel's llama declares has no tensors (no layer keeps attention). */
static accel_status_t translate_mamba1(json_t *root, const char *path, const char *arch, accel_model_config_t *m,
                                       char *err, size_t errlen)
{
    const bool falcon = !strcmp(arch, "FalconMambaForCausalLM");
    m->layers = (int)jint(root, "num_hidden_layers", 32);
    m->width = (int)jint(root, "hidden_size", 768);
    m->vocab = (int)jint(root, "vocab_size", 50280);
    m->heads = m->kv_heads = 1;
    m->context = (int)jint(root, "max_position_embeddings", 2048);     /* none in its config: a run's */
    static const mamba1_keys_t keys = { "expand", "state_size", "conv_kernel", "time_step_rank", "use_conv_bias",
                                        "use_bias" };
    if (m->layers < 1 || m->layers > ACCEL_NUMBERS_MAX)
        REFUSE("%s: num_hidden_layers = %d: accel's layer lists hold 1..%d", path, m->layers, ACCEL_NUMBERS_MAX);
    accel_status_t st = translate_mamba1_mixer(root, path, &keys, m, err, errlen);
    if (st != ACCEL_OK) return st;
    if (falcon) {
        snprintf(m->mamba1_norms, sizeof m->mamba1_norms, "plain");
        m->mamba1_norm_eps = jnum(root, "mixer_rms_eps", 1e-6);
    }
    memset(&m->mlp_only_layers, 0, sizeof m->mlp_only_layers);
    memset(&m->attention_layers, 0, sizeof m->attention_layers);
    m->mixer_only_layers.n = m->layers;
    for (int i = 0; i < m->layers; i++) m->mixer_only_layers.v[i] = i;
    return ACCEL_OK;
}

/* Layers l % period == offset (transformers' Jamba: attn_layer_period / _offset,
 * expert_layer_period / _offset) into list, for L layers. */
static void periodic_layers(accel_numbers_t *list, int L, long long period, long long offset)
{
    memset(list, 0, sizeof *list);
    for (int l = 0; l < L; l++)
        if (l % period == offset) list->v[list->n++] = l;
}

/* The (period, offset) whose layers l % period == offset are exactly list's among L (none listed:
 * L + 1, L); false when no pair is. */
static bool layer_period(const accel_numbers_t *list, int L, int *period, int *offset)
{
    for (int p = 1; p <= L + 1; p++)
        for (int o = 0; o < p; o++) {
            bool same = true;
            for (int l = 0; l < L && same; l++) same = (l % p == o) == accel_layer_listed(list, l);
            if (same) {
                *period = p, *offset = o;
                return true;
            }
        }
    return false;
}

/* Jamba (JambaForCausalLM: AI21's Jamba, Jamba 1.5 and 1.7): Bamba's blocks with Mamba-1 mixers
 * (mamba_expand x hidden_size channels, mamba_d_state, mamba_d_conv, mamba_conv_bias, mamba_dt_rank
 * ("auto": ceil(hidden_size / 16)), weighted RMS norms on dt, B and C at rms_norm_eps) on all but
 * the layers l % attn_layer_period == attn_layer_offset, which keep attention without positions;
 * the layers l % expert_layer_period == expert_layer_offset hold num_experts SwiGLU experts of
 * intermediate_size, num_experts_per_tok a token by the softmax's top k, not renormalized, the
 * others a dense SwiGLU as wide. mamba_proj_bias=true and another hidden_act are refused; the
 * load-balancing loss is on when transformers would add it (output_router_logits). */
static accel_status_t translate_jamba(json_t *root, const char *path, accel_model_config_t *m, char *err,
                                      size_t errlen)
{
    m->layers = (int)jint(root, "num_hidden_layers", 32);
    m->heads = (int)jint(root, "num_attention_heads", 32);
    m->kv_heads = (int)jint(root, "num_key_value_heads", 8);
    m->width = (int)jint(root, "hidden_size", 4096);
    m->ffn_width = m->dense_ffn_width = (int)jint(root, "intermediate_size", 14336);
    m->vocab = (int)jint(root, "vocab_size", 65536);
    m->context = (int)jint(root, "max_position_embeddings", 262144);
    const long long ap = jint(root, "attn_layer_period", 8), ao = jint(root, "attn_layer_offset", 4);
    const long long ep = jint(root, "expert_layer_period", 2), eo = jint(root, "expert_layer_offset", 1);
    const long long E = jint(root, "num_experts", jint(root, "num_local_experts", 16)), K = jint(root, "num_experts_per_tok", 2);
    if (m->layers < 1 || m->layers > ACCEL_NUMBERS_MAX || ap < 1 || ao < 0 || ao >= ap || ep < 1 || eo < 0 || eo >= ep)
        REFUSE("%s: num_hidden_layers = %d, attn_layer_period / offset = %lld / %lld, expert_layer_period / offset = "
               "%lld / %lld: accel needs 1..%d layers and each offset below its period", path, m->layers, ap, ao, ep,
               eo, ACCEL_NUMBERS_MAX);
    if (E < 1 || E > 4096 || K < 1 || K > E)
        REFUSE("%s: num_experts = %lld, num_experts_per_tok = %lld: accel needs 1..4096 experts and 1..num_experts "
               "a token", path, E, K);
    static const mamba1_keys_t keys = { "mamba_expand", "mamba_d_state", "mamba_d_conv", "mamba_dt_rank",
                                        "mamba_conv_bias", "mamba_proj_bias" };
    accel_status_t st = translate_mamba1_mixer(root, path, &keys, m, err, errlen);
    if (st != ACCEL_OK) return st;
    snprintf(m->mamba1_norms, sizeof m->mamba1_norms, "weighted");
    m->mamba1_norm_eps = jnum(root, "rms_norm_eps", 1e-6);
    m->no_rope_pattern = 1;             /* attention without positions: the Mamba-1 layers place the tokens */
    periodic_layers(&m->attention_layers, m->layers, ap, ao);
    if (E > 1) {                        /* 1: every layer's feed_forward is the dense MLP */
        periodic_layers(&m->expert_layers, m->layers, ep, eo);
        m->experts = (int)E;
        m->experts_per_token = (int)K;
        m->router_norm_topk = false;
        m->router_aux_loss = jbool(root, "output_router_logits", false) ? jnum(root, "router_aux_loss_coef", 0.001) : 0.0;
    }
    return ACCEL_OK;
}

/* Nemotron-H (NemotronHForCausalLM: Nemotron-H, Nemotron Nano 2, Nemotron 3 Nano): every layer a
 * norm and one mixer: Mamba-2 (mamba_num_heads of mamba_head_dim, ssm_state_size, n_groups,
 * conv_kernel, use_conv_bias), attention without RoPE, a plain MLP of mlp_hidden_act
 * (intermediate_size) or DeepSeek-V3's routing over plain experts (n_routed_experts of
 * moe_intermediate_size, num_experts_per_tok, n_group, topk_group, norm_topk_prob,
 * routed_scaling_factor) beside a shared expert of moe_shared_expert_intermediate_size; into the
 * one-sublayer lists, model.attention_layers among Mamba-2 layers, dense MLPs before every
 * layer of experts (model.dense_layers). Keys spelled as transformers 5 or its releases. Biases
 * (use_bias, mlp_bias, attention_bias), a time_step_limit other than (0, inf) and another Mamba-2
 * activation are refused; moe_latent_size (Nemotron 3 Super's LatentMoE) -> model.expert_latent. */
static accel_status_t translate_nemotron_h(json_t *root, const char *path, accel_model_config_t *m, char *err,
                                           size_t errlen)
{
    char types[ACCEL_NUMBERS_MAX];
    const int L = nemotron_h_types(root, path, types, err, errlen);
    if (L < 0) return ACCEL_ERR_UNSUPPORTED;
    m->layers = L;
    const char *alias[][2] = { { "n_groups", "mamba_n_groups" }, { "conv_kernel", "mamba_d_conv" },
                               { "use_conv_bias", "mamba_conv_bias" }, { "time_step_limit", "mamba_dt_limit" } };
    json_t *v[4];
    for (int i = 0; i < 4; i++) {
        v[i] = json_object_get(root, alias[i][1]);
        if (!v[i]) v[i] = json_object_get(root, alias[i][0]);
    }
    const long long H = jint(root, "mamba_num_heads", 128), P = jint(root, "mamba_head_dim", 64);
    const long long N = jint(root, "ssm_state_size", 128);
    const long long G = json_is_integer(v[0]) ? json_integer_value(v[0]) : 8;
    const long long K = json_is_integer(v[1]) ? json_integer_value(v[1]) : 4;
    if (H < 1 || H > (1 << 16) || P < 1 || P > (1 << 16) || G < 1 || H % G || N < 1 || N > (1 << 16) || K < 1 || K > 64)
        REFUSE("%s: mamba_num_heads = %lld, mamba_head_dim = %lld, ssm_state_size = %lld, n_groups = %lld, "
               "conv_kernel = %lld: accel needs groups dividing the heads and a convolution of 1..64", path, H, P, N,
               G, K);
    const char *mact = jstr(root, "mamba_hidden_act"), *act = jstr(root, "mlp_hidden_act");
    if (mact && strcmp(mact, "silu"))
        REFUSE("%s: mamba_hidden_act = %s: accel's Mamba-2 takes SiLU after its convolution", path, mact);
    if (act && strcmp(act, "relu2") && strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu"))
        REFUSE("%s: mlp_hidden_act = %s: accel's plain MLP takes relu2, the tanh GELU or the exact one", path, act);
    static const char *const biases[] = { "use_bias", "mlp_bias", "attention_bias", "mamba_proj_bias" };
    for (int i = 0; i < 4; i++)
        if (jbool(root, biases[i], false))
            REFUSE("%s: %s = true: accel's Nemotron-H projections have no biases", path, biases[i]);
    if (json_is_array(v[3]) && (json_array_size(v[3]) != 2 || json_number_value(json_array_get(v[3], 0)) != 0.0 ||
                                !unbounded(json_array_get(v[3], 1))))
        REFUSE("%s: time_step_limit other than [0, inf]: accel does not clamp Mamba-2's steps", path);
    snprintf(m->mlp, sizeof m->mlp, "plain");
    snprintf(m->activation, sizeof m->activation, "%s", !act || !strcmp(act, "relu2") ? "relu2"
                                                        : !strcmp(act, "gelu") ? "gelu" : "gelu_tanh");
    m->rms_eps = jnum(root, "layer_norm_epsilon", 1e-5);
    m->no_rope_pattern = 1;             /* attention without RoPE: Mamba-2 places the tokens */
    m->tie_embeddings = false;          /* its head is never tied (transformers ties none) */
    memset(&m->mlp_only_layers, 0, sizeof m->mlp_only_layers);
    memset(&m->mixer_only_layers, 0, sizeof m->mixer_only_layers);
    memset(&m->attention_layers, 0, sizeof m->attention_layers);
    int mamba = 0, experts = 0, first_experts = L, last_dense = -1;
    for (int i = 0; i < L; i++) {
        accel_numbers_t *list = types[i] == '-' || types[i] == 'E' ? &m->mlp_only_layers : &m->mixer_only_layers;
        list->v[list->n++] = i;
        if (types[i] == '*') m->attention_layers.v[m->attention_layers.n++] = i;
        mamba += types[i] == 'M';
        if (types[i] == 'E' && !experts++) first_experts = i;
        if (types[i] == '-') last_dense = i;
    }
    if (experts && last_dense > first_experts)
        REFUSE("%s: layer %d is a dense MLP after layer %d's experts: accel's dense MLPs lead the experts "
               "(model.dense_layers)", path, last_dense, first_experts);
    if (mamba) {
        m->mamba_heads = (int)H;
        m->mamba_head_dim = (int)P;
        m->mamba_groups = (int)G;
        m->mamba_state = (int)N;
        m->mamba_conv_kernel = (int)K;
        m->mamba_conv_bias = json_is_boolean(v[2]) ? json_is_true(v[2]) : true;
    } else {
        memset(&m->attention_layers, 0, sizeof m->attention_layers);    /* every mixer attends */
    }
    if (!experts) return ACCEL_OK;
    m->experts = (int)jint(root, "n_routed_experts", 8);
    m->experts_per_token = (int)jint(root, "num_experts_per_tok", 2);
    const long long F = jint(root, "moe_intermediate_size", 7688), S = jint(root, "moe_shared_expert_intermediate_size", 7688);
    const long long groups = jint(root, "n_group", 1), topk_groups = jint(root, "topk_group", 1);
    if (m->experts < 1 || m->experts > 4096 || m->experts_per_token < 1 || m->experts_per_token > m->experts ||
        F < 1 || F > (1 << 22) || S < 1 || S > (1 << 22))
        REFUSE("%s: n_routed_experts = %d, num_experts_per_tok = %d, moe_intermediate_size = %lld, "
               "moe_shared_expert_intermediate_size = %lld: accel needs 1..4096 experts, 1..experts a token, widths "
               "of 1..4194304", path, m->experts, m->experts_per_token, F, S);
    if (groups < 1 || m->experts % groups || (groups > 1 && m->experts / groups < 2) || topk_groups < 1 ||
        topk_groups > groups || m->experts_per_token > topk_groups * (m->experts / groups))
        REFUSE("%s: n_group = %lld, topk_group = %lld for %d experts, %d a token: accel needs equal groups of two "
               "or more experts, 1..n_group of them chosen, holding the token's experts", path, groups, topk_groups,
               m->experts, m->experts_per_token);
    m->dense_layers = last_dense + 1;   /* the dense MLPs' layers come first */
    m->dense_ffn_width = m->dense_layers ? m->ffn_width : 0;
    m->ffn_width = (int)F;
    m->shared_expert_ffn = (int)S;
    m->shared_expert_gate = false;
    const long long latent = jint(root, "moe_latent_size", 0);  /* null: none */
    if (latent < 0 || latent > (1 << 20))
        REFUSE("%s: moe_latent_size = %lld: accel needs 1..1048576 (or null)", path, latent);
    m->expert_latent = (int)latent;
    snprintf(m->router_scores, sizeof m->router_scores, "sigmoid");
    m->router_select_bias = true;
    m->router_norm_topk = jbool(root, "norm_topk_prob", true);
    m->router_groups = (int)groups;
    m->router_topk_groups = (int)topk_groups;
    m->router_scale = jnum(root, "routed_scaling_factor", 1.0);
    if (!(m->router_scale > 0 && m->router_scale <= 1e6))
        REFUSE("%s: routed_scaling_factor = %g: accel needs a number in (0, 1e6]", path, m->router_scale);
    if (jbool(root, "output_router_logits", false))
        REFUSE("%s: output_router_logits = true: transformers then adds Mixtral's load-balancing loss over a softmax "
               "of the router's logits, which accel's sigmoid router does not compute\n--> hint: set it to false; "
               "optim.router_bias_update balances the experts instead", path);
    return ACCEL_OK;
}

/* LFM2's gated short convolutions into m->short_conv_kernel (conv_L_cache) and
 * m->attention_layers: layer_types ("conv" / "full_attention"), else full_attn_idxs, else every
 * layer attention (transformers' defaults); LFM3's ("sliding_attention" too) into m->sliding_layers,
 * its default two in every four attention. LFM2's (not LFM2-MoE's or LFM3's) MLP width as Lfm2MLP
 * computes it: block_ff_dim
 * (else intermediate_size); with block_auto_adjust_ff_dim, two thirds of it, then, with a
 * block_ffn_dim_multiplier (not null), times that, rounded up to block_multiple_of. */
static accel_status_t translate_short_conv(json_t *root, const char *path, const char *arch,
                                           accel_model_config_t *m, char *err, size_t errlen)
{
    const bool moe = !strcmp(arch, "Lfm2MoeForCausalLM"), lfm3 = !strcmp(arch, "Lfm3ForCausalLM");
    const long long K = jint(root, "conv_L_cache", lfm3 ? 7 : 3);
    if (K < 1 || K > 64) REFUSE("%s: conv_L_cache = %lld: accel needs 1..64", path, K);
    if (jbool(root, "conv_bias", false)) REFUSE("%s: conv_bias = true: accel's short convolutions have no biases", path);
    m->short_conv_kernel = (int)K;
    const int L = m->layers;
    json_t *types = json_object_get(root, "layer_types"), *idxs = json_object_get(root, "full_attn_idxs");
    if (json_is_array(types) && json_array_size(types) != (size_t)L)
        REFUSE("%s: layer_types has %zu entries for num_hidden_layers = %d", path, json_array_size(types), L);
    if (!json_is_array(types) && json_is_array(idxs))
        for (size_t j = 0; j < json_array_size(idxs); j++)
            if (jint_at(idxs, j) < 0 || jint_at(idxs, j) >= L)
                REFUSE("%s: full_attn_idxs[%zu] is not a layer number (0..%d)", path, j, L - 1);
    accel_numbers_t *att = &m->attention_layers, *slide = &m->sliding_layers;
    memset(att, 0, sizeof *att);
    memset(slide, 0, sizeof *slide);
    for (int i = 0; i < L; i++) {
        bool attends = true, slides = false;
        if (json_is_array(types)) {
            json_t *t = json_array_get(types, (size_t)i);
            slides = lfm3 && jstr_is(t, "sliding_attention");
            if (!jstr_is(t, "full_attention") && !jstr_is(t, "conv") && !slides)
                REFUSE("%s: layer_types[%d] = %s: %s's layers are conv%s or full_attention", path, i,
                       json_is_string(t) ? json_string_value(t) : "(not a string)", lfm3 ? "LFM3" : "LFM2",
                       lfm3 ? ", sliding_attention" : "");
            attends = !jstr_is(t, "conv");
        } else if (lfm3) {              /* Lfm3Config's default: 2 of every 4 full, 4 of 4 sliding */
            slides = i % 4 == 0 && i > 0;
            attends = i % 4 == 2 || slides;
        } else if (json_is_array(idxs)) {
            attends = false;
            for (size_t j = 0; j < json_array_size(idxs); j++) attends |= jint_at(idxs, j) == i;
        }
        if (!attends) continue;
        if (att->n == ACCEL_NUMBERS_MAX)
            REFUSE("%s: more than %d attention layers: accel's model.attention_layers lists at most %d", path,
                   ACCEL_NUMBERS_MAX, ACCEL_NUMBERS_MAX);
        att->v[att->n++] = i;
        if (slides) slide->v[slide->n++] = i;
    }
    if (moe || lfm3) return ACCEL_OK;   /* their widths are as config.json says (LFM2-MoE: translate_experts) */
    long long ff = jint(root, "block_ff_dim", jint(root, "intermediate_size", 12288));
    if (ff >= 1 && jbool(root, "block_auto_adjust_ff_dim", true)) {
        ff = (long long)(2.0 * (double)ff / 3.0);
        json_t *mult = json_object_get(root, "block_ffn_dim_multiplier");
        if (!json_is_null(mult)) {      /* absent: its default, 1.0 */
            const long long of = jint(root, "block_multiple_of", 256);
            if (of < 1 || of > (1 << 22)) REFUSE("%s: block_multiple_of = %lld: accel needs 1..4194304", path, of);
            ff = (long long)(jnum(root, "block_ffn_dim_multiplier", 1.0) * (double)ff);
            ff = of * ((ff + of - 1) / of);
        }
    }
    if (ff < 1 || ff > (1 << 22)) REFUSE("%s: the MLP's width (block_ff_dim / intermediate_size) = %lld: accel needs "
                                         "1..4194304", path, ff);
    m->ffn_width = (int)ff;
    return ACCEL_OK;
}

/* Gated delta-net layers (Qwen3.5's, OLMo Hybrid's) into m->linear_attention_pattern and
 * m->linear_*: layer_types ("linear_attention" / "full_attention"), else every
 * full_attention_interval-th layer full (4); accel's full layers are every N-th, so any other order
 * is refused. Their sizes default to the family's (key heads, value heads, key and value head
 * sizes, convolution width). */
static accel_status_t translate_linear(json_t *root, const char *path, const long long defaults[5],
                                       accel_model_config_t *m, char *err, size_t errlen)
{
    const int L = m->layers;
    long long every = jint(root, "full_attention_interval", 4);
    json_t *types = json_object_get(root, "layer_types");
    if (json_is_array(types)) {
        if (json_array_size(types) != (size_t)L)
            REFUSE("%s: layer_types has %zu entries for num_hidden_layers = %d", path, json_array_size(types), L);
        every = L + 1;                  /* no full layer: every (L + 1)-th */
        for (int i = 0; i < L && every == L + 1; i++)
            if (jstr_is(json_array_get(types, (size_t)i), "full_attention")) every = i + 1;
        for (int i = 0; i < L; i++) {
            json_t *t = json_array_get(types, (size_t)i);
            const char *want = (i + 1) % every ? "linear_attention" : "full_attention";
            if (!jstr_is(t, want))
                REFUSE("%s: layer_types[%d] = %s: accel's full attention layers are every N-th (here every %lld-th, "
                       "the first one's place) and the others gated delta-nets (linear_attention)", path, i,
                       json_is_string(t) ? json_string_value(t) : "(not a string)", every);
        }
    }
    if (every < 1 || every > (1 << 20)) REFUSE("%s: full_attention_interval = %lld: accel needs 1..1048576", path, every);
    static const char *const keys[] = { "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                                        "linear_value_head_dim", "linear_conv_kernel_dim" };
    int *const to[] = { &m->linear_key_heads, &m->linear_value_heads, &m->linear_key_dim, &m->linear_value_dim,
                        &m->linear_conv_kernel };
    for (int i = 0; i < 5; i++) {
        const long long v = jint(root, keys[i], defaults[i]);
        if (v < 1 || v > (i == 4 ? 64 : 1 << 16))
            REFUSE("%s: %s = %lld: accel needs 1..%d", path, keys[i], v, i == 4 ? 64 : 1 << 16);
        *to[i] = (int)v;
    }
    if (m->linear_value_heads % m->linear_key_heads)
        REFUSE("%s: linear_num_value_heads = %d is not a multiple of linear_num_key_heads = %d", path,
               m->linear_value_heads, m->linear_key_heads);
    m->linear_attention_pattern = (int)every;
    return ACCEL_OK;
}

/* SmolLM3's and Llama 4's NoPE layers into m->no_rope_pattern: no_rope_layers (1: RoPE, 0: none),
 * else every no_rope_layer_interval-th layer without; accel's are none or every N-th. SmolLM3's
 * sliding window is on the NoPE layers, which accel's windows (every layer, or all but every N-th)
 * cannot place. */
static accel_status_t translate_nope(json_t *root, const char *path, accel_model_config_t *m, char *err,
                                     size_t errlen)
{
    const int L = m->layers;
    json_t *list = json_object_get(root, "no_rope_layers");
    const long long interval = jint(root, "no_rope_layer_interval", 4);
    if (json_is_array(list) && json_array_size(list) == 0) list = NULL;     /* Llama 4: empty is the interval's */
    if (json_is_array(list) && json_array_size(list) != (size_t)L)
        REFUSE("%s: no_rope_layers has %zu entries for num_hidden_layers = %d", path, json_array_size(list), L);
    if (!json_is_array(list) && interval < 1)
        REFUSE("%s: no_rope_layer_interval = %lld: it must be >= 1", path, interval);
    int every = 0;
    for (int i = 0; i < L && !every; i++) {
        json_t *v = json_is_array(list) ? json_array_get(list, (size_t)i) : NULL;
        if (v ? !json_integer_value(v) : (i + 1) % interval == 0) every = i + 1;
    }
    for (int i = 0; i < L; i++) {
        json_t *v = json_is_array(list) ? json_array_get(list, (size_t)i) : NULL;
        const bool has_rope = v ? json_integer_value(v) != 0 : (i + 1) % interval != 0;
        if (has_rope != !(every && (i + 1) % every == 0))
            REFUSE("%s: no_rope_layers: layer %d %s RoPE: accel's layers without it are none or every N-th "
                   "(model.no_rope_pattern)", path, i, has_rope ? "has" : "has no");
    }
    m->no_rope_pattern = every;
    json_t *sw = json_object_get(root, "sliding_window");
    if (jbool(root, "use_sliding_window", false) && json_is_integer(sw))
        REFUSE("%s: use_sliding_window = true: SmolLM3's window is on its NoPE layers, and accel's sliding layers "
               "are all of them or all but every N-th", path);
    return ACCEL_OK;
}

/* Llama 4's text model (Llama4TextConfig) into m, after translate_nope placed its layers without
 * RoPE: experts on moe_layers (else every interleave_moe_layer_step-th block), num_local_experts
 * SwiGLU experts of intermediate_size chosen by their router logits, each chosen one's input times
 * the logit's sigmoid, beside a shared expert as wide; the other blocks a dense SwiGLU of
 * intermediate_size_mlp. The layers with RoPE attend in chunks of attention_chunk_size (layer_types
 * chunked_attention) with q/k norms without weights after RoPE (use_qk_norm); the others attend to
 * the whole context with the query temperature (attn_temperature_tuning: 1 + attn_scale
 * ln(1 + floor((p + 1) / floor_scale))). */
static accel_status_t translate_llama4(json_t *root, const char *path, accel_model_config_t *m, char *err,
                                       size_t errlen)
{
    const int L = m->layers;
    const long long E = jint(root, "num_local_experts", 16), K = jint(root, "num_experts_per_tok", 1);
    const long long step = jint(root, "interleave_moe_layer_step", 1), dff = jint(root, "intermediate_size_mlp", 16384);
    if (E < 1 || E > 4096 || K < 1 || K > E)
        REFUSE("%s: num_local_experts = %lld, num_experts_per_tok = %lld: accel needs 1..4096 experts and 1..that many "
               "a token", path, E, K);
    if (dff < 1 || dff > (1 << 22)) REFUSE("%s: intermediate_size_mlp = %lld: accel needs 1..4194304", path, dff);
    m->experts = (int)E;
    m->experts_per_token = (int)K;
    snprintf(m->router_scores, sizeof m->router_scores, "sigmoid");
    m->router_norm_topk = false;
    m->expert_input_scaled = true;
    m->shared_expert_ffn = m->ffn_width;
    m->shared_expert_gate = false;
    json_t *list = json_object_get(root, "moe_layers");
    if (json_is_array(list) ? json_array_size(list) == 0 : step < 1)
        REFUSE("%s: %s: accel's Llama 4 has experts in some block", path,
               json_is_array(list) ? "moe_layers is empty" : "interleave_moe_layer_step < 1");
    accel_numbers_t moe = { 0 };
    for (int l = 0; l < L; l++) {
        bool has = !json_is_array(list) && (l + 1) % step == 0;
        for (size_t i = 0; json_is_array(list) && i < json_array_size(list); i++)
            has |= json_integer_value(json_array_get(list, i)) == l;
        if (has && moe.n == ACCEL_NUMBERS_MAX)
            REFUSE("%s: more than %d blocks with experts: accel's model.expert_layers lists at most that many", path,
                   ACCEL_NUMBERS_MAX);
        if (has) moe.v[moe.n++] = l;
    }
    if (moe.n < L) {                    /* some blocks dense: the list (every block: none needed) */
        m->expert_layers = moe;
        m->dense_ffn_width = (int)dff;
    }
    if (jbool(root, "use_qk_norm", true)) {
        m->qk_norm = m->qk_norm_after_rope = true;
        m->qk_norm_weights = false;
        snprintf(m->qk_norm_layers, sizeof m->qk_norm_layers, "rope");
    }
    json_t *chunk = json_object_get(root, "attention_chunk_size");
    const long long cs = !chunk ? 8192 : json_is_integer(chunk) ? json_integer_value(chunk) : 0;
    if (chunk && !json_is_null(chunk) && (cs < 1 || cs > (1 << 24)))
        REFUSE("%s: attention_chunk_size = %lld: accel needs 1..16777216 (or null)", path, cs);
    json_t *types = json_object_get(root, "layer_types");
    if (json_is_array(types) && json_array_size(types) != (size_t)L)
        REFUSE("%s: layer_types has %zu entries for num_hidden_layers = %d", path, json_array_size(types), L);
    for (int l = 0; json_is_array(types) && l < L; l++) {   /* chunks on the layers with RoPE, as transformers */
        const char *t = json_string_value(json_array_get(types, (size_t)l));
        const bool chunked = cs > 0 && !(m->no_rope_pattern && (l + 1) % m->no_rope_pattern == 0);
        if (!t || strcmp(t, chunked ? "chunked_attention" : "full_attention"))
            REFUSE("%s: layer_types[%d] = %s: accel's Llama 4 attends in chunks on its layers with RoPE and to the "
                   "whole context on the others (no_rope_layers)", path, l, t ? t : "(not a string)");
    }
    if (cs > 0) {
        m->sliding_window = (int)cs;
        m->sliding_window_pattern = m->no_rope_pattern;
        m->sliding_chunked = true;
    }
    json_t *tt = json_object_get(root, "attn_temperature_tuning");  /* the hub's Scout: 4, which Python reads as true */
    const bool tuning = !tt || (json_is_boolean(tt) ? json_is_true(tt) : json_is_number(tt) && json_number_value(tt) != 0);
    if (tuning && m->no_rope_pattern) {
        const long long fs = jint(root, "floor_scale", 8192);
        m->query_scale_beta = jnum(root, "attn_scale", 0.1);
        if (fs < 1 || fs > INT_MAX || !(m->query_scale_beta >= 0 && m->query_scale_beta <= 1e6))
            REFUSE("%s: floor_scale = %lld, attn_scale = %g: accel needs a floor_scale >= 1 and an attn_scale in "
                   "0..1e6", path, fs, m->query_scale_beta);
        m->query_scale_context = m->query_scale_beta > 0 ? (int)fs : 0;
        m->query_scale_offset = m->query_scale_beta > 0;
        if (m->query_scale_beta > 0) snprintf(m->query_scale_layers, sizeof m->query_scale_layers, "no_rope");
    }
    return ACCEL_OK;
}

/* GraniteSWA's layer_rope_theta (a base per layer, 0: no RoPE) onto the RoPE already read: one
 * theta everywhere (model.rope_theta), the sliding layers' apart (model.sliding_rope=plain at
 * model.sliding_rope_theta, unscaled RoPE), or none on every N-th layer (model.no_rope_pattern);
 * other choices are refused. */
static accel_status_t translate_layer_rope_theta(json_t *root, const char *path, accel_model_config_t *m, char *err,
                                                 size_t errlen)
{
    json_t *list = json_object_get(root, "layer_rope_theta");
    if (!list || json_is_null(list)) return ACCEL_OK;           /* rope_parameters' theta everywhere */
    if (!json_is_array(list) || json_array_size(list) != (size_t)m->layers)
        REFUSE("%s: layer_rope_theta must list one base per layer (%d)", path, m->layers);
    double full = -1, slide = -1;       /* each kind's theta (-1: none seen) */
    int nope = 0, first_nope = -1;
    for (int i = 0; i < m->layers; i++) {
        json_t *v = json_array_get(list, (size_t)i);
        const double t = json_is_number(v) ? json_number_value(v) : -1;
        if (!(t >= 0 && t <= 1e12)) REFUSE("%s: layer_rope_theta[%d] is not a base in 0..1e12", path, i);
        if (t == 0 && nope++ == 0) first_nope = i;
        double *kind = config_layer_slides(m, i) ? &slide : &full;
        if (t != 0 && *kind >= 0 && *kind != t)
            REFUSE("%s: layer_rope_theta gives layer %d the base %g and another %s layer %g: accel turns the full "
                   "layers at one base and the sliding ones at one", path, i, t,
                   kind == &slide ? "sliding" : "full", *kind);
        if (t != 0) *kind = t;
    }
    if (nope) {                         /* NoPE on every N-th layer, the others at one base */
        const int every = first_nope + 1;
        for (int i = 0; i < m->layers; i++)
            if ((json_number_value(json_array_get(list, (size_t)i)) == 0) != ((i + 1) % every == 0))
                REFUSE("%s: layer_rope_theta has no RoPE (0) on %d layers, not every N-th (layer %d): accel's "
                       "layers without RoPE are every model.no_rope_pattern-th", path, nope, i);
        m->no_rope_pattern = every;
    }
    if (full < 0) full = slide;         /* every layer slides, or the full ones have none */
    if (full >= 0) m->rope_theta = full;
    if (slide >= 0 && slide != full) {
        if (strcmp(m->rope_scaling, "none"))
            REFUSE("%s: layer_rope_theta turns the sliding layers at %g, the others at %g, with rope_type %s: accel's "
                   "sliding layers at a base of their own take plain RoPE", path, slide, full, m->rope_scaling);
        snprintf(m->sliding_rope, sizeof m->sliding_rope, "plain");
        m->sliding_rope_theta = slide;
    }
    return ACCEL_OK;
}

/* compressed-tensors' pack-quantized weights (Kimi K2 Thinking's and K2.5's experts, W4A16 and
 * W8A16 releases) into ct: every config group that quantizes weights the same symmetric integer
 * scheme, 4 or 8 bits, scales by groups of a row or one a row; the tensors it leaves out (its
 * ignore list) are plain. */
/* quantization_config as accel reads it (all zero: plain weights), every form dequantized to fp32
 * as the weights are read. */
typedef struct {
    bool mxfp4;                     /* gpt-oss's MXFP4 experts */
    int block[2];                   /* 8-bit weights X.weight (FP8 e4m3, or I8 with int8) times one
                                     * scale a block of block[0] rows x block[1] columns, -1 the whole
                                     * dimension (per tensor {-1, -1}, per channel {1, -1}); {0, 0}: none */
    bool int8;
    const char *scale;              /* ... the scales' name after the weight's: quant_method fp8's
                                     * "_scale_inv", compressed-tensors' "_scale" (X.weight_scale) */
    int ct[2];                      /* compressed-tensors' packed integers X.weight_packed: {bits a
                                     * value (4 or 8), the scales' group along a row (0: one scale a
                                     * row)}; {0, 0}: none */
    bool nvfp4;                     /* compressed-tensors' NVFP4: X.weight_packed two e2m1 values a
                                     * byte, X.weight_scale e4m3 by 16, over X.weight_global_scale */
} quant_t;

/* compressed-tensors (llm-compressor's releases): pack-quantized integers (W4A16, W8A16, Kimi K2
 * Thinking), float-quantized FP8 and int-quantized INT8 weights by tensor, channel, group or block
 * (FP8-dynamic, FP8, W8A8), and nvfp4-pack-quantized; symmetric, one kind for every group. */
static accel_status_t translate_compressed(json_t *q, const char *path, quant_t *qt, char *err, size_t errlen)
{
    json_t *groups = json_object_get(q, "config_groups");
    const char *fmt = jstr(q, "format");
    if (!json_is_object(groups))
        REFUSE("%s: quantization_config compressed-tensors without config_groups", path);
    const char *key;
    json_t *g;
    json_object_foreach(groups, key, g) {
        json_t *w = json_object_get(g, "weights");
        if (!json_is_object(w)) continue;           /* activations alone: the weights are plain */
        const char *f = jstr(g, "format") ? jstr(g, "format") : fmt;
        const char *type = jstr(w, "type"), *strategy = jstr(w, "strategy"), *order = jstr(w, "actorder");
        const long long bits = jint(w, "num_bits", 0), size = jint(w, "group_size", 0);
        json_t *bs = json_object_get(w, "block_structure");
        const bool is = strategy != NULL, group = is && !strcmp(strategy, "group"), channel = is && !strcmp(strategy, "channel");
        const bool tensor = is && !strcmp(strategy, "tensor"), block = is && !strcmp(strategy, "block");
        const bool sized = size > 0 && size <= (1 << 20), flt = type && !strcmp(type, "float");
        const bool in = type && !strcmp(type, "int"), sym = jbool(w, "symmetric", false);
        const long long b0 = json_is_array(bs) && json_array_size(bs) == 2 ? jint_at(bs, 0) : 0;
        const long long b1 = json_is_array(bs) && json_array_size(bs) == 2 ? jint_at(bs, 1) : 0;
        quant_t want = { 0 };
        bool ok = sym && (!order || !strcmp(order, "static"));
        if (f && !strcmp(f, "pack-quantized")) {
            ok = ok && in && (bits == 4 || bits == 8) && (group ? sized : channel);
            want.ct[0] = (int)bits;
            want.ct[1] = group ? (int)size : 0;
        } else if (f && (!strcmp(f, "float-quantized") || !strcmp(f, "int-quantized") || !strcmp(f, "naive-quantized"))) {
            ok = ok && bits == 8 && (flt || in) && (tensor || channel || (group && sized) ||
                                                    (block && b0 > 0 && b1 > 0 && b0 <= (1 << 20) && b1 <= (1 << 20)));
            want.block[0] = tensor ? -1 : channel || group ? 1 : (int)b0;
            want.block[1] = tensor || channel ? -1 : group ? (int)size : (int)b1;
            want.int8 = in;
            want.scale = "_scale";
        } else if (f && !strcmp(f, "nvfp4-pack-quantized")) {
            ok = ok && flt && bits == 4 && size == 16 && is && (!strcmp(strategy, "tensor_group") || group);
            want.nvfp4 = true;
        } else {
            REFUSE("%s: quantization_config compressed-tensors with format %s: accel reads pack-quantized integers "
                   "(W4A16, W8A16), float-quantized FP8, int-quantized INT8 and nvfp4-pack-quantized weights",
                   path, f ? f : "(none)");
        }
        if (!ok)
            REFUSE("%s: quantization_config config_groups %s weights (format %s): type %s, %lld bits, symmetric %s, "
                   "strategy %s, group_size %lld, actorder %s: accel reads symmetric weights in their order: packed int "
                   "of 4 or 8 bits by groups or channels, FP8 or INT8 by tensor, channel, group or block, NVFP4 by 16",
                   path, key, f, type ? type : "(none)", bits, sym ? "true" : "false", strategy ? strategy : "(none)",
                   size, order ? order : "null");
        const bool same = want.ct[0] == qt->ct[0] && want.ct[1] == qt->ct[1] && want.block[0] == qt->block[0] &&
                          want.block[1] == qt->block[1] && want.int8 == qt->int8 && want.nvfp4 == qt->nvfp4;
        if ((qt->ct[0] || qt->block[0] || qt->nvfp4) && !same)
            REFUSE("%s: quantization_config config_groups quantize weights two ways (mixed precision): accel reads "
                   "one", path);
        *qt = want;
        json_t *a = json_object_get(g, "input_activations");
        if (json_is_object(a))
            ACCEL_INFO("%s: quantization_config config_groups %s quantizes activations too: accel reads the weights "
                       "and computes in full precision", path, key);
    }
    if (!qt->ct[0] && !qt->block[0] && !qt->nvfp4) REFUSE("%s: quantization_config compressed-tensors quantizes no weights", path);
    return ACCEL_OK;
}

/* quantization_config: gpt-oss's MXFP4 experts, FP8 (e4m3 weights times their weight_scale_inv:
 * fine-grained, each block of fp8_block[0] x fp8_block[1] (DeepSeek-V3, Qwen3-FP8, ...), or per
 * tensor, weight_block_size null, fp8_block {-1, -1} (Ministral 3, Mistral Small 4)), or
 * compressed-tensors' packed integers (ct), all dequantized to fp32 as they are read. */
static accel_status_t translate_quantization(json_t *root, const char *path, const char *arch, quant_t *qt,
                                             char *err, size_t errlen)
{
    json_t *q = json_object_get(root, "quantization_config");
    memset(qt, 0, sizeof *qt);
    if (!q || json_is_null(q)) return ACCEL_OK;
    const char *method = jstr(q, "quant_method");
    if (method && !strcmp(method, "compressed-tensors")) return translate_compressed(q, path, qt, err, errlen);
    if (method && !strcmp(method, "fp8")) {
        json_t *b = json_object_get(q, "weight_block_size");
        const char *fmt = jstr(q, "fmt");
        const bool per_tensor = b && json_is_null(b);
        const long long b0 = json_is_array(b) && json_array_size(b) == 2 ? jint_at(b, 0) : -1;
        const long long b1 = json_is_array(b) && json_array_size(b) == 2 ? jint_at(b, 1) : -1;
        if ((!per_tensor && (b0 < 1 || b1 < 1 || b0 > (1 << 20) || b1 > (1 << 20))) || (fmt && strcmp(fmt, "e4m3")))
            REFUSE("%s: quantization_config fp8 with weight_block_size %s and fmt %s: accel reads e4m3 weights "
                   "scaled by blocks of two positive sizes (fine-grained FP8) or per tensor (null)", path,
                   json_is_array(b) ? "not two positive integers" : b ? "neither a list nor null" : "missing",
                   fmt ? fmt : "e4m3");
        qt->block[0] = per_tensor ? -1 : (int)b0;
        qt->block[1] = per_tensor ? -1 : (int)b1;
        qt->scale = "_scale_inv";
        return ACCEL_OK;
    }
    if (!method || strcmp(method, "mxfp4") || strcmp(arch, "GptOssForCausalLM"))
        REFUSE("%s: quantization_config quant_method = %s: accel reads unquantized weights (F32, BF16, F16), "
               "fine-grained FP8 (fp8, e4m3 in blocks), compressed-tensors' pack-quantized integers and gpt-oss's "
               "MXFP4 experts\n--> hint: import the model's unquantized release", path, method ? method : "(none)");
    qt->mxfp4 = true;
    return ACCEL_OK;
}

/* A per-layer key (HunYuan-MoE's num_experts, moe_topk, ...): one integer, or a list of L equal
 * ones; -1 when the list is of another length or its values differ. */
static long long per_layer_int(json_t *root, const char *key, long long def, int L)
{
    json_t *v = json_object_get(root, key);
    if (!json_is_array(v)) return jint(root, key, def);
    if (json_array_size(v) != (size_t)L || L < 1) return -1;
    const long long first = jint_at(v, 0);
    for (int i = 1; i < L; i++)
        if (jint_at(v, (size_t)i) != first) return -1;
    return first;
}

/* HunYuan-MoE (Hunyuan-A13B): every block num_experts SwiGLU experts, the softmax's top moe_topk
 * renormalized, beside one ungated shared MLP, both of intermediate_size (as transformers builds
 * them: a moe_intermediate_size or num_shared_expert other than that is refused); cross-layer
 * attention (use_cla) is refused. */
static accel_status_t translate_hunyuan_moe(json_t *root, const char *path, accel_model_config_t *m, char *err,
                                            size_t errlen)
{
    const int L = m->layers;
    const long long E = per_layer_int(root, "num_experts", 1, L), K = per_layer_int(root, "moe_topk", 1, L);
    const long long F = per_layer_int(root, "moe_intermediate_size", m->ffn_width, L);
    const long long S = per_layer_int(root, "num_shared_expert", 1, L);
    if (E < 1 || E > 4096 || K < 1 || K > E)
        REFUSE("%s: num_experts = %lld, moe_topk = %lld (or lists of other lengths or values): accel needs one "
               "count for every block, 1..4096 experts and 1..that many a token", path, E, K);
    if (F != m->ffn_width || S != 1)
        REFUSE("%s: moe_intermediate_size = %lld and num_shared_expert = %lld with intermediate_size = %d: accel's "
               "HunYuan-MoE (as transformers builds it) has one shared MLP and experts, each of intermediate_size",
               path, F, S, m->ffn_width);
    if (jbool(root, "use_cla", false))
        REFUSE("%s: use_cla = true: accel's attention has no cross-layer key and value sharing", path);
    m->experts = (int)E;
    m->experts_per_token = (int)K;
    m->router_norm_topk = true;
    m->shared_expert_ffn = m->ffn_width;
    m->shared_expert_gate = false;
    m->router_aux_loss = 0.0;
    return ACCEL_OK;
}

/* A family's defaults for the sizes its config.json may leave out (0: the Llama defaults already
 * read stand). */
typedef struct {
    long long layers, heads, kv_heads, width, ffn, context, vocab;
} sizes_t;

static void family_sizes(json_t *root, accel_model_config_t *m, sizes_t d)
{
    if (d.layers) m->layers = (int)jint(root, "num_hidden_layers", d.layers);
    if (d.heads) m->heads = (int)jint(root, "num_attention_heads", d.heads);
    if (d.kv_heads) m->kv_heads = (int)jint(root, "num_key_value_heads", d.kv_heads);
    if (d.width) m->width = (int)jint(root, "hidden_size", d.width);
    if (d.ffn) m->ffn_width = (int)jint(root, "intermediate_size", d.ffn);
    if (d.context) m->context = (int)jint(root, "max_position_embeddings", d.context);
    if (d.vocab) m->vocab = (int)jint(root, "vocab_size", d.vocab);
}

/* config.json (root) into cfg->model; refuses what accel cannot compute. */
static accel_status_t translate_config(json_t *root, const char *path, accel_config_t *cfg, const char **arch_out,
                                       char *err, size_t errlen)
{
    const char *arch = NULL;
    json_t *archs = json_object_get(root, "architectures");
    if (json_is_array(archs) && json_array_size(archs) > 0) arch = json_string_value(json_array_get(archs, 0));
    const char *mt = jstr(root, "model_type");
    if (mt && !strcmp(mt, "exaone")) arch = "ExaoneForCausalLM";  /* transformers saves it as LlamaForCausalLM */
    const arch_info_t *ai = NULL;
    for (size_t i = 0; i < sizeof g_archs / sizeof g_archs[0]; i++)
        if (arch ? !strcmp(arch, g_archs[i].arch) : mt && !strcmp(mt, g_archs[i].model_type)) ai = &g_archs[i];
    const arch_info_t *alias = NULL;
    for (size_t i = 0; !ai && i < sizeof g_llama_aliases / sizeof g_llama_aliases[0]; i++)
        if (arch ? !strcmp(arch, g_llama_aliases[i].arch) : mt && !strcmp(mt, g_llama_aliases[i].model_type))
            alias = &g_llama_aliases[i];
    for (size_t i = 0; alias && i < sizeof g_archs / sizeof g_archs[0]; i++)
        if (!strcmp(g_archs[i].arch, "LlamaForCausalLM")) ai = &g_archs[i];
    if (alias && (jbool(root, "qkv_bias", false) || jbool(root, "bias", false)))    /* InternLM3's names */
        REFUSE("%s: qkv_bias / bias = true on %s: they put biases on the MLP too, and accel's Llama MLP has none",
               path, alias->arch);
    if (!ai) {
        char known[2048];
        size_t n = 0;
        for (size_t i = 0; i < sizeof g_archs / sizeof g_archs[0] && n < sizeof known; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s, ", g_archs[i].arch);
        for (size_t i = 0; i < sizeof g_llama_aliases / sizeof g_llama_aliases[0] && n < sizeof known; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s, ", g_llama_aliases[i].arch);
        for (size_t i = 0; i < sizeof g_multimodal / sizeof g_multimodal[0] && n < sizeof known; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s's language model", i ? ", " : "",
                                  g_multimodal[i].arch);
        REFUSE("%s: architectures = %s (model_type %s) is not a model accel can run\n--> hint: accel imports %s",
               path, arch ? arch : "(none)", mt ? mt : "(none)", known);
    }
    *arch_out = ai->arch;
    accel_model_config_t *m = &cfg->model;
    if (!ai->llama) {
        snprintf(m->name, sizeof m->name, "gpt");
        m->layers = (int)jint(root, "n_layer", 12);
        m->heads = (int)jint(root, "n_head", 12);
        m->width = (int)jint(root, "n_embd", 768);
        m->context = (int)jint(root, "n_positions", jint(root, "n_ctx", 1024));
        m->vocab = (int)jint(root, "vocab_size", 50257);
        const char *act = jstr(root, "activation_function");
        if (act && strcmp(act, "gelu_new") && strcmp(act, "gelu_pytorch_tanh"))
            REFUSE("%s: activation_function = %s: accel's GPT uses the tanh GELU (gelu_new)", path, act);
        long long inner = jint(root, "n_inner", 0);
        if (inner != 0 && inner != 4LL * m->width)
            REFUSE("%s: n_inner = %lld: accel's GPT has an MLP of 4 x n_embd = %d", path, inner, 4 * m->width);
        double eps = jnum(root, "layer_norm_epsilon", 1e-5);
        if (fabs(eps - 1e-5) > 1e-12)
            REFUSE("%s: layer_norm_epsilon = %g: accel's GPT LayerNorm uses 1e-5", path, eps);
        if (!jbool(root, "tie_word_embeddings", true))
            REFUSE("%s: tie_word_embeddings = false: accel's GPT always ties the LM head to wte\n--> hint: "
                   "a GPT-2 with a separate head cannot be imported", path);
        if (!jbool(root, "scale_attn_weights", true))
            REFUSE("%s: scale_attn_weights = false: accel scales attention by 1/sqrt(head size)", path);
        if (jbool(root, "scale_attn_by_inverse_layer_idx", false))
            REFUSE("%s: scale_attn_by_inverse_layer_idx = true is not supported", path);
        if (jbool(root, "add_cross_attention", false))
            REFUSE("%s: add_cross_attention = true is not supported (decoder-only models)", path);
    } else {
        snprintf(m->name, sizeof m->name, "llama");
        m->layers = (int)jint(root, "num_hidden_layers", 32);
        m->heads = (int)jint(root, "num_attention_heads", 32);
        m->kv_heads = (int)jint(root, "num_key_value_heads", m->heads);
        m->width = (int)jint(root, "hidden_size", 4096);
        m->ffn_width = (int)jint(root, "intermediate_size", 11008);
        m->context = (int)jint(root, "max_position_embeddings", 2048);
        m->vocab = (int)jint(root, "vocab_size", 32000);
        const bool helium = !strcmp(ai->arch, "HeliumForCausalLM");    /* RoPE pairs interleaved, q/k/v biases */
        /* LayerNorms (Nemotron's LayerNorm1P: 1 + weight) and plain MLPs, down(act(up)) */
        const bool starcoder2 = !strcmp(ai->arch, "Starcoder2ForCausalLM"), nemotron = !strcmp(ai->arch, "NemotronForCausalLM");
        const bool jais2 = !strcmp(ai->arch, "Jais2ForCausalLM"), arcee = !strcmp(ai->arch, "ArceeForCausalLM");
        const bool stablelm = !strcmp(ai->arch, "StableLmForCausalLM");
        const bool neox = !strcmp(ai->arch, "GPTNeoXForCausalLM");     /* q, k, v fused by head, parallel blocks */
        const bool cohere2 = !strcmp(ai->arch, "Cohere2ForCausalLM");  /* ... its window, full layers without RoPE */
        const bool cohere = cohere2 || !strcmp(ai->arch, "CohereForCausalLM");     /* parallel blocks, one norm */
        const bool phi = !strcmp(ai->arch, "PhiForCausalLM"), gptj = !strcmp(ai->arch, "GPTJForCausalLM");  /* ... an
                                                                                * LM head bias */
        const bool lfm2_moe = !strcmp(ai->arch, "Lfm2MoeForCausalLM");    /* ... DeepSeek-V3's experts */
        const bool lfm3 = !strcmp(ai->arch, "Lfm3ForCausalLM");   /* ... Qwen3's attention gated by head, sandwiches */
        const bool lfm2 = lfm2_moe || lfm3 || !strcmp(ai->arch, "Lfm2ForCausalLM");    /* short convolutions, its names */
        const bool nemotron_h = !strcmp(ai->arch, "NemotronHForCausalLM");   /* one sublayer a layer, Mamba-2 */
        const bool bamba = !strcmp(ai->arch, "BambaForCausalLM");     /* Mamba-2 blocks, RoPE on half a head */
        const bool llama4 = !strcmp(ai->arch, "Llama4ForCausalLM");   /* chunks, NoPE layers, experts on their input */
        const bool apertus = !strcmp(ai->arch, "ApertusForCausalLM");  /* xIELU, Qwen3's q/k norms, its norm names */
        const bool cwm = !strcmp(ai->arch, "CwmForCausalLM");   /* Llama's blocks, sliding layers by layer_types */
        const bool exaone3 = !strcmp(ai->arch, "ExaoneForCausalLM");   /* EXAONE 3.0, 3.5: Llama's blocks */
        /* The families' config classes' defaults for the sizes config.json leaves out (EXAONE 3's
         * code names its layers num_layers) */
        if (apertus) family_sizes(root, m, (sizes_t){ .ffn = 14336, .context = 65536, .vocab = 131072 });
        if (exaone3)
            family_sizes(root, m, (sizes_t){ .layers = jint(root, "num_layers", 32), .kv_heads = 8, .ffn = 14336,
                                             .context = 4096, .vocab = 102400 });
        if (cwm)                        /* Code World Model 32B */
            family_sizes(root, m, (sizes_t){ 64, 48, 8, 6144, 21504, 131072, 128256 });
        if (llama4) family_sizes(root, m, (sizes_t){ 48, 40, 8, 5120, 8192, 131072, 202048 });
        if (bamba) {
            family_sizes(root, m, (sizes_t){ .kv_heads = 8, .ffn = 14336, .context = 262144, .vocab = 128000 });
            accel_status_t bst = translate_mamba(root, path, m, err, errlen);
            if (bst != ACCEL_OK) return bst;
            const double z = jnum(root, "z_loss_coefficient", 0.0);
            if (z != 0.0)
                ACCEL_INFO("%s: z_loss_coefficient = %g is transformers' training loss term, not the model's: "
                           "accel's fine-tuning optimizes the cross-entropy alone", path, z);
        }
        const bool mamba1 = !strcmp(ai->arch, "MambaForCausalLM") || !strcmp(ai->arch, "FalconMambaForCausalLM");
        if (mamba1) {
            accel_status_t mst = translate_mamba1(root, path, ai->arch, m, err, errlen);
            if (mst != ACCEL_OK) return mst;
        }
        if (!strcmp(ai->arch, "JambaForCausalLM")) {
            accel_status_t jst = translate_jamba(root, path, m, err, errlen);
            if (jst != ACCEL_OK) return jst;
        }
        if (nemotron_h) {
            family_sizes(root, m, (sizes_t){ .ffn = 21504, .context = 4096 });
            accel_status_t nst = translate_nemotron_h(root, path, m, err, errlen);
            if (nst != ACCEL_OK) return nst;
        }
        if (gptj) {                     /* GPT-2's key names */
            m->layers = (int)jint(root, "n_layer", 28);
            m->heads = m->kv_heads = (int)jint(root, "n_head", 16);
            m->width = (int)jint(root, "n_embd", 4096);
            json_t *inner = json_object_get(root, "n_inner");
            m->ffn_width = json_is_integer(inner) ? (int)json_integer_value(inner) : 4 * m->width;
            m->context = (int)jint(root, "n_positions", 2048);
            m->vocab = (int)jint(root, "vocab_size", 50400);
        }
        const bool layer_norm = starcoder2 || nemotron || jais2 || stablelm || neox || cohere || phi || gptj;
        const bool plain = starcoder2 || nemotron || jais2 || arcee || neox || phi || gptj || apertus;
        const char *eps_key = starcoder2 ? "norm_epsilon" : nemotron || lfm2 ? "norm_eps" : gptj || nemotron_h || mamba1 ? "layer_norm_epsilon"
                            : jais2 || stablelm || neox || cohere || phi ? "layer_norm_eps" : "rms_norm_eps";
        m->rms_eps = jnum(root, eps_key, helium ? 1e-8 : layer_norm || arcee || lfm2 || nemotron_h || bamba || llama4 ||
                                             apertus || mamba1 ? 1e-5 : 1e-6);
        if (exaone3) m->rms_eps = jnum(root, "rms_norm_eps", jnum(root, "layer_norm_epsilon", 1e-5));
        if (layer_norm) snprintf(m->norm, sizeof m->norm, "layer");
        m->norm_unit_offset = nemotron;
        if (plain) {                    /* relu2, the tanh GELU (gelu_new is the same), the exact one;
                                         * Apertus's xIELU (its parameters are in the weights) */
            const char *pact = jstr(root, gptj ? "activation_function" : "hidden_act");
            if (!pact) pact = starcoder2 || phi || gptj ? "gelu_new" : neox ? "gelu" : apertus ? "xielu" : "relu2";
            if (apertus ? strcmp(pact, "xielu") : strcmp(pact, "relu2") && strcmp(pact, "gelu_pytorch_tanh") &&
                                                  strcmp(pact, "gelu_new") && strcmp(pact, "gelu"))
                REFUSE("%s: hidden_act = %s on %s: accel's plain MLP takes relu2, the tanh GELU (gelu_pytorch_tanh) "
                       "or the exact one (gelu); xielu on Apertus alone (whose weights hold its parameters)", path, pact,
                       ai->arch);
            snprintf(m->mlp, sizeof m->mlp, "plain");
            snprintf(m->activation, sizeof m->activation, "%s",
                     !strcmp(pact, "relu2") || !strcmp(pact, "gelu") || !strcmp(pact, "xielu") ? pact : "gelu_tanh");
            m->mlp_bias = starcoder2 ? jbool(root, "use_bias", true)
                        : neox || phi || gptj || (!apertus && jbool(root, "mlp_bias", jais2));
        }
        if (neox && jbool(root, "use_parallel_residual", true))
            snprintf(m->parallel_block, sizeof m->parallel_block, "two_norms");
        if (phi || gptj) {              /* the MLP beside attention through the one norm; the head's bias */
            snprintf(m->parallel_block, sizeof m->parallel_block, "one_norm");
            m->head_bias = true;
            if (phi && jbool(root, "qk_layernorm", false))
                REFUSE("%s: qk_layernorm = true: accel's Phi blocks have no LayerNorms on q and k", path);
            json_t *rot = json_object_get(root, "rotary_dim");
            if (gptj && !json_is_integer(rot))
                REFUSE("%s: rotary_dim is missing or null: accel turns the first rotary_dim values of each head "
                       "(GPT-J's is 64)", path);
        }
        if (cohere) {                   /* LayerNorms without biases; logits times logit_scale */
            m->norm_bias = false;
            snprintf(m->parallel_block, sizeof m->parallel_block, "one_norm");
            if (jbool(root, "use_qk_norm", false))
                REFUSE("%s: use_qk_norm = true: accel's Cohere blocks have no per-head LayerNorms on q and k "
                       "(Command R+)", path);
            const double ls = jnum(root, "logit_scale", 0.0625);
            if (!(ls > 0 && ls <= 1e6)) REFUSE("%s: logit_scale = %g: accel needs a number in (0, 1e6]", path, ls);
            m->logits_scaling = 1.0 / ls;
        }
        if (stablelm && (jbool(root, "qk_layernorm", false) || jbool(root, "use_parallel_residual", false)))
            REFUSE("%s: %s = true: accel's StableLM blocks have no per-head LayerNorms on q and k and run attention "
                   "and the MLP one after the other", path,
                   jbool(root, "qk_layernorm", false) ? "qk_layernorm" : "use_parallel_residual");
        const bool vault = !strcmp(ai->arch, "VaultGemmaForCausalLM");     /* Gemma 2's without the after-norms */
        const bool gemma3 = !strcmp(ai->arch, "Gemma3ForCausalLM"), gemma2 = !strcmp(ai->arch, "Gemma2ForCausalLM") || vault;
        const bool gemma = !strcmp(ai->arch, "GemmaForCausalLM") || gemma2 || gemma3;
        /* Gemma's GeGLU: the tanh GELU (Gemma 1's legacy "gelu" means it too, as transformers reads it) */
        const char *act_key = gemma2 || gemma3 ? "hidden_activation" : "hidden_act", *act = jstr(root, act_key);
        if (!act && exaone3) act = jstr(root, "activation_function");
        if (gemma && act && strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu_new") &&
            (gemma2 || gemma3 || strcmp(act, "gelu")))
            REFUSE("%s: %s = %s: accel's Gemma uses the tanh GELU (gelu_pytorch_tanh)", path, act_key, act);
        if (!gemma && !plain && act && strcmp(act, "silu"))
            REFUSE("%s: hidden_act = %s: accel's Llama uses SwiGLU (silu)", path, act);
        const bool hy_moe = !strcmp(ai->arch, "HunYuanMoEV1ForCausalLM");    /* ... softmax experts, shared MLP */
        const bool hunyuan = hy_moe || !strcmp(ai->arch, "HunYuanDenseV1ForCausalLM");  /* q/k norms after RoPE */
        const bool ernie_moe = !strcmp(ai->arch, "Ernie4_5_MoeForCausalLM");    /* RoPE pairs interleaved */
        const bool ernie = ernie_moe || !strcmp(ai->arch, "Ernie4_5ForCausalLM");
        if (ernie && jbool(root, "use_bias", false))
            REFUSE("%s: use_bias = true: accel's ERNIE 4.5 has no biases on its projections and MLPs", path);
        const bool mistral4 = !strcmp(ai->arch, "Mistral4ForCausalLM");   /* ... softmax routing, query temperature */
        const bool ministral3 = !strcmp(ai->arch, "Ministral3ForCausalLM");  /* Mistral's, query temperature */
        const bool dsv3 = !strcmp(ai->arch, "DeepseekV3ForCausalLM") ||   /* GLM-4.5's experts, latent attention */
                          !strcmp(ai->arch, "DeepseekV2ForCausalLM") ||  /* ... DeepSeek-V2: softmax routing */
                          !strcmp(ai->arch, "Glm4MoeLiteForCausalLM") || mistral4 ||   /* GLM-4.7-Flash */
                          !strcmp(ai->arch, "YoutuForCausalLM");   /* ... Youtu-LLM: Llama's dense blocks */
        const bool youtu = !strcmp(ai->arch, "YoutuForCausalLM");
        const bool minimax = !strcmp(ai->arch, "MiniMaxM2ForCausalLM");  /* Mixtral's with OLMoE's q/k norms */
        const bool solar = !strcmp(ai->arch, "SolarOpenForCausalLM");    /* GLM-4.5's experts, Llama's attention */
        const bool exaone_moe = !strcmp(ai->arch, "ExaoneMoeForCausalLM");  /* ... EXAONE 4's attention */
        const bool qwen3_next = !strcmp(ai->arch, "Qwen3NextForCausalLM");    /* ... its names */
        const bool qwen35_moe = !strcmp(ai->arch, "Qwen3_5MoeForCausalLM") || qwen3_next;   /* ... Qwen2-MoE's
                                                                                        * experts */
        const bool qwen35 = !strcmp(ai->arch, "Qwen3_5ForCausalLM") || qwen35_moe;  /* gated delta-nets, gated
                                                                                      * attention */
        long long hd = jint(root, "head_dim", minimax || solar || lfm3 || nemotron_h || llama4 ? 128 : qwen35 ? 256 : 0);   /* their configs' default */
        if (hd < 0 || hd > (1 << 16) || hd % 2)
            REFUSE("%s: head_dim = %lld: accel needs an even head size up to 65536", path, hd);
        if (m->heads > 0 && m->width % m->heads && !hd && !dsv3)    /* latent attention: heads of its own size */
            REFUSE("%s: hidden_size = %d is not a multiple of num_attention_heads = %d", path, m->width, m->heads);
        /* head_dim apart from hidden_size / heads (Qwen3, some Mistrals): model.head_dim */
        m->head_dim = m->heads > 0 && hd && hd * m->heads != m->width ? (int)hd : 0;
        const bool qwen3_moe = !strcmp(ai->arch, "Qwen3MoeForCausalLM");
        const bool qwen2_moe = !strcmp(ai->arch, "Qwen2MoeForCausalLM");
        const bool mellum = !strcmp(ai->arch, "MellumForCausalLM");   /* Qwen3-MoE's, a RoPE per layer type */
        const bool qwen3 = !strcmp(ai->arch, "Qwen3ForCausalLM") || qwen3_moe || mellum || qwen35;
        const bool olmo3 = !strcmp(ai->arch, "Olmo3ForCausalLM");
        const bool flex_olmo = !strcmp(ai->arch, "FlexOlmoForCausalLM");   /* OLMo 2's blocks, OLMoE's experts */
        const bool olmo_hybrid = !strcmp(ai->arch, "OlmoHybridForCausalLM");   /* ... beside gated delta-nets */
        const bool olmo2 = !strcmp(ai->arch, "Olmo2ForCausalLM") || olmo3 || flex_olmo || olmo_hybrid;
        const bool olmoe = !strcmp(ai->arch, "OlmoeForCausalLM") || flex_olmo;
        const bool oss = !strcmp(ai->arch, "GptOssForCausalLM");
        const bool glm4 = !strcmp(ai->arch, "Glm4ForCausalLM"), glm = glm4 || !strcmp(ai->arch, "GlmForCausalLM");
        m->qk_norm = qwen3 || apertus;  /* Apertus: always, as Qwen3's */
        if (glm4) snprintf(m->norm_position, sizeof m->norm_position, "both");  /* norms after the sublayers too */
        const bool granite_hybrid = !strcmp(ai->arch, "GraniteMoeHybridForCausalLM");  /* Mamba-2 beside attention */
        /* Granite's later kinds: a shared MLP beside the experts; sinks and sliding layers (SWA) */
        const bool granite_moe_swa = !strcmp(ai->arch, "GraniteMoeSWAForCausalLM");
        const bool granite_swa = granite_moe_swa || !strcmp(ai->arch, "GraniteSWAForCausalLM");
        const bool granite_shared = granite_moe_swa || !strcmp(ai->arch, "GraniteMoeSharedForCausalLM");
        const bool granite_moe = !strcmp(ai->arch, "GraniteMoeForCausalLM") || granite_shared ||
                                 (granite_hybrid && jint(root, "num_local_experts", 8) > 0);
        const bool glm_moe = !strcmp(ai->arch, "Glm4MoeForCausalLM");   /* GLM-4.5: rotate_half RoPE pairs */
        const bool dots1 = !strcmp(ai->arch, "Dots1ForCausalLM");       /* GLM-4.5's experts, Qwen3's attention */
        if (glm_moe) m->qk_norm = jbool(root, "use_qk_norm", false);
        if (dots1) m->qk_norm = true;
        if (hunyuan) m->qk_norm = m->qk_norm_after_rope = true;   /* query_layernorm, key_layernorm */
        if (hy_moe) {
            accel_status_t hst = translate_hunyuan_moe(root, path, m, err, errlen);
            if (hst != ACCEL_OK) return hst;
        }
        if (qwen3_moe || qwen2_moe || olmoe || oss || granite_moe || glm_moe || dots1 || (dsv3 && !youtu) || ernie_moe ||
            minimax || solar || mellum || exaone_moe || qwen35_moe || lfm2_moe ||
            !strcmp(ai->arch, "MixtralForCausalLM")) {
            accel_status_t st = translate_experts(root, path, ai->arch, m, err, errlen);
            if (st != ACCEL_OK) return st;
        }
        if (lfm2) {                     /* Qwen3's per-head q/k norms on its attention layers */
            m->qk_norm = true;
            accel_status_t cst = translate_short_conv(root, path, ai->arch, m, err, errlen);
            if (cst != ACCEL_OK) return cst;
            if (lfm3) {                 /* norms after the sublayers, attention gated by head: on by default */
                if (jbool(root, "use_sandwich_norm", true)) snprintf(m->norm_position, sizeof m->norm_position, "both");
                m->attention_head_gate = jbool(root, "use_attention_gate", true);
                if (jbool(root, "attention_bias", false))
                    REFUSE("%s: attention_bias = true: accel's LFM3 attention has no biases", path);
            }
        }
        if (granite_shared) {           /* shared_mlp beside the experts, ungated (0: none, the default) */
            const long long shared = jint(root, "shared_intermediate_size", 0);
            if (shared < 0 || shared > (1 << 22))
                REFUSE("%s: shared_intermediate_size = %lld: accel needs 0..4194304", path, shared);
            m->shared_expert_ffn = (int)shared;
            m->shared_expert_gate = false;
        }
        m->attention_sinks |= granite_swa;     /* a sink logit per head, as gpt-oss's */
        if (granite_hybrid) {           /* Mamba-2 layers; shared_mlp beside the experts, or alone */
            accel_status_t gst = translate_mamba(root, path, m, err, errlen);
            if (gst != ACCEL_OK) return gst;
            const long long shared = jint(root, "shared_intermediate_size", 1024);
            if (shared < 1 || shared > (1 << 22))
                REFUSE("%s: shared_intermediate_size = %lld: accel needs 1..4194304", path, shared);
            if (m->experts) {
                m->shared_expert_ffn = (int)shared;
                m->shared_expert_gate = false;
            } else {
                m->ffn_width = (int)shared;
            }
            const char *pe = jstr(root, "position_embedding_type");
            if (pe && strcmp(pe, "rope") && strcmp(pe, "nope"))
                REFUSE("%s: position_embedding_type = %s: accel's Granite 4.0-H attention takes rope or nope", path, pe);
            if (!pe || strcmp(pe, "rope")) m->no_rope_pattern = 1;     /* nope (or null): no layer turns */
            if (jbool(root, "attention_bias", false))
                REFUSE("%s: attention_bias = true: accel's Granite 4.0-H attention has no biases", path);
        }
        if (qwen35) {                   /* every norm by 1 + weight (but the delta-nets' gated ones), attention's
                                         * output gated */
            static const long long sizes[5] = { 16, 32, 128, 128, 4 };  /* Qwen3_5TextConfig's */
            m->norm_unit_offset = m->attention_output_gate = true;
            accel_status_t lst = translate_linear(root, path, sizes, m, err, errlen);
            if (lst != ACCEL_OK) return lst;
        }
        if (olmo_hybrid) {              /* gated delta-nets beside OLMo 2's attention, writing with beta up to 2,
                                         * their output normed at 1e-5 (its o_norm's, fixed) */
            const long long kh = jint(root, "linear_num_key_heads", m->heads);
            const long long kd = kh > 0 ? (long long)(0.75 * m->width / (double)kh) : 0;
            const long long sizes[5] = { m->heads, m->heads, kd, 2 * jint(root, "linear_key_head_dim", kd), 4 };
            accel_status_t lst = translate_linear(root, path, sizes, m, err, errlen);   /* OlmoHybridConfig's sizes */
            if (lst != ACCEL_OK) return lst;
            m->linear_allow_neg_eigval = jbool(root, "linear_allow_neg_eigval", true);
            m->linear_norm_eps = 1e-5;
        }
        if (exaone_attention(ai->arch)) {   /* Qwen3's per-head q/k norms; EXAONE 4.0: OLMo 2's after-norms */
            m->qk_norm = true;
            if (!exaone_moe) snprintf(m->norm_position, sizeof m->norm_position, "post");
        }
        if (olmo2 || olmoe || minimax) {    /* q/k norms over the whole projections; OLMo 2's after-norms */
            m->qk_norm = true;
            snprintf(m->qk_norm_scope, sizeof m->qk_norm_scope, "all");
            if (olmo2) snprintf(m->norm_position, sizeof m->norm_position, "post");
            json_t *clip = json_object_get(root, "clip_qkv");
            if (clip && !json_is_null(clip))
                REFUSE("%s: clip_qkv = %g: accel does not clamp q, k and v", path, json_number_value(clip));
        }
        if (gemma) {                    /* 1 + weight norms, GeGLU, embeddings times sqrt(width) */
            m->norm_unit_offset = true;
            snprintf(m->activation, sizeof m->activation, "gelu_tanh");
            m->embed_scale = (float)sqrt((double)m->width);
        }
        if (gemma2 || gemma3) {         /* norms before and after the sublayers (Gemma 3: q/k norms per
                                         * head; VaultGemma: before only); soft caps (Gemma 2's: 50 and 30
                                         * by default) */
            snprintf(m->norm_position, sizeof m->norm_position, vault ? "pre" : "both");
            m->qk_norm = gemma3;
            const long long qpas = jint(root, "query_pre_attn_scalar", 256);
            const long long hs = m->head_dim ? m->head_dim : m->heads > 0 ? m->width / m->heads : 0;
            if (qpas < 1 || qpas > (1 << 24))
                REFUSE("%s: query_pre_attn_scalar = %lld: accel needs 1..16777216", path, qpas);
            m->query_pre_attn_scalar = qpas == hs ? 0 : (int)qpas;
            static const char *const caps[] = { "attn_logit_softcapping", "final_logit_softcapping" };
            double *const to[] = { &m->attention_softcap, &m->logit_softcap };
            for (int i = 0; i < 2; i++) {
                json_t *cap = json_object_get(root, caps[i]);
                *to[i] = cap && !json_is_null(cap) ? json_number_value(cap) : !cap && gemma2 ? (i ? 30.0 : 50.0) : 0.0;
                if (!(*to[i] >= 0 && *to[i] <= 1e9))
                    REFUSE("%s: %s = %g: accel needs 0..1e9 (or null)", path, caps[i], *to[i]);
            }
            if (jbool(root, "use_bidirectional_attention", false))
                REFUSE("%s: use_bidirectional_attention = true: accel's decoder attends causally", path);
        }
        const bool clovax = !strcmp(ai->arch, "HyperCLOVAXForCausalLM");   /* Granite's, norms after the sublayers */
        if (clovax && jbool(root, "use_post_norm", true)) snprintf(m->norm_position, sizeof m->norm_position, "both");
        if (!strcmp(ai->arch, "GraniteForCausalLM") || granite_moe || granite_hybrid || granite_swa || clovax) {  /* four
                                                                                           * scalars on a Llama */
            static const char *const keys[] = { "embedding_multiplier", "attention_multiplier",
                                                "residual_multiplier", "logits_scaling" };
            double *const to[] = { &m->embed_scale, &m->attention_multiplier, &m->residual_multiplier,
                                   &m->logits_scaling };
            for (int i = 0; i < 4; i++) {
                *to[i] = jnum(root, keys[i], 1.0);   /* GraniteConfig's defaults: all 1 */
                if (!(*to[i] > 0 && *to[i] <= 1e6))
                    REFUSE("%s: %s = %g: accel needs a number in (0, 1e6]", path, keys[i], *to[i]);
            }
            if (clovax) {               /* HyperCLOVA X's logits_scaling multiplies: accel's divides; its
                                         * attention_multiplier null: 1/sqrt(head size), as its config sets it */
                m->logits_scaling = 1.0 / m->logits_scaling;
                json_t *am = json_object_get(root, "attention_multiplier");
                const int hs = m->head_dim ? m->head_dim : m->width / m->heads;
                if ((!am || json_is_null(am)) && hs > 0) m->attention_multiplier = 1.0 / sqrt((double)hs);
            }
        }
        if (oss) {                      /* sinks; biased experts of clamped SwiGLU; attention_bias: q, k, v, o */
            m->attention_sinks = m->expert_bias = true;
            snprintf(m->activation, sizeof m->activation, "clamped_swiglu");
            m->swiglu_alpha = jnum(root, "swiglu_alpha", 1.702);
            m->swiglu_limit = jnum(root, "swiglu_limit", 7.0);
            if (!(m->swiglu_alpha > 0 && m->swiglu_alpha < 1e6 && m->swiglu_limit > 0 && m->swiglu_limit < 1e9))
                REFUSE("%s: swiglu_alpha = %g, swiglu_limit = %g: accel needs numbers in (0, 1e6) and (0, 1e9)", path,
                       m->swiglu_alpha, m->swiglu_limit);
            m->attention_bias = m->attention_out_bias = jbool(root, "attention_bias", true);
        }
        if (qwen2_moe) {                /* every token also runs the gated shared expert */
            m->shared_expert_ffn = (int)jint(root, "shared_expert_intermediate_size", 5632);
            if (m->shared_expert_ffn < 1 || m->shared_expert_ffn > (1 << 22))
                REFUSE("%s: shared_expert_intermediate_size = %d: accel needs 1..4194304", path, m->shared_expert_ffn);
        }
        if (!plain && jbool(root, "mlp_bias", false))
            REFUSE("%s: mlp_bias = true: accel's gated MLP has no biases", path);
        bool qwen = !strcmp(ai->arch, "Qwen2ForCausalLM") || qwen2_moe;
        if (qwen3 && jbool(root, "attention_bias", false))
            REFUSE("%s: attention_bias = true on %s adds an o_proj bias, which accel does not have", path,
                   ai->arch);
        /* Biases: Qwen2's on q, k, v (model.attention_bias); Llama's attention_bias puts them on
         * q, k, v and o (model.attention_out_bias too); Seed-OSS says each (attention_bias: q, k, v,
         * default on; attention_out_bias: o); GLM's attention_bias (default on) is q, k, v's. Other
         * families' o_proj bias has no place in accel. */
        const bool seed = !strcmp(ai->arch, "SeedOssForCausalLM");
        const bool llama_bias = (!strcmp(ai->arch, "LlamaForCausalLM") || dots1 || hunyuan || nemotron || jais2 || arcee ||
                                 neox || cohere || llama4 || apertus) && jbool(root, "attention_bias", jais2 || neox);
        if (starcoder2 || stablelm || phi || gptj) {   /* StarCoder2's use_bias: every projection's; StableLM: q, k,
                                                         * v; Phi: q, k, v and dense; GPT-J: none */
            m->attention_bias = starcoder2 ? m->mlp_bias : phi || (stablelm && jbool(root, "use_qkv_bias", false));
            m->attention_out_bias = (starcoder2 && m->mlp_bias) || phi;
        } else if (seed || glm || glm_moe || solar || helium) {   /* Solar Open's, Helium's: q, k, v */
            m->attention_bias = jbool(root, "attention_bias", !glm_moe && !solar && !helium);
            m->attention_out_bias = seed && jbool(root, "attention_out_bias", false);
        } else if (llama_bias) {
            m->attention_bias = m->attention_out_bias = true;
        } else if (!qwen && !oss && jbool(root, "attention_bias", false))
            REFUSE("%s: attention_bias = true on %s adds an o_proj bias, which accel does not have\n--> hint: "
                   "accel's attention biases are Qwen2's (q, k, v), Llama's and Seed-OSS's (q, k, v, o) and gpt-oss's",
                   path, ai->arch);
        if (!oss && !seed && !glm && !glm_moe && !solar && !helium && !llama_bias && !starcoder2 && !stablelm && !phi &&
            !gptj)
            m->attention_bias = qwen && jbool(root, "qkv_bias", true);      /* Qwen2-MoE may turn them off */
        /* transformers' defaults: tied for Qwen2 only when it says so; false for Llama/Mistral;
         * true for Gemma, ERNIE 4.5 and Youtu-LLM. */
        m->tie_embeddings = jbool(root, "tie_word_embeddings", gemma || ernie || youtu || starcoder2 || cohere || lfm2 ||
                                                               mamba1);
        if (lfm2) m->tie_embeddings = jbool(root, "tie_embedding", m->tie_embeddings);  /* its early name, first */
        if (nemotron_h) m->tie_embeddings = false;     /* transformers ties none of its heads */
        accel_status_t wst = translate_window(root, path, ai->arch, m, err, errlen);
        if (wst == ACCEL_OK && (!strcmp(ai->arch, "SmolLM3ForCausalLM") || llama4))
            wst = translate_nope(root, path, m, err, errlen);
        if (wst == ACCEL_OK && llama4) wst = translate_llama4(root, path, m, err, errlen);
        if (wst == ACCEL_OK && cohere2) {
            /* Command R7B's full-attention layers have no RoPE; without a window, none has it */
            m->no_rope_pattern = !m->sliding_window ? 1 : m->sliding_window_pattern;
        }
        if (wst == ACCEL_OK && exaone_attention(ai->arch)) {
            /* With a window, EXAONE 4's full-attention layers have no RoPE: all of them (none slides),
             * every N-th (model.sliding_window_pattern) or none (all slide). */
            json_t *sw = json_object_get(root, "sliding_window");
            if (!sw || json_is_integer(sw))
                m->no_rope_pattern = !m->sliding_window ? 1 : m->sliding_window_pattern;
        }
        if (wst == ACCEL_OK && lfm3 && m->sliding_layers.n) {  /* its window on the sliding layers */
            const long long w = jint(root, "sliding_window", 256);
            if (w < 1 || w > (1 << 24)) REFUSE("%s: sliding_window = %lld: accel needs 1..16777216", path, w);
            m->sliding_window = (int)w;
        }
        if (wst != ACCEL_OK) return wst;
        if (m->context > ACCEL_CONTEXT_MAX) {   /* RoPE's context is not in the weights: accel's longest */
            ACCEL_INFO("%s: max_position_embeddings = %d is past accel's longest context: imported with "
                       "model.context=%d (the KV cache and RoPE tables are that long; set model.context to "
                       "what you run)", path, m->context, ACCEL_CONTEXT_MAX);
            m->context = ACCEL_CONTEXT_MAX;
        }
        /* RoPE: transformers 5 writes rope_parameters, older versions rope_theta + rope_scaling.
         * OLMo 3 and Gemma 3: one set per layer type (a flat rope_scaling is the full-attention
         * layers'); accel's sliding layers take the same, or plain RoPE at their own theta
         * (model.sliding_rope, model.sliding_rope_theta: Gemma 3's rope_local_base_freq). */
        json_t *rp = json_object_get(root, "rope_parameters");
        if (!json_is_object(rp)) rp = json_object_get(root, "rope_scaling");
        json_t *default_rope = NULL;    /* GptOssConfig's default: YaRN x32 over 4096, theta 150000;
                                         * Lfm3Config's: proportional on the full layers, plain on the
                                         * sliding ones */
        if (oss && !json_is_object(rp))
            rp = default_rope = json_pack("{s:s, s:f, s:f, s:f, s:b, s:i, s:f}", "rope_type", "yarn", "factor", 32.0,
                                      "beta_fast", 32.0, "beta_slow", 1.0, "truncate", 0,
                                      "original_max_position_embeddings", 4096, "rope_theta", 150000.0);
        if (apertus && !json_is_object(rp))     /* ApertusConfig's: Llama 3's scaling x8 over 8192, theta 12M */
            rp = default_rope = json_pack("{s:s, s:f, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "rope_theta", 12000000.0,
                                          "factor", 8.0, "low_freq_factor", 1.0, "high_freq_factor", 4.0,
                                          "original_max_position_embeddings", 8192);
        if (cwm && !json_is_object(rp))         /* CwmConfig's: Llama 3's scaling x16 over 8192, theta 1M */
            rp = default_rope = json_pack("{s:s, s:f, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "rope_theta", 1000000.0,
                                          "factor", 16.0, "low_freq_factor", 1.0, "high_freq_factor", 4.0,
                                          "original_max_position_embeddings", 8192);
        if (lfm3 && !json_is_object(rp))
            rp = default_rope = json_pack("{s:{s:s, s:f, s:f}, s:{s:s, s:f}}", "full_attention", "rope_type",
                                          "proportional", "rope_theta", 1000000.0, "partial_rotary_factor", 0.5,
                                          "sliding_attention", "rope_type", "default", "rope_theta", 10000.0);
        double typed_theta = 0;         /* the full layers' theta, when per layer type */
        if (olmo3 || gemma3 || mellum || lfm3) {
            const double def_full = olmo3 || mellum ? 500000.0 : 1000000.0, def_slide = olmo3 ? 500000.0 : 10000.0;
            json_t *full = json_object_get(rp, "full_attention"), *slide = json_object_get(rp, "sliding_attention");
            double slide_theta;
            if (json_is_object(full)) {
                const char *st = json_is_object(slide) ? jstr(slide, "rope_type") : NULL;
                typed_theta = jnum(full, "rope_theta", jnum(root, "rope_theta", def_full));
                slide_theta = json_is_object(slide) ? jnum(slide, "rope_theta", def_slide) : def_slide;
                if (json_is_object(slide) && !json_equal(slide, full) && st && strcmp(st, "default"))
                    REFUSE("%s: rope_parameters: the sliding layers' RoPE (%s) is neither the full layers' nor "
                           "plain RoPE", path, st);
                if (!json_is_object(slide) || !json_equal(slide, full))
                    snprintf(m->sliding_rope, sizeof m->sliding_rope, "plain");
                rp = full;
            } else {                    /* transformers 4: rope_theta, rope_local_base_freq */
                typed_theta = jnum(root, "rope_theta", def_full);
                slide_theta = olmo3 ? typed_theta : jnum(root, "rope_local_base_freq", def_slide);
                snprintf(m->sliding_rope, sizeof m->sliding_rope, "plain");
            }
            m->sliding_rope_theta = slide_theta != typed_theta ? slide_theta : 0.0;
            if (!m->sliding_window) {
                snprintf(m->sliding_rope, sizeof m->sliding_rope, "scaled");
                m->sliding_rope_theta = 0.0;
            }
        }
        m->rope_theta = typed_theta > 0 ? typed_theta
                      : jnum(root, "rope_theta", jnum(json_is_object(rp) ? rp : root, "rope_theta",
                                                      oss ? 150000.0 : minimax ? 5000000.0 : solar ? 1000000.0
                                                      : helium ? 100000.0 : lfm2 ? 1000000.0 : llama4 ? 500000.0
                                                      : apertus ? 12000000.0 : exaone3 ? 500000.0
                                                      : neox ? jnum(root, "rotary_emb_base", 10000.0) : 10000.0));
        const char *rtype = json_is_object(rp) ? (jstr(rp, "rope_type") ? jstr(rp, "rope_type") : jstr(rp, "type")) : NULL;
        double yarn_mscale = 0, yarn_mscale_all = 0;    /* DeepSeek-V3's YaRN */
        double ntk_alpha = 1.0;                         /* HunYuan's stretch of the base */
        const bool phi3 = !strcmp(ai->arch, "Phi3ForCausalLM");
        if (phi3 && rtype && (!strcmp(rtype, "su") || !strcmp(rtype, "yarn")))
            rtype = "longrope";         /* Phi-3's early names for it, as transformers' Phi3Config reads them */
        if (!rtype || !strcmp(rtype, "default") || !strcmp(rtype, "mrope")) {  /* M-RoPE: plain on text */
            snprintf(m->rope_scaling, sizeof m->rope_scaling, "none");
        } else if (!strcmp(rtype, "llama3")) {
            snprintf(m->rope_scaling, sizeof m->rope_scaling, "llama3");
            m->rope_factor = jnum(rp, "factor", 8.0);
            m->rope_low_freq_factor = jnum(rp, "low_freq_factor", 1.0);
            m->rope_high_freq_factor = jnum(rp, "high_freq_factor", 4.0);
            m->rope_original_context = (int)jint(rp, "original_max_position_embeddings", 8192);
        } else if (!strcmp(rtype, "yarn")) {
            snprintf(m->rope_scaling, sizeof m->rope_scaling, "yarn");
            m->rope_original_context = (int)jint(rp, "original_max_position_embeddings", m->context);
            m->rope_factor = jnum(rp, "factor", m->rope_original_context > 0 ? (double)m->context / m->rope_original_context : 1.0);
            m->rope_beta_fast = jnum(rp, "beta_fast", 32.0);
            m->rope_beta_slow = jnum(rp, "beta_slow", 1.0);
            m->rope_attention_factor = jnum(rp, "attention_factor", 0.0);
            /* cos and sin scaled by mscale's over mscale_all_dim's when both are set (transformers'
             * YaRN, every family); latent attention's scores by mscale_all_dim's squared too (below,
             * with the head size) */
            yarn_mscale = jnum(rp, "mscale", 0.0);
            yarn_mscale_all = jnum(rp, "mscale_all_dim", 0.0);
            if (!(m->rope_attention_factor > 0) && yarn_mscale && yarn_mscale_all)
                m->rope_attention_factor = yarn_get_mscale(m->rope_factor, yarn_mscale) /
                                           yarn_get_mscale(m->rope_factor, yarn_mscale_all);
            m->rope_truncate = jbool(rp, "truncate", true);
        } else if (!strcmp(rtype, "dynamic") && hunyuan &&
                   jnum(rp, "alpha", 0.0) > 0) {
            /* HunYuan's NTK alpha: "dynamic" by name, a fixed stretch of the base by
             * alpha^(head / (head - 2)), as transformers' compute_ntk_alpha_rope_parameters */
            const double alpha = jnum(rp, "alpha", 0.0);
            const long long hd_rope = m->head_dim ? m->head_dim : m->heads > 0 ? m->width / m->heads : 0;
            if (hd_rope < 4 || !(alpha <= 1e9))
                REFUSE("%s: rope_scaling dynamic with alpha = %g on heads of %lld: accel needs alpha in (0, 1e9] and "
                       "heads of 4 or more", path, alpha, hd_rope);
            snprintf(m->rope_scaling, sizeof m->rope_scaling, "none");
            ntk_alpha = pow(alpha, (double)hd_rope / (double)(hd_rope - 2));
        } else if (!strcmp(rtype, "proportional")) {
            /* Gemma 4's and LFM3's full layers: plain RoPE over the whole head, the pairs past the
             * first partial_rotary_factor share unturned */
            snprintf(m->rope_scaling, sizeof m->rope_scaling, "proportional");
            m->rope_proportion = jnum(rp, "partial_rotary_factor", 1.0);
            if (!(m->rope_proportion > 0 && m->rope_proportion <= 1.0))
                REFUSE("%s: rope_parameters proportional with partial_rotary_factor = %g: accel needs (0, 1]", path,
                       m->rope_proportion);
            if (jnum(rp, "factor", 1.0) != 1.0)
                REFUSE("%s: rope_parameters proportional with factor = %g: accel's proportional RoPE divides no "
                       "frequency (factor 1)", path, jnum(rp, "factor", 1.0));
        } else if (!strcmp(rtype, "linear")) {
            snprintf(m->rope_scaling, sizeof m->rope_scaling, "linear");
            m->rope_factor = jnum(rp, "factor", 1.0);
        } else if (!strcmp(rtype, "longrope")) {
            /* LongRoPE (Phi-3.5, Phi-4-mini): the factor lists; the extension, when not given, is
             * max_position_embeddings over the original context (transformers' rule), and below 1
             * it is none */
            snprintf(m->rope_scaling, sizeof m->rope_scaling, "longrope");
            m->rope_original_context = (int)jint(rp, "original_max_position_embeddings",
                                                 jint(root, "original_max_position_embeddings", phi3 ? 4096 : m->context));
            if (m->rope_original_context < 1)
                REFUSE("%s: original_max_position_embeddings = %d: LongRoPE needs the original context (>= 1)", path,
                       m->rope_original_context);
            const double factor = jnum(rp, "factor", (double)m->context / m->rope_original_context);
            m->rope_factor = factor > 1.0 ? factor : 1.0;
            m->rope_attention_factor = jnum(rp, "attention_factor", 0.0);
            static const char *const lists[] = { "short_factor", "long_factor" };
            for (int k = 0; k < 2; k++) {
                accel_numbers_t *out = k ? &m->rope_long_factor : &m->rope_short_factor;
                json_t *a = json_object_get(rp, lists[k]);
                if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > ACCEL_NUMBERS_MAX)
                    REFUSE("%s: rope_scaling longrope needs %s, a list of 1 to %d numbers", path, lists[k],
                           ACCEL_NUMBERS_MAX);
                memset(out, 0, sizeof *out);
                for (size_t i = 0; i < json_array_size(a); i++) {
                    json_t *x = json_array_get(a, i);
                    const double v = json_is_number(x) ? json_number_value(x) : 0.0;
                    if (!(v > 0.0 && v <= 1e6))
                        REFUSE("%s: rope_scaling %s[%zu] is not a number in (0, 1e6]", path, lists[k], i);
                    out->v[out->n++] = v;
                }
            }
        } else {
            REFUSE("%s: rope_scaling type = %s: accel computes RoPE without scaling or with llama3, yarn, linear, "
                   "longrope or proportional scaling",
                   path, rtype);
        }
        m->rope_theta *= ntk_alpha;
        /* Part of each head turned (rope_parameters or the top level): GLM's half (its default),
         * Phi-4-mini's 3/4, MiniMax-M2's rotary_dim of head_dim: model.rope_dim; other families'
         * are refused. */
        const long long rotary_dim = minimax || gptj ? jint(root, "rotary_dim", 0) : 0;
        const double def_partial = glm || glm_moe || nemotron || phi || bamba ? 0.5 : stablelm || qwen35 ? 0.25
                                 : gptj ? (double)rotary_dim / (m->heads > 0 ? m->width / m->heads : 1)
                                 : neox ? jnum(root, "rotary_pct", 0.25)   /* transformers 4's name */
                                 : rotary_dim > 0 ? (double)rotary_dim / hd : 1.0;
        const double partial = !strcmp(m->rope_scaling, "proportional") ? 1.0   /* its share: rope_proportion */
                             : jnum(root, "partial_rotary_factor",
                                    json_is_object(rp) ? jnum(rp, "partial_rotary_factor", def_partial) : def_partial);
        json_decref(default_rope);
        /* Mistral Small 4's heads are qk_nope_head_dim + qk_rope_head_dim, the factor the latter's part */
        const long long m4_rope = jint(root, "qk_rope_head_dim", 64), m4_head = jint(root, "qk_nope_head_dim", 64) + m4_rope;
        const int hs = mistral4 ? (int)m4_head : m->head_dim ? m->head_dim : m->heads > 0 ? m->width / m->heads : 0;
        const int rd = (int)(partial * hs);                 /* transformers' int(head_dim * factor) */
        if (mistral4 && json_is_number(json_object_get(json_is_object(rp) ? rp : root, "partial_rotary_factor")) &&
            rd != m4_rope)
            REFUSE("%s: partial_rotary_factor = %g turns %d of a head's %d values, not qk_rope_head_dim = %lld", path,
                   partial, rd, hs, m4_rope);
        if (partial != 1.0 && !glm && !glm_moe && !solar && !phi3 && !mistral4 && !minimax && !nemotron && !stablelm &&
            !neox && !phi && !gptj && !qwen35 && !bamba)
            REFUSE("%s: partial_rotary_factor = %g on %s: accel turns part of a head for GLM, Phi-3, MiniMax-M2, Nemotron, "
                   "StableLM, GPT-NeoX, Phi, GPT-J, Qwen3.5 and Bamba only", path,
                   partial, ai->arch);
        if (!mistral4 && (!(partial > 0 && partial <= 1.0) || rd % 2 || rd < 2))
            REFUSE("%s: partial_rotary_factor = %g turns %d of a head's %d values: accel needs an even number >= 2",
                   path, partial, rd, hs);
        m->rope_dim = rd < hs ? rd : 0;
        if (dsv3) {
            accel_status_t mst = translate_mla(root, path, ai->arch, m, yarn_mscale_all, err, errlen);
            if (mst != ACCEL_OK) return mst;
        }
        /* Llama 4's attention temperature (Ministral 3, Mistral Small 4): steps of the original
         * context, as their rope_parameters say */
        const double beta = json_is_object(rp) && (ministral3 || mistral4) ? jnum(rp, "llama_4_scaling_beta", 0.0) : 0.0;
        if (beta != 0.0) {
            const long long orig = jint(rp, "original_max_position_embeddings", 0);
            if (!(beta > 0 && beta <= 1e6) || orig < 1 || orig > INT_MAX)
                REFUSE("%s: rope_parameters llama_4_scaling_beta = %g with original_max_position_embeddings = %lld: "
                       "accel needs a number in (0, 1e6] and a context >= 1", path, beta, orig);
            m->query_scale_beta = beta;
            m->query_scale_context = (int)orig;
        }
        if (!strcmp(m->rope_scaling, "longrope") &&
            (m->rope_short_factor.n != rd / 2 || m->rope_long_factor.n != rd / 2))
            REFUSE("%s: rope_scaling longrope has %d short and %d long factors: it needs one for each of the %d "
                   "pairs RoPE turns in a head", path, m->rope_short_factor.n, m->rope_long_factor.n, rd / 2);
        if (m->kv_heads == m->heads) m->kv_heads = 0;
        if (granite_swa) {
            accel_status_t tst = translate_layer_rope_theta(root, path, m, err, errlen);
            if (tst != ACCEL_OK) return tst;
        }
    }
    if (m->layers < 1 || m->heads < 1 || m->width < 1 || m->context < 1 || m->vocab < 2 ||
        (ai->llama && (m->ffn_width < 1 || m->kv_heads < 0)))
        REFUSE("%s: the sizes are missing or not positive integers (layers %d, heads %d, width %d, context %d, "
               "vocab %d)", path, m->layers, m->heads, m->width, m->context, m->vocab);
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ reading a model directory */

struct accel_hf {
    char dir[4096];
    accel_config_t cfg;
    char *yaml;
    const char *arch;
    accel_st_t *shards[MAX_SHARDS];
    int nshards;
    entry_t *e;
    int ne;
    accel_hf_tensor_t *t;
    int nt;
    const char *multimodal;         /* Gemma3ForConditionalGeneration, ...: its language model only */
    quant_t q;                      /* quantization_config */
    int mtp_layers;                 /* GLM-4.5's multi-token prediction blocks after the last one */
    bool mla_pairs;                 /* latent attention's RoPE pairs interleaved (rope_interleave) */
    char head_name[96];             /* the LM head's tensor name in the files */
    accel_peft_t *peft;             /* a LoRA adapter merged as the weights are read (NULL: none) */
};

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

bool accel_hf_is_model(const char *path)
{
    char p[4200];
    if (is_dir(path)) {
        snprintf(p, sizeof p, "%s/config.json", path);
        return exists(p) || accel_peft_is_adapter(path);
    }
    size_t n = strlen(path);
    if (n < 12 || strcmp(path + n - 12, ".safetensors")) return false;
    const char *slash = strrchr(path, '/');
    snprintf(p, sizeof p, "%.*sconfig.json", slash ? (int)(slash - path + 1) : 0, path);
    if (!exists(p)) return false;
    accel_st_t *st;
    if (accel_st_open(path, &st, NULL, 0) != ACCEL_OK) return true;   /* let open say why */
    bool accel_own = accel_st_metadata(st, "accel_config") != NULL;
    accel_st_close(st);
    return !accel_own;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const accel_st_tensor_t *find_tensor(const accel_hf_t *hf, const char *name, int *shard)
{
    for (int i = 0; i < hf->nshards; i++) {
        const accel_st_tensor_t *t = accel_st_find(hf->shards[i], name);
        if (t) { if (shard) *shard = i; return t; }
    }
    return NULL;
}

static accel_status_t open_shard(accel_hf_t *hf, const char *file, char *err, size_t errlen)
{
    if (hf->nshards >= MAX_SHARDS) {
        accel_errf(err, errlen, "%s: more than %d shards", hf->dir, MAX_SHARDS);
        return ACCEL_ERR_UNSUPPORTED;
    }
    char p[8400];
    snprintf(p, sizeof p, "%s/%s", hf->dir, file);
    for (int i = 0; i < hf->nshards; i++)
        if (!strcmp(accel_st_path(hf->shards[i]), p)) return ACCEL_OK;
    accel_status_t st = accel_st_open(p, &hf->shards[hf->nshards], err, errlen);
    if (st == ACCEL_OK) hf->nshards++;
    return st;
}

/* model.safetensors.index.json: every shard its weight_map names. */
static accel_status_t open_index(accel_hf_t *hf, const char *index, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_load_file(index, 0, &je);
    json_t *wm = json_object_get(root, "weight_map");
    accel_status_t st = ACCEL_OK;
    if (!json_is_object(wm)) {
        accel_errf(err, errlen, "%s: %s", index, root ? "no weight_map object" : je.text);
        st = ACCEL_ERR_CORRUPT;
    }
    const char *k;
    json_t *v;
    if (st == ACCEL_OK) json_object_foreach(wm, k, v) {
        const char *file = json_string_value(v);
        if (!file || strchr(file, '/')) {
            accel_errf(err, errlen, "%s: weight_map[%s] is not a file name in the directory", index, k);
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        char msg[1024];
        st = open_shard(hf, file, msg, sizeof msg);
        if (st != ACCEL_OK) {
            accel_errf(err, errlen, "%s names shard %s (for %s), which cannot be read: %s", index, file, k, msg);
            break;
        }
        if (!find_tensor(hf, k, NULL)) {
            accel_errf(err, errlen, "%s: weight_map says %s is in %s, but it is not there", index, k, file);
            st = ACCEL_ERR_CORRUPT;
            break;
        }
    }
    json_decref(root);
    return st;
}

/* A tied model may still store lm_head.weight (transformers ignores it and ties): accepted only
 * when it is the embedding, since accel computes the head from wte. */
static accel_status_t check_tied_head(accel_hf_t *hf, const accel_st_tensor_t *head, int shard, char *err,
                                      size_t errlen)
{
    int ws = 0;
    const char *wte_name = hf->e[0].hf;             /* the embedding: the first entry */
    const accel_st_tensor_t *wte = find_tensor(hf, wte_name, &ws);
    if (!wte || wte->numel != head->numel) {
        accel_errf(err, errlen, "%s: lm_head.weight does not have the embedding's shape, but "
                "tie_word_embeddings = true\n--> hint: config.json and the weights disagree about the tie",
                hf->dir);
        return ACCEL_ERR_SHAPE;
    }
    float *a = malloc(sizeof(float) * (head->numel ? head->numel : 1)), *b = malloc(sizeof(float) * (head->numel ? head->numel : 1));
    accel_status_t st = a && b ? ACCEL_OK : ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK) st = accel_st_read(hf->shards[shard], head, 0, head->numel, a);
    if (st == ACCEL_OK) st = accel_st_read(hf->shards[ws], wte, 0, wte->numel, b);
    if (st == ACCEL_OK && memcmp(a, b, sizeof(float) * head->numel)) {
        accel_errf(err, errlen, "%s: tie_word_embeddings = true, but lm_head.weight differs from %s: accel ties "
                "the head to the embedding and would drop it\n--> hint: set tie_word_embeddings to false in "
                "config.json if the head is separate", hf->dir, wte_name);
        st = ACCEL_ERR_UNSUPPORTED;
    }
    free(a);
    free(b);
    return st;
}

/* Gemma3ForConditionalGeneration and Qwen3-VL keep their language model under a prefix: the hub's
 * files (and transformers' saves) "language_model.model." with "language_model.lm_head.weight",
 * transformers' in-memory names "model.language_model." with "lm_head.weight", SmolVLM's, Idefics3's
 * and Granite-Docling's "model.text_model." with "lm_head.weight"; Qwen2.5-VL's files have none
 * ("model.layers."). The entries' names follow whichever the files use. */
static void rename_language_model(accel_hf_t *hf)
{
    if (find_tensor(hf, "model.embed_tokens.weight", NULL)) return;     /* Qwen2.5-VL's hub names: none */
    const char *body = "language_model.model.", *head = "language_model.";
    if (find_tensor(hf, "model.language_model.embed_tokens.weight", NULL)) body = "model.language_model.", head = "";
    else if (find_tensor(hf, "model.text_model.embed_tokens.weight", NULL)) body = "model.text_model.", head = "";
    for (int i = 0; i < hf->ne; i++) {
        char *n = hf->e[i].hf, tmp[2 * ACCEL_HF_NAME_MAX];
        if (!strncmp(n, "model.", 6)) snprintf(tmp, sizeof tmp, "%s%s", body, n + 6);
        else snprintf(tmp, sizeof tmp, "%s%s", head, n);
        const size_t len = strlen(tmp);
        if (len < ACCEL_HF_NAME_MAX) memcpy(n, tmp, len + 1);     /* Gemma's names are far shorter */
    }
    snprintf(hf->head_name, sizeof hf->head_name, "%slm_head.weight", head);
}

/* True when name ends with suffix and, that replaced by owner, names a tensor accel reads (names:
 * sorted, ne of them). */
static bool companion_of(const char *const *names, int ne, const char *name, const char *suffix, const char *owner)
{
    const size_t len = strlen(name), sl = strlen(suffix);
    if (len <= sl || len >= ACCEL_HF_NAME_MAX || strcmp(name + len - sl, suffix)) return false;
    char buf[ACCEL_HF_NAME_MAX + 32];
    snprintf(buf, sizeof buf, "%.*s%s", (int)(len - sl), name, owner);
    const char *key = buf;
    return bsearch(&key, names, (size_t)ne, sizeof *names, cmp_names) != NULL;
}

/* A JSON file as Python's json module may write it: bare Infinity, -Infinity and NaN (transformers
 * 4's time_step_limit of Granite 4.0-H and Bamba), which JSON has not, are read as null; else as
 * json_load_file reads it. NULL with je set when it cannot be read or parsed. */
static json_t *load_python_json(const char *path, json_error_t *je)
{
    size_t len = 0;
    char *text = accel_file_read(path, &len);
    if (!text) return json_load_file(path, 0, je);  /* its error message */
    char *out = malloc(2 * len + 1);                /* "NaN" grows by one: at most twice as long */
    if (!out) {
        free(text);
        return json_load_file(path, 0, je);
    }
    static const char *const words[] = { "-Infinity", "Infinity", "NaN" };
    bool in_string = false;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (!in_string) {
            size_t w = 0, n = 0;
            for (; w < sizeof words / sizeof *words; w++)
                if (len - i >= (n = strlen(words[w])) && !memcmp(text + i, words[w], n)) break;
            if (w < sizeof words / sizeof *words) {
                memcpy(out + o, "null", 4);
                o += 4;
                i += n - 1;
                continue;
            }
            in_string = text[i] == '"';
        } else if (text[i] == '\\' && i + 1 < len) {
            out[o++] = text[i++];                   /* an escape: its next character is not the end */
        } else if (text[i] == '"') {
            in_string = false;
        }
        out[o++] = text[i];
    }
    json_t *root = json_loadb(out, o, 0, je);
    free(out);
    free(text);
    return root;
}

/* Whether a tensor's name ends in suffix (transformers 5's stacked experts, where files have them). */
static bool any_tensor_ends(const accel_hf_t *hf, const char *suffix)
{
    const size_t b = strlen(suffix);
    for (int s = 0; s < hf->nshards; s++)
        for (int i = 0; i < accel_st_count(hf->shards[s]); i++) {
            const char *name = accel_st_at(hf->shards[s], i)->name;
            const size_t a = strlen(name);
            if (a >= b && !strcmp(name + a - b, suffix)) return true;
        }
    return false;
}

/* The vision tower's and the multimodal projector's tensors, under either naming (Llama 4's
 * tower: vision_model.; Granite Vision 4's projectors and LLaVA-Next's image_newline; SmolVLM's
 * connector; Kimi K2.5's mm_projector). */
static bool is_vision_tensor(const char *name)
{
    static const char *const parts[] = { "vision_tower.", "vision_model.", "multi_modal_projector.", "visual.",
                                         "image_newline", "layerwise_projectors.", "spatial_projectors.",
                                         "connector.", "mm_projector." };
    if (!strncmp(name, "model.", 6)) name += 6;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!strncmp(name, parts[i], strlen(parts[i]))) return true;
    return false;
}

/* "[a, b, c]" of a shape. */
static void shape_text(char *buf, size_t len, int ndim, const uint64_t *dims)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < ndim && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", k ? ", " : "", (unsigned long long)dims[k]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* The block of one scale of an 8-bit weight [rows, cols] (FP8 or INT8): quant_t's block, -1 the
 * whole dimension. */
static void scale_block(const accel_hf_t *hf, uint64_t rows, uint64_t cols, uint64_t b[2])
{
    b[0] = hf->q.block[0] < 0 ? rows : (uint64_t)hf->q.block[0];
    b[1] = hf->q.block[1] < 0 ? cols : (uint64_t)hf->q.block[1];
}

/* An 8-bit weight (F8_E4M3, or I8 under compressed-tensors' int-quantized) and its scales X<scale>:
 * a matrix read by rows, config.json's quantization saying so; one F32, BF16 or F16 scale a block,
 * [ceil(rows / b0), ceil(cols / b1)] (one for the whole tensor: [], [1] or [1, 1]). */
static accel_status_t check_fp8(const accel_hf_t *hf, const entry_t *x, const accel_st_tensor_t *t, char *err,
                                size_t errlen)
{
    const bool rows = x->layout == L_ROWS || x->layout == L_ROPE_PAIRS || x->layout == L_MLA_Q || x->layout == L_MLA_KV;
    const bool i8 = t->dtype == ACCEL_ST_I8;
    if (!hf->q.block[0] || hf->q.int8 != i8 || !rows || x->hf_ndim != 2) {
        accel_errf(err, errlen, "%s: tensor %s is %s, %s", hf->dir, x->hf, accel_st_dtype_name(t->dtype),
                   !hf->q.block[0] || hf->q.int8 != i8 ? (i8 ? "but config.json declares no int-quantized "
                   "compressed-tensors quantization_config (its scales)" : "but config.json declares no fp8 "
                   "quantization_config (its scales' blocks)") : "where accel reads 8-bit matrices only");
        return ACCEL_ERR_UNSUPPORTED;
    }
    char name[ACCEL_HF_NAME_MAX + 16], have[64], want[64];
    snprintf(name, sizeof name, "%s%s", x->hf, hf->q.scale);
    const accel_st_tensor_t *sc = find_tensor(hf, name, NULL);
    uint64_t b[2];
    scale_block(hf, x->hf_dims[0], x->hf_dims[1], b);
    const uint64_t want_dims[2] = { (x->hf_dims[0] + b[0] - 1) / b[0], (x->hf_dims[1] + b[1] - 1) / b[1] };
    if (!sc) {
        accel_errf(err, errlen, "%s: tensor %s is missing (the scales of %s %s)", hf->dir, name, i8 ? "INT8" : "FP8",
                   x->hf);
        return ACCEL_ERR_NOT_FOUND;
    }
    const bool one = want_dims[0] == 1 && want_dims[1] == 1;
    const bool shaped = one ? sc->numel == 1 && sc->ndim <= 2
                            : sc->ndim == 2 && sc->dims[0] == want_dims[0] && sc->dims[1] == want_dims[1];
    if (!shaped || (sc->dtype != ACCEL_ST_F32 && sc->dtype != ACCEL_ST_BF16 && sc->dtype != ACCEL_ST_F16)) {
        shape_text(have, sizeof have, sc->ndim, sc->dims);
        shape_text(want, sizeof want, one ? 0 : 2, want_dims);
        accel_errf(err, errlen, "%s: tensor %s is %s %s, but the %llu x %llu blocks of %s need F32, BF16 or F16 %s",
                   hf->dir, name, accel_st_dtype_name(sc->dtype), have, (unsigned long long)b[0],
                   (unsigned long long)b[1], x->hf, want);
        return ACCEL_ERR_SHAPE;
    }
    return ACCEL_OK;
}

/* An 8-bit weight read into m [rows, cols] (the file's order) times its blocks' scales. */
static accel_status_t fp8_scale(accel_hf_t *hf, const entry_t *x, float *m)
{
    char name[ACCEL_HF_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s%s", x->hf, hf->q.scale);
    int s = 0;
    const accel_st_tensor_t *sc = find_tensor(hf, name, &s);
    const uint64_t rows = x->hf_dims[0], cols = x->hf_dims[1];
    uint64_t b[2];
    scale_block(hf, rows, cols, b);
    const uint64_t sc_cols = (cols + b[1] - 1) / b[1];
    float *scale = malloc(sizeof(float) * (size_t)sc->numel);
    if (!scale) return ACCEL_ERR_NOMEM;
    accel_status_t st = accel_st_read(hf->shards[s], sc, 0, sc->numel, scale);
    for (uint64_t r = 0; st == ACCEL_OK && r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) m[r * cols + c] *= scale[(r / b[0]) * sc_cols + c / b[1]];
    free(scale);
    return st;
}

/* compressed-tensors' X.weight_packed for entry x when X.weight is not in the files: x then names
 * it and reads it dequantized (NULL: neither is there). */
static const accel_st_tensor_t *packed_tensor(const accel_hf_t *hf, entry_t *x)
{
    const size_t len = strlen(x->hf);
    if (len < 7 || strcmp(x->hf + len - 7, ".weight") || len + 8 > ACCEL_HF_NAME_MAX) return NULL;
    char name[ACCEL_HF_NAME_MAX];
    snprintf(name, sizeof name, "%s_packed", x->hf);
    const accel_st_tensor_t *t = find_tensor(hf, name, NULL);
    if (t) {
        memcpy(x->hf, name, strlen(name) + 1);
        x->packed = true;
    }
    return t;
}

/* The name of a packed weight's companion (X.weight_scale, X.weight_shape) from X.weight_packed. */
static void packed_part(const entry_t *x, const char *part, char *name, size_t len)
{
    snprintf(name, len, "%.*s_%s", (int)(strlen(x->hf) - 7), x->hf, part);
}

/* A packed weight: a matrix read by rows (its place in accel: rows, or rows permuted), I32 words
 * [rows, cols bits / 32] (rows and groups of whole words), X.weight_shape [rows, cols] as
 * config.json gives them, and X.weight_scale F32, BF16 or F16 [rows, cols / group] (one a row:
 * [rows, 1]). */
/* MXFP4's and NVFP4's sixteen values (e2m1: a sign, two exponent bits, one mantissa bit), as transformers'
 * FP4_VALUES. */
static const float g_fp4[16] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                                 -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f };

/* A companion of packed weight x (X.weight_scale, ...): present, of dtype dt (or a float when
 * dt is F32) and shape [R, n] (n 0: one number). */
static accel_status_t check_companion(const accel_hf_t *hf, const entry_t *x, const char *part, accel_st_dtype_t dt,
                                      uint64_t R, uint64_t n, char *err, size_t errlen)
{
    char name[ACCEL_HF_NAME_MAX + 16], have[64], want[64];
    packed_part(x, part, name, sizeof name);
    const accel_st_tensor_t *c = find_tensor(hf, name, NULL);
    if (!c) {
        accel_errf(err, errlen, "%s: tensor %s is missing (the %s of %s)", hf->dir, name, part, x->hf);
        return ACCEL_ERR_NOT_FOUND;
    }
    const bool typed = dt == ACCEL_ST_F32 ? c->dtype == ACCEL_ST_F32 || c->dtype == ACCEL_ST_BF16 || c->dtype == ACCEL_ST_F16
                                          : c->dtype == dt;
    if (!typed || (n ? c->ndim != 2 || c->dims[0] != R || c->dims[1] != n : c->numel != 1)) {
        shape_text(have, sizeof have, c->ndim, c->dims);
        snprintf(want, sizeof want, n ? "[%llu, %llu]" : "one number", (unsigned long long)R, (unsigned long long)n);
        accel_errf(err, errlen, "%s: tensor %s is %s %s, where %s's %s is %s %s", hf->dir, name,
                   accel_st_dtype_name(c->dtype), have, x->hf, part, dt == ACCEL_ST_F32 ? "F32, BF16 or F16" :
                   accel_st_dtype_name(dt), want);
        return ACCEL_ERR_SHAPE;
    }
    return ACCEL_OK;
}

/* An NVFP4 weight [R, C]: U8 [R, C / 2] two e2m1 values a byte (the first in the low bits), F8_E4M3
 * scales [R, C / 16] and one global scale (X.weight_global_scale). */
static accel_status_t check_nvfp4(const accel_hf_t *hf, const entry_t *x, const accel_st_tensor_t *t, char *err,
                                  size_t errlen)
{
    const uint64_t R = x->hf_dims[0], C = x->hf_dims[1];
    char have[64];
    if (C % 16) {
        accel_errf(err, errlen, "%s: tensor %s has rows of %llu values, not whole groups of 16 (NVFP4's)", hf->dir,
                   x->hf, (unsigned long long)C);
        return ACCEL_ERR_SHAPE;
    }
    if (t->dtype != ACCEL_ST_U8 || t->ndim != 2 || t->dims[0] != R || t->dims[1] != C / 2) {
        shape_text(have, sizeof have, t->ndim, t->dims);
        accel_errf(err, errlen, "%s: tensor %s is %s %s, but NVFP4 values of a [%llu, %llu] weight pack into U8 "
                   "[%llu, %llu]", hf->dir, x->hf, accel_st_dtype_name(t->dtype), have, (unsigned long long)R,
                   (unsigned long long)C, (unsigned long long)R, (unsigned long long)(C / 2));
        return ACCEL_ERR_SHAPE;
    }
    accel_status_t st = check_companion(hf, x, "scale", ACCEL_ST_F8_E4M3, R, C / 16, err, errlen);
    return st == ACCEL_OK ? check_companion(hf, x, "global_scale", ACCEL_ST_F32, R, 0, err, errlen) : st;
}

static accel_status_t check_packed(const accel_hf_t *hf, const entry_t *x, const accel_st_tensor_t *t, char *err,
                                   size_t errlen)
{
    const bool rows = x->layout == L_ROWS || x->layout == L_ROPE_PAIRS || x->layout == L_MLA_Q || x->layout == L_MLA_KV;
    if (!rows || x->hf_ndim != 2) {
        accel_errf(err, errlen, "%s: tensor %s is a packed weight where accel reads them as matrices only",
                   hf->dir, x->hf);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (hf->q.nvfp4) return check_nvfp4(hf, x, t, err, errlen);
    const uint64_t R = x->hf_dims[0], C = x->hf_dims[1], G = hf->q.ct[1] ? (uint64_t)hf->q.ct[1] : C;
    const uint64_t words = (C * (uint64_t)hf->q.ct[0] + 31) / 32, groups = (C + G - 1) / G, per = 32 / (uint64_t)hf->q.ct[0];
    char name[ACCEL_HF_NAME_MAX + 8], have[64], want[64];
    if (C % per || G % per) {       /* every word's values in one group and one row (real releases' are) */
        accel_errf(err, errlen, "%s: tensor %s packs %llu values a word into rows of %llu by groups of %llu: accel "
                   "reads rows and groups of whole words", hf->dir, x->hf, (unsigned long long)per,
                   (unsigned long long)C, (unsigned long long)G);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (t->dtype != ACCEL_ST_I32 || t->ndim != 2 || t->dims[0] != R || t->dims[1] != words) {
        shape_text(have, sizeof have, t->ndim, t->dims);
        accel_errf(err, errlen, "%s: tensor %s is %s %s, but %d-bit values of a [%llu, %llu] weight pack into I32 "
                   "[%llu, %llu]", hf->dir, x->hf, accel_st_dtype_name(t->dtype), have, hf->q.ct[0],
                   (unsigned long long)R, (unsigned long long)C, (unsigned long long)R, (unsigned long long)words);
        return ACCEL_ERR_SHAPE;
    }
    packed_part(x, "shape", name, sizeof name);
    int s = 0;
    const accel_st_tensor_t *sh = find_tensor(hf, name, &s);
    float dims[2] = { 0, 0 };
    if (!sh || sh->numel != 2 || accel_st_read(hf->shards[s], sh, 0, 2, dims) != ACCEL_OK ||
        dims[0] != (float)R || dims[1] != (float)C) {
        accel_errf(err, errlen, "%s: tensor %s is %s, but config.json gives [%llu, %llu]", hf->dir, name,
                   !sh ? "missing" : "not that shape", (unsigned long long)R, (unsigned long long)C);
        return sh ? ACCEL_ERR_SHAPE : ACCEL_ERR_NOT_FOUND;
    }
    packed_part(x, "scale", name, sizeof name);
    const accel_st_tensor_t *sc = find_tensor(hf, name, NULL);
    if (!sc) {
        accel_errf(err, errlen, "%s: tensor %s is missing (the scales of %s)", hf->dir, name, x->hf);
        return ACCEL_ERR_NOT_FOUND;
    }
    if (sc->ndim != 2 || sc->dims[0] != R || sc->dims[1] != groups ||
        (sc->dtype != ACCEL_ST_F32 && sc->dtype != ACCEL_ST_BF16 && sc->dtype != ACCEL_ST_F16)) {
        shape_text(have, sizeof have, sc->ndim, sc->dims);
        snprintf(want, sizeof want, "[%llu, %llu]", (unsigned long long)R, (unsigned long long)groups);
        accel_errf(err, errlen, "%s: tensor %s is %s %s, but %s's scales are F32, BF16 or F16 %s", hf->dir, name,
                   accel_st_dtype_name(sc->dtype), have, x->hf, want);
        return ACCEL_ERR_SHAPE;
    }
    return ACCEL_OK;
}

/* n words of 32 / BITS values each (the first in the low bits, stored as value + 2^(BITS - 1)) into
 * m, every wpg words one group times its scale in sc. */
static inline void unpack_words(float *m, const uint32_t *w, const float *sc, uint64_t n, uint64_t wpg, int BITS)
{
    const int per = 32 / BITS, offset = 1 << (BITS - 1);
    const uint32_t mask = (1u << BITS) - 1;
    for (uint64_t k = 0; k < n; k++) {
        const float s = sc[k / wpg];
        for (int j = 0; j < per; j++) m[k * (uint64_t)per + j] = (float)((int)((w[k] >> (BITS * j)) & mask) - offset) * s;
    }
}

/* A packed weight read into m [rows, cols] (the file's order): 32 / bits values a word, times their
 * group's scale (the values' count a word a constant the compiler unrolls). */
/* An NVFP4 weight (check_nvfp4) into m [R, C]: each value times its group's scale over the global one. */
static accel_status_t read_nvfp4(const accel_hf_t *hf, const entry_t *x, const accel_st_tensor_t *t, int s, float *m)
{
    const uint64_t R = x->hf_dims[0], C = x->hf_dims[1];
    char name[ACCEL_HF_NAME_MAX + 16];
    int ss = 0, gs = 0;
    packed_part(x, "scale", name, sizeof name);
    const accel_st_tensor_t *sc = find_tensor(hf, name, &ss);
    packed_part(x, "global_scale", name, sizeof name);
    const accel_st_tensor_t *gt = find_tensor(hf, name, &gs);
    float global = 1.0f, *scale = malloc(sizeof(float) * (size_t)(sc->numel + C / 2));
    float *bytes = scale ? scale + sc->numel : NULL;
    accel_status_t st = scale ? accel_st_read(hf->shards[gs], gt, 0, 1, &global) : ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK) st = accel_st_read(hf->shards[ss], sc, 0, sc->numel, scale);
    for (uint64_t r = 0; st == ACCEL_OK && r < R; r++) {
        st = accel_st_read(hf->shards[s], t, r * (C / 2), (r + 1) * (C / 2), bytes);
        for (uint64_t c = 0; st == ACCEL_OK && c < C; c++) {
            const unsigned b = (unsigned)bytes[c / 2], v = c & 1 ? b >> 4 : b & 15;
            m[r * C + c] = g_fp4[v] * (scale[r * (C / 16) + c / 16] / global);  /* compressed-tensors' order */
        }
    }
    free(scale);
    return st;
}

static accel_status_t read_packed(const accel_hf_t *hf, const entry_t *x, const accel_st_tensor_t *t, int s,
                                  float *m)
{
    if (hf->q.nvfp4) return read_nvfp4(hf, x, t, s, m);
    const uint64_t R = x->hf_dims[0], C = x->hf_dims[1], W = t->dims[1];
    const int bits = hf->q.ct[0];
    const uint64_t G = hf->q.ct[1] ? (uint64_t)hf->q.ct[1] : C;
    char name[ACCEL_HF_NAME_MAX + 8];
    packed_part(x, "scale", name, sizeof name);
    int ss = 0;
    const accel_st_tensor_t *sc = find_tensor(hf, name, &ss);
    float *scale = malloc(sizeof(float) * (size_t)sc->numel);
    uint32_t *w = malloc(sizeof(uint32_t) * (size_t)W);
    accel_status_t st = scale && w ? accel_st_read(hf->shards[ss], sc, 0, sc->numel, scale) : ACCEL_ERR_NOMEM;
    for (uint64_t r = 0; st == ACCEL_OK && r < R; r++) {    /* check_packed: whole words in a group */
        st = accel_st_read_u32(hf->shards[s], t, r * W, (r + 1) * W, w);
        if (bits == 4) unpack_words(m + r * C, w, scale + r * sc->dims[1], W, G / 8, 4);
        else unpack_words(m + r * C, w, scale + r * sc->dims[1], W, G / 4, 8);
    }
    free(scale);
    free(w);
    return st;
}

/* The file's tensor t for entry x: the shape config.json gives it, and a dtype of its kind (MXFP4's
 * blocks and scales U8, with the scales beside them; FP8 weights with theirs, check_fp8; weights
 * F32, BF16 or F16). */
static accel_status_t check_entry(accel_hf_t *hf, const entry_t *x, const accel_st_tensor_t *t, char *err,
                                  size_t errlen)
{
    if (x->packed) return check_packed(hf, x, t, err, errlen);
    char have[96], want[96];
    bool same = t->ndim == x->hf_ndim;
    for (int k = 0; same && k < t->ndim; k++) same = t->dims[k] == x->hf_dims[k];
    if (!same) {
        shape_text(have, sizeof have, t->ndim, t->dims);
        shape_text(want, sizeof want, x->hf_ndim, x->hf_dims);
        accel_errf(err, errlen, "%s: tensor %s has shape %s, but config.json gives %s", hf->dir, x->hf, have, want);
        return ACCEL_ERR_SHAPE;
    }
    if (t->dtype == ACCEL_ST_F8_E4M3 || t->dtype == ACCEL_ST_I8) return check_fp8(hf, x, t, err, errlen);
    const bool mxfp4 = x->layout == L_MXFP4 || x->layout == L_MXFP4_GLU;
    if (mxfp4 != (t->dtype == ACCEL_ST_U8)) {
        accel_errf(err, errlen, "%s: tensor %s is %s, where accel reads %s", hf->dir, x->hf,
                   accel_st_dtype_name(t->dtype), mxfp4 ? "MXFP4's packed bytes (U8)" : "weights (F32, BF16 or F16)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!mxfp4) return ACCEL_OK;
    char name[ACCEL_HF_NAME_MAX + 8];
    scales_name(x, name, sizeof name);
    const accel_st_tensor_t *sc = find_tensor(hf, name, NULL);
    if (!sc) {
        accel_errf(err, errlen, "%s: tensor %s is missing (the scales of %s)", hf->dir, name, x->hf);
        return ACCEL_ERR_NOT_FOUND;
    }
    if (sc->ndim != 3 || sc->dims[0] != x->hf_dims[0] || sc->dims[1] != x->hf_dims[1] || sc->dims[2] != x->hf_dims[2] ||
        sc->dtype != ACCEL_ST_U8) {
        shape_text(have, sizeof have, sc->ndim, sc->dims);
        shape_text(want, sizeof want, 3, x->hf_dims);
        accel_errf(err, errlen, "%s: tensor %s is %s %s, but its blocks %s need U8 %s", hf->dir, name,
                   accel_st_dtype_name(sc->dtype), have, x->hf, want);
        return ACCEL_ERR_SHAPE;
    }
    return ACCEL_OK;
}

accel_status_t accel_hf_open(const char *path, accel_hf_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (accel_peft_is_adapter(path)) return accel_hf_open_adapter(path, NULL, out, err, errlen);
    if (!exists(path)) {
        accel_errf(err, errlen, "%s: %s\n--> hint: pass a Hugging Face model directory (config.json + "
                "model.safetensors)", path, strerror(ENOENT));
        return ACCEL_ERR_NOT_FOUND;
    }
    accel_hf_t *hf = calloc(1, sizeof *hf);
    if (!hf) return ACCEL_ERR_NOMEM;
    accel_status_t st = ACCEL_OK;
    const char *file = NULL;
    if (is_dir(path)) {
        snprintf(hf->dir, sizeof hf->dir, "%s", path);
    } else {
        const char *slash = strrchr(path, '/');
        snprintf(hf->dir, sizeof hf->dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
        file = slash ? slash + 1 : path;
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/config.json", hf->dir);
    json_error_t je;
    json_t *root = load_python_json(p, &je);
    if (!root) {
        accel_errf(err, errlen, "%s: %s\n--> hint: a Hugging Face model directory holds config.json and "
                "model.safetensors (save_pretrained writes them)", p, exists(p) ? je.text : strerror(ENOENT));
        st = exists(p) ? ACCEL_ERR_CORRUPT : ACCEL_ERR_NOT_FOUND;
        goto fail;
    }
    accel_config_defaults(&hf->cfg);
    /* Gemma 3 4B and up, Ministral 3, Mistral Small 3.1 and 4: a vision tower beside the language
     * model, whose config is text_config (its model_type names the family); accel imports the
     * language model. */
    json_t *archs = json_object_get(root, "architectures");
    const char *a0 = json_is_array(archs) ? json_string_value(json_array_get(archs, 0)) : NULL;
    const multimodal_t *mm = NULL;
    for (size_t i = 0; a0 && i < sizeof g_multimodal / sizeof g_multimodal[0]; i++)
        if (!strcmp(a0, g_multimodal[i].arch)) mm = &g_multimodal[i];
    if (mm) {
        json_t *text = json_deep_copy(json_object_get(root, "text_config"));
        if (!text && mm->flat) {        /* the text keys at the top level (the vision tower's apart) */
            text = json_deep_copy(root);
            json_object_del(text, "vision_config");
            json_object_set_new(text, "model_type", json_string(mm->text_type));
        }
        const char *tt = json_is_object(text) ? jstr(text, "model_type") : NULL;
        const char *ta = !tt || (mm->text_type && !strcmp(tt, mm->text_type)) ? mm->text_arch : NULL;
        for (size_t i = 0; tt && i < sizeof g_archs / sizeof g_archs[0]; i++)
            if (!strcmp(tt, g_archs[i].model_type)) ta = g_archs[i].arch;
        if (!json_is_object(text) || !ta) {
            accel_errf(err, errlen, "%s: %s %s%s", p, mm->arch, json_is_object(text) ? "with a language model accel "
                       "does not run: text_config model_type " : "without a text_config object", tt ? tt : "");
            st = json_is_object(text) ? ACCEL_ERR_UNSUPPORTED : ACCEL_ERR_CORRUPT;
            json_decref(text);
            json_decref(root);
            goto fail;
        }
        json_object_set_new(text, "architectures", json_pack("[s]", ta));
        json_t *defaults = ta == mm->text_arch && mm->text_defaults ? json_loads(mm->text_defaults, 0, NULL) : NULL;
        const char *key;
        json_t *value;
        json_object_foreach(defaults, key, value) {
            json_t *rp = json_object_get(text, "rope_parameters"), *rs = json_object_get(text, "rope_scaling");
            if (!json_object_get(text, key) && !json_object_get(rp, key) && !json_object_get(rs, key))
                json_object_set(text, key, value);
        }
        json_decref(defaults);
        if (!json_object_get(text, "tie_word_embeddings"))   /* the top level's, else the wrapper's default */
            json_object_set_new(text, "tie_word_embeddings",
                                json_boolean(jbool(root, "tie_word_embeddings", mm->tied)));
        json_t *quant = json_object_get(root, "quantization_config");
        if (quant && !json_object_get(text, "quantization_config"))    /* Kimi K2.5's: the whole model's */
            json_object_set(text, "quantization_config", quant);
        json_decref(root);
        root = text;
        hf->multimodal = mm->arch;
    }
    st = translate_config(root, p, &hf->cfg, &hf->arch, err, errlen);
    if (st == ACCEL_OK)
        st = translate_quantization(root, p, hf->arch, &hf->q, err, errlen);
    if (st == ACCEL_OK && (!strcmp(hf->arch, "Glm4MoeForCausalLM") || !strcmp(hf->arch, "DeepseekV3ForCausalLM") ||
                           !strcmp(hf->arch, "DeepseekV2ForCausalLM") || !strcmp(hf->arch, "Glm4MoeLiteForCausalLM") ||
                           !strcmp(hf->arch, "Mistral4ForCausalLM") || !strcmp(hf->arch, "YoutuForCausalLM"))) {
        const bool none = !strcmp(hf->arch, "Mistral4ForCausalLM") || !strcmp(hf->arch, "YoutuForCausalLM");
        const long long mtp = jint(root, "num_nextn_predict_layers",     /* Mistral Small 4, Youtu have none */
                                   jint(root, "num_mtp_layers", none ? 0 : 1));
        hf->mla_pairs = jbool(root, "rope_interleave", true);
        hf->mtp_layers = mtp > 0 && mtp < 1000 ? (int)mtp : 0;
    }
    if (st == ACCEL_OK && hf->multimodal && !strcmp(hf->multimodal, "GlmOcrForConditionalGeneration")) {
        const long long mtp = jint(root, "num_nextn_predict_layers", 1);   /* its files' layer after the last */
        hf->mtp_layers = mtp > 0 && mtp < 1000 ? (int)mtp : 0;
    }
    json_decref(root);
    if (st != ACCEL_OK) goto fail;
    const char *family = hf->arch;              /* the language model's */
    if (hf->multimodal) hf->arch = hf->multimodal;
    if (file) {
        st = open_shard(hf, file, err, errlen);
    } else {
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", hf->dir);
        if (exists(p)) st = open_index(hf, p, err, errlen);
        else {
            snprintf(p, sizeof p, "%s/model.safetensors", hf->dir);
            if (!exists(p)) {
                accel_errf(err, errlen, "%s has neither model.safetensors nor model.safetensors.index.json\n--> hint: "
                        "save the model with save_pretrained(dir, safe_serialization=True); accel does not read "
                        "pytorch_model.bin", hf->dir);
                st = ACCEL_ERR_NOT_FOUND;
            } else {
                st = open_shard(hf, "model.safetensors", err, errlen);
            }
        }
    }
    if (st != ACCEL_OK) goto fail;
    dims_t d = dims_of(&hf->cfg.model);
    d.phi3 = !strcmp(family, "Phi3ForCausalLM");
    d.clovax = !strcmp(family, "HyperCLOVAXForCausalLM");
    d.glm = (d.glm && !d.phi3 && !d.clovax) || !strcmp(family, "GlmForCausalLM") || !strcmp(family, "Glm4ForCausalLM");
    d.granite_moe |= !strcmp(family, "GraniteMoeForCausalLM") || !strcmp(family, "GraniteMoeSharedForCausalLM") ||
                     !strcmp(family, "GraniteMoeSWAForCausalLM");
    d.mxfp4 = hf->q.mxfp4;
    d.mla_pairs = d.mla && hf->mla_pairs;
    d.fused = d.E && !d.oss && !d.llama4 && (any_tensor_ends(hf, ".mlp.experts.gate_up_proj") ||
                                any_tensor_ends(hf, ".feed_forward.experts.gate_up_proj") ||
                                any_tensor_ends(hf, ".block_sparse_moe.experts.gate_up_proj"));
    d.exaone_moe = !strcmp(family, "ExaoneMoeForCausalLM");    /* their names: the file's family says */
    d.minimax = !strcmp(family, "MiniMaxM2ForCausalLM");
    d.sc2 = !strcmp(family, "Starcoder2ForCausalLM");
    d.neox = !strcmp(family, "GPTNeoXForCausalLM");
    d.phi = !strcmp(family, "PhiForCausalLM");
    d.gptj = !strcmp(family, "GPTJForCausalLM");
    d.llama4 = !strcmp(family, "Llama4ForCausalLM");
    d.vault = !strcmp(family, "VaultGemmaForCausalLM");
    d.rope_pairs = d.glm || d.ernie || d.cohere || d.gptj || d.llama4;
    d.bamba = !strcmp(family, "BambaForCausalLM");
    d.jamba = !strcmp(family, "JambaForCausalLM");
    d.granite_h = d.mamba && !d.nemh && !d.bamba;
    d.granite_moe = d.granite_moe && !d.bamba;
    if (d.bamba || d.jamba) d.glm = d.rope_pairs = false;
    d.exaone3 = !strcmp(family, "ExaoneForCausalLM");
    d.names = d.neox ? F_NEOX : d.phi ? F_PHI : d.gptj ? F_GPTJ : d.lfm2 ? F_LFM2 : d.nemh ? F_NEMH
            : d.bamba || d.jamba ? F_BAMBA : d.exaone3 ? F_EXAONE3 : 0;
    d.lfm3 = !strcmp(family, "Lfm3ForCausalLM");
    d.next = !strcmp(family, "Qwen3NextForCausalLM");
    d.rope_pairs |= !strcmp(family, "Ernie4_5ForCausalLM") ||   /* a Llama with its pairs interleaved */
                    !strcmp(family, "HeliumForCausalLM");         /* (Cohere's: dims_of) */
    hf->ne = entries_of(&d, &hf->e);
    hf->nt = accel_hf_accel_tensors(&hf->cfg.model, &hf->t);
    if (hf->ne < 0 || hf->nt < 0) { st = ACCEL_ERR_NOMEM; goto fail; }
    snprintf(hf->head_name, sizeof hf->head_name, d.neox ? "embed_out.weight" : "lm_head.weight");
    if (hf->multimodal) rename_language_model(hf);
    /* Every tensor accel needs, with the shape the configuration gives it. */
    for (int i = 0; i < hf->ne; i++) {
        entry_t *x = &hf->e[i];
        const accel_st_tensor_t *t = find_tensor(hf, x->hf, NULL);
        if (!t && (hf->q.ct[0] || hf->q.nvfp4)) t = packed_tensor(hf, x);     /* compressed-tensors: X.weight_packed */
        if (t && d.fused && x->layout == L_STACKED && t->ndim == 3 && t->dims[0] == x->hf_dims[0] &&
            t->dims[1] == x->hf_dims[2] && t->dims[2] == x->hf_dims[1] && t->dims[1] != t->dims[2]) {
            x->layout = L_EXPERTS;      /* stacked experts as x @ W, [E, in, out]: Qwen3-VL-MoE's hub
                                         * files (transformers transposes them where the shapes differ) */
            hf_shape(&d, x);
        }
        if (!t) {
            accel_errf(err, errlen, "%s: tensor %s is missing (accel's %s)\n--> hint: the weights do not match "
                    "config.json, or the save is incomplete", hf->dir, x->hf, x->accel);
            st = ACCEL_ERR_NOT_FOUND;
            goto fail;
        }
        st = check_entry(hf, x, t, err, errlen);
        if (st != ACCEL_OK) goto fail;
    }
    /* Tensors accel has no place for would be silently dropped: refuse them (a tied head HF also
     * stored is the exception: transformers ties it too). The names accel reads, sorted: a
     * mixture of experts has tens of thousands (Qwen3-30B-A3B: 18,867). */
    const char **names = malloc(sizeof *names * (size_t)(hf->ne ? hf->ne : 1));
    if (!names) { st = ACCEL_ERR_NOMEM; goto fail; }
    int vision = 0, mtp = 0, act_scales = 0;
    for (int k = 0; k < hf->ne; k++) names[k] = hf->e[k].hf;
    qsort(names, (size_t)hf->ne, sizeof *names, cmp_names);
    for (int s = 0; s < hf->nshards && st == ACCEL_OK; s++)
        for (int i = 0; i < accel_st_count(hf->shards[s]) && st == ACCEL_OK; i++) {
            const char *name = accel_st_at(hf->shards[s], i)->name;
            bool used = bsearch(&name, names, (size_t)hf->ne, sizeof *names, cmp_names) != NULL;
            /* Companions of a tensor accel reads: MXFP4 scales of their blocks, 8-bit weights'
             * scales, packed weights' scales, shapes and global scales, static activation scales
             * (not needed: counted). */
            if (!used && hf->q.mxfp4) used = companion_of(names, hf->ne, name, "_scales", "_blocks");
            if (!used && hf->q.scale) used = companion_of(names, hf->ne, name, hf->q.scale, "");
            static const char *const packed[] = { ".weight_scale", ".weight_shape", ".weight_global_scale" };
            for (size_t k = 0; !used && (hf->q.ct[0] || hf->q.nvfp4) && k < sizeof packed / sizeof *packed; k++)
                used = companion_of(names, hf->ne, name, packed[k], ".weight_packed");
            if (!used && hf->q.nvfp4 && companion_of(names, hf->ne, name, ".input_global_scale", ".weight_packed"))
                used = true, act_scales++;
            static const char *const activation[] = { ".activation_scale", ".input_scale" };
            for (size_t k = 0; !used && hf->q.block[0] && k < sizeof activation / sizeof *activation; k++)
                if (companion_of(names, hf->ne, name, activation[k], ".weight")) used = true, act_scales++;
            for (size_t k = 0; k < sizeof g_ignored_suffixes / sizeof *g_ignored_suffixes && !used; k++) {
                size_t a = strlen(name), b = strlen(g_ignored_suffixes[k]);
                used = a >= b && !strcmp(name + a - b, g_ignored_suffixes[k]);
            }
            if (!used && hf->multimodal && is_vision_tensor(name)) {
                vision++;
                used = true;
            }
            if (!used && (!strcmp(family, "ExaoneMoeForCausalLM") || !strcmp(family, "MellumForCausalLM") ||
                          !strncmp(family, "Qwen3_5", 7) || !strcmp(family, "Qwen3NextForCausalLM") ||
                          !strcmp(family, "NemotronHForCausalLM")) &&
                !strncmp(name, "mtp.", 4)) {
                mtp++;                          /* K-EXAONE's, Mellum's, Qwen3.5's MTP block (transformers ignores mtp.*) */
                used = true;
            }
            int layer = -1, at = 0;             /* GLM-4.5's MTP blocks: model.layers.L.. (GLM-4.5V's
                                                 * under model.language_model.) */
            const char *lm = strstr(name, "model.layers.");
            if (!used && hf->mtp_layers && lm && sscanf(lm, "model.layers.%d.%n", &layer, &at) == 1 && at > 0 &&
                layer >= hf->cfg.model.layers && layer < hf->cfg.model.layers + hf->mtp_layers) {
                mtp++;
                used = true;
            }
            if (!used && !strcmp(name, hf->head_name)) {
                st = check_tied_head(hf, accel_st_at(hf->shards[s], i), s, err, errlen);
                used = true;
            }
            if (!used) {
                accel_errf(err, errlen, "%s: tensor %s has no place in accel's %s model\n--> hint: the "
                        "architecture has parts accel does not compute (biases, extra norms, ...)",
                        accel_st_path(hf->shards[s]), name, hf->cfg.model.name);
                st = ACCEL_ERR_UNSUPPORTED;
            }
        }
    free(names);
    if (st != ACCEL_OK) goto fail;
    if (vision)
        ACCEL_INFO("%s: %s: its language model is read, its vision tower and projector (%d tensors) are left "
                   "out (accel trains text)", hf->dir, hf->multimodal, vision);
    if (act_scales)
        ACCEL_INFO("%s: the %d static activation scales (activation_scheme static, input_scale) are left out: "
                   "accel computes with the dequantized weights, as transformers' dequantize=True", hf->dir, act_scales);
    if (mtp)
        ACCEL_INFO("%s: %s: its multi-token prediction block(s) after layer %d (%d tensors, used for "
                   "speculative decoding) are left out", hf->dir, hf->arch, hf->cfg.model.layers - 1, mtp);
    hf->yaml = accel_config_to_yaml(&hf->cfg);
    if (!hf->yaml) { st = ACCEL_ERR_NOMEM; goto fail; }
    *out = hf;
    return ACCEL_OK;
fail:
    accel_hf_close(hf);
    return st;
}

/* ------------------------------------------------------------------ PEFT LoRA adapters */

/* name's module (".weight", ".weight_packed", ".bias" off) into out. */
static void module_of(const char *name, char *out, size_t len)
{
    static const char *const tails[] = { ".weight_packed", ".weight", ".bias" };
    size_t stem = strlen(name);
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        const size_t n = strlen(name), t = strlen(tails[i]);
        if (n > t && !strcmp(name + n - t, tails[i])) { stem = n - t; break; }
    }
    snprintf(out, len, "%.*s", (int)stem, name);
}

/* A tensor's or module's name without the wrappers that differ between a model's files and the
 * model PEFT wrapped (transformers 5 keeps a VLM's language model under model.language_model.,
 * its files under language_model.model.; GPT-2's hub files lack transformer.). */
static const char *unwrapped(const char *name)
{
    static const char *const wrappers[] = { "model.", "language_model.", "text_model.", "transformer." };
    for (size_t i = 0; i < sizeof wrappers / sizeof *wrappers; i++)
        if (!strncmp(name, wrappers[i], strlen(wrappers[i]))) return unwrapped(name + strlen(wrappers[i]));
    return name;
}

typedef struct {
    char key[ACCEL_PEFT_NAME_MAX + 8]; /* the entry's tensor unwrapped (a packed weight's as X.weight) */
    int entry;
} entry_key_t;

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(((const entry_key_t *)a)->key, ((const entry_key_t *)b)->key);
}

/* The layouts a LoRA module merges into: a matrix the file stores whole, by rows or transposed. */
static bool lora_layout(const entry_t *x)
{
    return x->hf_ndim == 2 && (x->layout == L_ROWS || x->layout == L_T || x->layout == L_ROPE_PAIRS ||
                               x->layout == L_MLA_Q || x->layout == L_MLA_KV || x->layout == L_HEADS_QKV ||
                               x->layout == L_QGATE || x->layout == L_QKVZ || x->layout == L_BA);
}

/* Module i of the adapter on entry x: its shapes against the base tensor's. */
static accel_status_t attach_module(accel_hf_t *hf, entry_t *x, int i, char *err, size_t errlen)
{
    const accel_peft_module_t *m = accel_peft_module(hf->peft, i);
    const char *file = accel_st_path(accel_peft_file(hf->peft));
    char have[96], want[96];
    shape_text(want, sizeof want, x->hf_ndim, x->hf_dims);
    if (m->kind == PEFT_FULL) {
        if (x->layout != L_ROWS && x->layout != L_T) {
            accel_errf(err, errlen, "%s: tensor %s would replace %s, which accel reads rearranged (experts, "
                       "quantized blocks): not merged", file, m->a->name, x->hf);
            return ACCEL_ERR_UNSUPPORTED;
        }
        bool same = m->a->ndim == x->hf_ndim;
        for (int k = 0; same && k < m->a->ndim; k++) same = m->a->dims[k] == x->hf_dims[k];
        if (!same) {
            shape_text(have, sizeof have, m->a->ndim, m->a->dims);
            accel_errf(err, errlen, "%s: tensor %s has shape %s, where the base model's %s is %s%s", file, m->a->name,
                       have, x->hf, want,
                       strstr(x->accel, "wte") || strstr(x->hf, "lm_head") ? "\n--> hint: an adapter trained "
                       "with a resized vocabulary needs the base resized alike; accel does not resize" : "");
            return ACCEL_ERR_SHAPE;
        }
        x->full = i + 1;
        x->packed = false;              /* the adapter's tensor is plain floats */
        return ACCEL_OK;
    }
    const uint64_t in = m->a->dims[1], out = m->b->dims[0];
    const bool t = (x->layout == L_T) != (m->kind == PEFT_EMBEDDING);
    if (!lora_layout(x) || x->hf_dims[0] != (t ? in : out) || x->hf_dims[1] != (t ? out : in)) {
        snprintf(have, sizeof have, "[%llu, %llu]", (unsigned long long)(t ? in : out), (unsigned long long)(t ? out : in));
        accel_errf(err, errlen, "%s: module %s (rank %llu) %s %s, but the base model's %s is %s", file, m->name,
                   (unsigned long long)m->a->dims[0], lora_layout(x) ? "makes a delta of shape" : "cannot merge into "
                   "the way accel reads", lora_layout(x) ? have : "", x->hf, want);
        return ACCEL_ERR_SHAPE;
    }
    x->lora = i + 1;
    return ACCEL_OK;
}

/* A stacked experts parameter's layout: [E, in, out] (x @ W: gpt-oss's, read per expert, and its
 * MXFP4 blocks) or [E, out, in]; -1: not one. */
static int expert_layout(const entry_t *x, uint64_t *in, uint64_t *out)
{
    switch (x->layout) {
    case L_EXPERTS: case L_EXPERTS_GLU: *in = x->hf_dims[1], *out = x->hf_dims[2]; return 1;
    case L_MXFP4: case L_MXFP4_GLU: *out = x->hf_dims[1], *in = x->hf_dims[2] * 32; return 1;
    case L_STACKED: *out = x->hf_dims[1], *in = x->hf_dims[2]; return 0;
    default: return -1;
    }
}

/* A stacked experts parameter's name in transformers 5's model, which PEFT names: the file's, but
 * for MXFP4's blocks (the parameter without _blocks) and the families transformers renames as it
 * loads them (its conversion_mapping). */
static const char *experts_memory_name(const entry_t *x, char *buf, size_t len)
{
    static const char *const renamed[][2] = {
        { "block_sparse_moe.input_linear.weight", "block_sparse_moe.experts.gate_up_proj" },    /* Granite MoE */
        { "block_sparse_moe.output_linear.weight", "block_sparse_moe.experts.down_proj" } };
    const size_t n = strlen(x->hf);
    if ((x->layout == L_MXFP4 || x->layout == L_MXFP4_GLU) && n > 7 && !strcmp(x->hf + n - 7, "_blocks")) {
        snprintf(buf, len, "%.*s", (int)(n - 7), x->hf);
        return buf;
    }
    for (size_t j = 0; j < sizeof renamed / sizeof *renamed; j++) {
        const size_t t = strlen(renamed[j][0]);
        if (n >= t && !strcmp(x->hf + n - t, renamed[j][0])) {
            snprintf(buf, len, "%.*s%s", (int)(n - t), x->hf, renamed[j][1]);
            return buf;
        }
    }
    return x->hf;
}

/* PEFT's LoRA on a stacked experts parameter (target_parameters): module m is the experts module
 * with one ".base_layer" for each of its parameters wrapped after this one (PEFT wraps them in the
 * order the module declares them, the last outermost); A [r E, in] and B [out, r E] must fit one of
 * its parameters; where several fit (square ones), the depth counts from the last. The entry, -1
 * when m is no such module, -2 (err set) when its factors fit none of them. */
static int expert_param(const accel_hf_t *hf, const accel_peft_module_t *m, char *err, size_t errlen)
{
    char module[ACCEL_PEFT_NAME_MAX];
    snprintf(module, sizeof module, "%s", unwrapped(m->name));
    int depth = 0;
    for (size_t n = strlen(module); n > 11 && !strcmp(module + n - 11, ".base_layer"); n -= 11) {
        module[n - 11] = '\0';
        depth++;
    }
    const size_t len = strlen(module);
    int fit[8], all[8], nfit = 0, params = 0;
    for (int k = 0; k < hf->ne; k++) {
        const entry_t *x = &hf->e[k];
        char memory[ACCEL_HF_NAME_MAX + 32];
        const char *name = unwrapped(experts_memory_name(x, memory, sizeof memory));
        uint64_t in = 0, out = 0;
        if (strncmp(name, module, len) || name[len] != '.' || strchr(name + len + 1, '.') || expert_layout(x, &in, &out) < 0)
            continue;
        const uint64_t E = x->hf_dims[0], rE = m->a->dims[0];
        const bool fits = E && rE % E == 0 && m->b->dims[1] == rE && m->a->dims[1] == in && m->b->dims[0] == out;
        if (fits && nfit < 8) fit[nfit++] = k;
        if (params < 8) all[params++] = k;
    }
    if (!params) return -1;
    if (m->mag) {
        accel_errf(err, errlen, "%s: module %s: DoRA on stacked experts, which accel does not merge",
                   accel_st_path(accel_peft_file(hf->peft)), m->name);
        return -2;
    }
    if (nfit == 1) return fit[0];
    const int k = depth < params ? all[params - 1 - depth] : -1;
    for (int j = 0; j < nfit; j++)
        if (fit[j] == k) return k;
    {
        accel_errf(err, errlen, "%s: module %s: LoRA factors A %llu x %llu, B %llu x %llu fit none of the stacked "
                   "experts parameters of %s", accel_st_path(accel_peft_file(hf->peft)), m->name,
                   (unsigned long long)m->a->dims[0], (unsigned long long)m->a->dims[1],
                   (unsigned long long)m->b->dims[0], (unsigned long long)m->b->dims[1], module);
        return -2;
    }
    return fit[nfit - 1 - depth];
}

/* Every module and whole tensor of the adapter onto the entries that read its base tensor; one
 * with no place in accel's model is refused (the vision tower's go with the tower). */
static accel_status_t attach_adapter(accel_hf_t *hf, char *err, size_t errlen)
{
    entry_key_t *keys = malloc(sizeof *keys * (size_t)(hf->ne ? hf->ne : 1));
    if (!keys) return ACCEL_ERR_NOMEM;
    for (int k = 0; k < hf->ne; k++) {
        const char *n = unwrapped(hf->e[k].hf);
        const size_t len = strlen(n);
        const bool packed = hf->e[k].packed && len > 7 && !strcmp(n + len - 7, "_packed");
        snprintf(keys[k].key, sizeof keys[k].key, "%.*s", (int)(packed ? len - 7 : len), n);
        keys[k].entry = k;
    }
    qsort(keys, (size_t)hf->ne, sizeof *keys, cmp_keys);
    const char *file = accel_st_path(accel_peft_file(hf->peft));
    accel_status_t st = ACCEL_OK;
    int merged = 0, whole = 0, vision = 0;
    for (int i = 0; st == ACCEL_OK && i < accel_peft_count(hf->peft); i++) {
        const accel_peft_module_t *m = accel_peft_module(hf->peft, i);
        entry_key_t key;
        snprintf(key.key, sizeof key.key, "%s%s", unwrapped(m->name), m->kind == PEFT_FULL ? "" : ".weight");
        const entry_key_t *hit = bsearch(&key, keys, (size_t)hf->ne, sizeof *keys, cmp_keys);
        while (hit && hit > keys && !strcmp(hit[-1].key, key.key)) hit--;
        if (!hit && m->kind == PEFT_LORA) {
            const int e = expert_param(hf, m, err, errlen);
            if (e == -2) { st = ACCEL_ERR_SHAPE; break; }
            if (e >= 0) {
                hf->e[e].lora = i + 1;
                merged++;
                continue;
            }
        }
        if (!hit) {
            if (hf->multimodal && is_vision_tensor(m->name)) { vision++; continue; }
            const bool head = !strcmp(key.key, "lm_head.weight") && hf->cfg.model.tie_embeddings;
            accel_errf(err, errlen, "%s: %s %s has no place in accel's %s model%s", file, m->kind == PEFT_FULL ?
                       "tensor" : "module", m->name, hf->cfg.model.name, head ? ": the base ties its LM head to the "
                       "embedding (tie_word_embeddings), so accel keeps no head of its own to change" :
                       "\n--> hint: is this the adapter of this base model?");
            st = ACCEL_ERR_UNSUPPORTED;
            break;
        }
        for (; st == ACCEL_OK && hit < keys + hf->ne && !strcmp(hit->key, key.key); hit++)
            st = attach_module(hf, &hf->e[hit->entry], i, err, errlen);
        if (m->kind == PEFT_FULL) whole++;
        else merged++;
    }
    free(keys);
    char more[192] = "";
    if (whole) snprintf(more, sizeof more, ", %d whole tensor(s) in place of the base's", whole);
    if (vision)
        snprintf(more + strlen(more), sizeof more - strlen(more), ", the vision tower's %d left out with the tower", vision);
    if (st == ACCEL_OK)
        ACCEL_INFO("%s: LoRA adapter merged into %s: %d module(s)%s", accel_peft_dir(hf->peft), hf->dir, merged, more);
    return st;
}

accel_status_t accel_hf_open_adapter(const char *adapter, const char *base, accel_hf_t **out, char *err,
                                     size_t errlen)
{
    *out = NULL;
    accel_peft_t *peft = NULL;
    char dir[8400], msg[4096];
    accel_status_t st = accel_peft_open(adapter, &peft, err, errlen);
    if (st == ACCEL_OK) st = accel_peft_base(peft, base, dir, sizeof dir, err, errlen);
    if (st == ACCEL_OK && (st = accel_hf_open(dir, out, msg, sizeof msg)) != ACCEL_OK)
        accel_errf(err, errlen, "the adapter %s's base model: %s", adapter, msg);
    if (st != ACCEL_OK) {
        accel_peft_close(peft);
        return st;
    }
    (*out)->peft = peft;
    if ((st = attach_adapter(*out, err, errlen)) != ACCEL_OK) {
        accel_hf_close(*out);
        *out = NULL;
    }
    return st;
}

bool accel_hf_is_adapter(const char *path) { return accel_peft_is_adapter(path); }

accel_status_t accel_hf_base_of(const char *path, char *out, size_t len, char *err, size_t errlen)
{
    if (!accel_peft_is_adapter(path)) {
        if (!is_dir(path) || !accel_hf_is_model(path)) {
            accel_errf(err, errlen, "%s is not a Hugging Face model directory", path);
            return ACCEL_ERR_INVALID;
        }
        snprintf(out, len, "%s", path);
        return ACCEL_OK;
    }
    accel_peft_t *p = NULL;
    accel_status_t st = accel_peft_open(path, &p, err, errlen);
    if (st == ACCEL_OK) st = accel_peft_base(p, NULL, out, len, err, errlen);
    accel_peft_close(p);
    return st;
}
accel_status_t accel_hf_adapter_factors(const char *dir, accel_hf_factor_fn fn, void *ctx, char *err,
                                        size_t errlen)
{
    accel_peft_t *p = NULL;
    accel_status_t st = accel_peft_open(dir, &p, err, errlen);
    float *a = NULL, *b = NULL;
    for (int i = 0; st == ACCEL_OK && i < accel_peft_count(p); i++) {
        const accel_peft_module_t *m = accel_peft_module(p, i);
        if (m->kind != PEFT_LORA || m->mag) {
            accel_errf(err, errlen, "%s: %s is %s, and training goes on from LoRA factors only", dir, m->name,
                       m->mag ? "DoRA (magnitudes)" : m->kind == PEFT_FULL ? "a whole tensor (modules_to_save)"
                                                     : "an embedding's factors");
            st = ACCEL_ERR_UNSUPPORTED;
            break;
        }
        const uint64_t r = m->a->dims[0], in = m->a->dims[1], out = m->b->dims[0];
        float *na = realloc(a, sizeof(float) * (size_t)(r * in)), *nb = na ? realloc(b, sizeof(float) * (size_t)(out * r)) : NULL;
        if (na) a = na;
        if (nb) b = nb;
        if (!na || !nb) { st = ACCEL_ERR_NOMEM; break; }
        st = accel_st_read(accel_peft_file(p), m->a, 0, m->a->numel, a);
        if (st == ACCEL_OK) st = accel_st_read(accel_peft_file(p), m->b, 0, m->b->numel, b);
        if (st != ACCEL_OK) accel_errf(err, errlen, "%s: cannot read the factors of %s", dir, m->name);
        else st = fn(ctx, m->name, (int)r, m->alpha, m->scale, a, b, out, in);
    }
    free(a);
    free(b);
    accel_peft_close(p);
    return st;
}

const char *accel_hf_adapter(const accel_hf_t *hf) { return hf->peft ? accel_peft_dir(hf->peft) : NULL; }

void accel_hf_close(accel_hf_t *hf)
{
    if (!hf) return;
    for (int i = 0; i < hf->nshards; i++) accel_st_close(hf->shards[i]);
    accel_peft_close(hf->peft);
    free(hf->e);
    free(hf->t);
    free(hf->yaml);
    free(hf);
}

const accel_config_t *accel_hf_config(const accel_hf_t *hf) { return &hf->cfg; }
const char *accel_hf_config_yaml(const accel_hf_t *hf) { return hf->yaml; }
const char *accel_hf_architecture(const accel_hf_t *hf) { return hf->arch; }

int accel_hf_tensors(const accel_hf_t *hf, const accel_hf_tensor_t **tensors)
{
    *tensors = hf->t;
    return hf->nt;
}

/* Row o of an expert's out rows in accel's order: with gate and up interleaved (glu), gate j
 * (o = 2j) is row j and up j (o = 2j + 1) row out/2 + j. */
static uint64_t glu_row(uint64_t o, uint64_t out, bool glu)
{
    return glu ? (o % 2 ? out / 2 : 0) + o / 2 : o;
}

/* Value d of a head in accel's RoPE order from GLM's: its pair (2i, 2i + 1) is accel's
 * (i, i + rd/2); the values past rd pass unturned, in place. */
static uint64_t rope_pair_row(uint64_t o, const entry_t *x)
{
    const uint64_t hs = (uint64_t)x->hs, rd = (uint64_t)x->rd, h = o / hs, d = o % hs;
    return h * hs + (d >= rd ? d : d % 2 ? rd / 2 + d / 2 : d / 2);
}

/* Row o of an L_ROPE_PAIRS or L_MLA_* tensor in accel's order. Latent attention: a query head's
 * [the rest | RoPE part] becomes [RoPE part | the rest], and [latent | RoPE key] keeps its order,
 * the RoPE values' interleaved pairs (2i, 2i + 1) becoming (i, i + rd/2) either way. */
static uint64_t row_in_accel(uint64_t o, const entry_t *x)
{
    if (x->layout == L_ROPE_PAIRS) return rope_pair_row(o, x);
    if (x->layout == L_QKVZ) {          /* per key head [q | k | v | z] -> [q | k | v | z] */
        const uint64_t dk = (uint64_t)x->hs, vg = (uint64_t)x->rd, G = 2 * dk + 2 * vg, Hk = x->hf_dims[0] / G;
        const uint64_t g = o / G, j = o % G;
        return j < dk ? g * dk + j : j < 2 * dk ? Hk * dk + g * dk + j - dk
             : j < 2 * dk + vg ? 2 * Hk * dk + g * vg + j - 2 * dk : 2 * Hk * dk + Hk * vg + g * vg + j - 2 * dk - vg;
    }
    if (x->layout == L_BA) {            /* per key head [b | a] -> [b | a] */
        const uint64_t r = (uint64_t)x->hs, Hk = x->hf_dims[0] / (2 * r), g = o / (2 * r), j = o % (2 * r);
        return j < r ? g * r + j : Hk * r + g * r + j - r;
    }
    if (x->layout == L_QGATE) {         /* [head, query|gate, hs] -> queries first, gates after v */
        const uint64_t hs = (uint64_t)x->hs, h = o / (2 * hs), j = o % (2 * hs);
        return j < hs ? h * hs + j : (uint64_t)x->rd + h * hs + j - hs;
    }
    if (x->layout == L_HEADS_QKV) {     /* [head, q|k|v, hs] -> [q | k | v], each [head, hs] */
        const uint64_t hs = (uint64_t)x->hs, part = x->hf_dims[0] / 3, h = o / (3 * hs), j = o % (3 * hs) / hs;
        return j * part + h * hs + o % hs;
    }
    const uint64_t hs = (uint64_t)x->hs, rd = (uint64_t)x->rd;
    if (x->layout == L_MLA_KV) {
        const uint64_t j = o - hs;
        return o < hs ? o : hs + (!x->pairs ? j : j % 2 ? rd / 2 + j / 2 : j / 2);
    }
    const uint64_t h = o / hs, d = o % hs, rest = hs - rd;
    if (d < rest) return h * hs + rd + d;
    const uint64_t j = d - rest;
    return h * hs + (!x->pairs ? j : j % 2 ? rd / 2 + j / 2 : j / 2);
}

/* x's LoRA module, if any, merged into its Hugging Face tensor w as the file stores it (stacked
 * experts [E, out, in] expert by expert). */
/* PEFT's target_modules rule: a module matches a name it equals or ends in after a dot. */
static bool module_matches(const char *module, const char *name, size_t len)
{
    const size_t m = strlen(module);
    return len && m >= len && !strncmp(module + m - len, name, len) && (m == len || module[m - len - 1] == '.');
}

/* Which of the n linear layers `targets` chooses (all-linear, or names comma-separated); a name
 * matching none is an error listing the names the layers have. */
static accel_status_t choose_linears(const accel_hf_linear_t *l, int n, const char *targets, bool *chosen, char *err,
                                     size_t errlen)
{
    const bool all = !targets || !strcmp(targets, "all-linear");
    for (int i = 0; i < n; i++) chosen[i] = all;
    for (const char *p = targets; !all && *p;) {
        p += strspn(p, ", ");
        const size_t len = strcspn(p, ", ");
        if (!len) break;
        bool any = false;
        for (int i = 0; i < n; i++)
            if (module_matches(l[i].module, p, len)) chosen[i] = any = true;
        if (!any) {
            char names[1024] = ",";     /* ",q_proj,k_proj,": each distinct name once */
            for (int i = 0; i < n; i++) {
                const char *dot = strrchr(l[i].module, '.');
                char key[ACCEL_HF_NAME_MAX + 4];
                snprintf(key, sizeof key, ",%s,", dot ? dot + 1 : l[i].module);
                if (!strstr(names, key) && strlen(names) + strlen(key) < sizeof names) strcat(names, key + 1);
            }
            names[strlen(names) - 1] = '\0';
            accel_errf(err, errlen, "no linear layer of this model is named '%.*s'\n--> hint: its layers: %s "
                       "(or all-linear)", (int)len, p, n ? names + 1 : "none");
            return ACCEL_ERR_CONFIG;
        }
        p += len;
    }
    for (int i = 0; i < n; i++)
        if (chosen[i]) return ACCEL_OK;
    accel_errf(err, errlen, "it names no linear layer of this model");
    return ACCEL_ERR_CONFIG;
}

int accel_hf_linears(const accel_model_config_t *m, const char *targets, accel_hf_linear_t **out, char *err,
                     size_t errlen)
{
    *out = NULL;
    if (strcmp(m->name, "gpt") && strcmp(m->name, "llama")) {
        accel_errf(err, errlen, "model.name=%s has no Hugging Face linear layers (gpt or llama)", m->name);
        return ACCEL_ERR_UNSUPPORTED;
    }
    dims_t d = dims_of(m);
    entry_t *e;
    const int ne = entries_of(&d, &e);
    if (ne < 0) return ne;
    accel_hf_linear_t *l = calloc((size_t)ne + 1, sizeof *l);
    bool *chosen = calloc((size_t)ne + 1, sizeof *chosen);
    int n = 0;
    accel_status_t st = l && chosen ? ACCEL_OK : ACCEL_ERR_NOMEM;
    for (int i = 0; st == ACCEL_OK && i < ne; i++) {
        const entry_t *x = &e[i];
        const size_t len = strlen(x->hf);
        /* Not the embeddings, the head, the MoE routers or the experts (an expert a file of its
         * own too): transformers 5 makes routers modules of their own and stacks the experts into
         * parameters, which PEFT's target_modules (and vLLM) do not adapt. */
        const size_t alen = strlen(x->accel);
        if (!lora_layout(x) || x->ndim != 2 || len < 7 || strcmp(x->hf + len - 7, ".weight") ||
            !strcmp(x->accel, "wte") || !strcmp(x->accel, "wpe") || !strcmp(x->accel, "lm_head.weight") ||
            (alen > 18 && !strcmp(x->accel + alen - 18, ".mlp.router.weight")) || strstr(x->accel, ".mlp.experts."))
            continue;
        accel_hf_linear_t *o = &l[n];
        module_of(x->hf, o->module, sizeof o->module);
        snprintf(o->accel, sizeof o->accel, "%s", x->accel);
        o->out = x->r1 - x->r0;
        o->in = x->dims[1];
        o->conv1d = x->layout == L_T;
        o->entry = i;
        n++;
    }
    if (st == ACCEL_OK) st = choose_linears(l, n, targets, chosen, err, errlen);
    int kept = 0;
    for (int i = 0; st == ACCEL_OK && i < n; i++) {
        if (!chosen[i]) continue;
        accel_hf_linear_t *o = &l[kept++];
        if (o != &l[i]) *o = l[i];
        const entry_t *x = &e[o->entry];
        if (!(o->rows = malloc(sizeof *o->rows * (size_t)o->out))) { st = ACCEL_ERR_NOMEM; kept--; break; }
        const bool permuted = x->layout != L_ROWS && x->layout != L_T;
        for (uint64_t r = 0; r < o->out; r++) o->rows[r] = x->r0 + (permuted ? row_in_accel(r, x) : r);
    }
    free(e);
    free(chosen);
    if (st != ACCEL_OK) {
        accel_hf_linears_free(l, kept);
        return st;
    }
    *out = l;
    return kept;
}

double accel_hf_lora_scale(const accel_config_t *cfg)
{
    return cfg->lora.alpha / (cfg->lora.rslora ? sqrt(cfg->lora.rank) : (double)cfg->lora.rank);
}

accel_status_t accel_hf_lora_layout(const accel_config_t *cfg, const accel_layout_t *model, accel_layout_t *out,
                                    char *err, size_t errlen)
{
    accel_hf_linear_t *l = NULL;
    const int n = accel_hf_linears(&cfg->model, cfg->lora.targets, &l, err, errlen);
    if (n < 0) return n;
    accel_status_t st = ACCEL_OK;
    const int r = cfg->lora.rank;
    for (int i = 0; st == ACCEL_OK && i < n; i++) {
        const accel_hf_linear_t *x = &l[i];
        const accel_tensor_t *w = accel_layout_find(model, x->accel);
        char a[ACCEL_HF_NAME_MAX + 16], b[sizeof a];
        snprintf(a, sizeof a, ACCEL_HF_LORA_A, x->module);
        snprintf(b, sizeof b, ACCEL_HF_LORA_B, x->module);
        if (!w || w->ndim != 2 || (uint64_t)w->shape[1] != x->in) {
            accel_errf(err, errlen, "the model has no tensor %s [*, %llu] for %s", x->accel, (unsigned long long)x->in,
                       x->module);
            st = ACCEL_ERR_SHAPE;
        } else if ((uint64_t)r > x->in || (uint64_t)r > x->out) {
            accel_errf(err, errlen, "lora.rank=%d is larger than %s's smaller side (%llu x %llu)\n--> hint: a rank "
                       "below it", r, x->module, (unsigned long long)x->out, (unsigned long long)x->in);
            st = ACCEL_ERR_CONFIG;
        } else if (strlen(a) >= ACCEL_TENSOR_NAME_MAX) {
            accel_errf(err, errlen, "the adapter tensor name %s is longer than accel's %d characters", a,
                       ACCEL_TENSOR_NAME_MAX - 1);
            st = ACCEL_ERR_UNSUPPORTED;
        } else {
            /* PEFT draws A by kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(in), 1/sqrt(in)), variance
             * 1/(3 in); here the same variance from the keyed normal, and B zero, so that training
             * starts at the base model. */
            const int64_t sa[2] = { r, (int64_t)x->in }, sb[2] = { (int64_t)x->out, r };
            st = accel_layout_add(out, a, 2, sa, w->layer, 0, (float)(1.0 / sqrt(3.0 * (double)x->in)), NULL);
            if (st == ACCEL_OK) st = accel_layout_add(out, b, 2, sb, w->layer, 0, 0.0f, NULL);
        }
    }
    accel_hf_linears_free(l, n);
    return st;
}

void accel_hf_linears_free(accel_hf_linear_t *l, int n)
{
    for (int i = 0; l && i < n; i++) free(l[i].rows);
    free(l);
}

static accel_status_t merge_lora(const accel_hf_t *hf, const entry_t *x, float *w)
{
    if (!x->lora) return ACCEL_OK;
    if (x->layout != L_STACKED) return accel_peft_merge(hf->peft, x->lora - 1, w, x->layout == L_T);
    const uint64_t E = x->hf_dims[0], n = x->hf_dims[1] * x->hf_dims[2];
    accel_status_t st = ACCEL_OK;
    for (uint64_t e = 0; st == ACCEL_OK && e < E; e++) st = accel_peft_merge_expert(hf->peft, x->lora - 1, e, E, w + e * n, false);
    return st;
}

/* x's Hugging Face tensor t (in shard s; -1: the adapter's file) into its rows of the accel tensor
 * dst, a LoRA module merged; stacked experts one expert at a time (gpt-oss-120b's gate_up_proj is
 * 2.3 GB in MXFP4, 18 GB in fp32). */
static accel_status_t read_entry(accel_hf_t *hf, const entry_t *x, const accel_st_tensor_t *t, int s, float *dst)
{
    const uint64_t cols = x->ndim == 2 ? x->dims[1] : 1, rows = x->r1 - x->r0;
    const uint64_t E = x->hf_dims[0], out = x->hf_ndim >= 2 ? x->hf_dims[1] : 0;
    const accel_st_t *f = s < 0 ? accel_peft_file(hf->peft) : hf->shards[s];
    const bool glu = x->layout == L_EXPERTS_GLU || x->layout == L_MXFP4_GLU || x->layout == L_EXPERT_GLU_BIAS;
    const bool fp8 = t->dtype == ACCEL_ST_F8_E4M3 || t->dtype == ACCEL_ST_I8;   /* check_fp8 allowed it: a matrix by rows */
    if (x->layout == L_ROWS || x->layout == L_EXPERT_BIAS || x->layout == L_STACKED || x->layout == L_ROW_MATRIX ||
        x->layout == L_CONV || x->layout == L_SCALAR) {
        accel_status_t rst = x->packed ? read_packed(hf, x, t, s, dst + x->r0 * cols)
                                       : accel_st_read(f, t, 0, t->numel, dst + x->r0 * cols);
        if (rst == ACCEL_OK && fp8) rst = fp8_scale(hf, x, dst + x->r0 * cols);
        return rst == ACCEL_OK ? merge_lora(hf, x, dst + x->r0 * cols) : rst;
    }
    uint64_t n = x->packed ? x->hf_dims[0] * x->hf_dims[1] : t->numel;     /* what one read takes */
    if (x->layout == L_EXPERTS || x->layout == L_EXPERTS_GLU) n = t->numel / E;
    if (x->layout == L_MXFP4 || x->layout == L_MXFP4_GLU) n = t->numel / E + t->numel / E / 16;
    float *tmp = malloc(sizeof(float) * (n ? n : 1));
    if (!tmp) return ACCEL_ERR_NOMEM;
    accel_status_t st = ACCEL_OK;
    if (x->layout == L_T) {                         /* HF [cols, rows] */
        st = accel_st_read(f, t, 0, t->numel, tmp);
        if (st == ACCEL_OK) st = merge_lora(hf, x, tmp);
        for (uint64_t r = 0; st == ACCEL_OK && r < rows; r++)
            for (uint64_t c = 0; c < cols; c++) dst[(x->r0 + r) * cols + c] = tmp[c * rows + r];
    } else if (x->layout == L_ROPE_PAIRS || x->layout == L_MLA_Q || x->layout == L_MLA_KV ||
               x->layout == L_HEADS_QKV || x->layout == L_QGATE || x->layout == L_QKVZ ||
               x->layout == L_BA) {  /* rows permuted */
        st = x->packed ? read_packed(hf, x, t, s, tmp) : accel_st_read(f, t, 0, t->numel, tmp);
        if (st == ACCEL_OK && fp8) st = fp8_scale(hf, x, tmp);
        if (st == ACCEL_OK) st = merge_lora(hf, x, tmp);
        for (uint64_t r = 0; st == ACCEL_OK && r < rows; r++)
            memcpy(dst + (x->r0 + row_in_accel(r, x)) * cols, tmp + r * cols, sizeof(float) * cols);
    } else if (x->layout == L_EXPERT_GLU_BIAS) {    /* HF [E, 2F] */
        const uint64_t w = x->hf_dims[1];
        st = accel_st_read(f, t, 0, t->numel, tmp);
        for (uint64_t e = 0; st == ACCEL_OK && e < E; e++)
            for (uint64_t o = 0; o < w; o++) dst[e * w + glu_row(o, w, true)] = tmp[e * w + o];
    } else if (x->layout == L_EXPERTS || x->layout == L_EXPERTS_GLU) {  /* HF [E, in, out] */
        const uint64_t w = x->hf_dims[2];
        for (uint64_t e = 0; st == ACCEL_OK && e < E; e++) {
            st = accel_st_read(f, t, e * n, (e + 1) * n, tmp);
            if (st == ACCEL_OK && x->lora) st = accel_peft_merge_expert(hf->peft, x->lora - 1, e, E, tmp, true);
            for (uint64_t o = 0; st == ACCEL_OK && o < w; o++)
                for (uint64_t c = 0; c < cols; c++) dst[(e * w + glu_row(o, w, glu)) * cols + c] = tmp[c * w + o];
        }
    } else {                                        /* MXFP4 blocks [E, out, G, 16], scales [E, out, G] */
        char name[ACCEL_HF_NAME_MAX + 8];
        scales_name(x, name, sizeof name);
        int ss = 0;
        const accel_st_tensor_t *sc = find_tensor(hf, name, &ss);
        const uint64_t G = x->hf_dims[2], nb = out * G * 16, ns = out * G;
        float *bl = tmp, *sv = tmp + nb, *delta = NULL;
        if (x->lora && !(delta = malloc(sizeof(float) * (size_t)(out * cols)))) st = ACCEL_ERR_NOMEM;
        for (uint64_t e = 0; st == ACCEL_OK && e < E; e++) {
            st = accel_st_read(f, t, e * nb, (e + 1) * nb, bl);
            if (st == ACCEL_OK) st = accel_st_read(hf->shards[ss], sc, e * ns, (e + 1) * ns, sv);
            for (uint64_t o = 0; st == ACCEL_OK && o < out; o++) {
                float *row = dst + (e * out + glu_row(o, out, glu)) * cols;
                for (uint64_t g = 0; g < G; g++) {
                    const int exp2 = (int)sv[o * G + g] - 127;
                    const float *b = bl + (o * G + g) * 16;
                    for (int k = 0; k < 16; k++) {  /* the low 4 bits first */
                        const unsigned v = (unsigned)b[k];
                        row[g * 32 + 2 * k] = ldexpf(g_fp4[v & 15], exp2);
                        row[g * 32 + 2 * k + 1] = ldexpf(g_fp4[v >> 4], exp2);
                    }
                }
            }
            if (st == ACCEL_OK && delta) {          /* a LoRA on the experts: [out, in], rows as above */
                memset(delta, 0, sizeof(float) * (size_t)(out * cols));
                st = accel_peft_merge_expert(hf->peft, x->lora - 1, e, E, delta, false);
                for (uint64_t o = 0; st == ACCEL_OK && o < out; o++) {
                    float *row = dst + (e * out + glu_row(o, out, glu)) * cols;
                    for (uint64_t c = 0; c < cols; c++) row[c] += delta[o * cols + c];
                }
            }
        }
        free(delta);
    }
    free(tmp);
    return st;
}

accel_status_t accel_hf_read(accel_hf_t *hf, const char *accel_name, float *dst, char *err, size_t errlen)
{
    bool found = false;
    for (int i = 0; i < hf->ne; i++) {
        const entry_t *x = &hf->e[i];
        if (strcmp(x->accel, accel_name)) continue;
        found = true;
        int s = -1;
        const accel_st_tensor_t *t = x->full ? accel_peft_module(hf->peft, x->full - 1)->a : find_tensor(hf, x->hf, &s);
        accel_status_t st = read_entry(hf, x, t, s, dst);
        if (st != ACCEL_OK) {
            accel_errf(err, errlen, "%s: reading %s failed (%s)", s < 0 ? accel_st_path(accel_peft_file(hf->peft)) :
                    accel_st_path(hf->shards[s]), t->name, accel_status_str(st));
            return st;
        }
    }
    if (!found) {
        accel_errf(err, errlen, "%s: accel tensor %s is not part of this %s model", hf->dir, accel_name,
                hf->cfg.model.name);
        return ACCEL_ERR_NOT_FOUND;
    }
    return ACCEL_OK;
}

/* An adapter's own tokenizer files (saved beside it when training changed them) win over the base's. */
char *accel_hf_tokenizer(const accel_hf_t *hf, size_t *len)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/tokenizer.json", hf->peft ? accel_peft_dir(hf->peft) : hf->dir);
    if (hf->peft && !exists(p)) snprintf(p, sizeof p, "%s/tokenizer.json", hf->dir);
    return accel_file_read(p, len);
}

static char *chat_template_in(const char *dir, size_t *len)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/chat_template.jinja", dir);
    char *text = exists(p) ? accel_file_read(p, len) : NULL;
    if (text) return text;
    /* Older saves keep it in tokenizer_config.json: a string, or named templates (a list). */
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    json_t *root = exists(p) ? json_load_file(p, 0, NULL) : NULL;
    const json_t *ct = json_object_get(root, "chat_template");
    for (size_t i = 0; json_is_array(ct) && i < json_array_size(ct); i++) {
        const json_t *e = json_array_get(ct, i), *name = json_object_get(e, "name");
        if (json_is_string(name) && !strcmp(json_string_value(name), "default")) {
            ct = json_object_get(e, "template");
            break;
        }
    }
    if (json_is_string(ct) && (text = malloc(json_string_length(ct) + 1))) {
        memcpy(text, json_string_value(ct), json_string_length(ct));
        text[json_string_length(ct)] = '\0';
        if (len) *len = json_string_length(ct);
    }
    json_decref(root);
    return text;
}

char *accel_hf_chat_template(const accel_hf_t *hf, size_t *len)
{
    char *text = hf->peft ? chat_template_in(accel_peft_dir(hf->peft), len) : NULL;
    return text ? text : chat_template_in(hf->dir, len);
}

/* ------------------------------------------------------------------ export */

/* bytes[0..len) as the file outdir/name, published atomically. */
static accel_status_t publish_bytes(const char *outdir, const char *name, const char *bytes, size_t len)
{
    char path[4400], *text = malloc(len + 1);
    if (!text) return ACCEL_ERR_NOMEM;
    memcpy(text, bytes, len);
    text[len] = '\0';
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    accel_status_t st = accel_h5_publish_text(path, text);
    free(text);
    return st;
}

/* Nemotron-H's config.json (accel_hf_export checked the model is one): its layers as
 * layers_block_type and the hub's hybrid_override_pattern, Mamba-2's sizes, the plain MLP's,
 * DeepSeek-V3's routing over plain experts and the shared one. */
static json_t *nemotron_h_json(const accel_model_config_t *m, const dims_t *d, const char *dtype)
{
    static const char *const names[] = { "linear_attention", "full_attention", "mlp", "moe" };
    json_t *types = json_array();
    char pattern[ACCEL_NUMBERS_MAX + 1];
    for (int i = 0; i < m->layers; i++) {
        const int k = accel_layer_listed(&d->mlp_only, i) ? (d->E && i >= d->dense_layers ? 3 : 2)
                    : d->mamba && !accel_layer_listed(&d->att_layers, i) ? 0 : 1;
        json_array_append_new(types, json_string(names[k]));
        pattern[i] = "M*-E"[k];
    }
    pattern[m->layers] = 0;
    const char *act = !strcmp(m->activation, "relu2") ? "relu2" : !strcmp(m->activation, "gelu") ? "gelu"
                    : "gelu_pytorch_tanh";
    json_t *j = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:s, s:b, s:b, s:b, s:b, s:b, s:s, s:s}",
                          "architectures", "NemotronHForCausalLM", "model_type", "nemotron_h",
                          "hidden_size", m->width, "intermediate_size", d->DF, "num_attention_heads", m->heads,
                          "num_key_value_heads", d->KVH, "head_dim", d->hs, "max_position_embeddings", m->context,
                          "vocab_size", m->vocab, "layer_norm_epsilon", m->rms_eps, "mlp_hidden_act", act,
                          "tie_word_embeddings", 0, "attention_bias", 0, "mlp_bias", 0, "use_bias", 0,
                          "use_cache", 1, "dtype", dtype, "torch_dtype", dtype);
    if (!j) { json_decref(types); return NULL; }
    json_object_set_new(j, "layers_block_type", types);
    json_object_set_new(j, "hybrid_override_pattern", json_string(pattern));   /* transformers 4's, the hub's */
    json_object_set_new(j, "num_hidden_layers", json_integer(m->layers));
    json_object_set_new(j, "mamba_num_heads", json_integer(d->mamba ? d->MH : 1));
    json_object_set_new(j, "mamba_head_dim", json_integer(d->mamba ? d->MP : 1));
    json_object_set_new(j, "ssm_state_size", json_integer(d->MN));
    json_object_set_new(j, "n_groups", json_integer(d->MG));
    json_object_set_new(j, "conv_kernel", json_integer(d->MK));
    json_object_set_new(j, "use_conv_bias", json_boolean(d->mconv_bias));
    json_object_set_new(j, "mamba_hidden_act", json_string("silu"));
    json_object_set_new(j, "mamba_proj_bias", json_false());
    json_object_set_new(j, "n_routed_experts", json_integer(d->E ? d->E : 8));
    json_object_set_new(j, "num_experts_per_tok", json_integer(d->E ? m->experts_per_token : 2));
    json_object_set_new(j, "moe_intermediate_size", json_integer(d->E ? d->F : 7688));
    json_object_set_new(j, "moe_shared_expert_intermediate_size", json_integer(d->E ? d->S : 7688));
    json_object_set_new(j, "n_shared_experts", json_integer(1));
    json_object_set_new(j, "n_group", json_integer(d->E ? m->router_groups : 1));
    json_object_set_new(j, "topk_group", json_integer(d->E ? m->router_topk_groups : 1));
    json_object_set_new(j, "norm_topk_prob", json_boolean(!d->E || m->router_norm_topk));
    json_object_set_new(j, "routed_scaling_factor", json_real(d->E ? m->router_scale : 1.0));
    json_object_set_new(j, "moe_latent_size", d->Lat ? json_integer(d->Lat) : json_null());
    json_object_set_new(j, "num_nextn_predict_layers", json_integer(0));
    json_object_set_new(j, "output_router_logits", json_false());
    return j;
}

/* Mamba's or Falcon Mamba's config.json (accel_hf_export checked the model is one). */
static json_t *mamba1_json(const accel_model_config_t *m, const dims_t *d, const char *dtype)
{
    const bool falcon = d->M1norms == 1;
    json_t *j = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:s, s:b, s:b, s:b, s:i, s:b, s:s, s:s}",
                          "architectures", falcon ? "FalconMambaForCausalLM" : "MambaForCausalLM",
                          "model_type", falcon ? "falcon_mamba" : "mamba", "hidden_size", m->width,
                          "num_hidden_layers", m->layers, "state_size", d->MN, "conv_kernel", d->MK,
                          "vocab_size", m->vocab, "expand", d->M1I / m->width, "layer_norm_epsilon", m->rms_eps,
                          "hidden_act", "silu", "use_bias", 0, "use_conv_bias", d->mconv_bias,
                          "tie_word_embeddings", m->tie_embeddings, "time_step_rank", d->M1R, "use_cache", 1,
                          "dtype", dtype, "torch_dtype", dtype);
    if (j) json_object_set_new(j, "intermediate_size", json_integer(d->M1I));    /* what the files' shapes say */
    if (j && falcon) json_object_set_new(j, "mixer_rms_eps", json_real(m->mamba1_norm_eps));
    return j;
}

/* Jamba's config.json (accel_hf_export checked the model is one, its layers periodic). */
static json_t *jamba_json(const accel_model_config_t *m, const dims_t *d, const char *dtype)
{
    accel_numbers_t moe = { 0 };
    for (int l = 0; l < m->layers && d->E; l++)
        if (d->expert_layers.n ? accel_layer_listed(&d->expert_layers, l) : l >= d->dense_layers) moe.v[moe.n++] = l;
    int ap = 1, ao = 0, ep = 1, eo = 0;
    layer_period(&d->att_layers, m->layers, &ap, &ao);
    layer_period(&moe, m->layers, &ep, &eo);
    json_t *j = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:s, s:b, s:b, s:s, s:s}",
                          "architectures", "JambaForCausalLM", "model_type", "jamba", "hidden_size", m->width,
                          "intermediate_size", d->DF, "num_hidden_layers", m->layers, "num_attention_heads", m->heads,
                          "num_key_value_heads", d->KVH, "max_position_embeddings", m->context, "vocab_size", m->vocab,
                          "rms_norm_eps", m->rms_eps, "hidden_act", "silu", "tie_word_embeddings", m->tie_embeddings,
                          "use_cache", 1, "dtype", dtype, "torch_dtype", dtype);
    if (!j) return NULL;
    json_object_set_new(j, "num_experts", json_integer(d->E ? d->E : 1));
    json_object_set_new(j, "num_experts_per_tok", json_integer(d->E ? m->experts_per_token : 1));
    json_object_set_new(j, "expert_layer_period", json_integer(ep));
    json_object_set_new(j, "expert_layer_offset", json_integer(eo));
    json_object_set_new(j, "attn_layer_period", json_integer(ap));
    json_object_set_new(j, "attn_layer_offset", json_integer(ao));
    json_object_set_new(j, "output_router_logits", json_boolean(m->router_aux_loss > 0));
    json_object_set_new(j, "router_aux_loss_coef", json_real(m->router_aux_loss > 0 ? m->router_aux_loss : 0.001));
    json_object_set_new(j, "mamba_d_state", json_integer(d->MN));
    json_object_set_new(j, "mamba_d_conv", json_integer(d->MK));
    json_object_set_new(j, "mamba_expand", json_integer(d->M1I / m->width));
    json_object_set_new(j, "mamba_dt_rank", json_integer(d->M1R));
    json_object_set_new(j, "mamba_conv_bias", json_boolean(d->mconv_bias));
    json_object_set_new(j, "mamba_proj_bias", json_false());
    json_object_set_new(j, "use_mamba_kernels", json_false());
    return j;
}

/* Bamba's config.json (accel_hf_export checked the model is one): Llama's keys, its attention
 * layers' numbers, Mamba-2's sizes, RoPE on half of each head. */
static json_t *bamba_json(const accel_model_config_t *m, const dims_t *d, const char *dtype)
{
    json_t *indices = json_array();
    for (int i = 0; i < d->att_layers.n; i++) json_array_append_new(indices, json_integer((long long)d->att_layers.v[i]));
    json_t *j = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:s, s:b, s:b, s:b, s:b, s:s, s:s, s:f}",
                          "architectures", "BambaForCausalLM", "model_type", "bamba", "hidden_size", m->width,
                          "intermediate_size", d->DF, "num_hidden_layers", m->layers, "num_attention_heads", m->heads,
                          "num_key_value_heads", d->KVH, "max_position_embeddings", m->context, "vocab_size", m->vocab,
                          "rms_norm_eps", m->rms_eps, "hidden_act", "silu", "tie_word_embeddings", m->tie_embeddings,
                          "attention_bias", 0, "mlp_bias", 0, "use_cache", 1, "dtype", dtype, "torch_dtype", dtype,
                          "z_loss_coefficient", 0.0);
    if (!j) { json_decref(indices); return NULL; }
    json_object_set_new(j, "attn_layer_indices", indices);
    json_object_set_new(j, "mamba_n_heads", json_integer(d->MH));
    json_object_set_new(j, "mamba_d_head", json_integer(d->MP));
    json_object_set_new(j, "mamba_n_groups", json_integer(d->MG));
    json_object_set_new(j, "mamba_d_state", json_integer(d->MN));
    json_object_set_new(j, "mamba_d_conv", json_integer(d->MK));
    json_object_set_new(j, "mamba_expand", json_integer((long long)d->MH * d->MP / m->width));
    json_object_set_new(j, "mamba_conv_bias", json_boolean(d->mconv_bias));
    json_object_set_new(j, "mamba_proj_bias", json_false());
    json_object_set_new(j, "rope_parameters", json_pack("{s:s, s:f, s:f}", "rope_type", "default", "rope_theta",
                                                        m->rope_theta, "partial_rotary_factor", 0.5));
    return j;
}

/* Llama 4's config.json (accel_hf_export checked the model is one): Llama4TextConfig's keys, the
 * blocks with experts (moe_layers) and the layers with RoPE (no_rope_layers) as lists, chunks on
 * those (attention_chunk_size), its q/k norms and query temperature as switches. */
static json_t *llama4_json(const accel_model_config_t *m, const dims_t *d, const char *dtype)
{
    json_t *moe = json_array(), *rope = json_array(), *types = json_array();
    for (int l = 0; l < m->layers; l++) {
        const bool turns = !(d->nope && (l + 1) % d->nope == 0);
        if (!d->expert_layers.n || accel_layer_listed(&d->expert_layers, l)) json_array_append_new(moe, json_integer(l));
        json_array_append_new(rope, json_integer(turns));
        json_array_append_new(types, json_string(turns && m->sliding_window ? "chunked_attention" : "full_attention"));
    }
    json_t *j = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:s, s:b, s:b, s:b, s:s, s:s}",
                          "architectures", "Llama4ForCausalLM", "model_type", "llama4_text", "hidden_size", m->width,
                          "intermediate_size", d->F, "intermediate_size_mlp", d->DF, "num_hidden_layers", m->layers,
                          "num_attention_heads", m->heads, "num_key_value_heads", d->KVH, "head_dim", d->hs,
                          "max_position_embeddings", m->context, "vocab_size", m->vocab, "rms_norm_eps", m->rms_eps,
                          "hidden_act", "silu", "tie_word_embeddings", m->tie_embeddings, "attention_bias",
                          m->attention_bias, "use_qk_norm", m->qk_norm, "dtype", dtype, "torch_dtype", dtype);
    if (!j) { json_decref(moe); json_decref(rope); json_decref(types); return NULL; }
    json_object_set_new(j, "num_local_experts", json_integer(d->E));
    json_object_set_new(j, "num_experts_per_tok", json_integer(m->experts_per_token));
    json_object_set_new(j, "moe_layers", moe);
    json_object_set_new(j, "interleave_moe_layer_step", json_integer(1));   /* moe_layers says */
    json_object_set_new(j, "no_rope_layers", rope);
    json_object_set_new(j, "layer_types", types);
    json_object_set_new(j, "no_rope_layer_interval", json_integer(d->nope ? d->nope : 4));
    json_object_set_new(j, "attention_chunk_size", m->sliding_window ? json_integer(m->sliding_window) : json_null());
    json_object_set_new(j, "attn_temperature_tuning", json_boolean(m->query_scale_beta > 0));
    json_object_set_new(j, "floor_scale", json_integer(m->query_scale_beta > 0 ? m->query_scale_context : 8192));
    json_object_set_new(j, "attn_scale", json_real(m->query_scale_beta > 0 ? m->query_scale_beta : 0.1));
    json_object_set_new(j, "router_aux_loss_coef", json_real(0.001));  /* transformers' training term's default */
    json_object_set_new(j, "output_router_logits", json_false());
    json_t *rp = !strcmp(m->rope_scaling, "llama3")
               ? json_pack("{s:s, s:f, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "rope_theta", m->rope_theta, "factor",
                           m->rope_factor, "low_freq_factor", m->rope_low_freq_factor, "high_freq_factor",
                           m->rope_high_freq_factor, "original_max_position_embeddings", m->rope_original_context)
               : json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", m->rope_theta);
    json_object_set_new(j, "rope_parameters", rp);
    return j;
}

/* config.json for cfg's model (transformers 4.4x and 5 read it). */
static json_t *hf_config_json(const accel_config_t *cfg, bool bf16, int bos_id, int eos_id)
{
    const accel_model_config_t *m = &cfg->model;
    dims_t d = dims_of(m);
    const char *dtype = bf16 ? "bfloat16" : "float32";
    json_t *j;
    if (!d.llama) {
        j = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:n, s:f, s:s, s:b, s:f, s:f, s:f, s:b, s:b, s:s, s:s}",
                      "architectures", "GPT2LMHeadModel", "model_type", "gpt2", "n_layer", m->layers,
                      "n_head", m->heads, "n_embd", m->width, "n_positions", m->context, "n_ctx", m->context,
                      "vocab_size", m->vocab, "n_inner", "layer_norm_epsilon", 1e-5,
                      "activation_function", "gelu_new", "tie_word_embeddings", 1, "resid_pdrop", 0.0,
                      "embd_pdrop", 0.0, "attn_pdrop", 0.0, "scale_attn_weights", 1, "use_cache", 1,
                      "dtype", dtype, "torch_dtype", dtype);
        /* Without a tokenizer: GPT2Config defaults bos/eos to 50256 (<|endoftext|>), right for
         * the GPT-2 vocabulary and out of range for any smaller one. */
        if (bos_id < 0 && eos_id < 0 && m->vocab == 50257) bos_id = eos_id = 50256;
    } else if (d.jamba) {
        j = jamba_json(m, &d, dtype);
    } else if (d.mamba1) {
        j = mamba1_json(m, &d, dtype);
    } else if (d.nemh) {
        j = nemotron_h_json(m, &d, dtype);
    } else if (d.bamba) {
        j = bamba_json(m, &d, dtype);
    } else if (d.llama4) {
        j = llama4_json(m, &d, dtype);
    } else {
        /* The family from the building blocks (accel_hf_export refused the combinations none
         * has): Gemma's 1 + weight norms (Gemma 3: four a block with q/k norms, Gemma 2: four
         * without, Gemma 1: two), Granite's scalars, SmolLM3's NoPE layers, OLMo's whole-projection
         * q/k norms, EXAONE 4's per-head ones after-norms, experts (Qwen2-MoE: a shared expert,
         * Qwen3-MoE: q/k norms, else Mixtral), Qwen3's q/k norms, Qwen2's q, k, v biases, Mistral's
         * window, LongRoPE's Phi-3, else Llama. */
        const bool dsv3 = d.mla;       /* DeepSeek-V3, -V2 or Mistral Small 4 (accel_hf_export checked their
                                        * other parts) */
        const bool youtu = dsv3 && !d.E;   /* dense latent attention: Youtu-LLM's */
        const bool mistral4 = d.mistral4, dsv2 = dsv3 && d.E && !mistral4 && !strcmp(m->router_scores, "softmax");
        const bool ministral3 = d.ministral3;
        /* LayerNorms or a plain MLP: StarCoder2 (the tanh GELU), Nemotron (relu2 under LayerNorm1P),
         * Jais2 (relu2 under LayerNorms), Arcee (relu2 under RMSNorms), StableLM (SwiGLU under
         * LayerNorms); accel_hf_export checked the rest */
        const bool own = d.ln || d.plain || strcmp(m->parallel_block, "none") || m->head_bias;
        const bool relu2 = !strcmp(m->activation, "relu2");
        const bool cohere = d.cohere, cohere2 = cohere && m->sliding_window > 0;
        const char *own_arch = !own ? NULL : d.phi ? "PhiForCausalLM" : d.gptj ? "GPTJForCausalLM"
                             : d.neox ? "GPTNeoXForCausalLM" : d.sc2 ? "Starcoder2ForCausalLM"
                             : cohere ? (cohere2 ? "Cohere2ForCausalLM" : "CohereForCausalLM")
                             : !d.plain ? "StableLmForCausalLM"
                             : !d.ln ? (d.xielu ? "ApertusForCausalLM" : "ArceeForCausalLM")
                             : m->norm_unit_offset ? "NemotronForCausalLM" : "Jais2ForCausalLM";
        const char *own_type = !own ? NULL : d.phi ? "phi" : d.gptj ? "gptj" : d.neox ? "gpt_neox" : d.sc2 ? "starcoder2"
                             : cohere ? (cohere2 ? "cohere2" : "cohere") : !d.plain ? "stablelm"
                             : !d.ln ? (d.xielu ? "apertus" : "arcee")
                             : m->norm_unit_offset ? "nemotron" : "jais2";
        const bool ernie = d.ernie;  /* ERNIE 4.5's experts (accel_hf_export checked the rest) */
        const bool minimax = d.minimax;  /* MiniMax-M2 (accel_hf_export checked the rest) */
        const bool exaone_moe = d.exaone_moe;     /* K-EXAONE (accel_hf_export checked the rest) */
        const bool mellum = d.mellum;             /* Mellum (accel_hf_export checked the rest) */
        const bool lfm2 = d.lfm2;       /* LFM2, LFM2-MoE (accel_hf_export checked the rest) */
        const bool ghybrid = d.granite_h;   /* Granite 4.0-H (accel_hf_export checked the rest) */
        const bool glm_moe = d.ds && !dsv3 && !ernie && !minimax && !exaone_moe && !mellum && !lfm2 && !ghybrid &&
                             !d.granite_moe && !d.hy_moe;  /* GLM-4.5 (accel_hf_export checked its other parts) */
        const bool olmo = d.qk_all, window = m->sliding_window > 0, olmo3 = olmo && window;
        const bool qwen35 = d.qwen35;   /* Qwen3.5 (accel_hf_export checked the rest) */
        const bool gemma = m->norm_unit_offset && !own && !qwen35, gemma3 = gemma && d.sandwich && d.qk_norm;  /* checked alike */
        const bool gemma2 = gemma && d.sandwich && !d.qk_norm, vault = gemma && d.vault;   /* VaultGemma: Gemma 2's
                                                                                             * without after-norms */
        const bool oss = d.sinks && d.oss;   /* gpt-oss (accel_hf_export checked its other parts; GraniteSWA: sinks alone) */
        /* An output projection bias elsewhere: Llama's with q, k, v biases, Seed-OSS's without */
        const bool obias = d.obias && !oss && !own, seed = obias && !m->attention_bias;
        const bool glm = d.glm, glm4 = glm && d.sandwich;  /* GLM: part of each head turned, or GLM-4's norms */
        const bool exaone = d.post && d.qk_norm && !d.qk_all;  /* EXAONE 4 (accel_hf_export checked the rest) */
        const bool hunyuan = d.hunyuan;    /* accel_hf_export checked the rest */
        const bool qwen = !qwen35 && !lfm2 && !ghybrid && !own && !olmo && !gemma && !oss && !obias && !glm && !glm_moe && !exaone && !exaone_moe && !mellum && !dsv3 && !ernie && !hunyuan &&
                          (d.qk_norm || m->attention_bias || d.S);
        const bool nope = m->no_rope_pattern > 0 && !exaone && !exaone_moe && !own && !ghybrid && !d.sinks;  /* SmolLM3 (export
                                                                    * refuses it with anything else; GraniteSWA's its own) */
        const bool granite = ghybrid || (!dsv3 && !own && (m->attention_multiplier > 0 || m->residual_multiplier != 1.0 ||
                                                            m->logits_scaling != 1.0));
        const bool phi3 = d.phi3;     /* LongRoPE: Phi-3.5's, Phi-4-mini's (accel_hf_export checked the rest) */
        static const char ministral_arch[] = "MinistralForCausalLM";
        const char *arch = ghybrid ? "GraniteMoeHybridForCausalLM" : lfm2 ? (d.lfm3 ? "Lfm3ForCausalLM" : d.E ? "Lfm2MoeForCausalLM" : "Lfm2ForCausalLM") : qwen35 ? (d.next ? "Qwen3NextForCausalLM" : d.E ? "Qwen3_5MoeForCausalLM" : "Qwen3_5ForCausalLM") : own ? own_arch : mellum ? "MellumForCausalLM" : exaone_moe ? "ExaoneMoeForCausalLM" : minimax ? "MiniMaxM2ForCausalLM" : hunyuan ? (d.E ? "HunYuanMoEV1ForCausalLM" : "HunYuanDenseV1ForCausalLM") : ernie ? "Ernie4_5_MoeForCausalLM" : mistral4 ? "Mistral4ForCausalLM" : ministral3 ? "Ministral3ForCausalLM"
                         : youtu ? "YoutuForCausalLM" : dsv2 ? "DeepseekV2ForCausalLM" : dsv3 ? "DeepseekV3ForCausalLM" : phi3 ? "Phi3ForCausalLM" : exaone ? "Exaone4ForCausalLM"
                         : glm_moe ? "Glm4MoeForCausalLM" : oss ? "GptOssForCausalLM"
                         : seed ? "SeedOssForCausalLM"
                         : glm4 ? "Glm4ForCausalLM" : glm ? "GlmForCausalLM"
                         : gemma3 ? "Gemma3ForCausalLM" : gemma2 ? "Gemma2ForCausalLM" : vault ? "VaultGemmaForCausalLM"
                         : gemma ? "GemmaForCausalLM"
                         : d.clovax ? "HyperCLOVAXForCausalLM"
                         : granite ? (d.sinks ? (d.E ? "GraniteMoeSWAForCausalLM" : "GraniteSWAForCausalLM")
                                      : d.E ? (d.S ? "GraniteMoeSharedForCausalLM" : "GraniteMoeForCausalLM")
                                      : "GraniteForCausalLM")
                         : nope ? "SmolLM3ForCausalLM"
                         : olmo ? (d.E ? (d.post ? "FlexOlmoForCausalLM" : "OlmoeForCausalLM") : olmo3 ? "Olmo3ForCausalLM"
                                   : d.olmoh ? "OlmoHybridForCausalLM" : "Olmo2ForCausalLM")
                         : d.E ? (d.S ? "Qwen2MoeForCausalLM" : d.qk_norm ? "Qwen3MoeForCausalLM" : "MixtralForCausalLM")
                         : d.qk_norm ? "Qwen3ForCausalLM" : m->attention_bias && !obias ? "Qwen2ForCausalLM"
                         : window ? (m->sliding_window_pattern || m->sliding_layers.n ? ministral_arch : "MistralForCausalLM")
                         : "LlamaForCausalLM";
        const char *type = ghybrid ? "granitemoehybrid" : lfm2 ? (d.lfm3 ? "lfm3" : d.E ? "lfm2_moe" : "lfm2") : qwen35 ? (d.next ? "qwen3_next" : d.E ? "qwen3_5_moe_text" : "qwen3_5_text") : own ? own_type : mellum ? "mellum" : exaone_moe ? "exaone_moe" : minimax ? "minimax_m2" : hunyuan ? (d.E ? "hunyuan_v1_moe" : "hunyuan_v1_dense") : ernie ? "ernie4_5_moe" : mistral4 ? "mistral4" : ministral3 ? "ministral3" : youtu ? "youtu" : dsv2 ? "deepseek_v2" : dsv3 ? "deepseek_v3" : phi3 ? "phi3" : exaone ? "exaone4" : glm_moe ? "glm4_moe" : oss ? "gpt_oss" : seed ? "seed_oss" : glm4 ? "glm4" : glm ? "glm"
                         : gemma3 ? "gemma3_text" : gemma2 ? "gemma2" : vault ? "vaultgemma" : gemma ? "gemma" : d.clovax ? "hyperclovax" : granite ? (d.sinks ? (d.E ? "granitemoe_swa" : "granite_swa")
                                                                                             : d.E ? (d.S ? "granitemoeshared" : "granitemoe")
                                                                                             : "granite")
                         : nope ? "smollm3"
                         : olmo ? (d.E ? (d.post ? "flex_olmo" : "olmoe") : olmo3 ? "olmo3" : d.olmoh ? "olmo_hybrid" : "olmo2")
                         : d.E ? (d.S ? "qwen2_moe" : d.qk_norm ? "qwen3_moe" : "mixtral")
                         : d.qk_norm ? "qwen3" : m->attention_bias && !obias ? "qwen2"
                         : window ? (m->sliding_window_pattern || m->sliding_layers.n ? "ministral" : "mistral") : "llama";
        const bool ministral = arch == ministral_arch;     /* Ministral 8B: its layer_types */
        j = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:s, s:b, s:b, s:b, s:b, s:s, s:s}",
                      "architectures", arch, "model_type", type,
                      "hidden_size", m->width, "intermediate_size", d.DF, "num_hidden_layers", m->layers,
                      "num_attention_heads", m->heads, "num_key_value_heads", d.KVH, "head_dim", d.hs,
                      "max_position_embeddings", m->context, "vocab_size", m->vocab, "rms_norm_eps", m->rms_eps,
                      "rope_theta", m->rope_theta, "hidden_act", gemma ? "gelu_pytorch_tanh" : "silu",
                      "tie_word_embeddings", m->tie_embeddings,
                      "attention_bias", 0, "mlp_bias", 0, "use_cache", 1, "dtype", dtype, "torch_dtype", dtype);
        if (j && !strcmp(m->rope_scaling, "llama3"))
            json_object_set_new(j, "rope_scaling",
                                json_pack("{s:s, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "factor", m->rope_factor,
                                          "low_freq_factor", m->rope_low_freq_factor, "high_freq_factor",
                                          m->rope_high_freq_factor, "original_max_position_embeddings",
                                          m->rope_original_context));
        if (j && !strcmp(m->rope_scaling, "linear"))
            json_object_set_new(j, "rope_scaling", json_pack("{s:s, s:f}", "rope_type", "linear", "factor", m->rope_factor));
        if (j && !strcmp(m->rope_scaling, "yarn")) {
            json_t *y = json_pack("{s:s, s:f, s:i, s:f, s:f}", "rope_type", "yarn", "factor", m->rope_factor,
                                  "original_max_position_embeddings", m->rope_original_context, "beta_fast",
                                  m->rope_beta_fast, "beta_slow", m->rope_beta_slow);
            if (y && m->rope_attention_factor > 0)
                json_object_set_new(y, "attention_factor", json_real(m->rope_attention_factor));
            if (y && !m->rope_truncate) json_object_set_new(y, "truncate", json_false());
            json_object_set_new(j, "rope_scaling", y);
        }
        if (j && phi3) {              /* LongRoPE's lists; the part of each head turned; one window */
            json_t *lr = json_pack("{s:s, s:[], s:[], s:i}", "rope_type", "longrope", "short_factor",
                                   "long_factor", "original_max_position_embeddings", m->rope_original_context);
            /* the extension, unless transformers' default (max_position_embeddings over it) gives it */
            if (lr && m->rope_factor != (double)m->context / m->rope_original_context &&
                !(m->rope_factor == 1.0 && m->context <= m->rope_original_context))
                json_object_set_new(lr, "factor", json_real(m->rope_factor));
            for (int i = 0; lr && i < m->rope_short_factor.n; i++)
                json_array_append_new(json_object_get(lr, "short_factor"), json_real(m->rope_short_factor.v[i]));
            for (int i = 0; lr && i < m->rope_long_factor.n; i++)
                json_array_append_new(json_object_get(lr, "long_factor"), json_real(m->rope_long_factor.v[i]));
            if (lr && m->rope_attention_factor > 0)
                json_object_set_new(lr, "attention_factor", json_real(m->rope_attention_factor));
            json_object_set_new(j, "rope_scaling", lr);
            json_object_set_new(j, "original_max_position_embeddings", json_integer(m->rope_original_context));
            json_object_set_new(j, "partial_rotary_factor", json_real((double)d.rd / d.hs));
            json_object_set_new(j, "sliding_window", window ? json_integer(m->sliding_window) : json_null());
            json_object_del(j, "head_dim");
            json_object_del(j, "mlp_bias");
            json_object_del(j, "attention_bias");
        }
        /* OLMo 3 in transformers 5 reads one set per layer type (from a flat rope_theta it would
         * give the sliding layers its default theta, 500000): both, so either version reads it. */
        if (j && (olmo3 || gemma3 || mellum)) {
            json_t *full = json_object_get(j, "rope_scaling");
            full = full ? json_deep_copy(full) : json_pack("{s:s}", "rope_type", "default");
            json_object_set_new(full, "rope_theta", json_real(m->rope_theta));
            const double local = m->sliding_rope_theta > 0 ? m->sliding_rope_theta : m->rope_theta;
            json_object_set_new(j, "rope_parameters",
                                json_pack("{s:o, s:{s:s, s:f}}", "full_attention", full, "sliding_attention",
                                          "rope_type", "default", "rope_theta", local));
            if (gemma3) json_object_set_new(j, "rope_local_base_freq", json_real(local));   /* transformers 4 */
        }
        if (j && (gemma2 || gemma3 || vault)) {    /* their activation key, score scale, window, soft caps */
            json_object_set_new(j, "hidden_activation", json_string("gelu_pytorch_tanh"));
            json_object_set_new(j, "query_pre_attn_scalar",
                                json_integer(m->query_pre_attn_scalar ? m->query_pre_attn_scalar : d.hs));
            json_object_set_new(j, "sliding_window", json_integer(window ? m->sliding_window : m->context));
            json_object_set_new(j, "attn_logit_softcapping",
                                m->attention_softcap > 0 ? json_real(m->attention_softcap) : json_null());
            json_object_set_new(j, "final_logit_softcapping",
                                m->logit_softcap > 0 ? json_real(m->logit_softcap) : json_null());
            if (gemma3) json_object_set_new(j, "use_bidirectional_attention", json_false());
        }
        if (j && granite) {             /* Granite's four scalars (its attention_multiplier is the scale) */
            json_object_set_new(j, "embedding_multiplier", json_real(m->embed_scale));
            json_object_set_new(j, "attention_multiplier",
                                json_real(m->attention_multiplier > 0 ? m->attention_multiplier : 1.0 / sqrt((double)d.hs)));
            json_object_set_new(j, "residual_multiplier", json_real(m->residual_multiplier));
            json_object_set_new(j, "logits_scaling", json_real(d.clovax ? 1.0 / m->logits_scaling : m->logits_scaling));
            if (d.clovax) json_object_set_new(j, "use_post_norm", json_true());   /* its logits_scaling multiplies */
            if (d.E && (d.S || d.sinks))    /* GraniteMoeShared's, GraniteMoeSWA's shared MLP (0: none) */
                json_object_set_new(j, "shared_intermediate_size", json_integer(d.S));
            if (d.sinks) {              /* GraniteSWA: its window, each layer's RoPE base (0: none) */
                json_object_set_new(j, "sliding_window", window ? json_integer(m->sliding_window) : json_null());
                json_t *bases = json_array();
                for (int i = 0; bases && i < m->layers; i++) {
                    const bool own = config_layer_slides(m, i) && !strcmp(m->sliding_rope, "plain");
                    const double t = d.nope && (i + 1) % d.nope == 0 ? 0.0
                                   : own && m->sliding_rope_theta > 0 ? m->sliding_rope_theta : m->rope_theta;
                    json_array_append_new(bases, json_real(t));
                }
                json_object_set_new(j, "layer_rope_theta", bases);
            }
        }
        if (j && nope) {                /* which layers have RoPE (1) and which not (0) */
            json_t *has = json_array();
            for (int i = 0; i < m->layers; i++)
                json_array_append_new(has, json_integer((i + 1) % m->no_rope_pattern != 0));
            json_object_set_new(j, "no_rope_layers", has);
            json_object_set_new(j, "no_rope_layer_interval", json_integer(m->no_rope_pattern));
            json_object_set_new(j, "use_sliding_window", json_false());
            json_object_set_new(j, "sliding_window", json_null());
        }
        /* No padding token: transformers' family defaults (SmolLM3 128004, OLMo 1) may lie outside
         * the vocabulary, and a padding_idx would freeze that embedding row in training. */
        if (j) json_object_set_new(j, "pad_token_id", json_null());
        if (j && m->attention_bias && !obias && !glm) json_object_del(j, "attention_bias");   /* Qwen2: always */
        if (j && glm) {                 /* q, k, v biases or none; the part of each head RoPE turns */
            json_object_set_new(j, "attention_bias", json_boolean(m->attention_bias));
            json_object_set_new(j, "partial_rotary_factor", json_real((double)d.rd / d.hs));
        }
        if (j && obias) {               /* Llama: q, k, v and o alike; Seed-OSS: o alone */
            json_object_set_new(j, "attention_bias", json_boolean(m->attention_bias));
            if (seed) json_object_set_new(j, "attention_out_bias", json_true());
        }
        if (j && dsv3) {                /* latent attention; with experts, DeepSeek-V3's routing */
            json_t *g = json_pack("{s:i, s:i, s:i, s:i, s:b, s:b}", "kv_lora_rank", d.Rkv, "qk_nope_head_dim",
                                  d.hs - d.rd, "qk_rope_head_dim", d.rd, "v_head_dim", d.dv, "rope_interleave", 1,
                                  "attention_bias", 0);
            json_t *x = !d.E ? NULL
                      : json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:b, s:i, s:s, s:s, s:i, s:b}",
                                  "n_routed_experts", d.E, "num_experts_per_tok", m->experts_per_token,
                                  "moe_intermediate_size", d.F, "n_shared_experts", d.S / d.F,
                                  "n_group", m->router_groups, "topk_group", m->router_topk_groups,
                                  "routed_scaling_factor", m->router_scale, "norm_topk_prob", m->router_norm_topk,
                                  "first_k_dense_replace", d.dense_layers, "scoring_func", "sigmoid",
                                  "topk_method", "noaux_tc", "num_nextn_predict_layers", 0, "output_router_logits", 0);
            if (g && x) json_object_update(g, x);
            json_decref(x);
            if (g) json_object_update(j, g);
            json_decref(g);
            json_object_set_new(j, "q_lora_rank", d.Rq ? json_integer(d.Rq) : json_null());
            json_object_del(j, "head_dim");     /* DeepseekV3Config sets it to qk_rope_head_dim */
            if (dsv2) {                 /* V2's greedy softmax router; its pairs always interleaved */
                static const char *const v3_only[] = { "scoring_func", "rope_interleave", "num_nextn_predict_layers" };
                for (size_t i = 0; i < sizeof v3_only / sizeof *v3_only; i++) json_object_del(j, v3_only[i]);
                const bool grouped = m->router_groups > 1;  /* scored by their best (accel_hf_export checked) */
                json_object_set_new(j, "topk_method", json_string(grouped ? "group_limited_greedy" : "greedy"));
                json_object_set_new(j, "n_group", grouped ? json_integer(m->router_groups) : json_null());
                json_object_set_new(j, "topk_group", grouped ? json_integer(m->router_topk_groups) : json_null());
                json_object_set_new(j, "mlp_bias", json_false());
            }
            if (mistral4) {             /* softmax probabilities, renormalized or grouped */
                static const char *const v3_only[] = { "scoring_func", "topk_method", "num_nextn_predict_layers" };
                for (size_t i = 0; i < sizeof v3_only / sizeof *v3_only; i++) json_object_del(j, v3_only[i]);
            }
            json_t *rs = json_object_get(j, "rope_scaling");
            if (json_is_object(rs) && m->attention_multiplier > 0) {   /* the scores' scale as YaRN's */
                const double msa = (sqrt(m->attention_multiplier * sqrt((double)d.hs)) - 1.0) / (0.1 * log(m->rope_factor));
                json_object_set_new(rs, "mscale_all_dim", json_real(msa));
                if (!(m->rope_attention_factor > 0))    /* without mscale: transformers' default */
                    json_object_set_new(rs, "attention_factor", json_real(0.1 * log(m->rope_factor) + 1.0));
            }
        }
        if (j && (mistral4 || ministral3)) {    /* rope_parameters with the query temperature's keys */
            json_t *rs = json_object_get(j, "rope_scaling");
            json_t *rp = rs ? json_deep_copy(rs) : json_pack("{s:s}", "rope_type", "default");
            json_object_set_new(rp, "rope_theta", json_real(m->rope_theta));
            json_object_set_new(rp, "llama_4_scaling_beta", json_real(m->query_scale_beta));
            json_object_set_new(rp, "original_max_position_embeddings",
                                json_integer(m->query_scale_beta > 0 ? m->query_scale_context
                                             : rs ? m->rope_original_context : m->context));
            if (mistral4) json_object_set_new(rp, "partial_rotary_factor", json_real((double)d.rd / d.hs));
            json_object_set_new(j, "rope_parameters", rp);
            json_object_del(j, "rope_scaling");
        }
        if (j && glm_moe) {             /* DeepSeek-V3's routing; q/k/v biases, q/k norms or none */
            json_t *g = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:b, s:i, s:b, s:b, s:f, s:i, s:b}",
                                  "n_routed_experts", d.E, "num_experts_per_tok", m->experts_per_token,
                                  "moe_intermediate_size", d.F, "n_shared_experts", d.S / d.F,
                                  "n_group", m->router_groups, "topk_group", m->router_topk_groups,
                                  "routed_scaling_factor", m->router_scale, "norm_topk_prob", m->router_norm_topk,
                                  "first_k_dense_replace", d.dense_layers, "use_qk_norm", d.qk_norm,
                                  "attention_bias", m->attention_bias, "partial_rotary_factor", (double)d.rd / d.hs,
                                  "num_nextn_predict_layers", 0, "output_router_logits", 0);
            if (g) json_object_update(j, g);
            json_decref(g);
        }
        if (j && minimax) {             /* the part of each head RoPE turns, as its release and
                                         * transformers 5 write it (Mixtral's expert keys below) */
            json_object_set_new(j, "rotary_dim", json_integer(d.rd));
            json_object_set_new(j, "partial_rotary_factor", json_real((double)d.rd / d.hs));
            json_object_del(j, "attention_bias");
            json_object_del(j, "mlp_bias");
        }
        if (j && ernie) {               /* its experts' keys; the blocks after the dense ones sparse */
            json_t *g = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:f, s:b, s:f}",
                                  "moe_num_experts", d.E, "moe_k", m->experts_per_token, "moe_intermediate_size", d.F,
                                  "moe_num_shared_experts", d.S / d.F, "moe_layer_start_index", d.dense_layers,
                                  "moe_layer_end_index", m->layers - 1, "moe_layer_interval", 1, "use_bias", 0,
                                  "moe_norm_min", 1e-12, "output_router_logits", 0, "router_aux_loss_coef", 0.001);
            if (g) json_object_update(j, g);
            json_decref(g);
            json_object_del(j, "attention_bias");
            json_object_del(j, "mlp_bias");
        }
        if (j && exaone_moe) {          /* DeepSeek-V3's routing under its own key names */
            json_t *g = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:b, s:i, s:b}",
                                  "num_experts", d.E, "num_experts_per_tok", m->experts_per_token,
                                  "moe_intermediate_size", d.F, "num_shared_experts", d.S / d.F,
                                  "n_group", m->router_groups, "topk_group", m->router_topk_groups,
                                  "routed_scaling_factor", m->router_scale, "norm_topk_prob", m->router_norm_topk,
                                  "first_k_dense_replace", d.dense_layers, "output_router_logits", 0);
            json_t *types = json_array();
            for (int i = 0; g && types && i < m->layers; i++)
                json_array_append_new(types, json_string(i < d.dense_layers ? "dense" : "sparse"));
            if (g) json_object_set_new(g, "mlp_layer_types", types);
            else json_decref(types);
            if (g) json_object_update(j, g);
            json_decref(g);
            json_object_del(j, "attention_bias");
            json_object_del(j, "mlp_bias");
        }
        if (j && ghybrid) {             /* its layer types, Mamba-2's sizes, shared_mlp, RoPE or none */
            json_t *types = json_array();
            for (int i = 0; types && i < m->layers; i++)
                json_array_append_new(types, json_string(accel_layer_listed(&d.att_layers, i) ? "full_attention"
                                                                                              : "linear_attention"));
            json_object_set_new(j, "layer_types", types);
            json_object_set_new(j, "mamba_n_heads", json_integer(d.MH));
            json_object_set_new(j, "mamba_d_head", json_integer(d.MP));
            json_object_set_new(j, "mamba_n_groups", json_integer(d.MG));
            json_object_set_new(j, "mamba_d_state", json_integer(d.MN));
            json_object_set_new(j, "mamba_d_conv", json_integer(d.MK));
            json_object_set_new(j, "mamba_expand", json_integer((long long)d.MH * d.MP / m->width));
            json_object_set_new(j, "mamba_conv_bias", json_boolean(d.mconv_bias));
            json_object_set_new(j, "mamba_proj_bias", json_false());
            json_object_set_new(j, "num_local_experts", json_integer(d.E));
            json_object_set_new(j, "num_experts_per_tok", json_integer(d.E ? m->experts_per_token : 2));
            json_object_set_new(j, "intermediate_size", json_integer(d.F));
            json_object_set_new(j, "shared_intermediate_size", json_integer(d.E ? d.S : d.DF));
            json_object_set_new(j, "output_router_logits", json_boolean(m->router_aux_loss > 0));
            json_object_set_new(j, "router_aux_loss_coef", json_real(m->router_aux_loss > 0 ? m->router_aux_loss : 0.001));
            json_object_set_new(j, "position_embedding_type", json_string(m->no_rope_pattern == 1 ? "nope" : "rope"));
            json_object_del(j, "mlp_bias");
        }
        if (j && d.E && !glm_moe && !dsv3 && !ernie && !exaone_moe && !lfm2 && !ghybrid) {
            json_object_set_new(j, "num_local_experts", json_integer(d.E));
            if ((d.qk_norm || d.S) && !minimax) json_object_set_new(j, "num_experts", json_integer(d.E));   /* Qwen's, OLMoE's name */
            json_object_set_new(j, "num_experts_per_tok", json_integer(m->experts_per_token));
            json_object_set_new(j, "output_router_logits", json_boolean(m->router_aux_loss > 0));
            json_object_set_new(j, "router_aux_loss_coef",    /* off: the family's default */
                                json_real(m->router_aux_loss > 0 ? m->router_aux_loss : olmo && !minimax ? 0.01 : 0.001));
            if (d.hy_moe) json_object_set_new(j, "moe_topk", json_integer(m->experts_per_token));  /* HunYuan-MoE's */
            if (d.S && !granite && !d.hy_moe) {  /* Qwen2-MoE: its shared expert, q/k/v biases on or off */
                json_object_set_new(j, "shared_expert_intermediate_size", json_integer(d.S));
                json_object_set_new(j, "qkv_bias", json_boolean(m->attention_bias));
            }
            if (minimax) {              /* each expert of intermediate_size, Mixtral's keys */
                json_object_set_new(j, "router_jitter_noise", json_real(0.0));
            } else if (mellum) {        /* the dense blocks lead (intermediate_size), then the experts */
                json_object_set_new(j, "moe_intermediate_size", json_integer(d.F));
                json_object_set_new(j, "norm_topk_prob", json_boolean(m->router_norm_topk));
                json_t *types = json_array();
                for (int i = 0; types && i < m->layers; i++)
                    json_array_append_new(types, json_string(i < d.dense_layers ? "dense" : "sparse"));
                json_object_set_new(j, "mlp_layer_types", types);
            } else if (olmo) {          /* OLMoE, FlexOlmo: each expert of intermediate_size */
                json_object_set_new(j, "norm_topk_prob", json_boolean(m->router_norm_topk));
                if (!d.post) json_object_set_new(j, "clip_qkv", json_null());
            } else if ((d.qk_norm || d.S) && !granite && !d.hy_moe) {  /* every block sparse, each expert of
                                                                        * moe_intermediate_size */
                json_object_set_new(j, "moe_intermediate_size", json_integer(d.F));
                json_object_set_new(j, "norm_topk_prob", json_boolean(m->router_norm_topk));
                json_object_set_new(j, "decoder_sparse_step", json_integer(1));
                json_object_set_new(j, "mlp_only_layers", json_array());
            } else if (!oss && !granite) {     /* Mixtral */
                json_object_set_new(j, "router_jitter_noise", json_real(0.0));
            }
        }
        if (j && (qwen35 || d.olmoh)) { /* its layer types, delta-nets' sizes, RoPE on part of each head */
            json_t *types = json_array();
            for (int i = 0; types && i < m->layers; i++)
                json_array_append_new(types, json_string((i + 1) % d.lin_pattern ? "linear_attention" : "full_attention"));
            json_object_set_new(j, "layer_types", types);
            json_object_set_new(j, "linear_num_key_heads", json_integer(d.Hk));
            json_object_set_new(j, "linear_num_value_heads", json_integer(d.Hv));
            json_object_set_new(j, "linear_key_head_dim", json_integer(d.dk));
            json_object_set_new(j, "linear_value_head_dim", json_integer(d.dvl));
            json_object_set_new(j, "linear_conv_kernel_dim", json_integer(d.K));
            json_object_set_new(j, "rope_parameters", json_pack("{s:s, s:f, s:f}", "rope_type", "default", "rope_theta",
                                                                m->rope_theta, "partial_rotary_factor",
                                                                (double)d.rd / d.hs));
            json_object_del(j, "rope_theta");
            json_object_del(j, "mlp_bias");
            if (d.olmoh) {              /* OLMo Hybrid: RoPE on the whole head; its delta-nets' beta */
                json_object_del(json_object_get(j, "rope_parameters"), "partial_rotary_factor");
                json_object_set_new(j, "linear_allow_neg_eigval", json_boolean(m->linear_allow_neg_eigval));
            }
        }
        if (j && lfm2) {                /* its layer types, the MLP's width as it is, its norms' epsilon;
                                         * LFM2-MoE's experts (intermediate_size: its dense blocks') */
            json_t *types = json_array();
            for (int i = 0; types && i < m->layers; i++) {
                const bool attends = accel_layer_listed(&d.att_layers, i);
                const bool slides = attends && config_layer_slides(m, i);
                json_array_append_new(types, json_string(!attends ? "conv" : slides ? "sliding_attention" : "full_attention"));
            }
            json_object_set_new(j, "layer_types", types);
            json_object_set_new(j, "conv_L_cache", json_integer(d.sconv_K));
            json_object_set_new(j, "conv_bias", json_false());
            if (!d.E && !d.lfm3) json_object_set_new(j, "block_auto_adjust_ff_dim", json_false());
            if (d.lfm3) {               /* its norms after the sublayers, gate per head, window, RoPE per layer type */
                json_object_set_new(j, "use_sandwich_norm", json_boolean(d.sandwich));
                json_object_set_new(j, "use_attention_gate", json_boolean(d.head_gate));
                json_object_set_new(j, "sliding_window", window ? json_integer(m->sliding_window) : json_null());
                json_object_set_new(j, "attention_bias", json_false());
            }
            json_object_set_new(j, "norm_eps", json_real(m->rms_eps));
            if (d.E) {
                json_object_set_new(j, "num_experts", json_integer(d.E));
                json_object_set_new(j, "num_experts_per_tok", json_integer(m->experts_per_token));
                json_object_set_new(j, "moe_intermediate_size", json_integer(d.F));
                json_object_set_new(j, "num_dense_layers", json_integer(d.dense_layers));
                json_object_set_new(j, "use_expert_bias", json_boolean(d.select_bias));
                json_object_set_new(j, "norm_topk_prob", json_boolean(m->router_norm_topk));
                json_object_set_new(j, "routed_scaling_factor", json_real(m->router_scale));
                json_object_set_new(j, "output_router_logits", json_false());   /* sigmoid: no balancing loss */
            }
            json_t *rope = !strcmp(m->rope_scaling, "proportional")
                         ? json_pack("{s:s, s:f, s:f}", "rope_type", "proportional", "rope_theta", m->rope_theta,
                                     "partial_rotary_factor", m->rope_proportion)
                         : json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", m->rope_theta);
            if (d.lfm3) {               /* the sliding layers' plain RoPE (at their theta), or the full ones' */
                const double st = m->sliding_rope_theta > 0 ? m->sliding_rope_theta : m->rope_theta;
                json_t *slide = !strcmp(m->sliding_rope, "plain")
                              ? json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", st) : json_deep_copy(rope);
                rope = json_pack("{s:o, s:o}", "full_attention", rope, "sliding_attention", slide);
            }
            json_object_set_new(j, "rope_parameters", rope);
            static const char *const gone[] = { "rope_theta", "rms_norm_eps", "hidden_act", "mlp_bias",
                                                "attention_bias" };     /* the last: LFM3's says false */
            for (size_t k = 0; k < sizeof gone / sizeof *gone - (d.lfm3 ? 1 : 0); k++) json_object_del(j, gone[k]);
        }
        if (j && (exaone || exaone_moe)) {  /* with a window, the full layers are its NoPE ones */
            json_object_set_new(j, "sliding_window", window ? json_integer(m->sliding_window) : json_null());
            json_object_set_new(j, "sliding_window_pattern",
                                window && m->sliding_window_pattern ? json_integer(m->sliding_window_pattern) : json_null());
        } else if (j && qwen) {         /* the window on every layer (from layer 0 on), or layer_types */
            json_object_set_new(j, "use_sliding_window", json_boolean(window));
            json_object_set_new(j, "sliding_window", window ? json_integer(m->sliding_window) : json_null());
            if (window) json_object_set_new(j, "max_window_layers", json_integer(0));
        } else if (j && window) {       /* Mistral, Mixtral; OLMo 3; Mellum */
            json_object_set_new(j, "sliding_window", json_integer(m->sliding_window));
        } else if (j && mellum) {       /* its config's default is a window of 1024 */
            json_object_set_new(j, "sliding_window", json_null());
        }
        if (j && own) {                 /* their keys for the norms' epsilon, the biases, the activation */
            json_object_del(j, "rms_norm_eps");
            json_object_set_new(j, d.sc2 ? "norm_epsilon" : !strcmp(own_type, "nemotron") ? "norm_eps"
                                   : d.ln ? "layer_norm_eps" : "rms_norm_eps", json_real(m->rms_eps));
            json_object_set_new(j, "hidden_act", json_string(relu2 ? "relu2" : d.xielu ? "xielu"
                                                           : d.plain ? "gelu_pytorch_tanh" : "silu"));
            json_object_set_new(j, "attention_bias", json_boolean(m->attention_bias));  /* q, k, v and o */
            json_object_set_new(j, "mlp_bias", json_boolean(m->mlp_bias));
            if (d.rd < d.hs || !strcmp(own_type, "nemotron") || !strcmp(own_type, "stablelm"))
                json_object_set_new(j, "partial_rotary_factor", json_real((double)d.rd / d.hs));
            if (d.sc2 || (!d.plain && !cohere)) {   /* StarCoder2: use_bias, every projection's; StableLM: q, k, v's */
                json_object_del(j, "attention_bias");
                json_object_del(j, "mlp_bias");
                json_object_set_new(j, d.sc2 ? "use_bias" : "use_qkv_bias", json_boolean(m->attention_bias));
            }
            if (d.sc2) json_object_set_new(j, "sliding_window", window ? json_integer(m->sliding_window) : json_null());
            if (d.phi) {                /* biases everywhere, the part of each head turned */
                json_object_del(j, "attention_bias");
                json_object_del(j, "mlp_bias");
                json_object_set_new(j, "partial_rotary_factor", json_real((double)d.rd / d.hs));
                json_object_set_new(j, "qk_layernorm", json_false());
                json_object_set_new(j, "hidden_act", json_string("gelu_new"));
            } else if (d.gptj) {        /* GPT-2's key names; RoPE on rotary_dim values, theta 10000 */
                static const char *const not_gptj[] = { "hidden_size", "num_hidden_layers", "num_attention_heads",
                                                        "num_key_value_heads", "head_dim", "max_position_embeddings",
                                                        "intermediate_size", "layer_norm_eps", "hidden_act", "rope_theta",
                                                        "attention_bias", "mlp_bias", "partial_rotary_factor" };
                for (size_t i = 0; i < sizeof not_gptj / sizeof *not_gptj; i++) json_object_del(j, not_gptj[i]);
                json_t *g = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:f}", "n_embd", m->width, "n_layer", m->layers,
                                      "n_head", m->heads, "n_positions", m->context, "n_inner", d.F, "rotary_dim", d.rd,
                                      "activation_function", "gelu_new", "layer_norm_epsilon", m->rms_eps);
                if (g) json_object_update(j, g);
                json_decref(g);
            } else if (cohere) {        /* the logits' scale; no q/k norms or MLP biases */
                json_object_del(j, "mlp_bias");
                json_object_set_new(j, "logit_scale", json_real(1.0 / m->logits_scaling));
                json_object_set_new(j, "use_qk_norm", json_false());
            } else if (!d.plain) {
                json_object_set_new(j, "qk_layernorm", json_false());
                json_object_set_new(j, "use_parallel_residual", json_false());
            }
            if (d.neox) {               /* biases on every projection; transformers 4's RoPE keys, which 5 reads */
                static const char *const not_neox[] = { "mlp_bias", "head_dim", "num_key_value_heads",
                                                        "partial_rotary_factor" };
                for (size_t i = 0; i < sizeof not_neox / sizeof *not_neox; i++) json_object_del(j, not_neox[i]);
                json_object_set_new(j, "hidden_act", json_string(!strcmp(m->activation, "gelu") ? "gelu" : "gelu_new"));
                json_object_set_new(j, "use_parallel_residual", json_boolean(strcmp(m->parallel_block, "none")));
                json_object_set_new(j, "rotary_pct", json_real((double)d.rd / d.hs));
                json_object_set_new(j, "rotary_emb_base", json_real(m->rope_theta));
            }
            if (d.xielu) {              /* ApertusConfig's missing rope_parameters are Llama 3's x8 at theta 12M:
                                         * always written (transformers 4 reads rope_theta, rope_scaling) */
                json_t *rp = json_object_get(j, "rope_scaling");
                rp = rp ? json_deep_copy(rp) : json_pack("{s:s}", "rope_type", "default");
                json_object_set_new(rp, "rope_theta", json_real(m->rope_theta));
                json_object_set_new(j, "rope_parameters", rp);
                json_object_del(j, "mlp_bias");
            }
        }
        /* Which layers slide, as transformers writes it for the families that read it (OLMo 3's
         * rope_scaling is its full-attention layers': accel_hf_export checked the sliding ones'). */
        if (j && oss) {                 /* q, k, v and o biases alike; the clamped SwiGLU */
            json_object_set_new(j, "attention_bias", json_boolean(m->attention_bias));
            json_object_set_new(j, "swiglu_limit", json_real(m->swiglu_limit));
            json_object_set_new(j, "swiglu_alpha", json_real(m->swiglu_alpha));
        }
        if (j && (olmo3 || gemma2 || gemma3 || vault || (granite && d.sinks) || nope || oss || exaone || exaone_moe || mellum || ministral || cohere2 ||
                  (qwen && !(d.E && d.qk_norm && !d.S)))) {
            json_t *types = json_array();
            for (int i = 0; i < m->layers; i++)
                json_array_append_new(types, json_string(config_layer_slides(m, i) ? "sliding_attention" : "full_attention"));
            json_object_set_new(j, "layer_types", types);
        }
    }
    if (j) {
        /* Ids the tokenizer names (null when unknown: transformers' defaults may be out of range). */
        json_object_set_new(j, "bos_token_id", bos_id >= 0 && bos_id < m->vocab ? json_integer(bos_id) : json_null());
        json_object_set_new(j, "eos_token_id", eos_id >= 0 && eos_id < m->vocab ? json_integer(eos_id) : json_null());
        char ver[64];
        snprintf(ver, sizeof ver, "accel %s", accel_version());
        json_object_set_new(j, "accel_version", json_string(ver));
    }
    return j;
}

typedef struct {
    const entry_t *e;
    accel_hf_get_fn get;
    void *ctx;
    float *full;                    /* the accel tensor the cached entry comes from */
    size_t full_cap;
    char full_name[ACCEL_HF_NAME_MAX];
    float *part;                    /* the HF tensor of the entry being written */
    size_t part_cap;
    int cached;                     /* entry index the part buffer holds, -1 none */
} export_ctx_t;

static accel_status_t grow(float **buf, size_t *cap, size_t n)
{
    if (n <= *cap) return ACCEL_OK;
    float *b = realloc(*buf, sizeof(float) * n);
    if (!b) return ACCEL_ERR_NOMEM;
    *buf = b;
    *cap = n;
    return ACCEL_OK;
}

/* x's Hugging Face tensor (part) from its rows of the accel tensor (full), as read_entry reads
 * them back (export writes no MXFP4). */
static void hf_order(const entry_t *x, const float *full, float *part)
{
    const uint64_t cols = x->ndim == 2 ? x->dims[1] : 1, rows = x->r1 - x->r0, E = x->hf_dims[0];
    const float *src = full + x->r0 * cols;
    if (x->layout == L_T) {
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t k = 0; k < cols; k++) part[k * rows + r] = src[r * cols + k];
    } else if (x->layout == L_ROPE_PAIRS || x->layout == L_MLA_Q || x->layout == L_MLA_KV || x->layout == L_HEADS_QKV ||
               x->layout == L_QGATE || x->layout == L_QKVZ || x->layout == L_BA) {
        for (uint64_t r = 0; r < rows; r++)
            memcpy(part + r * cols, src + row_in_accel(r, x) * cols, sizeof(float) * cols);
    } else if (x->layout == L_EXPERT_GLU_BIAS) {
        const uint64_t w = x->hf_dims[1];
        for (uint64_t e = 0; e < E; e++)
            for (uint64_t o = 0; o < w; o++) part[e * w + o] = src[e * w + glu_row(o, w, true)];
    } else if (x->layout == L_EXPERTS || x->layout == L_EXPERTS_GLU) {
        const uint64_t w = x->hf_dims[2];
        for (uint64_t e = 0; e < E; e++)
            for (uint64_t o = 0; o < w; o++)
                for (uint64_t k = 0; k < cols; k++)
                    part[(e * cols + k) * w + o] = src[(e * w + glu_row(o, w, x->layout == L_EXPERTS_GLU)) * cols + k];
    } else {
        memcpy(part, src, sizeof(float) * rows * cols);
    }
}

static accel_status_t export_fill(void *vctx, int index, uint64_t begin, uint64_t end, float *dst)
{
    export_ctx_t *c = vctx;
    const entry_t *x = &c->e[index];
    if (c->cached != index) {
        uint64_t cols = x->ndim == 2 ? x->dims[1] : 1, rows = x->r1 - x->r0, numel = x->dims[0] * cols;
        ACCEL_CHECK(grow(&c->full, &c->full_cap, numel));
        ACCEL_CHECK(grow(&c->part, &c->part_cap, rows * cols));
        if (strcmp(c->full_name, x->accel)) {
            accel_status_t st = c->get(c->ctx, x->accel, numel, c->full);
            if (st != ACCEL_OK) {
                ACCEL_ERROR("export: cannot read accel tensor %s (for %s)", x->accel, x->hf);
                return st;
            }
            snprintf(c->full_name, sizeof c->full_name, "%s", x->accel);
        }
        hf_order(x, c->full, c->part);
        c->cached = index;
    }
    memcpy(dst, c->part + begin, sizeof(float) * (end - begin));
    return ACCEL_OK;
}

static accel_status_t write_json(const char *dir, const char *name, json_t *j)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) : NULL;
    if (!text) {
        ACCEL_ERROR("export: cannot build %s", p);
        return ACCEL_ERR_NOMEM;
    }
    size_t n = strlen(text);
    char *withnl = realloc(text, n + 2);
    if (!withnl) { free(text); return ACCEL_ERR_NOMEM; }
    withnl[n] = '\n';
    withnl[n + 1] = '\0';
    accel_status_t st = accel_h5_publish_text(p, withnl);
    free(withnl);
    return st;
}

/* Llama's blocks as they are: norms before the sublayers, SwiGLU, none of Gemma's, Granite's or
 * gpt-oss's parts (the families that add one part of their own check the rest with this). */
static bool llama_blocks(const accel_model_config_t *m)
{
    return !strcmp(m->norm_position, "pre") && !strcmp(m->activation, "silu") && !m->norm_unit_offset &&
           m->embed_scale == 1.0 && !m->query_pre_attn_scalar && !(m->attention_softcap > 0) &&
           !(m->logit_softcap > 0) && !(m->attention_multiplier > 0) && m->residual_multiplier == 1.0 &&
           m->logits_scaling == 1.0 && !m->attention_sinks && !m->expert_bias;
}

/* The combinations of Llama's building blocks no Hugging Face family has (those of LayerNorms and
 * plain MLPs: accel_hf_export): an error naming the family's rules, or ACCEL_OK. */
static accel_status_t refuse_unexportable(const accel_model_config_t *m, const dims_t *d)
{
    if (m->router_norm_eps > 0) {
        ACCEL_ERROR("export --format hf: model.router_norm_eps=%g outside LFM2-MoE has no Hugging Face counterpart "
                    "(DeepSeek-V3's family divides by the sum + 1e-20: leave it 0)", m->router_norm_eps);
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* DeepSeek-V3's routing, ungated shared experts, leading dense blocks: GLM-4.5's alone, with
     * Llama's norms and SwiGLU, per-head q/k norms or none, q/k/v biases or none. */
    const bool shared = m->experts && m->shared_expert_ffn;
    /* Latent attention: DeepSeek-V3's, with its experts, Llama's norms and SwiGLU, nothing else, or
     * Youtu-LLM's dense Llama blocks; its scores' scale other than 1/sqrt(head) only as YaRN's
     * mscale_all_dim. */
    const bool ds_scale = m->attention_multiplier > 0 && d->mla && !strcmp(m->rope_scaling, "yarn") && m->rope_factor > 1.0;
    const bool dense_mla = d->mla && !d->E;
    if (d->mla && ((d->E && !d->ds) || (m->attention_multiplier > 0 && !ds_scale) || m->sliding_window || m->no_rope_pattern ||
                  strcmp(m->rope_scaling, "none") * strcmp(m->rope_scaling, "yarn") * strcmp(m->rope_scaling, "llama3") != 0 ||
                  (dense_mla && (strcmp(m->norm_position, "pre") || strcmp(m->activation, "silu") || m->norm_unit_offset ||
                                 m->embed_scale != 1.0 || m->query_pre_attn_scalar || m->attention_softcap > 0 ||
                                 m->logit_softcap > 0 || m->residual_multiplier != 1.0 || m->logits_scaling != 1.0 ||
                                 m->attention_sinks || m->qk_norm || m->attention_bias || m->attention_out_bias ||
                                 m->query_scale_beta > 0)))) {
        ACCEL_ERROR("export --format hf: latent attention (model.kv_lora_rank=%d) %s has no Hugging Face counterpart "
                    "(DeepseekV3ForCausalLM: with DeepSeek-V3's experts (model.router_scores=sigmoid and its companions); "
                    "YoutuForCausalLM: dense, Llama's blocks without biases or q/k norms; both: no window or layers "
                    "without RoPE, the scores' scale from YaRN's mscale_all_dim alone)",
                    m->kv_lora_rank, d->E && !d->ds ? "without DeepSeek-V3's experts" : "in this combination");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* Latent attention with a softmax router: DeepSeek-V2's (its top k's probabilities as they
     * are, no groups) or Mistral Small 4's (renormalized or grouped, the query temperature); ungated
     * shared experts */
    const bool softmax_mla = d->mla && d->E && !strcmp(m->router_scores, "softmax");
    if (softmax_mla && (d->select_bias || (d->S && m->shared_expert_gate) || (d->mistral4 && !d->S) ||
                        (d->S && d->S % d->F) || strcmp(m->norm_position, "pre") || strcmp(m->activation, "silu") ||
                        m->expert_bias || m->embed_scale != 1.0 || m->residual_multiplier != 1.0 ||
                        m->logits_scaling != 1.0 ||
                        (d->mistral4 && m->router_groups > 1 && !strcmp(m->router_group_score, "max")) ||
                        (d->mistral4 && m->query_scale_beta > 0 && !strcmp(m->rope_scaling, "yarn") &&
                         m->query_scale_context != m->rope_original_context))) {
        ACCEL_ERROR("export --format hf: latent attention with softmax routing in this combination has no Hugging "
                    "Face counterpart (DeepseekV2ForCausalLM: the top k's probabilities not renormalized, no groups or "
                    "groups scored by their best, model.router_group_score=max; Mistral4ForCausalLM: renormalized or "
                    "grouped by their two best, with model.query_scale_context equal to YaRN's "
                    "original context; both: no selection bias, ungated shared experts a multiple of "
                    "model.ffn_width wide, Llama's norms and SwiGLU)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* The query temperature: Mistral Small 4's, or Ministral 3's on Llama's dense blocks (its
     * steps YaRN's original context where it has YaRN) */
    if (m->query_scale_beta > 0 && !d->mistral4 &&
        (d->mla || m->qk_norm || m->attention_bias || m->attention_out_bias || m->experts || !llama_blocks(m) ||
         m->no_rope_pattern || m->rope_dim || m->sliding_window_pattern || !strcmp(m->rope_scaling, "longrope") ||
         (!strcmp(m->rope_scaling, "yarn") && m->query_scale_context != m->rope_original_context))) {
        ACCEL_ERROR("export --format hf: model.query_scale_beta with %s has no Hugging Face counterpart "
                    "(Ministral3ForCausalLM: Llama's dense blocks, no biases or q/k norms, one window for every layer "
                    "or none, model.query_scale_context equal to YaRN's original context; Mistral4ForCausalLM: "
                    "latent attention with softmax routing)",
                    d->mla ? "DeepSeek-V3's sigmoid routing" : m->experts ? "experts"
                    : !strcmp(m->rope_scaling, "yarn") && m->query_scale_context != m->rope_original_context
                    ? "steps other than YaRN's original context" : "another family's keys");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* ERNIE 4.5's experts: softmax scores with a selection bias, the top k renormalized, unscaled,
     * ungated shared experts a multiple of model.ffn_width wide (or none), Llama's blocks */
    if (d->ernie && (!m->router_norm_topk || m->router_groups > 1 || m->router_scale != 1.0 || m->router_aux_loss > 0 ||
                    (d->S && (m->shared_expert_gate || d->S % d->F)) || !llama_blocks(m) || m->qk_norm ||
                    m->attention_bias || m->attention_out_bias || m->no_rope_pattern || m->sliding_window ||
                    m->rope_dim || m->query_scale_beta > 0)) {
        ACCEL_ERROR("export --format hf: softmax routing with a selection bias in this combination has no Hugging "
                    "Face counterpart (Ernie4_5_MoeForCausalLM: the top k renormalized and unscaled, no groups or "
                    "load-balancing loss, ungated shared experts a multiple of model.ffn_width wide or none, "
                    "Llama's blocks without biases, q/k norms, a window or other families' keys)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* MiniMax-M2: Llama's blocks with whole-projection q/k norms, every block's experts chosen by
     * sigmoid score and the selection bias, renormalized, ungrouped and unscaled */
    if (d->minimax && (m->router_groups > 1 || m->router_scale != 1.0 || !m->router_norm_topk ||
                      m->router_aux_loss > 0 || !llama_blocks(m) || m->attention_bias || m->attention_out_bias ||
                      m->sliding_window || m->no_rope_pattern || m->query_scale_beta > 0 || m->qk_norm_after_rope ||
                      strcmp(m->rope_scaling, "none"))) {
        ACCEL_ERROR("export --format hf: sigmoid experts with the selection bias under whole-projection q/k norms in "
                    "this combination have no Hugging Face counterpart (MiniMaxM2ForCausalLM: the top k renormalized, "
                    "no groups, scale or load-balancing loss, Llama's blocks without biases, a window, RoPE scaling or "
                    "other families' keys)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* K-EXAONE: DeepSeek-V3's experts (ungated shared ones) under EXAONE 4's attention with norms
     * before the sublayers: per-head q/k norms, a window whose full layers are exactly the ones
     * without RoPE (dims_of checked those) */
    if (d->exaone_moe && (!shared || m->shared_expert_gate || m->shared_expert_ffn % d->F ||
                         strcmp(m->router_group_score, "top2") || m->router_aux_loss > 0 || !llama_blocks(m) ||
                         m->attention_bias || m->attention_out_bias || m->qk_norm_after_rope || m->rope_dim ||
                         strcmp(m->sliding_rope, "scaled") || m->query_scale_beta > 0 ||
                         !strcmp(m->rope_scaling, "longrope"))) {
        ACCEL_ERROR("export --format hf: DeepSeek-V3's experts under EXAONE 4's attention in this combination have "
                    "no Hugging Face counterpart (ExaoneMoeForCausalLM: ungated shared experts a multiple of "
                    "model.ffn_width wide, groups scored by their two best, no load-balancing loss, Llama's blocks "
                    "without biases, RoPE on the whole head, one RoPE for every layer)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* Mellum: Qwen3-MoE's blocks with leading dense ones, its window's layers and a plain RoPE of
     * their own on them (one RoPE type: the full layers' scaling has no place beside it here) */
    if (d->mellum && (!llama_blocks(m) || m->attention_bias || m->attention_out_bias || m->no_rope_pattern ||
                     m->rope_dim || m->query_scale_beta > 0 || strcmp(m->rope_scaling, "none"))) {
        ACCEL_ERROR("export --format hf: Qwen3-MoE's experts with leading dense blocks or a window pattern in this "
                    "combination have no Hugging Face counterpart (MellumForCausalLM: Llama's blocks without biases "
                    "or layers without RoPE, RoPE on the whole head without scaling)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (d->ds && !softmax_mla && !d->ernie && !d->minimax && !d->exaone_moe && !d->mellum && !d->granite_moe &&
        !d->hy_moe && (strcmp(m->router_scores, "sigmoid") || !m->router_select_bias || !shared || m->shared_expert_gate ||
                  strcmp(m->router_group_score, "top2") ||
                  m->shared_expert_ffn % d->F || strcmp(m->norm_position, "pre") || strcmp(m->activation, "silu") ||
                  (m->qk_norm && strcmp(m->qk_norm_scope, "head")) || m->attention_out_bias || m->attention_sinks ||
                  m->expert_bias || m->norm_unit_offset || m->embed_scale != 1.0 || m->query_pre_attn_scalar ||
                  m->attention_softcap > 0 || m->logit_softcap > 0 || (m->attention_multiplier > 0 && !ds_scale) ||
                  m->residual_multiplier != 1.0 || m->logits_scaling != 1.0 || m->no_rope_pattern ||
                  m->sliding_window)) {
        ACCEL_ERROR("export --format hf: model.router_scores=%s, model.router_select_bias=%s, model.shared_expert_gate=%s, "
                    "model.shared_expert_ffn=%d, model.dense_layers=%d in this combination have no Hugging Face "
                    "counterpart (Glm4MoeForCausalLM: sigmoid scores with the selection bias, ungated shared experts "
                    "a multiple of model.ffn_width wide, Llama's norms and SwiGLU, per-head q/k norms or none, q/k/v "
                    "biases or none, no window or other families' keys)", m->router_scores,
                    m->router_select_bias ? "true" : "false", m->shared_expert_gate ? "true" : "false",
                    m->shared_expert_ffn, m->dense_layers);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(m->name, "llama") && m->qk_norm && m->attention_bias && !d->ds) {
        ACCEL_ERROR("export --format hf: q/k norms with q, k, v biases have no Hugging Face "
                    "counterpart (Qwen3 has the norms and no biases, Qwen2 the biases and no norms, outside "
                    "GLM-4.5's experts)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    const bool qk_all = m->qk_norm && !strcmp(m->qk_norm_scope, "all"), post = !strcmp(m->norm_position, "post");
    /* HunYuan: Llama's blocks with per-head q/k norms after RoPE, no biases; HunYuan-MoE's experts:
     * the softmax's top k renormalized beside an ungated shared MLP, all as wide */
    const bool hy_experts = !strcmp(m->router_scores, "softmax") && m->router_norm_topk && !m->router_select_bias &&
                            m->router_groups <= 1 && m->router_scale == 1.0 && !m->dense_layers &&
                            !m->expert_layers.n && m->shared_expert_ffn == m->ffn_width && !m->shared_expert_gate &&
                            !m->expert_bias && !m->expert_latent && !(m->router_aux_loss > 0) &&
                            !strcmp(m->activation, "silu");
    if (d->hunyuan && ((m->experts && !hy_experts) || qk_all || !llama_blocks(m) || m->attention_bias || m->attention_out_bias ||
                      m->sliding_window || m->no_rope_pattern || m->rope_dim || !strcmp(m->rope_scaling, "longrope") ||
                      m->query_scale_beta > 0)) {
        ACCEL_ERROR("export --format hf: model.qk_norm_after_rope=true in this combination has no Hugging Face "
                    "counterpart (HunYuanDenseV1ForCausalLM: Llama's dense blocks with per-head q/k norms, no biases, "
                    "window, layers without RoPE or other families' keys; HunYuanMoEV1ForCausalLM: with softmax "
                    "experts, their top k renormalized, beside an ungated shared expert as wide, no balancing loss)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* EXAONE 4: OLMo 2's norms after the sublayers with per-head q/k norms; with a window, its full
     * layers (every N-th, or none) are exactly the ones without RoPE. */
    const bool exaone = !strcmp(m->name, "llama") && post && m->qk_norm && !qk_all;
    if (exaone && (m->experts || m->attention_bias || m->attention_out_bias || m->attention_sinks ||
                   m->norm_unit_offset || strcmp(m->activation, "silu") || m->embed_scale != 1.0 ||
                   m->query_pre_attn_scalar || m->attention_softcap > 0 || m->logit_softcap > 0 ||
                   m->attention_multiplier > 0 || m->residual_multiplier != 1.0 || m->logits_scaling != 1.0 ||
                   (m->rope_dim && m->rope_dim < d->hs) || strcmp(m->sliding_rope, "scaled") ||
                   m->no_rope_pattern != (m->sliding_window ? m->sliding_window_pattern : 0))) {
        ACCEL_ERROR("export --format hf: norms after the sublayers with per-head q/k norms in this combination "
                    "(model.sliding_window=%d, model.sliding_window_pattern=%d, model.no_rope_pattern=%d) have no "
                    "Hugging Face counterpart (Exaone4ForCausalLM: dense, no biases or other families' keys, RoPE "
                    "on every layer without a window; with one, none on the full layers alone: model.no_rope_pattern "
                    "equal to model.sliding_window_pattern)", m->sliding_window, m->sliding_window_pattern,
                    m->no_rope_pattern);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(m->name, "llama") && (qk_all || post) && !exaone &&
        (!qk_all || (post && m->experts && m->sliding_window) || (!post && !m->experts) || shared ||
         m->attention_bias || (!post && m->sliding_window))) {
        ACCEL_ERROR("export --format hf: %s have no Hugging Face counterpart (OLMo 2: norms after the sublayers "
                    "and whole-projection q/k norms, dense, OLMo 3 with a sliding window; OLMoE: the q/k norms "
                    "with experts, norms before, no window; FlexOlmo: OLMo 2's with experts, no window; none with "
                    "biases or a shared expert)",
                    !qk_all ? "norms after the sublayers without whole-projection q/k norms"
                            : "whole-projection q/k norms in this combination");
        return ACCEL_ERR_UNSUPPORTED;
    }
    const bool granite_keys = (m->attention_multiplier > 0 && !ds_scale) || m->residual_multiplier != 1.0 ||
                              m->logits_scaling != 1.0;
    if (!strcmp(m->name, "llama") && m->no_rope_pattern && !exaone && !d->exaone_moe &&
        !(granite_keys && m->attention_sinks) && (m->qk_norm || m->attention_bias || m->experts || post || m->sliding_window)) {
        ACCEL_ERROR("export --format hf: layers without RoPE (model.no_rope_pattern=%d) with %s have no Hugging "
                    "Face counterpart (SmolLM3: Llama's blocks, no window; GraniteSWA: Granite's with sinks)", m->no_rope_pattern,
                    m->qk_norm ? "q/k norms" : m->attention_bias ? "q, k, v biases" : m->experts ? "experts"
                    : post ? "norms after the sublayers" : "a sliding window");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* Gemma: 1 + weight norms, GeGLU and embeddings times sqrt(width) together; Gemma 3 with its
     * norms before and after the sublayers and per-head q/k norms, Gemma 1 with Llama's. */
    const bool llama = !strcmp(m->name, "llama"), sandwich = !strcmp(m->norm_position, "both");
    const bool geglu = !strcmp(m->activation, "gelu_tanh");
    const bool caps = m->attention_softcap > 0 || m->logit_softcap > 0;
    const bool gemma_keys = m->norm_unit_offset || geglu || (m->embed_scale != 1.0 && !granite_keys) ||
                            (sandwich && m->norm_unit_offset) ||
                            m->query_pre_attn_scalar || caps ||
                            (m->sliding_rope_theta && !d->mellum && !(granite_keys && m->attention_sinks));
    if (llama && granite_keys && (gemma_keys || m->qk_norm || m->attention_bias || post || m->attention_out_bias ||
                                  m->rope_dim || ((m->no_rope_pattern || m->sliding_window) && !m->attention_sinks) ||
                                  (m->experts && ((shared && m->shared_expert_gate) || m->expert_bias ||
                                                  !m->router_norm_topk || strcmp(m->activation, "silu"))))) {
        ACCEL_ERROR("export --format hf: model.attention_multiplier, model.residual_multiplier or "
                    "model.logits_scaling with other than Llama's blocks have no Hugging Face counterpart "
                    "(GraniteForCausalLM: Llama's blocks, no window, q/k norms or biases; GraniteMoeForCausalLM: "
                    "with SwiGLU experts, top-k renormalized; GraniteMoeSharedForCausalLM: with an ungated shared "
                    "expert; GraniteSWAForCausalLM, GraniteMoeSWAForCausalLM: with sinks, a window and layers "
                    "without RoPE)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    const bool gemma_blocks = m->norm_unit_offset && geglu && (float)m->embed_scale == (float)sqrt((double)m->width) &&
                              !m->attention_bias && !m->experts && !m->no_rope_pattern && !qk_all && !post;
    const bool gemma3 = gemma_blocks && sandwich && m->qk_norm;
    const bool gemma2 = gemma_blocks && sandwich && !m->qk_norm && !m->sliding_rope_theta &&
                        (!strcmp(m->sliding_rope, "scaled") || !strcmp(m->rope_scaling, "none"));
    const bool gemma1 = gemma_blocks && !sandwich && !m->qk_norm && !m->sliding_window && !m->query_pre_attn_scalar &&
                        !caps;
    const bool vault = gemma_blocks && !sandwich && !m->qk_norm && !gemma1 && !m->sliding_rope_theta &&
                       (!strcmp(m->sliding_rope, "scaled") || !strcmp(m->rope_scaling, "none"));   /* Gemma 2's, before */
    if (llama && gemma_keys && !gemma3 && !gemma2 && !gemma1 && !vault) {
        ACCEL_ERROR("export --format hf: model.norm_unit_offset=%s, model.activation=%s, model.embed_scale=%g, "
                    "model.norm_position=%s, model.qk_norm=%s have no Hugging Face counterpart (Gemma: 1 + weight "
                    "norms, gelu_tanh, embed_scale sqrt(width) = %g, no biases or experts; Gemma 3 with "
                    "norm_position=both and q/k norms per head, Gemma 2 with norm_position=both and one RoPE, "
                    "VaultGemma alike with norm_position=pre, Gemma 1 with neither, no window and no soft caps)",
                    m->norm_unit_offset ? "true" : "false", m->activation, m->embed_scale, m->norm_position,
                    m->qk_norm ? "true" : "false", (double)(float)sqrt((double)m->width));
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* Where each layer's window and RoPE go: OLMo 3, Gemma 2/3 and the Qwen family say which
     * layers slide (layer_types), Mistral, Mixtral and Qwen3-MoE slide everywhere; OLMo 3 and Gemma 3
     * have a RoPE per layer type (a scaling is the full layers' alone, Gemma 3's sliding layers have
     * their own theta), every other family one RoPE. */
    const bool per_type_rope = (qk_all && post && m->sliding_window) || gemma3 || d->mellum;
    const bool qwen = !qk_all && !gemma_keys && !m->attention_sinks && (m->qk_norm || m->attention_bias || shared) &&
                      !(m->experts && m->qk_norm && !shared);
    const bool ministral = !m->experts && !m->qk_norm && !m->attention_bias && !qk_all && !post && !sandwich &&
                           !gemma_keys;    /* Mistral's blocks with layer_types: Ministral 8B's */
    const bool layer_types = per_type_rope || gemma2 || vault || qwen || m->attention_sinks || ministral;
    const bool granite_swa = granite_keys && m->attention_sinks;   /* a theta per layer: layer_rope_theta */
    if (llama && m->sliding_window &&
        (((m->sliding_window_pattern || m->sliding_layers.n) && !layer_types) ||
         (m->sliding_rope_theta && !gemma3 && !d->mellum && !granite_swa) ||
         (strcmp(m->rope_scaling, "none") && (strcmp(m->sliding_rope, "plain") == 0) != per_type_rope))) {
        ACCEL_ERROR("export --format hf: a sliding window with model.sliding_window_pattern=%d, "
                    "model.sliding_rope=%s and model.rope_scaling=%s has no Hugging Face counterpart here (OLMo 3: "
                    "OLMo 2's blocks, any pattern, the sliding layers' RoPE plain; Gemma 3 alike, with its own "
                    "theta; Gemma 2, Qwen2, Qwen3, Qwen2-MoE, Ministral (Mistral's blocks): any pattern, one "
                    "RoPE; Mellum: Qwen3-MoE's, a plain sliding RoPE of its own; Mixtral: every layer slides, one "
                    "RoPE)", m->sliding_window_pattern,
                    m->sliding_rope, m->rope_scaling);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!strcmp(m->name, "llama") && m->experts && !m->attention_sinks && !d->ds &&
        ((shared && m->qk_norm) || (!shared && m->attention_bias) ||
         (!shared && !m->qk_norm && !m->router_norm_topk))) {
        ACCEL_ERROR("export --format hf: experts with %s have no Hugging Face counterpart (Mixtral: no q/k "
                    "norms, weights renormalized; Qwen3-MoE: q/k norms; Qwen2-MoE: a shared expert, no q/k "
                    "norms; only Qwen2-MoE has q, k, v biases)",
                    shared && m->qk_norm ? "a shared expert and q/k norms"
                    : m->attention_bias ? "q, k, v biases and no shared expert"
                                        : "top-k weights not renormalized and neither q/k norms nor a shared expert");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* gpt-oss: sinks, q/k/v/o biases alike, biased experts of clamped SwiGLU, renormalized top-k,
     * Llama's norms; its parts elsewhere have no Hugging Face counterpart. */
    const bool clamped = !strcmp(m->activation, "clamped_swiglu");
    const bool oss_keys = m->attention_sinks || m->expert_bias || clamped;
    const bool granite_sinks = granite_keys && m->attention_sinks && !m->expert_bias && !clamped;   /* GraniteSWA's */
    if (llama && oss_keys && !granite_sinks &&
        (!m->attention_sinks || m->attention_bias != m->attention_out_bias || !m->experts || !m->expert_bias ||
         !clamped || !m->router_norm_topk || shared || m->qk_norm || strcmp(m->norm_position, "pre") ||
         gemma_keys || granite_keys || m->no_rope_pattern || (m->sliding_window && strcmp(m->sliding_rope, "scaled")))) {
        ACCEL_ERROR("export --format hf: model.attention_sinks=%s, model.attention_out_bias=%s, model.expert_bias=%s, "
                    "model.activation=%s in this combination have no Hugging Face counterpart "
                    "(GptOssForCausalLM: sinks, q/k/v/o biases all or none, experts with biases, renormalized top-k "
                    "and clamped_swiglu, norms before the sublayers, no shared expert, q/k norms or other families' "
                    "keys)", m->attention_sinks ? "true" : "false", m->attention_out_bias ? "true" : "false",
                    m->expert_bias ? "true" : "false", m->activation);
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* GLM: part of each head turned (interleaved pairs in its files), or GLM-4's norms after the
     * sublayers without Gemma's 1 + weight; Llama's blocks otherwise, q/k/v biases or none. */
    const int hs = m->head_dim ? m->head_dim : m->width / m->heads;
    const bool glm = !d->ds && !d->mla && !d->phi3 && !d->clovax && ((m->rope_dim && m->rope_dim < hs) || (sandwich && !m->norm_unit_offset));
    if (llama && glm &&
        (m->qk_norm || m->experts || m->sliding_window || m->attention_out_bias || m->attention_sinks ||
         m->norm_unit_offset || geglu || m->embed_scale != 1.0 || m->query_pre_attn_scalar || caps || granite_keys ||
         m->no_rope_pattern || post)) {
        ACCEL_ERROR("export --format hf: model.rope_dim=%d or model.norm_position=%s without Gemma's norms, with "
                    "other parts, has no Hugging Face counterpart (GlmForCausalLM, Glm4ForCausalLM: Llama's blocks, "
                    "q/k/v biases or none, no q/k norms, experts, window or other families' keys)", m->rope_dim,
                    m->norm_position);
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* LongRoPE: Phi-3's (Phi3ForCausalLM: Llama's blocks, any part of each head turned, one window
     * for every layer or none). */
    if (d->phi3 && (m->attention_bias || m->attention_out_bias || m->qk_norm || m->experts || m->head_dim ||
                   m->sliding_window_pattern || gemma_keys || granite_keys || oss_keys || m->no_rope_pattern ||
                   strcmp(m->norm_position, "pre"))) {
        ACCEL_ERROR("export --format hf: model.rope_scaling=longrope with %s has no Hugging Face counterpart "
                    "(Phi3ForCausalLM: Llama's blocks, no biases, q/k norms, experts, model.head_dim or other "
                    "families' keys; a window on every layer or none)",
                    m->attention_bias || m->attention_out_bias ? "attention biases" : m->qk_norm ? "q/k norms"
                    : m->experts ? "experts" : m->head_dim ? "model.head_dim" : m->sliding_window_pattern
                    ? "model.sliding_window_pattern" : "another family's keys");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* An output projection bias without the sinks: Llama's (with q, k, v biases) or Seed-OSS's
     * (without), Llama's blocks only. */
    if (llama && m->attention_out_bias && !m->attention_sinks &&
        (m->qk_norm || m->experts || m->sliding_window || gemma_keys || granite_keys || m->no_rope_pattern ||
         strcmp(m->norm_position, "pre"))) {
        ACCEL_ERROR("export --format hf: model.attention_out_bias=true with %s has no Hugging Face counterpart "
                    "(LlamaForCausalLM with attention_bias, SeedOssForCausalLM: Llama's blocks, no q/k norms, "
                    "experts or window)", m->qk_norm ? "q/k norms" : m->experts ? "experts"
                    : m->sliding_window ? "a sliding window" : "another family's keys");
        return ACCEL_ERR_UNSUPPORTED;
    }
    return ACCEL_OK;
}

/* Quantized exports (compressed-tensors, as llm-compressor writes them): which tensors are quantized
 * (the blocks' linear layers; not GPT-2's Conv1D, which are no Linear, nor routers, embeddings or
 * the head; NVFP4: rows of whole groups of 16). */
static bool quant_weight(const entry_t *x, accel_hf_dtype_t dtype)
{
    const size_t n = strlen(x->hf);
    return x->hf_ndim == 2 && lora_layout(x) && x->layout != L_T && !strncmp(x->accel, "h.", 2) &&
           !strstr(x->accel, "router") && n > 7 && !strcmp(x->hf + n - 7, ".weight") &&
           (dtype != ACCEL_HF_NVFP4 || x->hf_dims[1] % 16 == 0);
}

/* NVFP4's e2m1 code (sign bit 8) nearest v, ties to the even code. */
static unsigned e2m1_code(float v)
{
    const float a = fabsf(v);
    unsigned best = 0;
    for (unsigned k = 1; k < 8; k++) {
        const float d = fabsf(a - g_fp4[k]), db = fabsf(a - g_fp4[best]);
        if (d < db || (d == db && !(k & 1))) best = k;
    }
    return (signbit(v) && best ? 8u : 0u) | best;
}

typedef struct {
    export_ctx_t *c;
    accel_hf_dtype_t dtype;
    const int *src;                 /* per written tensor: its entry */
    const char *kind;               /* ... 'w' plain; FP8: 'q' e4m3 values over their row's scale, 's' the
                                     * scales; NVFP4: 'p' packed bytes, 's' the groups' e4m3 scales, 'g'
                                     * the global scale */
    float *q;                       /* the cached entry's quantized values (FP8: over the scales; NVFP4:
                                     * the packed bytes) and scales */
    size_t q_cap;
    float *scale;
    size_t scale_cap;
    float global;
    int done;                       /* entry q and scale are of, -1 none */
} quant_ctx_t;

/* x's tensor (part [rows, cols]) quantized into f->q and f->scale. FP8: by rows, max |row| / 448.
 * NVFP4 as compressed-tensors: a global scale 448 x 6 / max |w| (here the power of two at or below
 * it: every value then dequantizes exactly in bf16, as transformers' decompressor computes it);
 * each group of 16 scale max / 6 times it, rounded to e4m3; values over (that / global) rounded to
 * e2m1, two a byte, the first in the low bits. */
static accel_status_t quantize_entry(quant_ctx_t *f, const entry_t *x, const float *part)
{
    const uint64_t rows = x->hf_dims[0], cols = x->hf_dims[1], G = f->dtype == ACCEL_HF_NVFP4 ? 16 : cols;
    accel_status_t st = grow(&f->q, &f->q_cap, rows * cols);
    if (st == ACCEL_OK) st = grow(&f->scale, &f->scale_cap, rows * (cols / G));
    if (st != ACCEL_OK) return st;
    float amax = 0;
    for (uint64_t k = 0; k < rows * cols; k++) amax = fmaxf(amax, fabsf(part[k]));
    f->global = f->dtype == ACCEL_HF_NVFP4 && amax > 0 ? exp2f(floorf(log2f(448.0f * 6.0f / amax))) : 1.0f;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t g = 0; g < cols / G; g++) {
            const float *w = part + r * cols + g * G;
            float gmax = 0;
            for (uint64_t k = 0; k < G; k++) gmax = fmaxf(gmax, fabsf(w[k]));
            if (f->dtype == ACCEL_HF_FP8) {
                const float sc = gmax > 0 ? gmax / 448.0f : 1.0f;
                f->scale[r] = sc;
                for (uint64_t k = 0; k < G; k++) f->q[r * cols + k] = w[k] / sc;
                continue;
            }
            const float s8 = accel_st_f8_e4m3_round(gmax / 6.0f * f->global), eff = s8 / f->global;
            f->scale[r * (cols / G) + g] = s8;
            for (uint64_t k = 0; k < G; k += 2) {
                const unsigned lo = eff > 0 ? e2m1_code(w[k] / eff) : 0, hi = eff > 0 ? e2m1_code(w[k + 1] / eff) : 0;
                f->q[(r * cols + g * G + k) / 2] = (float)(lo | hi << 4);
            }
        }
    return ACCEL_OK;
}

static accel_status_t quant_fill(void *vctx, int index, uint64_t begin, uint64_t end, float *dst)
{
    quant_ctx_t *f = vctx;
    const int i = f->src[index];
    if (f->kind[index] == 'w') return export_fill(f->c, i, begin, end, dst);
    accel_status_t st = export_fill(f->c, i, 0, 0, dst);          /* the entry's whole tensor, cached */
    if (st == ACCEL_OK && f->done != i) {
        st = quantize_entry(f, &f->c->e[i], f->c->part);
        f->done = st == ACCEL_OK ? i : -1;
    }
    const float *from = f->kind[index] == 's' ? f->scale : f->q;
    for (uint64_t k = begin; st == ACCEL_OK && k < end; k++) dst[k - begin] = f->kind[index] == 'g' ? f->global : from[k];
    return st;
}

accel_status_t accel_hf_export(const accel_config_t *cfg, accel_hf_get_fn get, void *ctx, accel_hf_dtype_t dtype,
                               const char *outdir, const accel_hf_tokenizer_t *tok)
{
    const bool bf16 = dtype != ACCEL_HF_FP32, quant = dtype == ACCEL_HF_FP8 || dtype == ACCEL_HF_NVFP4;
    const bool nvfp4 = dtype == ACCEL_HF_NVFP4;
    static const accel_hf_tokenizer_t none = { .bos_id = -1, .eos_id = -1 };
    if (!tok) tok = &none;
    const accel_model_config_t *m = &cfg->model;
    if (strcmp(m->name, "gpt") && strcmp(m->name, "llama")) {
        ACCEL_ERROR("export --format hf: model.name=%s has no Hugging Face counterpart\n--> hint: gpt "
                    "(GPT2LMHeadModel) and llama (LlamaForCausalLM and the families docs/huggingface.md lists) "
                    "export", m->name);
        return ACCEL_ERR_UNSUPPORTED;
    }
    const dims_t d = dims_of(m);
    if (d.Lat && !d.nemh) {
        ACCEL_ERROR("export --format hf: model.expert_latent=%d outside Nemotron-H's layers has no Hugging Face "
                    "counterpart (NemotronHForCausalLM's moe_latent_size: each layer one mixer or one MLP, "
                    "model.mlp_only_layers and model.mixer_only_layers)", d.Lat);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (!d.llama4 && (!m->qk_norm_weights || strcmp(m->qk_norm_layers, "all") || m->sliding_chunked ||
                      m->query_scale_offset || strcmp(m->query_scale_layers, "all") || (d.expert_layers.n && !d.jamba))) {
        ACCEL_ERROR("export --format hf: Llama 4's keys (unweighted q/k norms or norms on the layers with RoPE only, "
                    "chunked attention, the query temperature's offset or layers, model.expert_layers) without its "
                    "experts (model.expert_input_scaled) have no Hugging Face counterpart\n--> hint: "
                    "Llama4ForCausalLM has them all (model.expert_layers: Jamba's too)");
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* LayerNorms or a plain MLP: five families, each with Llama's other blocks (norms before the
     * sublayers, no experts, q/k norms, latent attention or scalars), RoPE plain or scaled by
     * llama3, linear or YaRN, each with its own biases, window and part of the head turned. */
    const bool parallel = strcmp(m->parallel_block, "none") != 0;
    if (!d.nemh && (d.ln || d.plain || parallel || m->head_bias)) {
        const bool relu2 = !strcmp(m->activation, "relu2"), cohere = d.cohere, stablelm = d.ln && !d.plain && !cohere;
        const bool nemotron = d.ln && relu2 && m->norm_unit_offset;
        const bool phi_j = d.phi || d.gptj;
        const char *family = d.phi ? "PhiForCausalLM" : d.gptj ? "GPTJForCausalLM"
                           : d.neox ? "GPTNeoXForCausalLM" : d.sc2 ? "Starcoder2ForCausalLM"
                           : cohere ? (m->sliding_window ? "Cohere2ForCausalLM" : "CohereForCausalLM")
                           : stablelm ? "StableLmForCausalLM"
                           : !d.ln ? (d.xielu ? "ApertusForCausalLM" : d.plain ? "ArceeForCausalLM" : "LlamaForCausalLM")
                           : nemotron ? "NemotronForCausalLM" : "Jais2ForCausalLM";
        const char *bad = m->head_bias && !phi_j ? "model.head_bias (Phi's and GPT-J's alone)"
                        : phi_j && (!m->head_bias || !m->mlp_bias)
                        ? "an LM head or an MLP without biases (Phi's and GPT-J's have them)"
                        : d.gptj && (d.KVH != m->heads || d.hs * m->heads != m->width || strcmp(m->rope_scaling, "none") ||
                                     m->rope_theta != 10000.0)
                        ? "grouped-query heads, model.head_dim, a RoPE scaling or a theta other than 10000 (GPT-J has "
                          "none of them)"
                        : d.phi && d.hs * m->heads != m->width ? "model.head_dim apart from width / heads"
                        : !d.ln && !d.plain ? "model.parallel_block under RMSNorms (Cohere's and GPT-NeoX's are LayerNorms)"
                        : (stablelm || cohere) && strcmp(m->activation, "silu") ? "a gated activation other than SwiGLU's"
                        : d.xielu && (d.ln || parallel || m->mlp_bias)
                        ? "xielu under LayerNorms, beside attention or with MLP biases (Apertus's: RMSNorms, none)"
                        : !d.ln && !relu2 && !d.xielu
                        ? "a plain MLP under RMSNorms with an activation other than relu2 (Arcee's) or xielu (Apertus's)"
                        : d.xielu && (!m->qk_norm || strcmp(m->qk_norm_scope, "head") || m->qk_norm_after_rope ||
                                      !m->qk_norm_weights || strcmp(m->qk_norm_layers, "all"))
                        ? "xielu without per-head q/k norms before RoPE on every layer (Apertus has them)"
                        : d.ln && !m->norm_bias && !cohere
                        ? "LayerNorms without biases (Cohere's alone: SwiGLU beside attention through norm1)"
                        : strcmp(m->norm_position, "pre") || m->embed_scale != 1.0 || m->query_pre_attn_scalar ||
                          m->attention_softcap > 0 || m->logit_softcap > 0 || m->attention_multiplier > 0 ||
                          m->residual_multiplier != 1.0 || (m->logits_scaling != 1.0 && !cohere) || m->attention_sinks
                        ? "Gemma's, Granite's or gpt-oss's keys"
                        : d.E || d.mla || (m->qk_norm && !d.xielu) || d.lin_pattern || d.gate || d.lfm2
                        ? "experts, latent attention, q/k norms, gated delta-nets, gated attention or short convolutions"
                        : m->norm_unit_offset && !nemotron ? "model.norm_unit_offset (Nemotron's alone: relu2 under LayerNorms)"
                        : parallel && !(d.neox && !strcmp(m->parallel_block, "two_norms")) && !cohere && !phi_j
                        ? "model.parallel_block (GPT-NeoX's two_norms, Cohere's, Phi's and GPT-J's one_norm)"
                        : d.neox && (d.KVH != m->heads || d.hs * m->heads != m->width || !m->mlp_bias ||
                                     m->attention_bias != m->attention_out_bias)
                        ? "grouped-query heads, model.head_dim, an MLP without biases or some attention biases without "
                          "others (GPT-NeoX has none of them)"
                        : (cohere ? m->no_rope_pattern != (m->sliding_window ? m->sliding_window_pattern : 0)
                                  : m->no_rope_pattern || m->sliding_window_pattern) ||
                          m->query_scale_beta > 0 || !strcmp(m->rope_scaling, "longrope")
                        ? "layers without RoPE (but Cohere 2's full ones), a window pattern, the query temperature or LongRoPE"
                        : m->sliding_window && !d.sc2 && !cohere ? "a sliding window (StarCoder2's and Cohere 2's alone)"
                        : m->rope_dim && !nemotron && !stablelm && !d.neox && !phi_j
                        ? "model.rope_dim (Nemotron's, StableLM's, GPT-NeoX's, Phi's and GPT-J's alone)"
                        : (d.sc2 || stablelm) && d.hs * m->heads != m->width ? "model.head_dim apart from width / heads"
                        : d.sc2 && (m->attention_bias != m->mlp_bias || m->attention_out_bias != m->mlp_bias)
                        ? "biases on some projections and not others (StarCoder2's use_bias is every projection's)"
                        : stablelm && m->attention_out_bias ? "an attention output bias (StableLM's are q, k, v's)"
                        : !d.sc2 && !stablelm && m->attention_bias != m->attention_out_bias
                        ? "q/k/v biases without the output projection's or the reverse (attention_bias is all four)"
                        : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.norm=%s with model.mlp=%s (%s) and %s has no Hugging Face "
                        "counterpart\n--> hint: GPT-NeoX (layer, plain gelu, biases, partial RoPE, "
                        "model.parallel_block=two_norms or none), StarCoder2 (layer, plain gelu_tanh, use_bias, a window), Nemotron "
                        "(layer with model.norm_unit_offset, plain relu2, partial RoPE), Jais2 (layer, plain relu2), "
                        "Arcee (rms, plain relu2), Apertus (rms, plain xielu, per-head q/k norms), StableLM (layer, "
                        "gated silu, q/k/v biases, partial RoPE) and "
                        "Cohere (layer without biases, gated silu, model.parallel_block=one_norm, Cohere 2: a window "
                        "pattern whose full layers have no RoPE), Phi and GPT-J (layer, plain gelu_tanh, "
                        "model.parallel_block=one_norm, model.head_bias; Phi with attention biases, GPT-J without) "
                        "export, with Llama's blocks otherwise", m->norm, m->mlp, family, bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    }
    if (d.jamba) {                  /* Jamba: Mamba-1 beside attention without positions, Mixtral's routing */
        accel_numbers_t moe = { 0 };
        for (int l = 0; l < m->layers && d.E; l++)
            if (d.expert_layers.n ? accel_layer_listed(&d.expert_layers, l) : l >= d.dense_layers) moe.v[moe.n++] = l;
        int pp, po;
        const char *bad = d.M1norms != 2 ? "Mamba-1 layers without weighted norms on dt, B and C (model.mamba1_norms="
                                           "weighted: Jamba's)"
                        : fabs(m->mamba1_norm_eps - m->rms_eps) > 1e-12
                        ? "model.mamba1_norm_eps apart from model.rms_eps (Jamba's norms on dt, B, C take rms_norm_eps)"
                        : d.M1I % m->width ? "model.mamba1_width not a multiple of model.width (Jamba's mamba_expand)"
                        : !layer_period(&d.att_layers, m->layers, &pp, &po) || !layer_period(&moe, m->layers, &pp, &po)
                        ? "attention or expert layers that are not every N-th from an offset (Jamba's periods)"
                        : m->no_rope_pattern != 1 || m->sliding_window || m->qk_norm || m->attention_bias ||
                          m->attention_out_bias || m->attention_sinks || m->attention_output_gate ||
                          m->attention_head_gate || d.mla || d.hs * m->heads != m->width
                        ? "RoPE, a window, q/k norms, biases, sinks, gates or latent attention on its attention, or "
                          "model.head_dim apart from width / heads"
                        : d.ln || d.plain || parallel || m->head_bias || m->norm_unit_offset ||
                          strcmp(m->norm_position, "pre") || strcmp(m->activation, "silu")
                        ? "LayerNorms, a plain MLP, parallel blocks, a head bias, norms by 1 + weight or after the "
                          "sublayers, or an activation but SwiGLU's"
                        : m->embed_scale != 1.0 || m->logit_softcap > 0 || m->logits_scaling != 1.0 ||
                          m->residual_multiplier != 1.0 || m->attention_multiplier > 0
                        ? "Gemma's or Granite's scalars"
                        : d.E && (strcmp(m->router_scores, "softmax") || m->router_norm_topk || d.select_bias ||
                                  m->router_groups > 1 || m->router_scale != 1.0 || m->expert_bias || d.S || d.F != d.DF)
                        ? "experts other than Jamba's (the softmax's top k not renormalized, no shared expert, as wide as "
                          "the dense MLP)"
                        : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.mamba1_width=%d beside attention and MLPs with %s has no Hugging Face "
                        "counterpart\n--> hint: JambaForCausalLM: Mamba-1 layers with weighted norms on dt, B, C beside "
                        "every N-th layer's attention without positions, SwiGLU MLPs or Mixtral's experts every M-th "
                        "layer, RMSNorms before the sublayers, no biases", m->mamba1_width, bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (d.mamba1) {          /* Mamba, Falcon Mamba: every layer a Mamba-1 mixer alone */
        bool all = m->mixer_only_layers.n == m->layers && !d.att_layers.n;
        const char *bad = !all ? "attention or MLP layers (Mamba's layers are each a Mamba-1 mixer alone)"
                        : d.M1norms == 2 ? "model.mamba1_norms=weighted (Jamba's, whose blocks accel does not export)"
                        : d.M1I % m->width ? "model.mamba1_width not a multiple of model.width (MambaConfig's channels "
                                             "are an integer expand x hidden_size)"
                        : d.ln || m->norm_unit_offset || m->head_bias || m->embed_scale != 1.0 ||
                          m->logit_softcap > 0 || m->logits_scaling != 1.0 || m->residual_multiplier != 1.0 ||
                          strcmp(m->norm_position, "pre")
                        ? "LayerNorms, norms by 1 + weight or after the mixer, a head bias or Gemma's or Granite's "
                          "scalars" : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.mamba1_width=%d with %s has no Hugging Face counterpart\n--> hint: "
                        "MambaForCausalLM (FalconMambaForCausalLM with model.mamba1_norms=plain): every layer an "
                        "RMSNorm and a Mamba-1 mixer (model.mixer_only_layers all), no attention", m->mamba1_width, bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (d.nemh) {            /* Nemotron-H: every layer one mixer without RoPE, or one plain MLP */
        bool whole = true;
        for (int i = 0; i < m->layers; i++)
            whole &= accel_layer_listed(&d.mlp_only, i) != accel_layer_listed(&d.mixer_only, i);
        const char *bad = !whole ? "a layer with both sublayers (Nemotron-H's layers have one each)"
                        : m->qk_norm || m->attention_bias || m->attention_out_bias || m->attention_sinks ||
                          m->attention_output_gate || m->attention_head_gate || d.mla
                        ? "q/k norms, attention biases, sinks, gates or latent attention"
                        : d.ln || !d.plain || d.mlp_bias || parallel || m->head_bias || m->norm_unit_offset ||
                          strcmp(m->norm_position, "pre") || m->tie_embeddings
                        ? "LayerNorms, a gated MLP or biases on it, parallel blocks, a head bias or a tied one, norms by "
                          "1 + weight or after the sublayers"
                        : m->embed_scale != 1.0 || m->query_pre_attn_scalar || m->attention_softcap > 0 ||
                          m->logit_softcap > 0 || m->query_scale_beta > 0 || m->attention_multiplier > 0 ||
                          m->residual_multiplier != 1.0 || m->logits_scaling != 1.0
                        ? "Gemma's, Granite's or Mistral's keys"
                        : m->no_rope_pattern != 1 || m->sliding_window ? "RoPE or a window on its attention"
                        : d.E && (strcmp(m->router_scores, "sigmoid") || !d.select_bias || !d.S || m->shared_expert_gate ||
                                  m->expert_bias || m->router_aux_loss > 0 || m->router_norm_eps > 0 ||
                                  strcmp(m->router_group_score, "top2"))
                        ? "experts other than DeepSeek-V3's routing with a selection bias and an ungated shared expert"
                        : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.mlp_only_layers / model.mixer_only_layers with %s has no Hugging "
                        "Face counterpart\n--> hint: NemotronHForCausalLM: each layer Mamba-2, attention without RoPE, "
                        "a plain MLP or plain experts, RMSNorms before them, no biases, a separate head", bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (d.llama4) {          /* Llama 4: experts weighing their input, chunks, layers without RoPE */
        const char *bad = d.ln || d.plain || parallel || m->head_bias || m->norm_unit_offset ||
                          strcmp(m->norm_position, "pre") || strcmp(m->activation, "silu")
                        ? "LayerNorms, a plain MLP, parallel blocks, a head bias, norms by 1 + weight or after the "
                          "sublayers, or an activation but SwiGLU's"
                        : m->embed_scale != 1.0 || m->query_pre_attn_scalar || m->attention_softcap > 0 ||
                          m->logit_softcap > 0 || m->attention_multiplier > 0 || m->residual_multiplier != 1.0 ||
                          m->logits_scaling != 1.0 || m->attention_sinks || m->attention_output_gate ||
                          m->attention_head_gate || d.mla || d.lin_pattern || d.mamba || d.lfm2 || d.nemh
                        ? "Gemma's, Granite's, gpt-oss's or Qwen3.5's keys, latent attention or recurrent layers"
                        : m->attention_bias != m->attention_out_bias
                        ? "q/k/v biases without the output projection's or the reverse (attention_bias is all four)"
                        : m->qk_norm && (!d.qk_unweighted || !m->qk_norm_after_rope || strcmp(m->qk_norm_scope, "head") ||
                                         (d.nope && !d.qk_rope_only))
                        ? "q/k norms other than Llama 4's (unweighted, per head, after RoPE, on the layers with RoPE)"
                        : strcmp(m->router_scores, "sigmoid") || m->router_norm_topk || d.select_bias ||
                          m->router_groups > 1 || m->router_scale != 1.0 || m->expert_bias || d.S != d.F ||
                          m->shared_expert_gate || d.dense_layers || m->router_aux_loss > 0
                        ? "experts other than Llama 4's (the sigmoid of the chosen logits, not renormalized, beside an "
                          "ungated shared expert as wide as each; dense blocks by model.expert_layers)"
                        : m->rope_dim || (strcmp(m->rope_scaling, "none") && strcmp(m->rope_scaling, "llama3"))
                        ? "partial RoPE or a RoPE scaling other than llama3"
                        : m->sliding_window && (!m->sliding_chunked || m->sliding_window_pattern != d.nope ||
                                                m->sliding_layers.n || strcmp(m->sliding_rope, "scaled"))
                        ? "a window other than chunks on every layer with RoPE (model.sliding_chunked, "
                          "model.sliding_window_pattern = model.no_rope_pattern)"
                        : m->query_scale_beta > 0 && (m->query_scale_offset != 1 || strcmp(m->query_scale_layers, "no_rope"))
                        ? "a query temperature other than Llama 4's (model.query_scale_offset=1 on the layers without RoPE)"
                        : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.expert_input_scaled (Llama 4's experts) with %s has no Hugging Face "
                        "counterpart\n--> hint: Llama4ForCausalLM: RMSNorms before the sublayers, SwiGLU, Llama 4's "
                        "experts and shared expert, chunked attention with unweighted q/k norms on the layers with "
                        "RoPE, the query temperature on the others", bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (d.bamba) {           /* Bamba: Mamba-2 beside attention with RoPE on half of each head, SwiGLU */
        const char *bad = m->qk_norm || m->attention_bias || m->attention_out_bias || m->attention_sinks ||
                          m->attention_output_gate || m->attention_head_gate || d.mla
                        ? "q/k norms, attention biases, sinks, gates or latent attention"
                        : d.ln || parallel || m->head_bias || m->norm_unit_offset || strcmp(m->norm_position, "pre")
                        ? "LayerNorms, parallel blocks, a head bias, norms by 1 + weight or after the sublayers"
                        : strcmp(m->activation, "silu") || m->query_pre_attn_scalar || m->attention_softcap > 0 ||
                          m->logit_softcap > 0 || m->query_scale_beta > 0 ? "Gemma's, gpt-oss's or Mistral's keys"
                        : d.hs * m->heads != m->width || strcmp(m->rope_scaling, "none") || m->sliding_window ||
                          m->no_rope_pattern
                        ? "model.head_dim apart from width / heads, scaled RoPE, a window or layers without RoPE"
                        : ((long long)d.MH * d.MP) % m->width ? "Mamba-2 heads x head values not a multiple of the width"
                        : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.mamba_heads=%d with model.rope_dim half the head (Bamba's) and %s "
                        "has no Hugging Face counterpart\n--> hint: BambaForCausalLM: Mamba-2 beside attention with "
                        "RoPE on half of each head, RMSNorms before the sublayers, SwiGLU, no biases", m->mamba_heads,
                        bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (d.mamba) {           /* Granite 4.0-H: Mamba-2 beside attention, Granite's scalars and experts */
        const char *bad = m->qk_norm || m->attention_bias || m->attention_out_bias || m->attention_sinks ||
                          m->attention_output_gate || m->attention_head_gate
                        ? "q/k norms, attention biases, sinks or gates"
                        : d.ln || d.plain || parallel || m->head_bias || m->norm_unit_offset || strcmp(m->norm_position, "pre")
                        ? "LayerNorms, a plain MLP, parallel blocks, a head bias, norms by 1 + weight or after the sublayers"
                        : strcmp(m->activation, "silu") || m->query_pre_attn_scalar || m->attention_softcap > 0 ||
                          m->logit_softcap > 0 || m->query_scale_beta > 0 ? "Gemma's, gpt-oss's or Mistral's keys"
                        : d.mla || (d.E && (strcmp(m->router_scores, "softmax") || !m->router_norm_topk || d.select_bias ||
                                            m->router_groups > 1 || m->expert_bias || !d.S || m->shared_expert_gate ||
                                            d.dense_layers))
                        ? "latent attention, or experts other than Granite's (softmax over the top k, an ungated shared "
                          "MLP beside them in every block)"
                        : d.hs * m->heads != m->width || m->rope_dim || strcmp(m->rope_scaling, "none") ||
                          m->sliding_window || (m->no_rope_pattern && m->no_rope_pattern != 1)
                        ? "model.head_dim apart from width / heads, partial or scaled RoPE, a window, or RoPE on some "
                          "attention layers and not others"
                        : ((long long)d.MH * d.MP) % m->width ? "Mamba-2 heads x head values not a multiple of the width"
                        : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.mamba_heads=%d with %s has no Hugging Face counterpart\n"
                        "--> hint: GraniteMoeHybridForCausalLM: Mamba-2 beside attention layers without RoPE (or with "
                        "it on all), RMSNorms before the sublayers, SwiGLU, Granite's scalars, Granite's experts with "
                        "a shared MLP or none", m->mamba_heads, bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (d.lfm2) {            /* LFM2: short convolutions, Qwen3's q/k norms on its attention; LFM3:
                                     * with norms after the sublayers, a gate per head, a window and
                                     * proportional RoPE on the full layers */
        const bool l3 = d.lfm3;
        const char *bad = !m->qk_norm || strcmp(m->qk_norm_scope, "head") || m->qk_norm_after_rope
                        ? "attention without per-head q/k norms before RoPE"
                        : d.ln || d.plain || parallel || m->head_bias || m->norm_unit_offset
                        ? "LayerNorms, a plain MLP, parallel blocks, a head bias or norms by 1 + weight"
                        : !strcmp(m->norm_position, "post") || strcmp(m->activation, "silu") || m->embed_scale != 1.0 ||
                          m->query_pre_attn_scalar || m->attention_softcap > 0 || m->logit_softcap > 0 ||
                          m->attention_multiplier > 0 || m->residual_multiplier != 1.0 || m->logits_scaling != 1.0 ||
                          m->attention_sinks || m->attention_output_gate ? "Gemma's, Granite's, gpt-oss's or Qwen3.5's keys"
                        : m->attention_bias || m->attention_out_bias ? "attention biases"
                        : d.mla || (d.E && (l3 || strcmp(m->router_scores, "sigmoid") || d.S || m->router_groups > 1 ||
                                            m->expert_bias || (m->router_norm_topk && m->router_norm_eps != 1e-6)))
                        ? "latent attention, or experts other than LFM2-MoE's (sigmoid scores, their top k renormalized "
                          "over their sum + 1e-6 (model.router_norm_eps), no shared expert or groups; none beside "
                          "LFM3's parts)"
                        : !l3 && d.hs * m->heads != m->width ? "model.head_dim apart from width / heads (LFM3's alone)"
                        : m->sliding_window_pattern || m->no_rope_pattern || m->query_scale_beta > 0 || m->rope_dim ||
                          (strcmp(m->rope_scaling, "none") && strcmp(m->rope_scaling, "proportional")) ||
                          (m->sliding_window && !strcmp(m->sliding_rope, "scaled") && m->sliding_rope_theta > 0)
                        ? "a window pattern (model.sliding_layers says which layers slide), layers without RoPE, the "
                          "query temperature, partial RoPE, a RoPE scaling but proportional or a sliding theta of "
                          "scaled RoPE" : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.short_conv_kernel=%d with %s has no Hugging Face counterpart\n"
                        "--> hint: Lfm2ForCausalLM: short convolutions beside attention layers with per-head q/k "
                        "norms, RMSNorms, SwiGLU, no biases, window or RoPE scaling (Lfm2MoeForCausalLM: with its "
                        "experts; Lfm3ForCausalLM: with model.norm_position=both, model.attention_head_gate, "
                        "model.sliding_layers and proportional RoPE)", m->short_conv_kernel, bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (d.qwen35) {          /* Qwen3.5: gated delta-nets, gated attention, Qwen3's q/k norms */
        const char *bad = !d.lin_pattern || !d.gate
                        ? "gated delta-net layers without attention's output gate or the reverse (Qwen3.5 has both)"
                        : !m->qk_norm || strcmp(m->qk_norm_scope, "head") || m->qk_norm_after_rope
                        ? "attention without per-head q/k norms before RoPE"
                        : !m->norm_unit_offset ? "norms by weight, not 1 + weight (model.norm_unit_offset)"
                        : d.ln || d.plain || parallel || m->head_bias ? "LayerNorms, a plain MLP, parallel blocks or a head bias"
                        : strcmp(m->norm_position, "pre") || strcmp(m->activation, "silu") || m->embed_scale != 1.0 ||
                          m->query_pre_attn_scalar || m->attention_softcap > 0 || m->logit_softcap > 0 ||
                          m->attention_multiplier > 0 || m->residual_multiplier != 1.0 || m->logits_scaling != 1.0 ||
                          m->attention_sinks ? "Gemma's, Granite's or gpt-oss's keys"
                        : m->attention_bias || m->attention_out_bias ? "attention biases"
                        : d.mla || (d.E && (!d.S || !m->shared_expert_gate || d.ds || m->expert_bias ||
                                            strcmp(m->activation, "silu")))
                        ? "latent attention, or experts other than Qwen3.5-MoE's and Qwen3-Next's (softmax scores, a "
                          "gated shared expert)"
                        : m->sliding_window || m->no_rope_pattern || m->query_scale_beta > 0 || strcmp(m->rope_scaling, "none")
                        ? "a window, layers without RoPE, the query temperature or a RoPE scaling"
                        : m->linear_allow_neg_eigval || (m->linear_norm_eps > 0 && m->linear_norm_eps != m->rms_eps)
                        ? "OLMo Hybrid's delta-nets (model.linear_allow_neg_eigval, model.linear_norm_eps)" : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.linear_attention_pattern=%d, model.attention_output_gate=%s with %s "
                        "have no Hugging Face counterpart\n--> hint: Qwen3_5ForCausalLM: gated delta-nets on all but "
                        "every N-th layer, gated attention with per-head q/k norms, norms by 1 + weight, SwiGLU, no "
                        "biases, experts, window or RoPE scaling", m->linear_attention_pattern,
                        m->attention_output_gate ? "true" : "false", bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (d.olmoh) {           /* OLMo Hybrid: gated delta-nets beside OLMo 2's attention */
        const double norm_eps = m->linear_norm_eps > 0 ? m->linear_norm_eps : m->rms_eps;
        const char *bad = !m->qk_norm || strcmp(m->qk_norm_scope, "all") || m->qk_norm_after_rope || !m->qk_norm_weights
                        ? "attention without OLMo 2's q/k norms (over the whole projections, before RoPE)"
                        : d.gate || d.head_gate || m->norm_unit_offset || d.ln || d.plain || parallel || m->head_bias
                        ? "gated attention, norms by 1 + weight, LayerNorms, a plain MLP, parallel blocks or a head bias"
                        : strcmp(m->activation, "silu") || m->embed_scale != 1.0 || m->query_pre_attn_scalar ||
                          m->attention_softcap > 0 || m->logit_softcap > 0 || m->attention_multiplier > 0 ||
                          m->residual_multiplier != 1.0 || m->logits_scaling != 1.0 || m->attention_sinks
                        ? "Gemma's, Granite's or gpt-oss's keys"
                        : m->attention_bias || m->attention_out_bias || d.mla || d.E ? "attention biases, latent attention "
                                                                                      "or experts"
                        : m->sliding_window || m->no_rope_pattern || m->query_scale_beta > 0 || m->rope_dim ||
                          strcmp(m->rope_scaling, "none")
                        ? "a window, layers without RoPE, the query temperature, partial RoPE or a RoPE scaling"
                        : fabs(norm_eps - 1e-5) > 1e-12 ? "a gated norm's epsilon other than 1e-5 (its o_norm's, fixed)"
                        : NULL;
        if (bad) {
            ACCEL_ERROR("export --format hf: model.linear_attention_pattern=%d with model.norm_position=post (OLMo "
                        "Hybrid's) and %s has no Hugging Face counterpart\n--> hint: OlmoHybridForCausalLM: gated "
                        "delta-nets with norms before them, attention every N-th layer with OLMo 2's norms after it and "
                        "its q/k norms, SwiGLU, no biases, experts, window or RoPE scaling, the delta-nets' gated norm "
                        "at 1e-5 (model.linear_norm_eps)", m->linear_attention_pattern, bad);
            return ACCEL_ERR_UNSUPPORTED;
        }
    } else if (!d.ln && !d.plain) {
        ACCEL_CHECK(refuse_unexportable(m, &d));
    }
    if (!d.qwen35 && !d.olmoh && (m->linear_allow_neg_eigval || m->linear_norm_eps > 0)) {
        ACCEL_ERROR("export --format hf: model.linear_allow_neg_eigval / model.linear_norm_eps without gated delta-net "
                    "layers have no Hugging Face counterpart");
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        ACCEL_ERROR("export: cannot create directory %s: %s", outdir, strerror(errno));
        return ACCEL_ERR_IO;
    }
    entry_t *e = NULL;
    int n = entries_of(&d, &e);
    if (n < 0) return n;
    int nq = 0;                     /* quantized: the weights written so, each with its scales */
    for (int i = 0; quant && i < n; i++) nq += quant_weight(&e[i], dtype);
    if (quant && !nq) {
        ACCEL_ERROR("export --dtype %s: none of this model's matrices is a linear layer compressed-tensors "
                    "quantizes (GPT-2's are Conv1D)\n--> hint: export it in bf16", nvfp4 ? "nvfp4" : "fp8");
        free(e);
        return ACCEL_ERR_UNSUPPORTED;
    }
    accel_st_entry_t *se = calloc((size_t)(n + 2 * nq), sizeof *se);
    int *src = calloc((size_t)(n + 2 * nq), sizeof *src);
    char *kind = calloc((size_t)(n + 2 * nq), 1), (*qnames)[ACCEL_HF_NAME_MAX + 16] = calloc((size_t)(3 * nq + 1),
                                                                                            sizeof *qnames);
    export_ctx_t c = { .e = e, .get = get, .ctx = ctx, .cached = -1 };
    quant_ctx_t f = { .c = &c, .dtype = dtype, .src = src, .kind = kind, .done = -1 };
    accel_status_t st = se && src && kind && qnames ? ACCEL_OK : ACCEL_ERR_NOMEM;
    int ns = 0, q = 0;
    json_t *ignore = quant ? json_array() : NULL;   /* the Linear layers left in bf16 */
    for (int i = 0; st == ACCEL_OK && i < n; i++) {
        const uint64_t rows = e[i].hf_dims[0], cols = e[i].hf_dims[1];
        if (quant && quant_weight(&e[i], dtype) && nvfp4) {
            /* X.weight_packed U8 [rows, cols / 2], X.weight_scale e4m3 [rows, cols / 16], X.weight_global_scale [1] */
            static const char *const parts[] = { "_packed", "_scale", "_global_scale" };
            static const char kinds[] = { 'p', 's', 'g' };
            const accel_st_dtype_t types[] = { ACCEL_ST_U8, ACCEL_ST_F8_E4M3, ACCEL_ST_F32 };
            const uint64_t dims[][2] = { { rows, cols / 2 }, { rows, cols / 16 }, { 1, 0 } };
            for (int k = 0; k < 3; k++) {
                snprintf(qnames[q], sizeof qnames[q], "%s%s", e[i].hf, parts[k]);
                se[ns] = (accel_st_entry_t){ .name = qnames[q++], .dtype = types[k], .ndim = k == 2 ? 1 : 2,
                                             .dims = { dims[k][0], dims[k][1] } };
                src[ns] = i;
                kind[ns++] = kinds[k];
            }
            continue;
        }
        const bool qw = quant && quant_weight(&e[i], dtype);
        se[ns] = (accel_st_entry_t){ .name = e[i].hf, .dtype = qw ? ACCEL_ST_F8_E4M3 : bf16 ? ACCEL_ST_BF16 : ACCEL_ST_F32,
                                     .ndim = e[i].hf_ndim };
        memcpy(se[ns].dims, e[i].hf_dims, sizeof e[i].hf_dims);
        src[ns] = i;
        kind[ns++] = qw ? 'q' : 'w';
        if (qw) {                                   /* FP8: X.weight_scale [rows, 1], F32 */
            snprintf(qnames[q], sizeof qnames[q], "%s_scale", e[i].hf);
            se[ns] = (accel_st_entry_t){ .name = qnames[q++], .dtype = ACCEL_ST_F32, .ndim = 2, .dims = { rows, 1 } };
            src[ns] = i;
            kind[ns++] = 's';
        } else if (quant && e[i].hf_ndim == 2 && strlen(e[i].hf) > 7 && !strcmp(e[i].hf + strlen(e[i].hf) - 7, ".weight")) {
            char module[ACCEL_HF_NAME_MAX];
            module_of(e[i].hf, module, sizeof module);
            json_array_append_new(ignore, json_string(module));
        }
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", outdir);
    const char *meta[] = { "format", "pt" };
    if (st == ACCEL_OK) st = accel_st_write(path, se, ns, meta, 1, quant_fill, &f);
    json_t *cj = st == ACCEL_OK ? hf_config_json(cfg, bf16, tok->bos_id, tok->eos_id) : NULL;
    if (cj && quant) {  /* FP8-dynamic: weights by channel, activations by token at run time; NVFP4A16 */
        const char *format = nvfp4 ? "nvfp4-pack-quantized" : "float-quantized";
        json_t *w = json_pack("{s:i, s:s, s:s, s:b, s:b, s:n, s:n}", "num_bits", nvfp4 ? 4 : 8, "type", "float",
                              "strategy", nvfp4 ? "tensor_group" : "channel", "symmetric", 1, "dynamic", 0,
                              "block_structure", "actorder");
        json_object_set_new(w, "group_size", nvfp4 ? json_integer(16) : json_null());
        json_t *a = nvfp4 ? json_null() : json_pack("{s:i, s:s, s:s, s:b, s:b, s:n}", "num_bits", 8, "type", "float",
                                                    "strategy", "token", "symmetric", 1, "dynamic", 1, "group_size");
        json_object_set_new(cj, "quantization_config", json_pack(
            "{s:s, s:s, s:s, s:{s:{s:[s], s:o, s:o, s:n, s:s}}, s:O, s:n}", "quant_method", "compressed-tensors",
            "format", format, "quantization_status", "compressed", "config_groups", "group_0", "targets",
            "Linear", "weights", w, "input_activations", a, "output_activations", "format", format,
            "ignore", ignore, "kv_cache_scheme"));
    }
    if (st == ACCEL_OK) st = write_json(outdir, "config.json", cj);
    json_decref(cj);
    if (st == ACCEL_OK) {
        json_t *g = json_pack("{s:b}", "_from_model_config", 1);
        if (g && tok->bos_id >= 0 && tok->bos_id < m->vocab) json_object_set_new(g, "bos_token_id", json_integer(tok->bos_id));
        if (g && tok->eos_id >= 0 && tok->eos_id < m->vocab) json_object_set_new(g, "eos_token_id", json_integer(tok->eos_id));
        st = write_json(outdir, "generation_config.json", g);
        json_decref(g);
    }
    if (st == ACCEL_OK && tok->json) {
        st = publish_bytes(outdir, "tokenizer.json", tok->json, tok->len);
        json_t *tc = json_pack("{s:s, s:i}", "tokenizer_class", "PreTrainedTokenizerFast", "model_max_length",
                               m->context);
        if (tc && tok->name && *tok->name) json_object_set_new(tc, "accel_tokenizer", json_string(tok->name));
        if (tc && tok->bos) json_object_set_new(tc, "bos_token", json_string(tok->bos));
        if (tc && tok->eos) json_object_set_new(tc, "eos_token", json_string(tok->eos));
        if (st == ACCEL_OK) st = write_json(outdir, "tokenizer_config.json", tc);
        json_decref(tc);
    }
    if (st == ACCEL_OK && tok->chat_template)
        st = publish_bytes(outdir, "chat_template.jinja", tok->chat_template, tok->chat_template_len);
    free(c.full);
    free(c.part);
    free(f.q);
    free(f.scale);
    free(se);
    free(src);
    free(kind);
    free(qnames);
    json_decref(ignore);
    free(e);
    return st;
}

/* ------------------------------------------------------------------ PEFT adapter export */

/* One tensor of an exported adapter: its name in adapter_model.safetensors and its values. */
typedef struct {
    char name[ACCEL_PEFT_NAME_MAX];
    int ndim;
    uint64_t dims[2];
    float *v;
} adapter_tensor_t;

static accel_status_t adapter_fill(void *ctx, int index, uint64_t begin, uint64_t end, float *dst)
{
    memcpy(dst, ((const adapter_tensor_t *)ctx)[index].v + begin, sizeof(float) * (end - begin));
    return ACCEL_OK;
}

/* adapter_config.json for LoRA factors of rank r on `targets` (a JSON array of module names). */
static json_t *adapter_config(int r, double alpha, bool rslora, bool conv1d, const char *base, json_t *targets)
{
    return json_pack("{s:s, s:s, s:i, s:f, s:O, s:n, s:s, s:b, s:b, s:b, s:f, s:b, s:s, s:{}, s:{}}",
                     "peft_type", "LORA", "task_type", "CAUSAL_LM", "r", r, "lora_alpha", alpha,
                     "target_modules", targets, "modules_to_save", "bias", "none", "fan_in_fan_out", conv1d,
                     "use_rslora", rslora, "use_dora", 0, "lora_dropout", 0.0, "inference_mode", 1,
                     "base_model_name_or_path", base, "rank_pattern", "alpha_pattern");
}

/* An adapter directory: adapter_model.safetensors with out[0..n) (fp32) and adapter_config.json. */
static accel_status_t write_adapter(const char *outdir, const adapter_tensor_t *out, int n, json_t *config)
{
    if (!config) return ACCEL_ERR_NOMEM;
    if (mkdir(outdir, 0755) != 0 && errno != EEXIST) {
        ACCEL_ERROR("export --format peft: cannot create %s: %s", outdir, strerror(errno));
        return ACCEL_ERR_IO;
    }
    accel_st_entry_t *se = calloc((size_t)(n ? n : 1), sizeof *se);
    if (!se) return ACCEL_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        se[i] = (accel_st_entry_t){ .name = out[i].name, .dtype = ACCEL_ST_F32, .ndim = out[i].ndim,
                                    .dims = { out[i].dims[0], out[i].dims[1] } };
    char path[4200];
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", outdir);
    const char *meta[] = { "format", "pt" };
    accel_status_t st = accel_st_write(path, se, n, meta, 1, adapter_fill, (void *)out);
    free(se);
    return st == ACCEL_OK ? write_json(outdir, "adapter_config.json", config) : st;
}

/* Expert e's change d [out, in] from x's tensor in the file's order as hf_order gives it (the
 * accel tensor's rows, GLU-permuted, for MXFP4's, which export writes no blocks of). */
static void expert_change(const entry_t *x, const float *part, uint64_t e, uint64_t in, uint64_t out, float *d)
{
    const bool glu = x->layout == L_EXPERTS_GLU || x->layout == L_MXFP4_GLU;
    for (uint64_t o = 0; o < out; o++)
        for (uint64_t c = 0; c < in; c++)
            d[o * in + c] = x->layout == L_EXPERTS || x->layout == L_EXPERTS_GLU ? part[(e * in + c) * out + o]
                          : x->layout == L_STACKED ? part[(e * out + o) * in + c]
                          : part[(e * out + glu_row(o, out, glu)) * in + c];
}

/* True when module's last name is one of the comma-separated names in list. */
static bool listed_module(const char *list, const char *module)
{
    const char *dot = strrchr(module, '.'), *last = dot ? dot + 1 : module;
    for (const char *p = list; p && *p;) {
        const size_t n = strcspn(p, ",");
        if (n == strlen(last) && !strncmp(p, last, n)) return true;
        p += n + (p[n] == ',');
    }
    return false;
}

typedef struct {                    /* how close an export's factors are */
    int factored;                   /* matrices factored (each expert one) */
    double sum, worst;              /* their relative errors' sum, the largest and where */
    char worst_name[ACCEL_PEFT_NAME_MAX];
} factor_stats_t;

static void factor_note(factor_stats_t *fs, double err, const char *name, long long expert)
{
    fs->factored++;
    fs->sum += err;
    if (err < fs->worst) return;
    fs->worst = err;
    if (expert < 0) snprintf(fs->worst_name, sizeof fs->worst_name, "%s", name);
    else snprintf(fs->worst_name, sizeof fs->worst_name, "%s (expert %lld)", name, expert);
}

/* One matrix's change d (x's file order, scratch: its base's buffer) as o[0] = A, o[1] = B of
 * `module`: factored as the file's [out, in], or transposed for GPT-2's Conv1D ([in, out]) and an
 * embedding ([vocab, width]: PEFT's delta is (B A)^T). */
static accel_status_t factor_matrix(const entry_t *x, const float *d, float *scratch, int rank, const char *module,
                                    adapter_tensor_t *o, factor_stats_t *fs)
{
    const bool embedding = !strcmp(x->accel, "wte") || !strcmp(x->accel, "wpe");
    const bool t = (x->layout == L_T) != embedding;
    const uint64_t rows = x->hf_dims[0], cols = x->hf_dims[1], m = t ? cols : rows, n = t ? rows : cols;
    if (t) {
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t c = 0; c < cols; c++) scratch[c * rows + r] = d[r * cols + c];
        d = scratch;
    }
    o[0].v = malloc(sizeof(float) * (size_t)((uint64_t)rank * n));
    o[1].v = malloc(sizeof(float) * (size_t)(m * (uint64_t)rank));
    double e = 0;
    accel_status_t st = o[0].v && o[1].v ? accel_peft_factor(d, m, n, rank, o[0].v, o[1].v, &e) : ACCEL_ERR_NOMEM;
    snprintf(o[0].name, sizeof o[0].name, "base_model.model.%s.%s", module, embedding ? "lora_embedding_A" : "lora_A.weight");
    snprintf(o[1].name, sizeof o[1].name, "base_model.model.%s.%s", module, embedding ? "lora_embedding_B" : "lora_B.weight");
    o[0].ndim = o[1].ndim = 2;
    o[0].dims[0] = (uint64_t)rank, o[0].dims[1] = n;
    o[1].dims[0] = m, o[1].dims[1] = (uint64_t)rank;
    factor_note(fs, e, module, -1);
    return st;
}

/* Stacked experts' changes (x, the file's order d) as PEFT's target_parameters LoRA: expert e's
 * factors are A's rows e r .. and B's columns k E + e. o[0].name gets the parameter's name in
 * transformers' model; the nesting under base_layer is set once every parameter is known. */
static accel_status_t factor_experts(const entry_t *x, const float *d, int rank, adapter_tensor_t *o,
                                     factor_stats_t *fs)
{
    uint64_t in = 0, out = 0;
    expert_layout(x, &in, &out);
    const uint64_t E = x->hf_dims[0], r = (uint64_t)rank;
    float *de = malloc(sizeof(float) * (size_t)(in * out)), *ae = malloc(sizeof(float) * (size_t)(r * in));
    float *be = malloc(sizeof(float) * (size_t)(out * r));
    o[0].v = malloc(sizeof(float) * (size_t)(r * E * in));
    o[1].v = malloc(sizeof(float) * (size_t)(out * r * E));
    accel_status_t st = de && ae && be && o[0].v && o[1].v ? ACCEL_OK : ACCEL_ERR_NOMEM;
    for (uint64_t e = 0; st == ACCEL_OK && e < E; e++) {
        double err = 0;
        expert_change(x, d, e, in, out, de);
        st = accel_peft_factor(de, out, in, rank, ae, be, &err);
        memcpy(o[0].v + e * r * in, ae, sizeof(float) * (size_t)(r * in));
        for (uint64_t row = 0; row < out; row++)
            for (uint64_t k = 0; k < r; k++) o[1].v[row * r * E + k * E + e] = be[row * r + k];
        factor_note(fs, err, x->hf, (long long)e);
    }
    free(de);
    free(ae);
    free(be);
    char memory[ACCEL_HF_NAME_MAX + 32];
    snprintf(o[0].name, sizeof o[0].name, "%s", experts_memory_name(x, memory, sizeof memory));
    o[0].ndim = o[1].ndim = 2;
    o[0].dims[0] = r * E, o[0].dims[1] = in;
    o[1].dims[0] = out, o[1].dims[1] = r * E;
    return st;
}

accel_status_t accel_hf_export_lora(const accel_config_t *cfg, accel_hf_get_fn get, void *ctx, const char *base,
                                    const char *outdir)
{
    char err[1024] = "";
    accel_hf_linear_t *l = NULL;
    const int n = accel_hf_linears(&cfg->model, cfg->lora.targets, &l, err, sizeof err);
    if (n < 0) {
        ACCEL_ERROR("export --format peft: the stored lora.targets=%s: %s", cfg->lora.targets, err);
        return n;
    }
    const uint64_t r = (uint64_t)cfg->lora.rank;
    adapter_tensor_t *out = calloc((size_t)(2 * n + 1), sizeof *out);
    json_t *targets = json_array();
    bool conv1d = false;
    accel_status_t st = out && targets ? ACCEL_OK : ACCEL_ERR_NOMEM;
    for (int i = 0; st == ACCEL_OK && i < n; i++) {
        for (int k = 0; st == ACCEL_OK && k < 2; k++) {
            adapter_tensor_t *o = &out[2 * i + k];
            char name[ACCEL_HF_NAME_MAX + 16];
            snprintf(name, sizeof name, k ? ACCEL_HF_LORA_B : ACCEL_HF_LORA_A, l[i].module);
            snprintf(o->name, sizeof o->name, "base_model.model.%s", name);
            o->ndim = 2;
            o->dims[0] = k ? l[i].out : r;
            o->dims[1] = k ? r : l[i].in;
            if (!(o->v = malloc(sizeof(float) * (size_t)(o->dims[0] * o->dims[1])))) st = ACCEL_ERR_NOMEM;
            else if ((st = get(ctx, name, o->dims[0] * o->dims[1], o->v)) != ACCEL_OK)
                ACCEL_ERROR("export --format peft: cannot read the LoRA factor %s", name);
        }
        if (st == ACCEL_OK) json_array_append_new(targets, json_string(l[i].module));
        conv1d |= l[i].conv1d;
    }
    if (st == ACCEL_OK) {
        json_t *j = adapter_config(cfg->lora.rank, cfg->lora.alpha, cfg->lora.rslora, conv1d, base, targets);
        st = write_adapter(outdir, out, 2 * n, j);
        json_decref(j);
    }
    if (st == ACCEL_OK)
        ACCEL_INFO("export --format peft: %s, the rank-%d LoRA adapters of %d modules as trained (scale %g), on %s",
                   outdir, cfg->lora.rank, n, accel_hf_lora_scale(cfg), base);
    for (int i = 0; out && i < 2 * n; i++) free(out[i].v);
    free(out);
    json_decref(targets);
    accel_hf_linears_free(l, n);
    return st;
}

accel_status_t accel_hf_export_adapter(const accel_config_t *cfg, accel_hf_get_fn get, void *ctx, const char *base,
                                       int rank, const char *whole, const char *outdir)
{
    char err[4096] = "";
    accel_hf_t *hf = NULL;
    if (accel_hf_is_adapter(base)) {
        ACCEL_ERROR("export --format peft: --base %s is an adapter; name the model directory it adapts", base);
        return ACCEL_ERR_INVALID;
    }
    accel_status_t st = accel_hf_open(base, &hf, err, sizeof err);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("export --format peft: the base model %s: %s", base, err);
        return st;
    }
    accel_hf_tensor_t *mine = NULL;
    const int nmine = accel_hf_accel_tensors(&cfg->model, &mine);
    const char *why = hf->multimodal ? "a vision-language model (PEFT names its language model otherwise than its files)"
                    : nmine != hf->nt ? "another number of tensors" : NULL;
    for (int i = 0; !why && i < nmine; i++)
        if (strcmp(mine[i].name, hf->t[i].name) || mine[i].ndim != hf->t[i].ndim || mine[i].dims[0] != hf->t[i].dims[0] ||
            (mine[i].ndim == 2 && mine[i].dims[1] != hf->t[i].dims[1]))
            why = "other tensors or shapes", snprintf(err, sizeof err, " (%s against the base's %s)", mine[i].name,
                                                     hf->t[i].name);
    if (why) {
        ACCEL_ERROR("export --format peft: the base %s (%s) is %s%s: an adapter holds the change from its own base\n"
                    "--> hint: name the model train.init_from started from", base, hf->arch, why, hf->multimodal ? "" : err);
        free(mine);
        accel_hf_close(hf);
        return ACCEL_ERR_SHAPE;
    }
    free(mine);
    /* Every entry's tensor in the file's order, fine-tuned and base; LoRA factors for the matrices
     * that changed, whole tensors (modules_to_save, biases) for the rest that did. */
    adapter_tensor_t *out = calloc((size_t)(2 * hf->ne + 1), sizeof *out);
    json_t *targets = json_array(), *save = json_array();
    float *ft = NULL, *bs = NULL, *full = NULL, *bfull = NULL;
    size_t ft_cap = 0, bs_cap = 0, full_cap = 0, bfull_cap = 0;
    char cached[ACCEL_HF_NAME_MAX] = "";
    int nout = 0, biases = 0, *nested = calloc((size_t)(2 * hf->ne + 1), sizeof *nested);
    json_t *params = json_array();          /* target_parameters: stacked experts' factors */
    bool conv1d = false;
    factor_stats_t fs = { 0 };
    double shown = accel_now();
    if (!out || !targets || !save || !nested || !params) st = ACCEL_ERR_NOMEM;
    for (int i = 0; st == ACCEL_OK && i < hf->ne; i++) {
        const entry_t *x = &hf->e[i];
        if (accel_now() - shown > 10) {
            ACCEL_INFO("export --format peft: %d of %d tensors compared, %d factored", i, hf->ne, fs.factored);
            shown = accel_now();
        }
        const uint64_t numel = x->dims[0] * (x->ndim == 2 ? x->dims[1] : 1);
        const uint64_t part = (x->r1 - x->r0) * (x->ndim == 2 ? x->dims[1] : 1);
        if ((st = grow(&full, &full_cap, numel)) != ACCEL_OK || (st = grow(&bfull, &bfull_cap, numel)) != ACCEL_OK ||
            (st = grow(&ft, &ft_cap, part)) != ACCEL_OK || (st = grow(&bs, &bs_cap, part)) != ACCEL_OK)
            break;
        if (strcmp(cached, x->accel)) {             /* this accel tensor, fine-tuned and base */
            if ((st = get(ctx, x->accel, numel, full)) != ACCEL_OK) {
                ACCEL_ERROR("export --format peft: cannot read accel tensor %s", x->accel);
                break;
            }
            if ((st = accel_hf_read(hf, x->accel, bfull, err, sizeof err)) != ACCEL_OK) {
                ACCEL_ERROR("export --format peft: the base model: %s", err);
                break;
            }
            snprintf(cached, sizeof cached, "%s", x->accel);
        }
        hf_order(x, full, ft);
        hf_order(x, bfull, bs);
        bool changed = false;
        for (uint64_t k = 0; k < part; k++) {
            ft[k] -= bs[k];
            changed |= ft[k] != 0.0f;
        }
        if (!changed) continue;
        char name[ACCEL_HF_NAME_MAX], module[ACCEL_HF_NAME_MAX];
        snprintf(name, sizeof name, "%s", x->hf);
        if (x->packed) name[strlen(name) - 7] = '\0';  /* X.weight_packed: X.weight */
        module_of(name, module, sizeof module);
        const bool bias = strlen(name) > 5 && !strcmp(name + strlen(name) - 5, ".bias");
        adapter_tensor_t *o = &out[nout];
        if (x->hf_ndim == 2 && lora_layout(x) && !listed_module(whole, module) && !bias) {
            st = factor_matrix(x, ft, bs, rank, module, o, &fs);
            nout += 2;
            json_array_append_new(targets, json_string(module));
            conv1d |= x->layout == L_T;
        } else if (expert_layout(x, &(uint64_t){ 0 }, &(uint64_t){ 0 }) >= 0 && !listed_module(whole, module)) {
            st = factor_experts(x, ft, rank, o, &fs);
            nested[nout] = 1;
            json_array_append_new(params, json_string(o[0].name));
            nout += 2;
        } else if (x->layout == L_ROWS || x->layout == L_T) {
            /* A whole tensor: a bias (bias = "all"; a LoRA module's under base_layer), else its module kept
             * whole (modules_to_save). */
            o->v = malloc(sizeof(float) * (size_t)part);
            if (!o->v) { st = ACCEL_ERR_NOMEM; break; }
            for (uint64_t k = 0; k < part; k++) o->v[k] = ft[k] + bs[k];
            snprintf(o->name, sizeof o->name, "base_model.model.%s", name);
            o->ndim = x->hf_ndim;
            o->dims[0] = x->hf_dims[0];
            o->dims[1] = x->hf_ndim == 2 ? x->hf_dims[1] : 0;
            nout++;
            if (bias) biases++;
            else json_array_append_new(save, json_string(module));
        } else {
            ACCEL_ERROR("export --format peft: %s changed, and accel reads it rearranged (experts, quantized blocks): "
                        "an adapter cannot hold it", name);
            st = ACCEL_ERR_UNSUPPORTED;
        }
    }
    /* PEFT wraps an experts module's parameters one inside the other in the order the module
     * declares them (the files' order): the last outermost, each earlier one a base_layer deeper. */
    for (int i = 0; st == ACCEL_OK && i < nout; i++) {
        if (!nested[i]) continue;
        char param[ACCEL_PEFT_NAME_MAX], module[ACCEL_PEFT_NAME_MAX], deeper[ACCEL_PEFT_NAME_MAX] = "";
        snprintf(param, sizeof param, "%s", out[i].name);
        const char *dot = strrchr(param, '.');
        snprintf(module, sizeof module, "%.*s", dot ? (int)(dot - param) : 0, param);
        for (int j = i + 2; j < nout; j++)
            if (nested[j] && !strncmp(out[j].name, module, strlen(module)) && out[j].name[strlen(module)] == '.' &&
                !strchr(out[j].name + strlen(module) + 1, '.'))
                strncat(deeper, ".base_layer", sizeof deeper - strlen(deeper) - 1);
        snprintf(out[i].name, sizeof out[i].name, "base_model.model.%s%s.lora_A.weight", module, deeper);
        snprintf(out[i + 1].name, sizeof out[i + 1].name, "base_model.model.%s%s.lora_B.weight", module, deeper);
    }
    /* A LoRA module's bias goes under its base_layer (PEFT's bias = "all" names it so). */
    for (int i = 0; st == ACCEL_OK && i < nout; i++) {
        size_t len = strlen(out[i].name);
        if (len < 5 || strcmp(out[i].name + len - 5, ".bias")) continue;
        char module[ACCEL_PEFT_NAME_MAX];
        snprintf(module, sizeof module, "%.*s", (int)(len - 5 - strlen("base_model.model.")),
                 out[i].name + strlen("base_model.model."));
        size_t k;
        json_t *v;
        json_array_foreach(targets, k, v)
            if (!strcmp(json_string_value(v), module)) {
                snprintf(out[i].name + len - 5, sizeof out[i].name - (len - 5), ".base_layer.bias");
                break;
            }
    }
    free(full);
    free(bfull);
    free(ft);
    free(bs);
    if (st == ACCEL_OK && !nout) {
        ACCEL_ERROR("export --format peft: the weights equal the base's %s: no change to hold", base);
        st = ACCEL_ERR_INVALID;
    }
    if (st == ACCEL_OK) {
        json_t *j = adapter_config(rank, rank, false, conv1d, base, targets);
        if (j && json_array_size(save)) json_object_set(j, "modules_to_save", save);
        if (j && biases) json_object_set_new(j, "bias", json_string("all"));
        if (j && json_array_size(params)) json_object_set(j, "target_parameters", params);
        st = write_adapter(outdir, out, nout, j);
        json_decref(j);
    }
    if (st == ACCEL_OK)
        ACCEL_INFO("export --format peft: %s, an adapter of %s: %d matrices as rank-%d LoRA factors (relative "
                   "error ||change - B A|| / ||change||: mean %.3g, largest %.3g in %s), %zu whole tensor(s) "
                   "(modules_to_save), %d bias(es)", outdir, base, fs.factored, rank,
                   fs.factored ? fs.sum / fs.factored : 0.0, fs.worst, fs.factored ? fs.worst_name : "-",
                   json_array_size(save), biases);
    for (int i = 0; out && i < 2 * hf->ne + 1; i++) free(out[i].v);
    free(out);
    free(nested);
    json_decref(params);
    json_decref(targets);
    json_decref(save);
    accel_hf_close(hf);
    return st;
}
