/* Precision-dispatching CPU matrix product for the built-in models (private to libaccel).
 * fp32: cblas_sgemm. bf16: operands rounded to bf16, products accumulated in fp32 (OpenBLAS
 * cblas_sbgemm where the BLAS has it, else accel's own AVX512-BF16 kernel where the CPU has
 * it, else emulated like fp16). fp16: operands rounded to the nearest fp16 value and multiplied
 * in fp32 (emulated: CPUs have no fp16 GEMM). The output C is always fp32. ACCEL_NO_SBGEMM=1 and
 * ACCEL_NO_BF16_KERNEL=1 turn the native bf16 paths off (to compare against the emulation). */
#ifndef ACCEL_NN_GEMM_CPU_H
#define ACCEL_NN_GEMM_CPU_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/dtype.h"
#include "accel/status.h"

typedef struct {
    accel_dtype_t dtype;            /* ACCEL_F32, ACCEL_BF16 or ACCEL_F16 */
    void *work;                     /* converted operands, grown on demand */
    size_t work_bytes;
} accel_gemm_cpu_t;

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

/* True when bf16 products run natively (the BLAS exports cblas_sbgemm), false when emulated. */
bool accel_gemm_cpu_has_bf16(void);

#endif
