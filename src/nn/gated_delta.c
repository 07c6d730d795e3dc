/* Gated delta-net linear attention on the CPU (see gated_delta.h), in plain loops GCC vectorises:
 * the hot ones built for AVX-512, AVX2 and the baseline (target_clones, as kernels_cpu.c), their
 * reductions in fixed-order partial sums so results do not depend on the vector width.
 *
 * The forward pass keeps only the convolution's output, the recurrence's output and its norm: the
 * backward pass rebuilds the normalized q, k, v, g and beta from them, then, for each (document,
 * value head), reruns the recurrence keeping the state every CHUNK tokens, and walks back chunk by
 * chunk, rebuilding the chunk's states from its checkpoint first: (T / CHUNK + CHUNK) dk dv floats
 * per head instead of T dk dv. */
#include "gated_delta.h"

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
    float *xs;                      /* [R, CW] silu(conv): q (normalized, scaled) | k (normalized) | v */
    float *gb;                      /* [R, 2 Hv] g | beta */
    float *rn;                      /* [R, 2 Hk] each q and k head's 1/norm */
    float *dxs, *dgb, *dout;        /* backward: d(xs) [R, CW], d(g | beta) [R, 2 Hv], d(o) [R, Hv dv] */
    float *states;                  /* [(T / CHUNK + 1 + CHUNK), dk dv] checkpoints, then a chunk's */
    float *vec;                     /* [4 dv] */
    float *taps, *dtaps;            /* [K, CW] the convolution's weights tap by tap (its [CW, K]
                                     * transposed: the loops over channels run contiguous), and
                                     * their gradients */
} work_t;

static size_t chunks(size_t T) { return (T + CHUNK - 1) / CHUNK; }

/* Carves the scratch at p into w (p NULL: only counts); returns its floats. */
static size_t layout(const accel_gdn_dims_t *d, float *p, size_t R, size_t T, work_t *w)
{
    const size_t CW = accel_gdn_conv_width(d), Hv = (size_t)d->Hv, Hk = (size_t)d->Hk, dv = (size_t)d->dv;
    const size_t sizes[] = { R * CW, R * 2 * Hv, R * 2 * Hk, R * CW, R * 2 * Hv, R * Hv * dv,
                             (chunks(T) + 1 + CHUNK) * (size_t)d->dk * dv, 4 * dv, (size_t)d->K * CW,
                             (size_t)d->K * CW };
    float **const at[] = { &w->xs, &w->gb, &w->rn, &w->dxs, &w->dgb, &w->dout, &w->states, &w->vec, &w->taps,
                           &w->dtaps };
    return accel_carve_floats(p, sizes, at, sizeof sizes / sizeof sizes[0]);
}

static work_t carve(const accel_gdn_dims_t *d, float *p, size_t R, size_t T)
{
    work_t w;
    layout(d, p, R, T, &w);
    return w;
}

size_t accel_gdn_act_floats(const accel_gdn_dims_t *d)
{
    return accel_gdn_conv_width(d) + (size_t)d->Hv * (size_t)d->dv + (size_t)d->Hv;
}

size_t accel_gdn_scratch_floats(const accel_gdn_dims_t *d, size_t B, size_t T)
{
    work_t w;
    return layout(d, NULL, B * T, T, &w);
}

static accel_cconv_t conv_of(const accel_gdn_dims_t *d) { return (accel_cconv_t){ accel_gdn_conv_width(d), d->K }; }

void accel_gdn_carve(const accel_gdn_dims_t *d, accel_gdn_acts_t *a, float *p, size_t rows)
{
    a->xc = p;
    a->o = p + rows * accel_gdn_conv_width(d);
    a->orstd = a->o + rows * (size_t)d->Hv * (size_t)d->dv;
}


/* xs = silu(xc) for R rows, each q and k head L2-normalized (q also scaled by 1/sqrt(dk)); their
 * 1/norms into s->rn. */
ACCEL_CLONES static void activate(const accel_gdn_dims_t *d, const float *xc, size_t R, work_t *s)
{
    const size_t CW = accel_gdn_conv_width(d), Hk = (size_t)d->Hk, dk = (size_t)d->dk;
    const float scale = 1.0f / sqrtf((float)dk);
    for (size_t r = 0; r < R; r++) {
        const float *x = xc + r * CW;
        float *y = s->xs + r * CW;
        for (size_t c = 0; c < CW; c++) y[c] = x[c] * accel_sigmoidf(x[c]);
        for (size_t h = 0; h < 2 * Hk; h++) {       /* q heads, then k heads */
            float *v = y + h * dk, ss = 0;
            for (size_t i = 0; i < dk; i++) ss += v[i] * v[i];
            const float rn = 1.0f / sqrtf(ss + 1e-6f), f = h < Hk ? rn * scale : rn;
            s->rn[r * 2 * Hk + h] = rn;
            for (size_t i = 0; i < dk; i++) v[i] *= f;
        }
    }
}

