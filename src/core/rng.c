/* Philox4x32-10 (Salmon et al., SC'11): a counter-based generator, so any element of any stream
 * is computed directly from (seed, purpose, stream, index) with no state to carry or broadcast. */
#include "build_config.h"

#include <math.h>
#include <stdlib.h>

#include "accel/rng.h"

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

static void philox4x32_10(uint32_t ctr[4], uint32_t key[2])
{
    for (int round = 0; round < 10; round++) {
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(0xD2511F53u, ctr[0], &hi0, &lo0);
        mulhilo(0xCD9E8D57u, ctr[2], &hi1, &lo1);
        uint32_t c0 = hi1 ^ ctr[1] ^ key[0], c2 = hi0 ^ ctr[3] ^ key[1];
        ctr[0] = c0;
        ctr[1] = lo1;
        ctr[2] = c2;
        ctr[3] = lo0;
        key[0] += 0x9E3779B9u;
        key[1] += 0xBB67AE85u;
    }
}

void accel_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4])
{
    uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    out[0] = (uint32_t)counter;
    out[1] = (uint32_t)(counter >> 32);
    out[2] = (uint32_t)stream;
    out[3] = (uint32_t)(stream >> 32);
    philox4x32_10(out, key);
}

/* The stream word mixes the purpose into the top bits so purposes never share a stream. */
static inline uint64_t stream_word(uint32_t purpose, uint64_t stream)
{
    return stream ^ ((uint64_t)purpose << 56) ^ ((uint64_t)purpose * 0x9E3779B97F4A7C15ull);
}

static inline float u32_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

float accel_rng_uniform(uint64_t seed, uint32_t purpose, uint64_t stream, uint64_t index)
{
    uint32_t r[4];
    accel_philox(seed, stream_word(purpose, stream), index, r);
    return u32_to_unit(r[0]);
}

static inline float normal_from(const uint32_t r[4])
{
    /* Box-Muller; u1 in (0, 1] so the log is finite. */
    double u1 = ((double)r[0] + 1.0) / 4294967296.0;
    double u2 = (double)r[1] / 4294967296.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

float accel_rng_normal(uint64_t seed, uint32_t purpose, uint64_t stream, uint64_t index)
{
    uint32_t r[4];
    accel_philox(seed, stream_word(purpose, stream), index, r);
    return normal_from(r);
}

void accel_rng_fill_normal(float *x, uint64_t n, float std, uint64_t seed, uint32_t purpose,
                           uint64_t stream, uint64_t first)
{
    uint64_t sw = stream_word(purpose, stream);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t r[4];
        accel_philox(seed, sw, first + i, r);
        x[i] = std * normal_from(r);
    }
}

uint64_t accel_rng_hash(const char *text)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

void accel_rng_permutation(uint64_t *perm, uint64_t n, uint64_t seed, uint64_t stream)
{
    for (uint64_t i = 0; i < n; i++) perm[i] = i;
    uint64_t sw = stream_word(ACCEL_RNG_SHUFFLE, stream);
    for (uint64_t i = n; i > 1; i--) {
        uint32_t r[4];
        accel_philox(seed, sw, i, r);
        uint64_t j = (((uint64_t)r[0] << 32) | r[1]) % i;
        uint64_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}
