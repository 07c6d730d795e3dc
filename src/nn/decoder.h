/* What the decoder's backends share (src/nn/decoder.c on the CPU, src/nn/gpt_cuda.c on CUDA): an
 * engine internal, not installed. */
#ifndef ACCEL_NN_DECODER_H
#define ACCEL_NN_DECODER_H

#include <stdint.h>

#include "accel/config.h"
#include "accel/status.h"

/* Token ids outside the vocabulary would index past wte: both backends refuse them with this check
 * of B rows of n_per_row ids at row stride `stride` (a NULL batch is refused too). */
accel_status_t accel_gpt_check_tokens(const int32_t *tokens, int B, int n_per_row, int stride, int V);
/* B rows of T position ids (accel_batch_t.positions; NULL passes): each 0 or one more than the one
 * before; an error naming the first that is not. */
accel_status_t accel_gpt_check_positions(const int32_t *positions, int B, int T);

/* The dimensions of a decoder (model.name gpt or llama; not validated: the CPU model's create
 * refuses a bad one): hs the head size (model.head_dim, else C / NH), QKV = (NH + 2 KVH) hs the
 * width of the q|k|v rows, F the dense MLP's hidden width and FIN the width of its first product
 * (2F for SwiGLU: rows [gate | up]). */
typedef struct {
    int L, NH, KVH, hs, C, T, V, QKV, F, FIN;
    int llama;                      /* RMSNorm, RoPE, SwiGLU, no wpe, optional qkv bias / head */
    int qk_norm;                    /* RMSNorm on each q and k head before RoPE (Qwen3) */
    int experts, experts_per_token; /* a mixture of experts (0: a dense MLP) */
    int expert_F, moe_layers;       /* each expert's hidden width; the blocks with experts (the
                                     * others, model.dense_layers, have a dense MLP of F) */
} accel_decoder_dims_t;

void accel_decoder_dims(const accel_config_t *cfg, accel_decoder_dims_t *d);

typedef enum {
    ACCEL_ROPE_SCALED,              /* model.rope_scaling's (longrope: the short factors) */
    ACCEL_ROPE_PLAIN,               /* unscaled, at model.sliding_rope_theta when set (the sliding
                                     * layers' with model.sliding_rope=plain) */
    ACCEL_ROPE_LONG,                /* longrope's long factors (sequences past the original context) */
} accel_rope_table_t;

/* The RoPE tables of a llama: cos and sin of every (position, frequency) pair, [T, hs/2] each
 * (hs: the values each head turns, its size or model.rope_dim), in the caller's arrays (inverse
 * frequencies rounded to fp32 as transformers computes them, then Llama-3.1 scaling when
 * model.rope_scaling=llama3, divided by rope_factor with linear, by the factor lists with
 * longrope; with yarn, YaRN's frequencies; with yarn and longrope both tables multiplied by the
 * attention factor, as transformers scales cos and sin). */
void accel_decoder_rope_tables(const accel_model_config_t *c, int T, int hs, accel_rope_table_t which,
                               float *cos_t, float *sin_t);

#endif
