/* Built-in GPT-2-style decoder for CPU training: token + position embeddings, L pre-LayerNorm
 * blocks (causal multi-head self-attention, GELU MLP, residual adds), a final LayerNorm and an LM
 * head tied to the token embedding, with softmax cross-entropy on next-token targets.
 *
 * The structure follows karpathy's llm.c (train_gpt2.c): every activation the backward pass needs
 * is stored once by the forward pass, matrix products go to BLAS through the precision-dispatching
 * accel_gemm_cpu (fp32, bf16 or emulated fp16 operands, fp32 accumulation), and everything else is
 * a fused single-threaded loop from kernels_cpu.c. Attention runs per (sample, head) with BLAS in
 * row blocks that skip the masked upper triangle. Buffers are allocated once and grown only when a
 * larger batch arrives. */
#include "build_config.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/model.h"
#include "gpt.h"
#include "gemm_cpu.h"
#include "kernels_cpu.h"

#define ATT_BLOCK 32                /* attention row block: the causal mask skips whole blocks */

typedef struct {                    /* tensor indices of one block */
    int ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, fcpw, fcpb;
} gpt_block_t;

typedef struct {                    /* activations of one block, stored for the backward pass */
    float *ln1, *ln1_mean, *ln1_rstd;
    float *qkv;                     /* [BT, 3C]: q | k | v, head h at columns h*hs */
    float *att;                     /* [B, NH, T, T] softmax probabilities, zero above the diagonal */
    float *atty;                    /* [BT, C] attention output before the projection */
    float *res2;                    /* [BT, C] residual after attention */
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fch_gelu;          /* [BT, 4C] fc output, then gelu' of it; GELU output */
    float *res3;                    /* [BT, C] residual after the MLP = the block's output */
} gpt_acts_t;

typedef struct {
    int L, NH, C, T, V;
    accel_dtype_t precision;
    accel_gemm_cpu_t gemm;
    accel_gemm_cpu_t gemm32;        /* fp32 products, for attention operands rounded beforehand */
    int wte, wpe, lnfw, lnfb;
    gpt_block_t *blk;
    gpt_acts_t *act;
    float *x0;                      /* [BT, C] embeddings: the residual entering block 0 */
    float *lnf, *lnf_mean, *lnf_rstd;
    float *logits;                  /* [BT, V]; overwritten by d(loss)/d(logits) in training */
    float *dres, *dc, *d3c, *d4c;   /* backward scratch: [BT, C], [BT, C], [BT, 3C], [BT, 4C] */
    float *dp;                      /* [T, T] attention backward scratch for one (sample, head) */
    float *pr;                      /* [T, T] rounded copy of one (sample, head)'s probabilities */
    float *kt;                      /* [hs, T] one (sample, head)'s keys or values, transposed */
    float *mem;
    int capacity;                   /* samples (at full context) the buffers hold */
    /* Inference (logits ops): one sequence, one set of block activations shared by every block
     * (nothing is kept for a backward pass), so the buffers do not grow with the depth. */
    gpt_acts_t iact;
    float *ix0, *ilnf, *ilnf_mean, *ilnf_rstd, *ipr, *ikt;
    float *imem;
} gpt_t;

/* Where a forward pass keeps its activations: block l uses act[l * act_step]. */
typedef struct {
    gpt_acts_t *act;
    int act_step;                   /* 1: one set per block (training), 0: one shared set */
    float *x0, *lnf, *lnf_mean, *lnf_rstd;
    float *pr;                      /* [T, T] scratch: rounded attention probabilities */
    float *kt;                      /* [hs, T] scratch: one head's keys, transposed */
} gpt_fwd_t;

#define PARAM(idx) (params + layout->tensors[(idx)].offset)
#define GRAD(idx) (grads + layout->tensors[(idx)].offset)
#define GEMM(...) ACCEL_CHECK(accel_gemm_cpu(&m->gemm, __VA_ARGS__))

static void gpt_destroy(void *state)
{
    gpt_t *m = state;
    if (!m) return;
    accel_gemm_cpu_free(&m->gemm);
    accel_gemm_cpu_free(&m->gemm32);
    free(m->mem);
    free(m->imem);
    free(m->act);
    free(m->blk);
    free(m);
}

static accel_status_t add(accel_layout_t *layout, const char *name, int ndim, int64_t d0, int64_t d1,
                          int layer, unsigned flags, float std, int *index)
{
    int64_t shape[2] = { d0, d1 };
    return accel_layout_add(layout, name, ndim, shape, layer, flags, std, index);
}

