/* Mamba-2's mixer on the CPU (see mamba2.h), built as gated_delta.c is: the hot loops for AVX-512,
 * AVX2 and the baseline, reductions in fixed-order partial sums.
 *
 * The forward pass keeps the convolution's output, the recurrence's output and its norm's 1/rms;
 * the backward pass rebuilds x|B|C and dt from them, then, for each (document, head), reruns the
 * recurrence keeping the state every CHUNK tokens and walks back chunk by chunk, rebuilding the
 * chunk's states from its checkpoint first: (T / CHUNK + CHUNK) N P floats per head, not T N P. */
#include "mamba2.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif

#include <math.h>
#include <string.h>

#include "causal_conv.h"
#include "kernels_cpu.h"
#include "recurrence.h"

#define CHUNK 32

typedef struct {                    /* the scratch, carved */
    float *xs;                      /* [R, CW] silu(conv): x | B | C */
    float *dt;                      /* [R, H] softplus(dt + dt_bias) */
    float *dxs, *ddt, *dy;          /* backward: d(xs) [R, CW], d(dt) [R, H], d(y) [R, I] */
    float *states;                  /* [(T / CHUNK + 1 + CHUNK), N P] checkpoints, then a chunk's */
    float *du;                      /* [P] d(dt x) of one token and head */
    float *taps, *dtaps;            /* [K, CW] the convolution's weights tap by tap, their gradients */
} work_t;

static size_t chunks(size_t T) { return (T + CHUNK - 1) / CHUNK; }
static size_t inner(const accel_mamba2_dims_t *d) { return (size_t)d->H * (size_t)d->P; }
static accel_cconv_t conv_of(const accel_mamba2_dims_t *d) { return (accel_cconv_t){ accel_mamba2_conv_width(d), d->K }; }

/* Carves the scratch at p into w (p NULL: only counts); returns its floats. */
static size_t layout(const accel_mamba2_dims_t *d, float *p, size_t R, size_t T, work_t *w)
{
    const size_t CW = accel_mamba2_conv_width(d), H = (size_t)d->H, NP = (size_t)d->N * (size_t)d->P;
    const size_t sizes[] = { R * CW, R * H, R * CW, R * H, R * inner(d), (chunks(T) + 1 + CHUNK) * NP,
                             (size_t)d->P, (size_t)d->K * CW, (size_t)d->K * CW };
    float **const at[] = { &w->xs, &w->dt, &w->dxs, &w->ddt, &w->dy, &w->states, &w->du, &w->taps, &w->dtaps };
    return accel_carve_floats(p, sizes, at, sizeof sizes / sizeof sizes[0]);
}

static work_t carve(const accel_mamba2_dims_t *d, float *p, size_t R, size_t T)
{
    work_t w;
    layout(d, p, R, T, &w);
    return w;
}

size_t accel_mamba2_act_floats(const accel_mamba2_dims_t *d)
{
    return accel_mamba2_conv_width(d) + inner(d) + (size_t)d->G;
}

size_t accel_mamba2_scratch_floats(const accel_mamba2_dims_t *d, size_t B, size_t T)
{
    work_t w;
    return layout(d, NULL, B * T, T, &w);
}

void accel_mamba2_carve(const accel_mamba2_dims_t *d, accel_mamba2_acts_t *a, float *p, size_t rows)
{
    a->xc = p;
    a->y = p + rows * accel_mamba2_conv_width(d);
    a->yrstd = a->y + rows * inner(d);
}

/* xc += the convolution's bias (when it has one), for R rows. */
static void add_bias(const accel_mamba2_dims_t *d, const float *bias, float *xc, size_t R)
{
    const size_t CW = accel_mamba2_conv_width(d);
    for (size_t r = 0; bias && r < R; r++)
        for (size_t c = 0; c < CW; c++) xc[r * CW + c] += bias[c];
}

/* xs = silu(xc) for R rows. */
ACCEL_CLONES static void activate(const accel_mamba2_dims_t *d, const float *xc, size_t R, work_t *s)
{
    const size_t CW = accel_mamba2_conv_width(d);
    for (size_t i = 0; i < R * CW; i++) s->xs[i] = xc[i] * accel_sigmoidf(xc[i]);
}

/* dt = softplus(u's dt + dt_bias) for R rows. */
static void timesteps(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w, const float *u, size_t ldu,
                      size_t R, float *dt)
{
    const size_t H = (size_t)d->H, off = inner(d) + accel_mamba2_conv_width(d);
    for (size_t r = 0; r < R; r++)
        for (size_t h = 0; h < H; h++) dt[r * H + h] = accel_softplusf(u[r * ldu + off + h] + w->dt_bias[h]);
}

typedef struct {                    /* one head's view of row r's inputs */
    const float *x, *B, *C;         /* [P], [N], [N] */
    float dt, a;                    /* the step, the decay exp(A dt) */
} step_in_t;

