/* CUDA kernels of the device layer, callable from C (built only when ACCEL_HAVE_CUDA). Engine
 * internals, not installed. Each returns a cudaError_t as int (0 = success) and runs on the given
 * stream (NULL = the default stream). */
#ifndef ACCEL_KERNELS_CUDA_H
#define ACCEL_KERNELS_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int accel_cuda_fill(float *x, float value, size_t n, void *stream);
int accel_cuda_scale(float *x, float a, size_t n, void *stream);
int accel_cuda_f32_to_bf16(const float *in, void *out, size_t n, void *stream);
int accel_cuda_bf16_to_f32(const void *in, float *out, size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
