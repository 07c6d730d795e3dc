/* Data order as a pure function of (seed, epoch). Global batch b of an epoch covers positions
 * [b*G, (b+1)*G) of the epoch's permutation; micro-step k of rank r takes the m = G/(K*W) positions
 * starting at b*G + (k*W + r)*m. The sample set of each optimizer step is therefore the same for
 * any world size W and accumulation K. */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>

#include "accel/data.h"
#include "accel/rng.h"

accel_status_t accel_sampler_init(accel_sampler_t *s, uint64_t seed, int64_t nsamples,
                                  int global_batch, int grad_accum, int world, int rank,
                                  bool shuffle, char *err, size_t errlen)
{
    *s = (accel_sampler_t){ .seed = seed, .nsamples = nsamples, .global_batch = global_batch,
                            .grad_accum = grad_accum, .world = world, .rank = rank,
                            .shuffle = shuffle, .drop_last = true, .perm_epoch = -1 };
    if (global_batch <= 0 || grad_accum <= 0) {
        snprintf(err, errlen, "train.global_batch (%d) and train.grad_accum (%d) must be positive",
                 global_batch, grad_accum);
        return ACCEL_ERR_CONFIG;
    }
    if (global_batch % (world * grad_accum)) {
        snprintf(err, errlen, "train.global_batch=%d is not divisible by ranks x train.grad_accum = "
                 "%d x %d\n--> hint: use a multiple of %d", global_batch, world, grad_accum,
                 world * grad_accum);
        return ACCEL_ERR_CONFIG;
    }
    if (nsamples < global_batch) {
        snprintf(err, errlen, "the dataset has %lld samples, fewer than one global batch (%d)",
                 (long long)nsamples, global_batch);
        return ACCEL_ERR_CONFIG;
    }
    /* nsamples comes from a file: the permutation's size must not wrap (2^62 samples would). */
    size_t bytes;
    if (__builtin_mul_overflow(sizeof *s->perm, (uint64_t)nsamples, &bytes) || !(s->perm = malloc(bytes))) {
        snprintf(err, errlen, "the dataset has %lld samples: a permutation of them (%zu bytes each) does "
                 "not fit in memory\n--> hint: the dataset's size is damaged, or use a smaller one",
                 (long long)nsamples, sizeof *s->perm);
        return ACCEL_ERR_NOMEM;
    }
    return ACCEL_OK;
}

void accel_sampler_free(accel_sampler_t *s)
{
    free(s->perm);
    s->perm = NULL;
}

int accel_sampler_micro_batch(const accel_sampler_t *s)
{
    return s->global_batch / (s->world * s->grad_accum);
}

static void ensure_perm(accel_sampler_t *s)
{
    if (s->perm_epoch == s->epoch) return;
    if (s->shuffle) {
        accel_rng_permutation(s->perm, (uint64_t)s->nsamples, s->seed, (uint64_t)s->epoch);
    } else {
        for (int64_t i = 0; i < s->nsamples; i++) s->perm[i] = (uint64_t)i;
    }
    s->perm_epoch = s->epoch;
}

void accel_sampler_indices(accel_sampler_t *s, int micro, int64_t *indices)
{
    ensure_perm(s);
    int m = accel_sampler_micro_batch(s);
    int64_t first = s->offset + (int64_t)(micro * s->world + s->rank) * m;
    for (int i = 0; i < m; i++) indices[i] = (int64_t)s->perm[(first + i) % s->nsamples];
}

void accel_sampler_advance(accel_sampler_t *s)
{
    s->offset += s->global_batch;
    if (s->drop_last ? s->offset + s->global_batch > s->nsamples : s->offset >= s->nsamples) {
        s->epoch++;
        s->offset = 0;
    }
}

void accel_sampler_seek(accel_sampler_t *s, int64_t epoch, int64_t offset)
{
    s->epoch = epoch;
    s->offset = offset;
}
