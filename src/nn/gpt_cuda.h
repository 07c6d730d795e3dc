/* The built-in GPT on a CUDA device (an engine internal, not installed): the planning of its device
 * buffers, in plain C that works in every build, GPU or not, and is unit tested on machines
 * without a GPU. The model itself is accel_model_gpt_cuda (include/accel/model.h): it keeps the
 * CPU model's tensor table, so checkpoints are device-independent, and the trainer keeps its
 * parameters, gradients and optimizer state in device memory for every strategy. Matrix products
 * run in cuBLAS with bf16/fp16/fp32 operands and fp32 accumulation; LayerNorm statistics, softmax
 * and the loss are computed in fp32. */
#ifndef ACCEL_NN_GPT_CUDA_H
#define ACCEL_NN_GPT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/dtype.h"
#include "accel/status.h"
#include "decoder.h"

/* ------------------------------------------------------------------ planning (host-only C) */

/* Byte offsets (from one device allocation) of every activation and work buffer of a micro-batch
 * of B sequences. Buffers marked "act" hold the compute type (bf16/fp16/fp32), the others fp32.
 * Every offset is a multiple of ACCEL_GPT_CUDA_ALIGN. */
#define ACCEL_GPT_CUDA_ALIGN 256

typedef struct {
    size_t ln1, ln1_mean, ln1_rstd;  /* act [BT,C]; fp32 [BT] x2 */
    size_t qkvp;                     /* act q [B][NH][T][hs], k, v [B][KVH][T][hs] (bias added;
                                      * llama: RoPE applied; q = [B][KVH][G][T][hs]) */
    size_t qkn, qkn_rstd;            /* qk_norm: act q|k as qkvp before their norm; fp32 1/rms
                                      * of each of the B (NH + KVH) T head rows (else size 0) */
    size_t att;                      /* act [B][NH][T][T]: softmax probabilities, 0 above diagonal */
    size_t atty;                     /* act [BT,QW]: attention output (heads concatenated) */
    size_t res2;                     /* act [BT,C]: residual after attention */
    size_t ln2, ln2_mean, ln2_rstd;
    size_t fch;                      /* act [BT,FIN]: MLP first product (gpt: bias added; llama:
                                      * [gate | up]) */
    size_t fch_gelu;                 /* act [BT,F]: MLP hidden (GELU or silu(gate) * up) */
    size_t res3;                     /* act [BT,C]: block output */
} accel_gpt_cuda_layer_plan_t;

typedef struct {
    int L, NH, C, T, V, B;
    int KVH, QKV, F, FIN;            /* kv heads, (NH + 2 KVH) hs, MLP hidden, its first product */
    int hs, QW;                      /* head size; NH hs, the attention output's width */
    int qk_norm;                     /* RMSNorm on each q and k head (Qwen3) */
    int Vp;                          /* row stride of the logits (V rounded up to 64) */
    size_t act_size;                 /* bytes per activation element (2 or 4) */
    size_t layer_bytes;              /* bytes of one layer's stored activations */
    size_t layers_base;              /* offset of layer 0; layer l at layers_base + l*layer_bytes */
    accel_gpt_cuda_layer_plan_t layer; /* offsets relative to the layer's base */
    size_t x0, lnf, lnf_mean, lnf_rstd, logits;
    size_t s_qkv;                    /* act [BT,QKV]: qkv product; d(qkv) in backward */
    size_t s_c;                      /* act [BT,max(C,QW)]: proj / fc-proj products; d(ln) and
                                      * d(atty) in backward */
    size_t s_4c;                     /* act [BT,FIN]: d(fch) in backward */
    size_t s_yp;                     /* act [B,NH,T,hs]: y per head; dy per head in backward */
    size_t s_dqkn;                   /* qk_norm: act like qkn, d(q|k before the norm) (else 0) */
    size_t s_dqkvp;                  /* act like qkvp: dq, dk, dv per head */
    size_t s_att32;                  /* fp32 [B,NH,T,T]: scores; dP in backward */
    size_t s_datt;                   /* act [B,NH,T,T]: dS in backward */
    size_t dres;                     /* act [BT,C]: d(loss)/d(residual) */
    size_t losses;                   /* fp32 [BT]: per-token losses */
    size_t s_dh;                     /* act [BT,F]: d(hidden) of a SwiGLU MLP (FIN != F; else 0) */
    size_t total;                    /* bytes of the whole allocation */
} accel_gpt_cuda_plan_t;

/* Lay out the buffers for dims (L, NH, C, T, V), micro-batch B and activation element size
 * (2 for bf16/fp16, 4 for fp32). ACCEL_ERR_INVALID when a dimension is out of range or a matrix
 * dimension would not fit the int that cuBLAS takes. */
accel_status_t accel_gpt_cuda_plan(int L, int NH, int C, int T, int V, int B, size_t act_size,
                                   accel_gpt_cuda_plan_t *plan);
/* The same for any decoder (src/nn/decoder.h): KVH key/value heads (dividing NH), head size hs
 * (NH hs may differ from C), MLP hidden width F and first-product width FIN (F: GELU; 2F: SwiGLU),
 * Qwen3's q/k norms. accel_gpt_cuda_plan is KVH = NH, hs = C / NH, F = FIN = 4C. */
accel_status_t accel_gpt_cuda_plan_dims(const accel_decoder_dims_t *d, int B, size_t act_size,
                                        accel_gpt_cuda_plan_t *plan);

/* 1-D launch geometry: blocks of `block` threads covering n items, capped at max_blocks (grid-stride
 * loops cover the rest); at least one block. */
unsigned accel_gpt_cuda_grid(size_t n, unsigned block, unsigned max_blocks);

/* Device bytes a GPU rank allocates for this configuration (model.*, precision, optim.name) with
 * `micro` samples per micro-batch, an arena of numel elements and owned_n owned elements
 * (sharded: the separate shard of the parameters and gradients). ACCEL_ERR_INVALID when the plan is out of range. */
accel_status_t accel_gpt_cuda_estimate_bytes(const accel_config_t *cfg, int micro, size_t numel,
                                             size_t owned_n, int sharded, size_t *bytes);

/* Whether this job can train on the GPU: the built-in gpt or llama model (no plugin), precision
 * fp32/bf16/fp16 (every strategy runs: they belong to the trainer). On refusal writes a message naming the model,
 * strategy or setting (with a "--> hint:") into why and returns ACCEL_ERR_UNSUPPORTED. Settings
 * that are accepted but behave differently on the GPU are described in note (may be empty). */
accel_status_t accel_gpt_cuda_check_config(const accel_config_t *cfg, char *why, size_t whylen,
                                           char *note, size_t notelen);

/* ------------------------------------------------------------------ the model */

/* The CUDA backend's state (the model's private state: src/nn/gpt_cuda.c). Its model table is
 * accel_model_gpt_cuda (include/accel/model.h). */
typedef struct accel_gpt_cuda accel_gpt_cuda_t;

#endif
