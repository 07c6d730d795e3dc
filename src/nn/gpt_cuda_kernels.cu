/* CUDA kernels of the built-in GPT (everything but the matrix products, which go to cuBLAS):
 * embedding, LayerNorm fused with the residual add and bias, per-head permutes with the qkv bias,
 * causal softmax, GELU, bias gradients, the fused classifier (softmax + cross-entropy + dlogits in
 * one pass over the logits), AdamW / SGD writing the low-precision parameter copy in the same pass,
 * and the gradient sum of squares.
 *
 * Kernels are templated on the activation type (float, bf16, fp16); arithmetic is fp32 throughout
 * and values are rounded once when stored. Row kernels use one warp per row; element-wise ones use
 * grid-stride loops. Written for accel; the kernel set follows the structure of llm.c. */
#include <math.h>
#include <stdint.h>

#include "gpt_cuda_kernels.h"

#include "cuda_common.cuh"

#define LN_EPS 1e-5f                /* ACCEL_LN_EPS of the CPU model */
#define GELU_K 0.7978845608028654f  /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* ------------------------------------------------------------------ embedding */

template <typename T>
static __global__ void encoder_forward_kernel(T *x, const int32_t *tok, int stride, const int32_t *pos,
                                              const float *wte, const float *wpe, int B, int Tn, int C)
{
    size_t n = (size_t)B * Tn * C;
    GRID_STRIDE(i, n) {
        const unsigned ui = (unsigned)i, bt = ui / (unsigned)C;   /* sizes < 2^31 (the plan) */
        const int c = (int)(ui % (unsigned)C), b = (int)(bt / (unsigned)Tn), t = (int)(bt % (unsigned)Tn);
        int id = tok[(size_t)b * stride + t], p = pos ? pos[bt] : t;
        x[i] = wpe ? st<T>(wte[(size_t)id * C + c] + wpe[(size_t)p * C + c])
                   : st<T>(wte[(size_t)id * C + c]);
    }
}

template <typename T>
static __global__ void encoder_backward_kernel(float *dwte, float *dwpe, const T *d, const int32_t *tok,
                                               int stride, const int32_t *pos, int B, int Tn, int C)
{
    size_t n = (size_t)B * Tn * C;
    GRID_STRIDE(i, n) {
        const unsigned ui = (unsigned)i, bt = ui / (unsigned)C;   /* sizes < 2^31 (the plan) */
        const int c = (int)(ui % (unsigned)C), b = (int)(bt / (unsigned)Tn), t = (int)(bt % (unsigned)Tn);
        int id = tok[(size_t)b * stride + t], p = pos ? pos[bt] : t;
        float v = ld(d[i]);
        atomicAdd(&dwte[(size_t)id * C + c], v);
        if (dwpe) atomicAdd(&dwpe[(size_t)p * C + c], v);
    }
}

extern "C" int accel_gk_encoder_forward(int dt, void *x, const int32_t *tok, int stride, const int32_t *pos,
                                        const float *wte, const float *wpe, int B, int T, int C,
                                        accel_stream_t s)
{
    DISPATCH(dt, encoder_forward_kernel<act_t><<<grid((size_t)B * T * C), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)x, tok, stride, pos, wte, wpe, B, T, C));
}

extern "C" int accel_gk_encoder_backward(int dt, float *dwte, float *dwpe, const void *d, const int32_t *tok,
                                         int stride, const int32_t *pos, int B, int T, int C, accel_stream_t s)
{
    DISPATCH(dt, encoder_backward_kernel<act_t><<<grid((size_t)B * T * C), BLOCK, 0, (cudaStream_t)s>>>(
                     dwte, dwpe, (const act_t *)d, tok, stride, pos, B, T, C));
}

/* ------------------------------------------------------------------ LayerNorm */

/* One warp per row. With y: the residual sum is rounded to T and stored first, and the statistics
 * are taken of the stored (rounded) values, which is what the backward pass will see. Each lane
 * reads back only the elements it wrote itself. */
