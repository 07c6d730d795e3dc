/* Precision-dispatching CPU matrix product for the built-in models (private to libaccel).
 * fp32: cblas_sgemm (oneDNN's sgemm for large products on AVX-512). bf16: operands rounded to
 * bf16, products accumulated in fp32, on one of four paths (accel_bf16_path_t), chosen once per
 * process: oneDNN's matmul primitive (AMX tiles where the CPU has them), accel's own AVX512-BF16
 * kernel, OpenBLAS's cblas_sbgemm where the BLAS exports it, or emulated (rounded operands, fp32
 * sgemm). ACCEL_BF16_GEMM=onednn|kernel|sbgemm|emulate forces one (tests run each). fp16:
 * operands rounded to the nearest fp16 value and multiplied in fp32 (emulated: CPUs have no fp16
 * GEMM). The output C is always fp32. */
#ifndef ACCEL_NN_GEMM_CPU_H
#define ACCEL_NN_GEMM_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/dtype.h"
#include "accel/status.h"

/* Who runs bf16 products. */
typedef enum {
    ACCEL_BF16_ONEDNN,              /* oneDNN matmul primitives: on AMX CPUs, and where it wins */
    ACCEL_BF16_KERNEL,              /* accel's AVX512-BF16 kernel (gemm_bf16_x86.c) */
    ACCEL_BF16_SBGEMM,              /* the BLAS's cblas_sbgemm (OpenBLAS built with BFLOAT16) */
    ACCEL_BF16_EMULATE,             /* operands rounded to bf16 and multiplied by sgemm */
} accel_bf16_path_t;

typedef struct accel_gemm_onednn_cache accel_gemm_onednn_cache_t;

typedef struct {
    accel_dtype_t dtype;            /* ACCEL_F32, ACCEL_BF16 or ACCEL_F16 */
    accel_bf16_path_t bf16_path;    /* accel_gemm_bf16_path() at init; a benchmark may change it */
    void *work;                     /* converted operands, grown on demand */
    size_t work_bytes;
    accel_gemm_onednn_cache_t *onednn;  /* oneDNN primitives by product shape, made on first use */
} accel_gemm_cpu_t;

/* The bf16 path of this process: ACCEL_BF16_GEMM when set (an unknown value, or a path this
 * build or CPU cannot run, is an error that names it), else the fastest available: oneDNN on AMX
 * CPUs, accel's kernel on other AVX512-BF16 CPUs, sbgemm where the BLAS has it, else the
 * emulation. Read once; later calls return the same answer. */
accel_status_t accel_gemm_bf16_path(accel_bf16_path_t *path);
const char *accel_gemm_bf16_path_name(accel_bf16_path_t path);
/* This build and CPU can run that path. */
bool accel_gemm_bf16_path_available(accel_bf16_path_t path);

/* dtype must be ACCEL_F32, ACCEL_BF16 or ACCEL_F16. */
accel_status_t accel_gemm_cpu_init(accel_gemm_cpu_t *g, accel_dtype_t dtype);
void accel_gemm_cpu_free(accel_gemm_cpu_t *g);
/* Make room for products whose two operands hold up to `elements` values together, so later
 * calls do not allocate. */
accel_status_t accel_gemm_cpu_reserve(accel_gemm_cpu_t *g, size_t elements);

/* Row-major C[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * C, op(X) = X^T when trans is set
 * (then A is stored [K,M] with leading dimension lda, like cblas_sgemm). */
accel_status_t accel_gemm_cpu(accel_gemm_cpu_t *g, bool transA, bool transB, int M, int N, int K,
                              float alpha, const float *A, int lda, const float *B, int ldb,
                              float beta, float *C, int ldc);

/* The two product shapes of causal attention, on a T x T lower triangle (row t of the score
 * matrix only sees columns 0..t), computed without the masked half where the bf16 kernel runs
 * them and as full products otherwise:
 *   accel_gemm_cpu_lower_nt: C[i][j] = alpha * sum_k A[i][k] B[j][k] for j <= i (A, B: T x K);
 *     the entries above the diagonal are left unspecified.
 *   accel_gemm_cpu_trmm: C = alpha * op(L) B, L T x T lower triangular (its entries above the
 *     diagonal must be zero), op(L) = L^T when transL is set, B T x N. C is overwritten. */
accel_status_t accel_gemm_cpu_lower_nt(accel_gemm_cpu_t *g, int T, int K, float alpha,
                                       const float *A, int lda, const float *B, int ldb, float *C,
                                       int ldc);
accel_status_t accel_gemm_cpu_trmm(accel_gemm_cpu_t *g, bool transL, int T, int N, float alpha,
                                   const float *L, int ldl, const float *B, int ldb, float *C,
                                   int ldc);

/* The AVX512-BF16 kernel behind the bf16 path (gemm_bf16_x86.c): available on this CPU, scratch
 * bytes it needs for an M x N x K product, and the product itself (same arguments as
 * accel_gemm_cpu, plus the scratch). */
bool accel_gemm_bf16_x86_available(void);
size_t accel_gemm_bf16_x86_work(int M, int N, int K);
void accel_gemm_bf16_x86(void *work, bool transA, bool transB, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C,
                         int ldc);

/* The triangular products above on that kernel, and the scratch bytes they need (T x T
 * triangle, K or N the other dimension). */
size_t accel_gemm_bf16_x86_tri_work(int T, int K);
void accel_gemm_bf16_x86_lower_nt(void *work, int T, int K, float alpha, const float *A, int lda,
                                  const float *B, int ldb, float *C, int ldc);
void accel_gemm_bf16_x86_trmm(void *work, bool transL, int T, int N, float alpha, const float *L,
                              int ldl, const float *B, int ldb, float *C, int ldc);

/* oneDNN's bf16 matmul (gemm_onednn.c): available (built with oneDNN, CPU with AVX512-BF16 or
 * AMX), the CPU has AMX-BF16, and one product C = alpha op(A) op(B) + beta C of dense bf16
 * operands (A stored M x K, K x M when transA; B K x N, N x K when transB), with the primitive
 * of its shape made once and kept in *cache (freed by accel_gemm_onednn_free). *impl, when not
 * NULL, receives oneDNN's name for the implementation it runs. */
bool accel_gemm_onednn_available(void);
bool accel_gemm_cpu_amx(void);
accel_status_t accel_gemm_onednn_bf16(accel_gemm_onednn_cache_t **cache, bool transA, bool transB,
                                      int M, int N, int K, float alpha, const uint16_t *A,
                                      const uint16_t *B, float beta, float *C, int ldc,
                                      const char **impl);
void accel_gemm_onednn_free(accel_gemm_onednn_cache_t *cache);
/* The scratchpad the cache's primitives share (the largest any of them needs). */
size_t accel_gemm_onednn_scratch_bytes(const accel_gemm_onednn_cache_t *cache);

/* Memory the product libraries take beside accel's own buffers, per process (an allowance the
 * models add to their activation estimate): 24 MiB where oneDNN's sgemm runs, else 0. */
size_t accel_gemm_cpu_workspace_bytes(void);

/* True when bf16 products run natively (not emulated) in this process. */
bool accel_gemm_cpu_has_bf16(void);

#endif
