/* Host reference implementations of the CUDA GPT kernels (tests/gpu_mock.c built with
 * ACCEL_GPU_REF_ONLY, see tests/gpu_ref.c): the same contracts as src/nn/gpt_cuda_kernels.h, in
 * plain C, for tests/gpu_kernels_check.c to compare the device kernels with. */
#ifndef ACCEL_TESTS_GPU_REF_H
#define ACCEL_TESTS_GPU_REF_H

#include "../src/nn/gpt_cuda_kernels.h"
#include "../src/nn/llama_cuda_kernels.h"

int ref_accel_gk_encoder_forward(int dt, void *x, const int32_t *tok, int stride, const int32_t *pos,
                                 const float *wte, const float *wpe, int B, int T, int C, accel_stream_t s);
int ref_accel_gk_encoder_backward(int dt, float *dwte, float *dwpe, const void *d, const int32_t *tok,
                                  int stride, const int32_t *pos, int B, int T, int C, accel_stream_t s);
int ref_accel_gk_layernorm_forward(int dt, void *out, float *mean, float *rstd, void *res_out,
                               const void *res_in, const void *y, const float *bias, const float *w,
                               const float *b, int rows, int C, accel_stream_t s);
int ref_accel_gk_layernorm_backward(int dt, void *dx, float *dw, float *db, const void *dout,
                                const void *x, const float *mean, const float *rstd, const float *w,
                                int rows, int C, accel_stream_t s);
int ref_accel_gk_permute(int dt, void *dst, const void *src, const float *bias, int B, int T, int NH,
                     int hs, int nparts, accel_stream_t s);
int ref_accel_gk_unpermute(int dt, void *dst, const void *src, int B, int T, int NH, int hs, int nparts,
                       accel_stream_t s);
int ref_accel_gk_softmax_forward(int dt, void *P, const float *S, int rows, int T, const int32_t *pos,
                                 int heads, accel_stream_t s);
int ref_accel_gk_softmax_backward(int dt, void *dS, const void *P, const float *dP, int rows, int T,
                                  const int32_t *pos, int heads, accel_stream_t s);
int ref_accel_gk_bias_gelu_forward(int dt, void *fch, void *gelu, const float *bias, size_t n, int C4,
                               accel_stream_t s);
int ref_accel_gk_gelu_backward(int dt, void *d, const void *fch, size_t n, accel_stream_t s);
int ref_accel_gk_colsum_add(int dt, float *db, const void *d, int rows, int cols, accel_stream_t s);
int ref_accel_gk_classifier(int dt, void *logits, float *losses, const int32_t *tok, int stride, int B,
                        int T, int V, int Vp, float dscale, int write_grad, accel_stream_t s);
int ref_accel_gk_adamw(int dt, float *p, void *lp, const float *g, float *m, float *v,
                   const unsigned char *decay, size_t n, float grad_mul, float beta1, float beta2,
                   float eps, float step_size, float inv_sqrt_bc2, float lr_wd, accel_stream_t s);
int ref_accel_gk_sgd(int dt, float *p, void *lp, const float *g, float *buf,
                 const unsigned char *decay, size_t n, float grad_mul, float lr, float wd,
                 float momentum, accel_stream_t s);
int ref_accel_gk_sumsq(const float *g, size_t n, double *out, accel_stream_t s);
int ref_accel_gk_cast(int dt, void *out, const float *in, size_t n, accel_stream_t s);

/* The Llama kernels (src/nn/llama_cuda_kernels.h): the CPU model's own functions
 * (src/nn/kernels_cpu.h) on fp32 copies of the inputs, outputs rounded to the activation type once,
 * so each CUDA kernel is held to the exact CPU semantics; the GQA permutes, which have no CPU
 * counterpart, by loops over heads. */
int ref_accel_gk_rmsnorm_forward(int dt, void *out, float *rstd, void *res_out, const void *res_in,
                                 const void *y, const float *bias, const float *w, int rows, int C,
                                 float eps, accel_stream_t s);
int ref_accel_gk_rmsnorm_backward(int dt, void *dx, float *dw, const void *dout, const void *x,
                                  const float *rstd, const float *w, int rows, int C, accel_stream_t s);
int ref_accel_gk_rope(int dt, void *x, const float *cos, const float *sin, int B, int nheads, int T,
                      int hs, int pos0, const int32_t *pos, int inverse, accel_stream_t s);
int ref_accel_gk_permute_gqa(int dt, void *q, void *k, void *v, const void *src, const float *bias,
                             int B, int T, int NH, int KVH, int hs, accel_stream_t s);
int ref_accel_gk_unpermute_gqa(int dt, void *dst, const void *q, const void *k, const void *v, int B,
                               int T, int NH, int KVH, int hs, accel_stream_t s);
int ref_accel_gk_swiglu_forward(int dt, void *h, const void *gu, int rows, int F, accel_stream_t s);
int ref_accel_gk_swiglu_backward(int dt, void *dgu, const void *dh, const void *gu, int rows, int F,
                                 accel_stream_t s);

#endif