template <typename T>
static __global__ void layernorm_forward_kernel(T *out, float *mean, float *rstd, T *res_out,
                                                const T *res_in, const T *y, const float *bias,
                                                const float *w, const float *b, int rows, int C)
{
    const int lane = threadIdx.x % 32;
    for (size_t r = blockIdx.x * (size_t)WARPS + threadIdx.x / 32; r < (size_t)rows;
         r += (size_t)gridDim.x * WARPS) {
        const T *xin = res_in + r * C;
        const T *x = xin;
        float sum = 0.0f;
        if (y) {
            const T *yr = y + r * C;
            T *ro = res_out + r * C;
            for (int c = lane; c < C; c += 32) {
                T v = st<T>(ld(xin[c]) + ld(yr[c]) + (bias ? bias[c] : 0.0f));
                ro[c] = v;
                sum += ld(v);
            }
            x = ro;
        } else {
            for (int c = lane; c < C; c += 32) sum += ld(x[c]);
        }
        const float m = warp_sum(sum) / (float)C;
        float var = 0.0f;
        for (int c = lane; c < C; c += 32) {
            float d = ld(x[c]) - m;
            var += d * d;
        }
        const float s = 1.0f / sqrtf(warp_sum(var) / (float)C + LN_EPS);
        T *o = out + r * C;
        for (int c = lane; c < C; c += 32) o[c] = st<T>((ld(x[c]) - m) * s * w[c] + b[c]);
        if (lane == 0) {
            mean[r] = m;
            rstd[r] = s;
        }
    }
}

/* One warp per row; the block accumulates dw and db in shared memory and adds them to the global
 * fp32 gradients once at the end (2*C floats of shared memory). */
template <typename T>
static __global__ void layernorm_backward_kernel(T *dx, float *dw, float *db, const T *dout, const T *x,
                                                 const float *mean, const float *rstd, const float *w,
                                                 int rows, int C)
{
    extern __shared__ float shared[];
    float *sdw = shared, *sdb = shared + C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) sdw[c] = sdb[c] = 0.0f;
    __syncthreads();
    const int lane = threadIdx.x % 32;
    for (size_t r = blockIdx.x * (size_t)WARPS + threadIdx.x / 32; r < (size_t)rows;
         r += (size_t)gridDim.x * WARPS) {
        const T *xr = x + r * C, *d = dout + r * C;
        T *dxr = dx + r * C;
        const float m = mean[r], s = rstd[r];
        float ag = 0.0f, agx = 0.0f;
        for (int c = lane; c < C; c += 32) {
            float g = ld(d[c]) * w[c], xh = (ld(xr[c]) - m) * s;
            ag += g;
            agx += g * xh;
        }
        const float mg = warp_sum(ag) / (float)C, mgx = warp_sum(agx) / (float)C;
        for (int c = lane; c < C; c += 32) {
            float dc = ld(d[c]), xh = (ld(xr[c]) - m) * s;
            atomicAdd(&sdw[c], dc * xh);
            atomicAdd(&sdb[c], dc);
            dxr[c] = st<T>(ld(dxr[c]) + s * (dc * w[c] - mg - xh * mgx));
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        atomicAdd(&dw[c], sdw[c]);
        atomicAdd(&db[c], sdb[c]);
    }
}

extern "C" int accel_gk_layernorm_forward(int dt, void *out, float *mean, float *rstd, void *res_out,
                                          const void *res_in, const void *y, const float *bias,
                                          const float *w, const float *b, int rows, int C,
                                          accel_stream_t s)
{
    DISPATCH(dt, layernorm_forward_kernel<act_t><<<row_grid((size_t)rows), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)out, mean, rstd, (act_t *)res_out, (const act_t *)res_in,
                     (const act_t *)y, bias, w, b, rows, C));
}

extern "C" int accel_gk_layernorm_backward(int dt, void *dx, float *dw, float *db, const void *dout,
                                           const void *x, const float *mean, const float *rstd,
                                           const float *w, int rows, int C, accel_stream_t s)
{
    if (C > 6144) return (int)cudaErrorInvalidValue;     /* 2*C floats of shared memory <= 48 KiB */
    /* Fewer, fuller blocks: each block adds its C-wide partial sums to global memory once. */
    unsigned blocks = accel_gpt_cuda_grid((size_t)rows, WARPS * 8, 1024);
    size_t shmem = 2 * sizeof(float) * (size_t)C;
    DISPATCH(dt, layernorm_backward_kernel<act_t><<<blocks, BLOCK, shmem, (cudaStream_t)s>>>(
                     (act_t *)dx, dw, db, (const act_t *)dout, (const act_t *)x, mean, rstd, w, rows, C));
}

/* ------------------------------------------------------------------ attention layout */

template <typename T>
static __global__ void permute_kernel(T *dst, const T *src, const float *bias, int B, int Tn, int NH,
                                      int hs, int nparts)
{
    /* 32-bit index arithmetic: the plan keeps every buffer below 2^31 elements */
    const unsigned C = (unsigned)(NH * hs), W = C * nparts, BTC = (unsigned)(B * Tn) * C;
    const unsigned uhs = (unsigned)hs, uT = (unsigned)Tn, uNH = (unsigned)NH;
    GRID_STRIDE(i, (size_t)B * Tn * W) {
        const unsigned ui = (unsigned)i, bt = ui / W, j = ui % W;
        const unsigned part = j / C, cc = j % C, h = cc / uhs, d = cc % uhs, b = bt / uT, t = bt % uT;
        float v = ld(src[i]) + (bias ? bias[j] : 0.0f);
        dst[part * BTC + ((b * uNH + h) * uT + t) * uhs + d] = st<T>(v);
    }
}

