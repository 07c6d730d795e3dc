/* Fused single-threaded CPU kernels for the built-in models (see kernels_cpu.h).
 *
 * Speed comes from the compiler: the loops are plain C written so GCC vectorises them, and the
 * hot ones are built three times (AVX-512, AVX2, baseline) with the best picked at load time
 * (target_clones). exp is a branch-free polynomial so loops that call it vectorise too. This file
 * is compiled at -O3 without FP-trap semantics (the pragma below): accel never inspects FP
 * exception flags, and without it GCC will not if-convert the clamps in exp. Reductions keep
 * LANES partial sums combined in a fixed order, so results do not depend on the vector width. */
#include "build_config.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif

#include <math.h>
#include <string.h>

#include "accel/dtype.h"
#include "kernels_cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define ACCEL_X86 1
#include "transpose_x86.h"
#else
#define ACCEL_X86 0
#endif

#define LANES 16

/* e^x = 2^n e^r, x = n ln2 + r (Cody-Waite range reduction, inputs clamped to [-87, 88] so 2^n
 * stays a normal number): returns e^r - 1 = r + r^2 q(r) (a degree-6 polynomial, Cephes expf)
 * and 2^n in *scale. */
static inline float exp_reduced(float x, float *scale)
{
    x = x > -87.0f ? x : -87.0f;
    x = x < 88.0f ? x : 88.0f;
    const float magic = 12582912.0f;                /* 1.5 * 2^23: adding it rounds to integer */
    float t = x * 1.44269504088896341f + magic;
    float n = t - magic;
    int32_t ti;
    memcpy(&ti, &t, 4);
    int32_t ni = ti - 0x4B400000;                   /* integer value of n */
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    int32_t sb = (ni + 127) << 23;
    memcpy(scale, &sb, 4);
    return p * r * r + r;
}

/* exp(x) for any float x. Relative error about 2 ulp. */
static inline float fexp(float x)
{
    float s;
    const float m1 = exp_reduced(x, &s);
    return (m1 + 1.0f) * s;
}

/* exp(x) - 1 without the cancellation near 0: for |x| < ln2 / 2 (n = 0) e^r - 1 alone; else
 * (e^r - 1) 2^n + (2^n - 1), whose magnitude is past 0.29. */
static inline float fexpm1(float x)
{
    float s;
    const float m1 = exp_reduced(x, &s);
    return m1 * s + (s - 1.0f);
}

/* tanh(u) = 1 - 2 / (exp(2u) + 1): absolute error ~1e-7, saturates cleanly at +-1. */
static inline float ftanh(float u) { return 1.0f - 2.0f / (fexp(2.0f * u) + 1.0f); }

static inline float hsum(float acc[LANES])
{
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) acc[k] += acc[k + w];
    return acc[0];
}

static inline float sum_of(const float *x, int n)
{
    float acc[LANES] = { 0 };
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += x[i + k];
    for (int k = 0; i + k < n; k++) acc[k] += x[i + k];
    return hsum(acc);
}

static inline float dot_of(const float *x, const float *y, int n)
{
    float acc[LANES] = { 0 };
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += x[i + k] * y[i + k];
    for (int k = 0; i + k < n; k++) acc[k] += x[i + k] * y[i + k];
    return hsum(acc);
}

static inline float max_of(const float *x, int n)
{
    float acc[LANES];
    for (int k = 0; k < LANES; k++) acc[k] = -INFINITY;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
    for (int k = 0; i + k < n; k++) acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
    float m = acc[0];
    for (int k = 1; k < LANES; k++) m = acc[k] > m ? acc[k] : m;
    return m;
}

ACCEL_CLONES
void accel_cpu_bias_rows(float *y, const float *b, const float *res, size_t rows, int cols)
{
    for (size_t r = 0; r < rows; r++) {
        float *yr = y + r * (size_t)cols;
        if (res) {
            const float *xr = res + r * (size_t)cols;
            for (int c = 0; c < cols; c++) yr[c] = xr[c] + b[c];
        } else {
            memcpy(yr, b, sizeof(float) * (size_t)cols);
        }
    }
}

