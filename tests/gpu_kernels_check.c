/* Every CUDA kernel of the GPT engine (src/nn/gpt_cuda_kernels.cu) against its host reference
 * (tests/gpu_mock.c's C implementation of the same contract), one kernel at a time, in fp32, bf16
 * and fp16, on awkward sizes (rows and widths that are not multiples of the warp or block size, a
 * vocabulary smaller than a block and one padded to 64). Prints the relative error of every output
 * buffer, so a failing gradient check can be traced to the kernel that is wrong.
 * Exits 77 ("SKIP: no CUDA device: <why>") where no GPU is usable.
 *
 * The Llama kernels (src/nn/llama_cuda_kernels.cu) are held to the CPU model's own functions
 * (accel_cpu_rmsnorm_*, accel_cpu_rope, accel_cpu_swiglu_*, via tests/gpu_ref.c), and grouped-query
 * attention end to end (permute_gqa, RoPE, cuBLAS strided-batched products, softmax, unpermute;
 * forward and backward) to a naive CPU attention.
 *
 * Built twice: gpu_kernels_check (the device kernels) and, with ACCEL_GPU_MOCK=1,
 * gpu_kernels_mockcheck (the emulated device, on machines without a GPU: its GPT kernels ARE the
 * reference, so for them this checks only the harness; its Llama kernels, written separately from
 * their contracts, meet the CPU functions, and the attention chain runs through the emulated
 * cuBLAS with its argument checks). */
#include "build_config.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "../src/nn/kernels_cpu.h"
#include "gpu_ref.h"

#if ACCEL_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

/* buffer element types besides the activation dtypes */
enum { T_F32 = 100, T_I32, T_U8, T_F64, T_ACT };

typedef struct {
    const char *name;
    int type;                       /* T_*; T_ACT means the case's activation dtype */
    size_t n;
    int out;                        /* compared after the call */
    void *ref, *dev_host, *dev;
} buf_t;

typedef struct {
    int dt;
    buf_t b[24];
    int nb;
    double tol;                     /* activation outputs' tolerance when > 0 (chains of kernels) */
} kcase_t;

static unsigned long long g_rng = 88172645463325252ull;
static double urand(void)          /* [0, 1) */
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static size_t esize(const kcase_t *c, int type)
{
    switch (type) {
    case T_F32: case T_I32: return 4;
    case T_U8: return 1;
    case T_F64: return 8;
    default: return accel_dtype_size((accel_dtype_t)c->dt);
    }
}

/* A buffer filled by `fill`: 'u' uniform(-scale, scale), 'p' uniform(0, scale), 'i' integers in
 * [0, scale), 'm' the same with a quarter of them -1 (targets a loss mask leaves out), 'b' 0/1,
 * 'd' positions of packed documents in rows of `scale` (int32: 0 at each document's first token,
 * counting up within it; documents of 1 to 12 tokens), 'z' zeros. Activation buffers hold values
 * already rounded to the dtype. */
