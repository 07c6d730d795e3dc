/* gemm_bf16: the bf16 products of one training step of the benchmark GPT (bench/train_speed.sh's
 * shape), timed on every bf16 path this machine can run (gemm_cpu.h: oneDNN's matmul primitive,
 * accel's AVX512-BF16 kernel, the BLAS's sbgemm, the emulation), with the implementation oneDNN
 * picks for each shape, and oneDNN alone on operands already in bf16 (what converting them costs
 * the onednn path). The figures behind the automatic choice of ACCEL_BF16_GEMM.
 *   bench/gemm_bf16 [rows=1024] [width=256] [context=128] [heads=4] [reps=20]
 * rows: tokens per micro-batch (micro-batch x context). Times are the best of reps calls, one
 * thread; GFLOP/s count 2MNK (a triangle counts as its full square, so times compare). */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/runtime.h"
#include "accel/timer.h"
#include "../src/nn/gemm_cpu.h"
#include "../src/nn/kernels_cpu.h"

typedef enum { FULL, LOWER_NT, TRMM, TRMM_T } kind_t;

typedef struct {
    const char *what;
    kind_t kind;
    bool ta, tb;
    int M, N, K;
} product_t;

static float *filled(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    if (!p) { fprintf(stderr, "gemm_bf16: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    return p;
}

static double run_once(accel_gemm_cpu_t *g, const product_t *p, const float *A, const float *B,
                       float *C)
{
    double t0 = accel_now();
    accel_status_t st = ACCEL_OK;
    switch (p->kind) {
    case FULL:
        st = accel_gemm_cpu(g, p->ta, p->tb, p->M, p->N, p->K, 1.0f, A, p->ta ? p->M : p->K, B,
                            p->tb ? p->K : p->N, 0.0f, C, p->N);
        break;
    case LOWER_NT:
        st = accel_gemm_cpu_lower_nt(g, p->M, p->K, 1.0f, A, p->K, B, p->K, C, p->M);
        break;
    case TRMM: case TRMM_T:
        st = accel_gemm_cpu_trmm(g, p->kind == TRMM_T, p->M, p->N, 1.0f, A, p->M, B, p->N, C, p->N);
        break;
    }
    if (st != ACCEL_OK) { fprintf(stderr, "gemm_bf16: %s failed\n", p->what); exit(1); }
    return accel_now() - t0;
}

/* A full product on oneDNN alone, its operands already bf16 (what the onednn path costs without
 * converting them: the share a producer writing bf16 would save). Returns the best time of reps
 * calls, and oneDNN's name for the implementation in *impl; 0 where oneDNN cannot run. */
static double onednn_alone(const product_t *p, const float *A, const float *B, float *C, int reps,
                           const char **impl)
{
    *impl = "-";
    if (p->kind != FULL || !accel_gemm_onednn_available()) return 0;
    accel_gemm_onednn_cache_t *cache = NULL;
    size_t na = (size_t)p->M * p->K, nb = (size_t)p->K * p->N;
    uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
    double best = 0;
    if (a && b) {
        for (size_t i = 0; i < na; i++) a[i] = accel_f32_to_bf16(A[i]);
        for (size_t i = 0; i < nb; i++) b[i] = accel_f32_to_bf16(B[i]);
        best = 1e30;
        for (int r = 0; r < reps + 2; r++) {
            double t0 = accel_now();
            if (accel_gemm_onednn_bf16(&cache, p->ta, p->tb, p->M, p->N, p->K, 1.0f, a, b, 0.0f, C,
                                       p->N, impl) != ACCEL_OK) { best = 0; break; }
            double t = accel_now() - t0;
            if (r >= 2 && t < best) best = t;
        }
    }
    accel_gemm_onednn_free(cache);
    free(a), free(b);
    return best;
}

int main(int argc, char **argv)
{
    int rows = 1024, C = 256, T = 128, heads = 4, reps = 20;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "rows=", 5)) rows = atoi(argv[i] + 5);
        else if (!strncmp(argv[i], "width=", 6)) C = atoi(argv[i] + 6);
        else if (!strncmp(argv[i], "context=", 8)) T = atoi(argv[i] + 8);
        else if (!strncmp(argv[i], "heads=", 6)) heads = atoi(argv[i] + 6);
        else if (!strncmp(argv[i], "reps=", 5)) reps = atoi(argv[i] + 5);
        else {
            printf("usage: gemm_bf16 [rows=1024] [width=256] [context=128] [heads=4] [reps=20]\n");
            return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0;
        }
    }
    if (rows < 1 || C < 1 || T < 1 || heads < 1 || C % heads || reps < 1) {
        fprintf(stderr, "gemm_bf16: sizes must be positive and width a multiple of heads\n");
        return 2;
    }
    accel_blas_set_threads(1);
    const int F = 4 * C, hs = C / heads;
    /* The GPT's products (decoder.c): weights are stored [out, in], so forward products are NT,
     * the input gradients NN and the weight gradients TN; attention is per head on T x T. */
    const product_t products[] = {
        { "fwd qkv", FULL, false, true, rows, 3 * C, C },
        { "fwd proj/head", FULL, false, true, rows, C, C },
        { "fwd fc", FULL, false, true, rows, F, C },
        { "fwd fc-proj", FULL, false, true, rows, C, F },
        { "dx qkv", FULL, false, false, rows, C, 3 * C },
        { "dx fc", FULL, false, false, rows, C, F },
        { "dx fc-proj", FULL, false, false, rows, F, C },
        { "dw qkv", FULL, true, false, 3 * C, C, rows },
        { "dw proj/head", FULL, true, false, C, C, rows },
        { "dw fc", FULL, true, false, F, C, rows },
        { "dw fc-proj", FULL, true, false, C, F, rows },
        { "att QK^T (lower)", LOWER_NT, false, true, T, T, hs },
        { "att PV (trmm)", TRMM, false, false, T, hs, T },
        { "att P^T dY (trmm^T)", TRMM_T, true, false, T, hs, T },
    };
    const int np = (int)(sizeof products / sizeof products[0]);
    const char *const paths[] = { "onednn", "kernel", "sbgemm", "emulate" };
    bool avail[4] = { accel_gemm_onednn_available(), false, false, true };
    avail[ACCEL_BF16_KERNEL] = accel_gemm_bf16_x86_available();
    /* sbgemm: available when the automatic choice could take it; never on Debian 12's OpenBLAS */
    accel_bf16_path_t auto_path;
    accel_status_t st = accel_gemm_bf16_path(&auto_path);
    avail[ACCEL_BF16_SBGEMM] = auto_path == ACCEL_BF16_SBGEMM;
    printf("bf16 products of the GPT step (rows %d, width %d, context %d, %d heads); one thread\n",
           rows, C, T, heads);
    printf("automatic path here: %s%s; AMX: %s\n", accel_gemm_bf16_path_name(auto_path),
           st == ACCEL_OK ? "" : " (ACCEL_BF16_GEMM is set wrongly)", accel_gemm_cpu_amx() ? "yes" : "no");
    printf("%-22s %5s %5s %5s", "product", "M", "N", "K");
    for (int q = 0; q < 4; q++) if (avail[q]) printf(" %16s", paths[q]);
    printf(" %16s  oneDNN implementation\n", "oneDNN alone");
    double total[4] = { 0 };
    size_t scratch_max = 0;
    for (int i = 0; i < np; i++) {
        const product_t *p = &products[i];
        size_t na = (size_t)p->M * (p->kind == FULL || p->kind == LOWER_NT ? p->K : p->M);
        if (p->kind == TRMM || p->kind == TRMM_T) na = (size_t)p->M * p->M;
        size_t nb = (size_t)(p->kind == LOWER_NT ? p->N : p->K) * (p->kind == LOWER_NT ? p->K : p->N);
        if (p->kind == TRMM || p->kind == TRMM_T) nb = (size_t)p->M * p->N;
        float *A = filled(na, 1u + (unsigned)i), *B = filled(nb, 7u + (unsigned)i);
        float *Cm = filled((size_t)p->M * (p->kind == LOWER_NT ? p->M : p->N), 3u);
        if (p->kind == TRMM || p->kind == TRMM_T)      /* L lower triangular */
            for (int r = 0; r < p->M; r++)
                for (int c = r + 1; c < p->M; c++) A[(size_t)r * p->M + c] = 0.0f;
        printf("%-22s %5d %5d %5d", p->what, p->M, p->N, p->K);
        for (int q = 0; q < 4; q++) {
            if (!avail[q]) continue;
            accel_gemm_cpu_t g;
            accel_gemm_cpu_init(&g, ACCEL_BF16);
            g.bf16_path = (accel_bf16_path_t)q;
            double best = 1e30;
            for (int r = 0; r < reps + 2; r++) {        /* the first calls make and warm */
                double t = run_once(&g, p, A, B, Cm);
                if (r >= 2 && t < best) best = t;
            }
            if (q == ACCEL_BF16_ONEDNN && accel_gemm_onednn_scratch_bytes(g.onednn) > scratch_max)
                scratch_max = accel_gemm_onednn_scratch_bytes(g.onednn);
            accel_gemm_cpu_free(&g);
            const double flop = 2.0 * p->M * p->N * p->K;
            const double n = p->kind == FULL ? 1.0 : (double)(rows / T) * heads;  /* per step */
            total[q] += best * n;
            printf(" %7.1f us %4.0fG", 1e6 * best, flop / best / 1e9);
        }
        const char *impl;
        double alone = onednn_alone(p, A, B, Cm, reps, &impl);
        if (alone > 0) printf(" %7.1f us %4.0fG", 1e6 * alone, 2.0 * p->M * p->N * p->K / alone / 1e9);
        else printf(" %16s", "-");
        printf("  %s\n", impl);
        free(A), free(B), free(Cm);
    }
    printf("%-40s", "one layer's products (attention x heads x sequences)");
    for (int q = 0; q < 4; q++) if (avail[q]) printf(" %13.2f ms", 1e3 * total[q]);
    printf("\n");
    if (avail[ACCEL_BF16_ONEDNN])
        printf("largest oneDNN scratchpad of these products: %.2f MiB\n", scratch_max / 1048576.0);
    return 0;
}
