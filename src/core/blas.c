/* OpenBLAS run-time fixes a user should never need to know about. OpenBLAS 0.3.21 does not
 * recognise recent Xeons (AVX-512, AMX) and falls back to its Prescott kernels, about 5x slower.
 * It reads OPENBLAS_CORETYPE only once, when the library loads, so the fix re-executes the
 * program with the variable set, before MPI starts. Also the thread count of the product
 * libraries (OpenBLAS, and oneDNN where accel is built with it). */
#include "build_config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "accel/runtime.h"

#if ACCEL_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if ACCEL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#endif
#if ACCEL_ONEDNN_OPENMP
#include <omp.h>
#endif

const char *accel_blas_core(void)
{
#if ACCEL_HAVE_OPENBLAS
    const char *core = openblas_get_corename();
    return core ? core : "unknown";
#else
    return "unknown";
#endif
}

void accel_blas_set_threads(int threads)
{
    if (threads < 1) threads = 1;
#if ACCEL_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
#endif
#if ACCEL_ONEDNN_OPENMP
    omp_set_num_threads(threads);      /* oneDNN's products (gemm_cpu.c) thread through OpenMP */
#endif
    (void)threads;
}

const char *accel_blas_onednn_version(void)
{
#if ACCEL_HAVE_ONEDNN
    static char version[32];
    const dnnl_version_t *v = dnnl_version();
    snprintf(version, sizeof version, "%d.%d.%d", v->major, v->minor, v->patch);
    return version;
#else
    return NULL;
#endif
}

#if ACCEL_HAVE_OPENBLAS
/* Kernel family OpenBLAS should use on this CPU, or NULL when its own choice is fine. */
static const char *wanted_core(const char *current)
{
    static const char *const avx512_cores[] = { "skylakex", "cooperlake", "sapphirerapids" };
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
        for (size_t i = 0; i < sizeof avx512_cores / sizeof avx512_cores[0]; i++)
            if (!strcasecmp(current, avx512_cores[i])) return NULL;
        /* Cooperlake kernels add bf16 (sbgemm) on CPUs with AVX512-BF16. */
        return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        static const char *const avx2_cores[] = { "haswell", "zen", "skylakex", "cooperlake" };
        for (size_t i = 0; i < sizeof avx2_cores / sizeof avx2_cores[0]; i++)
            if (!strcasecmp(current, avx2_cores[i])) return NULL;
        return "Haswell";
    }
    return NULL;
}
#endif

void accel_blas_fixup(int argc, char **argv)
{
    (void)argc;
#if ACCEL_HAVE_OPENBLAS
    if (getenv("OPENBLAS_CORETYPE") || getenv("ACCEL_BLAS_NO_FIXUP")) return;
    const char *core = wanted_core(accel_blas_core());
    if (!core) return;
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc?): carry on with the slow kernels rather than fail. */
    unsetenv("OPENBLAS_CORETYPE");
#else
    (void)argv;
#endif
}
