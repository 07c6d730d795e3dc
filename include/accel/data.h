/* Data order and built-in datasets. The order is a pure function of (seed, epoch), identical for
 * any rank count; a position is (epoch, global sample offset), so resume is an O(1) seek. Each
 * global batch is cut into grad_accum micro-steps of world ranks, each rank taking its own
 * contiguous block of the batch. */
#ifndef ACCEL_DATA_H
#define ACCEL_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/status.h"

typedef struct {
    uint64_t seed;
    int64_t nsamples;               /* dataset size */
    int global_batch;               /* samples per optimizer step, all ranks */
    int grad_accum;
    int world, rank;
    bool shuffle;
    bool drop_last;                 /* true (default): drop an epoch's short tail; false: pad the
                                     * last global batch with the epoch's first samples again */
    int64_t epoch;                  /* position: epoch ... */
    int64_t offset;                 /* ... and global sample offset within it */
    uint64_t *perm;                 /* order of the current epoch */
    int64_t perm_epoch;             /* epoch perm was built for, -1 = none */
} accel_sampler_t;

/* global_batch must divide by world * grad_accum and be at most nsamples. */
accel_status_t accel_sampler_init(accel_sampler_t *s, uint64_t seed, int64_t nsamples,
                                  int global_batch, int grad_accum, int world, int rank,
                                  bool shuffle, char *err, size_t errlen);
void accel_sampler_free(accel_sampler_t *s);
int accel_sampler_micro_batch(const accel_sampler_t *s);

/* Global sample indices of this rank's micro-batch `micro` (0..grad_accum-1) of the current global
 * batch (micro_batch entries). The tail of an epoch too short for a global batch is dropped, or,
 * without drop_last, completed with known duplicates (the epoch's order from its start again). */
void accel_sampler_indices(accel_sampler_t *s, int micro, int64_t *indices);
/* Move to the next global batch. */
void accel_sampler_advance(accel_sampler_t *s);
/* Seek to a position. */
void accel_sampler_seek(accel_sampler_t *s, int64_t epoch, int64_t offset);

/* Built-in synthetic classification task: inputs ~ N(0,1)^features, label = argmax of a fixed random
 * linear teacher, with a fraction `noise` of labels replaced at random. A pure function of
 * (seed, index), so any rank can produce any sample. */
void accel_synthetic_sample(uint64_t seed, int features, int classes, double noise, int64_t index,
                            float *x, int32_t *label);

/* Built-in synthetic token task for language models: row[0..context] (context+1 ids in
 * 0..vocab-1) from a keyed random order-2 Markov chain, a pure function of (seed, index). */
void accel_synthetic_tokens(uint64_t seed, int vocab, int context, int64_t index, int32_t *row);

#endif
