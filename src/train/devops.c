/* Device operations for host memory and for CUDA device memory (see devops.h). The CUDA table
 * queues everything on the rank's compute stream; kernels come from src/nn/gpt_cuda_kernels.cu.
 *
 * The host's update loops are built for AVX-512, AVX2 and the baseline (target_clones, picked at
 * load time) without contracting a*b+c into FMAs, so every CPU computes the same bits; the sum of
 * squares keeps 16 partial sums combined in a fixed order for the same reason. */
#include "build_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "devops.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define OPTIM_CLONES \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define OPTIM_CLONES
#endif

/* ------------------------------------------------------------------ host memory */

OPTIM_CLONES
static void adamw_update(float *restrict p, const float *restrict g, float mul, float *restrict m,
                         float *restrict v, const unsigned char *restrict decay, size_t n, float b1,
                         float b2, float eps, float step_size, float inv_sqrt_bc2, float lr_wd)
{
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i] * mul;
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        float denom = sqrtf(v[i]) * inv_sqrt_bc2 + eps;
        p[i] -= step_size * m[i] / denom + (float)decay[i] * lr_wd * p[i];
    }
}

OPTIM_CLONES
static void sgd_update(float *restrict p, const float *restrict g, float mul, float *restrict buf,
                       const unsigned char *restrict decay, size_t n, float mu, float lr, float wd)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * mul + (float)decay[i] * wd * p[i];
        buf[i] = mu * buf[i] + gi;
        p[i] -= lr * buf[i];
    }
}

OPTIM_CLONES
double accel_sum_squares(const float *x, size_t n)
{
    enum { PARTS = 16 };
    double acc[PARTS] = { 0 };
    size_t i = 0;
    for (; i + PARTS <= n; i += PARTS)
        for (int k = 0; k < PARTS; k++) acc[k] += (double)x[i + k] * x[i + k];
    for (int k = 0; i + k < n; k++) acc[k] += (double)x[i + k] * x[i + k];
    for (int w = PARTS / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) acc[k] += acc[k + w];
    return acc[0];
}

static accel_status_t host_alloc(size_t bytes, void **ptr)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    *ptr = aligned_alloc(64, rounded ? rounded : 64);
    if (!*ptr) {
        ACCEL_ERROR("cannot allocate %.1f MiB of host memory", bytes / 1048576.0);
        return ACCEL_ERR_NOMEM;
    }
    memset(*ptr, 0, rounded ? rounded : 64);
    return ACCEL_OK;
}

static void host_free(void *ptr) { free(ptr); }

static accel_status_t host_arena_alloc(const accel_layout_t *layout, bool release_able, float **buf)
{
    return release_able ? accel_arena_alloc_virtual(layout, buf) : accel_arena_alloc(layout, buf);
}

static void host_arena_free(const accel_layout_t *layout, bool release_able, float *buf)
{
    if (release_able) accel_arena_free_virtual(layout, buf);
    else accel_arena_free(buf);
}

static accel_status_t host_release(float *buf, size_t begin, size_t end)
{
    accel_arena_release(buf, begin, end);
    return ACCEL_OK;
}

static accel_status_t host_zero(void *ptr, size_t bytes)
{
    memset(ptr, 0, bytes);
    return ACCEL_OK;
}

static accel_status_t host_copy(void *dst, const void *src, size_t bytes)
{
    if (dst != src) memcpy(dst, src, bytes);
    return ACCEL_OK;
}

static accel_status_t host_add(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] += x[i];
    return ACCEL_OK;
}

static accel_status_t host_sumsq(const float *x, size_t n, double *out)
{
    *out = accel_sum_squares(x, n);
    return ACCEL_OK;
}

static accel_status_t host_adamw(float *p, const float *g, float *m, float *v,
                                 const unsigned char *decay, size_t n, const accel_update_t *u)
{
    adamw_update(p, g, u->grad_mul, m, v, decay, n, u->beta1, u->beta2, u->eps, u->step_size,
                 u->inv_sqrt_bc2, u->lr_wd);
    return ACCEL_OK;
}

static accel_status_t host_sgd(float *p, const float *g, float *buf, const unsigned char *decay,
                               size_t n, const accel_update_t *u)
{
    sgd_update(p, g, u->grad_mul, buf, decay, n, u->momentum, u->lr, u->weight_decay);
    return ACCEL_OK;
}

static const accel_devops_t g_host = {
    .name = "cpu", .host = true, .comm = ACCEL_COMM_MPI,
    .alloc = host_alloc, .free = host_free, .arena_alloc = host_arena_alloc,
    .arena_free = host_arena_free, .release = host_release, .zero = host_zero,
    .upload = host_copy, .download = host_copy, .add = host_add, .sumsq = host_sumsq,
    .adamw = host_adamw, .sgd = host_sgd,
};

/* ------------------------------------------------------------------ CUDA device memory */

#if ACCEL_HAVE_CUDA
#include <cuda_runtime.h>

#include "../nn/gpt_cuda_kernels.h"

static cudaStream_t stream(void)
{
    void *s = NULL;
    accel_device_cuda_stream(&s);   /* created by the first caller; a failure was reported there */
    return (cudaStream_t)s;
}

