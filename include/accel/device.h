/* Where a rank computes: the CPU, or one CUDA device chosen by node-local rank among the devices
 * visible to the process (CUDA_VISIBLE_DEVICES is respected and never changed). */
#ifndef ACCEL_DEVICE_H
#define ACCEL_DEVICE_H

#include <stddef.h>

#include "accel/status.h"

typedef enum { ACCEL_DEVICE_CPU = 0, ACCEL_DEVICE_CUDA } accel_device_kind_t;

typedef struct {
    accel_device_kind_t kind;
    int index;                      /* CUDA ordinal among visible devices, -1 for the CPU */
    char name[128];                 /* "cpu" or the GPU's name */
    size_t memory;                  /* bytes of device memory, 0 for the CPU */
} accel_device_t;

/* Number of usable CUDA devices (0 when built without CUDA or when no driver/GPU is present).
 * When 0, *why (if not NULL) points to a static explanation. */
int accel_device_cuda_count(const char **why);

/* Choose the device for a rank. request: "auto", "cpu" or "cuda". With "cuda" and no usable GPU,
 * ACCEL_ERR_UNSUPPORTED; with "auto" and no GPU, the CPU. */
accel_status_t accel_device_select(const char *request, int local_rank, accel_device_t *out);

/* Versions for `accel env`: 0 when unknown / not built. */
int accel_device_cuda_runtime_version(void);
int accel_device_cuda_driver_version(void);

/* The rank's CUDA compute stream (cudaStream_t), created on first use: every piece of device work
 * of a rank (model kernels, the trainer's device operations) is queued on it, and NCCL collectives
 * are ordered after it. ACCEL_ERR_UNSUPPORTED without CUDA. */
accel_status_t accel_device_cuda_stream(void **stream);

/* cudaMalloc of `bytes` for `what`; when the device is full, ACCEL_ERR_NOMEM after a message
 * naming `what`, the size and the free memory, with what to do about it. */
accel_status_t accel_device_cuda_alloc(size_t bytes, const char *what, void **ptr);

/* Device memory (cudaMalloc) or 64-byte aligned host memory for the CPU. */
accel_status_t accel_device_alloc(const accel_device_t *dev, size_t bytes, void **ptr);
void accel_device_free(const accel_device_t *dev, void *ptr);

#endif