template <typename T>
static __global__ void unpermute_kernel(T *dst, const T *src, int B, int Tn, int NH, int hs, int nparts)
{
    const unsigned C = (unsigned)(NH * hs), W = C * nparts, BTC = (unsigned)(B * Tn) * C;
    const unsigned uhs = (unsigned)hs, uT = (unsigned)Tn, uNH = (unsigned)NH;
    GRID_STRIDE(i, (size_t)B * Tn * W) {
        const unsigned ui = (unsigned)i, bt = ui / W, j = ui % W;
        const unsigned part = j / C, cc = j % C, h = cc / uhs, d = cc % uhs, b = bt / uT, t = bt % uT;
        dst[i] = src[part * BTC + ((b * uNH + h) * uT + t) * uhs + d];
    }
}

extern "C" int accel_gk_permute(int dt, void *dst, const void *src, const float *bias, int B, int T,
                                int NH, int hs, int nparts, accel_stream_t s)
{
    size_t n = (size_t)B * T * NH * hs * nparts;
    DISPATCH(dt, permute_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)dst, (const act_t *)src, bias, B, T, NH, hs, nparts));
}

extern "C" int accel_gk_unpermute(int dt, void *dst, const void *src, int B, int T, int NH, int hs,
                                  int nparts, accel_stream_t s)
{
    size_t n = (size_t)B * T * NH * hs * nparts;
    DISPATCH(dt, unpermute_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)dst, (const act_t *)src, B, T, NH, hs, nparts));
}

/* ------------------------------------------------------------------ causal softmax */

/* The first key score row r (query t = r % Tn of sample r / (heads Tn)) attends to: 0, or with
 * packed documents the first token of its document. */
static __device__ __forceinline__ int key_start(const int32_t *pos, size_t r, int Tn, int heads)
{
    const int t = (int)(r % Tn);
    return pos ? t - pos[r / ((size_t)heads * Tn) * Tn + t] : 0;
}

template <typename T>
static __global__ void softmax_forward_kernel(T *P, const float *S, int rows, int Tn, const int32_t *pos,
                                              int heads)
{
    const int lane = threadIdx.x % 32;
    for (size_t r = blockIdx.x * (size_t)WARPS + threadIdx.x / 32; r < (size_t)rows;
         r += (size_t)gridDim.x * WARPS) {
        const int t = (int)(r % Tn), k0 = key_start(pos, r, Tn, heads);
        const float *srow = S + r * Tn;
        T *prow = P + r * Tn;
        float mx = -INFINITY;
        for (int j = k0 + lane; j <= t; j += 32) mx = fmaxf(mx, srow[j]);
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int j = k0 + lane; j <= t; j += 32) sum += expf(srow[j] - mx);
        const float inv = 1.0f / warp_sum(sum);
        for (int j = lane; j < Tn; j += 32)
            prow[j] = st<T>(j >= k0 && j <= t ? expf(srow[j] - mx) * inv : 0.0f);
    }
}

template <typename T>
static __global__ void softmax_backward_kernel(T *dS, const T *P, const float *dP, int rows, int Tn,
                                               const int32_t *pos, int heads)
{
    const int lane = threadIdx.x % 32;
    for (size_t r = blockIdx.x * (size_t)WARPS + threadIdx.x / 32; r < (size_t)rows;
         r += (size_t)gridDim.x * WARPS) {
        const int t = (int)(r % Tn), k0 = key_start(pos, r, Tn, heads);
        const T *prow = P + r * Tn;
        const float *dprow = dP + r * Tn;
        T *dsrow = dS + r * Tn;
        float dot = 0.0f;
        for (int j = k0 + lane; j <= t; j += 32) dot += ld(prow[j]) * dprow[j];
        dot = warp_sum(dot);
        for (int j = lane; j < Tn; j += 32)
            dsrow[j] = st<T>(j >= k0 && j <= t ? ld(prow[j]) * (dprow[j] - dot) : 0.0f);
    }
}

extern "C" int accel_gk_softmax_forward(int dt, void *P, const float *S, int rows, int T, const int32_t *pos,
                                        int heads, accel_stream_t s)
{
    if (pos && heads <= 0) return (int)cudaErrorInvalidValue;
    DISPATCH(dt, softmax_forward_kernel<act_t><<<row_grid((size_t)rows), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)P, S, rows, T, pos, heads));
}