#define CUDA_OK(call, what)                                                                     \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            ACCEL_ERROR("%s failed: %s (%s)", what, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
            return ACCEL_ERR_CUDA;                                                              \
        }                                                                                       \
    } while (0)

static accel_status_t cuda_zero(void *ptr, size_t bytes)
{
    CUDA_OK(cudaMemsetAsync(ptr, 0, bytes, stream()), "cudaMemsetAsync");
    return ACCEL_OK;
}

static accel_status_t cuda_alloc(size_t bytes, void **ptr)
{
    ACCEL_CHECK(accel_device_cuda_alloc(bytes, "the trainer's state", ptr));
    return cuda_zero(*ptr, bytes ? bytes : 1);
}

static void cuda_free(void *ptr)
{
    if (ptr) cudaFree(ptr);
}

static accel_status_t cuda_arena_alloc(const accel_layout_t *layout, bool release_able, float **buf)
{
    (void)release_able;             /* device arenas are allocated whole; release only zeroes */
    return cuda_alloc(sizeof(float) * (layout->numel ? layout->numel : 1), (void **)buf);
}

static void cuda_arena_free(const accel_layout_t *layout, bool release_able, float *buf)
{
    (void)layout;
    (void)release_able;
    cuda_free(buf);
}

static accel_status_t cuda_release(float *buf, size_t begin, size_t end)
{
    return end > begin ? cuda_zero(buf + begin, (end - begin) * sizeof(float)) : ACCEL_OK;
}

static accel_status_t cuda_upload(void *dst, const void *src, size_t bytes)
{
    CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync (to the device)");
    /* the host buffer may be reused as soon as we return */
    CUDA_OK(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    return ACCEL_OK;
}

static accel_status_t cuda_download(void *dst, const void *src, size_t bytes)
{
    CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync (to the host)");
    CUDA_OK(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    return ACCEL_OK;
}

#define KERNEL_OK(call, name)                                                                   \
    do {                                                                                        \
        int e_ = (call);                                                                        \
        if (e_ != 0) {                                                                          \
            ACCEL_ERROR("kernel %s failed to launch: %s", name, cudaGetErrorString((cudaError_t)e_)); \
            return ACCEL_ERR_CUDA;                                                              \
        }                                                                                       \
    } while (0)

static accel_status_t cuda_add(float *y, const float *x, size_t n)
{
    KERNEL_OK(accel_gk_add(y, x, n, stream()), "add");
    return ACCEL_OK;
}

static accel_status_t cuda_sumsq(const float *x, size_t n, double *out)
{
    static double *d_sum, *h_sum;   /* one scratch pair per process, kept for its life */
    if (!d_sum) {
        CUDA_OK(cudaMalloc((void **)&d_sum, sizeof(double)), "cudaMalloc (norm scratch)");
        CUDA_OK(cudaMallocHost((void **)&h_sum, sizeof(double)), "cudaMallocHost (norm scratch)");
    }
    CUDA_OK(cudaMemsetAsync(d_sum, 0, sizeof(double), stream()), "cudaMemsetAsync");
    if (n) KERNEL_OK(accel_gk_sumsq(x, n, d_sum, stream()), "sumsq");
    CUDA_OK(cudaMemcpyAsync(h_sum, d_sum, sizeof(double), cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync");
    CUDA_OK(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    *out = *h_sum;
    return ACCEL_OK;
}

static accel_status_t cuda_adamw(float *p, const float *g, float *m, float *v,
                                 const unsigned char *decay, size_t n, const accel_update_t *u)
{
    if (n)
        KERNEL_OK(accel_gk_adamw(ACCEL_F32, p, NULL, g, m, v, decay, n, u->grad_mul, u->beta1, u->beta2,
                                 u->eps, u->step_size, u->inv_sqrt_bc2, u->lr_wd, stream()), "adamw");
    return ACCEL_OK;
}

static accel_status_t cuda_sgd(float *p, const float *g, float *buf, const unsigned char *decay,
                               size_t n, const accel_update_t *u)
{
    if (n)
        KERNEL_OK(accel_gk_sgd(ACCEL_F32, p, NULL, g, buf, decay, n, u->grad_mul, u->lr,
                               u->weight_decay, u->momentum, stream()), "sgd");
    return ACCEL_OK;
}

static const accel_devops_t g_cuda = {
    .name = "cuda", .host = false, .comm = ACCEL_COMM_NCCL,
    .alloc = cuda_alloc, .free = cuda_free, .arena_alloc = cuda_arena_alloc,
    .arena_free = cuda_arena_free, .release = cuda_release, .zero = cuda_zero,
    .upload = cuda_upload, .download = cuda_download, .add = cuda_add, .sumsq = cuda_sumsq,
    .adamw = cuda_adamw, .sgd = cuda_sgd,
};
#endif

accel_status_t accel_devops_for(accel_device_kind_t kind, const accel_devops_t **ops)
{
    *ops = &g_host;
    if (kind == ACCEL_DEVICE_CPU) return ACCEL_OK;
#if ACCEL_HAVE_CUDA
    *ops = &g_cuda;
    void *s;
    return accel_device_cuda_stream(&s);
#else
    ACCEL_ERROR("accel was built without CUDA\n--> hint: use device=cpu, or rebuild with a CUDA toolkit");
    return ACCEL_ERR_UNSUPPORTED;
#endif
}
