/* The CUDA GPT training engine (include/accel/gpt_cuda.h): device arenas, the forward and backward
 * passes as a sequence of cuBLAS products and kernels (src/nn/gpt_cuda_kernels.cu) on one compute
 * stream, token staging through pinned buffers on a copy stream, and the gradient reduction with
 * NCCL on the communicator's own stream, ordered after the layers it needs by events.
 *
 * The pass mirrors the CPU model (src/nn/gpt.c) step by step: the same tensor table, pre-LayerNorm
 * blocks, tanh GELU, 1/sqrt(head size) attention scaling, tied LM head, and the loss as the sum of
 * per-sample mean token losses. Every CUDA, cuBLAS and NCCL return is checked and reported with the
 * call that failed. Host C only: kernels live in the .cu file. */
#include "config.h"

#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/comm.h"
#include "accel/gpt_cuda.h"
#include "accel/grad_sync.h"
#include "accel/log.h"
#include "accel/timer.h"

#if ACCEL_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gpt_cuda_kernels.h"

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
 * the engine waits for every kernel and product, so an error is reported at the one that failed
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

typedef struct {                    /* tensor indices of one block */
    int ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, fcpw, fcpb;
} blk_t;

struct accel_gpt_cuda {
    int L, NH, C, T, V, hs, B, K;
    accel_dtype_t dt;
    cudaDataType_t cdt;             /* activations and low-precision parameter copy */
    size_t asz;
    const accel_layout_t *layout;
    size_t numel;
    int wte, wpe, lnfw, lnfb;
    blk_t *blk;
    accel_gpt_cuda_plan_t plan;
    cudaStream_t stream, copy;
    cublasHandle_t blas;
    float *params, *grads;          /* fp32 master parameters and gradients: the full arena */
    void *lp;                       /* parameters in the activation type (== params for fp32) */
    float *m, *v, *owned_grads;     /* owned vector: moments; zero1: reduced gradient slices */
    unsigned char *decay;
    size_t owned_n;
    accel_gpt_cuda_range_t *ranges;
    int nranges;
    int sharded, adam;
    char *acts;                     /* activations and work buffers (plan) */
    int32_t *d_tok[2], *h_tok[2];   /* device and pinned host token rows, double-buffered */
    cudaEvent_t tok_copied[2], tok_used[2];
    int slot;
    float *h_losses;                /* pinned: per-token losses of a step's micro-batches */
    size_t loss_rows;
    double *d_sumsq, *h_sumsq;
    /* communication */
    accel_comm_t *comm;             /* NCCL over the data-parallel ranks; NULL: one rank, no NCCL */
    cudaStream_t comm_stream;
    int world, rank;
    accel_gpt_cuda_bucket_t *buckets; /* ddp: groups of layers; zero1: one per layer */
    size_t *bucket_owned;           /* zero1: owned offset of this rank's slice of each bucket */
    cudaEvent_t *bucket_ready;
    accel_request_t **reqs;
    int nbuckets;
    double exposed_s;
    size_t device_bytes;
    bool poison;
    bool debug_sync;                /* ACCEL_CUDA_SYNC=1: wait after every kernel and product */
    double timeout;                 /* dist.timeout: seconds a collective may take */
    /* Device time of the phases (CUDA events on the compute stream), summed over steps. */
    cudaEvent_t ev_start, ev_fwd, ev_end, ev_opt0, ev_opt1;
    bool step_timed, opt_pending;
    double fwd_ms, fb_ms, opt_ms;
    int timed_steps, timed_opts;
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
#define PLP(g, idx) ((void *)((char *)(g)->lp + (g)->layout->tensors[(idx)].offset * (g)->asz))

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

/* ------------------------------------------------------------------ creation */

static accel_status_t find(const accel_layout_t *layout, const char *name, int *index)
{
    for (int i = 0; i < layout->ntensors; i++)
        if (!strcmp(layout->tensors[i].name, name)) {
            *index = i;
            return ACCEL_OK;
        }
    ACCEL_ERROR("gpt_cuda: the model has no tensor '%s': the layout is not the built-in gpt's", name);
    return ACCEL_ERR_SHAPE;
}

static accel_status_t find_tensors(accel_gpt_cuda_t *g)
{
    const accel_layout_t *lo = g->layout;
    ACCEL_CHECK(find(lo, "wte", &g->wte));
    ACCEL_CHECK(find(lo, "wpe", &g->wpe));
    ACCEL_CHECK(find(lo, "lnf.weight", &g->lnfw));
    ACCEL_CHECK(find(lo, "lnf.bias", &g->lnfb));
    for (int l = 0; l < g->L; l++) {
        blk_t *b = &g->blk[l];
        char name[ACCEL_TENSOR_NAME_MAX];
#define FIND(suffix, field)                                                                     \
        snprintf(name, sizeof name, "h.%d." suffix, l);                                         \
        ACCEL_CHECK(find(lo, name, &b->field))
        FIND("ln1.weight", ln1w); FIND("ln1.bias", ln1b);
        FIND("attn.qkv.weight", qkvw); FIND("attn.qkv.bias", qkvb);
        FIND("attn.proj.weight", projw); FIND("attn.proj.bias", projb);
        FIND("ln2.weight", ln2w); FIND("ln2.bias", ln2b);
        FIND("mlp.fc.weight", fcw); FIND("mlp.fc.bias", fcb);
        FIND("mlp.proj.weight", fcpw); FIND("mlp.proj.bias", fcpb);
#undef FIND
    }
    /* The tied head reads wte as a [V, C] matrix. */
    const accel_tensor_t *wte = &lo->tensors[g->wte];
    if (wte->ndim != 2 || wte->shape[0] != g->V || wte->shape[1] != g->C) {
        ACCEL_ERROR("gpt_cuda: wte has shape [%lld, %lld], expected [%d, %d]",
                    (long long)wte->shape[0], (long long)wte->shape[1], g->V, g->C);
        return ACCEL_ERR_SHAPE;
    }
    return ACCEL_OK;
}

static accel_status_t dalloc(accel_gpt_cuda_t *g, void **p, size_t bytes, const char *what)
{
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        size_t free_b = 0, total_b = 0;
        cudaGetLastError();
        cudaMemGetInfo(&free_b, &total_b);
        ACCEL_ERROR("gpt_cuda: cannot allocate %.1f MiB of device memory for %s: %s (%.1f of %.1f "
                    "MiB free)\n--> hint: lower the micro-batch (raise train.grad_accum) or the "
                    "model size", bytes / 1048576.0, what, cudaGetErrorString(e),
                    free_b / 1048576.0, total_b / 1048576.0);
        *p = NULL;
        return ACCEL_ERR_NOMEM;
    }
    g->device_bytes += bytes;
    return ACCEL_OK;
}

