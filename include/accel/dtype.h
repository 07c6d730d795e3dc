/* Element types moved by collectives and stored in checkpoints, and the fp16/bf16 conversions
 * used on the CPU (round to nearest even, NaN preserved). */
#ifndef ACCEL_DTYPE_H
#define ACCEL_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
    ACCEL_F32 = 0,
    ACCEL_F16,
    ACCEL_BF16,
    ACCEL_I32,
    ACCEL_I64,
    ACCEL_U8,
    ACCEL_DTYPE_COUNT
} accel_dtype_t;

size_t accel_dtype_size(accel_dtype_t dtype);
const char *accel_dtype_name(accel_dtype_t dtype);
/* "fp32", "f32", "float32", "bf16", ... -> dtype; returns -1 when unknown. */
int accel_dtype_parse(const char *name);

static inline uint16_t accel_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float accel_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t accel_f32_to_f16(float f);
float accel_f16_to_f32(uint16_t h);

/* Element i of a typed buffer as a double, and back (rounded to the type; for tests and tools). */
double accel_dtype_load(const void *buf, accel_dtype_t dtype, size_t i);
void accel_dtype_store(void *buf, accel_dtype_t dtype, size_t i, double value);

#endif
