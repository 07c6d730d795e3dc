/* Gradient synchronisation overlapped with backward. The gradient arena is cut into buckets of
 * whole layers (about dist.bucket_mb each, 0 = auto; last layer first, the order backward produces
 * them); a bucket's non-blocking allreduce starts as soon as the model reports its last layer done,
 * and outstanding requests are driven while later layers compute. Buckets are ranges of the arena. */
#ifndef ACCEL_GRAD_SYNC_H
#define ACCEL_GRAD_SYNC_H

#include <stdbool.h>

#include "accel/arena.h"
#include "accel/comm.h"
#include "accel/model.h"

typedef struct accel_grad_sync accel_grad_sync_t;

typedef struct {
    double exposed_s;               /* time spent waiting for communication after backward */
    double comm_s;                  /* time from first bucket start to last bucket completion */
    int buckets;
    size_t bytes;                   /* payload bytes reduced per sync */
} accel_grad_sync_stats_t;

/* Elements per bucket for dist.bucket_mb (0 = auto: 25 MiB, or an eighth of a small arena of numel
 * elements, at least 1 MiB). The GPU engine buckets by the same rule. */
size_t accel_grad_sync_bucket_elems(double bucket_mb, size_t numel);

/* comm_dtype: ACCEL_F32, ACCEL_BF16 or ACCEL_F16 (gradients travel in that type). */
accel_status_t accel_grad_sync_create(const accel_layout_t *layout, accel_comm_t *comm,
                                      float *grads, double bucket_mb, accel_dtype_t comm_dtype,
                                      accel_grad_sync_t **out);
void accel_grad_sync_destroy(accel_grad_sync_t *sync);

/* Arm for one backward pass whose gradients must be summed across ranks. */
void accel_grad_sync_begin(accel_grad_sync_t *sync);
/* The model finished layer `layer`'s gradients: start its bucket when complete, drive progress. */
void accel_grad_sync_layer_done(accel_grad_sync_t *sync, int layer);
/* Drive the reductions in flight (call it often during backward). */
void accel_grad_sync_progress(accel_grad_sync_t *sync);
/* Buckets started and not yet reduced. */
int accel_grad_sync_in_flight(const accel_grad_sync_t *sync);
/* Start any bucket not started yet (models that never call the hook) and wait for all of them. */
accel_status_t accel_grad_sync_finish(accel_grad_sync_t *sync);
/* Blocking sum of the whole arena in one call (reference path and sync_each_batch). */
accel_status_t accel_grad_sync_all(accel_grad_sync_t *sync);

const accel_grad_sync_stats_t *accel_grad_sync_stats(const accel_grad_sync_t *sync);
int accel_grad_sync_nbuckets(const accel_grad_sync_t *sync);

#endif