void accel_gpt_cuda_destroy(accel_gpt_cuda_t *g)
{
    if (!g) return;
    if (g->stream) cudaStreamSynchronize(g->stream);
    cudaEvent_t *evs[] = { &g->ev_start, &g->ev_fwd, &g->ev_end, &g->ev_opt0, &g->ev_opt1 };
    for (int i = 0; i < 5; i++)
        if (*evs[i]) cudaEventDestroy(*evs[i]);
    for (int b = 0; b < g->nbuckets; b++)
        if (g->bucket_ready && g->bucket_ready[b]) cudaEventDestroy(g->bucket_ready[b]);
    accel_comm_destroy(g->comm);
    for (int s = 0; s < 2; s++) {
        cudaFree(g->d_tok[s]);
        cudaFreeHost(g->h_tok[s]);
        if (g->tok_copied[s]) cudaEventDestroy(g->tok_copied[s]);
        if (g->tok_used[s]) cudaEventDestroy(g->tok_used[s]);
    }
    cudaFreeHost(g->h_losses);
    cudaFreeHost(g->h_sumsq);
    cudaFree(g->d_sumsq);
    cudaFree(g->acts);
    if (g->lp != (void *)g->params) cudaFree(g->lp);
    cudaFree(g->params);
    cudaFree(g->grads);
    if (g->owned_grads != g->grads) cudaFree(g->owned_grads);
    cudaFree(g->m);
    cudaFree(g->v);
    cudaFree(g->decay);
    if (g->blas) cublasDestroy(g->blas);
    if (g->stream) cudaStreamDestroy(g->stream);
    if (g->copy) cudaStreamDestroy(g->copy);
    free(g->blk);
    free(g->ranges);
    free(g->buckets);
    free(g->bucket_owned);
    free(g->bucket_ready);
    free(g->reqs);
    free(g);
}

/* ddp: buckets of whole layers of about dist.bucket_mb; zero1: one per layer, each rank owning the
 * rank-th slice of every layer (the CPU ZeRO layout, checked against the owned ranges). */
static accel_status_t plan_comm(accel_gpt_cuda_t *g, const accel_gpt_cuda_config_t *c)
{
    const int nl = g->layout->nlayers;
    size_t *begin = calloc((size_t)nl, sizeof *begin), *end = calloc((size_t)nl, sizeof *end);
    g->buckets = calloc((size_t)nl, sizeof *g->buckets);
    g->bucket_owned = calloc((size_t)nl, sizeof *g->bucket_owned);
    g->bucket_ready = calloc((size_t)nl, sizeof *g->bucket_ready);
    g->reqs = calloc((size_t)nl, sizeof *g->reqs);
    accel_status_t st = ACCEL_OK;
    if (!begin || !end || !g->buckets || !g->bucket_owned || !g->bucket_ready || !g->reqs) {
        st = ACCEL_ERR_NOMEM;
        goto done;
    }
    size_t multiple = g->sharded ? (size_t)g->world * ACCEL_ARENA_ALIGN : 1;
    st = accel_gpt_cuda_plan_layer_spans(g->layout, multiple, begin, end);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("gpt_cuda: the tensor table's layers are not contiguous ranges");
        goto done;
    }
    if (!g->sharded) {
        size_t bytes = sizeof(float) * accel_grad_sync_bucket_elems(c->cfg->dist.bucket_mb,
                                                                   g->layout->numel);
        g->nbuckets = accel_gpt_cuda_plan_buckets(begin, end, nl, bytes, g->buckets);
    } else {
        g->nbuckets = 0;
        for (int l = nl - 1; l >= 0; l--) {
            if (end[l] <= begin[l]) continue;
            size_t span = end[l] - begin[l], slice = span / (size_t)g->world;
            size_t mine = begin[l] + (size_t)g->rank * slice;
            int found = -1;
            for (int r = 0; r < g->nranges; r++)
                if (g->ranges[r].begin == mine && g->ranges[r].end == mine + slice) found = r;
            if (span % (size_t)g->world || found < 0) {
                ACCEL_ERROR("gpt_cuda: zero1: layer %d spans [%zu, %zu), whose slice for rank %d of "
                            "%d is not one of the rank's owned ranges\n--> hint: this is a bug in "
                            "accel (the CPU and GPU ZeRO layouts disagree)", l, begin[l], end[l],
                            g->rank, g->world);
                st = ACCEL_ERR_INVALID;
                goto done;
            }
            g->bucket_owned[g->nbuckets] = g->ranges[found].owned;
            g->buckets[g->nbuckets++] = (accel_gpt_cuda_bucket_t){ l, l, begin[l], end[l] };
        }
    }
    for (int b = 0; b < g->nbuckets; b++)
        if (cudaEventCreateWithFlags(&g->bucket_ready[b], cudaEventDisableTiming) != cudaSuccess) {
            ACCEL_ERROR("gpt_cuda: cudaEventCreateWithFlags failed: %s",
                        cudaGetErrorString(cudaGetLastError()));
            st = ACCEL_ERR_CUDA;
            goto done;
        }
done:
    free(begin);
    free(end);
    return st;
}

static accel_status_t create_comm(accel_gpt_cuda_t *g, const accel_gpt_cuda_config_t *c)
{
    MPI_Comm_size(c->comm, &g->world);
    MPI_Comm_rank(c->comm, &g->rank);
#if ACCEL_HAVE_NCCL
    accel_status_t st = accel_comm_create(c->comm, ACCEL_COMM_NCCL, c->cfg->dist.timeout, &g->comm);
    if (st != ACCEL_OK && g->world == 1) {  /* one rank needs no collectives: train on */
        ACCEL_WARN("gpt_cuda: cannot create an NCCL communicator (%s); one rank needs none, so "
                   "training continues without it\n--> hint: NCCL_DEBUG=INFO shows why NCCL failed "
                   "(it is needed for more than one rank)", accel_status_str(st));
        g->comm = NULL;
        return ACCEL_OK;
    }
    if (st != ACCEL_OK) {
        ACCEL_ERROR("gpt_cuda: cannot create the NCCL communicator over %d rank%s (%s)\n--> hint: "
                    "NCCL_DEBUG=INFO shows why; one rank per GPU is needed", g->world,
                    g->world == 1 ? "" : "s", accel_status_str(st));
        return st;
    }
    g->comm_stream = (cudaStream_t)accel_comm_cuda_stream(g->comm);
    if (g->comm)
        ACCEL_INFO("gpu: NCCL %d communicator over %d rank%s (bootstrapped from MPI)",
                   accel_comm_nccl_version(), g->world, g->world == 1 ? "" : "s");
    return ACCEL_OK;
#else
    if (g->world > 1) {
        ACCEL_ERROR0("gpt_cuda: %d ranks on GPUs need NCCL, and accel was built without it\n--> "
                     "hint: reconfigure with a CUDA toolkit that has NCCL (nccl.h, libnccl)", g->world);
        return ACCEL_ERR_UNSUPPORTED;
    }
    return ACCEL_OK;
#endif
}

