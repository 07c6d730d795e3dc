/* An emulated CUDA device for testing the GPU engine's host code on machines without a GPU.
 *
 * Linked into tests/gpu_mock_check (with -export-dynamic), these definitions interpose the CUDA
 * runtime, cuBLAS and kernel-launcher symbols that libaccel's src/nn/gpt_cuda.c calls: "device"
 * memory is host memory filled with NaN bytes (so reading a buffer nobody wrote shows up as NaN),
 * streams and events are no-ops (everything runs in call order), cuBLAS products are computed
 * naively with cuBLAS's own column-major semantics and argument checks (so a wrong transpose,
 * leading dimension or stride in the engine gives wrong numbers or CUBLAS_STATUS_INVALID_VALUE),
 * and each accel_gk_* kernel is re-implemented in plain C from its contract in
 * src/nn/gpt_cuda_kernels.h or src/nn/llama_cuda_kernels.h. The engine's NCCL communicator is an MPI one over host memory. It is linked into two programs: tests/gpu_mock_check (the engine
 * against the CPU model) and tests/gpu_mock_train (accel_train itself, so the trainer's whole
 * device=cuda path runs: device selection, steps, evaluation, checkpoints, resume).
 *
 * What this proves: the engine's buffer plan, pointer arithmetic, product shapes and the order of
 * operations reproduce the CPU model's loss, gradients and updates. What it cannot prove: the CUDA
 * kernels themselves (tests/gpu_gpt.sh checks those on a GPU). */
#define _GNU_SOURCE 1               /* RTLD_NEXT */
#include "build_config.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/comm.h"
#include "accel/dtype.h"
#include "../src/nn/gpt_cuda_kernels.h"
#include "../src/nn/llama_cuda_kernels.h"

/* With ACCEL_GPU_REF_ONLY (tests/gpu_ref.c) only the C kernels are built, named ref_accel_gk_*:
 * the host reference that tests/gpu_kernels_check.c compares the CUDA kernels with. */
#if ACCEL_GPU_REF_ONLY
#include "gpu_ref.h"
#define GK(name) ref_accel_gk_##name
#else
#define GK(name) accel_gk_##name

/* ------------------------------------------------------------------ runtime */

static int dummy_object;
#define DUMMY ((void *)&dummy_object)

