/* Where a rank computes: the CPU, or one CUDA device chosen by node-local rank among the devices
 * visible to the process (CUDA_VISIBLE_DEVICES is respected and never changed). */
#ifndef ACCEL_DEVICE_H
#define ACCEL_DEVICE_H

#include <stddef.h>

#include "accel/config.h"
#include "accel/runtime.h"          /* accel_device_t: the runtime's record of the choice */
#include "accel/status.h"

/* Number of usable CUDA devices (0 when built without CUDA or when no driver/GPU is present).
 * When 0, *why (if not NULL) points to a static explanation. */
int accel_device_cuda_count(const char **why);

/* Choose the device for a rank. request: "auto", "cpu" or "cuda". With "cuda" and no usable GPU,
 * ACCEL_ERR_UNSUPPORTED; with "auto" and no GPU, the CPU. */
accel_status_t accel_device_select(const char *request, int local_rank, accel_device_t *out);

/* Choose this rank's device from the job configuration (cfg->device, by node-local rank) into
 * rt->device, after accel_runtime_configure. Collective over rt->world: every rank agrees on
 * success, or none would run collectives the others never start. */
accel_status_t accel_device_setup(accel_runtime_t *rt, const accel_config_t *cfg);

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
