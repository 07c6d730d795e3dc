/* The built-in decoders (GPT and Llama) on a CUDA device, as a model backend: the same tensor
 * table as the CPU model (src/nn/decoder.c), whose parameters and gradients the trainer keeps in device memory; this file
 * supplies only the layers: the forward and backward passes as a sequence of cuBLAS products and
 * kernels (src/nn/gpt_cuda_kernels.cu) on the rank's compute stream (accel_device_cuda_stream),
 * with token rows staged through pinned buffers on a copy stream. Optimizer state, gradient
 * buckets, ZeRO shards and collectives belong to the trainer (src/train), as on the CPU: the model
 * reports each layer through the layer hooks, which gather (ZeRO-3) and reduce it.
 *
 * The pass mirrors the CPU model step by step: pre-LayerNorm blocks, tanh GELU, 1/sqrt(head size)
 * attention scaling, tied LM head, and the loss as the sum of per-sample mean token losses; for the
 * llama (model.name=llama, src/nn/llama_cuda_kernels.h) RMSNorm, RoPE on q and k, grouped-query
 * attention (one strided-batched product per sample and kv head), SwiGLU, no position embedding,
 * optional q/k/v biases and a tied or separate LM head (layer L+1). Matrix
 * products run with bf16/fp16/fp32 operands and fp32 accumulation; the weights they read are cast
 * from the fp32 parameters layer by layer as the forward pass fetches them. Every CUDA and cuBLAS
 * return is checked and reported with the call that failed. Host C only. */
#include "build_config.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/device.h"
#include "accel/log.h"
#include "accel/model.h"
#include "decoder.h"
#include "gpt_cuda.h"

#if ACCEL_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gpt_cuda_kernels.h"
#include "llama_cuda_kernels.h"

#define CUDA_OK(call)                                                                           \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            ACCEL_ERROR("gpt_cuda: %s failed: %s (%s)", #call, cudaGetErrorName(e_),            \
                        cudaGetErrorString(e_));                                                \
            return ACCEL_ERR_CUDA;                                                              \
        }                                                                                       \
    } while (0)

/* Kernel launchers return a cudaError_t; name the launcher in the message. With ACCEL_CUDA_SYNC=1
 * the model waits for every kernel and product, so an error is reported at the one that failed
 * rather than at a later launch (slow; for debugging). */
#define KERNEL(name, ...)                                                                       \
    do {                                                                                        \
        int e_ = accel_gk_##name(__VA_ARGS__);                                                  \
        if (e_ != 0) {                                                                          \
            ACCEL_ERROR("gpt_cuda: kernel %s failed to launch: %s", #name,                      \
                        cudaGetErrorString((cudaError_t)e_));                                   \
            return ACCEL_ERR_CUDA;                                                              \
        }                                                                                       \
        if (g->debug_sync) ACCEL_CHECK(debug_sync(g, "kernel " #name));                         \
    } while (0)

typedef struct {                    /* tensor indices of one block; -1: absent (llama) */
    int ln1w, ln1b, qkvw, qkvb, qnw, knw, projw, projb, ln2w, ln2b, fcw, fcb, fcpw, fcpb;
} blk_t;

struct accel_gpt_cuda {
    int L, NH, C, T, V, hs;
    int KVH, G, QKV, F, FIN;        /* kv heads, NH / KVH, (NH + 2 KVH) hs, MLP widths */
    int QW;                         /* NH hs: the attention output's width (C unless head_dim) */
    bool qk_norm;                   /* RMSNorm on each q and k head before RoPE (Qwen3) */
    accel_decoder_dims_t dims;      /* all of them, for the buffer plan */
    bool llama;                     /* RMSNorm, RoPE, GQA, SwiGLU, no wpe, optional biases */
    bool tied;                      /* LM head = wte (else lm_head.weight in layer L+1) */
    float eps;                      /* RMSNorm epsilon */
    float *rope_cos, *rope_sin;     /* device [T, hs/2] (llama) */
    int B;                          /* micro-batch the buffers are sized for (grown on demand) */
    accel_dtype_t dt;
    cudaDataType_t cdt;             /* activations and the low-precision weight copy */
    size_t asz;
    const accel_layout_t *layout;
    int wte, wpe, lnfw, lnfb, head; /* wpe, lnfb: -1 when absent; head: wte or lm_head */
    blk_t *blk;
    accel_gpt_cuda_plan_t plan;
    cudaStream_t stream, copy;
    cublasHandle_t blas;
    const float *params;            /* this call's fp32 parameters and gradients (device) */
    float *grads;
    void *lp16;                     /* 16-bit weights (bf16/fp16), cast per layer in forward */
    const void *lp;                 /* what the products read: lp16, or params for fp32 */
    char *acts;                     /* activations and work buffers (plan) */
    int32_t *d_tok[2], *h_tok[2];   /* device and pinned host token rows, double-buffered; each
                                     * slot holds B rows of tokens, then B rows of targets (the
                                     * tokens with -1 for those a loss mask leaves out), then B
                                     * rows of positions (packed documents) */
    const int32_t *d_pos;           /* this pass's positions in d_tok (NULL: 0..T-1 per sample) */
    cudaEvent_t tok_copied[2], tok_used[2];
    int slot;
    float *h_losses;                /* pinned: per-token losses of one micro-batch */
    bool debug_sync;                /* ACCEL_CUDA_SYNC=1: wait after every kernel and product */
};

static accel_status_t debug_sync(accel_gpt_cuda_t *g, const char *what)
{
    cudaError_t e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess) {
        ACCEL_ERROR("gpt_cuda: %s failed on the device: %s (%s)", what, cudaGetErrorName(e),
                    cudaGetErrorString(e));
        return ACCEL_ERR_CUDA;
    }
    return ACCEL_OK;
}

#define ACT(g, off) ((void *)((g)->acts + (off)))
#define P32(g, idx) ((g)->params + (g)->layout->tensors[(idx)].offset)
#define G32(g, idx) ((g)->grads + (g)->layout->tensors[(idx)].offset)
#define P32_OPT(g, idx) ((idx) >= 0 ? P32(g, idx) : NULL)
#define G32_OPT(g, idx) ((idx) >= 0 ? G32(g, idx) : NULL)
#define PLP(g, idx) ((const void *)((const char *)(g)->lp + (g)->layout->tensors[(idx)].offset * (g)->asz))

/* ------------------------------------------------------------------ matrix products */

static const char *blas_status(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
    }
}

/* Row-major C[M x N] = alpha op(A) op(B) + beta C, `batch` times with element strides sA, sB, sC,
 * operands in the activation type, C in ctype (activation type or fp32), fp32 accumulation.
 * Row-major X is column-major X^T, so cuBLAS computes C^T = op(B)^T op(A)^T. */