static step_in_t step_in(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w, const work_t *s, size_t r,
                         int h)
{
    const size_t CW = accel_mamba2_conv_width(d), I = inner(d), N = (size_t)d->N;
    const size_t g = (size_t)h / (size_t)(d->H / d->G);
    const float *xs = s->xs + r * CW, dt = s->dt[r * (size_t)d->H + (size_t)h];
    return (step_in_t){ xs + (size_t)h * (size_t)d->P, xs + I + g * N, xs + I + ((size_t)d->G + g) * N, dt,
                        expf(-expf(w->A_log[h]) * dt) };
}

/* One token: S = a S + B (dt x)^T; o = S^T C when o != NULL. */
ACCEL_CLONES static void step(const accel_mamba2_dims_t *d, float *S, const step_in_t *in, float *o)
{
    const int N = d->N, P = d->P;
    if (o)
        for (int j = 0; j < P; j++) o[j] = 0;
    for (int i = 0; i < N; i++) {
        float *row = S + (size_t)i * P;
        const float bi = in->B[i] * in->dt, ci = o ? in->C[i] : 0.0f;
        for (int j = 0; j < P; j++) row[j] = in->a * row[j] + bi * in->x[j];
        if (o)
            for (int j = 0; j < P; j++) o[j] += row[j] * ci;
    }
}

/* out = rmsnorm(y silu(z)) * norm per group of I / G values (u's z, a's y), 1/rms into a->yrstd. */
ACCEL_CLONES static void gated_norm(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w, const float *u,
                                    size_t ldu, size_t R, const accel_mamba2_acts_t *a, float *out)
{
    const size_t I = inner(d), G = (size_t)d->G, gs = I / G;
    for (size_t r = 0; r < R; r++)
        for (size_t g = 0; g < G; g++) {
            const float *y = a->y + r * I + g * gs, *z = u + r * ldu + g * gs;
            float *o = out + r * I + g * gs, ss = 0;
            for (size_t j = 0; j < gs; j++) {
                o[j] = y[j] * z[j] * accel_sigmoidf(z[j]);
                ss += o[j] * o[j];
            }
            const float rstd = 1.0f / sqrtf(ss / (float)gs + d->eps);
            a->yrstd[r * G + g] = rstd;
            for (size_t j = 0; j < gs; j++) o[j] *= rstd * w->norm[g * gs + j];
        }
}

/* y = o + D x for one head's P values. */
static void skip_add(const step_in_t *in, float D, float *y, int P)
{
    for (int j = 0; j < P; j++) y[j] += D * in->x[j];
}

void accel_mamba2_forward(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w, const float *u,
                          size_t ldu, int B, int T, const int32_t *pos, const accel_mamba2_acts_t *a, float *out,
                          float *scratch)
{
    const size_t R = (size_t)B * T, I = inner(d), P = (size_t)d->P, NP = (size_t)d->N * P;
    const accel_cconv_t c = conv_of(d);
    work_t s = carve(d, scratch, R, (size_t)T);
    accel_cconv_taps(&c, w->conv, s.taps);
    accel_cconv_forward(&c, s.taps, u + I, ldu, B, T, pos, a->xc, c.CW);
    add_bias(d, w->conv_bias, a->xc, R);
    activate(d, a->xc, R, &s);
    timesteps(d, w, u, ldu, R, s.dt);
    float *state = s.states;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < d->H; h++)
            for (int t = 0; t < T; t++) {
                const size_t r = (size_t)b * T + t;
                if (accel_doc_start(pos, (size_t)b * T, t) == t) memset(state, 0, sizeof(float) * NP);
                step_in_t in = step_in(d, w, &s, r, h);
                float *y = a->y + r * I + (size_t)h * P;
                step(d, state, &in, y);
                skip_add(&in, w->D[h], y, d->P);
            }
    gated_norm(d, w, u, ldu, R, a, out);
}

typedef struct {                    /* one (document, head) for accel_step_fn */
    const accel_mamba2_dims_t *d;
    const accel_mamba2_weights_t *w;
    const work_t *s;
    size_t r0;
    int h;
} rerun_t;

static void rerun_step(const void *ctx, float *S, int t)
{
    const rerun_t *c = ctx;
    step_in_t in = step_in(c->d, c->w, c->s, c->r0 + (size_t)t, c->h);
    step(c->d, S, &in, NULL);
}

/* Back through one (document rows r0 .. r0 + n - 1, head h): d(y) in s->dy -> d(x, B, C) added to
 * s->dxs, d(dt) to s->ddt, d(A_log) to *dA_log. */
