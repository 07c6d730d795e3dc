/* Mamba-1's mixer on the CPU (see mamba1.h), built as mamba2.c is: the hot loops for AVX-512,
 * AVX2 and the baseline, reductions in a fixed order.
 *
 * The recurrence runs a block of CB channels at a time over a document's rows: their states
 * (CB N floats) stay in cache, and each token's decays exp(dt A) are one vectorised exp over the
 * block. The backward pass reruns a block's recurrence keeping its states and decays at every
 * token of the document (2 T CB N floats), then walks back. */
#include "mamba1.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif

#include <math.h>
#include <string.h>

#include "causal_conv.h"
#include "kernels_cpu.h"
#include "recurrence.h"

#define CB 16                       /* channels a block */

typedef struct {                    /* the scratch, carved */
    float *xs;                      /* [R, I] silu(xc) */
    float *dbcn;                    /* [R, W] dt_in | B | C after the norms */
    float *dt;                      /* [R, I] softplus(dtp) */
    float *A;                       /* [I, N] -exp(A_log) */
    float *dxs, *ddbc, *ddt, *dy;   /* backward: d(xs), d(dbcn) then d(dbc), d(dt) then d(dtp), d(y) */
    float *states, *decays;         /* [T, CB, N] a block's states after each token, its decays */
    float *h, *dh;                  /* [CB, N] a block's running state, its gradient */
    float *taps, *dtaps;            /* [K, I] the convolution's weights tap by tap, their gradients */
} work_t;

static size_t dbc_w(const accel_mamba1_dims_t *d) { return accel_mamba1_dbc_width(d); }
static accel_cconv_t conv_of(const accel_mamba1_dims_t *d) { return (accel_cconv_t){ (size_t)d->I, d->K }; }

/* Carves the scratch at p into w (p NULL: only counts); returns its floats. */
static size_t layout(const accel_mamba1_dims_t *d, float *p, size_t R, size_t T, work_t *w)
{
    const size_t I = (size_t)d->I, W = dbc_w(d), BN = (size_t)CB * (size_t)d->N;
    const size_t sizes[] = { R * I, R * W, R * I, I * (size_t)d->N, R * I, R * W, R * I, R * I, T * BN, T * BN,
                             BN, BN, (size_t)d->K * I, (size_t)d->K * I };
    float **const at[] = { &w->xs, &w->dbcn, &w->dt, &w->A, &w->dxs, &w->ddbc, &w->ddt, &w->dy, &w->states,
                           &w->decays, &w->h, &w->dh, &w->taps, &w->dtaps };
    return accel_carve_floats(p, sizes, at, sizeof sizes / sizeof sizes[0]);
}

static work_t carve(const accel_mamba1_dims_t *d, float *p, size_t R, size_t T)
{
    work_t w;
    layout(d, p, R, T, &w);
    return w;
}

size_t accel_mamba1_act_floats(const accel_mamba1_dims_t *d)
{
    return 3 * (size_t)d->I + dbc_w(d) + 3;
}

size_t accel_mamba1_scratch_floats(const accel_mamba1_dims_t *d, size_t B, size_t T)
{
    work_t w;
    return layout(d, NULL, B * T, T, &w);
}

void accel_mamba1_carve(const accel_mamba1_dims_t *d, accel_mamba1_acts_t *a, float *p, size_t rows)
{
    const size_t I = (size_t)d->I;
    a->xc = p;
    a->dbc = a->xc + rows * I;
    a->rstd = a->dbc + rows * dbc_w(d);
    a->dtp = a->rstd + rows * 3;
    a->y = a->dtp + rows * I;
}

/* The rows' parts of x_proj's output: dt_in at 0 (R wide), B at R, C at R + N (N wide). */
static void parts(const accel_mamba1_dims_t *d, size_t off[3], size_t n[3])
{
    off[0] = 0, n[0] = (size_t)d->R;
    off[1] = (size_t)d->R, n[1] = (size_t)d->N;
    off[2] = (size_t)d->R + (size_t)d->N, n[2] = (size_t)d->N;
}