static void add(kcase_t *c, const char *name, int type, size_t n, int out, char fill, double scale)
{
    buf_t *b = &c->b[c->nb++];
    b->name = name;
    b->type = type;
    b->n = n;
    b->out = out;
    size_t bytes = esize(c, type) * (n ? n : 1);
    b->ref = calloc(1, bytes);
    b->dev_host = calloc(1, bytes);
    for (size_t i = 0; i < n; i++) {
        double v = fill == 'u' ? (2 * urand() - 1) * scale : fill == 'p' ? urand() * scale
                 : fill == 'i' ? floor(urand() * scale) : fill == 'b' ? (urand() < 0.5)
                 : fill == 'm' ? (urand() < 0.25 ? -1.0 : floor(urand() * scale)) : 0.0;
        if (fill == 'd')        /* a new document at a row's start, else with odds 1 in 6, or at 12 */
            v = i % (size_t)scale == 0 || urand() < 1.0 / 6 || ((int32_t *)b->ref)[i - 1] == 11
                    ? 0 : ((int32_t *)b->ref)[i - 1] + 1;
        switch (type) {
        case T_F32: ((float *)b->ref)[i] = (float)v; break;
        case T_I32: ((int32_t *)b->ref)[i] = (int32_t)v; break;
        case T_U8: ((unsigned char *)b->ref)[i] = (unsigned char)v; break;
        case T_F64: ((double *)b->ref)[i] = v; break;
        default: accel_dtype_store(b->ref, (accel_dtype_t)c->dt, i, v); break;
        }
    }
    memcpy(b->dev_host, b->ref, bytes);
    if (cudaMalloc(&b->dev, bytes) != cudaSuccess ||
        cudaMemcpy(b->dev, b->ref, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc/cudaMemcpy for %s failed\n", name);
        exit(1);
    }
}

static void *P(kcase_t *c, const char *name, int dev)
{
    for (int i = 0; i < c->nb; i++)
        if (!strcmp(c->b[i].name, name)) return dev ? c->b[i].dev : c->b[i].ref;
    fprintf(stderr, "no buffer %s\n", name);
    exit(1);
}

static double load(const kcase_t *c, const buf_t *b, const void *data, size_t i)
{
    switch (b->type) {
    case T_F32: return ((const float *)data)[i];
    case T_I32: return ((const int32_t *)data)[i];
    case T_U8: return ((const unsigned char *)data)[i];
    case T_F64: return ((const double *)data)[i];
    default: return accel_dtype_load(data, (accel_dtype_t)c->dt, i);
    }
}

static const char *dt_name(int dt) { return accel_dtype_name((accel_dtype_t)dt); }

/* Compare every output buffer; free everything. Returns the number of failures. */
static int finish(kcase_t *c, const char *kernel, int launch_err)
{
    int fails = 0;
    cudaError_t e = cudaDeviceSynchronize();
    if (launch_err || e != cudaSuccess) {
        printf("FAIL %-28s %-4s: launch %d, device %s\n", kernel, dt_name(c->dt), launch_err,
               cudaGetErrorString(e));
        fails++;
    }
    for (int i = 0; i < c->nb && !fails; i++) {
        buf_t *b = &c->b[i];
        if (!b->out) continue;
        cudaMemcpy(b->dev_host, b->dev, esize(c, b->type) * b->n, cudaMemcpyDeviceToHost);
        double d2 = 0, r2 = 0, worst = 0;
        size_t at = 0;
        for (size_t k = 0; k < b->n; k++) {
            double r = load(c, b, b->ref, k), g = load(c, b, b->dev_host, k), d = fabs(g - r);
            if (!(d <= worst)) { worst = d; at = k; }     /* NaN counts as worst */
            d2 += (g - r) * (g - r);
            r2 += r * r;
        }
        double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
        double tol = b->type != T_ACT || c->dt == ACCEL_F32 ? 1e-4 : c->dt == ACCEL_BF16 ? 1e-2 : 2e-3;
        if (b->type == T_ACT && c->tol > 0) tol = c->tol;
        int bad = !(rel <= tol);
        printf("%-4s %-28s %-4s %-9s relative error %.2e (tolerance %.0e), worst |diff| %.3g at %zu "
               "(ref %.6g, gpu %.6g)\n", bad ? "FAIL" : "ok", kernel, dt_name(c->dt), b->name, rel, tol,
               worst, at, load(c, b, b->ref, at), load(c, b, b->dev_host, at));
        fails += bad;
    }
    for (int i = 0; i < c->nb; i++) {
        free(c->b[i].ref);
        free(c->b[i].dev_host);
        cudaFree(c->b[i].dev);
    }
    c->nb = 0;
    c->tol = 0;
    return fails;
}

/* Run the call on the device, then on the host reference, then compare. */
#define RUN(kname, ...)                                                                         \
    do {                                                                                        \
        int dev = 1;                                                                            \
        int e_ = accel_gk_##kname(__VA_ARGS__);                                                 \
        dev = 0;                                                                                \
        ref_accel_gk_##kname(__VA_ARGS__);                                                      \
        (void)dev;                                                                              \
        fails += finish(&c, #kname, e_);                                                        \
    } while (0)
#define Q(name) P(&c, name, dev)

/* sizes: odd rows, widths off the warp size, heads of 16, a vocabulary padded from 1000 to 1024 */
enum { B_ = 2, T_ = 37, NH_ = 5, HS_ = 16, C_ = NH_ * HS_, V_ = 1000, VP_ = 1024 };

static int check_dtype(int dt)
{
    int fails = 0;
    kcase_t c = { .dt = dt };
    const size_t BT = (size_t)B_ * T_, BTC = BT * C_;
    const int stride = T_ + 1;

    add(&c, "x", T_ACT, BTC, 1, 'z', 0);
    add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', V_);
    add(&c, "wte", T_F32, (size_t)V_ * C_, 0, 'u', 1);
    add(&c, "wpe", T_F32, (size_t)T_ * C_, 0, 'u', 1);
    RUN(encoder_forward, dt, Q("x"), Q("tok"), stride, NULL, Q("wte"), Q("wpe"), B_, T_, C_, NULL);

    add(&c, "dwte", T_F32, (size_t)V_ * C_, 1, 'u', 1);
    add(&c, "dwpe", T_F32, (size_t)T_ * C_, 1, 'u', 1);
    add(&c, "d", T_ACT, BTC, 0, 'u', 1);
    add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', 7);    /* repeated ids: colliding atomics */
    RUN(encoder_backward, dt, Q("dwte"), Q("dwpe"), Q("d"), Q("tok"), stride, NULL, B_, T_, C_, NULL);
    /* without a position embedding (the llama's) */
    add(&c, "x", T_ACT, BTC, 1, 'z', 0);
    add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', V_);
    add(&c, "wte", T_F32, (size_t)V_ * C_, 0, 'u', 1);
    RUN(encoder_forward, dt, Q("x"), Q("tok"), stride, NULL, Q("wte"), NULL, B_, T_, C_, NULL);
    add(&c, "dwte", T_F32, (size_t)V_ * C_, 1, 'u', 1);
    add(&c, "d", T_ACT, BTC, 0, 'u', 1);
    add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', 7);
    RUN(encoder_backward, dt, Q("dwte"), NULL, Q("d"), Q("tok"), stride, NULL, B_, T_, C_, NULL);
    /* packed documents: positions restart (wpe rows by position) */
    add(&c, "x", T_ACT, BTC, 1, 'z', 0);
    add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', V_);
    add(&c, "pos", T_I32, BT, 0, 'd', T_);
    add(&c, "wte", T_F32, (size_t)V_ * C_, 0, 'u', 1);
    add(&c, "wpe", T_F32, (size_t)T_ * C_, 0, 'u', 1);
    RUN(encoder_forward, dt, Q("x"), Q("tok"), stride, Q("pos"), Q("wte"), Q("wpe"), B_, T_, C_, NULL);
    add(&c, "dwte", T_F32, (size_t)V_ * C_, 1, 'u', 1);
    add(&c, "dwpe", T_F32, (size_t)T_ * C_, 1, 'u', 1);
    add(&c, "d", T_ACT, BTC, 0, 'u', 1);
    add(&c, "tok", T_I32, (size_t)B_ * stride, 0, 'i', 7);
    add(&c, "pos", T_I32, BT, 0, 'd', T_);
    RUN(encoder_backward, dt, Q("dwte"), Q("dwpe"), Q("d"), Q("tok"), stride, Q("pos"), B_, T_, C_, NULL);

    const int widths[] = { C_, 768, 1531 };
    for (int wi = 0; wi < 3; wi++) {
        const int W = widths[wi];
        const size_t n = BT * (size_t)W;
        for (int fused = 0; fused < 2; fused++) {
            add(&c, "out", T_ACT, n, 1, 'z', 0);
            add(&c, "mean", T_F32, BT, 1, 'z', 0);
            add(&c, "rstd", T_F32, BT, 1, 'z', 0);
            add(&c, "res_out", T_ACT, n, fused, 'z', 0);
            add(&c, "res_in", T_ACT, n, 0, 'u', 2);
            add(&c, "y", T_ACT, n, 0, 'u', 1);
            add(&c, "bias", T_F32, (size_t)W, 0, 'u', 1);
            add(&c, "w", T_F32, (size_t)W, 0, 'u', 1);
            add(&c, "b", T_F32, (size_t)W, 0, 'u', 1);
            RUN(layernorm_forward, dt, Q("out"), Q("mean"), Q("rstd"), fused ? Q("res_out") : NULL,
                Q("res_in"), fused ? Q("y") : NULL, fused ? Q("bias") : NULL, Q("w"), Q("b"), (int)BT, W,
                NULL);
        }
        add(&c, "dx", T_ACT, n, 1, 'u', 1);
        add(&c, "dw", T_F32, (size_t)W, 1, 'u', 1);
        add(&c, "db", T_F32, (size_t)W, 1, 'u', 1);
        add(&c, "dout", T_ACT, n, 0, 'u', 1);
        add(&c, "xin", T_ACT, n, 0, 'u', 2);
        add(&c, "mean", T_F32, BT, 0, 'u', 0.5);
        add(&c, "rstd", T_F32, BT, 0, 'p', 2);
        add(&c, "w", T_F32, (size_t)W, 0, 'u', 1);
        RUN(layernorm_backward, dt, Q("dx"), Q("dw"), Q("db"), Q("dout"), Q("xin"), Q("mean"), Q("rstd"),
            Q("w"), (int)BT, W, NULL);
    }

    for (int nparts = 1; nparts <= 3; nparts += 2) {
        add(&c, "dst", T_ACT, BTC * nparts, 1, 'z', 0);
        add(&c, "src", T_ACT, BTC * nparts, 0, 'u', 1);
        add(&c, "bias", T_F32, (size_t)C_ * nparts, 0, 'u', 1);
        RUN(permute, dt, Q("dst"), Q("src"), nparts == 3 ? Q("bias") : NULL, B_, T_, NH_, HS_, nparts, NULL);
        add(&c, "dst", T_ACT, BTC * nparts, 1, 'z', 0);
        add(&c, "src", T_ACT, BTC * nparts, 0, 'u', 1);
        RUN(unpermute, dt, Q("dst"), Q("src"), B_, T_, NH_, HS_, nparts, NULL);
    }

    const int rows = B_ * NH_ * T_;
    const size_t tt = (size_t)rows * T_;
    for (int packed = 0; packed < 2; packed++) {   /* causal; packed documents (keys of its own) */
        add(&c, "P", T_ACT, tt, 1, 'z', 0);
        add(&c, "S", T_F32, tt, 0, 'u', 4);
        add(&c, "pos", T_I32, BT, 0, 'd', T_);
        RUN(softmax_forward, dt, Q("P"), Q("S"), rows, T_, packed ? Q("pos") : NULL, NH_, NULL);
        add(&c, "dS", T_ACT, tt, 1, 'z', 0);
        add(&c, "P", T_ACT, tt, 0, 'p', 0.2);
        add(&c, "dP", T_F32, tt, 0, 'u', 1);
        add(&c, "pos", T_I32, BT, 0, 'd', T_);
        RUN(softmax_backward, dt, Q("dS"), Q("P"), Q("dP"), rows, T_, packed ? Q("pos") : NULL, NH_, NULL);
    }

    const size_t n4 = BT * 4 * C_;
    add(&c, "fch", T_ACT, n4, 1, 'u', 3);
    add(&c, "gelu", T_ACT, n4, 1, 'z', 0);
    add(&c, "bias", T_F32, (size_t)4 * C_, 0, 'u', 1);
    RUN(bias_gelu_forward, dt, Q("fch"), Q("gelu"), Q("bias"), n4, 4 * C_, NULL);
    add(&c, "d", T_ACT, n4, 1, 'u', 1);
    add(&c, "fch", T_ACT, n4, 0, 'u', 3);
    RUN(gelu_backward, dt, Q("d"), Q("fch"), n4, NULL);

    const int colw[] = { C_, 4 * C_, 33 };
    for (int i = 0; i < 3; i++) {
        add(&c, "db", T_F32, (size_t)colw[i], 1, 'u', 1);
        add(&c, "d", T_ACT, BT * colw[i], 0, 'u', 1);
        RUN(colsum_add, dt, Q("db"), Q("d"), (int)BT, colw[i], NULL);
    }

    const int vocab[][2] = { { V_, VP_ }, { 100, 128 } };     /* 100 < one block of threads */
    for (int vi = 0; vi < 2; vi++)
        for (int wg = 0; wg < 4; wg++) {            /* 2, 3: with masked targets */
            const int V = vocab[vi][0], Vp = vocab[vi][1];
            add(&c, "logits", T_ACT, BT * Vp, wg & 1, 'u', 6);
            add(&c, "losses", T_F32, BT, 1, 'z', 0);
            add(&c, "tok", T_I32, (size_t)B_ * stride, 0, wg < 2 ? 'i' : 'm', V);
            RUN(classifier, dt, Q("logits"), Q("losses"), Q("tok"), stride, B_, T_, V, Vp,
                0.37f / T_, wg & 1, NULL);
        }

    const size_t np = 100003;
    for (int adam = 0; adam < 2; adam++) {
        add(&c, "p", T_F32, np, 1, 'u', 1);
        add(&c, "lp", T_ACT, np, 1, 'z', 0);
        add(&c, "g", T_F32, np, 0, 'u', 1);
        add(&c, "m", T_F32, np, 1, 'u', 0.1);
        add(&c, "v", T_F32, np, 1, 'p', 0.01);
        add(&c, "decay", T_U8, np, 0, 'b', 0);
        if (adam)
            RUN(adamw, dt, Q("p"), Q("lp"), Q("g"), Q("m"), Q("v"), Q("decay"), np, 0.5f, 0.9f, 0.95f,
                1e-8f, 1e-3f / 0.1f, 1.0f / sqrtf(0.05f), 1e-3f * 0.1f, NULL);
        else
            RUN(sgd, dt, Q("p"), Q("lp"), Q("g"), Q("m"), Q("decay"), np, 0.5f, 1e-2f, 0.1f, 0.9f, NULL);
    }
    add(&c, "out", T_ACT, np, 1, 'z', 0);
    add(&c, "in", T_F32, np, 0, 'u', 3);
    RUN(cast, dt, Q("out"), Q("in"), np, NULL);
    if (dt == ACCEL_F32) {
        add(&c, "g", T_F32, np, 0, 'u', 1);
        add(&c, "sum", T_F64, 1, 1, 'u', 1);
        RUN(sumsq, Q("g"), np, Q("sum"), NULL);
    }
    return fails;
}

/* ------------------------------------------------------------------ Llama kernels
 * (src/nn/llama_cuda_kernels.h) against the CPU model's functions (tests/gpu_ref.c). */

/* Overwrite an fp32 buffer's reference and device copies with data. */
static void set_f32(kcase_t *c, const char *name, const float *data)
{
    for (int i = 0; i < c->nb; i++)
        if (!strcmp(c->b[i].name, name)) {
            memcpy(c->b[i].ref, data, sizeof(float) * c->b[i].n);
            cudaMemcpy(c->b[i].dev, data, sizeof(float) * c->b[i].n, cudaMemcpyHostToDevice);
            return;
        }
    fprintf(stderr, "no buffer %s\n", name);
    exit(1);
}

/* Llama's RoPE tables [npos][hs/2] (theta 10000): what the model hands to accel_gk_rope. */
static void rope_tables(float *cs, float *sn, int npos, int hs)
{
    for (int p = 0; p < npos; p++)
        for (int i = 0; i < hs / 2; i++) {
            double a = p * pow(10000.0, -2.0 * i / hs);
            cs[(size_t)p * (hs / 2) + i] = (float)cos(a);
            sn[(size_t)p * (hs / 2) + i] = (float)sin(a);
        }
}

/* v rounded to the activation type, as a store and a load do */
static float rnd_to(int dt, float v)
{
    uint32_t tmp = 0;
    accel_dtype_store(&tmp, (accel_dtype_t)dt, 0, v);
    return (float)accel_dtype_load(&tmp, (accel_dtype_t)dt, 0);
}

static cublasHandle_t g_blas;

/* Row-major C[M x N] = alpha op(A) op(B), batch times with element strides (gpt_cuda.c's gemm):
 * column-major cuBLAS computes C^T = op(B)^T op(A)^T. C in fp32 (c32) or the activation type. */
static int bgemm(int dt, int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda,
                 long long sA, const void *B, int ldb, long long sB, void *C, int c32, int ldc,
                 long long sC, int batch)
{
    const cudaDataType_t t = dt == ACCEL_F32 ? CUDA_R_32F : dt == ACCEL_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const float beta = 0.0f;
    if (!g_blas && cublasCreate(&g_blas) != CUBLAS_STATUS_SUCCESS) return 999;
    cublasStatus_t s = cublasGemmStridedBatchedEx(
        g_blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, t,
        ldb, sB, A, t, lda, sA, &beta, C, c32 ? CUDA_R_32F : t, ldc, sC, batch, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT);
    return s == CUBLAS_STATUS_SUCCESS ? 0 : 1000 + (int)s;
}

/* Causal grouped-query attention, forward and backward, through the layout of
 * llama_cuda_kernels.h: permute_gqa (+ qkv bias), RoPE on q and k, one strided-batched product
 * per (b, kv head), the GPT's causal softmax, accel_gk_unpermute to rows; backward: accel_gk_permute
 * of dY, the four products, softmax backward, inverse RoPE on dq and dk, unpermute_gqa. Against a
 * naive CPU attention, head by head with kv head h / G, RoPE by accel_cpu_rope on the rows as the
 * CPU model applies it. The reference rounds where the device stores (q, k, v, P, Y, dS, dq, dk,
 * dv), so the products' accumulation order is what differs. */
static int check_gqa_attention(int dt, int B, int T, int NH, int KVH, int hs, int with_bias)
{
    kcase_t c = { .dt = dt };
    /* chains of roundings: one 16-bit ulp flipped upstream moves P, dS and what follows */
    c.tol = dt == ACCEL_BF16 ? 2e-2 : dt == ACCEL_F16 ? 4e-3 : 0;
    const int G = NH / KVH, W = (NH + 2 * KVH) * hs, half = hs / 2, Cq = NH * hs;
    const size_t BT = (size_t)B * T, nq = BT * Cq, nkv = BT * KVH * hs, natt = (size_t)B * NH * T * T;
    const float scale = 1.0f / sqrtf((float)hs);
    const long long sQ = (long long)G * T * hs, sKV = (long long)T * hs, sS = (long long)G * T * T;
    float *cs = malloc(sizeof(float) * T * half), *sn = malloc(sizeof(float) * T * half);
    rope_tables(cs, sn, T, hs);

    add(&c, "qkv", T_ACT, BT * W, 0, 'u', 1);
    add(&c, "bias", T_F32, (size_t)W, 0, 'u', 0.5);
    add(&c, "cos", T_F32, (size_t)T * half, 0, 'z', 0);
    add(&c, "sin", T_F32, (size_t)T * half, 0, 'z', 0);
    set_f32(&c, "cos", cs);
    set_f32(&c, "sin", sn);
    add(&c, "dout", T_ACT, nq, 0, 'u', 1);
    const char *work[] = { "q", "k", "v", "S32", "P", "Y", "dY", "dP32", "dS", "dq", "dk", "dv" };
    const size_t wn[] = { nq, nkv, nkv, natt, natt, nq, nq, natt, natt, nq, nkv, nkv };
    for (int i = 0; i < 12; i++) add(&c, work[i], i == 3 || i == 7 ? T_F32 : T_ACT, wn[i], 0, 'z', 0);
    add(&c, "out", T_ACT, nq, 1, 'z', 0);
    add(&c, "dqkv", T_ACT, BT * W, 1, 'z', 0);

#define D(name) P(&c, name, 1)
    int e = accel_gk_permute_gqa(dt, D("q"), D("k"), D("v"), D("qkv"), with_bias ? D("bias") : NULL, B,
                                 T, NH, KVH, hs, NULL);
    if (!e) e = accel_gk_rope(dt, D("q"), D("cos"), D("sin"), B, NH, T, hs, 0, NULL, 0, NULL);
    if (!e) e = accel_gk_rope(dt, D("k"), D("cos"), D("sin"), B, KVH, T, hs, 0, NULL, 0, NULL);
    /* S = scale Q K^T [G*T, T] per (b, kv head) */
    if (!e) e = bgemm(dt, 0, 1, G * T, T, hs, scale, D("q"), hs, sQ, D("k"), hs, sKV, D("S32"), 1, T, sS, B * KVH);
    if (!e) e = accel_gk_softmax_forward(dt, D("P"), D("S32"), B * NH * T, T, NULL, NH, NULL);
    /* Y = P V [G*T, hs] */
    if (!e) e = bgemm(dt, 0, 0, G * T, hs, T, 1.0f, D("P"), T, sS, D("v"), hs, sKV, D("Y"), 0, hs, sQ, B * KVH);
    if (!e) e = accel_gk_unpermute(dt, D("out"), D("Y"), B, T, NH, hs, 1, NULL);
    if (!e) e = accel_gk_permute(dt, D("dY"), D("dout"), NULL, B, T, NH, hs, 1, NULL);
    /* dP = dY V^T [G*T, T]; dV = P^T dY [T, hs] (summed over the group by the product) */
    if (!e) e = bgemm(dt, 0, 1, G * T, T, hs, 1.0f, D("dY"), hs, sQ, D("v"), hs, sKV, D("dP32"), 1, T, sS, B * KVH);
    if (!e) e = bgemm(dt, 1, 0, T, hs, G * T, 1.0f, D("P"), T, sS, D("dY"), hs, sQ, D("dv"), 0, hs, sKV, B * KVH);
    if (!e) e = accel_gk_softmax_backward(dt, D("dS"), D("P"), D("dP32"), B * NH * T, T, NULL, NH, NULL);
    /* dQ = scale dS K [G*T, hs]; dK = scale dS^T Q [T, hs] */
    if (!e) e = bgemm(dt, 0, 0, G * T, hs, T, scale, D("dS"), T, sS, D("k"), hs, sKV, D("dq"), 0, hs, sQ, B * KVH);
    if (!e) e = bgemm(dt, 1, 0, T, hs, G * T, scale, D("dS"), T, sS, D("q"), hs, sQ, D("dk"), 0, hs, sKV, B * KVH);
    if (!e) e = accel_gk_rope(dt, D("dq"), D("cos"), D("sin"), B, NH, T, hs, 0, NULL, 1, NULL);
    if (!e) e = accel_gk_rope(dt, D("dk"), D("cos"), D("sin"), B, KVH, T, hs, 0, NULL, 1, NULL);
    if (!e) e = accel_gk_unpermute_gqa(dt, D("dqkv"), D("dq"), D("dk"), D("dv"), B, T, NH, KVH, hs, NULL);
#undef D

    /* the reference, on the rows */
    const void *qkv = P(&c, "qkv", 0), *dout = P(&c, "dout", 0);
    const float *bias = P(&c, "bias", 0);
    float *x = malloc(sizeof(float) * BT * W), *dx = calloc(BT * W, sizeof(float));
    float *Pr = malloc(sizeof(float) * natt), *dS = malloc(sizeof(float) * natt);
    double *acc = malloc(sizeof(double) * T);
    for (size_t i = 0; i < BT * W; i++)
        x[i] = (float)accel_dtype_load(qkv, (accel_dtype_t)dt, i) + (with_bias ? bias[i % W] : 0.0f);
    for (size_t i = 0; i < BT * W; i++) x[i] = rnd_to(dt, x[i]);
    accel_cpu_rope(x, BT, (size_t)W, NH, hs, cs, sn, T, 0, 0);                 /* q heads */
    accel_cpu_rope(x + Cq, BT, (size_t)W, KVH, hs, cs, sn, T, 0, 0);           /* k heads */
    for (size_t i = 0; i < BT * W; i++) x[i] = rnd_to(dt, x[i]);
#define XQ(b, t, h, d) x[((size_t)(b) * T + (t)) * W + (size_t)(h) * hs + (d)]
#define XK(b, t, j, d) x[((size_t)(b) * T + (t)) * W + Cq + (size_t)(j) * hs + (d)]
#define XV(b, t, j, d) x[((size_t)(b) * T + (t)) * W + Cq + (size_t)(KVH + (j)) * hs + (d)]
#define DY(b, t, h, d) (float)accel_dtype_load(dout, (accel_dtype_t)dt, ((size_t)(b) * T + (t)) * Cq + (size_t)(h) * hs + (d))
#define ATT(a, b, h, t, u) a[(((size_t)(b) * NH + (h)) * T + (t)) * T + (u)]
    void *out = P(&c, "out", 0), *dqkv = P(&c, "dqkv", 0);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int j = h / G;
            for (int t = 0; t < T; t++) {
                double mx = -INFINITY, sum = 0, dot = 0;
                for (int u = 0; u <= t; u++) {
                    double s = 0;
                    for (int d = 0; d < hs; d++) s += (double)XQ(b, t, h, d) * XK(b, u, j, d);
                    acc[u] = (float)(scale * s);
                    mx = acc[u] > mx ? acc[u] : mx;
                }
                for (int u = 0; u <= t; u++) sum += exp(acc[u] - mx);
                for (int u = 0; u < T; u++) ATT(Pr, b, h, t, u) = u <= t ? rnd_to(dt, (float)(exp(acc[u] - mx) / sum)) : 0.0f;
                for (int d = 0; d < hs; d++) {
                    double y = 0;
                    for (int u = 0; u <= t; u++) y += (double)ATT(Pr, b, h, t, u) * XV(b, u, j, d);
                    accel_dtype_store(out, (accel_dtype_t)dt, ((size_t)b * T + t) * Cq + (size_t)h * hs + d, y);
                }
                /* dP in fp32, then dS = P (dP - sum P dP), stored */
                for (int u = 0; u <= t; u++) {
                    double s = 0;
                    for (int d = 0; d < hs; d++) s += (double)DY(b, t, h, d) * XV(b, u, j, d);
                    acc[u] = (float)s;
                    dot += ATT(Pr, b, h, t, u) * acc[u];
                }
                for (int u = 0; u < T; u++)
                    ATT(dS, b, h, t, u) = u <= t ? rnd_to(dt, ATT(Pr, b, h, t, u) * ((float)acc[u] - (float)dot)) : 0.0f;
            }
        }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++)
                for (int d = 0; d < hs; d++) {             /* dq (rotated) = scale dS K */
                    double s = 0;
                    for (int u = 0; u <= t; u++) s += (double)ATT(dS, b, h, t, u) * XK(b, u, h / G, d);
                    dx[((size_t)b * T + t) * W + (size_t)h * hs + d] = rnd_to(dt, (float)(scale * s));
                }
    for (int b = 0; b < B; b++)
        for (int j = 0; j < KVH; j++)
            for (int u = 0; u < T; u++)
                for (int d = 0; d < hs; d++) {             /* dk, dv: sums over the group's heads */
                    double sk = 0, sv = 0;
                    for (int h = j * G; h < (j + 1) * G; h++)
                        for (int t = u; t < T; t++) {
                            sk += (double)ATT(dS, b, h, t, u) * XQ(b, t, h, d);
                            sv += (double)ATT(Pr, b, h, t, u) * DY(b, t, h, d);
                        }
                    size_t r = ((size_t)b * T + u) * W + Cq + (size_t)j * hs + d;
                    dx[r] = rnd_to(dt, (float)(scale * sk));
                    dx[r + (size_t)KVH * hs] = rnd_to(dt, (float)sv);
                }
    accel_cpu_rope(dx, BT, (size_t)W, NH, hs, cs, sn, T, 0, 1);
    accel_cpu_rope(dx + Cq, BT, (size_t)W, KVH, hs, cs, sn, T, 0, 1);
    for (size_t i = 0; i < BT * W; i++) accel_dtype_store(dqkv, (accel_dtype_t)dt, i, dx[i]);
#undef XQ
#undef XK
#undef XV
#undef DY
#undef ATT
    char label[64];
    snprintf(label, sizeof label, "gqa_attention NH%d KVH%d hs%d%s", NH, KVH, hs, with_bias ? " +b" : "");
    int fails = finish(&c, label, e);
    free(cs);
    free(sn);
    free(x);
    free(dx);
    free(Pr);
    free(dS);
    free(acc);
    return fails;
}