ACCEL_CLONES
void accel_cpu_colsum_add(float *db, const float *dy, size_t rows, int cols)
{
    for (size_t r = 0; r < rows; r++) {
        const float *d = dy + r * (size_t)cols;
        for (int c = 0; c < cols; c++) db[c] += d[c];
    }
}

ACCEL_CLONES
void accel_cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                                 const float *w, const float *b, size_t rows, int C, float eps)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * (size_t)C;
        float *o = out + r * (size_t)C;
        float m = sum_of(xr, C) / (float)C;
        float acc[LANES] = { 0 };
        int i = 0;
        for (; i + LANES <= C; i += LANES)
            for (int k = 0; k < LANES; k++) {
                float d = xr[i + k] - m;
                acc[k] += d * d;
            }
        for (int k = 0; i + k < C; k++) {
            float d = xr[i + k] - m;
            acc[k] += d * d;
        }
        float s = 1.0f / sqrtf(hsum(acc) / (float)C + eps);
        for (int c = 0; c < C; c++) o[c] = (xr[c] - m) * s * w[c] + (b ? b[c] : 0.0f);
        mean[r] = m;
        rstd[r] = s;
    }
}

/* LANES floats as one GCC vector: one zmm in the AVX-512 build, two ymm in the AVX2 one, the same
 * lanes in the same order everywhere. For loops whose lane-array form GCC vectorises badly (the
 * LayerNorm backward came out as thousands of shuffles). */
typedef float lanes_t __attribute__((vector_size(LANES * sizeof(float)), aligned(sizeof(float)),
                                     may_alias));
#define LANES_AT(p) (*(const lanes_t *)(p))     /* the LANES floats from p, as a vector */
#define LANES_TO(p) (*(lanes_t *)(p))           /* ... as a place to store a vector */

ACCEL_CLONES
void accel_cpu_layernorm_backward(float *restrict dx, float *restrict dw, float *restrict db,
                                  const float *dout,
                                  const float *x, const float *mean, const float *rstd,
                                  const float *w, size_t rows, int C)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * (size_t)C, *d = dout + r * (size_t)C;
        float *dxr = dx + r * (size_t)C;
        const float m = mean[r], s = rstd[r];
        lanes_t vg = { 0 }, vgx = { 0 };
        int i = 0;
        for (; i + LANES <= C; i += LANES) {
            lanes_t g = LANES_AT(d + i) * LANES_AT(w + i), xh = (LANES_AT(xr + i) - m) * s;
            vg += g;
            vgx += g * xh;
        }
        float ag[LANES], agx[LANES];
        memcpy(ag, &vg, sizeof ag);
        memcpy(agx, &vgx, sizeof agx);
        for (int k = 0; i + k < C; k++) {
            float g = d[i + k] * w[i + k], xh = (xr[i + k] - m) * s;
            ag[k] += g;
            agx[k] += g * xh;
        }
        const float mg = hsum(ag) / (float)C, mgx = hsum(agx) / (float)C;
        int c = 0;
        for (; c + LANES <= C; c += LANES) {
            lanes_t dv = LANES_AT(d + c), xh = (LANES_AT(xr + c) - m) * s;
            LANES_TO(dw + c) += dv * xh;
            if (db) LANES_TO(db + c) += dv;
            LANES_TO(dxr + c) += s * (dv * LANES_AT(w + c) - mg - xh * mgx);
        }
        for (; c < C; c++) {
            float xh = (xr[c] - m) * s;
            dw[c] += d[c] * xh;
            if (db) db[c] += d[c];
            dxr[c] += s * (d[c] * w[c] - mg - xh * mgx);
        }
    }
}

