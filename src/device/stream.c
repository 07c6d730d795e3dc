/* The rank's compute stream: one CUDA stream (non-blocking) shared by everything that queues device
 * work — the model's kernels and products, the trainer's device operations — so that all of it is
 * ordered, and a collective on device memory can be ordered after it with one event (comm_nccl).
 * And device memory for them, with a message that says how much is free when it runs out. */
#include "build_config.h"

#include "accel/device.h"
#include "accel/log.h"

#if ACCEL_HAVE_CUDA
#include <cuda_runtime.h>

static cudaStream_t g_stream;

accel_status_t accel_device_cuda_stream(void **stream)
{
    if (!g_stream) {
        cudaError_t e = cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking);
        if (e != cudaSuccess) {
            ACCEL_ERROR("cudaStreamCreateWithFlags (the compute stream) failed: %s", cudaGetErrorString(e));
            g_stream = NULL;
            *stream = NULL;
            return ACCEL_ERR_CUDA;
        }
    }
    *stream = g_stream;
    return ACCEL_OK;
}

accel_status_t accel_device_cuda_alloc(size_t bytes, const char *what, void **ptr)
{
    cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
    if (e == cudaSuccess) return ACCEL_OK;
    size_t free_b = 0, total_b = 0;
    cudaGetLastError();
    cudaMemGetInfo(&free_b, &total_b);
    ACCEL_ERROR("cannot allocate %.1f MiB of device memory for %s: %s (%.1f of %.1f MiB free)\n"
                "--> hint: lower the micro-batch (raise train.grad_accum), shard more state "
                "(dist.strategy=zero2 or zero3) or use a smaller model", bytes / 1048576.0, what,
                cudaGetErrorString(e), free_b / 1048576.0, total_b / 1048576.0);
    *ptr = NULL;
    return ACCEL_ERR_NOMEM;
}
#else
accel_status_t accel_device_cuda_stream(void **stream)
{
    *stream = NULL;
    return ACCEL_ERR_UNSUPPORTED;
}

accel_status_t accel_device_cuda_alloc(size_t bytes, const char *what, void **ptr)
{
    (void)bytes;
    (void)what;
    *ptr = NULL;
    return ACCEL_ERR_UNSUPPORTED;
}
#endif
