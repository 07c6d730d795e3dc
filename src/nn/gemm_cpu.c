/* Precision-dispatching CPU matrix product (see gemm_cpu.h). For reduced precision the operands
 * are converted while being packed into a scratch buffer owned by the caller's accel_gemm_cpu_t;
 * the packing pass is O(operand size), small next to the O(M N K) product. */
#include "build_config.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#if ACCEL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "gemm_cpu.h"
#include "kernels_cpu.h"

/* OpenBLAS has sbgemm (bf16 inputs, fp32 accumulation) only when it was built with
 * BUILD_BFLOAT16=1; Debian 12's 0.3.21 declares it in cblas.h but does not export it. So it is
 * looked up at run time and used when the BLAS has it. */
typedef void (*sbgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int,
                          int, float, const uint16_t *, int, const uint16_t *, int, float, float *,
                          int);

static sbgemm_fn find_sbgemm(void)
{
    static int looked;
    static sbgemm_fn fn;
    if (!looked) {                  /* idempotent: a race only repeats the same lookup */
        fn = (sbgemm_fn)dlsym(RTLD_DEFAULT, "cblas_sbgemm");
        looked = 1;
    }
    return fn;
}

static const char *const path_names[] = { "onednn", "kernel", "sbgemm", "emulate" };

const char *accel_gemm_bf16_path_name(accel_bf16_path_t path)
{
    return (unsigned)path < sizeof path_names / sizeof path_names[0] ? path_names[path] : "?";
}

bool accel_gemm_bf16_path_available(accel_bf16_path_t path)
{
    switch (path) {
    case ACCEL_BF16_ONEDNN: return accel_gemm_onednn_available();
    case ACCEL_BF16_KERNEL: return accel_gemm_bf16_x86_available();
    case ACCEL_BF16_SBGEMM: return find_sbgemm() != NULL;
    default: return true;
    }
}

/* auto: oneDNN where the CPU has AMX (its tiles do about ten times the multiply-adds of AVX512-BF16
 * per cycle, and accel has no AMX kernel); on AVX512-BF16 CPUs without AMX, accel's kernel, which
 * runs the step's products faster than oneDNN's there (bench/gemm_bf16 prints both; the
 * triangle-only attention products have no oneDNN counterpart); then the BLAS's sbgemm; then the
 * emulation. */
static accel_bf16_path_t auto_path(void)
{
    if (accel_gemm_cpu_amx() && accel_gemm_bf16_path_available(ACCEL_BF16_ONEDNN)) return ACCEL_BF16_ONEDNN;
    if (accel_gemm_bf16_path_available(ACCEL_BF16_KERNEL)) return ACCEL_BF16_KERNEL;
    if (accel_gemm_bf16_path_available(ACCEL_BF16_SBGEMM)) return ACCEL_BF16_SBGEMM;
    return ACCEL_BF16_EMULATE;
}

static accel_bf16_path_t chosen_path;       /* set once, by choose_path */
static accel_status_t chosen_status;

static void choose_path(void)
{
    const char *want = getenv("ACCEL_BF16_GEMM");
    chosen_path = auto_path();
    if (!want || !*want || !strcmp(want, "auto")) return;
    for (int p = 0; p < (int)(sizeof path_names / sizeof path_names[0]); p++) {
        if (strcmp(want, path_names[p])) continue;
        if (!accel_gemm_bf16_path_available((accel_bf16_path_t)p)) {
            ACCEL_ERROR("ACCEL_BF16_GEMM=%s: %s\n--> hint: unset it (auto picks %s on this "
                        "machine)", want,
                        p == ACCEL_BF16_ONEDNN ? "accel was built without oneDNN, or this CPU has "
                                                 "neither AVX512-BF16 nor AMX"
                        : p == ACCEL_BF16_KERNEL ? "accel's kernel needs AVX512-BF16"
                                                 : "the BLAS has no cblas_sbgemm",
                        path_names[chosen_path]);
            chosen_status = ACCEL_ERR_UNSUPPORTED;
        }
        chosen_path = (accel_bf16_path_t)p;
        return;
    }
    ACCEL_ERROR("ACCEL_BF16_GEMM=%s is not a bf16 product path\n--> hint: auto, onednn, kernel, "
                "sbgemm or emulate", want);
    chosen_status = ACCEL_ERR_CONFIG;
}

accel_status_t accel_gemm_bf16_path(accel_bf16_path_t *path)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_path);
    *path = chosen_path;
    return chosen_status;
}

/* fp32 products: oneDNN's JIT sgemm runs products of a million multiply-adds and more 5-15% faster
 * than OpenBLAS 0.3.21 on AVX-512 (the GPT's layers, 128^3 upwards; bench/gemm_peak -v shows both
 * libraries); smaller ones, such as the 32-row attention blocks, stay on OpenBLAS, whose
 * small-matrix path wins there. Only measured, so only used, on CPUs with AVX-512;
 * ACCEL_NO_ONEDNN=1 turns it off. */
