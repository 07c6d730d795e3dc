/* bf16 matrix product for x86 CPUs with AVX512-BF16 (Cooper Lake, Sapphire Rapids, Zen 4):
 * C = alpha * op(A) op(B) + beta * C with operands rounded to bf16 and products accumulated in
 * fp32 by VDPBF16PS, which does twice the multiply-adds of an fp32 FMA per instruction. It stands
 * in for OpenBLAS's sbgemm, which Debian's OpenBLAS is built without.
 *
 * Classic GotoBLAS structure: K is cut into blocks of KC; for each, op(B) is packed (converted to
 * bf16, k-pairs interleaved as VDPBF16PS wants them) into panels of NR = 32 columns, op(A) into
 * panels of MR = 12 rows, MC rows at a time, and a 12 x 32 register-blocked micro-kernel (24
 * accumulators) runs over the panels. Packing converts, so no separate conversion pass is made. */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gemm_cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)

#include <immintrin.h>

#define MR 12
#define NR 32
#define KC 384                      /* k values per block (even) */
#define MC 96                       /* rows of A per block (multiple of MR) */
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

/* A row of kc contiguous floats -> kc2 words bf16(x[2kp]) | bf16(x[2kp+1]) << 16, stored at
 * dst[kp * stride] (kc odd: the last word's high half is 0). */
TARGET static void convert_row(uint32_t *dst, size_t stride, const float *r, int kc)
{
    const int kc2 = (kc + 1) / 2;
    int kp = 0;
    for (; 2 * kp + 32 <= kc; kp += 16) {
        __m512i w = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(r + 2 * kp + 16),
                                                 _mm512_loadu_ps(r + 2 * kp));
        if (stride == 1) {
            _mm512_storeu_si512(dst + kp, w);
        } else {
            uint32_t words[16];
            _mm512_storeu_si512(words, w);
            for (int q = 0; q < 16; q++) dst[(size_t)(kp + q) * stride] = words[q];
        }
    }
    for (; kp < kc2; kp++) {
        float a = r[2 * kp], b = 2 * kp + 1 < kc ? r[2 * kp + 1] : 0.0f;
        __m128bh h = _mm_cvtneps_pbh(_mm_set_ps(0.0f, 0.0f, b, a));
        uint32_t word;
        memcpy(&word, &h, 4);
        dst[(size_t)kp * stride] = word;
    }
}

/* Pack W lanes x kc values of op(X), x(l, k) = src[l * sl + k * sk], lanes >= nl as zeros, into
 * words w(l, kp) = bf16(x(l, 2kp)) | bf16(x(l, 2kp+1)) << 16 stored at dst[l * dl + kp * dk].
 * Exactly one of sl, sk is 1. kp-major panels (dl = 1, dk = W) are what the micro-kernel loads
 * B from; A may also be lane-major (dl = kc2, dk = 1), which a k-contiguous A packs into without
 * any transpose. */
TARGET static void pack_panel(uint32_t *dst, int W, size_t dl, size_t dk, const float *src,
                              size_t sl, size_t sk, int nl, int kc)
{
    const int kc2 = (kc + 1) / 2;
    if (sl != 1) {                  /* k contiguous: convert each lane's row */
        for (int l = 0; l < W; l++) {
            if (l < nl) convert_row(dst + (size_t)l * dl, dk, src + (size_t)l * sl, kc);
            else for (int kp = 0; kp < kc2; kp++) dst[(size_t)l * dl + (size_t)kp * dk] = 0;
        }
        return;
    }
    /* Lanes contiguous (then always kp-major): two rows of k give one row of words. */
    for (int kp = 0; kp < kc2; kp++) {
        const float *r0 = src + (size_t)(2 * kp) * sk;
        const float *r1 = 2 * kp + 1 < kc ? r0 + sk : NULL;
        for (int l = 0; l < W; l += 16) {
            int n = nl - l < 16 ? (nl - l > 0 ? nl - l : 0) : 16;
            __mmask16 m = (__mmask16)((1u << n) - 1);
            __m512 x0 = _mm512_maskz_loadu_ps(m, r0 + l);
            __m512 x1 = r1 ? _mm512_maskz_loadu_ps(m, r1 + l) : _mm512_setzero_ps();
            __m512i w0 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x0));
            __m512i w1 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x1));
            __m512i w = _mm512_or_si512(w0, _mm512_slli_epi32(w1, 16));
            __mmask16 sm = (__mmask16)((1u << (W - l < 16 ? W - l : 16)) - 1);
            _mm512_mask_storeu_epi32(dst + (size_t)kp * dk + l, sm, w);
        }
    }
}

