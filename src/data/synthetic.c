/* Built-in synthetic classification task (used by the first training run and the tests). */
#include "build_config.h"

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

/* Synthetic token task for language models: a keyed random order-2 Markov chain. Each token b has
 * four candidate successors, and the token before it, a, picks which one follows (through a keyed
 * random map of a to 0..3); one token in ten is replaced by a uniform draw. A model that learns
 * bigrams gets to ~ln 4 nats, one that also attends to the previous token approaches the noise
 * floor (~1.1 nats at vocab 256). Streams are far from those of accel_synthetic_sample. */
#define TOKENS_STREAM (1ull << 60)
#define TOKENS_CANDIDATES (TOKENS_STREAM - 1)
#define TOKENS_CHOICE (TOKENS_STREAM - 2)

static int32_t draw(float u, int n)
{
    int32_t v = (int32_t)(u * (float)n);
    return v < n ? v : n - 1;
}

void accel_synthetic_tokens(uint64_t seed, int vocab, int context, int64_t index, int32_t *row)
{
    const uint64_t s = TOKENS_STREAM | (uint64_t)index;
    const uint64_t far = (uint64_t)context * 2 + 2;       /* counters after the per-token ones */
    for (int t = 0; t <= context; t++) {
        if (t < 2) {
            row[t] = draw(accel_rng_uniform(seed, ACCEL_RNG_DATA, s, far + (uint64_t)t), vocab);
            continue;
        }
        if (accel_rng_uniform(seed, ACCEL_RNG_DATA, s, 2 * (uint64_t)t) < 0.1f) {
            row[t] = draw(accel_rng_uniform(seed, ACCEL_RNG_DATA, s, 2 * (uint64_t)t + 1), vocab);
            continue;
        }
        int a = row[t - 2], b = row[t - 1];
        int j = draw(accel_rng_uniform(seed, ACCEL_RNG_DATA, TOKENS_CHOICE, (uint64_t)a), 4);
        row[t] = draw(accel_rng_uniform(seed, ACCEL_RNG_DATA, TOKENS_CANDIDATES,
                                        (uint64_t)b * 4 + (uint64_t)j), vocab);
    }
}