ACCEL_CLONES
void accel_cpu_rmsnorm_forward(float *out, float *rstd, const float *x, const float *w, size_t rows,
                               int C, float eps)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * (size_t)C;
        float *o = out + r * (size_t)C;
        float s = 1.0f / sqrtf(dot_of(xr, xr, C) / (float)C + eps);
        for (int c = 0; c < C; c++) o[c] = xr[c] * s * w[c];
        rstd[r] = s;
    }
}

ACCEL_CLONES
void accel_cpu_rmsnorm_backward(float *restrict dx, float *restrict dw, const float *dout,
                                const float *x, const float *rstd, const float *w, size_t rows,
                                int C)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * (size_t)C, *d = dout + r * (size_t)C;
        float *dxr = dx + r * (size_t)C;
        const float s = rstd[r];
        float acc[LANES] = { 0 };
        int i = 0;
        for (; i + LANES <= C; i += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += d[i + k] * w[i + k] * xr[i + k];
        for (int k = 0; i + k < C; k++) acc[k] += d[i + k] * w[i + k] * xr[i + k];
        const float k3 = hsum(acc) / (float)C * s * s * s;
        for (int c = 0; dw && c < C; c++) dw[c] += d[c] * xr[c] * s;
        for (int c = 0; c < C; c++) dxr[c] += s * d[c] * w[c] - k3 * xr[c];
    }
}

ACCEL_CLONES
void accel_cpu_rope(float *x, size_t rows, size_t ld, int nheads, int hs, const float *cos,
                    const float *sin, int period, int pos0, int inverse)
{
    const int half = hs / 2;
    const float sign = inverse ? -1.0f : 1.0f;
    for (size_t r = 0; r < rows; r++) {
        const size_t p = ((size_t)pos0 + r) % (size_t)period;
        const float *c = cos + p * (size_t)half, *sn = sin + p * (size_t)half;
        for (int h = 0; h < nheads; h++) {
            float *a = x + r * ld + (size_t)h * hs, *b = a + half;
            for (int i = 0; i < half; i++) {
                float s = sign * sn[i], x1 = a[i], x2 = b[i];
                a[i] = x1 * c[i] - x2 * s;
                b[i] = x2 * c[i] + x1 * s;
            }
        }
    }
}

/* sigmoid through the vectorisable exp */
static inline float fsigmoid(float g) { return 1.0f / (1.0f + fexp(-g)); }

ACCEL_CLONES
void accel_cpu_swiglu_forward(float *h, const float *gu, size_t rows, int F)
{
    for (size_t r = 0; r < rows; r++) {
        const float *g = gu + r * 2 * (size_t)F, *u = g + F;
        float *o = h + r * (size_t)F;
        for (int c = 0; c < F; c++) o[c] = g[c] * fsigmoid(g[c]) * u[c];
    }
}

ACCEL_CLONES
void accel_cpu_swiglu_backward(float *dgu, const float *dh, const float *gu, size_t rows, int F)
{
    for (size_t r = 0; r < rows; r++) {
        const float *g = gu + r * 2 * (size_t)F, *u = g + F, *d = dh + r * (size_t)F;
        float *dg = dgu + r * 2 * (size_t)F, *du = dg + F;
        for (int c = 0; c < F; c++) {
            float s = fsigmoid(g[c]), silu = g[c] * s;
            du[c] = d[c] * silu;
            dg[c] = d[c] * u[c] * s * (1.0f + g[c] * (1.0f - s));
        }
    }
}

#define GELU_K 0.7978845608028654f         /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* The tanh GELU of g and its derivative. */
static inline float gelu_tanh(float g, float *dgelu)
{
    const float t = ftanh(GELU_K * (g + GELU_A * g * g * g));
    *dgelu = 0.5f * (1.0f + t) + 0.5f * g * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_A * g * g);
    return 0.5f * g * (1.0f + t);
}

