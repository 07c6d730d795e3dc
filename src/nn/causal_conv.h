/* The causal depthwise convolution of the recurrent token mixers (gated_delta.c, short_conv.c):
 * channel c of row t is
 *     y[t][c] = sum_j conv[c][j] x[t - K + 1 + j][c]
 * over the rows of t's own document only (packed documents: positions restarting at 0). conv is
 * transformers' Conv1d weight [CW, 1, K] without its middle axis; the loops run on its taps
 * transposed, [K, CW], so they stride over contiguous channels. Internal to libaccel. */
#ifndef ACCEL_NN_CAUSAL_CONV_H
#define ACCEL_NN_CAUSAL_CONV_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t CW;                      /* channels */
    int K;                          /* width */
} accel_cconv_t;

/* Row t's document start within its sequence (rows t0 .. t0 + T - 1 of the batch; pos NULL: one
 * document per sequence). */
static inline int accel_doc_start(const int32_t *pos, size_t t0, int t)
{
    return pos ? t - pos[t0 + (size_t)t] : 0;
}

/* taps [K, CW] = conv [CW, K] transposed. */
void accel_cconv_taps(const accel_cconv_t *c, const float *conv, float *taps);

/* gconv [CW, K] += dtaps [K, CW] transposed. */
void accel_cconv_add_grad(const accel_cconv_t *c, const float *dtaps, float *gconv);

/* B sequences of T rows: x [B T, CW] (row stride ldx) -> y [B T, CW] (row stride ldy). */
void accel_cconv_forward(const accel_cconv_t *c, const float *taps, const float *x, size_t ldx, int B, int T,
                         const int32_t *pos, float *y, size_t ldy);

/* dy (row stride ldy) -> dx added (row stride ldx), the taps' gradients added to dtaps [K, CW]. */
void accel_cconv_backward(const accel_cconv_t *c, const float *taps, const float *x, size_t ldx, int B, int T,
                          const int32_t *pos, const float *dy, size_t ldy, float *dx, float *dtaps);

/* Inference, positions p0..T-1 of one sequence: x's row r is position p0 + r, tail [K - 1, CW]
 * holds the inputs at positions p0 - K + 1 .. p0 - 1 (zero before 0); y's rows 0 .. T-p0-1
 * written, and tail left holding positions T - K + 1 .. T - 1. */
void accel_cconv_extend(const accel_cconv_t *c, const float *taps, const float *x, size_t ldx, int p0, int T,
                        float *tail, float *y, size_t ldy);

#endif
