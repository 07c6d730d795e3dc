/* Mixture of experts on the CPU (experts.h): routing, grouped expert products, and their backward
 * pass. Shapes in the comments: R rows, E experts, K slots per row, A = R K assignments, C the
 * width, F an expert's hidden width. */
#include "build_config.h"

#include <math.h>
#include <string.h>

#include "experts.h"

#define GEMM(...) ACCEL_CHECK(accel_gemm_cpu(g, __VA_ARGS__))

static const float *expert_gate_up(const accel_moe_dims_t *d, const float *w, int e)
{
    return w + (size_t)e * accel_moe_in_width(d) * accel_moe_width(d);
}

/* hid = the activation of h's n rows (gated: act(gate) * up; plain: act(up), h left as act'(up)),
 * and its backward: d(h) from dhid, into dh (plain: into dhid), returned. */
static void act_forward(const accel_moe_dims_t *d, float *hid, float *h, size_t n, int F)
{
    if (d->plain) accel_cpu_bias_act_forward(d->plain_act, h, hid, NULL, n, F);
    else accel_cpu_glu_forward(&d->act, hid, h, n, F);
}

static float *act_backward(const accel_moe_dims_t *d, float *dh, float *dhid, const float *h, size_t n, int F)
{
    if (d->plain) {                 /* in place: d(up) = d(hid) act'(up) */
        accel_cpu_act_backward(dhid, h, NULL, n, F);
        return dhid;
    }
    accel_cpu_glu_backward(&d->act, dh, dhid, h, n, F);
    return dh;
}

static const float *expert_down(const accel_moe_dims_t *d, const float *w, int e)
{
    return w + (size_t)e * accel_moe_width(d) * d->F;
}

/* y[r] += b for rows r of y [rows, n]: a product's bias (y its own residual). */
static void add_rows(float *y, const float *b, size_t rows, int n) { accel_cpu_bias_rows(y, b, y, rows, n); }

/* The best of the n scores s (at stride 1) not yet in taken[0..k): ties go to the lower index,
 * as a stable sort. */
static int best_of(const float *s, int n, const int32_t *taken, int k)
{
    int best = -1;
    for (int e = 0; e < n; e++) {
        bool used = false;
        for (int j = 0; j < k; j++) used |= taken[j] == e;
        if (!used && (best < 0 || s[e] > s[best])) best = e;
    }
    return best;
}

/* Group-limited routing: the choice scores cs [E] of the experts outside the row's topk_groups
 * best groups (a group scored by the sum of its two best, DeepSeek-V3's, or by its best,
 * DeepSeek-V2's) become -inf. */
static void limit_groups(const accel_moe_dims_t *d, float *cs)
{
    const int n = d->E / d->groups;
    float gs[4096];
    int32_t keep[4096];
    for (int g = 0; g < d->groups; g++) {
        const float *s = cs + (size_t)g * n;
        int32_t top[2];
        top[0] = best_of(s, n, top, 0);
        if (d->group_max) {
            gs[g] = s[top[0]];
            continue;
        }
        top[1] = best_of(s, n, top, 1);
        gs[g] = s[top[0]] + s[top[1]];
    }
    for (int k = 0; k < d->topk_groups; k++) keep[k] = best_of(gs, d->groups, keep, k);
    for (int g = 0; g < d->groups; g++) {
        bool kept = false;
        for (int k = 0; k < d->topk_groups; k++) kept |= keep[k] == g;
        for (int e = 0; !kept && e < n; e++) cs[(size_t)g * n + e] = -INFINITY;
    }
}

/* Each row's K best experts by their choice scores (the scores, plus select_b, limited to the best
 * groups), their weights (the scores themselves, renormalized when norm_topk, times scale), and
 * the assignments grouped by expert (a counting sort, rows ascending within an expert). */