ACCEL_CLONES
void accel_cpu_geglu_forward(float *h, const float *gu, size_t rows, int F)
{
    for (size_t r = 0; r < rows; r++) {
        const float *g = gu + r * 2 * (size_t)F, *u = g + F;
        float *o = h + r * (size_t)F, dg;
        for (int c = 0; c < F; c++) o[c] = gelu_tanh(g[c], &dg) * u[c];
    }
}

ACCEL_CLONES
void accel_cpu_geglu_backward(float *dgu, const float *dh, const float *gu, size_t rows, int F)
{
    for (size_t r = 0; r < rows; r++) {
        const float *g = gu + r * 2 * (size_t)F, *u = g + F, *d = dh + r * (size_t)F;
        float *dg = dgu + r * 2 * (size_t)F, *du = dg + F;
        for (int c = 0; c < F; c++) {
            float dgelu, gelu = gelu_tanh(g[c], &dgelu);
            du[c] = d[c] * gelu;
            dg[c] = d[c] * u[c] * dgelu;
        }
    }
}

ACCEL_CLONES
static void clamped_swiglu_forward(float *h, const float *gu, size_t rows, int F, float alpha, float limit)
{
    for (size_t r = 0; r < rows; r++) {
        const float *g = gu + r * 2 * (size_t)F, *u = g + F;
        float *o = h + r * (size_t)F;
        for (int c = 0; c < F; c++) {
            const float gc = fminf(g[c], limit), uc = fmaxf(fminf(u[c], limit), -limit);
            o[c] = (uc + 1.0f) * gc * fsigmoid(alpha * gc);
        }
    }
}

ACCEL_CLONES
static void clamped_swiglu_backward(float *dgu, const float *dh, const float *gu, size_t rows, int F,
                                    float alpha, float limit)
{
    for (size_t r = 0; r < rows; r++) {
        const float *g = gu + r * 2 * (size_t)F, *u = g + F, *d = dh + r * (size_t)F;
        float *dg = dgu + r * 2 * (size_t)F, *du = dg + F;
        for (int c = 0; c < F; c++) {
            const float gc = fminf(g[c], limit), uc = fmaxf(fminf(u[c], limit), -limit);
            const float s = fsigmoid(alpha * gc), glu = gc * s;
            du[c] = u[c] >= -limit && u[c] <= limit ? d[c] * glu : 0.0f;
            dg[c] = g[c] <= limit ? d[c] * (uc + 1.0f) * s * (1.0f + alpha * gc * (1.0f - s)) : 0.0f;
        }
    }
}

void accel_cpu_glu_forward(const accel_glu_t *act, float *h, const float *gu, size_t rows, int F)
{
    switch (act->kind) {
    case ACCEL_GLU_GELU_TANH: accel_cpu_geglu_forward(h, gu, rows, F); break;
    case ACCEL_GLU_CLAMPED: clamped_swiglu_forward(h, gu, rows, F, act->alpha, act->limit); break;
    default: accel_cpu_swiglu_forward(h, gu, rows, F); break;
    }
}

void accel_cpu_glu_backward(const accel_glu_t *act, float *dgu, const float *dh, const float *gu,
                            size_t rows, int F)
{
    switch (act->kind) {
    case ACCEL_GLU_GELU_TANH: accel_cpu_geglu_backward(dgu, dh, gu, rows, F); break;
    case ACCEL_GLU_CLAMPED: clamped_swiglu_backward(dgu, dh, gu, rows, F, act->alpha, act->limit); break;
    default: accel_cpu_swiglu_backward(dgu, dh, gu, rows, F); break;
    }
}