static bool onednn_sgemm_on(void)
{
    static int on = -1;
    if (on < 0) {
#if ACCEL_HAVE_ONEDNN && defined(__x86_64__)
        __builtin_cpu_init();
        on = !getenv("ACCEL_NO_ONEDNN") && __builtin_cpu_supports("avx512f");
#else
        on = 0;
#endif
    }
    return on;
}

/* oneDNN's sgemm generates its kernels on first use and packs operands into buffers of its own:
 * 3-10 MiB after one product, 6-20 MiB over a GPT's training step (oneDNN 2.6.3, one thread,
 * widths 128-512, contexts 128-256, products up to 4096^3; measured on Zen 5 as the peak resident
 * memory with and without it). The bf16 primitives' shared scratchpad is under 1 MiB there. */
size_t accel_gemm_cpu_workspace_bytes(void)
{
    return onednn_sgemm_on() ? (size_t)24 << 20 : 0;
}

static void sgemm(enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                  const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    /* One row (a KV-cached token): a matrix-vector product. sgemm repacks the whole of B on every
     * call (OpenBLAS 0.3.21: 60% of a cached token's time), sgemv streams it once. */
    if (M == 1) {
        const int incx = ta == CblasTrans ? lda : 1;
        if (tb == CblasTrans)           /* B is N x K: C = B a */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, alpha, B, ldb, A, incx, beta, C, 1);
        else                            /* B is K x N: C = B^T a */
            cblas_sgemv(CblasRowMajor, CblasTrans, K, N, alpha, B, ldb, A, incx, beta, C, 1);
        return;
    }
#if ACCEL_HAVE_ONEDNN
    if (onednn_sgemm_on() && (double)M * N * K >= 1048576.0 &&
        dnnl_sgemm(ta == CblasTrans ? 'T' : 'N', tb == CblasTrans ? 'T' : 'N', M, N, K, alpha, A,
                   lda, B, ldb, beta, C, ldc) == dnnl_success)
        return;
#endif
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* The native paths run products big enough to repay converting and packing their operands (down
 * to the 32 x 32 x 64 blocks of attention, where accel's kernel beats rounding plus sgemm); tiny
 * ones are emulated: operands rounded to bf16 and multiplied by sgemm, the same products with
 * fp32 accumulation. */
static bool big_enough(int M, int N, int K)
{
    return M >= 16 && N >= 16 && K >= 16 && (double)M * N * K >= 32768.0;
}

bool accel_gemm_cpu_has_bf16(void)
{
    accel_bf16_path_t path;
    return accel_gemm_bf16_path(&path) == ACCEL_OK && path != ACCEL_BF16_EMULATE;
}

accel_status_t accel_gemm_cpu_init(accel_gemm_cpu_t *g, accel_dtype_t dtype)
{
    g->work = NULL;
    g->work_bytes = 0;
    g->onednn = NULL;
    g->dtype = dtype;
    g->bf16_path = ACCEL_BF16_EMULATE;
    if (dtype != ACCEL_F32 && dtype != ACCEL_BF16 && dtype != ACCEL_F16) {
        ACCEL_ERROR0("matrix products cannot compute in %s\n--> hint: use precision fp32, bf16 "
                     "or fp16", accel_dtype_name(dtype));
        return ACCEL_ERR_INVALID;
    }
    return dtype == ACCEL_BF16 ? accel_gemm_bf16_path(&g->bf16_path) : ACCEL_OK;
}

void accel_gemm_cpu_free(accel_gemm_cpu_t *g)
{
    free(g->work);
    g->work = NULL;
    g->work_bytes = 0;
    accel_gemm_onednn_free(g->onednn);
    g->onednn = NULL;
}

static accel_status_t grow(accel_gemm_cpu_t *g, size_t bytes)
{
    if (bytes <= g->work_bytes) return ACCEL_OK;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes)) {
        ACCEL_ERROR("cannot allocate %zu bytes for matrix-product operands", bytes);
        return ACCEL_ERR_NOMEM;
    }
    free(g->work);
    g->work = p;
    g->work_bytes = bytes;
    return ACCEL_OK;
}

accel_status_t accel_gemm_cpu_reserve(accel_gemm_cpu_t *g, size_t elements)
{
    if (g->dtype == ACCEL_F32) return ACCEL_OK;
    return grow(g, elements * sizeof(float) + 128);    /* + room to align the second operand */
}

