/* LFM2's gated short convolution for the CPU decoder (src/nn/decoder.c): the token mixer of LFM2's
 * conv layers (transformers' Lfm2ShortConv), between the input projection the decoder makes and the
 * output projection it applies.
 *
 * Each row of the input projection is u = [b (C) | c (C) | x (C)]. v = b * x goes through a causal
 * depthwise convolution of width K (causal_conv.h: within each packed document, no activation) and
 * the output is y = c * conv(v). A generation's cache is the last K - 1 rows of v. Internal to
 * libaccel. */
#ifndef ACCEL_NN_SHORT_CONV_H
#define ACCEL_NN_SHORT_CONV_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int C;                          /* channels (the model's width) */
    int K;                          /* the convolution's width */
} accel_sconv_dims_t;

/* A row of the input projection: b | c | x. */
static inline size_t accel_sconv_in_width(const accel_sconv_dims_t *d) { return 3 * (size_t)d->C; }

/* Floats the forward pass keeps per row for the backward pass: the convolution's output [C]. */
static inline size_t accel_sconv_act_floats(const accel_sconv_dims_t *d) { return (size_t)d->C; }

/* Floats of the scratch the passes need for R rows. */
size_t accel_sconv_scratch_floats(const accel_sconv_dims_t *d, size_t R);

/* B sequences of T rows: u [B T, 3C] (row stride ldu) -> y [B T, C]; conv [C, K] (transformers'
 * conv.weight [C, 1, K]); kept [B T, C] the convolution's output. pos: [B T] each row's position in
 * its document (NULL: one document per sequence). */
void accel_sconv_forward(const accel_sconv_dims_t *d, const float *conv, const float *u, size_t ldu, int B, int T,
                         const int32_t *pos, float *kept, float *y, float *scratch);

/* dy [B T, C] -> du [B T, 3C] (written; row stride ldu), conv's gradient added to gconv. u and kept
 * as the forward pass left them. */
void accel_sconv_backward(const accel_sconv_dims_t *d, const float *conv, float *gconv, const float *u, size_t ldu,
                          int B, int T, const int32_t *pos, const float *kept, const float *dy, float *du,
                          float *scratch);

/* Inference, one sequence at a time: the convolution's input at the last K - 1 positions. */
static inline size_t accel_sconv_cache_floats(const accel_sconv_dims_t *d)
{
    return (size_t)(d->K - 1) * (size_t)d->C;
}

/* Positions p0..T-1 of one sequence: u [T, 3C] (rows p0.. made), y rows p0.. written, kept's rows
 * 0..T-p0-1 hold those positions'. Continues from cache (p0 = 0: a fresh sequence) and leaves it
 * holding position T-1's. */
void accel_sconv_extend(const accel_sconv_dims_t *d, const float *conv, const float *u, size_t ldu, int p0, int T,
                        float *cache, float *kept, float *y, float *scratch);

#endif