static void route(const accel_moe_dims_t *d, const float *select_b, const accel_moe_acts_t *a, size_t R)
{
    const int E = d->E, K = d->K;
    float cs[4096];                                 /* model.experts <= 4096 (config) */
    memset(a->start, 0, sizeof(int32_t) * (size_t)(E + 1));
    for (size_t r = 0; r < R; r++) {
        const float *p = a->probs + r * E;
        int32_t *ex = a->expert + r * K;
        float *wt = a->weight + r * K, sum = 0.0f;
        for (int e = 0; e < E; e++) cs[e] = select_b ? p[e] + select_b[e] : p[e];
        if (d->groups > 1) limit_groups(d, cs);
        for (int k = 0; k < K; k++) {
            const int best = best_of(cs, E, ex, k);
            ex[k] = best;
            wt[k] = p[best];
            sum += p[best];
            a->start[best + 1]++;
        }
        if (d->sigmoid) sum += d->norm_eps;         /* as transformers: sigmoids may all be ~0 */
        if (d->norm_topk)
            for (int k = 0; k < K; k++) wt[k] /= sum;
        if (d->scale != 1.0f)
            for (int k = 0; k < K; k++) wt[k] *= d->scale;
    }
    for (int e = 0; e < E; e++) a->start[e + 1] += a->start[e];
    int32_t fill[4096];
    memcpy(fill, a->start, sizeof(int32_t) * (size_t)E);
    for (size_t r = 0; r < R; r++)
        for (int k = 0; k < K; k++) a->order[fill[a->expert[r * K + k]]++] = (int32_t)(r * K + k);
}

/* xs [A, W]: each assignment's input row (x's, or with a latent xl's), grouped by expert; with
 * input_scaled times the slot's weight. */
static void gather_rows(const accel_moe_dims_t *d, const accel_moe_acts_t *a, const float *x)
{
    const size_t W = (size_t)accel_moe_width(d);
    const float *in = d->latent ? a->xl : x;
    for (int32_t i = 0; i < a->start[d->E]; i++) {
        const int32_t s = a->order[i];
        float *xs = a->xs + (size_t)i * W;
        const float *row = in + (size_t)(s / d->K) * W;
        if (!d->input_scaled) {
            memcpy(xs, row, sizeof(float) * W);
            continue;
        }
        for (size_t c = 0; c < W; c++) xs[c] = a->weight[s] * row[c];
    }
}

/* The shared expert over R rows: sh = x shared_gate_up^T, shid = swiglu(sh) (plain: the experts'
 * activation of sh), sy = shid shared_down^T, with its gate (Qwen2-MoE) sg = sigmoid(x . shared_gate). */
static accel_status_t shared_forward(accel_gemm_cpu_t *g, const accel_moe_dims_t *d,
                                     const accel_moe_weights_t *w, const accel_moe_acts_t *a,
                                     const float *x, size_t R)
{
    const int C = d->C, S = d->S, SI = accel_moe_shared_in_width(d);
    GEMM(false, true, (int)R, SI, C, 1.0f, x, C, w->shared_gate_up, C, 0.0f, a->sh, SI);
    if (d->plain) accel_cpu_bias_act_forward(d->plain_act, a->sh, a->shid, NULL, R, S);
    else accel_cpu_swiglu_forward(a->shid, a->sh, R, S);
    GEMM(false, true, (int)R, C, S, 1.0f, a->shid, S, w->shared_down, S, 0.0f, a->sy, C);
    if (!d->shared_gate) return ACCEL_OK;
    GEMM(false, true, (int)R, 1, C, 1.0f, x, C, w->shared_gate, C, 0.0f, a->sg, 1);
    for (size_t r = 0; r < R; r++) a->sg[r] = 1.0f / (1.0f + expf(-a->sg[r]));
    return ACCEL_OK;
}

