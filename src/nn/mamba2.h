/* Mamba-2's selective state-space mixer for the CPU decoder (src/nn/decoder.c): the token mixer of
 * the Mamba layers of Granite 4.0-H and Bamba (transformers' BambaMixer), between the input
 * projection the decoder makes and the output projection it applies.
 *
 * Each row of the input projection is u = [z (I) | x (I) | B (G N) | C (G N) | dt (H)], I = H P.
 * x|B|C go through a causal depthwise convolution of width K (plus a bias) and SiLU. Per head h
 * (of P values, reading group g = h / (H / G) of B and C): dt = softplus(dt + dt_bias) (transformers'
 * time_step_limit (0, inf): no clamp), a = exp(-exp(A_log) dt), and a state S [N, P] that starts at
 * zero and, token by token,
 *     S = a S + B (dt x)^T;   y = S^T C + D x
 * The output is rmsnorm(y silu(z)) * norm over groups of I / G values (transformers'
 * norm_before_gate=False). Packed documents (positions restarting at 0) start their own
 * convolution and state. Internal to libaccel. */
#ifndef ACCEL_NN_MAMBA2_H
#define ACCEL_NN_MAMBA2_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int H, P;                       /* heads, each head's values (I = H P) */
    int G, N;                       /* groups of B and C, the state's size */
    int K;                          /* the convolution's width */
    float eps;                      /* the gated norm's */
} accel_mamba2_dims_t;

/* x|B|C: the channels the convolution runs over */
static inline size_t accel_mamba2_conv_width(const accel_mamba2_dims_t *d)
{
    return (size_t)d->H * (size_t)d->P + 2 * (size_t)d->G * (size_t)d->N;
}

/* a row of the input projection: z, x|B|C, dt */
static inline size_t accel_mamba2_in_width(const accel_mamba2_dims_t *d)
{
    return (size_t)d->H * (size_t)d->P + accel_mamba2_conv_width(d) + (size_t)d->H;
}

typedef struct {                    /* one layer's weights */
    const float *conv;              /* [conv width, K] (transformers' conv1d.weight [., 1, K]) */
    const float *conv_bias;         /* [conv width], or NULL */
    const float *dt_bias, *A_log, *D;   /* [H] */
    const float *norm;              /* [I] the gated norm's weight */
} accel_mamba2_weights_t;

typedef struct {                    /* ... and their gradients, alike */
    float *conv, *conv_bias, *dt_bias, *A_log, *D, *norm;
} accel_mamba2_grads_t;

typedef struct {                    /* what the forward pass keeps for the backward pass, per row */
    float *xc;                      /* [R, conv width] the convolution's output before SiLU */
    float *y;                       /* [R, I] the recurrence's output (with D x), before the norm */
    float *yrstd;                   /* [R, G] the gated norm's 1/rms per group */
} accel_mamba2_acts_t;

/* Floats of accel_mamba2_acts_t per row. */
size_t accel_mamba2_act_floats(const accel_mamba2_dims_t *d);

/* Floats of the scratch the passes need for B sequences of T tokens. */
size_t accel_mamba2_scratch_floats(const accel_mamba2_dims_t *d, size_t B, size_t T);

/* Points a's arrays into p (accel_mamba2_act_floats(d) * rows floats). */
void accel_mamba2_carve(const accel_mamba2_dims_t *d, accel_mamba2_acts_t *a, float *p, size_t rows);

/* B sequences of T rows: u [B T, in width] (row stride ldu) -> out [B T, I]. pos: [B T] each row's
 * position in its document (NULL: one document per sequence). */
void accel_mamba2_forward(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w, const float *u,
                          size_t ldu, int B, int T, const int32_t *pos, const accel_mamba2_acts_t *a, float *out,
                          float *scratch);

/* dout [B T, I] -> du [B T, in width] (written; row stride ldu), the weights' gradients added to
 * gw. u and a as the forward pass left them. */
void accel_mamba2_backward(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w,
                           const accel_mamba2_grads_t *gw, const float *u, size_t ldu, int B, int T,
                           const int32_t *pos, const accel_mamba2_acts_t *a, const float *dout, float *du,
                           float *scratch);

/* Inference, one sequence at a time: every head's state and the convolution's input at the last
 * K - 1 positions. */
size_t accel_mamba2_cache_floats(const accel_mamba2_dims_t *d);

/* Positions p0..T-1 of one sequence: u [T, in width] (rows p0.. made), out rows p0.. written, a's
 * rows 0..T-p0-1 hold those positions'. Continues from cache (p0 = 0: a fresh sequence) and leaves
 * it holding position T-1's. */
void accel_mamba2_extend(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w, const float *u, size_t ldu,
                         int p0, int T, float *cache, const accel_mamba2_acts_t *a, float *out, float *scratch);

#endif