static accel_status_t gemm(accel_gpt_cuda_t *g, const char *what, bool ta, bool tb, int M, int N,
                           int K, float alpha, const void *A, int lda, long long sA, const void *B,
                           int ldb, long long sB, float beta, void *C, cudaDataType_t ctype, int ldc,
                           long long sC, int batch)
{
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t s;
    if (batch == 1)
        s = cublasGemmEx(g->blas, opb, opa, N, M, K, &alpha, B, g->cdt, ldb, A, g->cdt, lda, &beta,
                         C, ctype, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
        s = cublasGemmStridedBatchedEx(g->blas, opb, opa, N, M, K, &alpha, B, g->cdt, ldb, sB, A,
                                       g->cdt, lda, sA, &beta, C, ctype, ldc, sC, batch,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
        ACCEL_ERROR("gpt_cuda: cuBLAS product '%s' (M=%d N=%d K=%d batch=%d, %s%s) failed: %s",
                    what, M, N, K, batch, ta ? "A^T" : "A", tb ? " B^T" : " B", blas_status(s));
        return ACCEL_ERR_CUDA;
    }
    if (g->debug_sync) return debug_sync(g, what);
    return ACCEL_OK;
}

/* One product of activations (BT rows) with a weight matrix, result in the activation type. */
#define MM(what, ta, tb, M, N, K, A, lda, B, ldb, C, ldc)                                       \
    ACCEL_CHECK(gemm(g, what, ta, tb, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, 0.0f, C, g->cdt, ldc, 0, 1))
/* A weight gradient: accumulated (beta 1) into the fp32 gradient arena. */
#define MM_GRAD(what, M, N, K, A, lda, B, ldb, C, ldc)                                          \
    ACCEL_CHECK(gemm(g, what, true, false, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, 1.0f, C, CUDA_R_32F, ldc, 0, 1))


/* ------------------------------------------------------------------ creation and buffers */

static accel_status_t find(const accel_layout_t *layout, const char *name, int *index)
{
    for (int i = 0; i < layout->ntensors; i++)
        if (!strcmp(layout->tensors[i].name, name)) {
            *index = i;
            return ACCEL_OK;
        }
    ACCEL_ERROR("gpt_cuda: the model has no tensor '%s': the layout is not the built-in decoder's", name);
    return ACCEL_ERR_SHAPE;
}

/* A tensor the family may lack: -1 when absent. */
static int find_opt(const accel_layout_t *layout, const char *name)
{
    for (int i = 0; i < layout->ntensors; i++)
        if (!strcmp(layout->tensors[i].name, name)) return i;
    return -1;
}

static accel_status_t find_tensors(accel_gpt_cuda_t *g)
{
    const accel_layout_t *lo = g->layout;
    const bool ll = g->llama;
    ACCEL_CHECK(find(lo, "wte", &g->wte));
    g->wpe = g->lnfb = -1;
    if (!ll) ACCEL_CHECK(find(lo, "wpe", &g->wpe));
    ACCEL_CHECK(find(lo, ll ? "normf.weight" : "lnf.weight", &g->lnfw));
    if (!ll) ACCEL_CHECK(find(lo, "lnf.bias", &g->lnfb));
    g->head = g->wte;
    if (!g->tied) ACCEL_CHECK(find(lo, "lm_head.weight", &g->head));
    for (int l = 0; l < g->L; l++) {
        blk_t *b = &g->blk[l];
        *b = (blk_t){ -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
        char name[ACCEL_TENSOR_NAME_MAX];
#define FIND(suffix, field)                                                                     \
        snprintf(name, sizeof name, "h.%d.%s", l, suffix);                                      \
        ACCEL_CHECK(find(lo, name, &b->field))
        if (ll) {
            FIND("norm1.weight", ln1w);
            FIND("attn.qkv.weight", qkvw);
            snprintf(name, sizeof name, "h.%d.attn.qkv.bias", l);
            b->qkvb = find_opt(lo, name);           /* model.attention_bias */
            if (g->qk_norm) { FIND("attn.q_norm.weight", qnw); FIND("attn.k_norm.weight", knw); }
            FIND("attn.proj.weight", projw);
            FIND("norm2.weight", ln2w);
            FIND("mlp.gate_up.weight", fcw);
            FIND("mlp.down.weight", fcpw);
        } else {
            FIND("ln1.weight", ln1w); FIND("ln1.bias", ln1b);
            FIND("attn.qkv.weight", qkvw); FIND("attn.qkv.bias", qkvb);
            FIND("attn.proj.weight", projw); FIND("attn.proj.bias", projb);
            FIND("ln2.weight", ln2w); FIND("ln2.bias", ln2b);
            FIND("mlp.fc.weight", fcw); FIND("mlp.fc.bias", fcb);
            FIND("mlp.proj.weight", fcpw); FIND("mlp.proj.bias", fcpb);
        }
#undef FIND
    }
    /* The tied head reads wte as a [V, C] matrix. */
    for (int i = 0; i < 2; i++) {                  /* wte, and the head when separate */
        const accel_tensor_t *w = &lo->tensors[i ? g->head : g->wte];
        if (w->ndim != 2 || w->shape[0] != g->V || w->shape[1] != g->C) {
            ACCEL_ERROR("gpt_cuda: %s has shape [%lld, %lld], expected [%d, %d]", w->name,
                        (long long)w->shape[0], (long long)w->shape[1], g->V, g->C);
            return ACCEL_ERR_SHAPE;
        }
    }
    return ACCEL_OK;
}


static void free_buffers(accel_gpt_cuda_t *g)
{
    if (g->stream) cudaStreamSynchronize(g->stream);
    for (int s = 0; s < 2; s++) {
        cudaFree(g->d_tok[s]);
        cudaFreeHost(g->h_tok[s]);
        g->d_tok[s] = g->h_tok[s] = NULL;
    }
    cudaFreeHost(g->h_losses);
    cudaFree(g->acts);
    g->h_losses = NULL;
    g->acts = NULL;
    g->B = 0;
}

static void gpt_cuda_destroy(void *state)
{
    accel_gpt_cuda_t *g = state;
    if (!g) return;
    free_buffers(g);
    for (int s = 0; s < 2; s++) {
        if (g->tok_copied[s]) cudaEventDestroy(g->tok_copied[s]);
        if (g->tok_used[s]) cudaEventDestroy(g->tok_used[s]);
    }
    cudaFree(g->lp16);
    cudaFree(g->rope_cos);
    cudaFree(g->rope_sin);
    if (g->blas) cublasDestroy(g->blas);
    if (g->copy) cudaStreamDestroy(g->copy);
    free(g->blk);
    free(g);
}

static accel_status_t dalloc(void **p, size_t bytes, const char *what)
{
    return accel_device_cuda_alloc(bytes, what, p);
}

/* Buffers for micro-batches of up to B rows (kept and reused; grown when a larger one comes). */
static accel_status_t reserve(accel_gpt_cuda_t *g, int B)
{
    if (B <= g->B) return ACCEL_OK;
    free_buffers(g);
    if (accel_gpt_cuda_plan_dims(&g->dims, B, g->asz, &g->plan) != ACCEL_OK) {
        ACCEL_ERROR0("gpt_cuda: a micro-batch of %d x %d tokens of this model (width %d, vocab %d) "
                     "is out of range for the GPU kernels\n--> hint: lower the micro-batch (raise "
                     "train.grad_accum)", B, g->T, g->C, g->V);
        return ACCEL_ERR_CONFIG;
    }
    ACCEL_CHECK(dalloc((void **)&g->acts, g->plan.total, "activations"));
    const size_t tok_bytes = 3 * sizeof(int32_t) * (size_t)B * (size_t)(g->T + 1);
    for (int s = 0; s < 2; s++) {
        ACCEL_CHECK(dalloc((void **)&g->d_tok[s], tok_bytes, "token rows"));
        CUDA_OK(cudaMallocHost((void **)&g->h_tok[s], tok_bytes));
    }
    CUDA_OK(cudaMallocHost((void **)&g->h_losses, sizeof(float) * (size_t)B * g->T));
    g->B = B;
    ACCEL_INFO("gpu: %s %s layers, %.1f MiB of activations for %d x %d tokens",
               accel_dtype_name(g->dt), g->llama ? "Llama" : "GPT", g->plan.total / 1048576.0, B, g->T);
    return ACCEL_OK;
}

static accel_status_t gpt_cuda_create(const accel_config_t *cfg, accel_layout_t *layout, void **state)
{
    /* The tensor table is the CPU model's (same names, offsets and initialisation), so that
     * checkpoints and every strategy's ranges are the same on every device. */
    void *cpu = NULL;
    const bool llama = !strcmp(cfg->model.name, "llama");
    const accel_model_ops_t *cpu_ops = llama ? &accel_model_llama : &accel_model_gpt;
    ACCEL_CHECK(cpu_ops->create(cfg, layout, &cpu));
    cpu_ops->destroy(cpu);
    const accel_model_config_t *mc = &cfg->model;
    const accel_dtype_t dt = cfg->precision_id;    /* fp32, bf16 or fp16: checked by the config */
    if (!llama && mc->width > 6144) {
        ACCEL_ERROR0("gpt_cuda: model.width=%d is above the 6144 the LayerNorm kernels support", mc->width);
        return ACCEL_ERR_CONFIG;
    }
    accel_gpt_cuda_t *g = calloc(1, sizeof *g);
    if (!g) return ACCEL_ERR_NOMEM;
    accel_status_t st = ACCEL_OK;
    g->L = mc->layers; g->NH = mc->heads; g->C = mc->width; g->T = mc->context; g->V = mc->vocab;
    accel_decoder_dims_t dims;
    accel_decoder_dims(cfg, &dims);                 /* validated by the CPU model's create */
    g->dims = dims;
    g->hs = dims.hs;
    g->QW = g->NH * g->hs;
    g->qk_norm = dims.qk_norm;
    g->llama = llama;
    g->KVH = dims.KVH; g->G = g->NH / g->KVH; g->QKV = dims.QKV; g->F = dims.F; g->FIN = dims.FIN;
    g->tied = !llama || mc->tie_embeddings;
    g->eps = (float)mc->rms_eps;
    g->layout = layout;
    const char *dbg = getenv("ACCEL_CUDA_SYNC");
    g->debug_sync = dbg && atoi(dbg) > 0;
    g->dt = dt;
    g->cdt = dt == ACCEL_BF16 ? CUDA_R_16BF : dt == ACCEL_F16 ? CUDA_R_16F : CUDA_R_32F;
    g->asz = dt == ACCEL_F32 ? 4 : 2;
    g->blk = calloc((size_t)(g->L > 0 ? g->L : 1), sizeof *g->blk);
    if (!g->blk) { st = ACCEL_ERR_NOMEM; goto fail; }
    ACCEL_CHECK_GOTO(find_tensors(g), st, fail);
    void *compute;
    ACCEL_CHECK_GOTO(accel_device_cuda_stream(&compute), st, fail);
    g->stream = (cudaStream_t)compute;

#define CU(call)                                                                                \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            ACCEL_ERROR("gpt_cuda: %s failed: %s", #call, cudaGetErrorString(e_));              \
            st = ACCEL_ERR_CUDA;                                                                \
            goto fail;                                                                          \
        }                                                                                       \
    } while (0)
    CU(cudaStreamCreateWithFlags(&g->copy, cudaStreamNonBlocking));
    cublasStatus_t bs = cublasCreate(&g->blas);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(g->blas, g->stream);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        ACCEL_ERROR("gpt_cuda: cublasCreate/cublasSetStream failed: %s", blas_status(bs));
        g->blas = NULL;
        st = ACCEL_ERR_CUDA;
        goto fail;
    }
    if (g->asz == 2)
        ACCEL_CHECK_GOTO(dalloc(&g->lp16, layout->numel * g->asz, "16-bit weight copy"), st, fail);
    if (llama) {                                    /* RoPE tables, computed as the CPU model's */
        const size_t tab = (size_t)g->T * (size_t)(g->hs / 2);
        float *hc = malloc(sizeof(float) * tab), *hsn = malloc(sizeof(float) * tab);
        if (!hc || !hsn) { free(hc); free(hsn); st = ACCEL_ERR_NOMEM; goto fail; }
        accel_decoder_rope_tables(mc, g->T, g->hs, ACCEL_ROPE_SCALED, hc, hsn);
        st = dalloc((void **)&g->rope_cos, sizeof(float) * tab, "RoPE tables");
        if (st == ACCEL_OK) st = dalloc((void **)&g->rope_sin, sizeof(float) * tab, "RoPE tables");
        cudaError_t e = cudaSuccess;
        if (st == ACCEL_OK) e = cudaMemcpy(g->rope_cos, hc, sizeof(float) * tab, cudaMemcpyHostToDevice);
        if (st == ACCEL_OK && e == cudaSuccess)
            e = cudaMemcpy(g->rope_sin, hsn, sizeof(float) * tab, cudaMemcpyHostToDevice);
        free(hc);
        free(hsn);
        if (st != ACCEL_OK) goto fail;
        if (e != cudaSuccess) {
            ACCEL_ERROR("gpt_cuda: uploading the RoPE tables failed: %s", cudaGetErrorString(e));
            st = ACCEL_ERR_CUDA;
            goto fail;
        }
    }
    for (int s = 0; s < 2; s++) {
        CU(cudaEventCreateWithFlags(&g->tok_copied[s], cudaEventDisableTiming));
        CU(cudaEventCreateWithFlags(&g->tok_used[s], cudaEventDisableTiming));
    }