ACCEL_CLONES
void accel_cpu_bias_act_forward(accel_act_kind_t act, float *x, float *out, const float *bias, size_t rows,
                                int cols)
{
    for (size_t r = 0; r < rows; r++) {
        float *xr = x + r * (size_t)cols, *o = out + r * (size_t)cols;
        if (act == ACCEL_ACT_RELU2)
            for (int c = 0; c < cols; c++) {
                float v = xr[c] + (bias ? bias[c] : 0.0f), p = v > 0.0f ? v : 0.0f;
                o[c] = p * p;
                xr[c] = 2.0f * p;
            }
        else if (act == ACCEL_ACT_GELU)             /* Phi(v) + v phi(v) */
            for (int c = 0; c < cols; c++) {
                float v = xr[c] + (bias ? bias[c] : 0.0f), cdf = 0.5f * (1.0f + erff(v * (float)M_SQRT1_2));
                o[c] = v * cdf;
                xr[c] = cdf + v * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2) * expf(-0.5f * v * v);
            }
        else
            for (int c = 0; c < cols; c++) {
                float v = xr[c] + (bias ? bias[c] : 0.0f);
                float t = ftanh(GELU_K * (v + GELU_A * v * v * v));
                o[c] = 0.5f * v * (1.0f + t);
                xr[c] = 0.5f * (1.0f + t) +
                        0.5f * v * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_A * v * v);
            }
    }
}

ACCEL_CLONES
void accel_cpu_act_backward(float *d, const float *deriv, float *dbias, size_t rows, int cols)
{
    for (size_t r = 0; r < rows; r++) {
        float *dr = d + r * (size_t)cols;
        const float *gr = deriv + r * (size_t)cols;
        for (int c = 0; c < cols; c++) dr[c] *= gr[c];
        if (dbias)
            for (int c = 0; c < cols; c++) dbias[c] += dr[c];
    }
}

ACCEL_CLONES
void accel_cpu_xielu_forward(const accel_xielu_t *p, float *x, float *out, const float *bias, size_t rows, int cols)
{
    const float ap = accel_softplusf(p->alpha_p), an = p->beta + accel_softplusf(p->alpha_n), beta = p->beta, eps = p->eps;
    for (size_t r = 0; r < rows; r++) {
        float *xr = x + r * (size_t)cols, *o = out + r * (size_t)cols;
        for (int c = 0; c < cols; c++) {        /* both sides, then a select: the loop vectorises */
            const float v = xr[c] + (bias ? bias[c] : 0.0f), em1 = fexpm1(v < eps ? v : eps);
            const float pos = ap * v * v + beta * v, neg = (em1 - v) * an + beta * v;
            xr[c] = v;
            o[c] = v > 0.0f ? pos : neg;
        }
    }
}

/* One element of the xIELU backward pass: d *= out'(v); *sp, *sn += its terms of the raw alphas'
 * gradients (d v^2 above 0, d (expm1(min(v, eps)) - v) at or below). */
static inline void xielu_back(float ap, float an, float beta, float eps, float v, float *d, float *sp, float *sn)
{
    const float g = *d, em1 = fexpm1(v < eps ? v : eps);  /* d/dv (expm1(v) - v): expm1(v) below eps, -1 above */
    const int up = v > 0.0f;
    *sp += up ? g * v * v : 0.0f;
    *sn += up ? 0.0f : g * (em1 - v);
    *d = g * (up ? 2.0f * ap * v + beta : (v < eps ? em1 : -1.0f) * an + beta);
}

/* The raw alphas' gradients: sum(d v^2 [v > 0]) softplus'(alpha_p) and sum(d (expm1(min(v, eps)) -
 * v) [v <= 0]) softplus'(alpha_n); each row's in LANES partial sums (as accel_cpu_dot_lanes: the loop
 * vectorises, the order is fixed), the rows' in double, in row order. */