accel_status_t accel_gpt_cuda_create(const accel_gpt_cuda_config_t *c, accel_gpt_cuda_t **out)
{
    *out = NULL;
    const accel_model_config_t *mc = &c->cfg->model;
    int dt = accel_dtype_parse(c->cfg->precision);
    accel_gpt_cuda_t *g = calloc(1, sizeof *g);
    if (!g) return ACCEL_ERR_NOMEM;
    accel_status_t st = ACCEL_OK;
    g->L = mc->layers; g->NH = mc->heads; g->C = mc->width; g->T = mc->context; g->V = mc->vocab;
    g->hs = g->C / (g->NH > 0 ? g->NH : 1);
    g->B = c->micro;
    g->K = c->grad_accum > 0 ? c->grad_accum : 1;
    g->layout = c->layout;
    g->numel = c->layout->numel;
    g->sharded = c->sharded;
    g->adam = c->adam;
    g->owned_n = c->owned_n;
    g->timeout = c->cfg->dist.timeout;
    const char *dbg = getenv("ACCEL_CUDA_SYNC");
    g->debug_sync = dbg && atoi(dbg) > 0;
    g->dt = (accel_dtype_t)dt;
    g->cdt = dt == ACCEL_BF16 ? CUDA_R_16BF : dt == ACCEL_F16 ? CUDA_R_16F : CUDA_R_32F;
    g->asz = dt == ACCEL_F32 ? 4 : 2;
    if (dt != ACCEL_F32 && dt != ACCEL_BF16 && dt != ACCEL_F16) {
        ACCEL_ERROR0("gpt_cuda: precision '%s' is not supported\n--> hint: use fp32, bf16 or fp16",
                     c->cfg->precision);
        st = ACCEL_ERR_CONFIG;
        goto fail;
    }
    if (g->C > 6144) {
        ACCEL_ERROR0("gpt_cuda: model.width=%d is above the 6144 the LayerNorm kernels support", g->C);
        st = ACCEL_ERR_CONFIG;
        goto fail;
    }
    st = accel_gpt_cuda_plan(g->L, g->NH, g->C, g->T, g->V, g->B, g->asz, &g->plan);
    if (st != ACCEL_OK) {
        ACCEL_ERROR0("gpt_cuda: a micro-batch of %d x %d tokens of this model (width %d, vocab %d) "
                     "is out of range for the GPU engine\n--> hint: lower the micro-batch (raise "
                     "train.grad_accum)", g->B, g->T, g->C, g->V);
        goto fail;
    }
    g->blk = calloc((size_t)g->L, sizeof *g->blk);
    g->ranges = calloc((size_t)(c->nranges > 0 ? c->nranges : 1), sizeof *g->ranges);
    if (!g->blk || !g->ranges) { st = ACCEL_ERR_NOMEM; goto fail; }
    memcpy(g->ranges, c->ranges, sizeof *g->ranges * (size_t)c->nranges);
    g->nranges = c->nranges;
    ACCEL_CHECK_GOTO(find_tensors(g), st, fail);

#define CU(call)                                                                                \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            ACCEL_ERROR("gpt_cuda: %s failed: %s", #call, cudaGetErrorString(e_));              \
            st = ACCEL_ERR_CUDA;                                                                \
            goto fail;                                                                          \
        }                                                                                       \
    } while (0)
    CU(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CU(cudaStreamCreateWithFlags(&g->copy, cudaStreamNonBlocking));
    cublasStatus_t bs = cublasCreate(&g->blas);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(g->blas, g->stream);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        ACCEL_ERROR("gpt_cuda: cublasCreate/cublasSetStream failed: %s", blas_status(bs));
        g->blas = NULL;
        st = ACCEL_ERR_CUDA;
        goto fail;
    }
    const size_t n4 = g->numel * sizeof(float);
    ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->params, n4, "fp32 parameters"), st, fail);
    ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->grads, n4, "fp32 gradients"), st, fail);
    if (g->dt == ACCEL_F32) g->lp = g->params;
    else ACCEL_CHECK_GOTO(dalloc(g, &g->lp, g->numel * g->asz, "16-bit parameter copy"), st, fail);
    const size_t on = g->owned_n ? g->owned_n : 1;
    ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->m, on * sizeof(float), "optimizer moments"), st, fail);
    if (g->adam) ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->v, on * sizeof(float), "optimizer moments"), st, fail);
    ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->decay, on, "weight-decay mask"), st, fail);
    if (g->sharded) ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->owned_grads, on * sizeof(float), "gradient shard"), st, fail);
    else g->owned_grads = g->grads;
    ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->acts, g->plan.total, "activations"), st, fail);
    /* Everything on the engine's stream: its streams are non-blocking, so work on the legacy
     * default stream (plain cudaMemcpy/cudaMemset) would not be ordered with its kernels. */
    CU(cudaMemcpyAsync(g->decay, c->decay_mask, g->owned_n, cudaMemcpyHostToDevice, g->stream));
    CU(cudaMemsetAsync(g->grads, 0, n4, g->stream));
    CU(cudaMemsetAsync(g->m, 0, on * sizeof(float), g->stream));
    if (g->v) CU(cudaMemsetAsync(g->v, 0, on * sizeof(float), g->stream));
    CU(cudaStreamSynchronize(g->stream));
    const size_t tok_bytes = sizeof(int32_t) * (size_t)g->B * (size_t)(g->T + 1);
    for (int s = 0; s < 2; s++) {
        ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->d_tok[s], tok_bytes, "token rows"), st, fail);
        CU(cudaMallocHost((void **)&g->h_tok[s], tok_bytes));
        CU(cudaEventCreateWithFlags(&g->tok_copied[s], cudaEventDisableTiming));
        CU(cudaEventCreateWithFlags(&g->tok_used[s], cudaEventDisableTiming));
    }
    CU(cudaMallocHost((void **)&g->h_losses, sizeof(float) * (size_t)g->K * g->B * g->T));
    CU(cudaEventCreateWithFlags(&g->ev_start, cudaEventDefault));
    CU(cudaEventCreateWithFlags(&g->ev_fwd, cudaEventDefault));
    CU(cudaEventCreateWithFlags(&g->ev_end, cudaEventDefault));
    CU(cudaEventCreateWithFlags(&g->ev_opt0, cudaEventDefault));
    CU(cudaEventCreateWithFlags(&g->ev_opt1, cudaEventDefault));
    CU(cudaMallocHost((void **)&g->h_sumsq, sizeof(double)));
    ACCEL_CHECK_GOTO(dalloc(g, (void **)&g->d_sumsq, sizeof(double), "norm scratch"), st, fail);
#undef CU
    st = ACCEL_OK;
