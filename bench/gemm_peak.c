/* Single-core sgemm peak of this machine (the denominator of the benchmark's efficiency ratio):
 * the best of several 1024^3 products through the same OpenBLAS accel uses, one thread. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "accel/runtime.h"
#include "accel/timer.h"

int main(int argc, char **argv)
{
    accel_blas_fixup(argc, argv);            /* the same OpenBLAS core selection as accel_train */
    accel_blas_set_threads(1);
    const int n = 1024, reps = 8;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n), *c = malloc(sizeof(float) * n * n);
    if (!a || !b || !c) return 1;
    for (int i = 0; i < n * n; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; c[i] = 0; }
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = accel_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double gflops = 2.0 * n * n * n / (accel_now() - t0) / 1e9;
        if (gflops > best) best = gflops;
    }
    printf("%.1f\n", best);
    free(a); free(b); free(c);
    return 0;
}
