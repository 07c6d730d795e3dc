/* Launchers of the CUDA kernels of the Llama layers (src/nn/llama_cuda_kernels.cu), callable from
 * C, in the style of gpt_cuda_kernels.h: each returns a cudaError_t as int (0 = success) and queues
 * its work on `stream`; `dt` is the accel_dtype_t of the activations (ACCEL_F32, ACCEL_BF16 or
 * ACCEL_F16); parameters, gradients, statistics and the RoPE tables are fp32; arithmetic is fp32
 * and each value is rounded once when stored. The CPU semantics they reproduce are those of
 * src/nn/kernels_cpu.h (accel_cpu_rmsnorm_*, accel_cpu_rope, accel_cpu_swiglu_*). Element-wise
 * kernels take at most 2^32 - 1 elements per call (cudaErrorInvalidValue beyond).
 *
 * Grouped-query attention (NH query heads, KVH key/value heads, G = NH / KVH query heads per kv
 * head, query head h = j*G + g reads kv head j, as Hugging Face's repeat_kv) runs on these layouts:
 *
 *   qkv rows [B*T, (NH + 2*KVH)*hs]: q head h at column h*hs, k head j at NH*hs + j*hs,
 *                                    v head j at (NH + KVH)*hs + j*hs
 *   q [B][KVH][G][T][hs]   (the same bytes as [B][NH][T][hs], since h = j*G + g)
 *   k [B][KVH][T][hs],  v [B][KVH][T][hs]
 *
 * so one strided-batched product per (b, j), batch B*KVH, needs no copy of K or V per query head
 * (row-major; scale = 1/sqrt(hs)):
 *
 *   S  = scale Q K^T    [G*T, T]   M=G*T N=T  K=hs   strides Q G*T*hs, K T*hs, S G*T*T
 *   P  = softmax(S)                accel_gk_softmax_forward with rows B*NH*T: row r is query r % T
 *   Y  = P V            [G*T, hs]  M=G*T N=hs K=T    strides P G*T*T, V T*hs, Y G*T*hs
 *   dP = dY V^T         [G*T, T]
 *   dV = P^T dY         [T, hs]    K=G*T: the sum over the group's query heads comes with the product
 *   dS = accel_gk_softmax_backward(P, dP)
 *   dQ = scale dS K     [G*T, hs]
 *   dK = scale dS^T Q   [T, hs]    K=G*T, summed over the group likewise
 *
 * Y (and dY) in [B][KVH][G][T][hs] are [B][NH][T][hs]: the existing accel_gk_unpermute(nparts 1,
 * NH heads) turns Y into the attention output rows [B*T, NH*hs] (column h*hs = query head h), and
 * accel_gk_permute(nparts 1, NH, no bias) turns dY rows back, with no GQA-specific kernel.
 * RoPE goes on q and k after the permute (accel_gk_rope with NH and KVH heads) and, inverse, on dq
 * and dk before accel_gk_unpermute_gqa. With KVH == NH this is exactly the GPT's multi-head
 * layout (accel_gk_permute with nparts 3). */
#ifndef ACCEL_LLAMA_CUDA_KERNELS_H
#define ACCEL_LLAMA_CUDA_KERNELS_H

#include "gpt_cuda_kernels.h"       /* accel_stream_t, accel_gpt_cuda_grid */

#ifdef __cplusplus
extern "C" {
#endif

/* RMSNorm over rows of C. With y == NULL: out = RMSNorm(res_in). Otherwise res_out = res_in + y
 * (+ bias when not NULL), rounded to the activation type, and out = RMSNorm(res_out), the
 * statistics taken of the rounded values. out = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps) per
 * row in fp32 (kept for the backward pass). */
int accel_gk_rmsnorm_forward(int dt, void *out, float *rstd, void *res_out, const void *res_in,
                             const void *y, const float *bias, const float *w, int rows, int C,
                             float eps, accel_stream_t s);
/* dx += rstd (g - x rstd^2 mean(g x)) with g = dout w; dw += dout x rstd (fp32 atomics). x is the
 * forward's input (res_out in the fused form). */
int accel_gk_rmsnorm_backward(int dt, void *dx, float *dw, const void *dout, const void *x,
                              const float *rstd, const float *w, int rows, int C, accel_stream_t s);

/* Rotary position embedding, in place, on B*nheads sequences of T rows of hs values ([B][nheads]
 * [T][hs]: q or k after the permute): row t of sample b is at position p = pos0 + t, or with pos
 * (packed documents: [B*T] positions in device memory, pos0 0) p = pos[b*T+t], and the pair (x[i],
 * x[i + hs/2]) turns by the angle of cos/sin[p * hs/2 + i] (the rotate-half convention of
 * accel_cpu_rope; tables [>= pos0 + T][hs/2] in fp32 device memory, any RoPE scaling already in
 * them). inverse turns the other way: the backward pass. hs even and > 0. */
int accel_gk_rope(int dt, void *x, const float *cos, const float *sin, int B, int nheads, int T,
                  int hs, int pos0, const int32_t *pos, int inverse, accel_stream_t s);

/* qkv rows [B*T, (NH + 2*KVH)*hs] (+ bias of that width, fp32, may be NULL) -> q [B][KVH][G][T][hs],
 * k [B][KVH][T][hs], v [B][KVH][T][hs] (the layouts above). NH a multiple of KVH. */
int accel_gk_permute_gqa(int dt, void *q, void *k, void *v, const void *src, const float *bias,
                         int B, int T, int NH, int KVH, int hs, accel_stream_t s);
/* The inverse (dq, dk, dv -> dqkv rows), for the backward pass. */
int accel_gk_unpermute_gqa(int dt, void *dst, const void *q, const void *k, const void *v, int B,
                           int T, int NH, int KVH, int hs, accel_stream_t s);

/* SwiGLU: gu rows [gate | up] (2F values), h = silu(gate) * up ([rows, F]). */
int accel_gk_swiglu_forward(int dt, void *h, const void *gu, int rows, int F, accel_stream_t s);
/* dgu = [dh * up * silu'(gate) | dh * silu(gate)] (overwritten, not accumulated). */
int accel_gk_swiglu_backward(int dt, void *dgu, const void *dh, const void *gu, int rows, int F,
                             accel_stream_t s);

#ifdef __cplusplus
}
#endif

#endif