ACCEL_CLONES
void accel_cpu_xielu_backward(const accel_xielu_t *p, float *d, const float *x, float *dbias, float *dalpha_p,
                              float *dalpha_n, size_t rows, int cols)
{
    const float ap = accel_softplusf(p->alpha_p), an = p->beta + accel_softplusf(p->alpha_n), beta = p->beta, eps = p->eps;
    double gp = 0.0, gn = 0.0;
    for (size_t r = 0; r < rows; r++) {
        float *dr = d + r * (size_t)cols;
        const float *xr = x + r * (size_t)cols;
        float pp[LANES] = { 0 }, pn[LANES] = { 0 }, sp = 0.0f, sn = 0.0f;
        int c = 0;
        for (; c + LANES <= cols; c += LANES)
            for (int l = 0; l < LANES; l++) xielu_back(ap, an, beta, eps, xr[c + l], &dr[c + l], &pp[l], &pn[l]);
        for (; c < cols; c++) xielu_back(ap, an, beta, eps, xr[c], &dr[c], &sp, &sn);
        for (int l = 0; l < LANES; l++) sp += pp[l], sn += pn[l];
        gp += sp;
        gn += sn;
        if (dbias)
            for (c = 0; c < cols; c++) dbias[c] += dr[c];
    }
    *dalpha_p += (float)(gp * (double)accel_sigmoidf(p->alpha_p));
    *dalpha_n += (float)(gn * (double)accel_sigmoidf(p->alpha_n));
}

ACCEL_CLONES
float accel_cpu_softmax(float *p, const float *z, int n)
{
    float m = max_of(z, n);
    for (int i = 0; i < n; i++) p[i] = fexp(z[i] - m);
    float s = sum_of(p, n);
    float inv = 1.0f / s;
    for (int i = 0; i < n; i++) p[i] *= inv;
    return m + logf(s);
}

ACCEL_CLONES
void accel_cpu_softmax_from_lse(float *p, const float *z, int n, float lse)
{
    for (int i = 0; i < n; i++) p[i] = fexp(z[i] - lse);
}

ACCEL_CLONES
void accel_cpu_softmax_backward(float *ds, const float *p, const float *dp, int n, float scale)
{
    float s = dot_of(p, dp, n);
    for (int i = 0; i < n; i++) ds[i] = p[i] * (dp[i] - s) * scale;
}

ACCEL_CLONES
float accel_cpu_dot(const float *x, const float *y, int n) { return dot_of(x, y, n); }

ACCEL_CLONES
void accel_cpu_exp(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = fexp(x[i]);
}

ACCEL_CLONES
static void pack_bf16_generic(uint16_t *dst, const float *src, size_t rows, size_t cols, size_t ld)
{
    for (size_t r = 0; r < rows; r++) {
        const float *s = src + r * ld;
        uint16_t *o = dst + r * cols;
        for (size_t c = 0; c < cols; c++) o[c] = accel_f32_to_bf16(s[c]);
    }
}

#if ACCEL_X86
/* VCVTNE2PS2BF16 converts 32 values per instruction, 2.5x faster than the bit arithmetic above
 * (0.05 against 0.12 ns per value on Zen 5): it is what the onednn path's operands spend before
 * oneDNN starts. It rounds to nearest even like accel_f32_to_bf16 but flushes denormals to zero,
 * as accel's own bf16 kernel does when it packs. */
__attribute__((target("avx512f,avx512bw,avx512bf16")))
static void pack_bf16_avx512bf16(uint16_t *dst, const float *src, size_t rows, size_t cols,
                                 size_t ld)
{
    for (size_t r = 0; r < rows; r++) {
        const float *s = src + r * ld;
        uint16_t *o = dst + r * cols;
        size_t c = 0;
        for (; c + 32 <= cols; c += 32)
            _mm512_storeu_si512(o + c, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + c + 16),
                                                                   _mm512_loadu_ps(s + c)));
        if (c < cols) {                 /* the last 1..31 values, masked */
            const unsigned n = (unsigned)(cols - c), lo = n < 16 ? n : 16;
            const __m512 x0 = _mm512_maskz_loadu_ps((__mmask16)((1u << lo) - 1), s + c);
            const __m512 x1 = _mm512_maskz_loadu_ps((__mmask16)((1u << (n - lo)) - 1), s + c + 16);
            _mm512_mask_storeu_epi16(o + c, (__mmask32)((1ull << n) - 1),
                                     (__m512i)_mm512_cvtne2ps_pbh(x1, x0));
        }
    }
}
#endif