static accel_status_t validate(const accel_config_t *cfg, accel_dtype_t *precision)
{
    const accel_model_config_t *c = &cfg->model;
    if (c->layers < 1 || c->heads < 1 || c->width < 1 || c->context < 1 || c->vocab < 2) {
        ACCEL_ERROR0("gpt needs model.layers >= 1, model.heads >= 1, model.width >= 1, "
                     "model.context >= 1 and model.vocab >= 2 (got layers=%d heads=%d width=%d "
                     "context=%d vocab=%d)", c->layers, c->heads, c->width, c->context, c->vocab);
        return ACCEL_ERR_CONFIG;
    }
    if (c->width % c->heads) {
        ACCEL_ERROR0("gpt: model.width=%d is not divisible by model.heads=%d\n--> hint: choose a "
                     "width that is a multiple of the number of heads (e.g. width=%d)", c->width,
                     c->heads, (c->width / c->heads + 1) * c->heads);
        return ACCEL_ERR_CONFIG;
    }
    /* Matrix dimensions are ints for BLAS: keep every row length and per-layer count in range. */
    if (c->width > (1 << 20) || c->vocab > (1 << 26) || c->context > (1 << 20) ||
        c->layers > 100000 || (int64_t)c->width * 4 * c->width > INT_MAX) {
        ACCEL_ERROR0("gpt: model size out of range (layers=%d width=%d context=%d vocab=%d)\n"
                     "--> hint: the CPU model supports width <= 23170, context <= 1048576, "
                     "vocab <= 67108864", c->layers, c->width, c->context, c->vocab);
        return ACCEL_ERR_CONFIG;
    }
    *precision = cfg->precision_id;                 /* fp32, bf16 or fp16: checked by the config */
    return ACCEL_OK;
}

static accel_status_t gpt_create(const accel_config_t *cfg, accel_layout_t *layout, void **state)
{
    accel_dtype_t precision;
    ACCEL_CHECK(validate(cfg, &precision));
    const accel_model_config_t *c = &cfg->model;
    gpt_t *m = calloc(1, sizeof *m);
    if (!m) return ACCEL_ERR_NOMEM;
    m->L = c->layers;
    m->NH = c->heads;
    m->C = c->width;
    m->T = c->context;
    m->V = c->vocab;
    m->precision = precision;
    accel_status_t st = accel_gemm_cpu_init(&m->gemm, precision);
    if (st == ACCEL_OK) st = accel_gemm_cpu_init(&m->gemm32, ACCEL_F32);
    m->blk = calloc((size_t)m->L, sizeof *m->blk);
    m->act = calloc((size_t)m->L, sizeof *m->act);
    if (st == ACCEL_OK && (!m->blk || !m->act)) st = ACCEL_ERR_NOMEM;
    if (st != ACCEL_OK) { gpt_destroy(m); return st; }

    const int64_t C = m->C, L = m->L;
    const float std = 0.02f, res_std = (float)(0.02 / sqrt(2.0 * (double)L));
    const unsigned nd = ACCEL_TENSOR_NO_DECAY;
    /* Each layer's tensors are registered contiguously: ZeRO-3 gathers one layer at a time. */
    ACCEL_CHECK_GOTO(add(layout, "wte", 2, m->V, C, 0, 0, std, &m->wte), st, fail);
    ACCEL_CHECK_GOTO(add(layout, "wpe", 2, m->T, C, 0, 0, std, &m->wpe), st, fail);
    for (int l = 0; l < m->L; l++) {
        gpt_block_t *b = &m->blk[l];
        char name[ACCEL_TENSOR_NAME_MAX];
#define ADD(suffix, ndim, d0, d1, flags, s, idx)                                             \
        snprintf(name, sizeof name, "h.%d." suffix, l);                                     \
        ACCEL_CHECK_GOTO(add(layout, name, ndim, d0, d1, l + 1, flags, s, idx), st, fail)
        ADD("ln1.weight", 1, C, 0, nd, -1.0f, &b->ln1w);
        ADD("ln1.bias", 1, C, 0, nd, 0.0f, &b->ln1b);
        ADD("attn.qkv.weight", 2, 3 * C, C, 0, std, &b->qkvw);
        ADD("attn.qkv.bias", 1, 3 * C, 0, nd, 0.0f, &b->qkvb);
        ADD("attn.proj.weight", 2, C, C, 0, res_std, &b->projw);
        ADD("attn.proj.bias", 1, C, 0, nd, 0.0f, &b->projb);
        ADD("ln2.weight", 1, C, 0, nd, -1.0f, &b->ln2w);
        ADD("ln2.bias", 1, C, 0, nd, 0.0f, &b->ln2b);
        ADD("mlp.fc.weight", 2, 4 * C, C, 0, std, &b->fcw);
        ADD("mlp.fc.bias", 1, 4 * C, 0, nd, 0.0f, &b->fcb);
        ADD("mlp.proj.weight", 2, C, 4 * C, 0, res_std, &b->fcpw);
        ADD("mlp.proj.bias", 1, C, 0, nd, 0.0f, &b->fcpb);
#undef ADD
    }
    ACCEL_CHECK_GOTO(add(layout, "lnf.weight", 1, C, 0, m->L + 1, nd, -1.0f, &m->lnfw), st, fail);
    ACCEL_CHECK_GOTO(add(layout, "lnf.bias", 1, C, 0, m->L + 1, nd, 0.0f, &m->lnfb), st, fail);
    *state = m;
    return ACCEL_OK;
fail:
    gpt_destroy(m);
    return st;
}

/* Room for B samples at full context. One allocation, carved into 64-byte aligned pieces. */
#define PIECE(n) (((n) + 15) / 16 * 16)