extern "C" int accel_gk_softmax_backward(int dt, void *dS, const void *P, const float *dP, int rows, int T,
                                         const int32_t *pos, int heads, accel_stream_t s)
{
    if (pos && heads <= 0) return (int)cudaErrorInvalidValue;
    DISPATCH(dt, softmax_backward_kernel<act_t><<<row_grid((size_t)rows), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)dS, (const act_t *)P, dP, rows, T, pos, heads));
}

/* ------------------------------------------------------------------ MLP */

static __device__ __forceinline__ float gelu(float v)
{
    return 0.5f * v * (1.0f + tanhf(GELU_K * (v + GELU_A * v * v * v)));
}

static __device__ __forceinline__ float gelu_grad(float v)
{
    float t = tanhf(GELU_K * (v + GELU_A * v * v * v));
    return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_A * v * v);
}

template <typename T>
static __global__ void bias_gelu_forward_kernel(T *fch, T *out, const float *bias, size_t n, int C4)
{
    GRID_STRIDE(i, n) {
        T v = st<T>(ld(fch[i]) + bias[(unsigned)i % (unsigned)C4]);
        fch[i] = v;
        out[i] = st<T>(gelu(ld(v)));
    }
}

template <typename T>
static __global__ void gelu_backward_kernel(T *d, const T *fch, size_t n)
{
    GRID_STRIDE(i, n) d[i] = st<T>(ld(d[i]) * gelu_grad(ld(fch[i])));
}

extern "C" int accel_gk_bias_gelu_forward(int dt, void *fch, void *out, const float *bias, size_t n, int C4,
                                          accel_stream_t s)
{
    DISPATCH(dt, bias_gelu_forward_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)fch, (act_t *)out, bias, n, C4));
}

extern "C" int accel_gk_gelu_backward(int dt, void *d, const void *fch, size_t n, accel_stream_t s)
{
    DISPATCH(dt, gelu_backward_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)d, (const act_t *)fch, n));
}

/* ------------------------------------------------------------------ bias gradients */

/* Block (32, 8): 32 columns, rows split over threadIdx.y and gridDim.y; one atomic per column per
 * block. */
template <typename T>
static __global__ void colsum_kernel(float *db, const T *d, int rows, int cols)
{
    __shared__ float part[8][33];
    const int col = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (col < cols)
        for (size_t r = blockIdx.y * 8 + threadIdx.y; r < (size_t)rows; r += (size_t)gridDim.y * 8)
            acc += ld(d[r * cols + col]);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
        float total = 0.0f;
        for (int k = 0; k < 8; k++) total += part[k][threadIdx.x];
        atomicAdd(&db[col], total);
    }
}

extern "C" int accel_gk_colsum_add(int dt, float *db, const void *d, int rows, int cols, accel_stream_t s)
{
    dim3 block(32, 8);
    dim3 g((unsigned)((cols + 31) / 32), accel_gpt_cuda_grid((size_t)rows, 8 * 16, 64));
    DISPATCH(dt, colsum_kernel<act_t><<<g, block, 0, (cudaStream_t)s>>>(db, (const act_t *)d, rows, cols));
}

/* ------------------------------------------------------------------ classifier */

/* Merge the running (max, sum of exp(x - max)) pair (m2, s2) into (m, s). */
static __device__ __forceinline__ void lse_merge(float &m, float &s, float m2, float s2)
{
    if (m2 == -INFINITY) return;
    if (m == -INFINITY) { m = m2; s = s2; return; }
    float mx = fmaxf(m, m2);
    s = s * expf(m - mx) + s2 * expf(m2 - mx);
    m = mx;
}

/* One block per row: one read for the log-sum-exp (online), one read+write for the gradient. */
template <typename T>
static __global__ void classifier_kernel(T *logits, float *losses, const int32_t *tok, int stride,
                                         int Tn, int V, int Vp, float dscale, int write_grad)
{
    __shared__ float sm[WARPS], ss[WARPS];
    const size_t row = blockIdx.x;
    const int b = (int)(row / Tn), t = (int)(row % Tn);
    const int y = tok[(size_t)b * stride + t + 1];
    T *z = logits + row * Vp;
    if (y < 0) {                        /* not trained: no loss, no gradient */
        if (threadIdx.x == 0) losses[row] = 0.0f;
        if (write_grad)
            for (int j = threadIdx.x; j < V; j += blockDim.x) z[j] = st<T>(0.0f);
        return;
    }
    const float zy = ld(z[y]);           /* read by every thread before anyone overwrites it */
    float m = -INFINITY, s = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float v = ld(z[j]);
        if (v > m) {
            s = (m == -INFINITY ? 0.0f : s * expf(m - v)) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        lse_merge(m, s, m2, s2);
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    m = sm[0];
    s = ss[0];
    for (int w = 1; w < WARPS; w++) lse_merge(m, s, sm[w], ss[w]);
    const float lse = m + logf(s);
    if (threadIdx.x == 0) losses[row] = lse - zy;
    if (!write_grad) return;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float p = expf(ld(z[j]) - lse);
        z[j] = st<T>(dscale * (p - (j == y ? 1.0f : 0.0f)));
    }
}