/* xc = the causal convolution of u's q|k|v channels, then activate. */
static void conv_forward(const accel_gdn_dims_t *d, const float *conv, const float *u, size_t ldu, int B, int T,
                         const int32_t *pos, float *xc, work_t *s)
{
    const accel_cconv_t c = conv_of(d);
    accel_cconv_taps(&c, conv, s->taps);
    accel_cconv_forward(&c, s->taps, u, ldu, B, T, pos, xc, c.CW);
    activate(d, xc, (size_t)B * T, s);
}

static void gates(const accel_gdn_dims_t *d, const accel_gdn_weights_t *w, const float *u, size_t ldu, size_t R,
                  float *gb)
{
    const size_t Hv = (size_t)d->Hv, ab = accel_gdn_conv_width(d) + Hv * (size_t)d->dv;
    for (size_t r = 0; r < R; r++) {
        const float *b = u + r * ldu + ab, *a = b + Hv;
        for (size_t h = 0; h < Hv; h++) {
            gb[r * 2 * Hv + h] = -expf(w->A_log[h]) * accel_softplusf(a[h] + w->dt_bias[h]);
            gb[r * 2 * Hv + Hv + h] = d->beta_scale * accel_sigmoidf(b[h]);
        }
    }
}

typedef struct {                    /* one value head's view of row r's inputs */
    const float *q, *k, *v;
    float g, beta;
} step_in_t;

static step_in_t step_in(const accel_gdn_dims_t *d, const work_t *s, size_t r, int h)
{
    const size_t CW = accel_gdn_conv_width(d), Hk = (size_t)d->Hk, Hv = (size_t)d->Hv, dk = (size_t)d->dk;
    const size_t kh = (size_t)h / (Hv / Hk);
    const float *x = s->xs + r * CW;
    return (step_in_t){ x + kh * dk, x + (Hk + kh) * dk, x + 2 * Hk * dk + (size_t)h * d->dv,
                        s->gb[r * 2 * Hv + (size_t)h], s->gb[r * 2 * Hv + Hv + (size_t)h] };
}

/* One token: S = exp(g) S, S += k (beta (v - S^T k))^T; o = S^T q when o != NULL. */
ACCEL_CLONES static void step(const accel_gdn_dims_t *d, float *S, const step_in_t *in, float *o, float *mem)
{
    const int dk = d->dk, dv = d->dv;
    const float eg = expf(in->g);
    for (int j = 0; j < dv; j++) mem[j] = 0;
    for (int i = 0; i < dk; i++) {
        const float *row = S + (size_t)i * dv;
        const float ki = in->k[i];
        for (int j = 0; j < dv; j++) mem[j] += row[j] * ki;
    }
    for (int j = 0; j < dv; j++) mem[j] = in->beta * (in->v[j] - eg * mem[j]);     /* delta */
    if (o)
        for (int j = 0; j < dv; j++) o[j] = 0;
    for (int i = 0; i < dk; i++) {                  /* the update, and o from the updated row */
        float *row = S + (size_t)i * dv;
        const float ki = in->k[i], qi = o ? in->q[i] : 0.0f;
        for (int j = 0; j < dv; j++) row[j] = eg * row[j] + ki * mem[j];
        if (o)
            for (int j = 0; j < dv; j++) o[j] += row[j] * qi;
    }
}

/* y = rmsnorm(o) * norm * silu(z) for R rows (u's z, a's o), the norms' 1/rms into a->orstd. */
ACCEL_CLONES static void gated_norm(const accel_gdn_dims_t *d, const accel_gdn_weights_t *w, const float *u, size_t ldu,
                       size_t R, const accel_gdn_acts_t *a, float *y)
{
    const size_t Hv = (size_t)d->Hv, dv = (size_t)d->dv, zoff = accel_gdn_conv_width(d);
    for (size_t r = 0; r < R; r++)
        for (size_t h = 0; h < Hv; h++) {
            const float *o = a->o + r * Hv * dv + h * dv, *z = u + r * ldu + zoff + h * dv;
            float ss = 0;
            for (size_t j = 0; j < dv; j++) ss += o[j] * o[j];
            const float rstd = 1.0f / sqrtf(ss / (float)dv + d->eps);
            a->orstd[r * Hv + h] = rstd;
            float *out = y + r * Hv * dv + h * dv;
            for (size_t j = 0; j < dv; j++) out[j] = o[j] * rstd * w->norm[j] * z[j] * accel_sigmoidf(z[j]);
        }
}