/* Floats of activations and work buffers for a micro-batch of B samples (laid out by reserve). */
static size_t activation_floats(size_t L, size_t C, size_t T, size_t V, size_t NH, size_t B)
{
    const size_t BT = B * T;
    size_t per_layer = 4 * PIECE(BT * C) + PIECE(BT * 3 * C) + PIECE(B * NH * T * T) +
                       2 * PIECE(BT * 4 * C) + PIECE(BT * C) + 4 * PIECE(BT);
    return L * per_layer + 2 * PIECE(BT * C) + 2 * PIECE(BT) + PIECE(BT * V) +
           2 * PIECE(BT * C) + PIECE(BT * 3 * C) + PIECE(BT * 4 * C) + 2 * PIECE(T * T) +
           PIECE(C / NH * T);
}

static size_t gpt_activation_bytes(const accel_config_t *cfg, int micro_batch)
{
    const accel_model_config_t *c = &cfg->model;
    return sizeof(float) * activation_floats((size_t)c->layers, (size_t)c->width, (size_t)c->context,
                                             (size_t)c->vocab, (size_t)c->heads, (size_t)micro_batch);
}

/* One block's activations for B sequences of T tokens, carved from p; returns what follows. */
static float *carve_block(gpt_acts_t *a, float *p, size_t B, size_t T, size_t C, size_t NH)
{
    const size_t BT = B * T;
    float **const order[] = { &a->ln1, &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->att, &a->atty,
                              &a->res2, &a->ln2, &a->ln2_mean, &a->ln2_rstd, &a->fch, &a->fch_gelu,
                              &a->res3 };
    const size_t sizes[] = { BT * C, BT, BT, BT * 3 * C, B * NH * T * T, BT * C, BT * C, BT * C, BT,
                             BT, BT * 4 * C, BT * 4 * C, BT * C };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *order[i] = p;
        p += PIECE(sizes[i]);
    }
    return p;
}

static accel_status_t reserve(gpt_t *m, int B)
{
    if (B <= m->capacity) return ACCEL_OK;
    const size_t C = (size_t)m->C, T = (size_t)m->T, V = (size_t)m->V, NH = (size_t)m->NH;
    const size_t BT = (size_t)B * T;
    if (BT > INT_MAX / (V > 4 * C ? V : 4 * C)) {
        ACCEL_ERROR("gpt: a micro-batch of %d samples x %zu tokens is too large for one pass\n"
                    "--> hint: lower the micro-batch (raise train.grad_accum)", B, T);
        return ACCEL_ERR_INVALID;
    }
    size_t total = activation_floats((size_t)m->L, C, T, V, NH, (size_t)B);
    void *mem = NULL;
    if (posix_memalign(&mem, 64, total * sizeof(float))) {
        ACCEL_ERROR("gpt: cannot allocate %.1f MiB of activations for a micro-batch of %d samples\n"
                    "--> hint: lower the micro-batch (raise train.grad_accum)",
                    total * 4.0 / 1048576.0, B);
        return ACCEL_ERR_NOMEM;
    }
    free(m->mem);
    m->mem = mem;
    float *p = mem;
#define TAKE(ptr, n) do { (ptr) = p; p += PIECE(n); } while (0)
    for (int l = 0; l < m->L; l++) p = carve_block(&m->act[l], p, (size_t)B, T, C, NH);
    TAKE(m->x0, BT * C);
    TAKE(m->lnf, BT * C);
    TAKE(m->lnf_mean, BT);
    TAKE(m->lnf_rstd, BT);
    TAKE(m->logits, BT * V);
    TAKE(m->dres, BT * C);
    TAKE(m->dc, BT * C);
    TAKE(m->d3c, BT * 3 * C);
    TAKE(m->d4c, BT * 4 * C);
    TAKE(m->dp, T * T);
    TAKE(m->pr, T * T);
    TAKE(m->kt, C / NH * T);
#undef TAKE
    m->capacity = B;
    /* The largest pair of operands any product converts (bf16/fp16): an activation-sized and a
     * weight-sized one, or two activation-sized ones in the weight gradients. */
    size_t wide = V > 4 * C ? V : 4 * C;
    return accel_gemm_cpu_reserve(&m->gemm, BT * wide + (BT > wide ? BT : wide) * C + 2 * T * T + 64);
}

accel_status_t accel_gpt_check_tokens(const int32_t *tokens, int B, int n_per_row, int stride, int V)
{
    if (!tokens) {
        ACCEL_ERROR("gpt needs token batches, but the batch has no tokens\n--> hint: feed "
                    "accel_batch_t.tokens with rows of model.context+1 token ids");
        return ACCEL_ERR_INVALID;
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < n_per_row; t++) {
            int32_t id = tokens[(size_t)b * stride + t];
            if (id < 0 || id >= V) {
                ACCEL_ERROR("gpt: sample %d, position %d has token id %d, outside the vocabulary "
                            "0..%d\n--> hint: the data's tokenizer must match model.vocab=%d", b, t,
                            id, V - 1, V);
                return ACCEL_ERR_INVALID;
            }
        }
    return ACCEL_OK;
}

/* Attention runs one (sample, head) at a time, on its T x T lower triangle, one of two ways:
 * - where bf16 products are native, each product covers the whole head (the triangular products
 *   of gemm_cpu.h, m->gemm): the kernel packs every operand once, rounding it as it goes, and
 *   skips the masked half tile by tile;
 * - elsewhere (fp32, fp16, emulated bf16), in row blocks of ATT_BLOCK, which skip the masked half
 *   block by block. An operand would be rounded again for every block it takes part in, so every
 *   operand is rounded once, where it is made, and the products run in fp32 (m->gemm32): the same
 *   "operands rounded, fp32 accumulation" products. q, k and v are only ever product operands,
 *   so they are rounded in place (as are dY and dS in the backward pass); P also feeds the
 *   softmax backward in full precision, so its rounded copy goes to a scratch buffer. */
