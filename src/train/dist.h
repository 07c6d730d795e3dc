/* The distributed model state: where parameters, gradients and optimizer state live under each
 * data-parallel strategy, and the communication that keeps them consistent.
 *
 *   ddp    everything replicated; gradients summed by bucketed allreduce overlapped with backward
 *   zero1  optimizer state (fp32 master = the parameters' owned slices, moments) sharded; gradients
 *          reduce-scattered at the accumulation boundary; updated slices all-gathered
 *   zero2  + gradients sharded: each layer is reduce-scattered as soon as backward finishes it, on
 *          every micro-batch, and its full-size gradient memory is handed back
 *   zero3  + parameters sharded: a layer is all-gathered just before the model uses it (the next
 *          one prefetched) and its memory handed back after
 *   hybrid shard within a node, replicate across nodes: reduce-scatter inside the node, then an
 *          allreduce of the shard among the ranks with the same local rank on every node
 *
 * Every layer's range of the arena is padded to a multiple of the shard count, and rank r owns the
 * r-th slice of every layer, so gathering one layer is one allgather and no tensor size needs to
 * divide by the rank count. */
#ifndef ACCEL_DIST_H
#define ACCEL_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/device.h"
#include "accel/model.h"
#include "optim.h"
#include "accel/runtime.h"


/* One piece of a rank's state: arena elements [begin, end) stored at `owned` offset of the rank's
 * owned vector. DDP has one range covering the arena (replicated); ZeRO has one per layer. */
typedef struct {
    size_t begin, end, owned;
} accel_range_t;

typedef struct accel_dist accel_dist_t;

/* Pads the layout for ZeRO (before any buffer is allocated), creates communicators and buffers in
 * the memory of `device` (host memory and MPI for the CPU; device memory and NCCL for CUDA). */
accel_status_t accel_dist_create(const accel_runtime_t *rt, const accel_config_t *cfg,
                                 const accel_model_ops_t *model, accel_device_kind_t device,
                                 accel_layout_t *layout, accel_dist_t **out);
void accel_dist_destroy(accel_dist_t *dist);

accel_strategy_t accel_dist_strategy(const accel_dist_t *dist);
bool accel_dist_hybrid(const accel_dist_t *dist);

/* Initialise parameters from the keyed RNG (each rank only what it holds). */
accel_status_t accel_dist_init_params(accel_dist_t *dist, uint64_t seed);

/* The device operations of the dist's memory (src/train/devops.h). */
const struct accel_devops *accel_dist_devops(const accel_dist_t *dist);

/* Host views of the rank's owned state for checkpoints: out = { owned parameters, opt->m, opt->v }
 * (v NULL for SGD). On the CPU these are the live buffers; for device memory, host copies, filled
 * from the device when download is true. After reading a checkpoint into them,
 * accel_dist_host_state_loaded moves them back and brings the parameters the model reads up to
 * date (it calls accel_dist_params_loaded). */
accel_status_t accel_dist_host_state(accel_dist_t *dist, accel_optim_t *opt, bool download,
                                     float *out[3]);
accel_status_t accel_dist_host_state_loaded(accel_dist_t *dist, accel_optim_t *opt);

/* The full-size parameter arena the model reads (under ZeRO-3 only fetched layers are valid). */
float *accel_dist_params(accel_dist_t *dist);

/* The rank's owned vector (the optimizer's vector): its parameters and reduced gradients, and the
 * arena ranges it covers. DDP: the whole arena. */
size_t accel_dist_owned_numel(const accel_dist_t *dist);
float *accel_dist_owned_params(accel_dist_t *dist);
float *accel_dist_owned_grads(accel_dist_t *dist);
int accel_dist_owned_ranges(const accel_dist_t *dist, const accel_range_t **ranges);
/* True when every rank holds the same owned vector (DDP), false when it is a shard. */
bool accel_dist_replicated(const accel_dist_t *dist);

/* Training step protocol, per micro-batch k of K:
 *   hooks = accel_dist_begin_micro(d, k, K); model->forward_backward(..., accel_dist_micro_grads(d),
 *   batch with hooks ...); accel_dist_end_micro(d, k, K);
 * after the last micro-batch the owned gradients hold the sum over all ranks and micro-batches. */
const accel_layer_hooks_t *accel_dist_begin_micro(accel_dist_t *dist, int micro, int nmicro);
float *accel_dist_micro_grads(accel_dist_t *dist);
accel_status_t accel_dist_end_micro(accel_dist_t *dist, int micro, int nmicro);

/* Hooks for forward-only passes (evaluation, generation): fetch/release layers under ZeRO-3. */
const accel_layer_hooks_t *accel_dist_eval_hooks(accel_dist_t *dist);

/* The owned parameters were just loaded (a checkpoint): bring the arena the model reads up to date. */
accel_status_t accel_dist_params_loaded(accel_dist_t *dist);

/* Make the whole parameter arena valid on every rank (ZeRO-3: gather every layer; a collective),
 * e.g. for generation, and hand the memory back afterwards. No-ops for the other strategies. */
accel_status_t accel_dist_gather_full(accel_dist_t *dist);
accel_status_t accel_dist_release_full(accel_dist_t *dist);

/* Sum of squares of this rank's share of the reduced gradients, and how many ranks hold each share
 * (sum over all ranks, divided by it, is the global squared norm). Not finite when some gradient
 * of the share is inf or NaN (the fp16 overflow check). */
accel_status_t accel_dist_grad_sumsq(const accel_dist_t *dist, double *sumsq, int *replicas);
/* Testing: make this rank's share of the gradients non-finite (an injected fp16 overflow). */
accel_status_t accel_dist_poison_grads(accel_dist_t *dist);
/* Take an optimizer step on the owned vector with the owned gradients multiplied by mul (unscale
 * and clip), and bring the parameters the model reads up to date. Returns the learning rate. */
accel_status_t accel_dist_step(accel_dist_t *dist, accel_optim_t *opt, float mul, double *lr);

/* Bytes this rank has handed to collectives for model state (gradients and parameters). */
size_t accel_dist_bytes_sent(const accel_dist_t *dist);
/* Seconds of gradient communication exposed after backward, and in flight, since creation. */
void accel_dist_sync_times(const accel_dist_t *dist, double *exposed, double *in_flight);

#endif