extern "C" int accel_gk_classifier(int dt, void *logits, float *losses, const int32_t *tok, int stride,
                                   int B, int T, int V, int Vp, float dscale, int write_grad,
                                   accel_stream_t s)
{
    DISPATCH(dt, classifier_kernel<act_t><<<(unsigned)(B * T), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)logits, losses, tok, stride, T, V, Vp, dscale, write_grad));
}

/* ------------------------------------------------------------------ optimizer */

template <typename T>
static __global__ void adamw_kernel(float *p, T *lp, const float *g, float *m, float *v,
                                    const unsigned char *decay, size_t n, float mul, float b1, float b2,
                                    float eps, float step_size, float inv_sqrt_bc2, float lr_wd)
{
    GRID_STRIDE(i, n) {
        float gi = g[i] * mul;
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) * inv_sqrt_bc2 + eps;
        float pi = p[i];
        pi -= step_size * mi / denom + (float)decay[i] * lr_wd * pi;
        p[i] = pi;
        if (lp) lp[i] = st<T>(pi);
    }
}

template <typename T>
static __global__ void sgd_kernel(float *p, T *lp, const float *g, float *buf, const unsigned char *decay,
                                  size_t n, float mul, float lr, float wd, float mu)
{
    GRID_STRIDE(i, n) {
        float pi = p[i];
        float gi = g[i] * mul + (float)decay[i] * wd * pi;
        float bi = mu * buf[i] + gi;
        buf[i] = bi;
        pi -= lr * bi;
        p[i] = pi;
        if (lp) lp[i] = st<T>(pi);
    }
}

extern "C" int accel_gk_adamw(int dt, float *p, void *lp, const float *g, float *m, float *v,
                              const unsigned char *decay, size_t n, float grad_mul, float beta1,
                              float beta2, float eps, float step_size, float inv_sqrt_bc2, float lr_wd,
                              accel_stream_t s)
{
    DISPATCH(dt, adamw_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     p, (act_t *)lp, g, m, v, decay, n, grad_mul, beta1, beta2, eps, step_size,
                     inv_sqrt_bc2, lr_wd));
}

extern "C" int accel_gk_sgd(int dt, float *p, void *lp, const float *g, float *buf,
                            const unsigned char *decay, size_t n, float grad_mul, float lr, float wd,
                            float momentum, accel_stream_t s)
{
    DISPATCH(dt, sgd_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     p, (act_t *)lp, g, buf, decay, n, grad_mul, lr, wd, momentum));
}

/* ------------------------------------------------------------------ norms and casts */

static __global__ void sumsq_kernel(const float *g, size_t n, double *out)
{
    __shared__ float part[WARPS];
    float acc = 0.0f;
    GRID_STRIDE(i, n) acc += g[i] * g[i];
    acc = warp_sum(acc);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0.0;
        for (int w = 0; w < WARPS; w++) total += (double)part[w];
        atomicAdd(out, total);
    }
}

extern "C" int accel_gk_sumsq(const float *g, size_t n, double *out, accel_stream_t s)
{
    sumsq_kernel<<<accel_gpt_cuda_grid(n, BLOCK, 4096), BLOCK, 0, (cudaStream_t)s>>>(g, n, out);
    return (int)cudaGetLastError();
}

static __global__ void add_kernel(float *y, const float *x, size_t n)
{
    GRID_STRIDE(i, n) y[i] += x[i];
}

extern "C" int accel_gk_add(float *y, const float *x, size_t n, accel_stream_t s)
{
    add_kernel<<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(y, x, n);
    return (int)cudaGetLastError();
}

template <typename T>
static __global__ void cast_kernel(T *out, const float *in, size_t n)
{
    GRID_STRIDE(i, n) out[i] = st<T>(in[i]);
}

extern "C" int accel_gk_cast(int dt, void *out, const float *in, size_t n, accel_stream_t s)
{
    DISPATCH(dt, cast_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>((act_t *)out, in, n));
}