static bool att_native(const gpt_t *m)
{
    return m->precision == ACCEL_BF16 && accel_gemm_cpu_has_bf16();
}

#define GEMM32(...) ACCEL_CHECK(accel_gemm_cpu(&m->gemm32, __VA_ARGS__))

/* Round a rows x cols block (leading dimension ld) to the model's precision, into dst (leading
 * dimension cols; dst == src rounds in place when ld == cols), for the row-block products. */
static void round_operand(const gpt_t *m, float *dst, const float *src, size_t rows, size_t cols,
                          size_t ld)
{
    if (att_native(m)) return;                  /* the whole-head products round as they pack */
    if (m->precision == ACCEL_BF16) accel_cpu_pack_bf16_round(dst, src, rows, cols, ld);
    else if (m->precision == ACCEL_F16) accel_cpu_pack_f16_round(dst, src, rows, cols, ld);
}

/* fp32 sgemm runs the small NT products Q K^T and dY V^T well below the same blocks in NN form
 * (OpenBLAS 0.3.21, in the step: 37-58 against 50-89 GFLOP/s), so the second operand (one head's
 * keys or values) is transposed once per (sample, head) into xt ([hs, T]) and every row block
 * runs NN: S[rows x cols] = alpha * A X^T. */
static accel_status_t gemm_nt(gpt_t *m, int rows, int cols, int hs, int T, float alpha,
                              const float *A, int lda, const float *xt, float *S)
{
    return accel_gemm_cpu(&m->gemm32, false, false, rows, cols, hs, alpha, A, lda, xt, T, 0.0f, S,
                          T);
}

/* Rows r0..r1-1 of S become softmax rows over their causal prefix (row t: columns 0..t), zero
 * above the diagonal (the triangular products read P and dS as lower triangular). */
static void causal_softmax(float *S, int T, int r0, int r1)
{
    for (int t = r0; t < r1; t++) {
        float *row = S + (size_t)t * T;
        accel_cpu_softmax(row, row, t + 1);
        memset(row + t + 1, 0, sizeof(float) * (size_t)(T - t - 1));
    }
}

/* Rows r0..r1-1 of dP (in dS) become dS = softmax backward through P, zero above the diagonal
 * (unscaled: the dQ and dK products apply the 1/sqrt(hs)). */
static void causal_softmax_backward(float *dS, const float *P, int T, int r0, int r1)
{
    for (int t = r0; t < r1; t++) {
        float *row = dS + (size_t)t * T;
        accel_cpu_softmax_backward(row, P + (size_t)t * T, row, t + 1, 1.0f);
        memset(row + t + 1, 0, sizeof(float) * (size_t)(T - t - 1));
    }
}

/* Causal self-attention of one block: per (sample, head), S = Q K^T / sqrt(hs) on the lower
 * triangle, P = softmax(S) (kept in a->att for backward), Y = P V. */
static accel_status_t attention_forward(gpt_t *m, gpt_acts_t *a, const gpt_fwd_t *fw, int B,
                                        int T)
{
    const bool native = att_native(m);
    float *pr = fw->pr, *kt = fw->kt;
    const int C = m->C, NH = m->NH, hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    round_operand(m, a->qkv, a->qkv, (size_t)B * T, (size_t)C3, (size_t)C3);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *q = a->qkv + (size_t)b * T * C3 + (size_t)h * hs, *k = q + C, *v = q + 2 * C;
            float *S = a->att + ((size_t)b * NH + h) * T * T;
            float *y = a->atty + (size_t)b * T * C + (size_t)h * hs;
            if (native) {
                ACCEL_CHECK(accel_gemm_cpu_lower_nt(&m->gemm, T, hs, scale, q, C3, k, C3, S, T));
                causal_softmax(S, T, 0, T);
                ACCEL_CHECK(accel_gemm_cpu_trmm(&m->gemm, false, T, hs, 1.0f, S, T, v, C3, y, C));
                continue;
            }
            accel_cpu_transpose(kt, k, (size_t)T, (size_t)hs, (size_t)C3);
            for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {     /* rows r0..r1-1 see columns < r1 */
                int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T;
                ACCEL_CHECK(gemm_nt(m, r1 - r0, r1, hs, T, scale, q + (size_t)r0 * C3, C3, kt,
                                    S + (size_t)r0 * T));
                causal_softmax(S, T, r0, r1);
                const float *P = S + (size_t)r0 * T;
                if (m->precision != ACCEL_F32) {
                    round_operand(m, pr, P, (size_t)(r1 - r0), (size_t)r1, (size_t)T);
                    P = pr;
                }
                GEMM32(false, false, r1 - r0, hs, r1, 1.0f, P, P == pr ? r1 : T, v, C3, 0.0f,
                       y + (size_t)r0 * C, C);
            }
        }
    return ACCEL_OK;
}

