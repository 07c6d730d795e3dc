/* The scaffolding the recurrent token mixers share (gated_delta.c, mamba2.c): carving a scratch
 * into pieces, and the backward pass's reruns of a state recurrence from checkpoints, so that a
 * (document, head) of n tokens stores (n / chunk + chunk) states instead of n. Internal to
 * libaccel. */
#ifndef ACCEL_NN_RECURRENCE_H
#define ACCEL_NN_RECURRENCE_H

#include <stddef.h>
#include <string.h>

/* Pieces of sizes[i] floats carved from p in order into *at[i] (p NULL: only counted); returns the
 * floats of all. */
static inline size_t accel_carve_floats(float *p, const size_t *sizes, float **const *at, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        *at[i] = p ? p + total : NULL;
        total += sizes[i];
    }
    return total;
}

/* Advances state S by token t of the (document, head) ctx describes. */
typedef void (*accel_step_fn)(const void *ctx, float *S, int t);

/* ck [ceil(n / chunk), size]: the state before each chunk of n tokens, from a zero state (S: size
 * floats of scratch the states run in). */
static inline void accel_recur_checkpoints(accel_step_fn step, const void *ctx, int n, int chunk, size_t size,
                                           float *ck, float *S)
{
    memset(S, 0, sizeof(float) * size);
    for (int t = 0; t < n; t++) {
        if (t % chunk == 0) memcpy(ck + (size_t)(t / chunk) * size, S, sizeof(float) * size);
        step(ctx, S, t);
    }
}

/* st [chunk, size]: the states after each token t0 .. t1 - 1 of chunk c (t0 = c chunk), rebuilt
 * from its checkpoint. */
static inline void accel_recur_rebuild(accel_step_fn step, const void *ctx, int t0, int t1, size_t size,
                                       const float *checkpoint, float *st)
{
    memcpy(st, checkpoint, sizeof(float) * size);
    for (int t = t0; t < t1; t++) {
        float *next = st + (size_t)(t - t0) * size;
        if (t > t0) memcpy(next, next - size, sizeof(float) * size);
        step(ctx, next, t);
    }
}

#endif