/* Its backward, adding to dx [R, C] and the shared weights' gradients; scratch: R (C + 3S + 1). */
static accel_status_t shared_backward(accel_gemm_cpu_t *g, const accel_moe_dims_t *d,
                                      const accel_moe_weights_t *w, const accel_moe_acts_t *a,
                                      const float *x, size_t R, const float *dout, float *dx,
                                      const accel_moe_grads_t *dw, float *scratch)
{
    const int C = d->C, S = d->S, SI = accel_moe_shared_in_width(d);
    float *dsy = scratch, *dshid = dsy + R * C, *dsh = dshid + R * S, *dsg = dsh + R * 2 * S;
    if (d->plain) dsh = dshid;      /* d(up) in place of d(hidden) */
    if (!d->shared_gate) memcpy(dsy, dout, sizeof(float) * R * (size_t)C);     /* out += sy */
    for (size_t r = 0; d->shared_gate && r < R; r++) {     /* out += sg sy */
        const float *go = dout + r * C, gate = a->sg[r];
        dsg[r] = accel_cpu_dot(go, a->sy + r * C, C) * gate * (1.0f - gate);
        for (int c = 0; c < C; c++) dsy[r * C + c] = gate * go[c];
    }
    GEMM(false, false, (int)R, S, C, 1.0f, dsy, C, w->shared_down, S, 0.0f, dshid, S);
    if (dw->shared_down) GEMM(true, false, C, S, (int)R, 1.0f, dsy, C, a->shid, S, 1.0f, dw->shared_down, S);
    if (d->plain) accel_cpu_act_backward(dsh, a->sh, NULL, R, S);
    else accel_cpu_swiglu_backward(dsh, dshid, a->sh, R, S);
    GEMM(false, false, (int)R, C, SI, 1.0f, dsh, SI, w->shared_gate_up, C, 1.0f, dx, C);
    if (dw->shared_gate_up) GEMM(true, false, SI, C, (int)R, 1.0f, dsh, SI, x, C, 1.0f, dw->shared_gate_up, C);
    if (!d->shared_gate) return ACCEL_OK;
    GEMM(false, false, (int)R, C, 1, 1.0f, dsg, 1, w->shared_gate, C, 1.0f, dx, C);
    GEMM(true, false, 1, C, (int)R, 1.0f, dsg, 1, x, C, 1.0f, dw->shared_gate, C);
    return ACCEL_OK;
}

accel_status_t accel_moe_forward(accel_gemm_cpu_t *g, const accel_moe_dims_t *d,
                                 const accel_moe_weights_t *w, const accel_moe_acts_t *a,
                                 const float *x, size_t R, float *out)
{
    const int E = d->E, K = d->K, C = d->C, F = d->F, FI = accel_moe_in_width(d), W = accel_moe_width(d);
    /* router: probs [R, E] = softmax or sigmoid of x router^T */
    GEMM(false, true, (int)R, E, C, 1.0f, x, C, w->router, C, 0.0f, a->probs, E);
    if (d->bias) add_rows(a->probs, w->router_b, R, E);
    if (d->sigmoid)
        for (size_t i = 0; i < R * (size_t)E; i++) a->probs[i] = 1.0f / (1.0f + expf(-a->probs[i]));
    else
        for (size_t r = 0; r < R; r++) accel_cpu_softmax(a->probs + r * E, a->probs + r * E, E);
    route(d, d->select_bias ? w->select_b : NULL, a, R);
    if (d->latent) GEMM(false, true, (int)R, W, C, 1.0f, x, C, w->latent_in, C, 0.0f, a->xl, W);   /* down */
    gather_rows(d, a, x);
    for (int e = 0; e < E; e++) {                   /* expert e over its n rows */
        const int i0 = a->start[e], n = a->start[e + 1] - i0;
        if (!n) continue;
        float *h = a->h + (size_t)i0 * FI, *hid = a->hid + (size_t)i0 * F;
        GEMM(false, true, n, FI, W, 1.0f, a->xs + (size_t)i0 * W, W, expert_gate_up(d, w->gate_up, e), W,
             0.0f, h, FI);
        if (d->bias) add_rows(h, w->gate_up_b + (size_t)e * FI, (size_t)n, FI);
        act_forward(d, hid, h, (size_t)n, F);
        GEMM(false, true, n, W, F, 1.0f, hid, F, expert_down(d, w->down, e), F, 0.0f,
             a->ys + (size_t)i0 * W, W);
        if (d->bias) add_rows(a->ys + (size_t)i0 * W, w->down_b + (size_t)e * W, (size_t)n, W);
    }
    if (d->S) ACCEL_CHECK(shared_forward(g, d, w, a, x, R));
    if (!out && !d->latent) return ACCEL_OK;        /* (the latent's sum: its backward reads it) */
    float *sum = d->latent ? a->yl : out;           /* the weighted sum, [R, W] */
    memset(sum, 0, sizeof(float) * R * (size_t)W);
    for (int32_t i = 0; i < a->start[E]; i++) {     /* in expert order, as transformers adds */
        const int32_t s = a->order[i];
        float *o = sum + (size_t)(s / K) * W;
        const float *y = a->ys + (size_t)i * W, wt = d->input_scaled ? 1.0f : a->weight[s];
        for (int c = 0; c < W; c++) o[c] += wt * y[c];
    }
    if (!out) return ACCEL_OK;
    if (d->latent) GEMM(false, true, (int)R, C, W, 1.0f, a->yl, W, w->latent_out, W, 0.0f, out, C);   /* up */
    for (size_t r = 0; d->S && r < R; r++) {        /* then the (gated) shared expert */
        float *o = out + r * C;
        const float *y = a->sy + r * C, gate = d->shared_gate ? a->sg[r] : 1.0f;
        for (int c = 0; c < C; c++) o[c] += gate * y[c];
    }
    return ACCEL_OK;
}