/* Backward of attention_forward: dY (d->dc, [BT, C]) into d(qkv) (m->d3c, [BT, 3C], overwritten):
 * dP = dY V^T, dS = softmax backward, dQ = dS K / sqrt(hs), dV = P^T dY, dK = dS^T Q / sqrt(hs). */
static accel_status_t attention_backward(gpt_t *m, const gpt_acts_t *a, int B, int T)
{
    const bool native = att_native(m), rounded = m->precision != ACCEL_F32 && !native;
    const int C = m->C, NH = m->NH, hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    float *dS = m->dp, *vt = m->kt;
    /* dY (m->dc) is only a product operand here and is overwritten right after: round in place.
     * q, k and v were rounded in place by the forward pass. */
    round_operand(m, m->dc, m->dc, (size_t)B * T, (size_t)C, (size_t)C);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const size_t qoff = (size_t)b * T * C3 + (size_t)h * hs;
            const float *q = a->qkv + qoff, *k = q + C, *v = q + 2 * C;
            float *dq = m->d3c + qoff, *dk = dq + C, *dv = dq + 2 * C;
            const float *P = a->att + ((size_t)b * NH + h) * T * T;
            const float *dy = m->dc + (size_t)b * T * C + (size_t)h * hs;
            if (native) {
                accel_gemm_cpu_t *g = &m->gemm;
                ACCEL_CHECK(accel_gemm_cpu_lower_nt(g, T, hs, 1.0f, dy, C, v, C3, dS, T));
                causal_softmax_backward(dS, P, T, 0, T);
                ACCEL_CHECK(accel_gemm_cpu_trmm(g, false, T, hs, scale, dS, T, k, C3, dq, C3));
                ACCEL_CHECK(accel_gemm_cpu_trmm(g, true, T, hs, 1.0f, P, T, dy, C, dv, C3));
                ACCEL_CHECK(accel_gemm_cpu_trmm(g, true, T, hs, scale, dS, T, q, C3, dk, C3));
                continue;
            }
            const float *Pr = P;                    /* P as a product operand */
            if (rounded) {
                round_operand(m, m->pr, P, (size_t)T, (size_t)T, (size_t)T);
                Pr = m->pr;
            }
            accel_cpu_transpose(vt, v, (size_t)T, (size_t)hs, (size_t)C3);
            for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
                int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T;
                ACCEL_CHECK(gemm_nt(m, r1 - r0, r1, hs, T, 1.0f, dy + (size_t)r0 * C, C, vt,
                                    dS + (size_t)r0 * T));
                causal_softmax_backward(dS, P, T, r0, r1);
                /* dS is only a product operand from here on */
                round_operand(m, dS + (size_t)r0 * T, dS + (size_t)r0 * T, (size_t)(r1 - r0),
                              (size_t)T, (size_t)T);
                /* dQ rows r0..r1-1 = scale * dS[r0:r1, 0:r1] K[0:r1] */
                GEMM32(false, false, r1 - r0, hs, r1, scale, dS + (size_t)r0 * T, T, k, C3, 0.0f,
                       dq + (size_t)r0 * C3, C3);
            }
            /* Column blocks c0..c1-1 of P and dS are non-zero only in rows c0..T-1:
             * dV[c0:c1] = P[c0:T, c0:c1]^T dY[c0:T], dK[c0:c1] = scale * dS[c0:T, c0:c1]^T Q[c0:T]. */
            for (int c0 = 0; c0 < T; c0 += ATT_BLOCK) {
                int c1 = c0 + ATT_BLOCK < T ? c0 + ATT_BLOCK : T;
                GEMM32(true, false, c1 - c0, hs, T - c0, 1.0f, Pr + (size_t)c0 * T + c0, T,
                       dy + (size_t)c0 * C, C, 0.0f, dv + (size_t)c0 * C3, C3);
                GEMM32(true, false, c1 - c0, hs, T - c0, scale, dS + (size_t)c0 * T + c0, T,
                       q + (size_t)c0 * C3, C3, 0.0f, dk + (size_t)c0 * C3, C3);
            }
        }
    return ACCEL_OK;
}