const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated error"; }
const char *cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated"; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    size_t n = (bytes + 255) / 256 * 256;
    *p = aligned_alloc(256, n ? n : 256);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n ? n : 256);          /* NaN in fp32, bf16 and fp16 */
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMemGetInfo(size_t *f, size_t *t) { *f = *t = 0; return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) { (void)flags; *s = DUMMY; return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int f) { (void)s; (void)e; (void)f; return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) { (void)flags; *e = DUMMY; return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { (void)e; return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { (void)e; (void)s; return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { (void)e; return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { (void)a; (void)b; *ms = 0; return cudaSuccess; }

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s)
{
    (void)k; (void)s;
    memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    (void)s;
    memset(p, v, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind k)
{
    (void)k;
    memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaEventQuery(cudaEvent_t e) { (void)e; return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 0; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) { *v = 0; return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    (void)device;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "emulated GPU (tests/gpu_mock.c)");
    prop->totalGlobalMem = (size_t)1 << 30;
    return cudaSuccess;
}

/* "Device" memory is host memory, so the engine's NCCL communicator can be an MPI one: the same
 * collectives (in-place allreduce, reduce-scatter into a shard, in-place allgather) on the same
 * buffers, waited for by the same accel_comm_wait. Multi-rank runs under mpirun thus exercise the
 * engine's bucket and shard logic. */
accel_status_t accel_comm_create(MPI_Comm mpi_comm, accel_comm_backend_t backend, double timeout_s,
                                 accel_comm_t **out)
{
    (void)backend;
    accel_status_t (*real)(MPI_Comm, accel_comm_backend_t, double, accel_comm_t **) =
        (accel_status_t (*)(MPI_Comm, accel_comm_backend_t, double, accel_comm_t **))dlsym(RTLD_NEXT, "accel_comm_create");
    *out = NULL;
    return real ? real(mpi_comm, ACCEL_COMM_MPI, timeout_s, out) : ACCEL_ERR_UNSUPPORTED;
}

/* ------------------------------------------------------------------ cuBLAS */

static float ldt(const void *p, cudaDataType t, size_t i)
{
    switch (t) {
    case CUDA_R_32F: return ((const float *)p)[i];
    case CUDA_R_16BF: return accel_bf16_to_f32(((const uint16_t *)p)[i]);
    case CUDA_R_16F: return accel_f16_to_f32(((const uint16_t *)p)[i]);
    default: abort();
    }
}

static void stt(void *p, cudaDataType t, size_t i, float v)
{
    switch (t) {
    case CUDA_R_32F: ((float *)p)[i] = v; break;
    case CUDA_R_16BF: ((uint16_t *)p)[i] = accel_f32_to_bf16(v); break;
    case CUDA_R_16F: ((uint16_t *)p)[i] = accel_f32_to_f16(v); break;
    default: abort();
    }
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) { *h = DUMMY; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) { (void)h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) { (void)h; (void)s; return CUBLAS_STATUS_SUCCESS; }

long mock_gemm_calls;

static cublasStatus_t gemm_one(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                               float alpha, const void *A, cudaDataType at, int lda, const void *B,
                               cudaDataType bt, int ldb, float beta, void *C, cudaDataType ct, int ldc)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0;
            for (int l = 0; l < k; l++) {
                float a = ta == CUBLAS_OP_N ? ldt(A, at, (size_t)i + (size_t)l * lda) : ldt(A, at, (size_t)l + (size_t)i * lda);
                float b = tb == CUBLAS_OP_N ? ldt(B, bt, (size_t)l + (size_t)j * ldb) : ldt(B, bt, (size_t)j + (size_t)l * ldb);
                acc += (double)a * b;
            }
            size_t ci = (size_t)i + (size_t)j * ldc;
            float v = alpha * (float)acc;
            if (beta != 0.0f) v += beta * ldt(C, ct, ci);
            stt(C, ct, ci, v);
        }
    return CUBLAS_STATUS_SUCCESS;
}

/* cuBLAS's argument rules (column-major). */
static cublasStatus_t gemm_check(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                 cudaDataType at, int lda, cudaDataType bt, int ldb, cudaDataType ct,
                                 int ldc, cublasComputeType_t comp)
{
    mock_gemm_calls++;
    if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (lda < (ta == CUBLAS_OP_N ? (m > 1 ? m : 1) : (k > 1 ? k : 1))) return CUBLAS_STATUS_INVALID_VALUE;
    if (ldb < (tb == CUBLAS_OP_N ? (k > 1 ? k : 1) : (n > 1 ? n : 1))) return CUBLAS_STATUS_INVALID_VALUE;
    if (ldc < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    if (comp != CUBLAS_COMPUTE_32F || at != bt || (ct != at && ct != CUDA_R_32F))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType at, int lda,
                            const void *B, cudaDataType bt, int ldb, const void *beta, void *C,
                            cudaDataType ct, int ldc, cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)h; (void)algo;
    cublasStatus_t s = gemm_check(ta, tb, m, n, k, at, lda, bt, ldb, ct, ldc, comp);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    return gemm_one(ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb,
                    *(const float *)beta, C, ct, ldc);
}

static size_t esize(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                          int m, int n, int k, const void *alpha, const void *A,
                                          cudaDataType at, int lda, long long sA, const void *B,
                                          cudaDataType bt, int ldb, long long sB, const void *beta,
                                          void *C, cudaDataType ct, int ldc, long long sC, int batch,
                                          cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)h; (void)algo;
    cublasStatus_t s = gemm_check(ta, tb, m, n, k, at, lda, bt, ldb, ct, ldc, comp);
    if (s != CUBLAS_STATUS_SUCCESS || batch < 0) return s != CUBLAS_STATUS_SUCCESS ? s : CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < batch; i++) {
        s = gemm_one(ta, tb, m, n, k, *(const float *)alpha, (const char *)A + (size_t)(i * sA) * esize(at),
                     at, lda, (const char *)B + (size_t)(i * sB) * esize(bt), bt, ldb,
                     *(const float *)beta, (char *)C + (size_t)(i * sC) * esize(ct), ct, ldc);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}

#endif /* !ACCEL_GPU_REF_ONLY */

/* ------------------------------------------------------------------ kernels (contracts in C) */

static float ld(int dt, const void *p, size_t i) { return (float)accel_dtype_load(p, (accel_dtype_t)dt, i); }
static void st(int dt, void *p, size_t i, float v) { accel_dtype_store(p, (accel_dtype_t)dt, i, v); }
static float rnd(int dt, float v) { uint32_t tmp = 0; st(dt, &tmp, 0, v); return ld(dt, &tmp, 0); }

#define GELU_K 0.7978845608028654f
#define GELU_A 0.044715f

int GK(encoder_forward)(int dt, void *x, const int32_t *tok, int stride, const int32_t *pos,
                        const float *wte, const float *wpe, int B, int T, int C, accel_stream_t s)
{
    (void)s;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const size_t p = (size_t)(pos ? pos[b * T + t] : t);
            for (int c = 0; c < C; c++)
                st(dt, x, ((size_t)b * T + t) * C + c,
                   wte[(size_t)tok[b * stride + t] * C + c] + (wpe ? wpe[p * C + c] : 0.0f));
        }
    return 0;
}