/* dbcn = dbc, each part RMS-normed (times its weight) when the model norms them; 1/rms into rstd. */
ACCEL_CLONES static void norms_forward(const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w,
                                       const float *dbc, float *rstd, float *dbcn, size_t R)
{
    const size_t W = dbc_w(d);
    if (d->norms == ACCEL_MAMBA1_NORMS_NONE) {
        memcpy(dbcn, dbc, sizeof(float) * R * W);
        return;
    }
    const float *wt[3] = { w->dt_norm, w->b_norm, w->c_norm };
    size_t off[3], n[3];
    parts(d, off, n);
    for (size_t r = 0; r < R; r++)
        for (int p = 0; p < 3; p++) {
            const float *x = dbc + r * W + off[p];
            float *o = dbcn + r * W + off[p];
            const float s = 1.0f / sqrtf(accel_cpu_dot_lanes(x, x, (int)n[p]) / (float)n[p] + d->eps);
            rstd[r * 3 + (size_t)p] = s;
            for (size_t j = 0; j < n[p]; j++) o[j] = x[j] * s * (wt[p] ? wt[p][j] : 1.0f);
        }
}

/* d(dbcn) in ddbc -> d(dbc) in place, the weights' gradients added. */
ACCEL_CLONES static void norms_backward(const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w,
                                        const accel_mamba1_grads_t *gw, const float *dbc, const float *rstd,
                                        float *ddbc, size_t R)
{
    if (d->norms == ACCEL_MAMBA1_NORMS_NONE) return;
    const size_t W = dbc_w(d);
    const float *wt[3] = { w->dt_norm, w->b_norm, w->c_norm };
    float *gwt[3] = { gw->dt_norm, gw->b_norm, gw->c_norm };
    size_t off[3], n[3];
    parts(d, off, n);
    for (size_t r = 0; r < R; r++)
        for (int p = 0; p < 3; p++) {
            const float *x = dbc + r * W + off[p], s = rstd[r * 3 + (size_t)p];
            float *g = ddbc + r * W + off[p], m = 0;
            for (size_t j = 0; j < n[p]; j++) {     /* dn = d(out) w; m = mean(dn x) s */
                if (gwt[p]) gwt[p][j] += g[j] * x[j] * s;
                g[j] *= wt[p] ? wt[p][j] : 1.0f;
                m += g[j] * x[j];
            }
            m *= s * s / (float)n[p];
            for (size_t j = 0; j < n[p]; j++) g[j] = s * (g[j] - x[j] * m);
        }
}

/* Everything before the recurrence for R rows of u: the convolution (done by the caller into
 * a->xc), its bias and SiLU, x_proj, the norms, dt_proj and softplus. */
static accel_status_t inputs(accel_gemm_cpu_t *g, const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w,
                             const accel_mamba1_acts_t *a, size_t R, work_t *s)
{
    const size_t I = (size_t)d->I, W = dbc_w(d);
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < I; i++) {
            float *x = a->xc + r * I + i;
            if (w->conv_bias) *x += w->conv_bias[i];
            s->xs[r * I + i] = *x * accel_sigmoidf(*x);
        }
    ACCEL_CHECK(accel_gemm_cpu(g, false, true, (int)R, (int)W, d->I, 1.0f, s->xs, d->I, w->x_proj, d->I, 0.0f,
                               a->dbc, (int)W));
    norms_forward(d, w, a->dbc, a->rstd, s->dbcn, R);
    ACCEL_CHECK(accel_gemm_cpu(g, false, true, (int)R, d->I, d->R, 1.0f, s->dbcn, (int)W, w->dt_proj, d->R, 0.0f,
                               a->dtp, d->I));
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < I; i++) {
            a->dtp[r * I + i] += w->dt_bias[i];
            s->dt[r * I + i] = accel_softplusf(a->dtp[r * I + i]);
        }
    for (size_t k = 0; k < I * (size_t)d->N; k++) s->A[k] = -expf(w->A_log[k]);
    return ACCEL_OK;
}

/* Channels i0 .. i0 + cb - 1 over rows r0 .. r0 + n - 1, from state h [cb, N] (left holding the
 * last row's): y (when not NULL) = h . C + D xs for each row; the states after each row and
 * their decays into s->states and s->decays (when keep). */
