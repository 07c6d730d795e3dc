/* CUDA kernels for device arenas: fill, scale, and the fp32 <-> bf16 casts used by mixed precision.
 * Built with nvcc whenever configure finds CUDA, on machines with or without a GPU. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>

#include "kernels_cuda.h"

static __global__ void fill_kernel(float *x, float value, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = value;
}

static __global__ void scale_kernel(float *x, float a, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] *= a;
}

static __global__ void f32_to_bf16_kernel(const float *in, __nv_bfloat16 *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __float2bfloat16_rn(in[i]);
}

static __global__ void bf16_to_f32_kernel(const __nv_bfloat16 *in, float *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __bfloat162float(in[i]);
}

static unsigned grid_for(size_t n)
{
    size_t blocks = (n + 255) / 256;
    return (unsigned)(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

extern "C" int accel_cuda_fill(float *x, float value, size_t n, void *stream)
{
    fill_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(x, value, n);
    return (int)cudaGetLastError();
}

extern "C" int accel_cuda_scale(float *x, float a, size_t n, void *stream)
{
    scale_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(x, a, n);
    return (int)cudaGetLastError();
}

extern "C" int accel_cuda_f32_to_bf16(const float *in, void *out, size_t n, void *stream)
{
    f32_to_bf16_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>(in, (__nv_bfloat16 *)out, n);
    return (int)cudaGetLastError();
}

extern "C" int accel_cuda_bf16_to_f32(const void *in, float *out, size_t n, void *stream)
{
    bf16_to_f32_kernel<<<grid_for(n), 256, 0, (cudaStream_t)stream>>>((const __nv_bfloat16 *)in, out, n);
    return (int)cudaGetLastError();
}
