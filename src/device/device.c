/* Device discovery, the choice of each rank's device, and memory. Without CUDA (or without a driver)
 * every rank computes on the CPU. */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/device.h"
#include "accel/log.h"

#if ACCEL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

int accel_device_cuda_count(const char **why)
{
#if ACCEL_HAVE_CUDA
    int n = 0;   /* cudaGetDeviceCount leaves n untouched when it fails */
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        static char msg[160];
        snprintf(msg, sizeof msg, "CUDA reports %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
        if (why) *why = msg;
        cudaGetLastError();
        return 0;
    }
    if (n == 0 && why) *why = "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
    return n;
#else
    if (why) *why = "accel was built without CUDA";
    return 0;
#endif
}

int accel_device_cuda_runtime_version(void)
{
#if ACCEL_HAVE_CUDA
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
#else
    return 0;
#endif
}

int accel_device_cuda_driver_version(void)
{
#if ACCEL_HAVE_CUDA
    int v = 0;
    if (cudaDriverGetVersion(&v) != cudaSuccess) v = 0;
    return v;
#else
    return 0;
#endif
}

accel_status_t accel_device_select(const char *request, int local_rank, accel_device_t *out)
{
    memset(out, 0, sizeof *out);
    out->kind = ACCEL_DEVICE_CPU;
    out->index = -1;
    snprintf(out->name, sizeof out->name, "cpu");
    if (!strcmp(request, "cpu")) return ACCEL_OK;

    const char *why = NULL;
    int n = accel_device_cuda_count(&why);
    if (n == 0) {
        if (!strcmp(request, "cuda")) {
            ACCEL_ERROR("device=cuda but no usable GPU: %s\n--> hint: use device=cpu or device=auto", why);
            return ACCEL_ERR_UNSUPPORTED;
        }
        ACCEL_INFO("no usable GPU (%s): computing on the CPU", why);
        return ACCEL_OK;
    }
#if ACCEL_HAVE_CUDA
    /* Ranks on a node share its visible GPUs round-robin; CUDA_VISIBLE_DEVICES is left alone. */
    int idx = local_rank % n;
    if (cudaSetDevice(idx) != cudaSuccess) {
        ACCEL_ERROR("cudaSetDevice(%d) failed: %s", idx, cudaGetErrorString(cudaGetLastError()));
        return ACCEL_ERR_CUDA;
    }
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, idx);
    out->kind = ACCEL_DEVICE_CUDA;
    out->index = idx;
    snprintf(out->name, sizeof out->name, "%.127s", prop.name);
    out->memory = prop.totalGlobalMem;
#else
    (void)local_rank;
#endif
    return ACCEL_OK;
}

accel_status_t accel_device_setup(accel_runtime_t *rt, const accel_config_t *cfg)
{
    accel_status_t st = accel_device_select(cfg->device, rt->local_rank, &rt->device);
    /* Every rank must agree, or some would wait for collectives the others never start. */
    accel_status_t all = accel_agree(rt->world, st);
    if (st == ACCEL_OK && all != ACCEL_OK) ACCEL_ERROR("device selection failed on another rank");
    return all;
}

accel_status_t accel_device_alloc(const accel_device_t *dev, size_t bytes, void **ptr)
{
    *ptr = NULL;
    if (dev->kind == ACCEL_DEVICE_CUDA) {
#if ACCEL_HAVE_CUDA
        cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
        if (e != cudaSuccess) {
            ACCEL_ERROR("cudaMalloc(%zu bytes) failed: %s", bytes, cudaGetErrorString(e));
            return ACCEL_ERR_NOMEM;
        }
        return ACCEL_OK;
#else
        return ACCEL_ERR_UNSUPPORTED;
#endif
    }
    size_t rounded = (bytes + 63) / 64 * 64;
    *ptr = aligned_alloc(64, rounded ? rounded : 64);
    if (!*ptr) {
        ACCEL_ERROR("cannot allocate %zu bytes of host memory", bytes);
        return ACCEL_ERR_NOMEM;
    }
    return ACCEL_OK;
}

void accel_device_free(const accel_device_t *dev, void *ptr)
{
    if (!ptr) return;
#if ACCEL_HAVE_CUDA
    if (dev->kind == ACCEL_DEVICE_CUDA) { cudaFree(ptr); return; }
#else
    (void)dev;
#endif
    free(ptr);
}