ACCEL_CLONES static void scan_block(const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w, const work_t *s,
                                    size_t r0, int n, int i0, int cb, float *h, float *y, int keep)
{
    const size_t I = (size_t)d->I, W = dbc_w(d), N = (size_t)d->N, BN = (size_t)cb * N;
    float *decay = s->decays;       /* kept: row t's at t BN; else row by row at 0 */
    for (int t = 0; t < n; t++) {
        const size_t r = r0 + (size_t)t;
        const float *Bv = s->dbcn + r * W + (size_t)d->R, *Cv = Bv + N;
        float *a = keep ? decay + (size_t)t * BN : decay;
        for (int c = 0; c < cb; c++) {
            const float dt = s->dt[r * I + (size_t)(i0 + c)];
            const float *A = s->A + (size_t)(i0 + c) * N;
            for (size_t k = 0; k < N; k++) a[(size_t)c * N + k] = dt * A[k];
        }
        accel_cpu_exp(a, a, BN);
        for (int c = 0; c < cb; c++) {
            const size_t i = (size_t)(i0 + c);
            const float dtx = s->dt[r * I + i] * s->xs[r * I + i];
            float *hc = h + (size_t)c * N;
            const float *ac = a + (size_t)c * N;
            for (size_t k = 0; k < N; k++) hc[k] = ac[k] * hc[k] + dtx * Bv[k];
            if (y) y[r * I + i] = accel_cpu_dot_lanes(hc, Cv, (int)N) + w->D[i] * s->xs[r * I + i];
        }
        if (keep) memcpy(s->states + (size_t)t * BN, h, sizeof(float) * BN);
    }
}

/* The recurrence over rows r0 .. r0 + n - 1 (one document, or a cached sequence's new rows) from
 * the states at h0 [I, N] (NULL: zeros; else left holding the last row's): a->y. */
static void recurrence(const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w, const work_t *s, size_t r0,
                       int n, float *h0, float *y)
{
    const size_t N = (size_t)d->N;
    for (int i0 = 0; i0 < d->I; i0 += CB) {
        const int cb = d->I - i0 < CB ? d->I - i0 : CB;
        float *h = h0 ? h0 + (size_t)i0 * N : s->h;
        if (!h0) memset(h, 0, sizeof(float) * (size_t)cb * N);
        scan_block(d, w, s, r0, n, i0, cb, h, y, 0);
    }
}

/* out = y silu(z) for R rows. */
static void gate(const accel_mamba1_dims_t *d, const float *u, size_t ldu, const float *y, float *out, size_t R)
{
    const size_t I = (size_t)d->I;
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < I; i++) {
            const float z = u[r * ldu + I + i];
            out[r * I + i] = y[r * I + i] * z * accel_sigmoidf(z);
        }
}

accel_status_t accel_mamba1_forward(accel_gemm_cpu_t *g, const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w,
                                    const float *u, size_t ldu, int B, int T, const int32_t *pos,
                                    const accel_mamba1_acts_t *a, float *out, float *scratch)
{
    const size_t R = (size_t)B * T;
    const accel_cconv_t c = conv_of(d);
    work_t s = carve(d, scratch, R, (size_t)T);
    accel_cconv_taps(&c, w->conv, s.taps);
    accel_cconv_forward(&c, s.taps, u, ldu, B, T, pos, a->xc, c.CW);
    ACCEL_CHECK(inputs(g, d, w, a, R, &s));
    for (int b = 0; b < B; b++)
        for (int t0 = 0; t0 < T;) {                 /* each document of sequence b */
            int t1 = t0 + 1;
            while (t1 < T && accel_doc_start(pos, (size_t)b * T, t1) != t1) t1++;
            recurrence(d, w, &s, (size_t)b * T + (size_t)t0, t1 - t0, NULL, a->y);
            t0 = t1;
        }
    gate(d, u, ldu, a->y, out, R);
    return ACCEL_OK;
}

/* Back through one document's rows r0 .. r0 + n - 1 for channels i0 .. i0 + cb - 1: d(y) in
 * s->dy -> d(xs) added to s->dxs, d(dt) to s->ddt, d(B), d(C) to s->ddbc, d(A_log) to gA_log. */