/* Forward through the final LayerNorm for B rows of T input tokens (row stride `stride`). */
static accel_status_t forward(gpt_t *m, const gpt_fwd_t *fw, const accel_layout_t *layout,
                              const float *params, const int32_t *tokens, int stride, int B, int T,
                              const accel_batch_t *hb)
{
    const int C = m->C;
    const size_t BT = (size_t)B * T;
    accel_batch_layer_fetch(hb, 0, 0);              /* embeddings: layer 0 */
    const float *wte = PARAM(m->wte), *wpe = PARAM(m->wpe);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *e = wte + (size_t)tokens[(size_t)b * stride + t] * C, *p = wpe + (size_t)t * C;
            float *x = fw->x0 + ((size_t)b * T + t) * C;
            for (int c = 0; c < C; c++) x[c] = e[c] + p[c];
        }
    accel_batch_layer_release(hb, 0);
    const float *res = fw->x0;
    for (int l = 0; l < m->L; l++) {
        const gpt_block_t *k = &m->blk[l];
        gpt_acts_t *a = &fw->act[l * fw->act_step];
        accel_batch_layer_fetch(hb, l + 1, 0);      /* block l: layer l+1 */
        accel_cpu_layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, res, PARAM(k->ln1w),
                                    PARAM(k->ln1b), BT, C);
        accel_cpu_bias_rows(a->qkv, PARAM(k->qkvb), NULL, BT, 3 * C);
        GEMM(false, true, (int)BT, 3 * C, C, 1.0f, a->ln1, C, PARAM(k->qkvw), C, 1.0f, a->qkv, 3 * C);
        ACCEL_CHECK(attention_forward(m, a, fw, B, T));
        accel_cpu_bias_rows(a->res2, PARAM(k->projb), res, BT, C);     /* residual + bias + proj */
        GEMM(false, true, (int)BT, C, C, 1.0f, a->atty, C, PARAM(k->projw), C, 1.0f, a->res2, C);
        accel_cpu_layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, PARAM(k->ln2w),
                                    PARAM(k->ln2b), BT, C);
        GEMM(false, true, (int)BT, 4 * C, C, 1.0f, a->ln2, C, PARAM(k->fcw), C, 0.0f, a->fch, 4 * C);
        accel_cpu_bias_gelu_forward(a->fch, a->fch_gelu, PARAM(k->fcb), BT, 4 * C);
        accel_cpu_bias_rows(a->res3, PARAM(k->fcpb), a->res2, BT, C);
        GEMM(false, true, (int)BT, C, 4 * C, 1.0f, a->fch_gelu, 4 * C, PARAM(k->fcpw), 4 * C, 1.0f,
             a->res3, C);
        accel_batch_layer_release(hb, l + 1);
        res = a->res3;
    }
    accel_batch_layer_fetch(hb, m->L + 1, 0);       /* final LayerNorm: layer L+1 */
    accel_cpu_layernorm_forward(fw->lnf, fw->lnf_mean, fw->lnf_rstd, res, PARAM(m->lnfw),
                                PARAM(m->lnfb), BT, C);
    accel_batch_layer_release(hb, m->L + 1);
    return ACCEL_OK;
}

/* The training buffers: every block's activations are kept for the backward pass. */
static gpt_fwd_t train_fwd(gpt_t *m)
{
    return (gpt_fwd_t){ m->act, 1, m->x0, m->lnf, m->lnf_mean, m->lnf_rstd, m->pr, m->kt };
}

/* LM head and cross-entropy: per-sample mean token loss into loss[B] (may be NULL), the sum as
 * the return value through *sum. When dscale != 0 the logits are replaced by
 * dscale * d(sum of per-sample means)/d(logits). */
static accel_status_t head_loss(gpt_t *m, const accel_layout_t *layout, const float *params,
                                const int32_t *tokens, int stride, int B, int T, float *loss,
                                float dscale, double *sum, const accel_batch_t *hb)
{
    const int C = m->C, V = m->V;
    const size_t BT = (size_t)B * T;
    /* The tied LM head reads wte (layer 0) again; the backward pass then starts with it too. */
    accel_batch_layer_fetch(hb, 0, 1);
    GEMM(false, true, (int)BT, V, C, 1.0f, m->lnf, C, PARAM(m->wte), C, 0.0f, m->logits, V);
    const float g = dscale / (float)T;   /* each token counts 1/T of its sample's loss */
    double total = 0;
    for (int b = 0; b < B; b++) {
        double acc = 0;
        for (int t = 0; t < T; t++) {
            float *z = m->logits + ((size_t)b * T + t) * V;
            int32_t y = tokens[(size_t)b * stride + t + 1];
            float zy = z[y];
            float lse = accel_cpu_softmax(z, z, V);
            acc += (double)lse - (double)zy;
            if (dscale != 0.0f) {
                for (int v = 0; v < V; v++) z[v] *= g;
                z[y] -= g;
            }
        }
        acc /= T;
        if (loss) loss[b] = (float)acc;
        total += acc;
    }
    *sum = total;
    return ACCEL_OK;
}

