/* The device helpers the CUDA kernel files share (src/nn/gpt_cuda_kernels.cu,
 * src/nn/llama_cuda_kernels.cu): an internal header, included by .cu files only (after
 * gpt_cuda_kernels.h, for accel_gpt_cuda_grid). Activation types, the dtype dispatch, launch
 * geometry, grid-stride loops and warp reductions. */
#ifndef ACCEL_NN_CUDA_COMMON_CUH
#define ACCEL_NN_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gpt_cuda_kernels.h"

/* accel_dtype_t values (include/accel/dtype.h) */
enum { DT_F32 = 0, DT_F16 = 1, DT_BF16 = 2 };

#define BLOCK 256
#define WARPS (BLOCK / 32)
#define MAX_BLOCKS 65535u

/* Load an activation as fp32; store fp32 as an activation (round to nearest even). */
template <typename T> __device__ __forceinline__ float ld(T x);
template <> __device__ __forceinline__ float ld<float>(float x) { return x; }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ float ld<__half>(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T st(float x);
template <> __device__ __forceinline__ float st<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 st<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half st<__half>(float x) { return __float2half_rn(x); }

/* Run the statement with act_t bound to the activation type of dt. */
#define DISPATCH(dt, ...)                                                                       \
    switch (dt) {                                                                               \
    case DT_F32: { typedef float act_t; __VA_ARGS__; break; }                                  \
    case DT_BF16: { typedef __nv_bfloat16 act_t; __VA_ARGS__; break; }                         \
    case DT_F16: { typedef __half act_t; __VA_ARGS__; break; }                                 \
    default: return (int)cudaErrorInvalidValue;                                                 \
    }                                                                                           \
    return (int)cudaGetLastError()

#define GRID_STRIDE(i, n)                                                                       \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);                    \
         i += (size_t)gridDim.x * blockDim.x)

/* Element-wise kernels that index with unsigned: refuse what does not fit. */
#define CHECK_N(n)                                                                              \
    if ((size_t)(n) > 0xffffffffu) return (int)cudaErrorInvalidValue

static __device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Blocks of BLOCK threads covering n items; blocks for one warp per row. */
static inline unsigned grid(size_t n) { return accel_gpt_cuda_grid(n, BLOCK, MAX_BLOCKS); }
static inline unsigned row_grid(size_t rows) { return accel_gpt_cuda_grid(rows, WARPS, MAX_BLOCKS); }

#endif
