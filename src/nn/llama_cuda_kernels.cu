/* CUDA kernels of the Llama layers (contracts in llama_cuda_kernels.h): RMSNorm fused with the
 * residual add, rotary position embedding on the per-head layout, the grouped-query attention
 * permutes, and SwiGLU. The attention products and softmax are cuBLAS and gpt_cuda_kernels.cu's.
 *
 * Same conventions as gpt_cuda_kernels.cu: templated on the activation type (float, bf16, fp16),
 * fp32 arithmetic, one rounding per stored value, one warp per row for row kernels, grid-stride
 * loops with 32-bit index arithmetic for element-wise ones (the launchers refuse n >= 2^32). The
 * arithmetic follows src/nn/kernels_cpu.c term by term, so fp32 results differ from the CPU's only
 * by the order of the row sums and by exp. */
#include <math.h>
#include <stdint.h>

#include "llama_cuda_kernels.h"

#include "cuda_common.cuh"

#define RMS_SHARED_MAX 12288        /* C floats of dw partials in 48 KiB of shared memory */

/* ------------------------------------------------------------------ RMSNorm */

/* One warp per row. With y: the residual sum is rounded and stored first and the statistics are
 * taken of the stored values (what the backward pass sees); each lane reads back only what it
 * wrote. */
template <typename T>
static __global__ void rmsnorm_forward_kernel(T *out, float *rstd, T *res_out, const T *res_in,
                                              const T *y, const float *bias, const float *w,
                                              int rows, int C, float eps)
{
    const int lane = threadIdx.x % 32;
    for (size_t r = blockIdx.x * (size_t)WARPS + threadIdx.x / 32; r < (size_t)rows;
         r += (size_t)gridDim.x * WARPS) {
        const T *x = res_in + r * C;
        float ss = 0.0f;
        if (y) {
            const T *yr = y + r * C;
            T *ro = res_out + r * C;
            for (int c = lane; c < C; c += 32) {
                T v = st<T>(ld(x[c]) + ld(yr[c]) + (bias ? bias[c] : 0.0f));
                ro[c] = v;
                ss += ld(v) * ld(v);
            }
            x = ro;
        } else {
            for (int c = lane; c < C; c += 32) {
                float v = ld(x[c]);
                ss += v * v;
            }
        }
        const float s = 1.0f / sqrtf(warp_sum(ss) / (float)C + eps);
        T *o = out + r * C;
        for (int c = lane; c < C; c += 32) o[c] = st<T>(ld(x[c]) * s * w[c]);
        if (lane == 0) rstd[r] = s;
    }
}

/* One warp per row. dw partials go to shared memory and once per block to dw (C <=
 * RMS_SHARED_MAX), or straight to dw with global atomics for wider rows. */
template <typename T>
static __global__ void rmsnorm_backward_kernel(T *dx, float *dw, const T *dout, const T *x,
                                               const float *rstd, const float *w, int rows, int C,
                                               int shared_dw)
{
    extern __shared__ float sdw[];
    float *acc = shared_dw ? sdw : dw;
    if (shared_dw) {
        for (int c = threadIdx.x; c < C; c += blockDim.x) sdw[c] = 0.0f;
        __syncthreads();
    }
    const int lane = threadIdx.x % 32;
    for (size_t r = blockIdx.x * (size_t)WARPS + threadIdx.x / 32; r < (size_t)rows;
         r += (size_t)gridDim.x * WARPS) {
        const T *xr = x + r * C, *d = dout + r * C;
        T *dxr = dx + r * C;
        const float s = rstd[r];
        float a = 0.0f;
        for (int c = lane; c < C; c += 32) a += ld(d[c]) * w[c] * ld(xr[c]);
        const float k3 = warp_sum(a) / (float)C * s * s * s;
        for (int c = lane; c < C; c += 32) {
            const float dc = ld(d[c]), xc = ld(xr[c]);
            atomicAdd(&acc[c], dc * xc * s);
            dxr[c] = st<T>(ld(dxr[c]) + (s * dc * w[c] - k3 * xc));
        }
    }
    if (shared_dw) {
        __syncthreads();
        for (int c = threadIdx.x; c < C; c += blockDim.x) atomicAdd(&dw[c], sdw[c]);
    }
}