ACCEL_CLONES static void recurrence_backward(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w,
                                             work_t *s, size_t r0, int n, int h, float *dA_log)
{
    const int N = d->N, P = d->P;
    const size_t NP = (size_t)N * P, CW = accel_mamba2_conv_width(d), I = inner(d), H = (size_t)d->H;
    const size_t g = (size_t)h / (size_t)(d->H / d->G);
    const float A = -expf(w->A_log[h]);
    const int nck = (n + CHUNK - 1) / CHUNK;
    float *ck = s->states, *st = ck + (size_t)nck * NP, *dS = st + (size_t)CHUNK * NP, *du = s->du;
    const rerun_t ctx = { d, w, s, r0, h };
    accel_recur_checkpoints(rerun_step, &ctx, n, CHUNK, NP, ck, dS);   /* dS: the running state meanwhile */
    memset(dS, 0, sizeof(float) * NP);
    for (int c = nck - 1; c >= 0; c--) {
        const int t0 = c * CHUNK, t1 = t0 + CHUNK < n ? t0 + CHUNK : n;
        accel_recur_rebuild(rerun_step, &ctx, t0, t1, NP, ck + (size_t)c * NP, st);    /* after each token */
        for (int t = t1 - 1; t >= t0; t--) {
            const size_t r = r0 + (size_t)t;
            const float *St = st + (size_t)(t - t0) * NP;
            const float *Sp = t > t0 ? St - NP : ck + (size_t)c * NP;        /* before the token */
            step_in_t in = step_in(d, w, s, r, h);
            const float *dout = s->dy + r * I + (size_t)h * P;
            float *dx = s->dxs + r * CW + (size_t)h * P, *dB = s->dxs + r * CW + I + g * (size_t)N;
            float *dC = s->dxs + r * CW + I + ((size_t)d->G + g) * (size_t)N;
            /* o = St^T C: dS += C do^T, dC = St do */
            for (int i = 0; i < N; i++) {
                float *row = dS + (size_t)i * P;
                const float ci = in.C[i];
                for (int j = 0; j < P; j++) row[j] += ci * dout[j];
                dC[i] += accel_cpu_dot_lanes(St + (size_t)i * P, dout, P);
            }
            /* St = a Sp + B u^T, u = dt x: du = dS^T B, dB = dS u, da = <Sp, dS>, d(Sp) = a dS */
            for (int j = 0; j < P; j++) du[j] = 0;
            float da = 0;
            for (int i = 0; i < N; i++) {
                float *row = dS + (size_t)i * P;
                const float bi = in.B[i];
                for (int j = 0; j < P; j++) du[j] += row[j] * bi;
                dB[i] += in.dt * accel_cpu_dot_lanes(row, in.x, P);
                da += accel_cpu_dot_lanes(Sp + (size_t)i * P, row, P);
                for (int j = 0; j < P; j++) row[j] *= in.a;
            }
            for (int j = 0; j < P; j++) dx[j] += in.dt * du[j];
            /* a = exp(A dt), A = -exp(A_log): d(dt) += da a A + <x, du>, d(A_log) += da a dt A */
            s->ddt[r * H + (size_t)h] += da * in.a * A + accel_cpu_dot_lanes(in.x, du, P);
            *dA_log += da * in.a * in.dt * A;
        }
    }
}