ACCEL_CLONES static void block_backward(const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w, work_t *s,
                                        size_t r0, int n, int i0, int cb, float *gA_log)
{
    const size_t I = (size_t)d->I, W = dbc_w(d), N = (size_t)d->N, BN = (size_t)cb * N;
    memset(s->h, 0, sizeof(float) * BN);
    scan_block(d, w, s, r0, n, i0, cb, s->h, NULL, 1);
    float *dh = s->dh;
    memset(dh, 0, sizeof(float) * BN);
    for (int t = n - 1; t >= 0; t--) {
        const size_t r = r0 + (size_t)t;
        const float *Bv = s->dbcn + r * W + (size_t)d->R, *Cv = Bv + N;
        float *dB = s->ddbc + r * W + (size_t)d->R, *dC = dB + N;
        const float *ht = s->states + (size_t)t * BN, *hp = t ? ht - BN : NULL, *a = s->decays + (size_t)t * BN;
        for (int c = 0; c < cb; c++) {
            const size_t i = (size_t)(i0 + c);
            const float gy = s->dy[r * I + i], dt = s->dt[r * I + i], x = s->xs[r * I + i];
            const float *A = s->A + i * N, *hc = ht + (size_t)c * N, *hpc = hp ? hp + (size_t)c * N : NULL;
            const float *ac = a + (size_t)c * N;
            float *dhc = dh + (size_t)c * N, *gA = gA_log + i * N;
            /* y = h . C: dh += gy C, dC += gy h */
            for (size_t k = 0; k < N; k++) {
                dhc[k] += gy * Cv[k];
                dC[k] += gy * hc[k];
            }
            /* h = a hp + dt x B, a = exp(dt A), A = -exp(A_log): d(dt) += sum dh (hp a A + x B),
             * d(A_log) += dh hp a dt A, d(x) += dt dh . B, dB += dh dt x, d(hp) = a dh */
            float ddt = 0, dx = 0;
            for (size_t k = 0; k < N; k++) {
                const float da = hpc ? dhc[k] * hpc[k] * ac[k] : 0.0f;
                ddt += da * A[k] + dhc[k] * x * Bv[k];
                gA[k] += da * dt * A[k];
                dx += dhc[k] * Bv[k];
                dB[k] += dhc[k] * dt * x;
                dhc[k] *= ac[k];
            }
            s->ddt[r * I + i] += ddt;
            s->dxs[r * I + i] += dt * dx;
        }
    }
}