int GK(encoder_backward)(int dt, float *dwte, float *dwpe, const void *d, const int32_t *tok,
                         int stride, const int32_t *pos, int B, int T, int C, accel_stream_t s)
{
    (void)s;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const size_t p = (size_t)(pos ? pos[b * T + t] : t);
            for (int c = 0; c < C; c++) {
                float v = ld(dt, d, ((size_t)b * T + t) * C + c);
                dwte[(size_t)tok[b * stride + t] * C + c] += v;
                if (dwpe) dwpe[p * C + c] += v;
            }
        }
    return 0;
}

int GK(layernorm_forward)(int dt, void *out, float *mean, float *rstd, void *res_out,
                               const void *res_in, const void *y, const float *bias, const float *w,
                               const float *b, int rows, int C, accel_stream_t s)
{
    (void)s;
    float *x = malloc(sizeof(float) * (size_t)C);
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * C;
        for (int c = 0; c < C; c++) {
            float v = ld(dt, res_in, o + c);
            if (y) {
                v = rnd(dt, v + ld(dt, y, o + c) + (bias ? bias[c] : 0.0f));
                st(dt, res_out, o + c, v);
            }
            x[c] = v;
        }
        double m = 0, var = 0;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        float sd = 1.0f / sqrtf((float)(var / C) + 1e-5f);
        for (int c = 0; c < C; c++) st(dt, out, o + c, (x[c] - (float)m) * sd * w[c] + b[c]);
        mean[r] = (float)m;
        rstd[r] = sd;
    }
    free(x);
    return 0;
}

int GK(layernorm_backward)(int dt, void *dx, float *dw, float *db, const void *dout,
                                const void *x, const float *mean, const float *rstd, const float *w,
                                int rows, int C, accel_stream_t s)
{
    (void)s;
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * C;
        double ag = 0, agx = 0;
        for (int c = 0; c < C; c++) {
            float g = ld(dt, dout, o + c) * w[c], xh = (ld(dt, x, o + c) - mean[r]) * rstd[r];
            ag += g;
            agx += g * xh;
        }
        float mg = (float)(ag / C), mgx = (float)(agx / C);
        for (int c = 0; c < C; c++) {
            float d = ld(dt, dout, o + c), xh = (ld(dt, x, o + c) - mean[r]) * rstd[r];
            dw[c] += d * xh;
            db[c] += d;
            st(dt, dx, o + c, ld(dt, dx, o + c) + rstd[r] * (d * w[c] - mg - xh * mgx));
        }
    }
    return 0;
}

/* (part, b, h, t, d) <-> row b*T+t, column part*C + h*hs + d */
static void perm(int dt, void *dst, const void *src, const float *bias, int B, int T, int NH, int hs,
                 int nparts, int forward)
{
    const size_t C = (size_t)NH * hs, W = C * nparts, BTC = (size_t)B * T * C;
    for (int p = 0; p < nparts; p++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int t = 0; t < T; t++)
                    for (int d = 0; d < hs; d++) {
                        size_t rowcol = ((size_t)b * T + t) * W + (size_t)p * C + (size_t)h * hs + d;
                        size_t heads = (size_t)p * BTC + (((size_t)b * NH + h) * T + t) * hs + d;
                        if (forward)
                            st(dt, dst, heads, ld(dt, src, rowcol) +
                               (bias ? bias[(size_t)p * C + (size_t)h * hs + d] : 0.0f));
                        else
                            st(dt, dst, rowcol, ld(dt, src, heads));
                    }
}