void accel_gdn_forward(const accel_gdn_dims_t *d, const accel_gdn_weights_t *w, const float *u, size_t ldu,
                       int B, int T, const int32_t *pos, const accel_gdn_acts_t *a, float *y, float *scratch)
{
    const size_t R = (size_t)B * T, Hv = (size_t)d->Hv, dv = (size_t)d->dv, dkv = (size_t)d->dk * dv;
    work_t s = carve(d, scratch, R, (size_t)T);
    conv_forward(d, w->conv, u, ldu, B, T, pos, a->xc, &s);
    gates(d, w, u, ldu, R, s.gb);
    float *state = s.states;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < d->Hv; h++)
            for (int t = 0; t < T; t++) {
                const size_t r = (size_t)b * T + t;
                if (accel_doc_start(pos, (size_t)b * T, t) == t) memset(state, 0, sizeof(float) * dkv);
                step_in_t in = step_in(d, &s, r, h);
                step(d, state, &in, a->o + r * Hv * dv + (size_t)h * dv, s.vec);
            }
    gated_norm(d, w, u, ldu, R, a, y);
}

typedef struct {                    /* one (document, value head) for accel_step_fn */
    const accel_gdn_dims_t *d;
    const work_t *s;
    size_t r0;
    int h;
} rerun_t;

static void rerun_step(const void *ctx, float *S, int t)
{
    const rerun_t *c = ctx;
    step_in_t in = step_in(c->d, c->s, c->r0 + (size_t)t, c->h);
    step(c->d, S, &in, NULL, c->s->vec);
}

/* Back through one (document rows r0 .. r0 + n - 1, value head h): d(o) in s->dout -> d(q, k, v)
 * added to s->dxs, d(g), d(beta) into s->dgb. */
ACCEL_CLONES static void recurrence_backward(const accel_gdn_dims_t *d, work_t *s, size_t r0, int n, int h)
{
    const int dk = d->dk, dv = d->dv, Hk = d->Hk, Hv = d->Hv;
    const size_t dkv = (size_t)dk * dv, CW = accel_gdn_conv_width(d);
    const int nck = (n + CHUNK - 1) / CHUNK;
    float *ck = s->states, *st = ck + (size_t)nck * dkv, *dS = st + (size_t)CHUNK * dkv;
    float *mem = s->vec, *dd = mem + dv;
    const rerun_t ctx = { d, s, r0, h };
    accel_recur_checkpoints(rerun_step, &ctx, n, CHUNK, dkv, ck, dS);  /* dS: the running state meanwhile */
    memset(dS, 0, sizeof(float) * dkv);
    const size_t kh = (size_t)h / (size_t)(Hv / Hk);
    for (int c = nck - 1; c >= 0; c--) {
        const int t0 = c * CHUNK, t1 = t0 + CHUNK < n ? t0 + CHUNK : n;
        accel_recur_rebuild(rerun_step, &ctx, t0, t1, dkv, ck + (size_t)c * dkv, st);   /* after each token */
        for (int t = t1 - 1; t >= t0; t--) {
            const size_t r = r0 + (size_t)t;
            const float *St = st + (size_t)(t - t0) * dkv;
            const float *Sp = t > t0 ? St - dkv : ck + (size_t)c * dkv;       /* before the token */
            step_in_t in = step_in(d, s, r, h);
            const float eg = expf(in.g);
            const float *dout = s->dout + r * (size_t)Hv * dv + (size_t)h * dv;
            float *dq = s->dxs + r * CW + kh * dk, *dk_ = s->dxs + r * CW + ((size_t)Hk + kh) * dk;
            float *dvv = s->dxs + r * CW + 2 * (size_t)Hk * dk + (size_t)h * dv;
            /* kv_mem = exp(g) Sp^T k, delta = beta (v - kv_mem) */
            for (int j = 0; j < dv; j++) mem[j] = 0;
            for (int i = 0; i < dk; i++)
                for (int j = 0; j < dv; j++) mem[j] += Sp[(size_t)i * dv + j] * in.k[i];
            for (int j = 0; j < dv; j++) mem[j] = in.v[j] - eg * mem[j];            /* v - kv_mem */
            /* o = St^T q: dS += q do^T, dq = St do */
            for (int i = 0; i < dk; i++) {
                float *row = dS + (size_t)i * dv;
                const float qi = in.q[i];
                for (int j = 0; j < dv; j++) row[j] += qi * dout[j];
                dq[i] += accel_cpu_dot_lanes(St + (size_t)i * dv, dout, dv);
            }
            /* St = S' + k delta^T, delta = beta mem: d(delta) = dS^T k, dk += dS delta */
            for (int j = 0; j < dv; j++) dd[j] = 0;
            for (int i = 0; i < dk; i++) {
                const float *row = dS + (size_t)i * dv;
                const float ki = in.k[i];
                for (int j = 0; j < dv; j++) dd[j] += row[j] * ki;
                dk_[i] += in.beta * accel_cpu_dot_lanes(row, mem, dv);
            }
            /* delta = beta (v - kv_mem): dv, dbeta; d(kv_mem) = -beta d(delta), kept in dd */
            const float dbeta = accel_cpu_dot_lanes(dd, mem, dv);
            for (int j = 0; j < dv; j++) {
                dvv[j] += in.beta * dd[j];
                dd[j] *= -in.beta;
            }
            /* kv_mem = S'^T k with S' = exp(g) Sp: dS' = dS + k d(kv_mem)^T, dk += S' d(kv_mem),
             * dg = <S', dS'>, then d(Sp) = exp(g) dS' */
            float dg = 0;
            for (int i = 0; i < dk; i++) {
                float *row = dS + (size_t)i * dv;
                const float *prow = Sp + (size_t)i * dv;
                const float ki = in.k[i];
                for (int j = 0; j < dv; j++) row[j] += ki * dd[j];
                dk_[i] += eg * accel_cpu_dot_lanes(prow, dd, dv);
                dg += accel_cpu_dot_lanes(prow, row, dv);
                for (int j = 0; j < dv; j++) row[j] *= eg;
            }
            s->dgb[r * 2 * (size_t)Hv + (size_t)h] += eg * dg;
            s->dgb[r * 2 * (size_t)Hv + (size_t)Hv + (size_t)h] += dbeta;
        }
    }
}