fail:
    /* NCCL initialisation is collective: every rank learns first whether every rank got this far,
     * so that a rank that failed above cannot leave the others waiting in ncclCommInitRank. */
    {
        int ok = st == ACCEL_OK, all = 0;
        if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->comm) != MPI_SUCCESS) all = 0;
        if (!all) {
            if (st == ACCEL_OK) {
                ACCEL_ERROR("gpt_cuda: the GPU engine could not be set up on another rank");
                st = ACCEL_ERR_CUDA;
            }
            accel_gpt_cuda_destroy(g);
            return st;
        }
    }
    st = create_comm(g, c);
    if (st == ACCEL_OK) st = plan_comm(g, c);
    if (st != ACCEL_OK) {
        accel_gpt_cuda_destroy(g);
        return st;
    }
    ACCEL_INFO("gpu: %s GPT engine, %.1f MiB of device memory (activations %.1f MiB for %d x %d "
               "tokens), gradients reduced in %d %s", accel_dtype_name(g->dt), g->device_bytes / 1048576.0,
               g->plan.total / 1048576.0, g->B, g->T, g->nbuckets,
               g->sharded ? "reduce-scatters (zero1, one per layer)" : "bucket allreduces (ddp)");
    *out = g;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ state transfer */

accel_status_t accel_gpt_cuda_upload(accel_gpt_cuda_t *g, const float *params, const float *m,
                                     const float *v)
{
    /* Stream-ordered copies (pageable memory is staged by the driver), then the cast after them. */
    CUDA_OK(cudaMemcpyAsync(g->params, params, g->numel * sizeof(float), cudaMemcpyHostToDevice, g->stream));
    if (m) CUDA_OK(cudaMemcpyAsync(g->m, m, g->owned_n * sizeof(float), cudaMemcpyHostToDevice, g->stream));
    if (v && g->v)
        CUDA_OK(cudaMemcpyAsync(g->v, v, g->owned_n * sizeof(float), cudaMemcpyHostToDevice, g->stream));
    if (g->lp != (void *)g->params) KERNEL(cast, g->dt, g->lp, g->params, g->numel, g->stream);
    CUDA_OK(cudaStreamSynchronize(g->stream));
    return ACCEL_OK;
}

accel_status_t accel_gpt_cuda_download(accel_gpt_cuda_t *g, float *params, float *owned_params,
                                       float *m, float *v)
{
    const enum cudaMemcpyKind d2h = cudaMemcpyDeviceToHost;
    if (params) CUDA_OK(cudaMemcpyAsync(params, g->params, g->numel * sizeof(float), d2h, g->stream));
    if (owned_params)
        for (int r = 0; r < g->nranges; r++) {
            const accel_gpt_cuda_range_t *rg = &g->ranges[r];
            CUDA_OK(cudaMemcpyAsync(owned_params + rg->owned, g->params + rg->begin,
                                    (rg->end - rg->begin) * sizeof(float), d2h, g->stream));
        }
    if (m) CUDA_OK(cudaMemcpyAsync(m, g->m, g->owned_n * sizeof(float), d2h, g->stream));
    if (v && g->v) CUDA_OK(cudaMemcpyAsync(v, g->v, g->owned_n * sizeof(float), d2h, g->stream));
    CUDA_OK(cudaStreamSynchronize(g->stream));
    return ACCEL_OK;
}

/* Token ids outside the vocabulary would index past wte on the device: refuse them here. */
static accel_status_t check_tokens(const accel_gpt_cuda_t *g, const int32_t *tokens, int n)
{
    if (n < 1 || n > g->B) {
        ACCEL_ERROR("gpt_cuda: a micro-batch of %d samples (the engine was sized for 1..%d)", n, g->B);
        return ACCEL_ERR_INVALID;
    }
    const int stride = g->T + 1;
    for (int b = 0; b < n; b++)
        for (int t = 0; t < stride; t++) {
            int32_t id = tokens[(size_t)b * stride + t];
            if (id < 0 || id >= g->V) {
                ACCEL_ERROR("gpt: sample %d, position %d has token id %d, outside the vocabulary "
                            "0..%d\n--> hint: the data's tokenizer must match model.vocab=%d", b, t,
                            id, g->V - 1, g->V);
                return ACCEL_ERR_INVALID;
            }
        }
    return ACCEL_OK;
}

/* Host rows -> pinned slot -> device on the copy stream; the compute stream waits for the copy.
 * The slot's previous copy and its previous reader are waited for first (double buffering). */
