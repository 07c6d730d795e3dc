/* Built-in synthetic classification task (used by the first training run and the tests). */
#include "config.h"

#include "accel/data.h"
#include "accel/rng.h"

void accel_synthetic_sample(uint64_t seed, int features, int classes, double noise, int64_t index,
                            float *x, int32_t *label)
{
    accel_rng_fill_normal(x, (uint64_t)features, 1.0f, seed, ACCEL_RNG_DATA, (uint64_t)index * 2, 0);
    /* The teacher is a fixed random linear map (stream ~0): label = argmax(T x). */
    int best = 0;
    float best_score = -1e30f;
    for (int c = 0; c < classes; c++) {
        float score = 0.0f;
        for (int f = 0; f < features; f++)
            score += accel_rng_normal(seed, ACCEL_RNG_DATA, ~0ull, (uint64_t)c * (uint64_t)features + (uint64_t)f) * x[f];
        if (score > best_score) { best_score = score; best = c; }
    }
    if (noise > 0 && accel_rng_uniform(seed, ACCEL_RNG_DATA, (uint64_t)index * 2 + 1, 0) < noise)
        best = (int)(accel_rng_uniform(seed, ACCEL_RNG_DATA, (uint64_t)index * 2 + 1, 1) * classes) % classes;
    *label = best;
}
