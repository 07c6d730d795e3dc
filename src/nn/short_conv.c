/* LFM2's gated short convolution on the CPU (see short_conv.h). The forward pass keeps the
 * convolution's output; the backward pass rebuilds v = b * x from the input projection. */
#include "short_conv.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif

#include <string.h>

#include "causal_conv.h"
#include "kernels_cpu.h"

typedef struct {                    /* the scratch, carved */
    float *v, *dk, *dv;             /* [R, C] b * x, d(the convolution's output), d(v) */
    float *taps, *dtaps;            /* [K, C] the convolution's weights tap by tap, their gradients */
} work_t;

static work_t carve(const accel_sconv_dims_t *d, float *p, size_t R)
{
    const size_t RC = R * (size_t)d->C, KC = (size_t)d->K * (size_t)d->C;
    return (work_t){ p, p + RC, p + 2 * RC, p + 3 * RC, p + 3 * RC + KC };
}

size_t accel_sconv_scratch_floats(const accel_sconv_dims_t *d, size_t R)
{
    return 3 * R * (size_t)d->C + 2 * (size_t)d->K * (size_t)d->C;
}

static accel_cconv_t conv_of(const accel_sconv_dims_t *d) { return (accel_cconv_t){ (size_t)d->C, d->K }; }

/* v = b * x for R rows. */
ACCEL_CLONES static void gate_in(const accel_sconv_dims_t *d, const float *u, size_t ldu, size_t R, float *v)
{
    const size_t C = (size_t)d->C;
    for (size_t r = 0; r < R; r++) {
        const float *b = u + r * ldu, *x = b + 2 * C;
        float *vr = v + r * C;
        for (size_t i = 0; i < C; i++) vr[i] = b[i] * x[i];
    }
}

/* y = c * kept for R rows. */
ACCEL_CLONES static void gate_out(const accel_sconv_dims_t *d, const float *u, size_t ldu, size_t R,
                                  const float *kept, float *y)
{
    const size_t C = (size_t)d->C;
    for (size_t r = 0; r < R; r++) {
        const float *c = u + r * ldu + C, *k = kept + r * C;
        float *yr = y + r * C;
        for (size_t i = 0; i < C; i++) yr[i] = c[i] * k[i];
    }
}

void accel_sconv_forward(const accel_sconv_dims_t *d, const float *conv, const float *u, size_t ldu, int B, int T,
                         const int32_t *pos, float *kept, float *y, float *scratch)
{
    const size_t R = (size_t)B * T;
    const accel_cconv_t c = conv_of(d);
    work_t s = carve(d, scratch, R);
    gate_in(d, u, ldu, R, s.v);
    accel_cconv_taps(&c, conv, s.taps);
    accel_cconv_forward(&c, s.taps, s.v, c.CW, B, T, pos, kept, c.CW);
    gate_out(d, u, ldu, R, kept, y);
}

ACCEL_CLONES void accel_sconv_backward(const accel_sconv_dims_t *d, const float *conv, float *gconv, const float *u,
                                       size_t ldu, int B, int T, const int32_t *pos, const float *kept,
                                       const float *dy, float *du, float *scratch)
{
    const size_t R = (size_t)B * T, C = (size_t)d->C;
    const accel_cconv_t c = conv_of(d);
    work_t s = carve(d, scratch, R);
    /* y = c * k: d(c), d(k) */
    for (size_t r = 0; r < R; r++) {
        const float *cr = u + r * ldu + C, *k = kept + r * C, *g = dy + r * C;
        float *dc = du + r * ldu + C, *dk = s.dk + r * C;
        for (size_t i = 0; i < C; i++) {
            dc[i] = g[i] * k[i];
            dk[i] = g[i] * cr[i];
        }
    }
    /* k = conv(v): d(v), d(taps) */
    gate_in(d, u, ldu, R, s.v);
    accel_cconv_taps(&c, conv, s.taps);
    memset(s.dv, 0, sizeof(float) * R * C);
    memset(s.dtaps, 0, sizeof(float) * (size_t)d->K * C);
    accel_cconv_backward(&c, s.taps, s.v, C, B, T, pos, s.dk, C, s.dv, s.dtaps);
    accel_cconv_add_grad(&c, s.dtaps, gconv);
    /* v = b * x: d(b), d(x) */
    for (size_t r = 0; r < R; r++) {
        const float *b = u + r * ldu, *x = b + 2 * C, *g = s.dv + r * C;
        float *db = du + r * ldu, *dx = db + 2 * C;
        for (size_t i = 0; i < C; i++) {
            db[i] = g[i] * x[i];
            dx[i] = g[i] * b[i];
        }
    }
}

void accel_sconv_extend(const accel_sconv_dims_t *d, const float *conv, const float *u, size_t ldu, int p0, int T,
                        float *cache, float *kept, float *y, float *scratch)
{
    const size_t R = (size_t)(T - p0);
    const accel_cconv_t c = conv_of(d);
    if (p0 == 0) memset(cache, 0, sizeof(float) * accel_sconv_cache_floats(d));
    work_t s = carve(d, scratch, R);
    const float *ur = u + (size_t)p0 * ldu;
    gate_in(d, ur, ldu, R, s.v);
    accel_cconv_taps(&c, conv, s.taps);
    accel_cconv_extend(&c, s.taps, s.v, c.CW, p0, T, cache, kept, c.CW);
    gate_out(d, ur, ldu, R, kept, y + (size_t)p0 * c.CW);
}
