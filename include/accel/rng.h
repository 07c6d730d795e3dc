/* Keyed counter-based randomness (Philox4x32-10, as cuRAND and PyTorch use). A value is a pure
 * function of (seed, purpose, index): initial weights, data order and dropout do not depend on
 * world size or sharding, and nothing needs broadcasting. */
#ifndef ACCEL_RNG_H
#define ACCEL_RNG_H

#include <stdint.h>

/* Purposes keep independent streams apart. */
enum {
    ACCEL_RNG_INIT = 1,     /* weight initialisation; stream = tensor id */
    ACCEL_RNG_DATA = 2,     /* synthetic data */
    ACCEL_RNG_SHUFFLE = 3,  /* data order; stream = epoch */
    ACCEL_RNG_DROPOUT = 4,
    ACCEL_RNG_SAMPLE = 5,   /* text generation */
    ACCEL_RNG_SKETCH = 6,   /* random projections (LoRA extraction: randomized SVD) */
};

/* Four 32-bit words for counter (ctr_hi, ctr_lo) under key (seed, purpose ^ stream<<8). */
void accel_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);

/* Uniform in [0, 1) and standard normal, element `index` of stream (purpose, stream). */
float accel_rng_uniform(uint64_t seed, uint32_t purpose, uint64_t stream, uint64_t index);
float accel_rng_normal(uint64_t seed, uint32_t purpose, uint64_t stream, uint64_t index);
/* Fill n values (elements first..first+n-1 of the stream) with N(0, std^2). */
void accel_rng_fill_normal(float *x, uint64_t n, float std, uint64_t seed, uint32_t purpose,
                           uint64_t stream, uint64_t first);
/* 64-bit hash of a string (FNV-1a), to derive a stream id from a tensor name. */
uint64_t accel_rng_hash(const char *text);

/* Permutation of 0..n-1 as a pure function of (seed, stream): Fisher-Yates on Philox draws. */
void accel_rng_permutation(uint64_t *perm, uint64_t n, uint64_t seed, uint64_t stream);

#endif
