/* DeepSeek-V3's auxiliary-loss-free load balancing (optim.router_bias_update), for the trainer.
 * The model leaves each MoE block's expert loads, less their mean, in its selection bias's
 * gradient slot (ACCEL_TENSOR_LOADS); summed over micro-batches and ranks like gradients, they say
 * which experts the global batch overloaded. Before the gradient norm the trainer takes them out
 * (the bias has no gradient: the optimizer leaves it), and with the step moves each bias element
 * against its expert's excess load: b -= rate sign(load - mean). It works on the rank's owned
 * vectors (src/train/dist.h), so every strategy updates the copy it owns. */
#ifndef ACCEL_TRAIN_BALANCE_H
#define ACCEL_TRAIN_BALANCE_H

#include <stddef.h>

#include "accel/arena.h"
#include "dist.h"

typedef struct {
    size_t *at;                     /* owned-vector positions of the flagged elements */
    float *sign;                    /* their loads' signs, taken at the last step */
    size_t n;
} accel_balance_t;

/* The owned positions of the layout's ACCEL_TENSOR_LOADS elements (n = 0: none, nothing to do). */
accel_status_t accel_balance_create(const accel_layout_t *layout, const accel_range_t *ranges, int nranges,
                                    accel_balance_t *b);
/* The loads' signs out of the owned gradients, which are left zero there. */
void accel_balance_take(accel_balance_t *b, float *owned_grads);
/* Each flagged parameter moved by rate against its sign. */
void accel_balance_apply(const accel_balance_t *b, float *owned_params, float rate);
void accel_balance_destroy(accel_balance_t *b);

#endif
