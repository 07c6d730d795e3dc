/* bf16 matrix product for x86 CPUs with AVX512-BF16 (Cooper Lake, Sapphire Rapids, Zen 4):
 * C = alpha * op(A) op(B) + beta * C with operands rounded to bf16 and products accumulated in
 * fp32 by VDPBF16PS, which does twice the multiply-adds of an fp32 FMA per instruction. It stands
 * in for OpenBLAS's sbgemm, which Debian's OpenBLAS is built without.
 *
 * Classic GotoBLAS structure: K is cut into blocks of KC; for each, op(B) is packed (converted to
 * bf16, k-pairs interleaved as VDPBF16PS wants them) into panels of NR = 32 columns, op(A) into
 * panels of MR = 12 rows, MC rows at a time, and a 12 x 32 register-blocked micro-kernel (24
 * accumulators) runs over the panels. Packing converts, so no separate conversion pass is made. */
#include "build_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gemm_cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)

#include <immintrin.h>

#include "transpose_x86.h"

#define MR 12
#define NR 32
#define KC 384                      /* k values per block (even) */
#define MC 96                       /* rows of A per block (multiple of MR) */
/* Rows of op(X) fetched ahead while packing lanes-contiguous operands: where only a few lanes of
 * each row are packed (A of a TN product, rows far apart), the hardware prefetcher does not keep
 * up. Packing such operands took 20-25% less time in the GPT step with it; cold in a micro
 * benchmark, 0.3 ns per element instead of 1.2. */
#define PREFETCH_ROWS 32
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

bool accel_gemm_bf16_x86_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512bf16");
}

size_t accel_gemm_bf16_x86_work(int M, int N, int K)
{
    (void)M;
    size_t kc2 = (size_t)((K < KC ? K : KC) + 1) / 2;
    size_t npan = ((size_t)N + NR - 1) / NR;
    return sizeof(uint32_t) * kc2 * (npan * NR + MC) + 128;
}

/* Two floats -> one word bf16(a) | bf16(b) << 16 (round to nearest even, as VCVTNE2PS2BF16). */
TARGET static inline uint32_t pair_word(float a, float b)
{
    __m128bh h = _mm_cvtneps_pbh(_mm_set_ps(0.0f, 0.0f, b, a));
    uint32_t word;
    memcpy(&word, &h, 4);
    return word;
}

/* A row of kc contiguous floats -> kc2 contiguous words bf16(r[2kp]) | bf16(r[2kp+1]) << 16
 * (kc odd: the last word's high half is 0). */
TARGET static void convert_row(uint32_t *dst, const float *r, int kc)
{
    const int kc2 = (kc + 1) / 2;
    int kp = 0;
    for (; 2 * kp + 32 <= kc; kp += 16)
        _mm512_storeu_si512(dst + kp, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(r + 2 * kp + 16),
                                                                   _mm512_loadu_ps(r + 2 * kp)));
    for (; kp < kc2; kp++) dst[kp] = pair_word(r[2 * kp], 2 * kp + 1 < kc ? r[2 * kp + 1] : 0.0f);
}

/* Pack lanes 0 .. n-1 of op(X), x(l, k) = src[l * sl + k * sk] for k < kc, into panels of W lanes
 * (lanes >= n zero), panel q at dst + q * kc2 * W, as words w(l, kp) = bf16(x(l, 2kp)) |
 * bf16(x(l, 2kp+1)) << 16 at [kp * W + l] (kp-major: how the micro-kernel loads B, and A when it is
 * transposed) or, when lane_major, at [l * kc2 + kp] (A with k contiguous: no transpose needed).
 * Exactly one of sl, sk is 1. Every source row is read front to back in one sweep (all panels
 * together), so packing streams through memory instead of striding down one panel at a time. */