static int check_llama(int dt)
{
    int fails = 0;
    kcase_t c = { .dt = dt };
    const size_t BT = (size_t)B_ * T_;

    /* RMSNorm: a head-sized row, an odd one, Llama-7B's, and one past the shared-memory dw path */
    const int widths[] = { C_, 1531, 4096, 12289 };
    for (int wi = 0; wi < 4; wi++) {
        const int W = widths[wi];
        const size_t n = BT * (size_t)W;
        for (int fused = 0; fused < 3; fused++) {      /* plain; + y + bias; + y */
            add(&c, "out", T_ACT, n, 1, 'z', 0);
            add(&c, "rstd", T_F32, BT, 1, 'z', 0);
            add(&c, "res_out", T_ACT, n, fused > 0, 'z', 0);
            add(&c, "res_in", T_ACT, n, 0, 'u', 2);
            add(&c, "y", T_ACT, n, 0, 'u', 1);
            add(&c, "bias", T_F32, (size_t)W, 0, 'u', 1);
            add(&c, "w", T_F32, (size_t)W, 0, 'u', 1);
            RUN(rmsnorm_forward, dt, Q("out"), Q("rstd"), fused ? Q("res_out") : NULL, Q("res_in"),
                fused ? Q("y") : NULL, fused == 1 ? Q("bias") : NULL, Q("w"), (int)BT, W,
                fused ? 1e-6f : 1e-5f, NULL);
        }
        add(&c, "dx", T_ACT, n, 1, 'u', 1);
        add(&c, "dw", T_F32, (size_t)W, 1, 'u', 1);
        add(&c, "dout", T_ACT, n, 0, 'u', 1);
        add(&c, "xin", T_ACT, n, 0, 'u', 2);
        add(&c, "rstd", T_F32, BT, 0, 'p', 2);
        add(&c, "w", T_F32, (size_t)W, 0, 'u', 1);
        RUN(rmsnorm_backward, dt, Q("dx"), Q("dw"), Q("dout"), Q("xin"), Q("rstd"), Q("w"), (int)BT, W, NULL);
    }

    /* RoPE: heads of 16 and 128, from position 0, from 5 (decoding) and at packed documents'
     * positions (pos0 = -1 here), both directions */
    const int hss[] = { HS_, 128 };
    for (int hi = 0; hi < 2; hi++)
        for (int pos0 = -1; pos0 <= 5; pos0 += pos0 < 0 ? 1 : 5)
            for (int inv = 0; inv < 2; inv++) {
                const int hs = hss[hi];
                const size_t tab = (size_t)((pos0 > 0 ? pos0 : 0) + T_) * (hs / 2);
                add(&c, "x", T_ACT, (size_t)B_ * NH_ * T_ * hs, 1, 'u', 2);
                add(&c, "cos", T_F32, tab, 0, 'u', 1);
                add(&c, "sin", T_F32, tab, 0, 'u', 1);
                add(&c, "pos", T_I32, BT, 0, 'd', T_);
                RUN(rope, dt, Q("x"), Q("cos"), Q("sin"), B_, NH_, T_, hs, pos0 < 0 ? 0 : pos0,
                    pos0 < 0 ? Q("pos") : NULL, inv, NULL);
            }

    /* GQA permutes: groups of 3, multi-query (one kv head), and KVH == NH */
    const int kvhs[] = { 2, 1, 6 };
    for (int ki = 0; ki < 3; ki++) {
        const int NH = 6, KVH = kvhs[ki], W = (NH + 2 * KVH) * HS_;
        const size_t nq = BT * NH * HS_, nkv = BT * KVH * HS_;
        for (int wb = 0; wb < 2; wb++) {
            add(&c, "q", T_ACT, nq, 1, 'z', 0);
            add(&c, "k", T_ACT, nkv, 1, 'z', 0);
            add(&c, "v", T_ACT, nkv, 1, 'z', 0);
            add(&c, "src", T_ACT, BT * W, 0, 'u', 1);
            add(&c, "bias", T_F32, (size_t)W, 0, 'u', 1);
            RUN(permute_gqa, dt, Q("q"), Q("k"), Q("v"), Q("src"), wb ? Q("bias") : NULL, B_, T_, NH,
                KVH, HS_, NULL);
        }
        add(&c, "dst", T_ACT, BT * W, 1, 'z', 0);
        add(&c, "q", T_ACT, nq, 0, 'u', 1);
        add(&c, "k", T_ACT, nkv, 0, 'u', 1);
        add(&c, "v", T_ACT, nkv, 0, 'u', 1);
        RUN(unpermute_gqa, dt, Q("dst"), Q("q"), Q("k"), Q("v"), B_, T_, NH, KVH, HS_, NULL);
    }
    {   /* with KVH == NH and q, k, v back to back: the GPT's permute with nparts 3, byte for byte */
        const size_t part = BT * C_ * accel_dtype_size((accel_dtype_t)dt);
        add(&c, "dst", T_ACT, 3 * BT * C_, 1, 'z', 0);
        add(&c, "src", T_ACT, 3 * BT * C_, 0, 'u', 1);
        add(&c, "bias", T_F32, (size_t)3 * C_, 0, 'u', 1);
        int dev = 1;
        char *d = Q("dst");
        int e = accel_gk_permute_gqa(dt, d, d + part, d + 2 * part, Q("src"), Q("bias"), B_, T_, NH_, NH_,
                                     HS_, NULL);
        dev = 0;
        ref_accel_gk_permute(dt, Q("dst"), Q("src"), Q("bias"), B_, T_, NH_, HS_, 3, NULL);
        fails += finish(&c, "permute_gqa == permute x3", e);
    }
    {   /* refused: NH not a multiple of KVH, odd head size */
        void *p = NULL;
        int bad = accel_gk_permute_gqa(dt, p, p, p, p, NULL, 1, 1, 5, 2, HS_, NULL) == 0;
        bad += accel_gk_unpermute_gqa(dt, p, p, p, p, 1, 1, 5, 2, HS_, NULL) == 0;
        bad += accel_gk_rope(dt, p, NULL, NULL, 1, 1, 1, 15, 0, NULL, 0, NULL) == 0;
        const int32_t pos = 0;          /* positions with a start position: refused before any use */
        bad += accel_gk_rope(dt, p, NULL, NULL, 1, 1, 1, 16, 3, &pos, 0, NULL) == 0;
        printf("%-4s %-28s %-4s bad arguments refused\n", bad ? "FAIL" : "ok", "permute_gqa/rope", dt_name(dt));
        fails += bad;
    }

    /* SwiGLU: Llama-sized and odd widths */
    const int ffs[] = { 4 * C_, 1531 };
    for (int fi = 0; fi < 2; fi++) {
        const int F = ffs[fi];
        add(&c, "h", T_ACT, BT * F, 1, 'z', 0);
        add(&c, "gu", T_ACT, BT * 2 * F, 0, 'u', 4);
        RUN(swiglu_forward, dt, Q("h"), Q("gu"), (int)BT, F, NULL);
        add(&c, "dgu", T_ACT, BT * 2 * F, 1, 'u', 1);     /* overwritten: stale values must go */
        add(&c, "dh", T_ACT, BT * F, 0, 'u', 1);
        add(&c, "gu", T_ACT, BT * 2 * F, 0, 'u', 4);
        RUN(swiglu_backward, dt, Q("dgu"), Q("dh"), Q("gu"), (int)BT, F, NULL);
    }

    /* attention end to end: groups of 3 with the qkv bias, MQA, plain MHA, heads of 64 */
    fails += check_gqa_attention(dt, B_, T_, 6, 2, HS_, 1);
    fails += check_gqa_attention(dt, B_, T_, 4, 1, HS_, 0);
    fails += check_gqa_attention(dt, 1, T_, 3, 3, HS_, 0);
    fails += check_gqa_attention(dt, 1, 70, 8, 2, 64, 1);
    return fails;
}
#endif