accel_status_t accel_mamba1_backward(accel_gemm_cpu_t *g, const accel_mamba1_dims_t *d,
                                     const accel_mamba1_weights_t *w, const accel_mamba1_grads_t *gw, const float *u,
                                     size_t ldu, int B, int T, const int32_t *pos, const accel_mamba1_acts_t *a,
                                     const float *dout, float *du, float *scratch)
{
    const size_t R = (size_t)B * T, I = (size_t)d->I, W = dbc_w(d);
    const accel_cconv_t c = conv_of(d);
    work_t s = carve(d, scratch, R, (size_t)T);
    /* xs, dbcn, dt and A rebuilt from the kept pieces */
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < I; i++) {
            const float x = a->xc[r * I + i];
            s.xs[r * I + i] = x * accel_sigmoidf(x);
            s.dt[r * I + i] = accel_softplusf(a->dtp[r * I + i]);
        }
    norms_forward(d, w, a->dbc, a->rstd, s.dbcn, R);
    for (size_t k = 0; k < I * (size_t)d->N; k++) s.A[k] = -expf(w->A_log[k]);
    /* out = y silu(z): dy, dz */
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < I; i++) {
            const float z = u[r * ldu + I + i], sg = accel_sigmoidf(z), go = dout[r * I + i];
            s.dy[r * I + i] = go * z * sg;
            du[r * ldu + I + i] = go * a->y[r * I + i] * sg * (1.0f + z * (1.0f - sg));
        }
    /* y = h . C + D xs: d(D), and d(xs) through the skip */
    memset(s.ddbc, 0, sizeof(float) * R * W);
    memset(s.ddt, 0, sizeof(float) * R * I);
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < I; i++) {
            gw->D[i] += s.dy[r * I + i] * s.xs[r * I + i];
            s.dxs[r * I + i] = w->D[i] * s.dy[r * I + i];
        }
    for (int b = 0; b < B; b++)
        for (int t0 = 0; t0 < T;) {                 /* each document of sequence b */
            int t1 = t0 + 1;
            while (t1 < T && accel_doc_start(pos, (size_t)b * T, t1) != t1) t1++;
            for (int i0 = 0; i0 < d->I; i0 += CB)
                block_backward(d, w, &s, (size_t)b * T + (size_t)t0, t1 - t0, i0, d->I - i0 < CB ? d->I - i0 : CB,
                               gw->A_log);
            t0 = t1;
        }
    /* dt = softplus(dtp): d(dtp) = d(dt) sigmoid(dtp), dt_bias's; dtp = dt_in dt_proj^T */
    for (size_t r = 0; r < R; r++)
        for (size_t i = 0; i < I; i++) {
            s.ddt[r * I + i] *= accel_sigmoidf(a->dtp[r * I + i]);
            gw->dt_bias[i] += s.ddt[r * I + i];
        }
    ACCEL_CHECK(accel_gemm_cpu(g, true, false, d->I, d->R, (int)R, 1.0f, s.ddt, d->I, s.dbcn, (int)W, 1.0f,
                               gw->dt_proj, d->R));
    ACCEL_CHECK(accel_gemm_cpu(g, false, false, (int)R, d->R, d->I, 1.0f, s.ddt, d->I, w->dt_proj, d->R, 0.0f,
                               s.ddbc, (int)W));
    norms_backward(d, w, gw, a->dbc, a->rstd, s.ddbc, R);
    /* dbc = xs x_proj^T */
    ACCEL_CHECK(accel_gemm_cpu(g, true, false, (int)W, d->I, (int)R, 1.0f, s.ddbc, (int)W, s.xs, d->I, 1.0f,
                               gw->x_proj, d->I));
    ACCEL_CHECK(accel_gemm_cpu(g, false, false, (int)R, d->I, (int)W, 1.0f, s.ddbc, (int)W, w->x_proj, d->I, 1.0f,
                               s.dxs, d->I));
    /* xs = silu(xc): d(xc) in dxs, the bias's gradient, then the convolution's */
    for (size_t r = 0; r < R; r++) {
        const float *x = a->xc + r * I;
        float *gx = s.dxs + r * I;
        for (size_t i = 0; i < I; i++) {
            const float sg = accel_sigmoidf(x[i]);
            gx[i] *= sg * (1.0f + x[i] * (1.0f - sg));
        }
        if (gw->conv_bias)
            for (size_t i = 0; i < I; i++) gw->conv_bias[i] += gx[i];
    }
    for (size_t r = 0; r < R; r++) memset(du + r * ldu, 0, sizeof(float) * I);
    accel_cconv_taps(&c, w->conv, s.taps);
    memset(s.dtaps, 0, sizeof(float) * (size_t)d->K * I);
    accel_cconv_backward(&c, s.taps, u, ldu, B, T, pos, s.dxs, I, du, s.dtaps);
    accel_cconv_add_grad(&c, s.dtaps, gw->conv);
    return ACCEL_OK;
}

size_t accel_mamba1_cache_floats(const accel_mamba1_dims_t *d)
{
    return (size_t)d->I * (size_t)d->N + (size_t)(d->K - 1) * (size_t)d->I;
}

accel_status_t accel_mamba1_extend(accel_gemm_cpu_t *g, const accel_mamba1_dims_t *d, const accel_mamba1_weights_t *w,
                                   const float *u, size_t ldu, int p0, int T, float *cache,
                                   const accel_mamba1_acts_t *a, float *out, float *scratch)
{
    const size_t R = (size_t)(T - p0), I = (size_t)d->I;
    const accel_cconv_t c = conv_of(d);
    float *state = cache, *tail = cache + I * (size_t)d->N;    /* tail: positions p0 - K + 1 .. p0 - 1 */
    if (p0 == 0) memset(cache, 0, sizeof(float) * accel_mamba1_cache_floats(d));
    work_t s = carve(d, scratch, R, (size_t)T);
    const float *ur = u + (size_t)p0 * ldu;
    accel_cconv_taps(&c, w->conv, s.taps);
    accel_cconv_extend(&c, s.taps, ur, ldu, p0, T, tail, a->xc, c.CW);
    ACCEL_CHECK(inputs(g, d, w, a, R, &s));
    recurrence(d, w, &s, 0, (int)R, state, a->y);
    gate(d, ur, ldu, a->y, out + (size_t)p0 * I, R);
    return ACCEL_OK;
}