TARGET static void pack_panels(uint32_t *dst, int W, bool lane_major, const float *src, size_t sl,
                               size_t sk, int n, int kc)
{
    const int kc2 = (kc + 1) / 2, npan = (n + W - 1) / W;
    const size_t psize = (size_t)kc2 * W;
    if (lane_major) {               /* k contiguous, lane-major: convert each lane's row */
        for (int l = 0; l < npan * W; l++) {
            uint32_t *d = dst + (size_t)(l / W) * psize + (size_t)(l % W) * kc2;
            if (l < n) convert_row(d, src + (size_t)l * sl, kc);
            else memset(d, 0, sizeof(uint32_t) * (size_t)kc2);
        }
        return;
    }
    if (sl == 1) {                  /* lanes contiguous: two rows of k give one row of words */
        for (int kp = 0; kp < kc2; kp++) {
            const float *r0 = src + (size_t)(2 * kp) * sk;
            const float *r1 = 2 * kp + 1 < kc ? r0 + sk : NULL;
            for (int q = 0; q < npan; q++)
                for (int l = 0; l < W; l += 16) {
                    int first = q * W + l, left = n - first;
                    int cnt = left < 16 ? (left > 0 ? left : 0) : 16;
                    if (cnt > W - l) cnt = W - l;
                    __mmask16 m = (__mmask16)((1u << cnt) - 1);
                    if (2 * kp + PREFETCH_ROWS + 1 < kc) {
                        _mm_prefetch((const char *)(r0 + PREFETCH_ROWS * sk + first), _MM_HINT_T0);
                        _mm_prefetch((const char *)(r1 + PREFETCH_ROWS * sk + first), _MM_HINT_T0);
                    }
                    __m512 x0 = _mm512_maskz_loadu_ps(m, r0 + first);
                    __m512 x1 = r1 ? _mm512_maskz_loadu_ps(m, r1 + first) : _mm512_setzero_ps();
                    __m512i w0 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x0));
                    __m512i w1 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x1));
                    __m512i w = _mm512_or_si512(w0, _mm512_slli_epi32(w1, 16));
                    __mmask16 sm = (__mmask16)((1u << (W - l < 16 ? W - l : 16)) - 1);
                    _mm512_mask_storeu_epi32(dst + (size_t)q * psize + (size_t)kp * W + l, sm, w);
                }
        }
        return;
    }
    /* k contiguous into kp-major panels (B of an NT product, W a multiple of 16): convert 16
     * lanes x 32 k values into a 16 x 16 block of words and transpose it in registers. */
    for (int q = 0; q < npan; q++)
        for (int l0 = 0; l0 < W; l0 += 16) {
            uint32_t *d = dst + (size_t)q * psize + l0;
            const int first = q * W + l0;
            int kp = 0;
            for (; 2 * kp + 32 <= kc; kp += 16) {
                __m512i r[16];
                for (int i = 0; i < 16; i++) {
                    const float *x = src + (size_t)(first + i) * sl + (size_t)(2 * kp);
                    r[i] = first + i < n ? (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16),
                                                                         _mm512_loadu_ps(x))
                                         : _mm512_setzero_si512();
                }
                accel_transpose16(r);
                for (int j = 0; j < 16; j++) _mm512_storeu_si512(d + (size_t)(kp + j) * W, r[j]);
            }
            for (; kp < kc2; kp++)
                for (int i = 0; i < 16; i++) {
                    const float *x = src + (size_t)(first + i) * sl + (size_t)(2 * kp);
                    if (first + i >= n) d[(size_t)kp * W + i] = 0;
                    else d[(size_t)kp * W + i] = pair_word(x[0], 2 * kp + 1 < kc ? x[1] : 0.0f);
                }
        }
}

/* C[mr x nr] = alpha * A(MR x kc2 pairs) Bp(kc2 pairs x NR) (+ C when accumulate); word (i, kp)
 * of A at Ap[i * ai + kp * ak]. Inlined into two kernels with constant layouts. */
TARGET static inline __attribute__((always_inline)) void
micro_body(int kc2, const uint32_t *Ap, size_t ai, size_t ak, const uint32_t *Bp, float *C, int ldc,
           int mr, int nr, float alpha, bool accumulate)
{
    __m512 c[MR][2];
    for (int i = 0; i < mr; i++) {      /* C's tile arrives while the products run */
        _mm_prefetch((const char *)(C + (size_t)i * ldc), _MM_HINT_T0);
        if (nr > 16) _mm_prefetch((const char *)(C + (size_t)i * ldc + 16), _MM_HINT_T0);
    }
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (int kp = 0; kp < kc2; kp++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(Bp + (size_t)kp * NR);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(Bp + (size_t)kp * NR + 16);
        const uint32_t *a = Ap + (size_t)kp * ak;
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[(size_t)i * ai]);
            c[i][0] = _mm512_dpbf16_ps(c[i][0], x, b0);
            c[i][1] = _mm512_dpbf16_ps(c[i][1], x, b1);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha);
    __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xffff : (1u << nr) - 1);
    __mmask16 m1 = (__mmask16)(nr >= 32 ? 0xffff : nr > 16 ? (1u << (nr - 16)) - 1 : 0);
    /* Unrolled with a break, not a loop to mr: constant indices keep c[][] in registers (a
     * variable index makes the compiler spill all 24 accumulators to the stack every call). */
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (i >= mr) break;
        float *ci = C + (size_t)i * ldc;
        __m512 x0 = _mm512_setzero_ps(), x1 = _mm512_setzero_ps();
        if (accumulate) x0 = _mm512_maskz_loadu_ps(m0, ci), x1 = _mm512_maskz_loadu_ps(m1, ci + 16);
        _mm512_mask_storeu_ps(ci, m0, _mm512_fmadd_ps(va, c[i][0], x0));
        _mm512_mask_storeu_ps(ci + 16, m1, _mm512_fmadd_ps(va, c[i][1], x1));
    }
}