/* C[mr x nr] += alpha * A(MR x kc2 pairs) Bp(kc2 pairs x NR); word (i, kp) of A at
 * Ap[i * ai + kp * ak]. Inlined into two kernels with constant layouts. */
TARGET static inline __attribute__((always_inline)) void
micro_body(int kc2, const uint32_t *Ap, size_t ai, size_t ak, const uint32_t *Bp, float *C, int ldc,
           int mr, int nr, float alpha)
{
    __m512 c[MR][2];
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
    for (int i = 0; i < mr; i++) {
        float *ci = C + (size_t)i * ldc;
        __m512 x0 = _mm512_maskz_loadu_ps(m0, ci), x1 = _mm512_maskz_loadu_ps(m1, ci + 16);
        _mm512_mask_storeu_ps(ci, m0, _mm512_fmadd_ps(va, c[i][0], x0));
        _mm512_mask_storeu_ps(ci + 16, m1, _mm512_fmadd_ps(va, c[i][1], x1));
    }
}

TARGET static void kernel_kp_major(int kc2, const uint32_t *Ap, const uint32_t *Bp, float *C,
                                   int ldc, int mr, int nr, float alpha)
{
    micro_body(kc2, Ap, 1, MR, Bp, C, ldc, mr, nr, alpha);
}

TARGET static void kernel_lane_major(int kc2, const uint32_t *Ap, const uint32_t *Bp, float *C,
                                     int ldc, int mr, int nr, float alpha)
{
    micro_body(kc2, Ap, (size_t)kc2, 1, Bp, C, ldc, mr, nr, alpha);
}

TARGET void accel_gemm_bf16_x86(void *work, bool transA, bool transB, int M, int N, int K,
                                float alpha, const float *A, int lda, const float *B, int ldb,
                                float beta, float *C, int ldc)
{
    if (beta != 1.0f)
        for (int i = 0; i < M; i++) {
            float *ci = C + (size_t)i * ldc;
            if (beta == 0.0f) memset(ci, 0, sizeof(float) * (size_t)N);
            else for (int j = 0; j < N; j++) ci[j] *= beta;
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
        for (int p = 0; p < npan; p++) {
            int j0 = p * NR;
            pack_panel(bp + (size_t)p * kc2 * NR, NR, 1, NR, B + (size_t)j0 * b_sj + (size_t)k0 * b_sk,
                       b_sj, b_sk, N - j0 < NR ? N - j0 : NR, kc);
        }
        for (int i0 = 0; i0 < M; i0 += MC) {
            const int mc = M - i0 < MC ? M - i0 : MC;
            const int mpan = (mc + MR - 1) / MR;
            for (int q = 0; q < mpan; q++) {
                int r0 = i0 + q * MR;
                pack_panel(ap + (size_t)q * kc2 * MR, MR, lane_major ? (size_t)kc2 : 1,
                           lane_major ? 1 : MR, A + (size_t)r0 * a_si + (size_t)k0 * a_sk, a_si,
                           a_sk, M - r0 < MR ? M - r0 : MR, kc);
            }
            for (int p = 0; p < npan; p++) {
                int j0 = p * NR, nr = N - j0 < NR ? N - j0 : NR;
                for (int q = 0; q < mpan; q++) {
                    int r0 = i0 + q * MR, mr = M - r0 < MR ? M - r0 : MR;
                    (lane_major ? kernel_lane_major : kernel_kp_major)(
                        kc2, ap + (size_t)q * kc2 * MR, bp + (size_t)p * kc2 * NR,
                        C + (size_t)r0 * ldc + j0, ldc, mr, nr, alpha);
                }
            }
        }
    }
}

#else

bool accel_gemm_bf16_x86_available(void) { return false; }
size_t accel_gemm_bf16_x86_work(int M, int N, int K) { (void)M; (void)N; (void)K; return 0; }
void accel_gemm_bf16_x86(void *work, bool transA, bool transB, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C,
                         int ldc)
{
    (void)work; (void)transA; (void)transB; (void)M; (void)N; (void)K; (void)alpha; (void)A;
    (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
}

#endif
