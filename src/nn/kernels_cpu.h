/* Fused single-threaded CPU kernels for the built-in models (private to libaccel): LayerNorm,
 * GELU, softmax, bias and residual adds, column sums, and fp32 <-> bf16/fp16 operand conversion.
 * Every kernel is deterministic: reductions use a fixed number of partial sums combined in a fixed
 * order, so the result does not depend on which SIMD width the CPU offers. */
#ifndef ACCEL_NN_KERNELS_CPU_H
#define ACCEL_NN_KERNELS_CPU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define ACCEL_LN_EPS 1e-5f                 /* GPT-2's LayerNorm epsilon */

/* sum_j a[j] b[j] in 16 partial sums added in a fixed order, inlined into the recurrent mixers'
 * hot loops (gated_delta.c, mamba2.c): the loop vectorises in the calling clone and its result
 * does not depend on the vector width (accel_cpu_dot below is a call, summed as a tree). */
static inline float accel_cpu_dot_lanes(const float *a, const float *b, int n)
{
    enum { LANES = 16 };
    float part[LANES] = { 0 }, s = 0;
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) part[l] += a[j + l] * b[j + l];
    for (; j < n; j++) s += a[j] * b[j];
    for (int l = 0; l < LANES; l++) s += part[l];
    return s;
}

static inline float accel_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float accel_softplusf(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* A hot loop's function built for AVX-512, AVX2 and the baseline, the best picked at load time;
 * the files using it compile at -O3 without FP-trap semantics (their pragma). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ACCEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ACCEL_CLONES
#endif

/* y[r, :] = b (+ res[r, :] when res is not NULL), for rows x cols. */
void accel_cpu_bias_rows(float *y, const float *b, const float *res, size_t rows, int cols);
/* db[:] += sum over rows of dy[r, :]. */
void accel_cpu_colsum_add(float *db, const float *dy, size_t rows, int cols);

/* LayerNorm over the last dimension C: out = (x - mean) * rstd * w + b (b may be NULL: none),
 * rstd = 1 / sqrt(var + eps); mean and rstd per row. */
void accel_cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                                 const float *w, const float *b, size_t rows, int C, float eps);
/* Backward: dx += ..., dw += ..., db += ... (db NULL: no bias) from dout and the forward's input,
 * mean and rstd. dx, dw and db must not overlap each other or the inputs. */
void accel_cpu_layernorm_backward(float *restrict dx, float *restrict dw, float *restrict db,
                                  const float *dout, const float *x, const float *mean,
                                  const float *rstd, const float *w, size_t rows, int C);

/* RMSNorm over the last dimension C (Llama): out = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps)
 * per row, kept for the backward pass. */
void accel_cpu_rmsnorm_forward(float *out, float *rstd, const float *x, const float *w, size_t rows,
                               int C, float eps);
/* Backward: dx += rstd (g - x rstd^2 mean(g x)) with g = dout w, and dw += dout x rstd (dw NULL:
 * weights without a gradient). dx and dw must not overlap each other or the inputs. */
void accel_cpu_rmsnorm_backward(float *restrict dx, float *restrict dw, const float *dout,
                                const float *x, const float *rstd, const float *w, size_t rows,
                                int C);

/* Rotary position embedding, the rotate-half convention of Hugging Face's Llama: in every head
 * (nheads heads of hs values, head h at columns h*hs of each row, row stride ld), the pair
 * (x[i], x[i + hs/2]) of a row at position p turns by the angle whose cosine and sine are
 * cos[p * hs/2 + i] and sin[p * hs/2 + i]. Row r sits at position (pos0 + r) % period (rows of
 * whole sequences: period = the sequence length). inverse turns the other way (the backward pass:
 * the rotation's transpose). In place. */
void accel_cpu_rope(float *x, size_t rows, size_t ld, int nheads, int hs, const float *cos,
                    const float *sin, int period, int pos0, int inverse);

/* SwiGLU (Llama's MLP): gu holds rows of [gate | up] (2F values), h = silu(gate) * up ([rows, F]).
 * Backward: dgu = [dh * up * silu'(gate) | dh * silu(gate)] (overwritten). */
void accel_cpu_swiglu_forward(float *h, const float *gu, size_t rows, int F);
void accel_cpu_swiglu_backward(float *dgu, const float *dh, const float *gu, size_t rows, int F);
/* GeGLU (Gemma): the same with the tanh GELU for silu, h = gelu(g) * u; its backward alike. */
void accel_cpu_geglu_forward(float *h, const float *gu, size_t rows, int F);
void accel_cpu_geglu_backward(float *dgu, const float *dh, const float *gu, size_t rows, int F);

/* A gated MLP's activation (model.activation): silu (SwiGLU), gelu_tanh (GeGLU), or gpt-oss's
 * clamped SwiGLU, h = (u' + 1) g' sigmoid(alpha g') with g' = min(g, limit) and u' = u clamped to
 * [-limit, limit] (no gradient through a clamped value, as torch's clamp). */
