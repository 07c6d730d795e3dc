/* Gated delta-net linear attention for the CPU decoder (src/nn/decoder.c): the token mixer of the
 * linear_attention layers of Qwen3.5 and Qwen3-Next (transformers' Qwen3_5GatedDeltaNet), between
 * the input projection the decoder makes and the output projection it applies.
 *
 * Each row of the input projection is u = [q (Hk dk) | k (Hk dk) | v (Hv dv) | z (Hv dv) | b (Hv) |
 * a (Hv)]. q|k|v go through a causal depthwise convolution of width K and SiLU; each q and k head is
 * L2-normalized (q then scaled by 1/sqrt(dk)); value head h reads key head h / (Hv / Hk).
 * beta = sigmoid(b) (OLMo Hybrid: 2 sigmoid(b)) and g = -exp(A_log) softplus(a + dt_bias) per value head. The state S [dk, dv]
 * of each (document, value head) starts at zero and, token by token,
 *     S = exp(g) S;   S += k (beta (v - S^T k))^T;   o = S^T q
 * and the output is y = rmsnorm(o) * norm * silu(z) per value head (norm: [dv], shared by heads).
 * Packed documents (positions restarting at 0) start their own convolution and state.
 * Internal to libaccel. */
#ifndef ACCEL_NN_GATED_DELTA_H
#define ACCEL_NN_GATED_DELTA_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int Hk, Hv;                     /* key heads (q and k), value heads (a multiple of Hk) */
    int dk, dv;                     /* their sizes */
    int K;                          /* the convolution's width */
    float eps;                      /* the gated RMSNorm's */
    float beta_scale;               /* beta = beta_scale sigmoid(b): 1, or 2 (OLMo Hybrid's negative
                                     * eigenvalues: beta in (0, 2)) */
} accel_gdn_dims_t;

/* q|k|v: the channels the convolution runs over */
static inline size_t accel_gdn_conv_width(const accel_gdn_dims_t *d)
{
    return 2 * (size_t)d->Hk * (size_t)d->dk + (size_t)d->Hv * (size_t)d->dv;
}

/* a row of the input projection: q|k|v, z, b, a */
static inline size_t accel_gdn_in_width(const accel_gdn_dims_t *d)
{
    return accel_gdn_conv_width(d) + (size_t)d->Hv * (size_t)d->dv + 2 * (size_t)d->Hv;
}

typedef struct {                    /* one layer's weights */
    const float *conv;              /* [conv width, K] (transformers' conv1d.weight [., 1, K]) */
    const float *dt_bias, *A_log;   /* [Hv] */
    const float *norm;              /* [dv] the gated RMSNorm's weight (plain, not 1 + weight) */
} accel_gdn_weights_t;

typedef struct {                    /* ... and their gradients, alike */
    float *conv, *dt_bias, *A_log, *norm;
} accel_gdn_grads_t;

typedef struct {                    /* what the forward pass keeps for the backward pass, per row */
    float *xc;                      /* [R, conv width] the convolution's output before SiLU */
    float *o;                       /* [R, Hv dv] the recurrence's output before the norm */
    float *orstd;                   /* [R, Hv] its norm's 1/rms */
} accel_gdn_acts_t;

/* Floats of accel_gdn_acts_t per row. */
size_t accel_gdn_act_floats(const accel_gdn_dims_t *d);

/* Floats of the scratch the passes need for B sequences of T tokens. */
size_t accel_gdn_scratch_floats(const accel_gdn_dims_t *d, size_t B, size_t T);

/* Points a's arrays into p (accel_gdn_act_floats(d) * rows floats). */
void accel_gdn_carve(const accel_gdn_dims_t *d, accel_gdn_acts_t *a, float *p, size_t rows);

/* B sequences of T rows: u [B T, in width] (row stride ldu) -> y [B T, Hv dv]. pos: [B T] each
 * row's position in its document (NULL: one document per sequence). */
void accel_gdn_forward(const accel_gdn_dims_t *d, const accel_gdn_weights_t *w, const float *u, size_t ldu,
                       int B, int T, const int32_t *pos, const accel_gdn_acts_t *a, float *y, float *scratch);

/* dy [B T, Hv dv] -> du [B T, in width] (written; row stride ldu), the weights' gradients added to
 * gw. u and a as the forward pass left them. */
void accel_gdn_backward(const accel_gdn_dims_t *d, const accel_gdn_weights_t *w, const accel_gdn_grads_t *gw,
                        const float *u, size_t ldu, int B, int T, const int32_t *pos, const accel_gdn_acts_t *a,
                        const float *dy, float *du, float *scratch);

/* Inference, one sequence at a time: the state of every value head and the convolution's input at
 * the last K - 1 positions (accel_gdn_cache_floats). */
size_t accel_gdn_cache_floats(const accel_gdn_dims_t *d);

/* Positions p0..T-1 of one sequence: u [T, in width] (rows p0.. made), y rows p0.. written, a's
 * rows 0..T-p0-1 hold those positions'. Continues from cache (p0 = 0: a fresh sequence) and leaves
 * it holding position T-1's. */
void accel_gdn_extend(const accel_gdn_dims_t *d, const accel_gdn_weights_t *w, const float *u, size_t ldu, int p0,
                      int T, float *cache, const accel_gdn_acts_t *a, float *y, float *scratch);

#endif