void accel_mamba2_backward(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w,
                           const accel_mamba2_grads_t *gw, const float *u, size_t ldu, int B, int T,
                           const int32_t *pos, const accel_mamba2_acts_t *a, const float *dout, float *du,
                           float *scratch)
{
    const size_t R = (size_t)B * T, I = inner(d), P = (size_t)d->P, H = (size_t)d->H, G = (size_t)d->G, gs = I / G;
    const size_t CW = accel_mamba2_conv_width(d), dt_off = I + CW;
    const accel_cconv_t c = conv_of(d);
    work_t s = carve(d, scratch, R, (size_t)T);
    /* xs and dt rebuilt from the kept convolution output (its bias added) and u */
    activate(d, a->xc, R, &s);
    timesteps(d, w, u, ldu, R, s.dt);
    /* out = n * norm, n = v rstd, v = y silu(z): d(norm), dv = rstd (dn - n mean(dn n)), then dy, dz */
    for (size_t r = 0; r < R; r++)
        for (size_t g = 0; g < G; g++) {
            const float *y = a->y + r * I + g * gs, *z = u + r * ldu + g * gs, *go = dout + r * I + g * gs;
            const float rstd = a->yrstd[r * G + g];
            float *dy = s.dy + r * I + g * gs, *dz = du + r * ldu + g * gs, m = 0;
            for (size_t j = 0; j < gs; j++) {
                const float v = y[j] * z[j] * accel_sigmoidf(z[j]), nj = v * rstd;
                gw->norm[g * gs + j] += go[j] * nj;
                dy[j] = go[j] * w->norm[g * gs + j];                       /* dn */
                m += dy[j] * nj;
            }
            m /= (float)gs;
            for (size_t j = 0; j < gs; j++) {
                const float sg = accel_sigmoidf(z[j]), v = y[j] * z[j] * sg;
                const float dv = rstd * (dy[j] - v * rstd * m);
                dz[j] = dv * y[j] * sg * (1.0f + z[j] * (1.0f - sg));
                dy[j] = dv * z[j] * sg;
            }
        }
    memset(s.dxs, 0, sizeof(float) * R * CW);
    memset(s.ddt, 0, sizeof(float) * R * H);
    /* y = o + D x: d(D), and d(x) through the skip */
    for (size_t r = 0; r < R; r++)
        for (size_t h = 0; h < H; h++) {
            const float *x = s.xs + r * CW + h * P, *g = s.dy + r * I + h * P;
            float *dx = s.dxs + r * CW + h * P;
            gw->D[h] += accel_cpu_dot_lanes(x, g, (int)P);
            for (size_t j = 0; j < P; j++) dx[j] += w->D[h] * g[j];
        }
    for (int b = 0; b < B; b++)
        for (int t0 = 0; t0 < T;) {                 /* each document of sequence b */
            int t1 = t0 + 1;
            while (t1 < T && accel_doc_start(pos, (size_t)b * T, t1) != t1) t1++;
            for (int h = 0; h < d->H; h++)
                recurrence_backward(d, w, &s, (size_t)b * T + t0, t1 - t0, h, &gw->A_log[h]);
            t0 = t1;
        }
    /* dt = softplus(raw + dt_bias): d(raw) = d(dt) sigmoid(raw + dt_bias) */
    for (size_t r = 0; r < R; r++)
        for (size_t h = 0; h < H; h++) {
            const float g = s.ddt[r * H + h] * accel_sigmoidf(u[r * ldu + dt_off + h] + w->dt_bias[h]);
            du[r * ldu + dt_off + h] = g;
            gw->dt_bias[h] += g;
        }
    /* xs = silu(xc): d(xc) in dxs, the bias's gradient, then the convolution's */
    for (size_t r = 0; r < R; r++) {
        const float *x = a->xc + r * CW;
        float *g = s.dxs + r * CW;
        for (size_t ch = 0; ch < CW; ch++) {
            const float sg = accel_sigmoidf(x[ch]);
            g[ch] *= sg * (1.0f + x[ch] * (1.0f - sg));
        }
        if (gw->conv_bias)
            for (size_t ch = 0; ch < CW; ch++) gw->conv_bias[ch] += g[ch];
    }
    for (size_t r = 0; r < R; r++) memset(du + r * ldu + I, 0, sizeof(float) * CW);
    accel_cconv_taps(&c, w->conv, s.taps);
    memset(s.dtaps, 0, sizeof(float) * (size_t)d->K * CW);
    accel_cconv_backward(&c, s.taps, u + I, ldu, B, T, pos, s.dxs, CW, du + I, s.dtaps);
    accel_cconv_add_grad(&c, s.dtaps, gw->conv);
}

size_t accel_mamba2_cache_floats(const accel_mamba2_dims_t *d)
{
    return (size_t)d->H * (size_t)d->N * (size_t)d->P + (size_t)(d->K - 1) * accel_mamba2_conv_width(d);
}

void accel_mamba2_extend(const accel_mamba2_dims_t *d, const accel_mamba2_weights_t *w, const float *u, size_t ldu,
                         int p0, int T, float *cache, const accel_mamba2_acts_t *a, float *out, float *scratch)
{
    const size_t R = (size_t)(T - p0), I = inner(d), P = (size_t)d->P, NP = (size_t)d->N * P;
    const accel_cconv_t c = conv_of(d);
    float *state = cache, *tail = cache + (size_t)d->H * NP;   /* tail: positions p0 - K + 1 .. p0 - 1 */
    if (p0 == 0) memset(cache, 0, sizeof(float) * accel_mamba2_cache_floats(d));
    work_t s = carve(d, scratch, R, (size_t)T);
    const float *ur = u + (size_t)p0 * ldu;
    accel_cconv_taps(&c, w->conv, s.taps);
    accel_cconv_extend(&c, s.taps, ur + I, ldu, p0, T, tail, a->xc, c.CW);
    add_bias(d, w->conv_bias, a->xc, R);
    activate(d, a->xc, R, &s);
    timesteps(d, w, ur, ldu, R, s.dt);
    for (int h = 0; h < d->H; h++)                  /* each head's state on from the cached one */
        for (size_t r = 0; r < R; r++) {
            step_in_t in = step_in(d, w, &s, r, h);
            float *y = a->y + r * I + (size_t)h * P;
            step(d, state + (size_t)h * NP, &in, y);
            skip_add(&in, w->D[h], y, d->P);
        }
    gated_norm(d, w, ur, ldu, R, a, out + (size_t)p0 * I);
}