size_t accel_moe_scratch_floats(const accel_moe_dims_t *d, size_t R)
{
    const size_t A = R * (size_t)d->K;
    /* dy / dxs [A, W], dhid [R, F], dh [R, 2F], dweight [A], dprobs [R, E]; the shared expert's
     * (shared_backward); with a latent, d(yl) and d(xl) [R, latent] */
    return A * (size_t)accel_moe_width(d) + R * 3 * (size_t)d->F + A + R * (size_t)d->E +
           (d->S ? R * ((size_t)d->C + 3 * (size_t)d->S + 1) : 0) + 2 * R * (size_t)d->latent;
}

accel_status_t accel_moe_backward(accel_gemm_cpu_t *g, const accel_moe_dims_t *d,
                                  const accel_moe_weights_t *w, const accel_moe_acts_t *a,
                                  const float *x, size_t R, const float *dout, const float *aux_grad,
                                  float *dx, const accel_moe_grads_t *dw, float *scratch)
{
    const int E = d->E, K = d->K, C = d->C, F = d->F, FI = accel_moe_in_width(d), W = accel_moe_width(d);
    const size_t A = R * (size_t)K;
    float *dy = scratch;                            /* [A, W], later each expert's d(xs) */
    float *dhid = dy + A * W;                       /* [R, F]: one expert's rows at a time */
    float *dh = dhid + R * F;                       /* [R, 2F] */
    float *dwt = dh + R * 2 * F;                    /* [A] by (row, slot) */
    float *dp = dwt + A;                            /* [R, E] */
    float *shared = dp + R * E;                     /* shared_backward's */
    float *dyl = shared + (d->S ? R * ((size_t)C + 3 * (size_t)d->S + 1) : 0), *dxl = dyl + R * (size_t)d->latent;
    if (d->latent) {                                /* out = yl latent_out^T: d(yl), d(latent_out) */
        GEMM(false, false, (int)R, W, C, 1.0f, dout, C, w->latent_out, W, 0.0f, dyl, W);
        if (dw->latent_out) GEMM(true, false, C, W, (int)R, 1.0f, dout, C, a->yl, W, 1.0f, dw->latent_out, W);
    }
    const float *dsum = d->latent ? dyl : dout;     /* d of the weighted sum, [R, W] */
    gather_rows(d, a, x);                           /* xs may be shared with other blocks */
    /* sum[r] += weight * ys: d(weight) = dsum[r] . ys, d(ys) = weight dsum[r]; input_scaled:
     * sum[r] += ys, d(ys) = dsum[r] (d(weight) below, from the input) */
    for (size_t i = 0; i < A; i++) {
        const int32_t s = a->order[i];
        const float *go = dsum + (size_t)(s / K) * W, *y = a->ys + i * W;
        const float wt = d->input_scaled ? 1.0f : a->weight[s];
        if (!d->input_scaled) dwt[s] = accel_cpu_dot(go, y, W);
        for (int c = 0; c < W; c++) dy[i * W + c] = wt * go[c];
    }
    for (int e = 0; e < E; e++) {
        const int i0 = a->start[e], n = a->start[e + 1] - i0;
        if (!n) continue;
        float *dye = dy + (size_t)i0 * W;
        const float *hid = a->hid + (size_t)i0 * F, *h = a->h + (size_t)i0 * FI;
        const float *xs = a->xs + (size_t)i0 * W;
        GEMM(false, false, n, F, W, 1.0f, dye, W, expert_down(d, w->down, e), F, 0.0f, dhid, F);
        if (dw->down) GEMM(true, false, W, F, n, 1.0f, dye, W, hid, F, 1.0f, dw->down + (size_t)e * W * F, F);
        if (d->bias) accel_cpu_colsum_add(dw->down_b + (size_t)e * W, dye, (size_t)n, W);
        const float *dhe = act_backward(d, dh, dhid, h, (size_t)n, F);
        if (d->bias) accel_cpu_colsum_add(dw->gate_up_b + (size_t)e * FI, dhe, (size_t)n, FI);
        GEMM(false, false, n, W, FI, 1.0f, dhe, FI, expert_gate_up(d, w->gate_up, e), W, 0.0f, dye, W);
        if (dw->gate_up) GEMM(true, false, FI, W, n, 1.0f, dhe, FI, xs, W, 1.0f, dw->gate_up + (size_t)e * FI * W, W);
    }
    float *dxs_sum = d->latent ? dxl : dx;          /* d of the experts' input rows, [R, W] */
    const float *in = d->latent ? a->xl : x;
    memset(dxs_sum, 0, sizeof(float) * R * W);
    for (size_t i = 0; i < A; i++) {                /* each assignment's d(x) back to its row */
        const int32_t s = a->order[i];
        float *o = dxs_sum + (size_t)(s / K) * W;
        const float *v = dy + i * W;
        if (!d->input_scaled) {
            for (int c = 0; c < W; c++) o[c] += v[c];
            continue;
        }
        /* xs = weight row: d(weight) = row . d(xs), d(row) = weight d(xs) */
        dwt[s] = accel_cpu_dot(in + (size_t)(s / K) * W, v, W);
        for (int c = 0; c < W; c++) o[c] += a->weight[s] * v[c];
    }
    if (d->latent) {                                /* xl = x latent_in^T: d(x), d(latent_in) */
        GEMM(false, false, (int)R, C, W, 1.0f, dxl, W, w->latent_in, C, 0.0f, dx, C);
        if (dw->latent_in) GEMM(true, false, W, C, (int)R, 1.0f, dxl, W, x, C, 1.0f, dw->latent_in, C);
    }
    if (d->S) ACCEL_CHECK(shared_backward(g, d, w, a, x, R, dout, dx, dw, shared));
    /* d(probs): through the slot weights (w_k = scale p_k / S with S the slots' sum when norm_topk,
     * else scale p_k), plus the load-balancing term; then the softmax or sigmoid into d(logits),
     * in place. The selection bias only chose: it has no gradient. */
    for (size_t r = 0; r < R; r++) {
        float *g_p = dp + r * E;
        const int32_t *ex = a->expert + r * K;
        const float *wt = a->weight + r * K, *dwr = dwt + r * K, *p = a->probs + r * E;
        if (aux_grad) memcpy(g_p, aux_grad, sizeof(float) * (size_t)E);
        else memset(g_p, 0, sizeof(float) * (size_t)E);
        if (d->norm_topk) {
            float sum = 0.0f, dot = 0.0f;
            for (int k = 0; k < K; k++) { sum += p[ex[k]]; dot += dwr[k] * wt[k]; }
            if (d->sigmoid) sum += d->norm_eps;
            for (int k = 0; k < K; k++) g_p[ex[k]] += (d->scale * dwr[k] - dot) / sum;
        } else {
            for (int k = 0; k < K; k++) g_p[ex[k]] += d->scale * dwr[k];
        }
        if (d->sigmoid)
            for (int e = 0; e < E; e++) g_p[e] *= p[e] * (1.0f - p[e]);
        else
            accel_cpu_softmax_backward(g_p, p, g_p, E, 1.0f);
    }
    GEMM(false, false, (int)R, C, E, 1.0f, dp, E, w->router, C, 1.0f, dx, C);
    if (dw->router) GEMM(true, false, E, C, (int)R, 1.0f, dp, E, x, C, 1.0f, dw->router, C);
    if (d->bias) accel_cpu_colsum_add(dw->router_b, dp, R, E);
    if (d->loads && dw->select_b)                   /* over micro-batches and ranks: the batch's */
        for (int e = 0; e < E; e++) dw->select_b[e] += (float)(a->start[e + 1] - a->start[e]) - (float)A / (float)E;
    return ACCEL_OK;
}

void accel_moe_route_stats(const accel_moe_dims_t *d, const accel_moe_acts_t *a, size_t R,
                           double *count, double *psum)
{
    for (int e = 0; e < d->E; e++) count[e] += a->start[e + 1] - a->start[e];
    for (size_t r = 0; r < R; r++)
        for (int e = 0; e < d->E; e++) psum[e] += a->probs[r * d->E + e];
}
