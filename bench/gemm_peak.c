/* Single-core fp32 peak of this machine, the denominator of the benchmark's efficiency ratio.
 *   bench/gemm_peak            prints the GEMM peak (GFLOP/s)
 *   bench/gemm_peak -v         also prints the FMA ceiling and the size that reached the peak
 * GEMM peak: the best one-thread sgemm of the libraries accel multiplies with (OpenBLAS, and
 * oneDNN when accel was built with it), over square sizes and the benchmark GPT's product shapes
 * (no single size is best on every CPU: on this project's Zen 4 machine 1024^3 runs ~25% below
 * 256^3). FMA ceiling: independent 512-bit (or 256-bit) FMAs back to back, what no product can
 * exceed. */
#include "build_config.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/runtime.h"
#include "accel/timer.h"
#if ACCEL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FMA_CHAINS 12                   /* independent accumulators: covers FMA latency x ports */
typedef float f32x16 __attribute__((vector_size(64)));

/* a = a * x + y on FMA_CHAINS vectors of 16 floats, contracted to FMAs: one 512-bit or two 256-bit
 * instructions per vector, whichever the CPU has (the baseline build has no FMA: ceiling 0). */
__attribute__((target_clones("avx512f", "avx2,fma", "default")))
static double fma_ceiling_once(long iters)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("fma")) return 0;
    f32x16 acc[FMA_CHAINS], x, y;
    for (int k = 0; k < 16; k++) x[k] = 1.0000001f, y[k] = 1e-7f;
    for (int i = 0; i < FMA_CHAINS; i++)
        for (int k = 0; k < 16; k++) acc[i][k] = (float)i;
    double t0 = accel_now();
    for (long n = 0; n < iters; n++)
#pragma GCC unroll 12
        for (int i = 0; i < FMA_CHAINS; i++) acc[i] = acc[i] * x + y;
    double s = accel_now() - t0;
    float keep = 0;                     /* use the results so the loop is not optimised away */
    for (int i = 0; i < FMA_CHAINS; i++) keep += acc[i][0];
    if (keep == 42.0f) puts("");
    return 2.0 * 16 * FMA_CHAINS * (double)iters / s / 1e9;
}

static double fma_ceiling(void)
{
    double best = 0;
    for (int r = 0; r < 5; r++) {
        double g = fma_ceiling_once(20000000);
        if (g > best) best = g;
    }
    return best;
}
#else
static double fma_ceiling(void) { return 0; }
#endif

/* Row-major C[M,N] = A[M,K] B[K,N] through one library. */
typedef void (*sgemm_nn_fn)(int M, int N, int K, const float *a, const float *b, float *c);

static void openblas_nn(int M, int N, int K, const float *a, const float *b, float *c)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
}

#if ACCEL_HAVE_ONEDNN
static void onednn_nn(int M, int N, int K, const float *a, const float *b, float *c)
{
    dnnl_sgemm('N', 'N', M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
}
#endif

static const struct {
    const char *name;
    sgemm_nn_fn fn;
} libraries[] = {
    { "OpenBLAS", openblas_nn },
#if ACCEL_HAVE_ONEDNN
    { "oneDNN", onednn_nn },
#endif
};

int main(int argc, char **argv)
{
    const int verbose = argc > 1 && !strcmp(argv[1], "-v");
    if (argc > 1 && !verbose) {
        printf("usage: gemm_peak [-v]\n  prints the best single-thread sgemm GFLOP/s over square "
               "sizes and the benchmark GPT's shapes; -v adds the FMA ceiling\n");
        return strcmp(argv[1], "-h") && strcmp(argv[1], "--help") ? 2 : 0;
    }
    accel_blas_fixup(argc, argv);            /* the same OpenBLAS core selection as accel_train */
    accel_blas_set_threads(1);
    /* M x N x K: squares, then the GPT's products (1024 tokens; width 256, 3x and 4x wider). */
    static const int shapes[][3] = { { 256, 256, 256 }, { 512, 512, 512 }, { 768, 768, 768 },
                                     { 1024, 1024, 1024 }, { 1024, 768, 256 }, { 1024, 1024, 256 },
                                     { 1024, 256, 1024 } };
    const size_t most = 1024 * 1024;
    float *a = malloc(sizeof(float) * most), *b = malloc(sizeof(float) * most),
          *c = malloc(sizeof(float) * most);
    if (!a || !b || !c) return 1;
    for (size_t i = 0; i < most; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; c[i] = 0; }
    double best = 0;
    int at = 0, by = 0;
    for (int l = 0; l < (int)(sizeof libraries / sizeof libraries[0]); l++) {
        double lib_best = 0;
        for (int s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++) {
            const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            const double flop = 2.0 * M * N * K;
            for (int r = 0; r < 8 || r * flop < 4e9; r++) {    /* at least ~4 GFLOP per shape */
                double t0 = accel_now();
                libraries[l].fn(M, N, K, a, b, c);
                double gflops = flop / (accel_now() - t0) / 1e9;
                if (gflops > lib_best) lib_best = gflops;
                if (gflops > best) best = gflops, at = s, by = l;
            }
        }
        if (verbose) printf("%s: %.1f GFLOP/s sgemm\n", libraries[l].name, lib_best);
    }
    if (verbose)
        printf("%.1f GFLOP/s sgemm (best: %s at %d x %d x %d), FMA ceiling %.1f GFLOP/s\n", best,
               libraries[by].name, shapes[at][0], shapes[at][1], shapes[at][2], fma_ceiling());
    else
        printf("%.1f\n", best);
    free(a); free(b); free(c);
    return 0;
}