extern "C" int accel_gk_rmsnorm_forward(int dt, void *out, float *rstd, void *res_out,
                                        const void *res_in, const void *y, const float *bias,
                                        const float *w, int rows, int C, float eps, accel_stream_t s)
{
    DISPATCH(dt, rmsnorm_forward_kernel<act_t><<<row_grid((size_t)rows), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)out, rstd, (act_t *)res_out, (const act_t *)res_in, (const act_t *)y,
                     bias, w, rows, C, eps));
}

extern "C" int accel_gk_rmsnorm_backward(int dt, void *dx, float *dw, const void *dout, const void *x,
                                         const float *rstd, const float *w, int rows, int C,
                                         accel_stream_t s)
{
    const int shared_dw = C <= RMS_SHARED_MAX;
    /* Fewer, fuller blocks: each adds its C partial sums to dw once. */
    unsigned blocks = accel_gpt_cuda_grid((size_t)rows, WARPS * 8, 1024);
    size_t shmem = shared_dw ? sizeof(float) * (size_t)C : 0;
    DISPATCH(dt, rmsnorm_backward_kernel<act_t><<<blocks, BLOCK, shmem, (cudaStream_t)s>>>(
                     (act_t *)dx, dw, (const act_t *)dout, (const act_t *)x, rstd, w, rows, C,
                     shared_dw));
}

/* ------------------------------------------------------------------ RoPE */

/* One thread per pair (x[i], x[i + half]) of a row; n = rows * half pairs. */
template <typename T>
static __global__ void rope_kernel(T *x, const float *cos, const float *sin, size_t n, unsigned Tn,
                                   unsigned half, unsigned pos0, const int32_t *pos, unsigned nheads,
                                   float sign)
{
    GRID_STRIDE(i, n) {
        const unsigned ui = (unsigned)i, row = ui / half, k = ui % half, t = row % Tn;
        const unsigned at = pos ? (unsigned)pos[row / (nheads * Tn) * Tn + t] : pos0 + t;
        const size_t p = (size_t)at * half + k;
        T *a = x + (size_t)row * 2 * half + k;
        const float c = cos[p], sn = sign * sin[p], x1 = ld(a[0]), x2 = ld(a[half]);
        a[0] = st<T>(x1 * c - x2 * sn);
        a[half] = st<T>(x2 * c + x1 * sn);
    }
}

extern "C" int accel_gk_rope(int dt, void *x, const float *cos, const float *sin, int B, int nheads,
                             int T, int hs, int pos0, const int32_t *pos, int inverse, accel_stream_t s)
{
    if (hs <= 0 || hs % 2 || pos0 < 0 || (pos && pos0)) return (int)cudaErrorInvalidValue;
    const size_t n = (size_t)B * nheads * T * (hs / 2);
    CHECK_N(n);
    DISPATCH(dt, rope_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)x, cos, sin, n, (unsigned)T, (unsigned)(hs / 2), (unsigned)pos0, pos,
                     (unsigned)nheads, inverse ? -1.0f : 1.0f));
}

/* ------------------------------------------------------------------ GQA layout */

/* Column j of qkv row (b, t): which of q (0), k (1), v (2) holds it, and where. */
static __device__ __forceinline__ unsigned gqa_place(unsigned b, unsigned t, unsigned j, unsigned Tn,
                                                     unsigned NH, unsigned KVH, unsigned hs, int *part)
{
    unsigned h = j / hs, nh = NH;
    *part = 0;
    if (h >= NH) {
        h -= NH;
        nh = KVH;
        *part = 1;
        if (h >= KVH) {
            h -= KVH;
            *part = 2;
        }
    }
    return ((b * nh + h) * Tn + t) * hs + j % hs;
}

/* Reads the rows in order (coalesced), writes runs of hs. */
template <typename T>
static __global__ void permute_gqa_kernel(T *q, T *k, T *v, const T *src, const float *bias, size_t n,
                                          unsigned W, unsigned Tn, unsigned NH, unsigned KVH, unsigned hs)
{
    GRID_STRIDE(i, n) {
        const unsigned ui = (unsigned)i, bt = ui / W, j = ui % W;
        int part;
        const unsigned o = gqa_place(bt / Tn, bt % Tn, j, Tn, NH, KVH, hs, &part);
        T *dst = part == 0 ? q : part == 1 ? k : v;
        dst[o] = st<T>(ld(src[i]) + (bias ? bias[j] : 0.0f));
    }
}