int GK(permute)(int dt, void *dst, const void *src, const float *bias, int B, int T, int NH,
                     int hs, int nparts, accel_stream_t s)
{
    (void)s;
    perm(dt, dst, src, bias, B, T, NH, hs, nparts, 1);
    return 0;
}

int GK(unpermute)(int dt, void *dst, const void *src, int B, int T, int NH, int hs, int nparts,
                       accel_stream_t s)
{
    (void)s;
    perm(dt, dst, src, NULL, B, T, NH, hs, nparts, 0);
    return 0;
}

/* Row r's first key: 0, or with packed documents its document's first token (sample r / (heads T)). */
static int key_start(const int32_t *pos, int r, int T, int heads)
{
    return pos ? r % T - pos[r / (heads * T) * T + r % T] : 0;
}

int GK(softmax_forward)(int dt, void *P, const float *S, int rows, int T, const int32_t *pos, int heads,
                        accel_stream_t s)
{
    (void)s;
    if (pos && heads <= 0) return (int)cudaErrorInvalidValue;
    for (int r = 0; r < rows; r++) {
        const int t = r % T, k0 = key_start(pos, r, T, heads);
        const float *row = S + (size_t)r * T;
        float mx = -INFINITY;
        for (int j = k0; j <= t; j++) mx = row[j] > mx ? row[j] : mx;
        double sum = 0;
        for (int j = k0; j <= t; j++) sum += expf(row[j] - mx);
        for (int j = 0; j < T; j++)
            st(dt, P, (size_t)r * T + j, j >= k0 && j <= t ? (float)(expf(row[j] - mx) / sum) : 0.0f);
    }
    return 0;
}

int GK(softmax_backward)(int dt, void *dS, const void *P, const float *dP, int rows, int T,
                         const int32_t *pos, int heads, accel_stream_t s)
{
    (void)s;
    if (pos && heads <= 0) return (int)cudaErrorInvalidValue;
    for (int r = 0; r < rows; r++) {
        const int t = r % T, k0 = key_start(pos, r, T, heads);
        size_t o = (size_t)r * T;
        double dot = 0;
        for (int j = k0; j <= t; j++) dot += ld(dt, P, o + j) * dP[o + j];
        for (int j = 0; j < T; j++)
            st(dt, dS, o + j, j >= k0 && j <= t ? ld(dt, P, o + j) * (dP[o + j] - (float)dot) : 0.0f);
    }
    return 0;
}

int GK(bias_gelu_forward)(int dt, void *fch, void *gelu, const float *bias, size_t n, int C4,
                               accel_stream_t s)
{
    (void)s;
    for (size_t i = 0; i < n; i++) {
        float v = rnd(dt, ld(dt, fch, i) + bias[i % (size_t)C4]);
        st(dt, fch, i, v);
        st(dt, gelu, i, 0.5f * v * (1.0f + tanhf(GELU_K * (v + GELU_A * v * v * v))));
    }
    return 0;
}

int GK(gelu_backward)(int dt, void *d, const void *fch, size_t n, accel_stream_t s)
{
    (void)s;
    for (size_t i = 0; i < n; i++) {
        float v = ld(dt, fch, i), t = tanhf(GELU_K * (v + GELU_A * v * v * v));
        float g = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_A * v * v);
        st(dt, d, i, ld(dt, d, i) * g);
    }
    return 0;
}

int GK(colsum_add)(int dt, float *db, const void *d, int rows, int cols, accel_stream_t s)
{
    (void)s;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) db[c] += ld(dt, d, (size_t)r * cols + c);
    return 0;
}

