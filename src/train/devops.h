/* The device operations the trainer needs on its buffers (parameters, gradients, optimizer state),
 * one table per kind of memory: host memory (the CPU) and CUDA device memory. The distributed
 * logic (src/train/dist.c, grad_sync.c) and the optimizer are written once against this table and
 * the comm layer (MPI for host memory, NCCL for device memory), so every strategy runs on every
 * device. Device work is queued on the rank's compute stream (accel_device_cuda_stream); the
 * operations that return a value to the host wait for it. */
#ifndef ACCEL_TRAIN_DEVOPS_H
#define ACCEL_TRAIN_DEVOPS_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/arena.h"
#include "accel/comm.h"
#include "accel/device.h"
#include "accel/status.h"

/* One optimizer update's constants, computed once on the host as the CPU optimizer computes them
 * (single precision), so that every device applies the same arithmetic. */
typedef struct {
    float grad_mul;                 /* gradients are multiplied by this first (unscale, clip) */
    float beta1, beta2, eps;        /* AdamW */
    float step_size;                /* lr / (1 - beta1^t) */
    float inv_sqrt_bc2;             /* 1 / sqrt(1 - beta2^t) */
    float lr_wd;                    /* lr * weight_decay (AdamW's decoupled decay) */
    float lr, weight_decay, momentum; /* SGD */
} accel_update_t;

typedef struct accel_devops {
    const char *name;               /* "cpu", "cuda" */
    bool host;                      /* buffers are host memory: the host reads them directly */
    accel_comm_backend_t comm;      /* the collectives that move this memory */
    /* Zero-filled buffers of `bytes` (64-byte aligned on the host). */
    accel_status_t (*alloc)(size_t bytes, void **ptr);
    void (*free)(void *ptr);
    /* A float arena of layout->numel elements, zero-filled. `release_able`: its memory can be
     * handed back range by range (ZeRO-2/3; mmap-backed on the host). */
    accel_status_t (*arena_alloc)(const accel_layout_t *layout, bool release_able, float **buf);
    void (*arena_free)(const accel_layout_t *layout, bool release_able, float *buf);
    /* Elements [begin, end) read as zero afterwards; on the host their whole pages go back. */
    accel_status_t (*release)(float *buf, size_t begin, size_t end);
    accel_status_t (*zero)(void *ptr, size_t bytes);
    accel_status_t (*upload)(void *dst, const void *host_src, size_t bytes);
    accel_status_t (*download)(void *host_dst, const void *src, size_t bytes);   /* waits */
    accel_status_t (*add)(float *y, const float *x, size_t n);                 /* y += x */
    accel_status_t (*sumsq)(const float *x, size_t n, double *out);            /* waits */
    accel_status_t (*adamw)(float *p, const float *g, float *m, float *v, const unsigned char *decay,
                            size_t n, const accel_update_t *u);
    accel_status_t (*sgd)(float *p, const float *g, float *buf, const unsigned char *decay,
                          size_t n, const accel_update_t *u);
} accel_devops_t;

/* The table for a device kind (CUDA: ACCEL_ERR_UNSUPPORTED in a build without CUDA). */
accel_status_t accel_devops_for(accel_device_kind_t kind, const accel_devops_t **ops);

/* sum(x[i]^2) in double over host memory, for the global gradient norm; the same bits on every
 * CPU. Not finite when some x[i] is inf or NaN (the fp16 overflow check). */
double accel_sum_squares(const float *x, size_t n);

#endif
