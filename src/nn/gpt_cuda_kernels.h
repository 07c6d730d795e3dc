/* Launchers of the CUDA GPT kernels (src/nn/gpt_cuda_kernels.cu), callable from C. Each returns a
 * cudaError_t as int (0 = success) and queues its work on `stream`. `dt` is the accel_dtype_t of the
 * activations (ACCEL_F32, ACCEL_BF16 or ACCEL_F16); parameters and gradients are fp32, so the
 * numerically delicate parts (LayerNorm statistics, softmax, loss, optimizer) stay in fp32. */
#ifndef ACCEL_GPT_CUDA_KERNELS_H
#define ACCEL_GPT_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void *accel_stream_t;       /* cudaStream_t */

/* the C planner's launch geometry (src/nn/gpt_cuda_plan.c) */
unsigned accel_gpt_cuda_grid(size_t n, unsigned block, unsigned max_blocks);

/* x[b,t,:] = wte[tok[b*stride+t],:] + wpe[p,:] (wpe NULL: no position embedding, the llama's),
 * p = pos[b*T+t] (packed documents: accel_batch_t.positions in device memory), or t when pos is
 * NULL */
int accel_gk_encoder_forward(int dt, void *x, const int32_t *tok, int stride, const int32_t *pos,
                             const float *wte, const float *wpe, int B, int T, int C, accel_stream_t s);
/* dwte[tok] += d, dwpe[p] += d (atomics; dwpe may be NULL; p as above) */
int accel_gk_encoder_backward(int dt, float *dwte, float *dwpe, const void *d, const int32_t *tok,
                              int stride, const int32_t *pos, int B, int T, int C, accel_stream_t s);
/* With y == NULL: out = LayerNorm(res_in). Otherwise res_out = res_in + y + bias (rounded to the
 * activation type) and out = LayerNorm(res_out). mean/rstd per row in fp32. */
int accel_gk_layernorm_forward(int dt, void *out, float *mean, float *rstd, void *res_out,
                               const void *res_in, const void *y, const float *bias, const float *w,
                               const float *b, int rows, int C, accel_stream_t s);
/* dx += LayerNorm backward; dw, db += (fp32 atomics). C <= 6144. */
int accel_gk_layernorm_backward(int dt, void *dx, float *dw, float *db, const void *dout,
                                const void *x, const float *mean, const float *rstd, const float *w,
                                int rows, int C, accel_stream_t s);
/* [B*T, nparts*C] (+ bias) -> [nparts][B][NH][T][hs] */
int accel_gk_permute(int dt, void *dst, const void *src, const float *bias, int B, int T, int NH,
                     int hs, int nparts, accel_stream_t s);
/* [nparts][B][NH][T][hs] -> [B*T, nparts*C] */
int accel_gk_unpermute(int dt, void *dst, const void *src, int B, int T, int NH, int hs, int nparts,
                       accel_stream_t s);
/* Causal softmax of `rows` rows of T fp32 scores (row r is query t = r % T): P, zero above the
 * diagonal. With pos (packed documents, [B*T] positions in device memory; rows laid out [B][heads]
 * [T]) row r of sample b = r / (heads T) covers keys t - pos[b*T+t] .. t only, zero elsewhere. */
int accel_gk_softmax_forward(int dt, void *P, const float *S, int rows, int T, const int32_t *pos,
                             int heads, accel_stream_t s);
/* dS = P * (dP - sum(P * dP)) on the keys the row attends to (as above), 0 elsewhere. */
int accel_gk_softmax_backward(int dt, void *dS, const void *P, const float *dP, int rows, int T,
                              const int32_t *pos, int heads, accel_stream_t s);
/* fch += bias (rounded), gelu = GELU_tanh(fch); n elements of rows of C4. */
int accel_gk_bias_gelu_forward(int dt, void *fch, void *gelu, const float *bias, size_t n, int C4,
                               accel_stream_t s);
/* d *= GELU'(fch) */
int accel_gk_gelu_backward(int dt, void *d, const void *fch, size_t n, accel_stream_t s);
/* db[c] += sum over rows of d[r, c] */
int accel_gk_colsum_add(int dt, float *db, const void *d, int rows, int cols, accel_stream_t s);
/* Per row (B*T rows of V logits, row stride Vp): loss = logsumexp - logit[target] into losses; with
 * write_grad the logits are replaced by dscale * (softmax - onehot(target)). Targets are
 * tok[b*stride + t + 1]; a target < 0 is not trained (a loss mask's context): loss 0 and, with
 * write_grad, a row of zeros. */
int accel_gk_classifier(int dt, void *logits, float *losses, const int32_t *tok, int stride, int B,
                        int T, int V, int Vp, float dscale, int write_grad, accel_stream_t s);
/* AdamW over n elements (CPU optimizer's arithmetic); lp (activation type, may be NULL) gets the
 * updated parameters rounded. */
int accel_gk_adamw(int dt, float *p, void *lp, const float *g, float *m, float *v,
                   const unsigned char *decay, size_t n, float grad_mul, float beta1, float beta2,
                   float eps, float step_size, float inv_sqrt_bc2, float lr_wd, accel_stream_t s);
/* SGD with momentum (CPU optimizer's arithmetic). */
int accel_gk_sgd(int dt, float *p, void *lp, const float *g, float *buf,
                 const unsigned char *decay, size_t n, float grad_mul, float lr, float wd,
                 float momentum, accel_stream_t s);
/* *out += sum of g[i]^2 (double accumulation across blocks) */
int accel_gk_sumsq(const float *g, size_t n, double *out, accel_stream_t s);
/* y[i] += x[i] (fp32): gradients accumulated across micro-batches */
int accel_gk_add(float *y, const float *x, size_t n, accel_stream_t s);
/* out = (activation type) in */
int accel_gk_cast(int dt, void *out, const float *in, size_t n, accel_stream_t s);

#ifdef __cplusplus
}
#endif

#endif
