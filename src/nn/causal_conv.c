/* The causal depthwise convolution (see causal_conv.h), built for AVX-512, AVX2 and the baseline
 * as kernels_cpu.c; each output is summed tap by tap in one order whatever the vector width. */
#include "causal_conv.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif

#include <string.h>

#include "kernels_cpu.h"

void accel_cconv_taps(const accel_cconv_t *c, const float *conv, float *taps)
{
    const size_t K = (size_t)c->K;
    for (size_t ch = 0; ch < c->CW; ch++)
        for (size_t j = 0; j < K; j++) taps[j * c->CW + ch] = conv[ch * K + j];
}

void accel_cconv_add_grad(const accel_cconv_t *c, const float *dtaps, float *gconv)
{
    const size_t K = (size_t)c->K;
    for (size_t ch = 0; ch < c->CW; ch++)
        for (size_t j = 0; j < K; j++) gconv[ch * K + j] += dtaps[j * c->CW + ch];
}

ACCEL_CLONES void accel_cconv_forward(const accel_cconv_t *c, const float *taps, const float *x, size_t ldx, int B,
                                      int T, const int32_t *pos, float *y, size_t ldy)
{
    const size_t CW = c->CW;
    const int K = c->K;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const int start = accel_doc_start(pos, (size_t)b * T, t);
            float *yt = y + ((size_t)b * T + t) * ldy;
            memset(yt, 0, sizeof(float) * CW);
            for (int j = 0; j < K; j++) {
                const int src = t - (K - 1) + j;
                if (src < start) continue;
                const float *xs = x + ((size_t)b * T + src) * ldx, *wj = taps + (size_t)j * CW;
                for (size_t ch = 0; ch < CW; ch++) yt[ch] += wj[ch] * xs[ch];
            }
        }
}

ACCEL_CLONES void accel_cconv_backward(const accel_cconv_t *c, const float *taps, const float *x, size_t ldx, int B,
                                       int T, const int32_t *pos, const float *dy, size_t ldy, float *dx,
                                       float *dtaps)
{
    const size_t CW = c->CW;
    const int K = c->K;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const int start = accel_doc_start(pos, (size_t)b * T, t);
            const float *g = dy + ((size_t)b * T + t) * ldy;
            for (int j = 0; j < K; j++) {
                const int src = t - (K - 1) + j;
                if (src < start) continue;
                const size_t rs = (size_t)b * T + src;
                const float *xs = x + rs * ldx, *wj = taps + (size_t)j * CW;
                float *dxs = dx + rs * ldx, *dwj = dtaps + (size_t)j * CW;
                for (size_t ch = 0; ch < CW; ch++) {
                    dwj[ch] += g[ch] * xs[ch];
                    dxs[ch] += g[ch] * wj[ch];
                }
            }
        }
}

ACCEL_CLONES void accel_cconv_extend(const accel_cconv_t *c, const float *taps, const float *x, size_t ldx, int p0,
                                     int T, float *tail, float *y, size_t ldy)
{
    const size_t CW = c->CW, R = (size_t)(T - p0);
    const int K = c->K;
    for (size_t r = 0; r < R; r++) {
        const int t = p0 + (int)r;
        float *yt = y + r * ldy;
        memset(yt, 0, sizeof(float) * CW);
        for (int j = 0; j < K; j++) {
            const int src = t - (K - 1) + j;
            if (src < 0) continue;
            const float *in = src >= p0 ? x + (size_t)(src - p0) * ldx : tail + (size_t)(src - p0 + K - 1) * CW;
            const float *wj = taps + (size_t)j * CW;
            for (size_t ch = 0; ch < CW; ch++) yt[ch] += wj[ch] * in[ch];
        }
    }
    /* the new tail, positions T - K + 1 .. T - 1: entry i comes from x or from the old tail's
     * entry i + R, read before anything at or past it is written */
    for (int i = 0; i < K - 1; i++) {
        const int t = T - (K - 1) + i;
        float *dst = tail + (size_t)i * CW;
        if (t < 0) memset(dst, 0, sizeof(float) * CW);
        else if (t >= p0) memcpy(dst, x + (size_t)(t - p0) * ldx, sizeof(float) * CW);
        else memcpy(dst, tail + ((size_t)i + R) * CW, sizeof(float) * CW);
    }
}