#undef CU
    *state = g;
    return ACCEL_OK;
fail:
    gpt_cuda_destroy(g);
    return st;
}

/* Token ids outside the vocabulary would index past wte on the device: refuse them here. */
static accel_status_t check_tokens(const accel_gpt_cuda_t *g, const int32_t *tokens, int n)
{
    if (n < 1 || n > g->B) {
        ACCEL_ERROR("gpt_cuda: a micro-batch of %d samples (the buffers hold 1..%d)", n, g->B);
        return ACCEL_ERR_INVALID;
    }
    return accel_gpt_check_tokens(tokens, n, g->T + 1, g->T + 1, g->V);
}

/* Host rows -> pinned slot -> device on the copy stream; the compute stream waits for the copy.
 * The slot's previous copy and its previous reader are waited for first (double buffering). With
 * a loss mask the rows of targets follow the tokens' (the classifier reads them); without one the
 * classifier reads its targets from the token rows. Positions (packed documents) come third, and
 * g->d_pos points at them for the passes of this call. */
static accel_status_t stage_tokens(accel_gpt_cuda_t *g, const int32_t *tokens, const uint8_t *mask,
                                   const int32_t *positions, int n, int *slot)
{
    ACCEL_CHECK(check_tokens(g, tokens, n));
    ACCEL_CHECK(accel_gpt_check_positions(positions, n, g->T));
    const int s = g->slot;
    g->slot ^= 1;
    const size_t count = (size_t)n * (size_t)(g->T + 1), npos = positions ? (size_t)n * (size_t)g->T : 0;
    const size_t bytes = sizeof(int32_t) * (positions ? 2 * count + npos : count * (mask ? 2 : 1));
    CUDA_OK(cudaEventSynchronize(g->tok_copied[s]));
    memcpy(g->h_tok[s], tokens, sizeof(int32_t) * count);
    for (size_t i = 0; mask && i < count; i++) g->h_tok[s][count + i] = mask[i] ? tokens[i] : -1;
    if (positions) memcpy(g->h_tok[s] + 2 * count, positions, sizeof(int32_t) * npos);
    g->d_pos = positions ? g->d_tok[s] + 2 * count : NULL;
    CUDA_OK(cudaStreamWaitEvent(g->copy, g->tok_used[s], 0));
    CUDA_OK(cudaMemcpyAsync(g->d_tok[s], g->h_tok[s], bytes, cudaMemcpyHostToDevice, g->copy));
    CUDA_OK(cudaEventRecord(g->tok_copied[s], g->copy));
    CUDA_OK(cudaStreamWaitEvent(g->stream, g->tok_copied[s], 0));
    *slot = s;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ the passes */


/* Layer hooks (the trainer's: ZeRO-3 gathers a layer in fetch and hands it back in release; a
 * finished layer's gradients are reduced from done). In forward (cast = true) a fetched layer's
 * weights are cast to the 16-bit copy the products read; backward reuses that copy. */
static accel_status_t fetch(accel_gpt_cuda_t *g, const accel_layer_hooks_t *hk, int layer, bool cast)
{
    if (hk && hk->fetch) hk->fetch(hk->ctx, layer, cast ? 0 : 1);
    if (!cast || !g->lp16) return ACCEL_OK;
    size_t b, e;
    accel_layout_layer_range(g->layout, layer, 1, &b, &e);
    if (e > b) KERNEL(cast, g->dt, (char *)g->lp16 + b * g->asz, g->params + b, e - b, g->stream);
    return ACCEL_OK;
}

static void release(const accel_layer_hooks_t *hk, int layer)
{
    if (hk && hk->release) hk->release(hk->ctx, layer);
}

static void done(const accel_layer_hooks_t *hk, int layer)
{
    if (hk && hk->grads_done) hk->grads_done(hk->ctx, layer);
}

static char *layer_base(accel_gpt_cuda_t *g, int l)
{
    return g->acts + g->plan.layers_base + (size_t)l * g->plan.layer_bytes;
}

#define LA(l, field) ((void *)(layer_base(g, (l)) + g->plan.layer.field))
#define LF(l, field) ((float *)(layer_base(g, (l)) + g->plan.layer.field))

/* Byte offset of part p (0 q, 1 k, 2 v) in a per-head buffer: q [B][NH][T][hs], then k and v
 * [B][KVH][T][hs] each (gpt: KVH = NH, the [3][B][NH][T][hs] of accel_gk_permute). */
static size_t part_bytes(const accel_gpt_cuda_t *g, int n, int p)
{
    const size_t q = (size_t)n * g->T * g->QW * g->asz, kv = (size_t)n * g->T * g->KVH * g->hs * g->asz;
    return p == 0 ? 0 : p == 1 ? q : q + kv;
}

/* The layer whose parameters the LM head reads: wte's (0) when tied, else the last one's. */
static int head_layer(const accel_gpt_cuda_t *g) { return g->tied ? 0 : g->L + 1; }

/* The norms of the two families: gpt LayerNorm (weight and bias, mean and rstd kept), llama
 * RMSNorm (weight, rstd kept; bias and mean unused). Fused with the residual add when y != NULL. */
static accel_status_t norm_forward(accel_gpt_cuda_t *g, void *out, float *mean, float *rstd,
                                   void *res_out, const void *res_in, const void *y,
                                   const float *bias, const float *w, const float *b, int rows)
{
    if (g->llama)
        KERNEL(rmsnorm_forward, g->dt, out, rstd, res_out, res_in, y, bias, w, rows, g->C, g->eps,
               g->stream);
    else
        KERNEL(layernorm_forward, g->dt, out, mean, rstd, res_out, res_in, y, bias, w, b, rows, g->C,
               g->stream);
    return ACCEL_OK;
}

static accel_status_t norm_backward(accel_gpt_cuda_t *g, void *dx, float *dw, float *db,
                                    const void *dout, const void *x, const float *mean,
                                    const float *rstd, const float *w, int rows)
{
    if (g->llama)
        KERNEL(rmsnorm_backward, g->dt, dx, dw, dout, x, rstd, w, rows, g->C, g->stream);
    else
        KERNEL(layernorm_backward, g->dt, dx, dw, db, dout, x, mean, rstd, w, rows, g->C, g->stream);
    return ACCEL_OK;
}

/* qk_norm (Qwen3): the q heads ([B][NH][T][hs] at q) and the k heads ([B][KVH][T][hs] at k, right
 * after q) RMS-normed over hs with the block's q_norm and k_norm weights, in place; the values
 * before the norm and each head row's 1/rms are kept in the layer's qkn, qkn_rstd. */
static accel_status_t qk_norm_forward(accel_gpt_cuda_t *g, const blk_t *k, int l, void *q, void *kk, int n)
{
    const int qrows = n * g->NH * g->T, krows = n * g->KVH * g->T;
    char *pre = LA(l, qkn);
    float *rstd = LF(l, qkn_rstd);
    CUDA_OK(cudaMemcpyAsync(pre, q, (size_t)(qrows + krows) * g->hs * g->asz, cudaMemcpyDeviceToDevice,
                            g->stream));
    KERNEL(rmsnorm_forward, g->dt, q, rstd, NULL, pre, NULL, NULL, P32(g, k->qnw), qrows, g->hs, g->eps,
           g->stream);
    KERNEL(rmsnorm_forward, g->dt, kk, rstd + qrows, NULL, pre + (size_t)qrows * g->hs * g->asz, NULL,
           NULL, P32(g, k->knw), krows, g->hs, g->eps, g->stream);
    return ACCEL_OK;
}

/* Its backward: d(q|k after the norm) at dq (dk right after, as qk_norm_forward's q and k) becomes
 * d(q|k before it); the weight gradients are added to the block's q_norm and k_norm. */
static accel_status_t qk_norm_backward(accel_gpt_cuda_t *g, const blk_t *k, int l, void *dq, int n)
{
    const int qrows = n * g->NH * g->T, krows = n * g->KVH * g->T;
    const size_t bytes = (size_t)(qrows + krows) * g->hs * g->asz, qbytes = (size_t)qrows * g->hs * g->asz;
    char *dpre = ACT(g, g->plan.s_dqkn), *d = dq;
    const char *pre = LA(l, qkn);
    const float *rstd = LF(l, qkn_rstd);
    CUDA_OK(cudaMemsetAsync(dpre, 0, bytes, g->stream));
    KERNEL(rmsnorm_backward, g->dt, dpre, G32(g, k->qnw), d, pre, rstd, P32(g, k->qnw), qrows, g->hs,
           g->stream);
    KERNEL(rmsnorm_backward, g->dt, dpre + qbytes, G32(g, k->knw), d + qbytes, pre + qbytes, rstd + qrows,
           P32(g, k->knw), krows, g->hs, g->stream);
    CUDA_OK(cudaMemcpyAsync(d, dpre, bytes, cudaMemcpyDeviceToDevice, g->stream));
    return ACCEL_OK;
}

/* Forward through the logits for n rows of device tokens. Attention runs as one strided-batched
 * product per (sample, kv head) over its G query heads (llama_cuda_kernels.h; gpt: G = 1). */
static accel_status_t forward(accel_gpt_cuda_t *g, const int32_t *tok, int n, const accel_layer_hooks_t *hk)
{
    const int C = g->C, T = g->T, NH = g->NH, KVH = g->KVH, G = g->G, hs = g->hs, BT = n * T;
    const int stride = T + 1, QKV = g->QKV, F = g->F, FIN = g->FIN, nb = n * KVH;
    const accel_gpt_cuda_plan_t *pl = &g->plan;
    const long long sS = (long long)G * T * T, sQ = (long long)G * T * hs, sKV = (long long)T * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    void *x0 = ACT(g, pl->x0);
    ACCEL_CHECK(fetch(g, hk, 0, true));             /* embeddings: layer 0 */
    KERNEL(encoder_forward, g->dt, x0, tok, stride, g->d_pos, P32(g, g->wte), P32_OPT(g, g->wpe), n, T, C,
           g->stream);
    ACCEL_CHECK(fetch(g, hk, g->L ? 1 : g->L + 1, true));
    release(hk, 0);
    if (g->L == 0) {
        ACCEL_CHECK(norm_forward(g, ACT(g, pl->lnf), (float *)ACT(g, pl->lnf_mean),
                                 (float *)ACT(g, pl->lnf_rstd), NULL, x0, NULL, NULL,
                                 P32(g, g->lnfw), P32_OPT(g, g->lnfb), BT));
    } else {
        ACCEL_CHECK(norm_forward(g, LA(0, ln1), LF(0, ln1_mean), LF(0, ln1_rstd), NULL, x0, NULL,
                                 NULL, P32(g, g->blk[0].ln1w), P32_OPT(g, g->blk[0].ln1b), BT));
    }
    for (int l = 0; l < g->L; l++) {
        const blk_t *k = &g->blk[l];
        const void *res_in = l ? LA(l - 1, res3) : x0;
        char *qkvp = LA(l, qkvp);
        void *s_qkv = ACT(g, pl->s_qkv), *s_c = ACT(g, pl->s_c), *yp = ACT(g, pl->s_yp);
        float *s32 = (float *)ACT(g, pl->s_att32);
        char *q = qkvp, *kk = qkvp + part_bytes(g, n, 1), *v = qkvp + part_bytes(g, n, 2);
        MM("qkv = ln1 Wqkv^T", false, true, BT, QKV, C, LA(l, ln1), C, PLP(g, k->qkvw), C, s_qkv, QKV);
        if (g->llama) {
            KERNEL(permute_gqa, g->dt, q, kk, v, s_qkv, P32_OPT(g, k->qkvb), n, T, NH, KVH, hs, g->stream);
            if (g->qk_norm) ACCEL_CHECK(qk_norm_forward(g, k, l, q, kk, n));
            KERNEL(rope, g->dt, q, g->rope_cos, g->rope_sin, n, NH, T, hs, 0, g->d_pos, 0, g->stream);
            KERNEL(rope, g->dt, kk, g->rope_cos, g->rope_sin, n, KVH, T, hs, 0, g->d_pos, 0, g->stream);
        } else {
            KERNEL(permute, g->dt, qkvp, s_qkv, P32(g, k->qkvb), n, T, NH, hs, 3, g->stream);
        }
        ACCEL_CHECK(gemm(g, "scores = Q K^T", false, true, G * T, T, hs, scale, q, hs, sQ, kk, hs, sKV,
                         0.0f, s32, CUDA_R_32F, T, sS, nb));
        KERNEL(softmax_forward, g->dt, LA(l, att), s32, n * NH * T, T, g->d_pos, NH, g->stream);
        ACCEL_CHECK(gemm(g, "y = P V", false, false, G * T, hs, T, 1.0f, LA(l, att), T, sS, v, hs, sKV,
                         0.0f, yp, g->cdt, hs, sQ, nb));
        KERNEL(unpermute, g->dt, LA(l, atty), yp, n, T, NH, hs, 1, g->stream);
        MM("attn proj", false, true, BT, C, g->QW, LA(l, atty), g->QW, PLP(g, k->projw), g->QW, s_c, C);
        ACCEL_CHECK(norm_forward(g, LA(l, ln2), LF(l, ln2_mean), LF(l, ln2_rstd), LA(l, res2), res_in,
                                 s_c, P32_OPT(g, k->projb), P32(g, k->ln2w), P32_OPT(g, k->ln2b), BT));
        MM("mlp fc", false, true, BT, FIN, C, LA(l, ln2), C, PLP(g, k->fcw), C, LA(l, fch), FIN);
        if (g->llama)
            KERNEL(swiglu_forward, g->dt, LA(l, fch_gelu), LA(l, fch), BT, F, g->stream);
        else
            KERNEL(bias_gelu_forward, g->dt, LA(l, fch), LA(l, fch_gelu), P32(g, k->fcb),
                   (size_t)BT * F, F, g->stream);
        MM("mlp proj", false, true, BT, C, F, LA(l, fch_gelu), F, PLP(g, k->fcpw), F, s_c, C);
        /* res3 = res2 + mlp + bias, normalised by the next block's norm1 or by the final norm */
        bool last = l + 1 == g->L;
        ACCEL_CHECK(fetch(g, hk, last ? g->L + 1 : l + 2, true));
        void *lnout = last ? ACT(g, pl->lnf) : LA(l + 1, ln1);
        float *mean = last ? (float *)ACT(g, pl->lnf_mean) : LF(l + 1, ln1_mean);
        float *rstd = last ? (float *)ACT(g, pl->lnf_rstd) : LF(l + 1, ln1_rstd);
        const float *w = last ? P32(g, g->lnfw) : P32(g, g->blk[l + 1].ln1w);
        const float *b = last ? P32_OPT(g, g->lnfb) : P32_OPT(g, g->blk[l + 1].ln1b);
        ACCEL_CHECK(norm_forward(g, lnout, mean, rstd, LA(l, res3), LA(l, res2), s_c,
                                 P32_OPT(g, k->fcpb), w, b, BT));
        release(hk, l + 1);
    }
    release(hk, g->L + 1);
    /* The LM head reads wte (layer 0) again when tied, else lm_head (layer L+1, cast with it
     * above); backward then starts with that layer fetched. */
    ACCEL_CHECK(fetch(g, hk, head_layer(g), false));
    MM("logits = lnf Whead^T", false, true, BT, g->V, C, ACT(g, pl->lnf), C, PLP(g, g->head), C,
       ACT(g, pl->logits), pl->Vp);
    return ACCEL_OK;
}

/* Backward from the dlogits in the logits buffer; gradients added into g->grads. */
static accel_status_t backward(accel_gpt_cuda_t *g, const int32_t *tok, int n, const accel_layer_hooks_t *hk)
{
    const int C = g->C, T = g->T, NH = g->NH, KVH = g->KVH, G = g->G, hs = g->hs, BT = n * T;
    const int V = g->V, stride = T + 1, QKV = g->QKV, F = g->F, FIN = g->FIN, nb = n * KVH;
    const accel_gpt_cuda_plan_t *pl = &g->plan;
    const long long sS = (long long)G * T * T, sQ = (long long)G * T * hs, sKV = (long long)T * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    void *logits = ACT(g, pl->logits), *lnf = ACT(g, pl->lnf), *dres = ACT(g, pl->dres);
    void *s_c = ACT(g, pl->s_c), *s_4c = ACT(g, pl->s_4c), *s_qkv = ACT(g, pl->s_qkv);
    void *yp = ACT(g, pl->s_yp);
    char *dqkvp = ACT(g, pl->s_dqkvp);
    float *s32 = (float *)ACT(g, pl->s_att32);
    void *datt = ACT(g, pl->s_datt);
    void *x0 = ACT(g, pl->x0);
    /* LM head (wte when tied) */
    MM("dlnf = dlogits Whead", false, false, BT, C, V, logits, pl->Vp, PLP(g, g->head), C, s_c, C);
    MM_GRAD("dWhead += dlogits^T lnf", V, C, BT, logits, pl->Vp, lnf, C, G32(g, g->head), C);
    if (g->tied) release(hk, 0);
    CUDA_OK(cudaMemsetAsync(dres, 0, (size_t)BT * C * g->asz, g->stream));
    if (g->tied) ACCEL_CHECK(fetch(g, hk, g->L + 1, false));  /* untied: fetched for the head */
    const void *last = g->L ? LA(g->L - 1, res3) : x0;
    ACCEL_CHECK(norm_backward(g, dres, G32(g, g->lnfw), G32_OPT(g, g->lnfb), s_c, last,
                              (float *)ACT(g, pl->lnf_mean), (float *)ACT(g, pl->lnf_rstd),
                              P32(g, g->lnfw), BT));
    release(hk, g->L + 1);
    done(hk, g->L + 1);
    for (int l = g->L - 1; l >= 0; l--) {
        const blk_t *k = &g->blk[l];
        const void *res_in = l ? LA(l - 1, res3) : x0;
        ACCEL_CHECK(fetch(g, hk, l + 1, false));
        /* MLP: res3 = res2 + act(ln2 Wfc^T + bfc) Wfcp^T + bfcp (llama: act = SwiGLU, no biases) */
        if (g->llama) {
            void *dh = ACT(g, pl->s_dh);
            MM("dh = dres Wdown", false, false, BT, F, C, dres, C, PLP(g, k->fcpw), F, dh, F);
            MM_GRAD("dWdown += dres^T h", C, F, BT, dres, C, LA(l, fch_gelu), F, G32(g, k->fcpw), F);
            KERNEL(swiglu_backward, g->dt, s_4c, dh, LA(l, fch), BT, F, g->stream);
        } else {
            MM("d(gelu) = dres Wfcp", false, false, BT, F, C, dres, C, PLP(g, k->fcpw), F, s_4c, F);
            MM_GRAD("dWfcp += dres^T gelu", C, F, BT, dres, C, LA(l, fch_gelu), F, G32(g, k->fcpw), F);
            KERNEL(colsum_add, g->dt, G32(g, k->fcpb), dres, BT, C, g->stream);
            KERNEL(gelu_backward, g->dt, s_4c, LA(l, fch), (size_t)BT * F, g->stream);
        }
        MM("dln2 = dfch Wfc", false, false, BT, C, FIN, s_4c, FIN, PLP(g, k->fcw), C, s_c, C);
        MM_GRAD("dWfc += dfch^T ln2", FIN, C, BT, s_4c, FIN, LA(l, ln2), C, G32(g, k->fcw), C);
        if (k->fcb >= 0) KERNEL(colsum_add, g->dt, G32(g, k->fcb), s_4c, BT, FIN, g->stream);
        ACCEL_CHECK(norm_backward(g, dres, G32(g, k->ln2w), G32_OPT(g, k->ln2b), s_c, LA(l, res2),
                                  LF(l, ln2_mean), LF(l, ln2_rstd), P32(g, k->ln2w), BT));
        /* attention: res2 = res_in + attn(ln1) Wproj^T + bproj */
        MM("datty = dres Wproj", false, false, BT, g->QW, C, dres, C, PLP(g, k->projw), g->QW, s_c, g->QW);
        MM_GRAD("dWproj += dres^T atty", C, g->QW, BT, dres, C, LA(l, atty), g->QW, G32(g, k->projw), g->QW);
        if (k->projb >= 0) KERNEL(colsum_add, g->dt, G32(g, k->projb), dres, BT, C, g->stream);
        KERNEL(permute, g->dt, yp, s_c, NULL, n, T, NH, hs, 1, g->stream);
        const char *qkvp = LA(l, qkvp);
        const void *q = qkvp, *kk = qkvp + part_bytes(g, n, 1), *v = qkvp + part_bytes(g, n, 2);
        char *dq = dqkvp, *dk = dqkvp + part_bytes(g, n, 1), *dv = dqkvp + part_bytes(g, n, 2);
        ACCEL_CHECK(gemm(g, "dP = dY V^T", false, true, G * T, T, hs, 1.0f, yp, hs, sQ, v, hs, sKV, 0.0f,
                         s32, CUDA_R_32F, T, sS, nb));
        ACCEL_CHECK(gemm(g, "dV = P^T dY", true, false, T, hs, G * T, 1.0f, LA(l, att), T, sS, yp, hs, sQ,
                         0.0f, dv, g->cdt, hs, sKV, nb));
        KERNEL(softmax_backward, g->dt, datt, LA(l, att), s32, n * NH * T, T, g->d_pos, NH, g->stream);
        ACCEL_CHECK(gemm(g, "dQ = dS K", false, false, G * T, hs, T, scale, datt, T, sS, kk, hs, sKV, 0.0f,
                         dq, g->cdt, hs, sQ, nb));
        ACCEL_CHECK(gemm(g, "dK = dS^T Q", true, false, T, hs, G * T, scale, datt, T, sS, q, hs, sQ, 0.0f,
                         dk, g->cdt, hs, sKV, nb));
        if (g->llama) {
            KERNEL(rope, g->dt, dq, g->rope_cos, g->rope_sin, n, NH, T, hs, 0, g->d_pos, 1, g->stream);
            KERNEL(rope, g->dt, dk, g->rope_cos, g->rope_sin, n, KVH, T, hs, 0, g->d_pos, 1, g->stream);
            if (g->qk_norm) ACCEL_CHECK(qk_norm_backward(g, k, l, dq, n));
            KERNEL(unpermute_gqa, g->dt, s_qkv, dq, dk, dv, n, T, NH, KVH, hs, g->stream);
        } else {
            KERNEL(unpermute, g->dt, s_qkv, dqkvp, n, T, NH, hs, 3, g->stream);
        }
        MM("dln1 = dqkv Wqkv", false, false, BT, C, QKV, s_qkv, QKV, PLP(g, k->qkvw), C, s_c, C);
        MM_GRAD("dWqkv += dqkv^T ln1", QKV, C, BT, s_qkv, QKV, LA(l, ln1), C, G32(g, k->qkvw), C);
        if (k->qkvb >= 0) KERNEL(colsum_add, g->dt, G32(g, k->qkvb), s_qkv, BT, QKV, g->stream);
        ACCEL_CHECK(norm_backward(g, dres, G32(g, k->ln1w), G32_OPT(g, k->ln1b), s_c, res_in,
                                  LF(l, ln1_mean), LF(l, ln1_rstd), P32(g, k->ln1w), BT));
        release(hk, l + 1);
        done(hk, l + 1);
    }
    KERNEL(encoder_backward, g->dt, G32(g, g->wte), G32_OPT(g, g->wpe), dres, tok, stride, g->d_pos, n, T, C,
           g->stream);
    done(hk, 0);                                    /* wte: head (when tied) and embedding parts */
    return ACCEL_OK;
}


/* Point the passes at this call's parameters and gradients; stage the token rows (and targets, positions). */
static accel_status_t begin(accel_gpt_cuda_t *g, const accel_layout_t *layout, const float *params,
                            float *grads, const int32_t *tokens, const uint8_t *mask,
                            const int32_t *positions, int n, int *slot)
{
    if (layout != g->layout) {
        ACCEL_ERROR("gpt_cuda: called with another tensor table than the one it registered");
        return ACCEL_ERR_INVALID;
    }
    g->params = params;
    g->grads = grads;
    g->lp = g->lp16 ? g->lp16 : (const void *)params;
    ACCEL_CHECK(reserve(g, n));
    return stage_tokens(g, tokens, mask, positions, n, slot);
}

/* The per-token losses of the last classifier call into h_losses (waits for the stream). */
static accel_status_t fetch_losses(accel_gpt_cuda_t *g, int n, int slot)
{
    CUDA_OK(cudaMemcpyAsync(g->h_losses, ACT(g, g->plan.losses), sizeof(float) * (size_t)n * g->T,
                            cudaMemcpyDeviceToHost, g->stream));
    CUDA_OK(cudaEventRecord(g->tok_used[slot], g->stream));
    CUDA_OK(cudaStreamSynchronize(g->stream));
    return ACCEL_OK;
}

static accel_status_t gpt_cuda_forward_backward(void *state, const accel_layout_t *layout,
                                                const float *params, float *grads,
                                                const accel_batch_t *batch, float grad_scale,
                                                double *loss_sum)
{
    accel_gpt_cuda_t *g = state;
    const int n = batch->n;
    *loss_sum = 0;
    if (n <= 0) return ACCEL_OK;
    int s;
    ACCEL_CHECK(begin(g, layout, params, grads, batch->tokens, batch->loss_mask, batch->positions, n, &s));
    const accel_layer_hooks_t *hk = batch->hooks;
    const int32_t *tok = g->d_tok[s], *tgt = tok + (batch->loss_mask ? (size_t)n * (g->T + 1) : 0);
    ACCEL_CHECK(forward(g, tok, n, hk));
    KERNEL(classifier, g->dt, ACT(g, g->plan.logits), (float *)ACT(g, g->plan.losses), tgt, g->T + 1,
           n, g->T, g->V, g->plan.Vp, grad_scale / (float)g->T, grad_scale != 0.0f, g->stream);
    if (grad_scale != 0.0f) ACCEL_CHECK(backward(g, tok, n, hk));
    else release(hk, head_layer(g));
    /* The loss is the one value the host needs: reading it waits for the pass (the gradient
     * reductions started by the hooks run on on the communicator's stream meanwhile). */
    ACCEL_CHECK(fetch_losses(g, n, s));
    double total = 0;
    for (size_t i = 0; i < (size_t)n * g->T; i++) total += (double)g->h_losses[i];
    *loss_sum = total / g->T;
    return ACCEL_OK;
}

static accel_status_t gpt_cuda_eval(void *state, const accel_layout_t *layout, const float *params,
                                    const accel_batch_t *batch, float *loss, int *correct)
{
    accel_gpt_cuda_t *g = state;
    const int n = batch->n;
    if (n <= 0) return ACCEL_OK;
    int s;
    ACCEL_CHECK(begin(g, layout, params, NULL, batch->tokens, batch->loss_mask, batch->positions, n, &s));
    const int32_t *tok = g->d_tok[s], *tgt = tok + (batch->loss_mask ? (size_t)n * (g->T + 1) : 0);
    ACCEL_CHECK(forward(g, tok, n, batch->hooks));
    release(batch->hooks, head_layer(g));
    KERNEL(classifier, g->dt, ACT(g, g->plan.logits), (float *)ACT(g, g->plan.losses), tgt, g->T + 1,
           n, g->T, g->V, g->plan.Vp, 0.0f, 0, g->stream);
    ACCEL_CHECK(fetch_losses(g, n, s));
    for (int b = 0; b < n; b++) {
        double acc = 0;
        for (int t = 0; t < g->T; t++) acc += (double)g->h_losses[(size_t)b * g->T + t];
        loss[b] = (float)(acc / g->T);
    }
    if (correct) memset(correct, 0, sizeof(int) * (size_t)n);
    return ACCEL_OK;
}

static accel_status_t gpt_cuda_logits(void *state, const accel_layout_t *layout, const float *params,
                                      const int32_t *tokens, int ntokens, float *out_logits)
{
    accel_gpt_cuda_t *g = state;
    if (ntokens < 1 || ntokens > g->T) {
        ACCEL_ERROR("gpt_cuda: logits need 1..%d tokens (got %d)", g->T, ntokens);
        return ACCEL_ERR_INVALID;
    }
    /* One row at full context: the causal mask makes positions < ntokens independent of the
     * padding after them. */
    const size_t row = (size_t)g->T + 1;
    int32_t *ids = calloc(row, sizeof *ids);
    void *z = malloc((size_t)g->V * g->asz);
    accel_status_t st = ids && z ? ACCEL_OK : ACCEL_ERR_NOMEM;
    int s = 0;
    if (st == ACCEL_OK) {
        memcpy(ids, tokens, sizeof *ids * (size_t)ntokens);
        st = begin(g, layout, params, NULL, ids, NULL, NULL, 1, &s);
    }
    if (st == ACCEL_OK) st = forward(g, g->d_tok[s], 1, NULL);
    if (st == ACCEL_OK) {
        const char *src = (const char *)ACT(g, g->plan.logits) + (size_t)(ntokens - 1) * g->plan.Vp * g->asz;
        cudaError_t e = cudaMemcpyAsync(z, src, (size_t)g->V * g->asz, cudaMemcpyDeviceToHost, g->stream);
        if (e == cudaSuccess) e = cudaEventRecord(g->tok_used[s], g->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
        if (e != cudaSuccess) {
            ACCEL_ERROR("gpt_cuda: copying the logits to the host failed: %s", cudaGetErrorString(e));
            st = ACCEL_ERR_CUDA;
        }
    }
    if (st == ACCEL_OK)
        for (int v = 0; v < g->V; v++)
            out_logits[v] = g->dt == ACCEL_F32 ? ((const float *)z)[v]
                          : g->dt == ACCEL_BF16 ? accel_bf16_to_f32(((const uint16_t *)z)[v])
                                                : accel_f16_to_f32(((const uint16_t *)z)[v]);
    free(ids);
    free(z);
    return st;
}

static size_t gpt_cuda_activation_bytes(const accel_config_t *cfg, int micro_batch)
{
    size_t bytes = 0;
    accel_gpt_cuda_estimate_bytes(cfg, micro_batch, 0, 0, 0, &bytes);
    return bytes;
}

#else /* !ACCEL_HAVE_CUDA */

static accel_status_t gpt_cuda_create(const accel_config_t *cfg, accel_layout_t *layout, void **state)
{
    (void)cfg;
    (void)layout;
    *state = NULL;
    ACCEL_ERROR0("the GPU path is not available: accel was built without CUDA\n--> hint: use "
                 "device=cpu, or rebuild with a CUDA toolkit");
    return ACCEL_ERR_UNSUPPORTED;
}

/* Without CUDA the model exists (so that a job asking for the GPU is told why not) but cannot be
 * created. */
#define gpt_cuda_forward_backward NULL
#define gpt_cuda_eval NULL
#define gpt_cuda_destroy NULL
#define gpt_cuda_activation_bytes NULL
#define gpt_cuda_logits NULL

#endif

/* One engine for both families (it reads model.name at create): two tables for their names. */
#define DECODER_CUDA_OPS(family)                                                                \
    {                                                                                           \
        .abi = ACCEL_MODEL_ABI, .name = family, .fetches_layers = 1, .consumes_tokens = 1,      \
        .create = gpt_cuda_create, .forward_backward = gpt_cuda_forward_backward,               \
        .eval = gpt_cuda_eval, .destroy = gpt_cuda_destroy,                                     \
        .activation_bytes = gpt_cuda_activation_bytes, .logits = gpt_cuda_logits,               \
        .reads_loss_mask = 1,                                                                   \
    }

const accel_model_ops_t accel_model_gpt_cuda = DECODER_CUDA_OPS("gpt");
const accel_model_ops_t accel_model_llama_cuda = DECODER_CUDA_OPS("llama");