void accel_cpu_pack_bf16(uint16_t *dst, const float *src, size_t rows, size_t cols, size_t ld)
{
#if ACCEL_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw")) {
        pack_bf16_avx512bf16(dst, src, rows, cols, ld);
        return;
    }
#endif
    pack_bf16_generic(dst, src, rows, cols, ld);
}

ACCEL_CLONES
void accel_cpu_pack_bf16_round(float *dst, const float *src, size_t rows, size_t cols, size_t ld)
{
    for (size_t r = 0; r < rows; r++) {
        const float *s = src + r * ld;
        float *o = dst + r * cols;
        for (size_t c = 0; c < cols; c++) o[c] = accel_bf16_to_f32(accel_f32_to_bf16(s[c]));
    }
}

#if ACCEL_X86
/* F16C converts 8 values at a time with round-to-nearest-even, as accel_f32_to_f16 does. */
__attribute__((target("avx,f16c")))
static void pack_f16_f16c(float *dst, const float *src, size_t rows, size_t cols, size_t ld)
{
    for (size_t r = 0; r < rows; r++) {
        const float *s = src + r * ld;
        float *o = dst + r * cols;
        size_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + c), _MM_FROUND_TO_NEAREST_INT);
            _mm256_storeu_ps(o + c, _mm256_cvtph_ps(h));
        }
        for (; c < cols; c++) o[c] = accel_f16_to_f32(accel_f32_to_f16(s[c]));
    }
}
#endif

void accel_cpu_pack_f16_round(float *dst, const float *src, size_t rows, size_t cols, size_t ld)
{
#if ACCEL_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("f16c")) {
        pack_f16_f16c(dst, src, rows, cols, ld);
        return;
    }
#endif
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[r * cols + c] = accel_f16_to_f32(accel_f32_to_f16(src[r * ld + c]));
}

#if ACCEL_X86
/* Whole 16 x 16 tiles through registers: 2x faster than element by element when the source rows
 * (one head's keys, 3 x width apart) come from memory. Returns the rows done (a multiple of 16). */
__attribute__((target("avx512f")))
static size_t transpose_tiles_avx512(float *dst, const float *src, size_t rows, size_t cols,
                                     size_t ld)
{
    size_t r0 = 0;
    for (; r0 + 16 <= rows; r0 += 16) {
        size_t c0 = 0;
        for (; c0 + 16 <= cols; c0 += 16) {
            __m512i r[16];
            for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_si512(src + (r0 + i) * ld + c0);
            accel_transpose16(r);
            for (int j = 0; j < 16; j++) _mm512_storeu_si512(dst + (c0 + j) * rows + r0, r[j]);
        }
        for (size_t r = r0; r < r0 + 16; r++)
            for (size_t c = c0; c < cols; c++) dst[c * rows + r] = src[r * ld + c];
    }
    return r0;
}
#endif

/* In 16 x 16 tiles, so both the reads and the strided writes stay within a few cache lines. */
void accel_cpu_transpose(float *dst, const float *src, size_t rows, size_t cols, size_t ld)
{
    enum { TILE = 16 };
    size_t first = 0;
#if ACCEL_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) first = transpose_tiles_avx512(dst, src, rows, cols, ld);
#endif
    for (size_t r0 = first; r0 < rows; r0 += TILE)
        for (size_t c0 = 0; c0 < cols; c0 += TILE) {
            size_t r1 = r0 + TILE < rows ? r0 + TILE : rows;
            size_t c1 = c0 + TILE < cols ? c0 + TILE : cols;
            for (size_t r = r0; r < r1; r++)
                for (size_t c = c0; c < c1; c++) dst[c * rows + r] = src[r * ld + c];
        }
}