static accel_status_t stage_tokens(accel_gpt_cuda_t *g, const int32_t *tokens, int n, int *slot)
{
    ACCEL_CHECK(check_tokens(g, tokens, n));
    const int s = g->slot;
    g->slot ^= 1;
    const size_t bytes = sizeof(int32_t) * (size_t)n * (size_t)(g->T + 1);
    CUDA_OK(cudaEventSynchronize(g->tok_copied[s]));
    memcpy(g->h_tok[s], tokens, bytes);
    CUDA_OK(cudaStreamWaitEvent(g->copy, g->tok_used[s], 0));
    CUDA_OK(cudaMemcpyAsync(g->d_tok[s], g->h_tok[s], bytes, cudaMemcpyHostToDevice, g->copy));
    CUDA_OK(cudaEventRecord(g->tok_copied[s], g->copy));
    CUDA_OK(cudaStreamWaitEvent(g->stream, g->tok_copied[s], 0));
    *slot = s;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ the passes */

static char *layer_base(accel_gpt_cuda_t *g, int l)
{
    return g->acts + g->plan.layers_base + (size_t)l * g->plan.layer_bytes;
}

#define LA(l, field) ((void *)(layer_base(g, (l)) + g->plan.layer.field))
#define LF(l, field) ((float *)(layer_base(g, (l)) + g->plan.layer.field))

/* Element offset of part p (0 q, 1 k, 2 v) in a per-head [3][B][NH][T][hs] buffer, in bytes. */
static size_t part_bytes(const accel_gpt_cuda_t *g, int n, int p)
{
    return (size_t)p * (size_t)n * g->T * g->C * g->asz;
}

/* Forward through the logits for n rows of device tokens. */
static accel_status_t forward(accel_gpt_cuda_t *g, const int32_t *tok, int n)
{
    const int C = g->C, T = g->T, NH = g->NH, hs = g->hs, BT = n * T, stride = T + 1;
    const accel_gpt_cuda_plan_t *pl = &g->plan;
    const long long sTT = (long long)T * T, sTh = (long long)T * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    void *x0 = ACT(g, pl->x0);
    KERNEL(encoder_forward, g->dt, x0, tok, stride, P32(g, g->wte), P32(g, g->wpe), n, T, C, g->stream);
    if (g->L == 0) {
        KERNEL(layernorm_forward, g->dt, ACT(g, pl->lnf), (float *)ACT(g, pl->lnf_mean),
               (float *)ACT(g, pl->lnf_rstd), NULL, x0, NULL, NULL, P32(g, g->lnfw), P32(g, g->lnfb),
               BT, C, g->stream);
    } else {
        KERNEL(layernorm_forward, g->dt, LA(0, ln1), LF(0, ln1_mean), LF(0, ln1_rstd), NULL, x0, NULL,
               NULL, P32(g, g->blk[0].ln1w), P32(g, g->blk[0].ln1b), BT, C, g->stream);
    }
    for (int l = 0; l < g->L; l++) {
        const blk_t *k = &g->blk[l];
        const void *res_in = l ? LA(l - 1, res3) : x0;
        char *qkvp = LA(l, qkvp);
        void *s_qkv = ACT(g, pl->s_qkv), *s_c = ACT(g, pl->s_c), *yp = ACT(g, pl->s_yp);
        float *s32 = (float *)ACT(g, pl->s_att32);
        MM("qkv = ln1 Wqkv^T", false, true, BT, 3 * C, C, LA(l, ln1), C, PLP(g, k->qkvw), C, s_qkv, 3 * C);
        KERNEL(permute, g->dt, qkvp, s_qkv, P32(g, k->qkvb), n, T, NH, hs, 3, g->stream);
        const void *q = qkvp, *kk = qkvp + part_bytes(g, n, 1), *v = qkvp + part_bytes(g, n, 2);
        ACCEL_CHECK(gemm(g, "scores = Q K^T", false, true, T, T, hs, scale, q, hs, sTh, kk, hs, sTh,
                         0.0f, s32, CUDA_R_32F, T, sTT, n * NH));
        KERNEL(softmax_forward, g->dt, LA(l, att), s32, n * NH * T, T, g->stream);
        ACCEL_CHECK(gemm(g, "y = P V", false, false, T, hs, T, 1.0f, LA(l, att), T, sTT, v, hs, sTh,
                         0.0f, yp, g->cdt, hs, sTh, n * NH));
        KERNEL(unpermute, g->dt, LA(l, atty), yp, n, T, NH, hs, 1, g->stream);
        MM("attn proj", false, true, BT, C, C, LA(l, atty), C, PLP(g, k->projw), C, s_c, C);
        KERNEL(layernorm_forward, g->dt, LA(l, ln2), LF(l, ln2_mean), LF(l, ln2_rstd), LA(l, res2),
               res_in, s_c, P32(g, k->projb), P32(g, k->ln2w), P32(g, k->ln2b), BT, C, g->stream);
        MM("mlp fc", false, true, BT, 4 * C, C, LA(l, ln2), C, PLP(g, k->fcw), C, LA(l, fch), 4 * C);
        KERNEL(bias_gelu_forward, g->dt, LA(l, fch), LA(l, fch_gelu), P32(g, k->fcb), (size_t)BT * 4 * C,
               4 * C, g->stream);
        MM("mlp proj", false, true, BT, C, 4 * C, LA(l, fch_gelu), 4 * C, PLP(g, k->fcpw), 4 * C, s_c, C);
        /* res3 = res2 + mlp + bias, normalised by the next block's ln1 or by lnf */
        bool last = l + 1 == g->L;
        void *lnout = last ? ACT(g, pl->lnf) : LA(l + 1, ln1);
        float *mean = last ? (float *)ACT(g, pl->lnf_mean) : LF(l + 1, ln1_mean);
        float *rstd = last ? (float *)ACT(g, pl->lnf_rstd) : LF(l + 1, ln1_rstd);
        const float *w = last ? P32(g, g->lnfw) : P32(g, g->blk[l + 1].ln1w);
        const float *b = last ? P32(g, g->lnfb) : P32(g, g->blk[l + 1].ln1b);
        KERNEL(layernorm_forward, g->dt, lnout, mean, rstd, LA(l, res3), LA(l, res2), s_c,
               P32(g, k->fcpb), w, b, BT, C, g->stream);
    }
    MM("logits = lnf wte^T", false, true, BT, g->V, C, ACT(g, pl->lnf), C, PLP(g, g->wte), C,
       ACT(g, pl->logits), pl->Vp);
    return ACCEL_OK;
}

/* A layer's gradients are complete on the compute stream: start the bucket it completes. */
static accel_status_t layer_done(accel_gpt_cuda_t *g, int layer, bool reduce)
{
    if (!reduce) return ACCEL_OK;
    for (int b = 0; b < g->nbuckets; b++) {
        accel_gpt_cuda_bucket_t *bk = &g->buckets[b];
        if (bk->first_layer != layer || bk->end <= bk->begin) continue;
        if (!g->comm) {
            /* one rank without NCCL: the sum is the local gradient */
            if (g->sharded)
                CUDA_OK(cudaMemcpyAsync(g->owned_grads + g->bucket_owned[b], g->grads + bk->begin,
                                        (bk->end - bk->begin) * sizeof(float),
                                        cudaMemcpyDeviceToDevice, g->stream));
            continue;
        }
        CUDA_OK(cudaEventRecord(g->bucket_ready[b], g->stream));
        CUDA_OK(cudaStreamWaitEvent(g->comm_stream, g->bucket_ready[b], 0));
        float *p = g->grads + bk->begin;
        size_t count = bk->end - bk->begin;
        if (g->sharded)
            ACCEL_CHECK(accel_comm_reduce_scatter(g->comm, p, g->owned_grads + g->bucket_owned[b],
                                                  count / (size_t)g->world, ACCEL_F32, ACCEL_SUM,
                                                  &g->reqs[b]));
        else
            ACCEL_CHECK(accel_comm_allreduce(g->comm, p, p, count, ACCEL_F32, ACCEL_SUM, &g->reqs[b]));
    }
    return ACCEL_OK;
}

/* Backward from the dlogits in the logits buffer; gradients added into g->grads. */
static accel_status_t backward(accel_gpt_cuda_t *g, const int32_t *tok, int n, bool reduce)
{
    const int C = g->C, T = g->T, NH = g->NH, hs = g->hs, BT = n * T, V = g->V, stride = T + 1;
    const accel_gpt_cuda_plan_t *pl = &g->plan;
    const long long sTT = (long long)T * T, sTh = (long long)T * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    void *logits = ACT(g, pl->logits), *lnf = ACT(g, pl->lnf), *dres = ACT(g, pl->dres);
    void *s_c = ACT(g, pl->s_c), *s_4c = ACT(g, pl->s_4c), *s_qkv = ACT(g, pl->s_qkv);
    void *yp = ACT(g, pl->s_yp);
    char *dqkvp = ACT(g, pl->s_dqkvp);
    float *s32 = (float *)ACT(g, pl->s_att32);
    void *datt = ACT(g, pl->s_datt);
    void *x0 = ACT(g, pl->x0);
    /* tied LM head */
    MM("dlnf = dlogits wte", false, false, BT, C, V, logits, pl->Vp, PLP(g, g->wte), C, s_c, C);
    MM_GRAD("dwte += dlogits^T lnf", V, C, BT, logits, pl->Vp, lnf, C, G32(g, g->wte), C);
    CUDA_OK(cudaMemsetAsync(dres, 0, (size_t)BT * C * g->asz, g->stream));
    const void *last = g->L ? LA(g->L - 1, res3) : x0;
    KERNEL(layernorm_backward, g->dt, dres, G32(g, g->lnfw), G32(g, g->lnfb), s_c, last,
           (float *)ACT(g, pl->lnf_mean), (float *)ACT(g, pl->lnf_rstd), P32(g, g->lnfw), BT, C, g->stream);
    ACCEL_CHECK(layer_done(g, g->L + 1, reduce));
    for (int l = g->L - 1; l >= 0; l--) {
        const blk_t *k = &g->blk[l];
        const void *res_in = l ? LA(l - 1, res3) : x0;
        /* MLP: res3 = res2 + gelu(ln2 Wfc^T + bfc) Wfcp^T + bfcp */
        MM("d(gelu) = dres Wfcp", false, false, BT, 4 * C, C, dres, C, PLP(g, k->fcpw), 4 * C, s_4c, 4 * C);
        MM_GRAD("dWfcp += dres^T gelu", C, 4 * C, BT, dres, C, LA(l, fch_gelu), 4 * C, G32(g, k->fcpw), 4 * C);
        KERNEL(colsum_add, g->dt, G32(g, k->fcpb), dres, BT, C, g->stream);
        KERNEL(gelu_backward, g->dt, s_4c, LA(l, fch), (size_t)BT * 4 * C, g->stream);
        MM("dln2 = dfch Wfc", false, false, BT, C, 4 * C, s_4c, 4 * C, PLP(g, k->fcw), C, s_c, C);
        MM_GRAD("dWfc += dfch^T ln2", 4 * C, C, BT, s_4c, 4 * C, LA(l, ln2), C, G32(g, k->fcw), C);
        KERNEL(colsum_add, g->dt, G32(g, k->fcb), s_4c, BT, 4 * C, g->stream);
        KERNEL(layernorm_backward, g->dt, dres, G32(g, k->ln2w), G32(g, k->ln2b), s_c, LA(l, res2),
               LF(l, ln2_mean), LF(l, ln2_rstd), P32(g, k->ln2w), BT, C, g->stream);
        /* attention: res2 = res_in + attn(ln1) Wproj^T + bproj */
        MM("datty = dres Wproj", false, false, BT, C, C, dres, C, PLP(g, k->projw), C, s_c, C);
        MM_GRAD("dWproj += dres^T atty", C, C, BT, dres, C, LA(l, atty), C, G32(g, k->projw), C);
        KERNEL(colsum_add, g->dt, G32(g, k->projb), dres, BT, C, g->stream);
        KERNEL(permute, g->dt, yp, s_c, NULL, n, T, NH, hs, 1, g->stream);
        const char *qkvp = LA(l, qkvp);
        const void *q = qkvp, *kk = qkvp + part_bytes(g, n, 1), *v = qkvp + part_bytes(g, n, 2);
        void *dq = dqkvp, *dk = dqkvp + part_bytes(g, n, 1), *dv = dqkvp + part_bytes(g, n, 2);
        ACCEL_CHECK(gemm(g, "dP = dY V^T", false, true, T, T, hs, 1.0f, yp, hs, sTh, v, hs, sTh, 0.0f,
                         s32, CUDA_R_32F, T, sTT, n * NH));
        ACCEL_CHECK(gemm(g, "dV = P^T dY", true, false, T, hs, T, 1.0f, LA(l, att), T, sTT, yp, hs, sTh,
                         0.0f, dv, g->cdt, hs, sTh, n * NH));
        KERNEL(softmax_backward, g->dt, datt, LA(l, att), s32, n * NH * T, T, g->stream);
        ACCEL_CHECK(gemm(g, "dQ = dS K", false, false, T, hs, T, scale, datt, T, sTT, kk, hs, sTh, 0.0f,
                         dq, g->cdt, hs, sTh, n * NH));
        ACCEL_CHECK(gemm(g, "dK = dS^T Q", true, false, T, hs, T, scale, datt, T, sTT, q, hs, sTh, 0.0f,
                         dk, g->cdt, hs, sTh, n * NH));
        KERNEL(unpermute, g->dt, s_qkv, dqkvp, n, T, NH, hs, 3, g->stream);
        MM("dln1 = dqkv Wqkv", false, false, BT, C, 3 * C, s_qkv, 3 * C, PLP(g, k->qkvw), C, s_c, C);
        MM_GRAD("dWqkv += dqkv^T ln1", 3 * C, C, BT, s_qkv, 3 * C, LA(l, ln1), C, G32(g, k->qkvw), C);
        KERNEL(colsum_add, g->dt, G32(g, k->qkvb), s_qkv, BT, 3 * C, g->stream);
        KERNEL(layernorm_backward, g->dt, dres, G32(g, k->ln1w), G32(g, k->ln1b), s_c, res_in,
               LF(l, ln1_mean), LF(l, ln1_rstd), P32(g, k->ln1w), BT, C, g->stream);
        ACCEL_CHECK(layer_done(g, l + 1, reduce));
    }
    KERNEL(encoder_backward, g->dt, G32(g, g->wte), G32(g, g->wpe), dres, tok, stride, n, T, C, g->stream);
    ACCEL_CHECK(layer_done(g, 0, reduce));
    return ACCEL_OK;
}

/* Per-token losses of the last classifier call, queued to the pinned buffer at row `at`. */
static accel_status_t queue_losses(accel_gpt_cuda_t *g, int n, size_t at)
{
    CUDA_OK(cudaMemcpyAsync(g->h_losses + at, ACT(g, g->plan.losses),
                            sizeof(float) * (size_t)n * g->T, cudaMemcpyDeviceToHost, g->stream));
    return ACCEL_OK;
}

static accel_status_t micro_step(accel_gpt_cuda_t *g, const int32_t *tokens, int n, bool first,
                                 bool reduce, float grad_scale)
{
    int s;
    ACCEL_CHECK(stage_tokens(g, tokens, n, &s));
    const int32_t *tok = g->d_tok[s];
    if (first) {
        CUDA_OK(cudaMemsetAsync(g->grads, 0, g->numel * sizeof(float), g->stream));
        g->loss_rows = 0;
        CUDA_OK(cudaEventRecord(g->ev_start, g->stream));
        g->step_timed = false;
    }
    ACCEL_CHECK(forward(g, tok, n));
    KERNEL(classifier, g->dt, ACT(g, g->plan.logits), (float *)ACT(g, g->plan.losses), tok, g->T + 1,
           n, g->T, g->V, g->plan.Vp, grad_scale / (float)g->T, grad_scale != 0.0f, g->stream);
    if (first) CUDA_OK(cudaEventRecord(g->ev_fwd, g->stream));
    if (g->loss_rows + (size_t)n * g->T > (size_t)g->K * g->B * g->T) {
        ACCEL_ERROR("gpt_cuda: more micro-batches in a step than train.grad_accum=%d", g->K);
        return ACCEL_ERR_INVALID;
    }
    ACCEL_CHECK(queue_losses(g, n, g->loss_rows));
    g->loss_rows += (size_t)n * g->T;
    if (grad_scale != 0.0f) ACCEL_CHECK(backward(g, tok, n, reduce));
    CUDA_OK(cudaEventRecord(g->tok_used[s], g->stream));
    if (reduce) {
        CUDA_OK(cudaEventRecord(g->ev_end, g->stream));
        g->step_timed = true;
    }
    return ACCEL_OK;
}

/* Fold the finished phases' event times into the sums (the stream has been synchronised). */
static void collect_times(accel_gpt_cuda_t *g)
{
    float ms;
    if (g->step_timed) {
        if (cudaEventElapsedTime(&ms, g->ev_start, g->ev_fwd) == cudaSuccess) g->fwd_ms += ms;
        if (cudaEventElapsedTime(&ms, g->ev_start, g->ev_end) == cudaSuccess) g->fb_ms += ms;
        g->timed_steps++;
        g->step_timed = false;
    }
    if (g->opt_pending) {
        if (cudaEventElapsedTime(&ms, g->ev_opt0, g->ev_opt1) == cudaSuccess) g->opt_ms += ms;
        g->timed_opts++;
        g->opt_pending = false;
    }
    cudaGetLastError();             /* a failed timing query is not an error of the job */
}

void accel_gpt_cuda_timing(accel_gpt_cuda_t *g, double *fwd_ms, double *fb_ms, double *opt_ms)
{
    cudaStreamSynchronize(g->stream);
    collect_times(g);
    *fwd_ms = g->timed_steps ? g->fwd_ms / g->timed_steps : 0;
    *fb_ms = g->timed_steps ? g->fb_ms / g->timed_steps : 0;
    *opt_ms = g->timed_opts ? g->opt_ms / g->timed_opts : 0;
}

accel_status_t accel_gpt_cuda_forward_backward(accel_gpt_cuda_t *g, const int32_t *tokens, int n,
                                               int k, int K, float grad_scale)
{
    return micro_step(g, tokens, n, k == 0, k + 1 == K, grad_scale);
}

/* Wait for bucket b's collective (the watchdog): polls NCCL's completion and asynchronous errors;
 * past dist.timeout it says which collective of which layers hung, then accel_comm_wait aborts the
 * job (ncclCommAbort first) with the communicator's own message. */
static accel_status_t wait_bucket(accel_gpt_cuda_t *g, int b, const char *what)
{
    const accel_gpt_cuda_bucket_t *bk = &g->buckets[b];
    double t0 = accel_now();
    for (long spins = 0;; spins++) {
        int done = 0;
        accel_status_t st = accel_comm_test(g->comm, g->reqs[b], &done);
        if (done) {
            g->reqs[b] = NULL;
            if (st != ACCEL_OK)
                ACCEL_ERROR("gpt_cuda: the %s of layers %d..%d (%zu floats) failed", what,
                            bk->first_layer, bk->last_layer, bk->end - bk->begin);
            return st;
        }
        if (g->timeout > 0 && (spins & 63) == 0 && accel_now() - t0 > g->timeout) {
            ACCEL_ERROR("gpt_cuda: the %s of layers %d..%d (%zu floats, NCCL) has not completed after "
                        "%.0f s (dist.timeout): a rank is missing from it or hung", what,
                        bk->first_layer, bk->last_layer, bk->end - bk->begin, accel_now() - t0);
            st = accel_comm_wait(g->comm, g->reqs[b]);      /* past its deadline: aborts the job */
            g->reqs[b] = NULL;
            return st != ACCEL_OK ? st : ACCEL_ERR_TIMEOUT;
        }
        if (spins > 2000) {
            struct timespec ts = { 0, 50 * 1000 };
            nanosleep(&ts, NULL);
        } else if (spins > 200) {
            sched_yield();
        }
    }
}

accel_status_t accel_gpt_cuda_finish_grads(accel_gpt_cuda_t *g, double *loss_sum, double *sumsq,
                                           int *replicas, int *finite)
{
    double t0 = accel_now();
    for (int b = 0; b < g->nbuckets; b++)
        if (g->reqs[b])
            ACCEL_CHECK(wait_bucket(g, b, g->sharded ? "gradient reduce-scatter" : "gradient allreduce"));
    g->exposed_s += accel_now() - t0;
    if (g->poison) {                /* tests: an injected overflow, after the reduction */
        CUDA_OK(cudaMemsetAsync(g->owned_grads, 0xff, sizeof(float), g->stream));
        g->poison = false;
    }
    CUDA_OK(cudaMemsetAsync(g->d_sumsq, 0, sizeof(double), g->stream));
    KERNEL(sumsq, g->owned_grads, g->sharded ? g->owned_n : g->numel, g->d_sumsq, g->stream);
    CUDA_OK(cudaMemcpyAsync(g->h_sumsq, g->d_sumsq, sizeof(double), cudaMemcpyDeviceToHost, g->stream));
    CUDA_OK(cudaStreamSynchronize(g->stream));
    collect_times(g);
    double total = 0;
    for (size_t i = 0; i < g->loss_rows; i++) total += (double)g->h_losses[i];
    *loss_sum = total / g->T;
    *sumsq = *g->h_sumsq;
    *replicas = g->sharded ? 1 : g->world;
    *finite = isfinite(*sumsq) ? 1 : 0;
    return ACCEL_OK;
}

accel_status_t accel_gpt_cuda_step(accel_gpt_cuda_t *g, const accel_gpt_cuda_update_t *u)
{
    void *lp = g->dt == ACCEL_F32 || g->sharded ? NULL : g->lp;
    const float step_size = u->lr / u->bias_corr1, inv_sqrt_bc2 = 1.0f / sqrtf(u->bias_corr2);
    const float lr_wd = u->lr * u->weight_decay;
    CUDA_OK(cudaEventRecord(g->ev_opt0, g->stream));
    for (int r = 0; r < g->nranges; r++) {
        const accel_gpt_cuda_range_t *rg = &g->ranges[r];
        size_t n = rg->end - rg->begin;
        float *p = g->params + rg->begin;
        void *lpr = lp ? (char *)lp + rg->begin * g->asz : NULL;
        const float *gr = g->sharded ? g->owned_grads + rg->owned : g->grads + rg->begin;
        if (g->adam)
            KERNEL(adamw, g->dt, p, lpr, gr, g->m + rg->owned, g->v + rg->owned, g->decay + rg->owned, n,
                   u->grad_mul, u->beta1, u->beta2, u->eps, step_size, inv_sqrt_bc2, lr_wd, g->stream);
        else
            KERNEL(sgd, g->dt, p, lpr, gr, g->m + rg->owned, g->decay + rg->owned, n, u->grad_mul, u->lr,
                   u->weight_decay, u->momentum, g->stream);
    }
    if (!g->sharded) {
        CUDA_OK(cudaEventRecord(g->ev_opt1, g->stream));
        g->opt_pending = true;
        return ACCEL_OK;
    }
    /* zero1: every rank updated its slice of every layer; gather the layers in place. */
    if (g->comm && g->nbuckets > 0) {
        CUDA_OK(cudaEventRecord(g->bucket_ready[0], g->stream));
        CUDA_OK(cudaStreamWaitEvent(g->comm_stream, g->bucket_ready[0], 0));
        for (int b = 0; b < g->nbuckets; b++) {
            accel_gpt_cuda_bucket_t *bk = &g->buckets[b];
            size_t slice = (bk->end - bk->begin) / (size_t)g->world;
            if (!slice) continue;
            ACCEL_CHECK(accel_comm_allgather(g->comm, g->params + bk->begin + (size_t)g->rank * slice,
                                             g->params + bk->begin, slice, ACCEL_F32, &g->reqs[b]));
        }
        for (int b = 0; b < g->nbuckets; b++)
            if (g->reqs[b]) ACCEL_CHECK(wait_bucket(g, b, "parameter allgather"));
    }
    if (g->lp != (void *)g->params) KERNEL(cast, g->dt, g->lp, g->params, g->numel, g->stream);
    CUDA_OK(cudaEventRecord(g->ev_opt1, g->stream));
    g->opt_pending = true;
    return ACCEL_OK;
}

accel_status_t accel_gpt_cuda_poison_grads(accel_gpt_cuda_t *g)
{
    g->poison = true;               /* applied by finish_grads, once the reduction is done */
    return ACCEL_OK;
}

accel_status_t accel_gpt_cuda_eval(accel_gpt_cuda_t *g, const int32_t *tokens, int n, float *loss)
{
    int s;
    ACCEL_CHECK(stage_tokens(g, tokens, n, &s));
    const int32_t *tok = g->d_tok[s];
    ACCEL_CHECK(forward(g, tok, n));
    KERNEL(classifier, g->dt, ACT(g, g->plan.logits), (float *)ACT(g, g->plan.losses), tok, g->T + 1,
           n, g->T, g->V, g->plan.Vp, 0.0f, 0, g->stream);
    /* Evaluation happens between steps: the loss buffer's first rows are free. */
    ACCEL_CHECK(queue_losses(g, n, 0));
    CUDA_OK(cudaEventRecord(g->tok_used[s], g->stream));
    CUDA_OK(cudaStreamSynchronize(g->stream));
    for (int b = 0; b < n; b++) {
        double acc = 0;
        for (int t = 0; t < g->T; t++) acc += (double)g->h_losses[(size_t)b * g->T + t];
        loss[b] = (float)(acc / g->T);
    }
    return ACCEL_OK;
}

accel_status_t accel_gpt_cuda_logits(accel_gpt_cuda_t *g, const int32_t *tokens, int ntokens,
                                     float *out_logits)
{
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
        st = stage_tokens(g, ids, 1, &s);
    }
    if (st == ACCEL_OK) st = forward(g, g->d_tok[s], 1);
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

accel_status_t accel_gpt_cuda_gradients(accel_gpt_cuda_t *g, const int32_t *tokens, int n,
                                        float grad_scale, float *grads, double *loss_sum)
{
    ACCEL_CHECK(micro_step(g, tokens, n, true, false, grad_scale));
    CUDA_OK(cudaStreamSynchronize(g->stream));
    double total = 0;
    for (size_t i = 0; i < g->loss_rows; i++) total += (double)g->h_losses[i];
    *loss_sum = total / g->T;
    CUDA_OK(cudaMemcpyAsync(grads, g->grads, g->numel * sizeof(float), cudaMemcpyDeviceToHost, g->stream));
    CUDA_OK(cudaStreamSynchronize(g->stream));
    return ACCEL_OK;
}

size_t accel_gpt_cuda_bytes_sent(const accel_gpt_cuda_t *g) { return g->comm ? accel_comm_bytes_sent(g->comm) : 0; }
double accel_gpt_cuda_exposed_seconds(const accel_gpt_cuda_t *g) { return g->exposed_s; }
size_t accel_gpt_cuda_device_bytes(const accel_gpt_cuda_t *g) { return g->device_bytes; }

#else /* !ACCEL_HAVE_CUDA */

static accel_status_t no_cuda(void)
{
    ACCEL_ERROR("the GPU engine is not available: accel was built without CUDA\n--> hint: use "
                "device=cpu, or rebuild with --with-cuda");
    return ACCEL_ERR_UNSUPPORTED;
}

accel_status_t accel_gpt_cuda_create(const accel_gpt_cuda_config_t *cfg, accel_gpt_cuda_t **out)
{
    (void)cfg;
    *out = NULL;
    return no_cuda();
}
void accel_gpt_cuda_destroy(accel_gpt_cuda_t *g) { (void)g; }
accel_status_t accel_gpt_cuda_upload(accel_gpt_cuda_t *g, const float *p, const float *m, const float *v)
{ (void)g; (void)p; (void)m; (void)v; return no_cuda(); }
accel_status_t accel_gpt_cuda_download(accel_gpt_cuda_t *g, float *p, float *op, float *m, float *v)
{ (void)g; (void)p; (void)op; (void)m; (void)v; return no_cuda(); }
accel_status_t accel_gpt_cuda_forward_backward(accel_gpt_cuda_t *g, const int32_t *t, int n, int k,
                                               int K, float s)
{ (void)g; (void)t; (void)n; (void)k; (void)K; (void)s; return no_cuda(); }
accel_status_t accel_gpt_cuda_finish_grads(accel_gpt_cuda_t *g, double *l, double *s, int *r, int *f)
{ (void)g; (void)l; (void)s; (void)r; (void)f; return no_cuda(); }
accel_status_t accel_gpt_cuda_step(accel_gpt_cuda_t *g, const accel_gpt_cuda_update_t *u)
{ (void)g; (void)u; return no_cuda(); }
accel_status_t accel_gpt_cuda_poison_grads(accel_gpt_cuda_t *g) { (void)g; return no_cuda(); }
accel_status_t accel_gpt_cuda_eval(accel_gpt_cuda_t *g, const int32_t *t, int n, float *l)
{ (void)g; (void)t; (void)n; (void)l; return no_cuda(); }
accel_status_t accel_gpt_cuda_gradients(accel_gpt_cuda_t *g, const int32_t *t, int n, float s,
                                        float *gr, double *l)
{ (void)g; (void)t; (void)n; (void)s; (void)gr; (void)l; return no_cuda(); }
size_t accel_gpt_cuda_bytes_sent(const accel_gpt_cuda_t *g) { (void)g; return 0; }
double accel_gpt_cuda_exposed_seconds(const accel_gpt_cuda_t *g) { (void)g; return 0; }
size_t accel_gpt_cuda_device_bytes(const accel_gpt_cuda_t *g) { (void)g; return 0; }
void accel_gpt_cuda_timing(accel_gpt_cuda_t *g, double *f, double *fb, double *o)
{ (void)g; *f = *fb = *o = 0; }
accel_status_t accel_gpt_cuda_logits(accel_gpt_cuda_t *g, const int32_t *t, int n, float *l)
{ (void)g; (void)t; (void)n; (void)l; return no_cuda(); }

#endif
