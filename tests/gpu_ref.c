/* The host reference kernels alone (ref_accel_gk_*): the GPT ones from tests/gpu_mock.c, the Llama
 * ones from the CPU model's functions (see gpu_ref.h). */
#define ACCEL_GPU_REF_ONLY 1
#include "gpu_mock.c"

#include "../src/nn/kernels_cpu.h"

/* fp32 copy of n activations */
static float *f32_of(int dt, const void *p, size_t n)
{
    float *x = calloc(n ? n : 1, sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = ld(dt, p, i);
    return x;
}

static void store_all(int dt, void *p, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) st(dt, p, i, x[i]);
}

int ref_accel_gk_rmsnorm_forward(int dt, void *out, float *rstd, void *res_out, const void *res_in,
                                 const void *y, const float *bias, const float *w, int rows, int C,
                                 float eps, accel_stream_t s)
{
    (void)s;
    const size_t n = (size_t)rows * C;
    float *x = f32_of(dt, res_in, n), *o = calloc(n ? n : 1, sizeof(float));
    if (y) {    /* the residual add, rounded as stored: the norm reads the stored values */
        for (size_t i = 0; i < n; i++) x[i] = rnd(dt, x[i] + ld(dt, y, i) + (bias ? bias[i % C] : 0.0f));
        store_all(dt, res_out, x, n);
    }
    accel_cpu_rmsnorm_forward(o, rstd, x, w, (size_t)rows, C, eps);
    store_all(dt, out, o, n);
    free(x);
    free(o);
    return 0;
}

int ref_accel_gk_rmsnorm_backward(int dt, void *dx, float *dw, const void *dout, const void *x,
                                  const float *rstd, const float *w, int rows, int C, accel_stream_t s)
{
    (void)s;
    const size_t n = (size_t)rows * C;
    float *dx32 = f32_of(dt, dx, n), *d = f32_of(dt, dout, n), *x32 = f32_of(dt, x, n);
    accel_cpu_rmsnorm_backward(dx32, dw, d, x32, rstd, w, (size_t)rows, C);
    store_all(dt, dx, dx32, n);
    free(dx32);
    free(d);
    free(x32);
    return 0;
}

/* Each of the B*nheads sequences as T rows of one head; period pos0 + T makes row t's position
 * pos0 + t; with pos, row by row at its position (as the CPU decoder does for packed documents). */
int ref_accel_gk_rope(int dt, void *x, const float *cos, const float *sin, int B, int nheads, int T,
                      int hs, int pos0, const int32_t *pos, int inverse, accel_stream_t s)
{
    (void)s;
    const size_t seqs = (size_t)B * nheads, n = seqs * T * hs;
    float *x32 = f32_of(dt, x, n);
    for (size_t q = 0; q < seqs; q++)
        if (pos)
            for (int t = 0; t < T; t++)
                accel_cpu_rope(x32 + (q * T + t) * hs, 1, (size_t)hs, 1, hs, cos, sin, T,
                               pos[q / (size_t)nheads * T + t], inverse);
        else
            accel_cpu_rope(x32 + q * T * hs, (size_t)T, (size_t)hs, 1, hs, cos, sin, pos0 + T, pos0, inverse);
    store_all(dt, x, x32, n);
    free(x32);
    return 0;
}

/* Walks the heads (the other side of the mock's walk over the row columns). */
static void ref_perm_gqa(int dt, void *rows, void *q, void *k, void *v, const float *bias, int B,
                         int T, int NH, int KVH, int hs, int forward)
{
    const size_t W = (size_t)(NH + 2 * KVH) * hs;
    for (int part = 0; part < 3; part++) {
        const int nh = part ? KVH : NH;
        const size_t col0 = part == 0 ? 0 : part == 1 ? (size_t)NH * hs : (size_t)(NH + KVH) * hs;
        void *buf = part == 0 ? q : part == 1 ? k : v;
        size_t e = 0;               /* walks buf in storage order: b, head, t, d */
        for (int b = 0; b < B; b++)
            for (int h = 0; h < nh; h++)
                for (int t = 0; t < T; t++)
                    for (int d = 0; d < hs; d++, e++) {
                        size_t col = col0 + (size_t)h * hs + d, rc = ((size_t)b * T + t) * W + col;
                        if (forward) st(dt, buf, e, ld(dt, rows, rc) + (bias ? bias[col] : 0.0f));
                        else st(dt, rows, rc, ld(dt, buf, e));
                    }
    }
}

int ref_accel_gk_permute_gqa(int dt, void *q, void *k, void *v, const void *src, const float *bias,
                             int B, int T, int NH, int KVH, int hs, accel_stream_t s)
{
    (void)s;
    ref_perm_gqa(dt, (void *)src, q, k, v, bias, B, T, NH, KVH, hs, 1);
    return 0;
}

int ref_accel_gk_unpermute_gqa(int dt, void *dst, const void *q, const void *k, const void *v, int B,
                               int T, int NH, int KVH, int hs, accel_stream_t s)
{
    (void)s;
    ref_perm_gqa(dt, dst, (void *)q, (void *)k, (void *)v, NULL, B, T, NH, KVH, hs, 0);
    return 0;
}

int ref_accel_gk_swiglu_forward(int dt, void *h, const void *gu, int rows, int F, accel_stream_t s)
{
    (void)s;
    const size_t n = (size_t)rows * F;
    float *gu32 = f32_of(dt, gu, 2 * n), *h32 = malloc(sizeof(float) * (n ? n : 1));
    accel_cpu_swiglu_forward(h32, gu32, (size_t)rows, F);
    store_all(dt, h, h32, n);
    free(gu32);
    free(h32);
    return 0;
}

int ref_accel_gk_swiglu_backward(int dt, void *dgu, const void *dh, const void *gu, int rows, int F,
                                 accel_stream_t s)
{
    (void)s;
    const size_t n = (size_t)rows * F;
    float *gu32 = f32_of(dt, gu, 2 * n), *dh32 = f32_of(dt, dh, n);
    float *dgu32 = malloc(sizeof(float) * 2 * (n ? n : 1));
    accel_cpu_swiglu_backward(dgu32, dh32, gu32, (size_t)rows, F);
    store_all(dt, dgu, dgu32, 2 * n);
    free(gu32);
    free(dh32);
    free(dgu32);
    return 0;
}
