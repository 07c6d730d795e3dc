/* Element type table and IEEE half-precision conversion. */
#include "build_config.h"

#include <math.h>
#include <strings.h>

#include "accel/dtype.h"

static const struct {
    const char *name;
    size_t size;
} g_dtypes[ACCEL_DTYPE_COUNT] = {
    [ACCEL_F32] = { "fp32", 4 }, [ACCEL_F16] = { "fp16", 2 }, [ACCEL_BF16] = { "bf16", 2 },
    [ACCEL_I32] = { "int32", 4 }, [ACCEL_I64] = { "int64", 8 }, [ACCEL_U8] = { "uint8", 1 },
};

size_t accel_dtype_size(accel_dtype_t dtype)
{
    return (unsigned)dtype < ACCEL_DTYPE_COUNT ? g_dtypes[dtype].size : 0;
}

const char *accel_dtype_name(accel_dtype_t dtype)
{
    return (unsigned)dtype < ACCEL_DTYPE_COUNT ? g_dtypes[dtype].name : "?";
}

int accel_dtype_parse(const char *name)
{
    static const struct { const char *alias; accel_dtype_t dtype; } aliases[] = {
        { "fp32", ACCEL_F32 }, { "f32", ACCEL_F32 }, { "float32", ACCEL_F32 }, { "float", ACCEL_F32 },
        { "fp16", ACCEL_F16 }, { "f16", ACCEL_F16 }, { "float16", ACCEL_F16 }, { "half", ACCEL_F16 },
        { "bf16", ACCEL_BF16 }, { "bfloat16", ACCEL_BF16 },
        { "int32", ACCEL_I32 }, { "i32", ACCEL_I32 }, { "int64", ACCEL_I64 }, { "i64", ACCEL_I64 },
        { "uint8", ACCEL_U8 }, { "u8", ACCEL_U8 },
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcasecmp(name, aliases[i].alias)) return (int)aliases[i].dtype;
    return -1;
}

uint16_t accel_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0)); /* inf / NaN */
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);                           /* overflow */
    if (e <= 0) {                                                             /* subnormal */
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000u;
        int shift = 14 - e;
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;             /* may carry into exp */
    return (uint16_t)half;
}

float accel_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (man == 0) {
            x = sign;
        } else {                                                              /* subnormal */
            float f = ldexpf((float)man, -24);
            return sign ? -f : f;
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (man << 13);
    } else {
        x = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

double accel_dtype_load(const void *buf, accel_dtype_t dtype, size_t i)
{
    switch (dtype) {
    case ACCEL_F32: return ((const float *)buf)[i];
    case ACCEL_F16: return accel_f16_to_f32(((const uint16_t *)buf)[i]);
    case ACCEL_BF16: return accel_bf16_to_f32(((const uint16_t *)buf)[i]);
    case ACCEL_I32: return ((const int32_t *)buf)[i];
    case ACCEL_I64: return (double)((const int64_t *)buf)[i];
    case ACCEL_U8: return ((const uint8_t *)buf)[i];
    default: return NAN;
    }
}

void accel_dtype_store(void *buf, accel_dtype_t dtype, size_t i, double value)
{
    switch (dtype) {
    case ACCEL_F32: ((float *)buf)[i] = (float)value; break;
    case ACCEL_F16: ((uint16_t *)buf)[i] = accel_f32_to_f16((float)value); break;
    case ACCEL_BF16: ((uint16_t *)buf)[i] = accel_f32_to_bf16((float)value); break;
    case ACCEL_I32: ((int32_t *)buf)[i] = (int32_t)value; break;
    case ACCEL_I64: ((int64_t *)buf)[i] = (int64_t)value; break;
    case ACCEL_U8: ((uint8_t *)buf)[i] = (uint8_t)value; break;
    default: break;
    }
}