typedef enum { ACCEL_GLU_SILU = 0, ACCEL_GLU_GELU_TANH, ACCEL_GLU_CLAMPED } accel_glu_kind_t;
typedef struct {
    accel_glu_kind_t kind;
    float alpha, limit;             /* ACCEL_GLU_CLAMPED's */
} accel_glu_t;

/* h = act(gate) * up over rows of [gate | up], and its backward, as the kernels above. */
void accel_cpu_glu_forward(const accel_glu_t *act, float *h, const float *gu, size_t rows, int F);
void accel_cpu_glu_backward(const accel_glu_t *act, float *dgu, const float *dh, const float *gu,
                            size_t rows, int F);

/* A plain MLP's activation (GPT-2's, model.mlp=plain) over rows x cols: with v = x[r][c] + bias[c]
 * (bias may be NULL), out = act(v), and x[r][c] becomes act'(v), all the backward pass needs: one
 * pass over the product's output, and no tanh in the backward pass. gelu_tanh: 0.5 v (1 +
 * tanh(sqrt(2/pi) (v + 0.044715 v^3))) (GPT-2, StarCoder2); relu2: max(v, 0)^2 (Nemotron, Arcee);
 * gelu: the exact v Phi(v) = 0.5 v (1 + erf(v / sqrt(2))) (GPT-NeoX). */
typedef enum { ACCEL_ACT_GELU_TANH = 0, ACCEL_ACT_RELU2, ACCEL_ACT_GELU } accel_act_kind_t;
void accel_cpu_bias_act_forward(accel_act_kind_t act, float *x, float *out, const float *bias, size_t rows,
                                int cols);
/* In place: d[r][c] *= deriv[r][c] (the derivative left by the forward pass), and dbias[c] (when
 * not NULL) += the column sums of the new d (rows in order, as accel_cpu_colsum_add): the bias
 * gradient without another pass over d. */
void accel_cpu_act_backward(float *d, const float *deriv, float *dbias, size_t rows, int cols);

/* xIELU (Apertus's plain MLP, arXiv 2411.13010): with v = x + bias (bias may be NULL),
 *     out = v > 0 ? ap v^2 + beta v : (expm1(min(v, eps)) - v) an + beta v,
 * ap = softplus(alpha_p), an = beta + softplus(alpha_n) (alpha_p, alpha_n: the trained raw values,
 * as transformers' XIELUActivation keeps them; beta, eps: its fixed buffers). Unlike the kinds
 * above, x keeps v: the backward pass needs it for the alphas' gradients. */
typedef struct {
    float alpha_p, alpha_n, beta, eps;  /* raw alpha_p, alpha_n; beta, eps */
} accel_xielu_t;
void accel_cpu_xielu_forward(const accel_xielu_t *p, float *x, float *out, const float *bias, size_t rows, int cols);
/* In place: d[r][c] *= out'(v[r][c]) (v as the forward pass left it in x); dbias (when not NULL)
 * += the column sums of the new d; *dalpha_p, *dalpha_n += the raw alphas' gradients. */
void accel_cpu_xielu_backward(const accel_xielu_t *p, float *d, const float *x, float *dbias, float *dalpha_p,
                              float *dalpha_n, size_t rows, int cols);

/* Softmax of z[0..n-1] into p (p may equal z); returns log(sum(exp(z))). */
float accel_cpu_softmax(float *p, const float *z, int n);
/* p = exp(z - lse) for n values (p may equal z): a softmax row again from its log-sum-exp lse,
 * as accel_cpu_softmax returned it. */
void accel_cpu_softmax_from_lse(float *p, const float *z, int n, float lse);
/* Softmax backward for one row: ds = p * (dp - sum(p * dp)) * scale (ds may equal dp). */
void accel_cpu_softmax_backward(float *ds, const float *p, const float *dp, int n, float scale);
/* sum(x[i] * y[i]) with fixed-order partial sums. */
float accel_cpu_dot(const float *x, const float *y, int n);
/* exp for many values (vectorised polynomial, about 2 ulp). */
void accel_cpu_exp(float *y, const float *x, size_t n);

/* Pack a rows x cols block with leading dimension ld into dst (leading dimension cols),
 * rounding to bf16 (round to nearest even; accel_cpu_pack_bf16 flushes denormals to zero on CPUs
 * with AVX512-BF16, as their conversion instruction does) or to the nearest fp16 value kept as
 * fp32. */
void accel_cpu_pack_bf16(uint16_t *dst, const float *src, size_t rows, size_t cols, size_t ld);
void accel_cpu_pack_bf16_round(float *dst, const float *src, size_t rows, size_t cols, size_t ld);
void accel_cpu_pack_f16_round(float *dst, const float *src, size_t rows, size_t cols, size_t ld);
/* dst[c * rows + r] = src[r * ld + c]: a rows x cols block transposed into a dense cols x rows. */
void accel_cpu_transpose(float *dst, const float *src, size_t rows, size_t cols, size_t ld);

#endif