ACCEL_CLONES void accel_gdn_backward(const accel_gdn_dims_t *d, const accel_gdn_weights_t *w, const accel_gdn_grads_t *gw,
                        const float *u, size_t ldu, int B, int T, const int32_t *pos, const accel_gdn_acts_t *a,
                        const float *dy, float *du, float *scratch)
{
    const size_t R = (size_t)B * T, Hv = (size_t)d->Hv, Hk = (size_t)d->Hk, dv = (size_t)d->dv, dk = (size_t)d->dk;
    const size_t CW = accel_gdn_conv_width(d), zoff = CW, boff = CW + Hv * dv;
    work_t s = carve(d, scratch, R, (size_t)T);
    /* xs, g, beta rebuilt from the kept convolution output: the forward pass's xs was scratch */
    activate(d, a->xc, R, &s);
    gates(d, w, u, ldu, R, s.gb);
    const float scale = 1.0f / sqrtf((float)dk);
    /* y = n * norm * silu(z), n = o rstd: dz, d(norm), then d(o) = rstd (dn - n mean(dn n)) */
    for (size_t r = 0; r < R; r++)
        for (size_t h = 0; h < Hv; h++) {
            const float *o = a->o + r * Hv * dv + h * dv, *z = u + r * ldu + zoff + h * dv;
            const float *g = dy + r * Hv * dv + h * dv, rstd = a->orstd[r * Hv + h];
            float *dz = du + r * ldu + zoff + h * dv, *dO = s.dout + r * Hv * dv + h * dv;
            float dot = 0;
            for (size_t j = 0; j < dv; j++) {
                const float n = o[j] * rstd, sg = accel_sigmoidf(z[j]), act = z[j] * sg;
                dz[j] = g[j] * n * w->norm[j] * sg * (1.0f + z[j] * (1.0f - sg));
                gw->norm[j] += g[j] * n * act;
                dO[j] = g[j] * w->norm[j] * act;                                  /* dn */
                dot += dO[j] * n;
            }
            dot /= (float)dv;
            for (size_t j = 0; j < dv; j++) dO[j] = rstd * (dO[j] - o[j] * rstd * dot);
        }
    memset(s.dxs, 0, sizeof(float) * R * CW);
    memset(s.dgb, 0, sizeof(float) * R * 2 * Hv);
    for (int b = 0; b < B; b++)
        for (int t0 = 0; t0 < T;) {                 /* each document of sequence b */
            int t1 = t0 + 1;
            while (t1 < T && accel_doc_start(pos, (size_t)b * T, t1) != t1) t1++;
            for (int h = 0; h < d->Hv; h++) recurrence_backward(d, &s, (size_t)b * T + t0, t1 - t0, h);
            t0 = t1;
        }
    /* g = -exp(A_log) softplus(a + dt_bias), beta = beta_scale sigmoid(b) */
    for (size_t r = 0; r < R; r++) {
        const float *bb = u + r * ldu + boff, *aa = bb + Hv;
        float *db = du + r * ldu + boff, *da = db + Hv;
        for (size_t h = 0; h < Hv; h++) {
            const float dg = s.dgb[r * 2 * Hv + h], dbeta = s.dgb[r * 2 * Hv + Hv + h];
            const float beta = s.gb[r * 2 * Hv + Hv + h], g = s.gb[r * 2 * Hv + h];
            db[h] = dbeta * beta * (1.0f - beta / d->beta_scale);
            da[h] = dg * -expf(w->A_log[h]) * accel_sigmoidf(aa[h] + w->dt_bias[h]);
            gw->dt_bias[h] += da[h];
            gw->A_log[h] += dg * g;
        }
    }
    /* q and k heads: xs = f n, n = silu(x) rn (f: 1/sqrt(dk) for q), so d(silu(x)) =
     * rn (dn - n (n . dn)) with dn = f d(xs); then through SiLU to d(xc), kept in dxs */
    for (size_t r = 0; r < R; r++) {
        const float *x = a->xc + r * CW;
        float *g = s.dxs + r * CW;
        for (size_t h = 0; h < 2 * Hk; h++) {
            const float rn = s.rn[r * 2 * Hk + h], f = h < Hk ? scale : 1.0f;
            float *gh = g + h * dk;
            const float *xs = s.xs + r * CW + h * dk;      /* f n */
            for (size_t i = 0; i < dk; i++) gh[i] *= f;
            const float nd = accel_cpu_dot_lanes(xs, gh, (int)dk) / f;
            for (size_t i = 0; i < dk; i++) gh[i] = rn * (gh[i] - xs[i] / f * nd);
        }
        for (size_t c = 0; c < CW; c++) {
            const float sg = accel_sigmoidf(x[c]);
            g[c] *= sg * (1.0f + x[c] * (1.0f - sg));
        }
    }
    /* the convolution's */
    const accel_cconv_t c = conv_of(d);
    for (size_t r = 0; r < R; r++) memset(du + r * ldu, 0, sizeof(float) * CW);
    accel_cconv_taps(&c, w->conv, s.taps);
    memset(s.dtaps, 0, sizeof(float) * (size_t)d->K * CW);
    accel_cconv_backward(&c, s.taps, u, ldu, B, T, pos, s.dxs, CW, du, s.dtaps);
    accel_cconv_add_grad(&c, s.dtaps, gw->conv);
}