TARGET static void kernel_kp_major(int kc2, const uint32_t *Ap, const uint32_t *Bp, float *C,
                                   int ldc, int mr, int nr, float alpha, bool accumulate)
{
    micro_body(kc2, Ap, 1, MR, Bp, C, ldc, mr, nr, alpha, accumulate);
}

TARGET static void kernel_lane_major(int kc2, const uint32_t *Ap, const uint32_t *Bp, float *C,
                                     int ldc, int mr, int nr, float alpha, bool accumulate)
{
    micro_body(kc2, Ap, (size_t)kc2, 1, Bp, C, ldc, mr, nr, alpha, accumulate);
}

TARGET void accel_gemm_bf16_x86(void *work, bool transA, bool transB, int M, int N, int K,
                                float alpha, const float *A, int lda, const float *B, int ldb,
                                float beta, float *C, int ldc)
{
    /* beta 0: the first k block stores its products without reading C (no zeroing pass). */
    if (beta != 1.0f && beta != 0.0f)
        for (int i = 0; i < M; i++) {
            float *ci = C + (size_t)i * ldc;
            for (int j = 0; j < N; j++) ci[j] *= beta;
        }
    const int npan = (N + NR - 1) / NR;
    const int kcmax = K < KC ? K : KC;
    uint32_t *bp = (uint32_t *)(((uintptr_t)work + 63) & ~(uintptr_t)63);
    uint32_t *ap = bp + (size_t)((kcmax + 1) / 2) * npan * NR;
    /* op(A)[i][k] = A[i*lda + k] (or A[k*lda + i]); op(B)[k][j] = B[k*ldb + j] (or B[j*ldb + k]). */
    const size_t a_si = transA ? 1 : (size_t)lda, a_sk = transA ? (size_t)lda : 1;
    const size_t b_sj = transB ? (size_t)ldb : 1, b_sk = transB ? 1 : (size_t)ldb;
    const bool lane_major = !transA;        /* A's k is contiguous: pack it without a transpose */
    for (int k0 = 0; k0 < K; k0 += KC) {
        const int kc = K - k0 < KC ? K - k0 : KC, kc2 = (kc + 1) / 2;
        pack_panels(bp, NR, false, B + (size_t)k0 * b_sk, b_sj, b_sk, N, kc);
        for (int i0 = 0; i0 < M; i0 += MC) {
            const int mc = M - i0 < MC ? M - i0 : MC;
            const int mpan = (mc + MR - 1) / MR;
            pack_panels(ap, MR, lane_major, A + (size_t)i0 * a_si + (size_t)k0 * a_sk, a_si, a_sk,
                        mc, kc);
            for (int p = 0; p < npan; p++) {
                int j0 = p * NR, nr = N - j0 < NR ? N - j0 : NR;
                for (int q = 0; q < mpan; q++) {
                    int r0 = i0 + q * MR, mr = M - r0 < MR ? M - r0 : MR;
                    (lane_major ? kernel_lane_major : kernel_kp_major)(
                        kc2, ap + (size_t)q * kc2 * MR, bp + (size_t)p * kc2 * NR,
                        C + (size_t)r0 * ldc + j0, ldc, mr, nr, alpha, k0 > 0 || beta != 0.0f);
                }
            }
        }
    }
}

/* Causal attention's products on a T x T lower triangle, without the masked half and without
 * packing an operand more than once: each operand is packed whole, then the micro-kernel runs
 * only the tiles that reach the triangle. (Row blocks of ordinary products repack the same keys
 * and values for every block: for T 128, head size 64, these run 11-20% faster.) */
static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