static accel_status_t backward(gpt_t *m, const accel_layout_t *layout, const float *params,
                               float *grads, const int32_t *tokens, int stride, int B, int T,
                               const accel_batch_t *hb)
{
    const int C = m->C, V = m->V, C3 = 3 * C, C4 = 4 * C;
    const size_t BT = (size_t)B * T;
    const int bt = (int)BT;
    /* LM head (tied): dlnf = dlogits wte, dwte += dlogits^T lnf. */
    GEMM(false, false, bt, C, V, 1.0f, m->logits, V, PARAM(m->wte), C, 0.0f, m->dc, C);
    GEMM(true, false, V, C, bt, 1.0f, m->logits, V, m->lnf, C, 1.0f, GRAD(m->wte), C);
    accel_batch_layer_release(hb, 0);
    memset(m->dres, 0, sizeof(float) * BT * C);
    const float *last = m->L ? m->act[m->L - 1].res3 : m->x0;
    accel_batch_layer_fetch(hb, m->L + 1, 1);
    accel_cpu_layernorm_backward(m->dres, GRAD(m->lnfw), GRAD(m->lnfb), m->dc, last, m->lnf_mean,
                                 m->lnf_rstd, PARAM(m->lnfw), BT, C);
    accel_batch_layer_release(hb, m->L + 1);
    accel_batch_layer_done(hb, m->L + 1);
    /* m->dres carries d(loss)/d(residual) down through the blocks; accel_batch_progress after each
     * weight product keeps the reductions of the blocks already done moving. */
    for (int l = m->L - 1; l >= 0; l--) {
        const gpt_block_t *k = &m->blk[l];
        const gpt_acts_t *a = &m->act[l];
        const float *res_in = l ? m->act[l - 1].res3 : m->x0;
        accel_batch_layer_fetch(hb, l + 1, 1);
        /* MLP: res3 = res2 + gelu(ln2 fc^T + fcb) fcp^T + fcpb */
        GEMM(false, false, bt, C4, C, 1.0f, m->dres, C, PARAM(k->fcpw), C4, 0.0f, m->d4c, C4);
        GEMM(true, false, C, C4, bt, 1.0f, m->dres, C, a->fch_gelu, C4, 1.0f, GRAD(k->fcpw), C4);
        accel_batch_progress(hb);
        accel_cpu_colsum_add(GRAD(k->fcpb), m->dres, BT, C);
        accel_cpu_gelu_backward(m->d4c, a->fch, GRAD(k->fcb), BT, C4);
        GEMM(false, false, bt, C, C4, 1.0f, m->d4c, C4, PARAM(k->fcw), C, 0.0f, m->dc, C);
        GEMM(true, false, C4, C, bt, 1.0f, m->d4c, C4, a->ln2, C, 1.0f, GRAD(k->fcw), C);
        accel_batch_progress(hb);
        accel_cpu_layernorm_backward(m->dres, GRAD(k->ln2w), GRAD(k->ln2b), m->dc, a->res2,
                                     a->ln2_mean, a->ln2_rstd, PARAM(k->ln2w), BT, C);
        /* Attention: res2 = res_in + attn(ln1 qkv^T + qkvb) proj^T + projb */
        GEMM(false, false, bt, C, C, 1.0f, m->dres, C, PARAM(k->projw), C, 0.0f, m->dc, C);
        GEMM(true, false, C, C, bt, 1.0f, m->dres, C, a->atty, C, 1.0f, GRAD(k->projw), C);
        accel_cpu_colsum_add(GRAD(k->projb), m->dres, BT, C);
        accel_batch_progress(hb);
        ACCEL_CHECK(attention_backward(m, a, B, T));
        accel_batch_progress(hb);
        GEMM(false, false, bt, C, C3, 1.0f, m->d3c, C3, PARAM(k->qkvw), C, 0.0f, m->dc, C);
        GEMM(true, false, C3, C, bt, 1.0f, m->d3c, C3, a->ln1, C, 1.0f, GRAD(k->qkvw), C);
        accel_cpu_colsum_add(GRAD(k->qkvb), m->d3c, BT, C3);
        accel_cpu_layernorm_backward(m->dres, GRAD(k->ln1w), GRAD(k->ln1b), m->dc, res_in,
                                     a->ln1_mean, a->ln1_rstd, PARAM(k->ln1w), BT, C);
        accel_batch_layer_release(hb, l + 1);
        accel_batch_layer_done(hb, l + 1);
    }
    float *dwte = GRAD(m->wte), *dwpe = GRAD(m->wpe);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = m->dres + ((size_t)b * T + t) * C;
            float *e = dwte + (size_t)tokens[(size_t)b * stride + t] * C, *p = dwpe + (size_t)t * C;
            for (int c = 0; c < C; c++) {
                e[c] += d[c];
                p[c] += d[c];
            }
        }
    accel_batch_layer_done(hb, 0);                  /* wte has both its head and embedding parts */
    return ACCEL_OK;
}

static accel_status_t gpt_forward_backward(void *state, const accel_layout_t *layout,
                                           const float *params, float *grads,
                                           const accel_batch_t *batch, float grad_scale,
                                           double *loss_sum)
{
    gpt_t *m = state;
    const int B = batch->n, T = m->T, stride = T + 1;
    *loss_sum = 0;
    if (B <= 0) return ACCEL_OK;
    ACCEL_CHECK(accel_gpt_check_tokens(batch->tokens, B, stride, stride, m->V));
    ACCEL_CHECK(reserve(m, B));
    gpt_fwd_t fw = train_fwd(m);
    ACCEL_CHECK(forward(m, &fw, layout, params, batch->tokens, stride, B, T, batch));
    ACCEL_CHECK(head_loss(m, layout, params, batch->tokens, stride, B, T, NULL, grad_scale,
                          loss_sum, batch));
    if (grad_scale == 0.0f) {   /* nothing to add to the gradients (the logits are not dlogits) */
        accel_batch_layer_release(batch, 0);
        return ACCEL_OK;
    }
    return backward(m, layout, params, grads, batch->tokens, stride, B, T, batch);
}

static accel_status_t gpt_eval(void *state, const accel_layout_t *layout, const float *params,
                               const accel_batch_t *batch, float *loss, int *correct)
{
    gpt_t *m = state;
    const int B = batch->n, T = m->T, stride = T + 1;
    if (B <= 0) return ACCEL_OK;
    ACCEL_CHECK(accel_gpt_check_tokens(batch->tokens, B, stride, stride, m->V));
    ACCEL_CHECK(reserve(m, B));
    gpt_fwd_t fw = train_fwd(m);
    ACCEL_CHECK(forward(m, &fw, layout, params, batch->tokens, stride, B, T, batch));
    double sum;
    ACCEL_CHECK(head_loss(m, layout, params, batch->tokens, stride, B, T, loss, 0.0f, &sum, batch));
    accel_batch_layer_release(batch, 0);
    if (correct) memset(correct, 0, sizeof(int) * (size_t)B);
    return ACCEL_OK;
}