size_t accel_gdn_cache_floats(const accel_gdn_dims_t *d)
{
    return (size_t)d->Hv * (size_t)d->dk * (size_t)d->dv + (size_t)(d->K - 1) * accel_gdn_conv_width(d);
}

void accel_gdn_extend(const accel_gdn_dims_t *d, const accel_gdn_weights_t *w, const float *u, size_t ldu, int p0,
                      int T, float *cache, const accel_gdn_acts_t *a, float *y, float *scratch)
{
    const size_t CW = accel_gdn_conv_width(d), R = (size_t)(T - p0), Hv = (size_t)d->Hv, dv = (size_t)d->dv;
    const size_t dkv = (size_t)d->dk * dv;
    float *state = cache, *tail = cache + Hv * dkv;     /* tail: positions p0 - K + 1 .. p0 - 1 */
    if (p0 == 0) memset(cache, 0, sizeof(float) * accel_gdn_cache_floats(d));
    work_t s = carve(d, scratch, R, (size_t)T);
    const accel_cconv_t c = conv_of(d);
    accel_cconv_taps(&c, w->conv, s.taps);
    accel_cconv_extend(&c, s.taps, u + (size_t)p0 * ldu, ldu, p0, T, tail, a->xc, CW);
    activate(d, a->xc, R, &s);
    const float *ur = u + (size_t)p0 * ldu;
    gates(d, w, ur, ldu, R, s.gb);
    for (int h = 0; h < d->Hv; h++)                 /* each head's state on from the cached one */
        for (size_t r = 0; r < R; r++) {
            step_in_t in = step_in(d, &s, r, h);
            step(d, state + (size_t)h * dkv, &in, a->o + r * Hv * dv + (size_t)h * dv, s.vec);
        }
    gated_norm(d, w, ur, ldu, R, a, y + (size_t)p0 * Hv * dv);
}