size_t accel_gemm_bf16_x86_tri_work(int T, int K)
{
    const size_t t2 = (size_t)(T + 1) / 2, k2 = (size_t)(K + 1) / 2;
    const size_t a = max_size((size_t)(T + MR - 1) / MR * MR * k2, (size_t)MR * t2);
    const size_t b = max_size((size_t)(T + NR - 1) / NR * NR * k2,
                              (size_t)(K + NR - 1) / NR * NR * t2);
    return sizeof(uint32_t) * (a + b) + 128;
}

TARGET void accel_gemm_bf16_x86_lower_nt(void *work, int T, int K, float alpha, const float *A,
                                         int lda, const float *B, int ldb, float *C, int ldc)
{
    const int kc2 = (K + 1) / 2;
    uint32_t *bp = (uint32_t *)(((uintptr_t)work + 63) & ~(uintptr_t)63);
    uint32_t *ap = bp + (size_t)(T + NR - 1) / NR * NR * kc2;
    pack_panels(bp, NR, false, B, (size_t)ldb, 1, T, K);
    pack_panels(ap, MR, true, A, (size_t)lda, 1, T, K);
    for (int r0 = 0; r0 < T; r0 += MR) {
        const int mr = T - r0 < MR ? T - r0 : MR;
        for (int j0 = 0; j0 < r0 + mr; j0 += NR)    /* column panels that reach row r0 + mr - 1 */
            kernel_lane_major(kc2, ap + (size_t)r0 * kc2, bp + (size_t)j0 * kc2,
                              C + (size_t)r0 * ldc + j0, ldc, mr, T - j0 < NR ? T - j0 : NR, alpha,
                              false);
    }
}

TARGET void accel_gemm_bf16_x86_trmm(void *work, bool transL, int T, int N, float alpha,
                                     const float *L, int ldl, const float *B, int ldb, float *C,
                                     int ldc)
{
    const int t2 = (T + 1) / 2;
    uint32_t *bp = (uint32_t *)(((uintptr_t)work + 63) & ~(uintptr_t)63);
    uint32_t *ap = bp + (size_t)(N + NR - 1) / NR * NR * t2;
    pack_panels(bp, NR, false, B, 1, (size_t)ldb, N, T);
    for (int r0 = 0; r0 < T; r0 += MR) {            /* r0 is even: a whole word of k pairs */
        const int mr = T - r0 < MR ? T - r0 : MR;
        /* Row r of L sums over k <= r; row r of L^T over k >= r (L[k][r] is zero for k < r). */
        const int k0 = transL ? r0 : 0, kc = transL ? T - r0 : r0 + mr, kc2 = (kc + 1) / 2;
        if (transL) pack_panels(ap, MR, false, L + (size_t)r0 * ldl + r0, 1, (size_t)ldl, mr, kc);
        else pack_panels(ap, MR, true, L + (size_t)r0 * ldl, (size_t)ldl, 1, mr, kc);
        for (int j0 = 0; j0 < N; j0 += NR) {
            const uint32_t *b = bp + (size_t)j0 * t2 + (size_t)(k0 / 2) * NR;
            float *c = C + (size_t)r0 * ldc + j0;
            const int nr = N - j0 < NR ? N - j0 : NR;
            if (transL) kernel_kp_major(kc2, ap, b, c, ldc, mr, nr, alpha, false);
            else kernel_lane_major(kc2, ap, b, c, ldc, mr, nr, alpha, false);
        }
    }
}

#else

bool accel_gemm_bf16_x86_available(void) { return false; }
size_t accel_gemm_bf16_x86_work(int M, int N, int K) { (void)M; (void)N; (void)K; return 0; }
size_t accel_gemm_bf16_x86_tri_work(int T, int K) { (void)T; (void)K; return 0; }
void accel_gemm_bf16_x86_lower_nt(void *work, int T, int K, float alpha, const float *A, int lda,
                                  const float *B, int ldb, float *C, int ldc)
{
    (void)work; (void)T; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb; (void)C;
    (void)ldc;
}
void accel_gemm_bf16_x86_trmm(void *work, bool transL, int T, int N, float alpha, const float *L,
                              int ldl, const float *B, int ldb, float *C, int ldc)
{
    (void)work; (void)transL; (void)T; (void)N; (void)alpha; (void)L; (void)ldl; (void)B;
    (void)ldb; (void)C; (void)ldc;
}
void accel_gemm_bf16_x86(void *work, bool transA, bool transB, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C,
                         int ldc)
{
    (void)work; (void)transA; (void)transB; (void)M; (void)N; (void)K; (void)alpha; (void)A;
    (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
}

#endif