int GK(classifier)(int dt, void *logits, float *losses, const int32_t *tok, int stride, int B,
                        int T, int V, int Vp, float dscale, int write_grad, accel_stream_t s)
{
    (void)s;
    for (int r = 0; r < B * T; r++) {
        int b = r / T, t = r % T, y = tok[b * stride + t + 1];
        size_t o = (size_t)r * Vp;
        if (y < 0) {                /* not trained */
            losses[r] = 0.0f;
            for (int j = 0; j < V && write_grad; j++) st(dt, logits, o + j, 0.0f);
            continue;
        }
        float mx = -INFINITY;
        for (int j = 0; j < V; j++) mx = fmaxf(mx, ld(dt, logits, o + j));
        double sum = 0;
        for (int j = 0; j < V; j++) sum += expf(ld(dt, logits, o + j) - mx);
        float lse = mx + (float)log(sum);
        losses[r] = lse - ld(dt, logits, o + y);
        if (write_grad)
            for (int j = 0; j < V; j++)
                st(dt, logits, o + j, dscale * (expf(ld(dt, logits, o + j) - lse) - (j == y ? 1.0f : 0.0f)));
    }
    return 0;
}

int GK(adamw)(int dt, float *p, void *lp, const float *g, float *m, float *v,
                   const unsigned char *decay, size_t n, float grad_mul, float beta1, float beta2,
                   float eps, float step_size, float inv_sqrt_bc2, float lr_wd, accel_stream_t s)
{
    (void)s;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * grad_mul;
        m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
        v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        float denom = sqrtf(v[i]) * inv_sqrt_bc2 + eps;
        p[i] -= step_size * m[i] / denom + (float)decay[i] * lr_wd * p[i];
        if (lp) st(dt, lp, i, p[i]);
    }
    return 0;
}

int GK(sgd)(int dt, float *p, void *lp, const float *g, float *buf, const unsigned char *decay,
                 size_t n, float grad_mul, float lr, float wd, float momentum, accel_stream_t s)
{
    (void)s;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * grad_mul + (float)decay[i] * wd * p[i];
        buf[i] = momentum * buf[i] + gi;
        p[i] -= lr * buf[i];
        if (lp) st(dt, lp, i, p[i]);
    }
    return 0;
}

int GK(sumsq)(const float *g, size_t n, double *out, accel_stream_t s)
{
    (void)s;
    for (size_t i = 0; i < n; i++) *out += (double)g[i] * g[i];
    return 0;
}

int GK(add)(float *y, const float *x, size_t n, accel_stream_t s)
{
    (void)s;
    for (size_t i = 0; i < n; i++) y[i] += x[i];
    return 0;
}

int GK(cast)(int dt, void *out, const float *in, size_t n, accel_stream_t s)
{
    (void)s;
    for (size_t i = 0; i < n; i++) st(dt, out, i, in[i]);
    return 0;
}

/* ------------------------------------------------------------------ Llama kernels (contracts in C)
 * src/nn/llama_cuda_kernels.h. Not in the reference build: tests/gpu_ref.c checks the CUDA kernels
 * (and, on the emulated device, these) against the CPU model's own functions instead. */
#if !ACCEL_GPU_REF_ONLY

int accel_gk_rmsnorm_forward(int dt, void *out, float *rstd, void *res_out, const void *res_in,
                             const void *y, const float *bias, const float *w, int rows, int C,
                             float eps, accel_stream_t s)
{
    (void)s;
    float *x = malloc(sizeof(float) * (size_t)C);
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * C;
        double ss = 0;
        for (int c = 0; c < C; c++) {
            float v = ld(dt, res_in, o + c);
            if (y) {
                v = rnd(dt, v + ld(dt, y, o + c) + (bias ? bias[c] : 0.0f));
                st(dt, res_out, o + c, v);
            }
            x[c] = v;
            ss += (double)v * v;
        }
        float sd = 1.0f / sqrtf((float)(ss / C) + eps);
        for (int c = 0; c < C; c++) st(dt, out, o + c, x[c] * sd * w[c]);
        rstd[r] = sd;
    }
    free(x);
    return 0;
}

int accel_gk_rmsnorm_backward(int dt, void *dx, float *dw, const void *dout, const void *x,
                              const float *rstd, const float *w, int rows, int C, accel_stream_t s)
{
    (void)s;
    for (int r = 0; r < rows; r++) {
        size_t o = (size_t)r * C;
        const float sd = rstd[r];
        double gx = 0;
        for (int c = 0; c < C; c++) gx += (double)ld(dt, dout, o + c) * w[c] * ld(dt, x, o + c);
        const float k3 = (float)(gx / C) * sd * sd * sd;
        for (int c = 0; c < C; c++) {
            float d = ld(dt, dout, o + c), xc = ld(dt, x, o + c);
            dw[c] += d * xc * sd;
            st(dt, dx, o + c, ld(dt, dx, o + c) + (sd * d * w[c] - k3 * xc));
        }
    }
    return 0;
}

