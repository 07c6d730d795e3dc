/* Memory per rank: the estimate behind `accel estimate-memory`, and the resident-set readings that
 * benchmarks compare it with. */
#ifndef ACCEL_MEMORY_H
#define ACCEL_MEMORY_H

#include <stddef.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/model.h"

typedef struct {
    size_t params;                  /* parameters the model reads (replicated, or gathered layers) */
    size_t grads;                   /* full-size gradients, or shards plus layers in flight */
    size_t master;                  /* fp32 master slices kept apart from the parameters (ZeRO) */
    size_t optim;                   /* optimizer moments */
    size_t activations;             /* forward/backward buffers for one micro-batch */
    size_t comm;                    /* staging and MPI temporary buffers */
    size_t snapshot;                /* ckpt.async: the copy of this rank's saved state */
    size_t total;
    double psi;                     /* parameters (elements, padding included) */
    double paper_bytes_per_param;   /* the ZeRO paper's model-state accounting (mixed-precision Adam) */
} accel_memory_estimate_t;

/* Estimate for `strategy` on `world` ranks with `ranks_per_node` per node (hybrid shards within a
 * node). The layout is the model's unpadded tensor table. */
accel_status_t accel_memory_estimate(const accel_config_t *cfg, const accel_model_ops_t *model,
                                     const accel_layout_t *layout, accel_strategy_t strategy,
                                     bool hybrid, int world, int ranks_per_node,
                                     accel_memory_estimate_t *out);

/* The built-in GPT/Llama's GPU engine (device=cuda): the device bytes one of `world` ranks allocates
 * for a micro-batch of `micro` under `strategy` (what train.micro_batch=auto plans by). ZeRO-1, 2
 * and 3 allocate alike there: the device keeps parameters and gradients whole and shards the
 * optimizer state. */
accel_status_t accel_memory_gpu_estimate(const accel_config_t *cfg, const accel_layout_t *layout,
                                         accel_strategy_t strategy, int world, int micro, size_t *bytes);

/* The micro-batches per optimizer step on `world` ranks: train.grad_accum, or what a fixed
 * train.micro_batch (> 0) makes of the global batch. */
int accel_memory_grad_accum(const accel_config_t *cfg, int world);

/* train.micro_batch=auto: the largest micro-batch that divides the per-rank batch
 * (global_batch / world) and whose estimate (with train.grad_accum making up the rest) fits `limit`
 * bytes. *micro and *fit receive it and its estimate; *next_micro and *next the next larger
 * candidate and its estimate (0 when the whole per-rank batch fits). ACCEL_ERR_NOMEM when not even
 * a micro-batch of 1 fits (*fit then holds its estimate); ACCEL_ERR_INVALID when the global batch
 * does not divide over the ranks. */
accel_status_t accel_memory_plan_micro_batch(const accel_config_t *cfg, const accel_model_ops_t *model,
                                             const accel_layout_t *layout, int world,
                                             int ranks_per_node, size_t limit, int *micro,
                                             accel_memory_estimate_t *fit, int *next_micro,
                                             accel_memory_estimate_t *next);

/* Resident memory of this process now and at its peak (VmRSS, VmHWM), in bytes; 0 if unknown. */
size_t accel_memory_resident(void);
size_t accel_memory_peak(void);

/* MemTotal and MemAvailable of this node (/proc/meminfo), in bytes; 0 if unknown. */
size_t accel_memory_node_total(void);
size_t accel_memory_node_available(void);

#endif