int main(int argc, char **argv)
{
    int provided;
    accel_mpi_defaults();
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    accel_log_set_identity(0, 1, "gpu_kernels_check");
    setvbuf(stdout, NULL, _IOLBF, 0);
#if !ACCEL_HAVE_CUDA
    printf("SKIP: accel was built without CUDA\n");
    MPI_Finalize();
    return 77;
#else
#if ACCEL_GPU_MOCK
    printf("device: emulated (GPT kernels: the harness only; Llama kernels: the mock's against the CPU)\n");
#else
    const char *why = NULL;
    if (accel_device_cuda_count(&why) == 0) {
        printf("SKIP: no CUDA device: %s\n", why ? why : "unknown reason");
        MPI_Finalize();
        return 77;
    }
    accel_device_t dev;
    if (accel_device_select("cuda", 0, &dev) != ACCEL_OK) {
        MPI_Finalize();
        return 1;
    }
    printf("device: %s\n", dev.name);
#endif
    int fails = 0;
    const int dts[] = { ACCEL_F32, ACCEL_BF16, ACCEL_F16 };
    for (int i = 0; i < 3; i++) fails += check_dtype(dts[i]);
    for (int i = 0; i < 3; i++) fails += check_llama(dts[i]);
    printf("%s: %d kernel output(s) outside tolerance\n", fails ? "FAIL" : "PASS", fails);
    MPI_Finalize();
    return fails ? 1 : 0;
#endif
}