/* Floats of the inference buffers (one sequence at full context, one shared block set). */
static size_t infer_floats(size_t C, size_t T, size_t NH)
{
    return 7 * PIECE(T * C) + PIECE(T * 3 * C) + PIECE(NH * T * T) + 2 * PIECE(T * 4 * C) +
           6 * PIECE(T) + PIECE(T * T) + PIECE(C / NH * T);
}

/* Scratch elements the bf16/fp16 products of one sequence convert (as in reserve, B = 1). */
static size_t infer_gemm_elements(size_t C, size_t T, size_t V)
{
    size_t wide = V > 4 * C ? V : 4 * C;
    return T * wide + (T > wide ? T : wide) * C + 2 * T * T + 64;
}

static size_t gpt_logits_bytes(const accel_config_t *cfg)
{
    const accel_model_config_t *c = &cfg->model;
    const size_t C = (size_t)c->width, T = (size_t)c->context, V = (size_t)c->vocab;
    size_t bytes = sizeof(float) * infer_floats(C, T, (size_t)c->heads);
    if (cfg->precision_id != ACCEL_F32)   /* converted operands (upper bound) */
        bytes += sizeof(float) * infer_gemm_elements(C, T, V) + 128;
    return bytes;
}

static accel_status_t reserve_infer(gpt_t *m)
{
    if (m->imem) return ACCEL_OK;
    const size_t C = (size_t)m->C, T = (size_t)m->T, NH = (size_t)m->NH;
    void *mem = NULL;
    size_t total = infer_floats(C, T, NH);
    if (posix_memalign(&mem, 64, total * sizeof(float))) {
        ACCEL_ERROR("gpt: cannot allocate %.1f MiB of inference buffers", total * 4.0 / 1048576.0);
        return ACCEL_ERR_NOMEM;
    }
    m->imem = mem;
    float *p = mem;
#define TAKE(ptr, n) do { (ptr) = p; p += PIECE(n); } while (0)
    p = carve_block(&m->iact, p, 1, T, C, NH);
    TAKE(m->ix0, T * C);
    TAKE(m->ilnf, T * C);
    TAKE(m->ilnf_mean, T);
    TAKE(m->ilnf_rstd, T);
    TAKE(m->ipr, T * T);
    TAKE(m->ikt, C / NH * T);
#undef TAKE
    return accel_gemm_cpu_reserve(&m->gemm, infer_gemm_elements(C, T, (size_t)m->V));
}

/* One shared block set works because block l only reads the residual res3 of block l-1 before it
 * overwrites res3 (ln1 and res2 = res + attention are computed first). */
static accel_status_t gpt_logits_range(void *state, const accel_layout_t *layout,
                                       const float *params, const int32_t *tokens, int ntokens,
                                       int first, float *out_logits,
                                       const accel_layer_hooks_t *hooks)
{
    gpt_t *m = state;
    if (ntokens < 1 || ntokens > m->T || first < 0 || first >= ntokens) {
        ACCEL_ERROR("gpt: logits need 1..%d tokens of context and a first position inside them "
                    "(got %d tokens, first %d)\n--> hint: pass at most model.context tokens (the "
                    "most recent ones)", m->T, ntokens, first);
        return ACCEL_ERR_INVALID;
    }
    ACCEL_CHECK(accel_gpt_check_tokens(tokens, 1, ntokens, ntokens, m->V));
    ACCEL_CHECK(reserve_infer(m));
    accel_batch_t hb = { .hooks = hooks };
    gpt_fwd_t fw = { &m->iact, 0, m->ix0, m->ilnf, m->ilnf_mean, m->ilnf_rstd, m->ipr, m->ikt };
    ACCEL_CHECK(forward(m, &fw, layout, params, tokens, ntokens, 1, ntokens, &hb));
    accel_batch_layer_fetch(&hb, 0, 0);              /* the tied LM head reads wte again */
    accel_status_t st = accel_gemm_cpu(&m->gemm, false, true, ntokens - first, m->V, m->C, 1.0f,
                                       fw.lnf + (size_t)first * m->C, m->C, PARAM(m->wte), m->C,
                                       0.0f, out_logits, m->V);
    accel_batch_layer_release(&hb, 0);
    return st;
}

static accel_status_t gpt_logits(void *state, const accel_layout_t *layout, const float *params,
                                 const int32_t *tokens, int ntokens, float *out_logits)
{
    return gpt_logits_range(state, layout, params, tokens, ntokens, ntokens - 1, out_logits, NULL);
}

const accel_model_ops_t accel_model_gpt = {
    .abi = ACCEL_MODEL_ABI,
    .name = "gpt",
    .fetches_layers = 1,
    .consumes_tokens = 1,
    .create = gpt_create,
    .forward_backward = gpt_forward_backward,
    .eval = gpt_eval,
    .destroy = gpt_destroy,
    .logits = gpt_logits,
    .logits_range = gpt_logits_range,
    .logits_bytes = gpt_logits_bytes,
    .activation_bytes = gpt_activation_bytes,
};