accel_status_t accel_gemm_cpu(accel_gemm_cpu_t *g, bool transA, bool transB, int M, int N, int K,
                              float alpha, const float *A, int lda, const float *B, int ldb,
                              float beta, float *C, int ldc)
{
    const enum CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
    if (g->dtype == ACCEL_F32 || M <= 0 || N <= 0 || K <= 0) {
        sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return ACCEL_OK;
    }
    /* Stored shapes: A is M x K (K x M when transposed), B is K x N (N x K). */
    size_t arows = transA ? (size_t)K : (size_t)M, acols = transA ? (size_t)M : (size_t)K;
    size_t brows = transB ? (size_t)N : (size_t)K, bcols = transB ? (size_t)K : (size_t)N;
    size_t na = arows * acols, nb = brows * bcols;
    size_t na_padded = (na + 31) / 32 * 32;              /* keep the second operand 64-byte aligned */
    if (g->dtype == ACCEL_BF16 && g->bf16_path != ACCEL_BF16_EMULATE && big_enough(M, N, K)) {
        if (g->bf16_path == ACCEL_BF16_KERNEL) {
            ACCEL_CHECK(grow(g, accel_gemm_bf16_x86_work(M, N, K)));
            accel_gemm_bf16_x86(g->work, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return ACCEL_OK;
        }
        /* oneDNN and sbgemm take bf16 operands: convert them into the scratch, dense. */
        ACCEL_CHECK(grow(g, (na_padded + nb) * sizeof(uint16_t) + 128));
        uint16_t *a16 = g->work, *b16 = a16 + na_padded;
        accel_cpu_pack_bf16(a16, A, arows, acols, (size_t)lda);
        accel_cpu_pack_bf16(b16, B, brows, bcols, (size_t)ldb);
        if (g->bf16_path == ACCEL_BF16_ONEDNN)
            return accel_gemm_onednn_bf16(&g->onednn, transA, transB, M, N, K, alpha, a16, b16,
                                          beta, C, ldc, NULL);
        find_sbgemm()(CblasRowMajor, ta, tb, M, N, K, alpha, a16, (int)acols, b16, (int)bcols,
                      beta, C, ldc);
        return ACCEL_OK;
    }
    ACCEL_CHECK(grow(g, (na_padded + nb) * sizeof(float) + 128));
    float *ar = g->work, *br = ar + na_padded;
    if (g->dtype == ACCEL_F16) {
        accel_cpu_pack_f16_round(ar, A, arows, acols, (size_t)lda);
        accel_cpu_pack_f16_round(br, B, brows, bcols, (size_t)ldb);
    } else {
        accel_cpu_pack_bf16_round(ar, A, arows, acols, (size_t)lda);
        accel_cpu_pack_bf16_round(br, B, brows, bcols, (size_t)ldb);
    }
    sgemm(ta, tb, M, N, K, alpha, ar, (int)acols, br, (int)bcols, beta, C, ldc);
    return ACCEL_OK;
}

/* The triangular products run on accel's bf16 kernel when it runs the full products, and on the
 * oneDNN path too where the CPU has AVX512-BF16: skipping the masked half, it runs attention's
 * blocks about twice as fast as oneDNN's full products (bench/gemm_bf16), which are too small
 * for oneDNN's brgemm kernels (it picks gemm:jit for them). */
static bool tri_on_x86_kernel(const accel_gemm_cpu_t *g, int T, int K)
{
    return g->dtype == ACCEL_BF16 && big_enough(T, T, K) &&
           (g->bf16_path == ACCEL_BF16_KERNEL ||
            (g->bf16_path == ACCEL_BF16_ONEDNN && accel_gemm_bf16_x86_available()));
}

accel_status_t accel_gemm_cpu_lower_nt(accel_gemm_cpu_t *g, int T, int K, float alpha,
                                       const float *A, int lda, const float *B, int ldb, float *C,
                                       int ldc)
{
    if (!tri_on_x86_kernel(g, T, K))
        return accel_gemm_cpu(g, false, true, T, T, K, alpha, A, lda, B, ldb, 0.0f, C, ldc);
    ACCEL_CHECK(grow(g, accel_gemm_bf16_x86_tri_work(T, K)));
    accel_gemm_bf16_x86_lower_nt(g->work, T, K, alpha, A, lda, B, ldb, C, ldc);
    return ACCEL_OK;
}

accel_status_t accel_gemm_cpu_trmm(accel_gemm_cpu_t *g, bool transL, int T, int N, float alpha,
                                   const float *L, int ldl, const float *B, int ldb, float *C,
                                   int ldc)
{
    if (!tri_on_x86_kernel(g, T, N))
        return accel_gemm_cpu(g, transL, false, T, N, T, alpha, L, ldl, B, ldb, 0.0f, C, ldc);
    ACCEL_CHECK(grow(g, accel_gemm_bf16_x86_tri_work(T, N)));
    accel_gemm_bf16_x86_trmm(g->work, transL, T, N, alpha, L, ldl, B, ldb, C, ldc);
    return ACCEL_OK;
}
