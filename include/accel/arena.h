/* Flat arenas. A model registers its parameters by name and shape into a layout; parameters,
 * gradients, master weights and optimizer moments are buffers of that one layout, so a DDP bucket
 * or a ZeRO shard is a range of offsets and a checkpoint can name every tensor. */
#ifndef ACCEL_ARENA_H
#define ACCEL_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/status.h"

#define ACCEL_TENSOR_NAME_MAX 64
#define ACCEL_TENSOR_MAX_DIMS 4
#define ACCEL_ARENA_ALIGN 16        /* elements: every tensor starts on a 64-byte boundary (fp32) */

enum {
    ACCEL_TENSOR_NO_DECAY = 1 << 0, /* biases and norm gains: no weight decay */
    ACCEL_TENSOR_LOADS = 1 << 1,    /* no gradient: its gradient slot carries the expert loads less
                                     * their mean (the selection bias under
                                     * optim.router_bias_update), which the trainer turns into a
                                     * step of its own (src/train/balance.c) */
    ACCEL_TENSOR_INIT_VALUE = 1 << 2,   /* init_std is the value every element starts at, of any
                                     * sign (a raw xIELU alpha, its eps), not a std */
    ACCEL_TENSOR_FIXED = 1 << 3,    /* a fixed buffer (xIELU's beta and eps): the model never writes
                                     * its gradient, so AdamW (with NO_DECAY) keeps it as set */
    ACCEL_TENSOR_FROZEN = 1 << 4,   /* set by the trainer, not the model: no gradient is wanted (the
                                     * base LoRA freezes), so the model may skip computing the
                                     * weight's own gradient; its slot is then left as it is */
};

typedef struct {
    char name[ACCEL_TENSOR_NAME_MAX];
    int ndim;
    int64_t shape[ACCEL_TENSOR_MAX_DIMS];
    size_t numel;
    size_t offset;                  /* in elements from the arena start */
    int layer;                      /* gathering unit for ZeRO-3 (-1: not in a layer) */
    unsigned flags;
    float init_std;                 /* N(0, std^2) init; 0 = zeros; <0: constant -init_std
                                     * (ACCEL_TENSOR_INIT_VALUE: constant init_std) */
} accel_tensor_t;

typedef struct {
    accel_tensor_t *tensors;
    int ntensors, capacity;
    size_t numel;                   /* elements including alignment padding */
    int nlayers;
} accel_layout_t;

void accel_layout_init(accel_layout_t *layout);
void accel_layout_free(accel_layout_t *layout);

/* Register a tensor; shape has ndim entries. Returns the tensor index through *index (may be NULL). */
accel_status_t accel_layout_add(accel_layout_t *layout, const char *name, int ndim,
                                const int64_t *shape, int layer, unsigned flags, float init_std,
                                int *index);
const accel_tensor_t *accel_layout_find(const accel_layout_t *layout, const char *name);
/* Number of real elements (padding excluded). */
size_t accel_layout_params(const accel_layout_t *layout);

/* A 64-byte aligned float buffer of layout->numel elements, zeroed. */
accel_status_t accel_arena_alloc(const accel_layout_t *layout, float **buf);
void accel_arena_free(float *buf);

/* An arena whose physical memory can be handed back piece by piece (ZeRO-2/3 gradients and
 * ZeRO-3 parameters): reserved with mmap, zero-filled on first touch. */
accel_status_t accel_arena_alloc_virtual(const accel_layout_t *layout, float **buf);
void accel_arena_free_virtual(const accel_layout_t *layout, float *buf);
/* Elements [begin, end) read as zero afterwards, and the whole pages inside the range go back to
 * the system (neighbouring elements keep their values). */
void accel_arena_release(float *buf, size_t begin, size_t end);

/* Insert padding so that every layer starts on, and spans, a multiple of `multiple` elements
 * (ZeRO shards each layer evenly across ranks). Tensors of a layer must be registered together. */
accel_status_t accel_layout_pad_layers(accel_layout_t *layout, size_t multiple);

/* The arena elements [begin, end) of a layer's tensors, the end rounded up to `multiple` elements
 * (ZeRO pads layers that way; pass ACCEL_ARENA_ALIGN otherwise). A layer with no tensor gets
 * begin = end = 0. The one definition of a layer's range: buckets, ZeRO units and device casts
 * all use it. */
void accel_layout_layer_range(const accel_layout_t *layout, int layer, size_t multiple,
                              size_t *begin, size_t *end);

/* Initialise parameters from the keyed RNG: element i of tensor t is a pure function of
 * (seed, tensor name, i), whatever the world size. */
void accel_arena_init_params(const accel_layout_t *layout, float *params, uint64_t seed);
/* The same for arena elements [begin, end) only, written to dst[0 .. end-begin) (a shard). */
void accel_arena_init_range(const accel_layout_t *layout, float *dst, size_t begin, size_t end,
                            uint64_t seed);

#endif