int accel_gk_rope(int dt, void *x, const float *cos, const float *sin, int B, int nheads, int T,
                  int hs, int pos0, const int32_t *pos, int inverse, accel_stream_t s)
{
    (void)s;
    if (hs <= 0 || hs % 2 || pos0 < 0 || (pos && pos0)) return (int)cudaErrorInvalidValue;
    const int half = hs / 2;
    for (size_t seq = 0; seq < (size_t)B * nheads; seq++)
        for (int t = 0; t < T; t++) {
            const size_t at = pos ? (size_t)pos[seq / (size_t)nheads * T + t] : (size_t)(pos0 + t);
            size_t row = (seq * T + t) * hs, tab = at * half;
            for (int i = 0; i < half; i++) {
                float c = cos[tab + i], sn = (inverse ? -1.0f : 1.0f) * sin[tab + i];
                float x1 = ld(dt, x, row + i), x2 = ld(dt, x, row + half + i);
                st(dt, x, row + i, x1 * c - x2 * sn);
                st(dt, x, row + half + i, x2 * c + x1 * sn);
            }
        }
    return 0;
}

/* column j of qkv row (b, t) <-> its place in q [B][NH][T][hs], k or v [B][KVH][T][hs] */
static void perm_gqa(int dt, void *rows, void *q, void *k, void *v, const float *bias, int B, int T,
                     int NH, int KVH, int hs, int forward)
{
    const int W = (NH + 2 * KVH) * hs;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < W; j++) {
                int h = j / hs, nh = NH;
                void *buf = q;
                if (h >= NH + KVH) { h -= NH + KVH; nh = KVH; buf = v; }
                else if (h >= NH) { h -= NH; nh = KVH; buf = k; }
                size_t heads = (((size_t)b * nh + h) * T + t) * hs + j % hs;
                size_t rowcol = ((size_t)b * T + t) * W + j;
                if (forward)
                    st(dt, buf, heads, ld(dt, rows, rowcol) + (bias ? bias[j] : 0.0f));
                else
                    st(dt, rows, rowcol, ld(dt, buf, heads));
            }
}

int accel_gk_permute_gqa(int dt, void *q, void *k, void *v, const void *src, const float *bias,
                         int B, int T, int NH, int KVH, int hs, accel_stream_t s)
{
    (void)s;
    if (KVH <= 0 || NH % KVH) return (int)cudaErrorInvalidValue;
    perm_gqa(dt, (void *)src, q, k, v, bias, B, T, NH, KVH, hs, 1);
    return 0;
}

int accel_gk_unpermute_gqa(int dt, void *dst, const void *q, const void *k, const void *v, int B,
                           int T, int NH, int KVH, int hs, accel_stream_t s)
{
    (void)s;
    if (KVH <= 0 || NH % KVH) return (int)cudaErrorInvalidValue;
    perm_gqa(dt, dst, (void *)q, (void *)k, (void *)v, NULL, B, T, NH, KVH, hs, 0);
    return 0;
}

int accel_gk_swiglu_forward(int dt, void *h, const void *gu, int rows, int F, accel_stream_t s)
{
    (void)s;
    for (size_t r = 0; r < (size_t)rows; r++)
        for (int c = 0; c < F; c++) {
            float g = ld(dt, gu, r * 2 * F + c), u = ld(dt, gu, r * 2 * F + F + c);
            st(dt, h, r * F + c, g / (1.0f + expf(-g)) * u);
        }
    return 0;
}

int accel_gk_swiglu_backward(int dt, void *dgu, const void *dh, const void *gu, int rows, int F,
                             accel_stream_t s)
{
    (void)s;
    for (size_t r = 0; r < (size_t)rows; r++)
        for (int c = 0; c < F; c++) {
            size_t o = r * 2 * F + c;
            float g = ld(dt, gu, o), u = ld(dt, gu, o + F), d = ld(dt, dh, r * F + c);
            float sg = 1.0f / (1.0f + expf(-g));
            st(dt, dgu, o, d * u * sg * (1.0f + g * (1.0f - sg)));
            st(dt, dgu, o + F, d * g * sg);
        }
    return 0;
}

#endif /* !ACCEL_GPU_REF_ONLY */