template <typename T>
static __global__ void unpermute_gqa_kernel(T *dst, const T *q, const T *k, const T *v, size_t n,
                                            unsigned W, unsigned Tn, unsigned NH, unsigned KVH, unsigned hs)
{
    GRID_STRIDE(i, n) {
        const unsigned ui = (unsigned)i, bt = ui / W, j = ui % W;
        int part;
        const unsigned o = gqa_place(bt / Tn, bt % Tn, j, Tn, NH, KVH, hs, &part);
        dst[i] = (part == 0 ? q : part == 1 ? k : v)[o];
    }
}

extern "C" int accel_gk_permute_gqa(int dt, void *q, void *k, void *v, const void *src,
                                    const float *bias, int B, int T, int NH, int KVH, int hs,
                                    accel_stream_t s)
{
    if (KVH <= 0 || NH % KVH) return (int)cudaErrorInvalidValue;
    const unsigned W = (unsigned)((NH + 2 * KVH) * hs);
    const size_t n = (size_t)B * T * W;
    CHECK_N(n);
    DISPATCH(dt, permute_gqa_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)q, (act_t *)k, (act_t *)v, (const act_t *)src, bias, n, W, (unsigned)T,
                     (unsigned)NH, (unsigned)KVH, (unsigned)hs));
}

extern "C" int accel_gk_unpermute_gqa(int dt, void *dst, const void *q, const void *k, const void *v,
                                      int B, int T, int NH, int KVH, int hs, accel_stream_t s)
{
    if (KVH <= 0 || NH % KVH) return (int)cudaErrorInvalidValue;
    const unsigned W = (unsigned)((NH + 2 * KVH) * hs);
    const size_t n = (size_t)B * T * W;
    CHECK_N(n);
    DISPATCH(dt, unpermute_gqa_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)dst, (const act_t *)q, (const act_t *)k, (const act_t *)v, n, W,
                     (unsigned)T, (unsigned)NH, (unsigned)KVH, (unsigned)hs));
}

/* ------------------------------------------------------------------ SwiGLU */

static __device__ __forceinline__ float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

template <typename T>
static __global__ void swiglu_forward_kernel(T *h, const T *gu, size_t n, unsigned F)
{
    GRID_STRIDE(i, n) {
        const unsigned ui = (unsigned)i;
        const T *g = gu + (size_t)(ui / F) * 2 * F + ui % F;
        const float gv = ld(g[0]), uv = ld(g[F]);
        h[i] = st<T>(gv * sigmoid(gv) * uv);
    }
}

template <typename T>
static __global__ void swiglu_backward_kernel(T *dgu, const T *dh, const T *gu, size_t n, unsigned F)
{
    GRID_STRIDE(i, n) {
        const unsigned ui = (unsigned)i;
        const size_t o = (size_t)(ui / F) * 2 * F + ui % F;
        const float gv = ld(gu[o]), uv = ld(gu[o + F]), d = ld(dh[i]), sg = sigmoid(gv);
        dgu[o] = st<T>(d * uv * sg * (1.0f + gv * (1.0f - sg)));
        dgu[o + F] = st<T>(d * (gv * sg));
    }
}

extern "C" int accel_gk_swiglu_forward(int dt, void *h, const void *gu, int rows, int F, accel_stream_t s)
{
    const size_t n = (size_t)rows * F;
    CHECK_N(n);
    DISPATCH(dt, swiglu_forward_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)h, (const act_t *)gu, n, (unsigned)F));
}

extern "C" int accel_gk_swiglu_backward(int dt, void *dgu, const void *dh, const void *gu, int rows, int F,
                                        accel_stream_t s)
{
    const size_t n = (size_t)rows * F;
    CHECK_N(n);
    DISPATCH(dt, swiglu_backward_kernel<act_t><<<grid(n), BLOCK, 0, (cudaStream_t)s>>>(
                     (act_t *)dgu, (const act_t *)dh, (const act_t *)gu, n, (unsigned)F));
}
