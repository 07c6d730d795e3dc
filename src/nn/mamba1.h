/* Mamba-1's selective state-space mixer for the CPU decoder (src/nn/decoder.c): the token mixer of
 * Mamba (transformers' MambaMixer), Falcon Mamba and Jamba, between the input projection the
 * decoder makes and the output projection it applies.
 *
 * Each row of the input projection is u = [x (I) | z (I)]. x goes through a causal depthwise
 * convolution of width K (plus a bias) and SiLU: xs. Then
 *     [dt_in (R) | B (N) | C (N)] = xs x_proj^T         (Falcon Mamba: each part RMS-normed without
 *                                                        weights; Jamba: with weights)
 *     dt = softplus(dt_in dt_proj^T + dt_bias)            [I]
 * and each channel i keeps a state h_i [N] that starts at zero and, token by token,
 *     h_i = exp(dt_i A_i) h_i + dt_i xs_i B;   y_i = h_i . C + D_i xs_i,   A = -exp(A_log) [I, N]
 * The output is y silu(z) [I]. Packed documents (positions restarting at 0) start their own
 * convolution and states. The two products (x_proj, dt_proj) run on the decoder's GEMM, at its
 * precision. Internal to libaccel. */
#ifndef ACCEL_NN_MAMBA1_H
#define ACCEL_NN_MAMBA1_H

#include <stddef.h>
#include <stdint.h>

#include "accel/status.h"
#include "gemm_cpu.h"

typedef enum {
    ACCEL_MAMBA1_NORMS_NONE = 0,    /* Mamba */
    ACCEL_MAMBA1_NORMS_PLAIN,       /* Falcon Mamba: RMS norms on dt_in, B, C without weights */
    ACCEL_MAMBA1_NORMS_WEIGHTED,    /* Jamba: with weights */
} accel_mamba1_norms_t;

typedef struct {
    int I;                          /* channels (transformers' intermediate_size) */
    int N;                          /* each channel's state */
    int R;                          /* dt's rank: x_proj's first rows, dt_proj's input */
    int K;                          /* the convolution's width */
    accel_mamba1_norms_t norms;
    float eps;                      /* the norms' */
} accel_mamba1_dims_t;

/* a row of the input projection: x, z */
static inline size_t accel_mamba1_in_width(const accel_mamba1_dims_t *d) { return 2 * (size_t)d->I; }
/* a row of x_proj's output: dt_in, B, C */
static inline size_t accel_mamba1_dbc_width(const accel_mamba1_dims_t *d) { return (size_t)d->R + 2 * (size_t)d->N; }

typedef struct {                    /* one layer's weights */
    const float *conv;              /* [I, K] (transformers' conv1d.weight [I, 1, K]) */
    const float *conv_bias;         /* [I], or NULL */
    const float *x_proj;            /* [R + 2N, I] */
    const float *dt_norm, *b_norm, *c_norm;  /* [R], [N], [N]: the weighted norms' (else NULL) */
    const float *dt_proj;           /* [I, R] */
    const float *dt_bias;           /* [I] (transformers' dt_proj.bias) */
    const float *A_log;             /* [I, N] */
    const float *D;                 /* [I] */
} accel_mamba1_weights_t;

typedef struct {                    /* ... and their gradients, alike */
    float *conv, *conv_bias, *x_proj, *dt_norm, *b_norm, *c_norm, *dt_proj, *dt_bias, *A_log, *D;
} accel_mamba1_grads_t;

typedef struct {                    /* what the forward pass keeps for the backward pass, per row */
    float *xc;                      /* [R, I] the convolution's output (with its bias) before SiLU */
    float *dbc;                     /* [R, R + 2N] x_proj's output, before the norms */
    float *rstd;                    /* [R, 3] the norms' 1/rms of dt_in, B, C */
    float *dtp;                     /* [R, I] dt before softplus (with dt_bias) */
    float *y;                       /* [R, I] the recurrence's output (with D xs), before the gate */
} accel_mamba1_acts_t;

/* Floats of accel_mamba1_acts_t per row. */
size_t accel_mamba1_act_floats(const accel_mamba1_dims_t *d);

/* Floats of the scratch the passes need for B sequences of T tokens. */
size_t accel_mamba1_scratch_floats(const accel_mamba1_dims_t *d, size_t B, size_t T);

/* Points a's arrays into p (accel_mamba1_act_floats(d) * rows floats). */
void accel_mamba1_carve(const accel_mamba1_dims_t *d, accel_mamba1_acts_t *a, float *p, size_t rows);

/* B sequences of T rows: u [B T, in width] (row stride ldu) -> out [B T, I]. pos: [B T] each row's
 * position in its document (NULL: one document per sequence). */
accel_status_t accel_mamba1_forward(accel_gemm_cpu_t *g, const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w,
                                    const float *u, size_t ldu, int B, int T, const int32_t *pos,
                                    const accel_mamba1_acts_t *a, float *out, float *scratch);

/* dout [B T, I] -> du [B T, in width] (written; row stride ldu), the weights' gradients added to
 * gw. u and a as the forward pass left them. */
accel_status_t accel_mamba1_backward(accel_gemm_cpu_t *g, const accel_mamba1_dims_t *d,
                                     const accel_mamba1_weights_t *w, const accel_mamba1_grads_t *gw, const float *u,
                                     size_t ldu, int B, int T, const int32_t *pos, const accel_mamba1_acts_t *a,
                                     const float *dout, float *du, float *scratch);

/* Inference, one sequence at a time: every channel's state and the convolution's input at the
 * last K - 1 positions. */
size_t accel_mamba1_cache_floats(const accel_mamba1_dims_t *d);

/* Positions p0..T-1 of one sequence: u [T, in width] (rows p0.. made), out rows p0.. written, a's
 * rows 0..T-p0-1 hold those positions'. Continues from cache (p0 = 0: a fresh sequence) and leaves
 * it holding position T-1's. */
accel_status_t accel_mamba1_extend(accel_gemm_cpu_t *g, const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w,
                                   const float *u, size_t ldu, int p0, int T, float *cache,
                                   const accel_mamba1_acts_t *a, float *out, float *scratch);

#endif
