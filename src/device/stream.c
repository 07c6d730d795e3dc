/* The rank's compute stream: one CUDA stream (non-blocking) shared by everything that queues device
 * work — the model's kernels and products, the trainer's device operations — so that all of it is
 * ordered, and a collective on device memory can be ordered after it with one event (comm_nccl). */
#include "config.h"

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
#else
accel_status_t accel_device_cuda_stream(void **stream)
{
    *stream = NULL;
    return ACCEL_ERR_UNSUPPORTED;
}
#endif
