/* Element-wise reductions on host buffers (see reduce.h). */
#include "build_config.h"

#include <stdint.h>

#include "accel/dtype.h"
#include "reduce.h"

#define REDUCE_LOOP(T)                                                                          \
    do {                                                                                        \
        const T *a = in;                                                                        \
        T *b = inout;                                                                           \
        if (op == ACCEL_MAX)                                                                    \
            for (size_t i = 0; i < n; i++) b[i] = a[i] > b[i] ? a[i] : b[i];                    \
        else if (op == ACCEL_MIN)                                                               \
            for (size_t i = 0; i < n; i++) b[i] = a[i] < b[i] ? a[i] : b[i];                    \
        else                                                                                    \
            for (size_t i = 0; i < n; i++) b[i] = (T)(a[i] + b[i]);                             \
    } while (0)

static float bf16_to_f32(uint16_t h) { return accel_bf16_to_f32(h); }
static uint16_t f32_to_bf16(float f) { return accel_f32_to_bf16(f); }

/* Half precision computes in fp32 and rounds once per element. */
static void half_reduce(const uint16_t *a, uint16_t *b, size_t n, int bf16, accel_redop_t op)
{
    float (*to)(uint16_t) = bf16 ? bf16_to_f32 : accel_f16_to_f32;
    uint16_t (*from)(float) = bf16 ? f32_to_bf16 : accel_f32_to_f16;
    for (size_t i = 0; i < n; i++) {
        float x = to(a[i]), y = to(b[i]);
        float r = op == ACCEL_MAX ? (x > y ? x : y) : op == ACCEL_MIN ? (x < y ? x : y) : x + y;
        b[i] = from(r);
    }
}

void accel_comm_reduce_local(const void *in, void *inout, size_t n, accel_dtype_t dtype, accel_redop_t op)
{
    switch (dtype) {
    case ACCEL_F32: REDUCE_LOOP(float); break;
    case ACCEL_I32: REDUCE_LOOP(int32_t); break;
    case ACCEL_I64: REDUCE_LOOP(int64_t); break;
    case ACCEL_U8: REDUCE_LOOP(uint8_t); break;
    case ACCEL_F16: half_reduce(in, inout, n, 0, op); break;
    case ACCEL_BF16: half_reduce(in, inout, n, 1, op); break;
    default: break;
    }
}
